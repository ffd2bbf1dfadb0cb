//! `kicklab scale` as one library call: the planned runs (a load on
//! threads or on KVM guests, or a simulated machine) in; their JSON object
//! and their text out, with the ratio of idle-with-timeout to spinning
//! wherever both ran for a number of guests. What does not live here: the
//! runs themselves (`kicklab_testbed::scale`, `kicklab_testbed::kvm::scale`,
//! `kicklab_sim::scale`), parsing the command line.

use std::time::Duration;

use kicklab_model::Profile;
use kicklab_sim::scale::{simulate_scale, ScaleSim};
use kicklab_testbed::scale::{ScaleConfig, ScaleIdle};
use serde_json::json;

use crate::{Input, LabError, Progress};

/// One run of a `scale` request.
#[derive(Debug, Clone)]
pub enum PlannedRun {
    /// A thread per guest, the OS scheduler as the hypervisor.
    Threads(ScaleConfig),
    /// A KVM guest of one vCPU per guest.
    Kvm(ScaleConfig),
    /// The event simulator's machine.
    Sim(ScaleSim),
}

/// Where a `scale` request runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScaleBackend {
    /// A thread per guest.
    Futex,
    /// A KVM guest per guest.
    Kvm,
    /// The event simulator's machine.
    Sim,
}

impl ScaleBackend {
    /// Every backend, in the order `--help` lists them.
    pub const ALL: [ScaleBackend; 3] = [ScaleBackend::Futex, ScaleBackend::Kvm, ScaleBackend::Sim];

    /// The backend's name as the command line gives it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            ScaleBackend::Futex => "futex",
            ScaleBackend::Kvm => "kvm",
            ScaleBackend::Sim => "sim",
        }
    }
}

/// The simulated machine's settings, each `None` for its default
/// ([`crate::scale::sim_config`]).
#[derive(Debug, Clone, Default)]
pub struct SimMachine {
    /// CPUs the guests and the client share [default: this machine's].
    pub cpus: Option<usize>,
    /// Scheduler slice [ns].
    pub slice_ns: Option<f64>,
    /// Waking a blocked guest or the client, on the waker's CPU [ns].
    pub kick_ns: Option<f64>,
    /// A woken party's start-up on its CPU [ns].
    pub wake_ns: Option<f64>,
    /// Resuming a preempted guest [ns].
    pub switch_ns: Option<f64>,
    /// The client's CPU per request [ns].
    pub client_ns: Option<f64>,
    /// A calibration profile for the kick and wake defaults.
    pub profile: Option<Profile>,
}

impl SimMachine {
    /// Whether any setting was given.
    #[must_use]
    pub fn given(&self) -> bool {
        self.cpus.is_some()
            || self.slice_ns.is_some()
            || self.kick_ns.is_some()
            || self.wake_ns.is_some()
            || self.switch_ns.is_some()
            || self.client_ns.is_some()
            || self.profile.is_some()
    }

    /// The simulated run of the load in `cfg`.
    fn config(&self, cfg: &ScaleConfig) -> Result<ScaleSim, LabError> {
        let cpus = self.cpus.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        if cpus == 0 || cpus > kicklab_sim::scale::MAX_CPUS {
            return Err(LabError::input(
                Input::Cpus,
                format!("1 to {}, got {cpus}", kicklab_sim::scale::MAX_CPUS),
            ));
        }
        if cfg.vms == 0 || cfg.vms > kicklab_sim::scale::MAX_ENTITIES {
            return Err(LabError::input(
                Input::Vms,
                format!(
                    "1 to {} guests with sim, got {}",
                    kicklab_sim::scale::MAX_ENTITIES,
                    cfg.vms
                ),
            ));
        }
        let ns = |input: Input, v: Option<f64>, default: u64| {
            #[allow(clippy::cast_precision_loss)]
            let v = v.unwrap_or(default as f64);
            if v.is_finite() && (0.0..=1e9).contains(&v) {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                Ok(v.round() as u64)
            } else {
                Err(LabError::input(input, format!("0 to 1 s, got {v} ns")))
            }
        };
        let base = crate::scale::sim_config(cfg, cpus, self.profile.as_ref());
        let slice = ns(Input::Slice, self.slice_ns, base.slice_ns)
            .ok()
            .filter(|&ns| ns >= 1000)
            .ok_or_else(|| {
                #[allow(clippy::cast_precision_loss)]
                let given = self.slice_ns.unwrap_or(base.slice_ns as f64);
                LabError::input(
                    Input::Slice,
                    format!(
                        "1us to 1 s (Linux's is 0.75-3ms), got {}",
                        kicklab_model::fmt_ns(given)
                    ),
                )
            })?;
        let sim = ScaleSim {
            slice_ns: slice,
            kick_ns: ns(Input::Kick, self.kick_ns, base.kick_ns)?,
            wake_ns: ns(Input::Wake, self.wake_ns, base.wake_ns)?,
            switch_ns: ns(Input::Switch, self.switch_ns, base.switch_ns)?,
            client_ns: ns(Input::ClientCost, self.client_ns, base.client_ns)?,
            ..base
        };
        sim.check()
            .map_err(|e| LabError::input(Input::SimMachine, e))?;
        Ok(sim)
    }
}

