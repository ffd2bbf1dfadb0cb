//! Several VMs, one device, for real: the paper's system scaled
//! down in time and run as threads over kicklab rings
//! (`kicklab_testbed::qos`), beside the model fed this machine's
//! calibrated costs and the CPUs the run actually had; the real shapes of
//! both published results (direct vs shared path, ingress vs post
//! policing), the targets checked, and the report's part.
//!
//! Times: the paper's stages take milliseconds; a real run takes them
//! times `scale` (1/10 by default), so every rate is divided by it.
//! Figures are given back in the paper's time (measured rates times
//! `scale`, latencies divided by it) and as measured.

use kicklab_model::qos::{solve_on_cpus, CpuSolution, Host, Path, Police, QosSystem};
use kicklab_model::Flag;
use kicklab_report::{Cell, Chart, Column, Section, Series, Style, Table};
use kicklab_testbed::qos::{
    calibrate_qos, check_qos, run_qos, QosCosts, QosRunConfig, QosRunResult, VmCore,
};
use serde::Serialize;

use crate::{Input, LabError, Progress};

/// The default time scale: the paper's milliseconds become 1/10 as long.
pub const DEFAULT_SCALE: f64 = 0.1;
/// Other processes using more CPU than this during a run disturb it
/// [CPUs]: it is run again (up to [`TRIES`] times in all) and, if it stays
/// disturbed, marked.
pub const DISTURBED_CPUS: f64 = 0.1;
/// Tries of a disturbed run.
pub const TRIES: usize = 3;
/// The loads tried for the largest lossless one, as shares of the model's.
pub const LADDER: [f64; 6] = [1.0, 0.97, 0.94, 0.9, 0.85, 0.75];
/// A run is "without loss" when it drops at most this share of what it
/// is offered (a real run on a shared machine sees rare scheduling stalls
/// longer than a buffer).
pub const LOSS_TOLERANCE: f64 = 0.001;
/// The model's target: within this of the measured per-VM throughput.
pub const MODEL_TARGET: f64 = 0.15;
/// "No better than unconstrained" allows this much run-to-run noise.
pub const NOISE: f64 = 0.05;

/// The paper-time system in real time: service times times `scale`,
/// rates (offered and limits) divided by it; bursts unchanged.
pub fn scaled(sys: &QosSystem, scale: f64) -> QosSystem {
    let mut s = sys.clone();
    s.shared_ns *= scale;
    s.kick_ns *= scale;
    s.wake_ns *= scale;
    for vm in &mut s.vms {
        vm.service_ns *= scale;
        vm.offered_per_s /= scale;
        vm.limit = vm.limit.map(|(r, b)| (r / scale, b));
    }
    s
}

/// Checks a real point's inputs before anything runs: the scale, the
/// window, and what the testbed takes.
///
/// # Errors
///
/// [`LabError::Input`] naming the input (`vary` for the system, as
/// [`crate::qos::point`]), or the testbed's refusal.
pub fn check(sys: &QosSystem, scale: f64, seconds: f64, core: VmCore) -> Result<(), LabError> {
    if !(scale.is_finite() && scale > 0.0 && scale <= 1.0) {
        return Err(LabError::input(
            Input::Vary,
            format!("scale: {scale} must be above 0 and at most 1"),
        ));
    }
    sys.validate()
        .map_err(|e| LabError::input(Input::Vary, e))?;
    let window = seconds * scale;
    if !(window.is_finite()
        && window >= 0.01
        && window <= kicklab_testbed::qos::MAX_WINDOW.as_secs_f64())
    {
        return Err(LabError::input(
            Input::Seconds,
            format!(
                "{seconds} s of the paper's time is {window} s real at {} {scale}: it must be 0.01 to {} s",
                Flag::Scale,
                kicklab_testbed::qos::MAX_WINDOW.as_secs()
            ),
        ));
    }
    check_qos(&config(sys, scale, seconds, 1, core))?;
    Ok(())
}

fn config(sys: &QosSystem, scale: f64, seconds: f64, seed: u64, vm_core: VmCore) -> QosRunConfig {
    let real = scaled(sys, scale);
    QosRunConfig {
        system: real,
        // The simulator's 1 s of warm-up, at least 0.2 s real.
        warmup: std::time::Duration::from_secs_f64((scale).max(0.2)),
        window: std::time::Duration::from_secs_f64(seconds * scale),
        seed,
        vm_core,
    }
}

