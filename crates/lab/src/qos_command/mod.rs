//! `kicklab qos` as one library call: a typed [`QosRequest`] (one system in
//! the model, the simulator or for real, or the paper's figures) in, a
//! [`QosOutput`] out (the JSON object, the text lines, the files to write).
//! The system a request describes is built and checked here, its errors
//! naming the input ([`Input`]) that set the wrong value.
//!
//! Where the rest lives: one computed point (`computed.rs`), one real point
//! (`measured.rs`), the figures (`figures.rs`), the flags a request leaves
//! unused (`unused.rs`); the studies themselves in
//! [`crate::qos`] and [`crate::qos_real`]; argument parsing and which flags
//! conflict in the binary.

mod computed;
mod figures;
mod measured;
mod unused;

use kicklab_model::qos::{Arrivals, Path, Police, QosSystem};
use kicklab_report::Page;
use kicklab_testbed::qos::VmCore;

use crate::{Input, LabError, Progress};

/// Where a `qos` request runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum QosBackend {
    /// The event simulator, beside the model.
    Sim,
    /// The analytic model alone.
    Model,
    /// Threads over kicklab rings, the paper's times scaled.
    Futex,
    /// As `Futex`, with a real KVM guest per VM.
    Kvm,
}

impl QosBackend {
    /// Every backend, in the order `--help` lists them.
    pub const ALL: [QosBackend; 4] = [
        QosBackend::Sim,
        QosBackend::Model,
        QosBackend::Futex,
        QosBackend::Kvm,
    ];

    /// Its name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            QosBackend::Sim => "sim",
            QosBackend::Model => "model",
            QosBackend::Futex => "futex",
            QosBackend::Kvm => "kvm",
        }
    }

    /// Whether it runs for real (threads, guests).
    pub fn is_real(self) -> bool {
        matches!(self, QosBackend::Futex | QosBackend::Kvm)
    }
}

/// What a real run's VMs process on, as asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VmCoreChoice {
    /// Busy if every stage and the device can have a CPU, timed otherwise.
    Auto,
    /// Busy work on this machine's CPUs.
    Busy,
    /// A timed core of its own per VM.
    Timed,
}

impl VmCoreChoice {
    /// A choice by its name.
    ///
    /// # Errors
    ///
    /// An unknown name.
    pub fn parse(s: &str) -> Result<VmCoreChoice, String> {
        VmCoreChoice::ALL
            .into_iter()
            .find(|c| c.name() == s)
            .ok_or_else(|| {
                format!(
                    "unknown VM core `{}` (use auto, busy or timed)",
                    kicklab_model::shown(s)
                )
            })
    }

    /// Every choice, in the order `--help` lists them.
    pub const ALL: [VmCoreChoice; 3] =
        [VmCoreChoice::Auto, VmCoreChoice::Busy, VmCoreChoice::Timed];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            VmCoreChoice::Auto => "auto",
            VmCoreChoice::Busy => "busy",
            VmCoreChoice::Timed => "timed",
        }
    }
}

/// One `qos` request: the system (VMs, loads, limits, stage times), where
/// it runs, and for how long.
#[derive(Debug, Clone)]
pub struct QosRequest {
    /// VMs sharing the device.
    pub vms: usize,
    /// Requests offered per second to every VM.
    pub offered: f64,
    /// One VM's offered rate (VM counted from 1, rate).
    pub rates: Vec<(usize, f64)>,
    /// The path requests take.
    pub path: Path,
    /// A VM's rate limit (VM counted from 1, rate, burst).
    pub limits: Vec<(usize, f64, f64)>,
    /// Where limits are enforced.
    pub police: Police,
    /// The shared stage's work per request [ns]; the path's own without.
    pub shared_ns: Option<f64>,
    /// Each VM's own work per request [ns].
    pub vm_service_ns: f64,
    /// A kick on each hand-off to a sleeping stage [ns].
    pub kick_ns: f64,
    /// The wake-up of a stage that slept [ns].
    pub wake_ns: f64,
    /// Requests each stage can hold waiting.
    pub buffer: u32,
    /// How requests arrive.
    pub arrivals: Arrivals,
    /// Where it runs.
    pub backend: QosBackend,
    /// Seconds measured, of the paper's time.
    pub seconds: f64,
    /// A real run's time over the paper's.
    pub scale: f64,
    /// A real run's VM core.
    pub vm_core: VmCoreChoice,
    /// Seed of Poisson arrivals.
    pub seed: u64,
    /// Run the paper's Figs. 2.10-2.12 instead of one system.
    pub figures: bool,
}