/// A `scale` request: every count of guests with every idle.
#[derive(Debug, Clone)]
pub struct ScaleRequest {
    /// Where it runs.
    pub backend: ScaleBackend,
    /// Guests, one run (per idle) for each count.
    pub vms: Vec<usize>,
    /// How an idle guest waits, one run (per count) for each.
    pub idle: Vec<ScaleIdle>,
    /// Requests outstanding in all.
    pub concurrency: usize,
    /// Work per request.
    pub work: Duration,
    /// Each guest's timer period.
    pub timer: Duration,
    /// Seconds measured per run.
    pub seconds: f64,
    /// The simulated machine (`ScaleBackend::Sim` only).
    pub sim: SimMachine,
}

/// The shortest window a run measures.
pub const MIN_WINDOW: Duration = Duration::from_millis(10);

/// The longest window a run measures.
pub const MAX_WINDOW: Duration = Duration::from_secs(600);

/// Checks `req` and plans its runs, every one checked before the first
/// starts.
///
/// # Errors
///
/// The first input out of range, named ([`LabError::Input`], a testbed
/// setting).
pub fn plan(req: &ScaleRequest) -> Result<Vec<PlannedRun>, LabError> {
    let kvm = req.backend == ScaleBackend::Kvm;
    let sim = req.backend == ScaleBackend::Sim;
    if kvm {
        let max = kicklab_testbed::kvm::scale::MAX_VMS;
        if let Some(&n) = req.vms.iter().find(|&&n| n == 0 || n > max) {
            return Err(LabError::input(
                Input::Vms,
                format!("1 to {max} guests with kvm (a VM and a vCPU thread each), got {n}"),
            ));
        }
    }
    if !sim && req.sim.given() {
        return Err(LabError::input(
            Input::SimMachine,
            "the simulated machine's settings (CPUs, slice, kick, wake, switch, client cost, profile) need it",
        ));
    }
    if sim && req.work.is_zero() {
        return Err(LabError::input(
            Input::Work,
            "a time > 0 on the simulated machine",
        ));
    }
    crate::error::no_repeats(Input::Vms, &req.vms)?;
    crate::error::no_repeats(Input::Idle, &req.idle)?;
    let duration = Duration::try_from_secs_f64(req.seconds)
        .ok()
        .filter(|d| (MIN_WINDOW..=MAX_WINDOW).contains(d))
        .ok_or_else(|| {
            LabError::input(
                Input::Seconds,
                format!(
                    "{MIN_WINDOW:?} (ten of the guests' timer periods at Linux's 1 ms) to {} s",
                    MAX_WINDOW.as_secs()
                ),
            )
        })?;
    if req.concurrency == 0 || req.concurrency > 1_000_000 {
        return Err(LabError::input(
            Input::Concurrency,
            "1 to 1000000 requests outstanding",
        ));
    }
    if req.timer < Duration::from_micros(1) {
        return Err(LabError::input(
            Input::Timer,
            format!(
                "a period of at least 1us (shorter ones leave a guest no time but its timer), got {:?}",
                req.timer
            ),
        ));
    }
    let config = |vms, idle| ScaleConfig {
        concurrency: req.concurrency,
        work: req.work,
        timer: req.timer,
        duration,
        ..ScaleConfig::new(vms, idle)
    };
    for &vms in &req.vms {
        for &idle in &req.idle {
            if sim {
                // (The simulated machine takes more guests than the real
                // backends; the request must fit the window all the same.)
                config(vms, idle).check_work()?;
            } else {
                config(vms, idle).check()?;
            }
        }
    }
    let mut planned = Vec::new();
    for &vms in &req.vms {
        for &idle in &req.idle {
            let cfg = config(vms, idle);
            planned.push(match req.backend {
                ScaleBackend::Sim => PlannedRun::Sim(req.sim.config(&cfg)?),
                ScaleBackend::Kvm => PlannedRun::Kvm(cfg),
                ScaleBackend::Futex => PlannedRun::Threads(cfg),
            });
        }
    }
    Ok(planned)
}