/// One real point and the model beside it.
#[derive(Debug, Clone, Serialize)]
pub struct RealPoint {
    /// The system, in the paper's time.
    pub system: QosSystem,
    /// Real time over the paper's.
    pub scale: f64,
    /// What the run measured (real time).
    pub run: QosRunResult,
    /// The costs the model took (calibrated before the run, real time).
    pub costs: QosCosts,
    /// The model on those costs and this machine's CPUs, shared with the
    /// run's other threads and other processes (real time).
    pub model: CpuSolution,
    /// The model on those costs and the CPU the busy stages had in the
    /// run (real time): judged instead of `model` in a disturbed run.
    pub model_at_cpu: CpuSolution,
    /// Tries it took (disturbed runs are run again).
    pub tries: usize,
    /// Other processes used more than [`DISTURBED_CPUS`] in every try.
    pub disturbed: bool,
}

impl RealPoint {
    /// VM `i`'s measured throughput in the paper's time [requests/s].
    pub fn throughput(&self, i: usize) -> f64 {
        self.run.vms[i].throughput_per_s * self.scale
    }

    /// VM `i`'s model throughput in the paper's time.
    pub fn model_throughput(&self, i: usize) -> f64 {
        self.model.solution.throughput_per_s[i] * self.scale
    }

    /// VM `i`'s throughput in the paper's time from the model given the
    /// stages' CPU as measured.
    pub fn model_at_cpu_throughput(&self, i: usize) -> f64 {
        self.model_at_cpu.solution.throughput_per_s[i] * self.scale
    }

    /// The worst relative difference of model and measurement over the
    /// VMs that completed anything.
    pub fn model_error(&self) -> f64 {
        self.error_of(&self.model)
    }

    /// The same for the model given the stages' CPU as measured.
    pub fn model_at_cpu_error(&self) -> f64 {
        self.error_of(&self.model_at_cpu)
    }

    /// The error the targets judge: the model's, or in a disturbed run the
    /// model's given the stages' CPU as measured.
    pub fn judged_error(&self) -> f64 {
        if self.disturbed {
            self.model_at_cpu_error()
        } else {
            self.model_error()
        }
    }

    fn error_of(&self, m: &CpuSolution) -> f64 {
        (0..self.run.vms.len())
            .filter(|&i| self.run.vms[i].throughput_per_s > 0.0)
            .map(|i| {
                (m.solution.throughput_per_s[i] / self.run.vms[i].throughput_per_s - 1.0).abs()
            })
            .fold(0.0, f64::max)
    }

    /// Every VM dropped at most [`LOSS_TOLERANCE`] of what it was offered
    /// (not counting its policer).
    pub fn lossless(&self) -> bool {
        self.run
            .vms
            .iter()
            .all(|v| v.dropped_per_s - v.policed_per_s <= LOSS_TOLERANCE * v.offered_per_s)
    }

    /// The CPUs the model gave the stages on this machine (the shared
    /// stage's, and the VMs' when they are busy cores).
    pub fn model_cpus(&self) -> f64 {
        stage_cpus(self)
    }

    /// Lost or duplicated requests, all VMs.
    pub fn check(&self) -> (u64, u64) {
        self.run
            .vms
            .iter()
            .fold((0, 0), |(l, d), v| (l + v.lost, d + v.duplicated))
    }
}

/// Runs `sys` (in the paper's time) for real at `scale` for `seconds` of
/// the paper's time, calibrating first unless `costs` are given, and the
/// model beside it. A run that other processes disturb is run again, up
/// to `tries` times in all (at most [`TRIES`]); the least disturbed is
/// kept.
///
/// # Errors
///
/// Bad inputs ([`check`]), a run that fails, or one that lost or
/// duplicated requests ([`LabError::MessageCheck`]).
#[allow(clippy::too_many_arguments)]
pub fn real_point(
    sys: &QosSystem,
    scale: f64,
    seconds: f64,
    seed: u64,
    core: VmCore,
    tries: usize,
    costs: Option<&QosCosts>,
) -> Result<RealPoint, LabError> {
    check(sys, scale, seconds, core)?;
    let cfg = config(sys, scale, seconds, seed, core);
    let costs = match costs {
        Some(c) => c.clone(),
        None => calibrate_qos(&cfg.system, core)?,
    };
    let mut best: Option<QosRunResult> = None;
    let most = tries.clamp(1, TRIES);
    let mut tries = 0;
    while tries < most {
        tries += 1;
        let run = run_qos(&cfg)?;
        let (lost, bad) = run
            .vms
            .iter()
            .fold((0, 0), |(l, d), v| (l + v.lost, d + v.duplicated));
        if lost + bad > 0 {
            return Err(LabError::MessageCheck { lost, bad });
        }
        let others = run.others_cpu.unwrap_or(0.0);
        let better = best
            .as_ref()
            .is_none_or(|b| others < b.others_cpu.unwrap_or(0.0));
        if better {
            best = Some(run);
        }
        if others <= DISTURBED_CPUS {
            break;
        }
    }
    let run = best.expect("at least one try");
    let disturbed = run.others_cpu.unwrap_or(0.0) > DISTURBED_CPUS;
    let model = model_of(&cfg.system, &costs, &run);
    let model_at_cpu = model_at_measured_cpu(&cfg.system, &costs, &run);
    Ok(RealPoint {
        system: sys.clone(),
        scale,
        run,
        costs,
        model,
        model_at_cpu,
        tries,
        disturbed,
    })
}