impl QosRequest {
    /// Checks the request's own settings before anything runs (the
    /// system's values are checked by [`system`]).
    ///
    /// # Errors
    ///
    /// [`LabError::Input`] naming the first setting out of range.
    pub fn check(&self) -> Result<(), LabError> {
        if self.backend == QosBackend::Kvm {
            if self.vm_core != VmCoreChoice::Auto {
                let core = self.vm_core.name();
                return Err(LabError::input(
                    Input::VmCore,
                    format!("{core} cores are for threads (futex); on kvm every VM is a guest of its own"),
                ));
            }
            if self.vms > kicklab_testbed::qos::MAX_GUEST_VMS {
                return Err(LabError::input(
                    Input::Vms,
                    format!(
                        "1 to {} guests with kvm (their set-up grows with the square of their number: minutes past that)",
                        kicklab_testbed::qos::MAX_GUEST_VMS
                    ),
                ));
            }
        }
        // The model measures no window; a simulated or real run does.
        let windowed = self.backend != QosBackend::Model || self.figures;
        if !(self.seconds.is_finite() && self.seconds > 0.0 && self.seconds <= 3600.0)
            || (windowed && self.seconds < MIN_SECONDS)
        {
            return Err(LabError::input(
                Input::Seconds,
                format!("a window from {MIN_SECONDS} s (a few of the paper's requests of 0.5-0.7 ms) to 3600 s"),
            ));
        }
        let rates: Vec<usize> = self.rates.iter().map(|r| r.0).collect();
        let limits: Vec<usize> = self.limits.iter().map(|l| l.0).collect();
        for (input, vms) in [(Input::Rate, rates), (Input::Limit, limits)] {
            if let Some(vm) = kicklab_model::first_repeat(&vms) {
                return Err(LabError::input(input, format!("VM {vm} is given twice")));
            }
        }
        if self.vms == 0 || self.vms > kicklab_model::qos::MAX_VMS {
            return Err(LabError::input(
                Input::Vms,
                format!("1 to {} VMs", kicklab_model::qos::MAX_VMS),
            ));
        }
        if !(self.scale.is_finite() && self.scale > 0.0 && self.scale <= 1.0) {
            return Err(LabError::input(
                Input::Scale,
                format!("{} must be above 0 and at most 1", self.scale),
            ));
        }
        Ok(())
    }
}

/// The files a request writes (the figures): a page and its CSV.
#[derive(Debug)]
pub struct QosFiles {
    /// The page (`index.html` and its charts).
    pub page: Page,
    /// The CSV's file name.
    pub csv_name: &'static str,
    /// The CSV.
    pub csv: String,
}

/// What a request gives back: one JSON object, or the same as text.
#[derive(Debug)]
pub struct QosOutput {
    /// The JSON object (`--json`).
    pub json: serde_json::Value,
    /// The text output, line by line.
    pub text: Vec<String>,
    /// Lines for standard error (a disturbed run).
    pub warnings: Vec<String>,
    /// What to write, where the request writes files.
    pub files: Option<QosFiles>,
}

/// The shortest window measured [s].
pub const MIN_SECONDS: f64 = 0.01;

/// The fewest requests a VM offered a load must be offered in the window.
pub const MIN_REQUESTS: f64 = 10.0;

/// Runs `req`: the figures, or its system in the model, the simulator or
/// for real.
///
/// # Errors
///
/// An input error naming what set the wrong value ([`system`]), a real
/// backend's refusal of the system (named by the input that sets it), or
/// a failed run.
pub fn run(req: &QosRequest, progress: &dyn Progress) -> Result<QosOutput, LabError> {
    if req.figures {
        return if req.backend.is_real() {
            figures::real(req, progress)
        } else {
            figures::simulated(req)
        };
    }
    let sys = system(req)?;
    if req.backend.is_real() {
        measured::point(req, &sys, progress)
    } else {
        computed::point(req, &sys)
    }
}