/// What a `scale` request gives back.
#[derive(Debug)]
pub struct ScaleOutput {
    /// One object for one run, `{"runs": [...]}` for several.
    pub json: serde_json::Value,
    /// The text output, line by line.
    pub text: Vec<String>,
}

/// Runs every planned run in turn, a step of `progress` each.
///
/// # Errors
///
/// A simulated machine the simulator refuses ([`Input::SimMachine`]), a
/// real run that failed.
pub fn run(planned: &[PlannedRun], progress: &dyn Progress) -> Result<ScaleOutput, LabError> {
    let mut runs = Vec::new();
    let mut text = Vec::new();
    progress.start("scale", planned.len() as u64);
    for p in planned {
        match p {
            PlannedRun::Sim(sim) => {
                let r = simulate_scale(sim)
                    .map_err(|e| LabError::input(Input::SimMachine, e.to_string()))?;
                text.push(format!(
                    "{:>4} guests  idle {:<8} {:>10.0} requests/s  CPU {:>5.1}% (spinning {:>5.1}%)  client waits {} per request{}",
                    r.vms,
                    format!("{:?}", r.idle).to_lowercase(),
                    r.throughput_per_s,
                    100.0 * r.cpu_util,
                    100.0 * r.spin_util,
                    kicklab_model::fmt_ns(r.client_delay_ns),
                    if r.vms + 1 > r.cpus {
                        format!("  (simulated: {} guests and the client on {} CPUs)", r.vms, r.cpus)
                    } else {
                        String::new()
                    }
                ));
                runs.push(serde_json::to_value(&r)?);
            }
            PlannedRun::Threads(cfg) | PlannedRun::Kvm(cfg) => {
                let kvm = matches!(p, PlannedRun::Kvm(_));
                let r = if kvm {
                    kicklab_testbed::kvm::scale::scale(cfg)?
                } else {
                    kicklab_testbed::scale::scale(cfg)?
                };
                text.push(format!(
                    "{:>4} guests  idle {:<8} {:>10.0} requests/s  CPU {:>5.1}%{}",
                    r.vms,
                    format!("{:?}", r.idle).to_lowercase(),
                    r.throughput_per_s,
                    100.0 * r.cpu_util,
                    if r.oversubscribed {
                        format!(
                            "  ({} {} busy at times on {} CPUs: time-shared)",
                            r.vms + 1,
                            if kvm {
                                "vCPU and client threads"
                            } else {
                                "threads"
                            },
                            r.cpus
                        )
                    } else {
                        String::new()
                    }
                ));
                runs.push(serde_json::to_value(&r)?);
            }
        }
        progress.step();
    }
    progress.finish();
    // The ratio per number of guests where both were run.
    let mut counts: Vec<u64> = runs.iter().filter_map(|r| r["vms"].as_u64()).collect();
    counts.dedup();
    for vms in counts {
        let get = |idle: ScaleIdle| {
            let idle = serde_json::to_value(idle).unwrap_or_default();
            runs.iter()
                .find(|r| r["vms"] == vms && r["idle"] == idle)
                .and_then(|r| r["throughput_per_s"].as_f64())
        };
        if let (Some(s), Some(t)) = (get(ScaleIdle::Spin), get(ScaleIdle::Timeout)) {
            text.push(format!(
                "{vms:>4} guests: idle-with-timeout {:.2}x spinning's throughput (Denali: more than 2x as the load spreads over more VMs)",
                t / s
            ));
        }
    }
    let json = if runs.len() == 1 {
        runs.swap_remove(0)
    } else {
        json!({ "runs": runs })
    };
    Ok(ScaleOutput { json, text })
}