/// The run's system (real time) with the calibrated costs in place of
/// the nominal ones: the shared stage's busy work and ring handling, the
/// VMs' too on busy cores (a timed core takes its nominal time, and so
/// does a guest, whose work runs by its TSC), kicks and wake-ups.
fn calibrated(real: &QosSystem, costs: &QosCosts, core: VmCore) -> QosSystem {
    let mut m = real.clone();
    let ring = finite_or_zero(costs.ring_ns);
    m.shared_ns = costs.shared_ns + ring;
    if core == VmCore::Busy {
        for (vm, ns) in m.vms.iter_mut().zip(&costs.vm_ns) {
            vm.service_ns = *ns + ring;
        }
    }
    m.kick_ns = finite_or_zero(costs.kick_ns);
    m.wake_ns = finite_or_zero(costs.wake_ns);
    m
}

/// The device's hand-offs per second at most (it coalesces).
fn batches_per_s() -> f64 {
    1e9 / kicklab_testbed::qos::DEVICE_PERIOD_NS
}

/// The model of a run: its system (real time) with the calibrated costs,
/// on this machine's CPUs, which the stages share (max-min fair) with the
/// run's other threads (the device; the VMs' threads when their cores are
/// timed) and other processes' (each CPU's worth of what they used in the
/// window a thread), each wanting what it used.
pub fn model_of(real: &QosSystem, costs: &QosCosts, run: &QosRunResult) -> CpuSolution {
    let timed = run.vm_core == VmCore::Timed;
    let m = calibrated(real, costs, run.vm_core);
    let mut others = vec![finite_or_zero(run.device.cpu)];
    if timed {
        others.extend(run.stages[1..].iter().map(|s| finite_or_zero(s.cpu)));
    }
    let o = run.others_cpu.unwrap_or(0.0).max(0.0);
    if o > 0.0 {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let k = o.ceil().max(1.0) as usize;
        #[allow(clippy::cast_precision_loss)]
        others.extend(std::iter::repeat_n(o / k as f64, k));
    }
    #[allow(clippy::cast_precision_loss)]
    let cpus = run.cpus as f64;
    solve_on_cpus(
        &m,
        &Host {
            cpus,
            others,
            batches_per_s: batches_per_s(),
            vms_own_cores: timed,
            vm_hand_off: costs.guest_hand_off,
        },
    )
}

/// The model of a run given the CPU its busy stages actually had (the
/// shared stage's; with busy VM cores, all the stages' together, shared
/// max-min fair; a stage that slept in more than 1% of its requests had
/// spare time and counts as a whole CPU): for a run that other processes
/// disturbed, what the scheduler gave the stages is not the model's to
/// predict, the costs still are.
pub fn model_at_measured_cpu(
    real: &QosSystem,
    costs: &QosCosts,
    run: &QosRunResult,
) -> CpuSolution {
    let timed = run.vm_core == VmCore::Timed;
    let m = calibrated(real, costs, run.vm_core);
    // A stage that slept had more CPU than it needed: it gets a whole one.
    let had = |s: &kicklab_testbed::qos::QosRunStage| {
        if s.sleeps.saturating_mul(100) > s.requests {
            1.0
        } else {
            finite_or_zero(s.cpu)
        }
    };
    let cpus = if timed {
        had(&run.stages[0])
    } else {
        run.stages.iter().map(had).sum()
    };
    solve_on_cpus(
        &m,
        &Host {
            cpus: cpus.max(1e-3),
            others: Vec::new(),
            batches_per_s: batches_per_s(),
            vms_own_cores: timed,
            vm_hand_off: costs.guest_hand_off,
        },
    )
}