/// The system `req` describes, checked: the paper's for its path and
/// policing, with every value the request sets.
///
/// # Errors
///
/// [`LabError::Input`] naming the input that set a wrong value: a VM
/// that is not there, a value the model refuses, or a window too short
/// to hold some of a VM's requests.
pub fn system(req: &QosRequest) -> Result<QosSystem, LabError> {
    let mut sys = QosSystem::paper(req.path, req.police, req.offered);
    sys.vms = vec![sys.vms[0]; req.vms];
    for vm in &mut sys.vms {
        vm.service_ns = req.vm_service_ns;
    }
    let missing =
        |input, vm: usize| LabError::input(input, format!("there is no VM {vm} ({} VMs)", req.vms));
    for &(vm, r) in &req.rates {
        let v = sys
            .vms
            .get_mut(vm.wrapping_sub(1))
            .ok_or_else(|| missing(Input::Rate, vm))?;
        v.offered_per_s = r;
    }
    for &(vm, r, b) in &req.limits {
        let v = sys
            .vms
            .get_mut(vm.wrapping_sub(1))
            .ok_or_else(|| missing(Input::Limit, vm))?;
        v.limit = Some((r, b));
    }
    if let Some(s) = req.shared_ns {
        sys.shared_ns = s;
    }
    sys.kick_ns = req.kick_ns;
    sys.wake_ns = req.wake_ns;
    sys.buffer = req.buffer;
    sys.arrivals = req.arrivals;
    sys.validate().map_err(|e| {
        // The model names what is wrong; here, the input that set it.
        let input = if e.starts_with("buffer") {
            Input::Buffer
        } else if e.starts_with("vms") {
            Input::Vms
        } else if e.contains("limit") {
            Input::Limit
        } else if e.contains("service time") {
            Input::VmService
        } else if let Some(rest) = e.strip_prefix("vm") {
            // `vmN: the offered load ...`: `--rate` where it set VM N's.
            let vm: Option<usize> = rest
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse().ok());
            if vm.is_some_and(|vm| req.rates.iter().any(|r| r.0 == vm)) {
                Input::Rate
            } else {
                Input::Offered
            }
        } else {
            Input::Shared
        };
        let e = e
            .strip_prefix("buffer: ")
            .or_else(|| e.strip_prefix("vms: "))
            .unwrap_or(&e);
        LabError::input(input, e)
    })?;
    // Every VM offered a load has some requests in the window (the model
    // measures no window).
    let windowed = req.backend != QosBackend::Model;
    if let Some((i, vm)) = sys.vms.iter().enumerate().find(|(_, vm)| {
        windowed && vm.offered_per_s > 0.0 && vm.offered_per_s * req.seconds < MIN_REQUESTS
    }) {
        return Err(LabError::input(
            Input::Seconds,
            format!(
                "VM {} is offered {}/s: {} s holds fewer than {MIN_REQUESTS} of its requests (at least {} s)",
                i + 1,
                vm.offered_per_s,
                req.seconds,
                MIN_REQUESTS / vm.offered_per_s
            ),
        ));
    }
    Ok(sys)
}

/// The VMs' core: as asked, or the one that fits this machine.
fn vm_core(req: &QosRequest, vms: usize) -> VmCore {
    if req.backend == QosBackend::Kvm {
        return VmCore::Guest;
    }
    match req.vm_core {
        VmCoreChoice::Busy => VmCore::Busy,
        VmCoreChoice::Timed => VmCore::Timed,
        VmCoreChoice::Auto => VmCore::fitting(vms),
    }
}

/// A testbed or lab refusal of a real run, naming the request's input
/// that sets what was refused.
fn real_refusal(e: LabError, scale: f64) -> LabError {
    use kicklab_testbed::{Setting, TestbedError};
    match &e {
        LabError::Testbed(
            TestbedError::Invalid { what, reason } | TestbedError::Limit { what, reason },
        ) => {
            let input = match what {
                Setting::Work => Input::StageWork,
                Setting::Len => Input::Buffer,
                Setting::Messages => Input::Offered,
                _ if reason.contains("offered load") => Input::Offered,
                _ => Input::Vms,
            };
            LabError::input(
                input,
                format!("{reason} (a real backend, at scale {scale})"),
            )
        }
        LabError::Input { input, reason } if *input == Input::Vary => {
            match reason.strip_prefix("scale: ") {
                Some(r) => LabError::input(Input::Scale, r),
                None => LabError::input(Input::Offered, reason.clone()),
            }
        }
        _ => e,
    }
}

/// A latency, or `-` without completions.
fn lat(ns: f64) -> String {
    if ns.is_finite() {
        kicklab_model::fmt_ns(ns)
    } else {
        "-".into()
    }
}

/// A number for JSON: `null` where it is not finite.
fn finite(v: f64) -> serde_json::Value {
    if v.is_finite() {
        serde_json::json!(v)
    } else {
        serde_json::Value::Null
    }
}