/// The model's largest lossless load per VM for a point's system on this
/// machine without other processes (paper time): where the search for the
/// measured one starts.
pub fn quiet_lossless(p: &RealPoint) -> f64 {
    let real = scaled(&p.system, p.scale);
    let quiet = QosRunResult {
        others_cpu: None,
        ..p.run.clone()
    };
    model_of(&real, &p.costs, &quiet)
        .solution
        .max_lossless_per_s
        * p.scale
}

/// Where the search for an overloaded point's lossless load starts: the
/// larger of the model's (this machine, no other processes) and the
/// measured per-VM capacity, taken per whole CPU where the shared stage
/// never slept (it had less than a CPU because something else ran).
fn start_of(p: &RealPoint) -> f64 {
    let st = &p.run.stages[0];
    let measured = if st.sleeps.saturating_mul(100) <= st.requests && st.cpu > 0.05 {
        per_vm(p) / st.cpu.min(1.0)
    } else {
        per_vm(p)
    };
    quiet_lossless(p).max(measured)
}

/// The CPUs a point's model left the stages: the machine's less what the
/// competing threads took.
pub fn stage_cpus(p: &RealPoint) -> f64 {
    p.model
        .cpu
        .iter()
        .take(if p.run.vm_core == VmCore::Timed {
            1
        } else {
            p.model.cpu.len()
        })
        .sum()
}

fn finite_or_zero(v: f64) -> f64 {
    if v.is_finite() {
        v
    } else {
        0.0
    }
}

/// The real shapes of both results: the per-VM capacity and the largest
/// load without loss on each path, and VM2's limit at both policing points.
#[derive(Debug, Clone, Serialize)]
pub struct RealFigures {
    /// Real time over the paper's.
    pub scale: f64,
    /// The paper's seconds measured per run.
    pub seconds: f64,
    /// The costs calibrated once for all runs.
    pub costs: QosCosts,
    /// Both VMs offered `overload` each: shared path, direct path.
    pub capacity: (RealPoint, RealPoint),
    /// The largest load per VM without loss found, and its run: shared,
    /// direct.
    pub lossless: ((f64, RealPoint), (f64, RealPoint)),
    /// VM2's limit and the runs with it at ingress and post (shared path,
    /// both offered `overload`).
    pub limit: Vec<(f64, RealPoint, RealPoint)>,
    /// The offered load per VM of the overloaded runs (paper time).
    pub overload: f64,
    /// The worst model error over every run (judged: in a disturbed run,
    /// the model given the CPU its stages had).
    pub worst_model_error: f64,
    /// Targets missed, in words (empty: all hold).
    pub failures: Vec<String>,
}

impl RealFigures {
    /// Every run, in the order run, with a label.
    pub fn runs(&self) -> Vec<(String, &RealPoint)> {
        let mut v = vec![
            ("shared, overloaded".to_string(), &self.capacity.0),
            ("direct, overloaded".to_string(), &self.capacity.1),
            (
                format!(
                    "shared, {:.0}/s per VM",
                    self.lossless.0 .1.system.vms[0].offered_per_s
                ),
                &self.lossless.0 .1,
            ),
            (
                format!(
                    "direct, {:.0}/s per VM",
                    self.lossless.1 .1.system.vms[0].offered_per_s
                ),
                &self.lossless.1 .1,
            ),
        ];
        for (r, i, p) in &self.limit {
            v.push((format!("VM2 limited to {r:.0}/s at ingress"), i));
            v.push((format!("VM2 limited to {r:.0}/s after receive"), p));
        }
        v
    }
}

/// The per-VM capacity of an overloaded point (the mean of its VMs).
fn per_vm(p: &RealPoint) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let n = p.run.vms.len() as f64;
    (0..p.run.vms.len()).map(|i| p.throughput(i)).sum::<f64>() / n
}

/// What [`real_figures`] runs.
#[derive(Debug, Clone)]
pub struct RealOptions {
    /// Real time over the paper's.
    pub scale: f64,
    /// The paper's seconds measured per run.
    pub seconds: f64,
    /// Seed of Poisson arrivals (unused with the paper's even ones).
    pub seed: u64,
    /// What the VMs' processing runs on.
    pub core: VmCore,
    /// VM2's limits [requests/s, paper time].
    pub limits: Vec<f64>,
    /// Tries of a disturbed run (1 to [`TRIES`]).
    pub tries: usize,
}

impl RealOptions {
    /// The command's defaults: scale 1/10, 10 s of the paper's time per
    /// run, VM2 limited to 150, 550 and 950/s, [`TRIES`] tries, the VM
    /// cores that fit this machine.
    pub fn new() -> RealOptions {
        RealOptions {
            scale: DEFAULT_SCALE,
            seconds: 10.0,
            seed: 1,
            core: VmCore::fitting(2),
            limits: vec![150.0, 550.0, 950.0],
            tries: TRIES,
        }
    }
}

impl Default for RealOptions {
    fn default() -> RealOptions {
        RealOptions::new()
    }
}

/// Runs the real figures: both paths overloaded (capacity), then each at
/// its estimated lossless load ([`start_of`]) and the [`LADDER`] below it
/// until one runs without loss, then
/// VM2 limited to each of the limits at ingress and post (both VMs
/// overloaded); the paper's system at `o.scale`, costs calibrated once.
/// The targets: direct >= 1.5x shared without loss; with VM2 limited to
/// r, VM1 at ingress >= 0.95 x min(its own capacity, the backend's less
/// r) and after receive no better than unconstrained (within [`NOISE`]),
/// both with the backend's capacity taken per CPU it had in each run (a
/// busy machine gives runs different shares); the model within
/// [`MODEL_TARGET`] of every run's per-VM throughput.
///
/// # Errors
///
/// As [`real_point`].
#[allow(clippy::too_many_lines)]
pub fn real_figures(o: &RealOptions, progress: &dyn Progress) -> Result<RealFigures, LabError> {
    let (scale, seconds, seed, core) = (o.scale, o.seconds, o.seed, o.core);
    let overload = 2000.0;
    let paper = |path, police, x| QosSystem::paper(path, police, x);
    check(
        &paper(Path::Shared, Police::Post, overload),
        scale,
        seconds,
        core,
    )?;
    for &r in &o.limits {
        if !(r.is_finite() && r > 0.0) {
            return Err(LabError::input(Input::Vary, format!("a limit of {r}/s")));
        }
    }
    progress.start(
        "qos (real)",
        2 + 2 * LADDER.len() as u64 + 2 * o.limits.len() as u64,
    );
    let costs = calibrate_qos(
        &scaled(&paper(Path::Shared, Police::Post, overload), scale),
        o.core,
    )?;
    let direct_costs = {
        // The hypervisor's busy work is another length.
        let c = calibrate_qos(
            &scaled(&paper(Path::Direct, Police::Post, overload), scale),
            VmCore::Busy,
        )?;
        QosCosts {
            shared_ns: c.shared_ns,
            ..costs.clone()
        }
    };
    let costs_of = |path| {
        if path == Path::Direct {
            &direct_costs
        } else {
            &costs
        }
    };
    let point = |sys: &QosSystem| {
        let r = real_point(
            sys,
            scale,
            seconds,
            seed,
            core,
            o.tries,
            Some(costs_of(sys.path)),
        );
        progress.step();
        r
    };
    let cap_s = point(&paper(Path::Shared, Police::Post, overload))?;
    let cap_d = point(&paper(Path::Direct, Police::Post, overload))?;
    // From the model's lossless load (this machine, no other processes)
    // down, until a run drops nothing (within LOSS_TOLERANCE).
    let find = |path, cap: f64| -> Result<(f64, RealPoint), LabError> {
        let mut last = None;
        for f in LADDER {
            let x = (cap * f).round().max(1.0);
            let p = point(&paper(path, Police::Post, x))?;
            if p.lossless() {
                return Ok((x, p));
            }
            last = Some((0.0, p));
        }
        Ok(last.expect("a ladder of loads"))
    };
    let ls = find(Path::Shared, start_of(&cap_s).min(overload))?;
    let ld = find(Path::Direct, start_of(&cap_d).min(overload))?;
    let mut limit = Vec::with_capacity(o.limits.len());
    for &r in &o.limits {
        let sys = |police| {
            let mut s = paper(Path::Shared, police, overload);
            s.vms[1].limit = Some((r, 10.0));
            s
        };
        limit.push((r, point(&sys(Police::Ingress))?, point(&sys(Police::Post))?));
    }
    progress.finish();
    let mut failures = Vec::new();
    let disturbed = if ls.1.disturbed || ld.1.disturbed {
        " (other processes disturbed the runs: drops from their stalls)"
    } else {
        ""
    };
    if ls.0 > 0.0 && ld.0 > 0.0 {
        let ratio = ld.0 / ls.0;
        if ratio < 1.5 {
            failures.push(format!(
                "direct/shared per VM without loss {:.0}/{:.0} = {ratio:.2}x (target >= 1.5){disturbed}",
                ld.0, ls.0
            ));
        }
    } else {
        failures.push(format!(
            "no load ran without loss on the {} path (drops above {}% down to 75% of the estimated capacity){disturbed}",
            if ls.0 > 0.0 { "direct" } else { "shared" },
            LOSS_TOLERANCE * 100.0
        ));
    }
    // VM1's ceiling with VM2 held to r: its own stage (the direct path's
    // per-VM capacity) or what the backend has left (its capacity, both
    // VMs, at the CPU it had in that run, less r).
    let per_cpu = 2.0 * per_vm(&cap_s) / cap_s.run.stages[0].cpu;
    let vm_cap = per_vm(&cap_d);
    let free = cap_s.throughput(0) / cap_s.run.stages[0].cpu;
    for (r, i, p) in &limit {
        let cap = vm_cap.min(per_cpu * i.run.stages[0].cpu - r);
        let got = i.throughput(0);
        if got < 0.95 * cap {
            failures.push(format!(
                "VM2 limited to {r:.0}/s, ingress: VM1 {got:.0}/s < 0.95 x {cap:.0}/s"
            ));
        }
        let post = p.throughput(0) / p.run.stages[0].cpu;
        if post > free * (1.0 + NOISE) {
            failures.push(format!(
                "VM2 limited to {r:.0}/s, post: VM1 {post:.0}/s per backend CPU above the unconstrained {free:.0}/s (+{:.0}% noise allowed)",
                NOISE * 100.0
            ));
        }
    }
    let mut f = RealFigures {
        scale,
        seconds,
        costs,
        capacity: (cap_s, cap_d),
        lossless: (ls, ld),
        limit,
        overload,
        worst_model_error: 0.0,
        failures,
    };
    let mut worst = 0.0f64;
    let mut model_fail = Vec::new();
    for (label, p) in f.runs() {
        let e = p.judged_error();
        worst = worst.max(e);
        if e > MODEL_TARGET {
            model_fail.push(format!(
                "{label}: model {:.0}% off the measured throughput{} (target {:.0}%)",
                e * 100.0,
                if p.disturbed {
                    ", given the CPU its stages had (disturbed)"
                } else {
                    ""
                },
                MODEL_TARGET * 100.0
            ));
        }
    }
    f.worst_model_error = worst;
    f.failures.extend(model_fail);
    Ok(f)
}

/// The runs as a table: per VM measured and model (paper time), stage CPU,
/// drops, the CPUs the model shared.
pub fn table(f: &RealFigures) -> Table {
    let what = if f.capacity.0.run.vm_core == VmCore::Guest {
        "a KVM guest per VM"
    } else {
        "threads, futex"
    };
    let mut t = Table::new(
        &format!(
            "Real runs ({what}), times x {} of the paper's; throughputs in the paper's time; \
             model: on this machine's CPUs shared with other threads, model at CPU: given the CPU its stages had",
            f.scale
        ),
        vec![
            Column::text("run", "run").on_page(),
            Column::number("vm1_per_s", "VM1 /s").on_page(),
            Column::number("vm1_model_per_s", "VM1 model").on_page(),
            Column::number("vm1_model_at_cpu_per_s", "VM1 model at CPU"),
            Column::number("vm2_per_s", "VM2 /s").on_page(),
            Column::number("vm2_model_per_s", "VM2 model").on_page(),
            Column::number("vm2_model_at_cpu_per_s", "VM2 model at CPU"),
            Column::number("dropped_per_s", "dropped /s").on_page(),
            Column::number("shared_cpu", "shared stage CPU"),
            Column::number("others_cpu", "others' CPU"),
            Column::number("error", "model error (judged: at CPU where disturbed)").on_page(),
            Column::flag("disturbed", "disturbed").on_page(),
        ],
    );
    let r = |v: f64| (v * 1000.0).round() / 1000.0;
    for (label, p) in f.runs() {
        let dropped: f64 = p.run.vms.iter().map(|v| v.dropped_per_s).sum::<f64>() * p.scale;
        t.push(vec![
            Cell::Text(label),
            Cell::Num(p.throughput(0).round()),
            Cell::Num(p.model_throughput(0).round()),
            Cell::Num(p.model_at_cpu_throughput(0).round()),
            Cell::Num(p.throughput(1).round()),
            Cell::Num(p.model_throughput(1).round()),
            Cell::Num(p.model_at_cpu_throughput(1).round()),
            Cell::Num(dropped.round()),
            Cell::Num(r(p.run.stages[0].cpu)),
            Cell::Num(r(p.run.others_cpu.unwrap_or(f64::NAN))),
            Cell::Num(r(p.judged_error())),
            Cell::Bool(p.disturbed),
        ]);
    }
    t
}

/// The limit chart: VM1 and VM2 over VM2's limit at both policing points,
/// measured and model, with the unconstrained VM1 for reference; the
/// measured points of disturbed runs ringed.
pub fn limit_chart(f: &RealFigures) -> Chart {
    let s = |name: &str, style, points: Vec<(f64, f64)>| Series {
        name: name.into(),
        points,
        style,
        error_bars: Vec::new(),
    };
    let lo = f.limit.first().map_or(0.0, |l| l.0);
    let hi = f.limit.last().map_or(1.0, |l| l.0);
    let mut chart = Chart {
        title: format!(
            "{}: VM2 limited, both offered {:.0}/s, shared path",
            if f.capacity.0.run.vm_core == VmCore::Guest {
                "Real KVM guests"
            } else {
                "Real threads"
            },
            f.overload
        ),
        x_label: "VM2's limit [requests/s, paper time]".into(),
        y_label: "completed [requests/s, paper time]".into(),
        series: vec![
            s(
                "VM1, limit at ingress",
                Style::Thick,
                f.limit
                    .iter()
                    .map(|(r, i, _)| (*r, i.throughput(0)))
                    .collect(),
            ),
            s(
                "VM1, limit after receive",
                Style::Dashed,
                f.limit
                    .iter()
                    .map(|(r, _, p)| (*r, p.throughput(0)))
                    .collect(),
            ),
            s(
                "VM2, limit at ingress",
                Style::Points,
                f.limit
                    .iter()
                    .map(|(r, i, _)| (*r, i.throughput(1)))
                    .collect(),
            ),
            s(
                "model: VM1, ingress",
                Style::Line,
                f.limit
                    .iter()
                    .map(|(r, i, _)| (*r, i.model_throughput(0)))
                    .collect(),
            ),
            s(
                "model: VM1, after receive",
                Style::Line,
                f.limit
                    .iter()
                    .map(|(r, _, p)| (*r, p.model_throughput(0)))
                    .collect(),
            ),
            s(
                "VM1, VM2 unconstrained",
                Style::Dashed,
                vec![
                    (lo, f.capacity.0.throughput(0)),
                    (hi, f.capacity.0.throughput(0)),
                ],
            ),
        ],
        ..Chart::default()
    };
    // The measured points of runs other processes disturbed, ringed.
    let disturbed: Vec<(f64, f64)> = f
        .limit
        .iter()
        .flat_map(|(r, i, p)| {
            let mut v = Vec::new();
            if i.disturbed {
                v.extend([(*r, i.throughput(0)), (*r, i.throughput(1))]);
            }
            if p.disturbed {
                v.push((*r, p.throughput(0)));
            }
            v
        })
        .collect();
    if !disturbed.is_empty() {
        chart.series.push(s(
            "disturbed run (other processes took CPU)",
            Style::Ring,
            disturbed,
        ));
    }
    chart
}

/// The paragraph and table the qos section gets from the real runs.
pub fn html(f: &RealFigures) -> String {
    use kicklab_model::fmt_ns_short;
    let c = &f.capacity.0;
    let timed = c.run.vm_core == VmCore::Timed;
    let cores = match (timed, c.run.oversubscribed()) {
        (true, _) => format!(
            "This machine has {} CPUs, fewer than a thread per stage and the device need: the VMs' own processing runs \
             on timed cores (a VM's core of its own, kept in its own time: one request at a time, each its service time, \
             drop-tail; its thread only carries requests to it), and the shared stage is the one busy thread. ",
            c.run.cpus
        ),
        (false, true) => format!(
            "{} busy stage threads on {} CPUs: they time-share, and the model shares the CPUs among them max-min fair. ",
            c.run.busy_threads(),
            c.run.cpus
        ),
        (false, false) => "Every stage is busy work on a thread of its own. ".into(),
    };
    let guest = c.run.vm_core == VmCore::Guest;
    let vm_cost = match c.run.vm_core {
        VmCore::Timed => format!(
            "a VM {} (timed)",
            fmt_ns_short(c.system.vms[0].service_ns * f.scale)
        ),
        VmCore::Guest => format!(
            "a VM {} of busy work by its guest's TSC",
            fmt_ns_short(c.system.vms[0].service_ns * f.scale)
        ),
        VmCore::Busy => format!("a VM {} of CPU", fmt_ns_short(f.costs.vm_ns[0])),
    };
    let (heading, what) = if guest {
        (
            "Real KVM guests",
            format!("threads over kicklab rings with futex kicks up to the shared stage, then a real KVM guest per VM \
             (one vCPU, placed by the scheduler like the other threads) that takes its requests off a ring in its own \
             memory, halts when it is empty and is woken by the shared stage's kick \
             (<code>{}</code>, <code>docs/qos.md</code>, \"The real backend\")",
             kicklab_model::CommandLine::new("qos").arg(Flag::Backend, "kvm")),
        )
    } else {
        (
            "Real threads",
            format!(
                "threads over kicklab rings with futex kicks \
             (<code>{}</code>, <code>docs/qos.md</code>, \"The real backend\")",
                kicklab_model::CommandLine::new("qos").arg(Flag::Backend, "futex")
            ),
        )
    };
    let per_vm = |x: f64| {
        if x > 0.0 {
            format!("{x:.0}/s")
        } else {
            "none (every load tried dropped more)".into()
        }
    };
    let ratio = if f.lossless.0 .0 > 0.0 && f.lossless.1 .0 > 0.0 {
        format!("{:.2}x", f.lossless.1 .0 / f.lossless.0 .0)
    } else {
        "no ratio".into()
    };
    let disturbed = f.runs().iter().filter(|(_, p)| p.disturbed).count();
    format!(
        "<h3>{heading}</h3><p>The same system as {what}. A device thread makes \
         both VMs' arrivals (coalesced every 200 us); a shared-stage thread (backend or hypervisor) spends its service \
         time as busy work of its own CPU time. The paper's times are scaled x {} (rates x {}); rates below are in \
         the paper's time. {cores}Costs calibrated on this machine before the runs: the backend {} and the hypervisor {} of CPU per \
         request, {vm_cost}, a kick {}, a sleep and wake-up {}. Largest load per VM without loss (drops at most {}%): \
         shared {}, direct {}: {ratio} (target >= 1.5; paper 950, 1500: 1.58x). Worst model error over the \
         runs {:.1}% (target 15%; {disturbed} run(s) disturbed by other processes, judged with the model given the \
         CPU the shared stage had; each point is one run, a disturbed one run again up to {TRIES} times, so no \
         spread is drawn and disturbed points are ringed). Targets: {}.</p>{}",
        f.scale,
        1.0 / f.scale,
        fmt_ns_short(f.capacity.0.costs.shared_ns),
        fmt_ns_short(f.capacity.1.costs.shared_ns),
        fmt_ns_short(f.costs.kick_ns),
        fmt_ns_short(f.costs.wake_ns),
        LOSS_TOLERANCE * 100.0,
        per_vm(f.lossless.0 .0),
        per_vm(f.lossless.1 .0),
        f.worst_model_error * 100.0,
        if f.failures.is_empty() {
            "all hold".to_string()
        } else {
            kicklab_report::html_escape(&f.failures.join("; "))
        },
        table(f).to_html()
    )
}

/// The report's section of the real runs: the paragraph, the table, the
/// limit chart, the command that reproduces them, and a link to the table
/// as CSV (`csv`, the file's name beside the page).
///
/// # Errors
///
/// A chart that cannot be drawn.
pub fn section(f: &RealFigures, csv: &str) -> Result<Section, LabError> {
    let guest = f.capacity.0.run.vm_core == VmCore::Guest;
    let (id, on, backend) = if guest {
        ("qos-real-kvm", "real KVM guests", "kvm")
    } else {
        ("qos-real", "real threads", "futex")
    };
    let mut s = Section::new(
        id,
        &format!("Several VMs, one device, on {on}: shared vs direct path, and where to police"),
    );
    s.html = html(f).replacen("<h3>Real threads</h3>", "", 1).replacen(
        "<h3>Real KVM guests</h3>",
        "",
        1,
    );
    s.html.push_str(&format!(
        "<p>Reproduce: <code>{}</code>. Data: \
         <a href=\"{csv}\">{csv}</a>.</p>",
        kicklab_model::CommandLine::new("qos")
            .switch(Flag::Figures, true)
            .arg(Flag::Backend, backend)
            .arg(Flag::Seconds, f.seconds)
            .arg(Flag::Out, "DIR"),
        csv = kicklab_report::html_escape(csv)
    ));
    s.push_chart(
        &format!("{id}-limit"),
        &limit_chart(f),
        kicklab_report::FIG_W,
        kicklab_report::FIG_H,
    )?;
    Ok(s)
}
