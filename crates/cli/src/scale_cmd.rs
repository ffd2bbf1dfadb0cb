//! `kicklab scale`: idle-with-timeout at scale (Denali): N guests
//! time-sharing the CPUs, idling by spinning or with a timeout; for real
//! (threads, KVM guests) or simulated (`--backend sim`).

use clap::Args;
use kicklab_lab::scale_command::PlannedRun;
use kicklab_sim::scale::ScaleSim;
use kicklab_testbed::scale::{ScaleConfig, ScaleIdle};

use crate::errors::Usage;

/// The shortest window a run measures.
const MIN_WINDOW: std::time::Duration = std::time::Duration::from_millis(10);

/// Arguments of `kicklab scale`.
#[derive(Debug, Args)]
pub struct ScaleArgs {
    /// Guests, or a comma-separated list of counts (1,2,4,8,16).
    #[arg(
        long,
        default_value = "8",
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    vms: Vec<usize>,
    /// How an idle guest waits for its next request or timer: spin (no
    /// idle-with-timeout) or timeout; a comma-separated list runs each.
    #[arg(long, default_value = "spin,timeout", value_delimiter = ',')]
    idle: Vec<ScaleIdle>,
    /// futex: a thread per guest, the OS scheduler as the hypervisor; kvm:
    /// a tiny VM of one vCPU per guest, idling by spinning or through the
    /// VMM with a timeout (at most 64 guests); sim: the event simulator,
    /// a round-robin scheduler over --cpus CPUs (docs/vm-mechanisms.md).
    #[arg(long, default_value = "futex", value_parser = ["futex", "kvm", "sim"])]
    backend: String,
    /// Requests outstanding in all (the client's concurrency), spread over
    /// the guests.
    #[arg(long, value_parser = crate::args::whole::<usize>, default_value_t = 32, allow_hyphen_values = true)]
    concurrency: usize,
    /// Work per request.
    #[arg(long, default_value = "20us", value_parser = crate::args::duration, allow_hyphen_values = true)]
    work: std::time::Duration,
    /// Each guest's timer period (it must run then).
    #[arg(long, default_value = "1ms", value_parser = crate::args::duration, allow_hyphen_values = true)]
    timer: std::time::Duration,
    /// Seconds measured per run (after a fifth as long of warm-up).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true, value_parser = crate::args::number)]
    seconds: f64,
    /// Print JSON: one object for one run, {"runs": [...]} for several.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    sim: SimCosts,
}

/// The simulator's machine (`--backend sim` only).
#[derive(Debug, Args)]
#[command(next_help_heading = "Simulated machine (--backend sim)")]
struct SimCosts {
    /// CPUs the guests and the client share. [default: this machine's]
    #[arg(long, value_parser = crate::args::whole::<usize>, allow_hyphen_values = true)]
    cpus: Option<usize>,
    /// Scheduler slice. [default: Linux's for --cpus: 0.75 ms x (1 + log2 CPUs, up to 8)]
    #[arg(long, value_parser = crate::args::duration_ns, allow_hyphen_values = true)]
    slice: Option<f64>,
    /// What waking a blocked guest or client costs the waker's CPU. [default: 2us, or the --profile's NP_cpu median: the notifier's CPU time in its notify]
    #[arg(long, value_parser = crate::args::duration_ns, allow_hyphen_values = true)]
    kick: Option<f64>,
    /// A woken guest's or client's start-up on its CPU. [default: 4us, or the --profile's SC_cpu median: the woken party's own CPU time in its wake-up]
    #[arg(long, value_parser = crate::args::duration_ns, allow_hyphen_values = true)]
    wake: Option<f64>,
    /// What resuming a preempted guest costs its CPU. [default: 1us]
    #[arg(long, value_parser = crate::args::duration_ns, allow_hyphen_values = true)]
    switch: Option<f64>,
    /// The client's CPU per request it hands back. [default: 1us]
    #[arg(long, value_parser = crate::args::duration_ns, allow_hyphen_values = true)]
    client_cost: Option<f64>,
    /// A calibration profile (`kicklab calibrate --save FILE`) for --kick
    /// (its notifier's CPU time, NP_cpu, not the wall time N_P) and --wake
    /// (its woken party's, SC_cpu): this simulator counts CPU shares.
    #[arg(long)]
    profile: Option<std::path::PathBuf>,
}

impl SimCosts {
    fn given(&self) -> bool {
        self.cpus.is_some()
            || self.slice.is_some()
            || self.kick.is_some()
            || self.wake.is_some()
            || self.switch.is_some()
            || self.client_cost.is_some()
            || self.profile.is_some()
    }

    /// The simulated run of the load in `cfg` (guests, idle, the load's
    /// flags), with `profile` (read once, from `--profile`) for its costs.
    fn config(
        &self,
        cfg: &ScaleConfig,
        profile: Option<&kicklab_model::Profile>,
    ) -> Result<ScaleSim, Usage> {
        let cpus = self.cpus.unwrap_or_else(|| {
            std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
        });
        if cpus == 0 || cpus > kicklab_sim::scale::MAX_CPUS {
            return Err(Usage(format!(
                "--cpus: 1 to {}, got {cpus}",
                kicklab_sim::scale::MAX_CPUS
            )));
        }
        if cfg.vms == 0 || cfg.vms > kicklab_sim::scale::MAX_ENTITIES {
            return Err(Usage(format!(
                "--vms: 1 to {} guests with sim, got {}",
                kicklab_sim::scale::MAX_ENTITIES,
                cfg.vms
            )));
        }
        let ns = |flag: &str, v: Option<f64>, default: f64| {
            let v = v.unwrap_or(default);
            if v.is_finite() && (0.0..=1e9).contains(&v) {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                Ok(v.round() as u64)
            } else {
                Err(Usage(format!("--{flag}: 0 to 1 s, got {v} ns")))
            }
        };
        let base = kicklab_lab::scale::sim_config(cfg, cpus, profile);
        #[allow(clippy::cast_precision_loss)]
        let slice = ns("slice", self.slice, base.slice_ns as f64)
            .ok()
            .filter(|&ns| ns >= 1000)
            .ok_or_else(|| {
                Usage(format!(
                    "--slice: 1us to 1 s (Linux's is 0.75-3ms), got {}",
                    kicklab_model::fmt_ns(self.slice.unwrap_or(base.slice_ns as f64))
                ))
            })?;
        #[allow(clippy::cast_precision_loss)]
        let sim = ScaleSim {
            slice_ns: slice,
            kick_ns: ns("kick", self.kick, base.kick_ns as f64)?,
            wake_ns: ns("wake", self.wake, base.wake_ns as f64)?,
            switch_ns: ns("switch", self.switch, base.switch_ns as f64)?,
            client_ns: ns("client-cost", self.client_cost, base.client_ns as f64)?,
            ..base
        };
        sim.check()
            .map_err(|e| Usage(format!("--backend sim: {e}")))?;
        Ok(sim)
    }
}

pub fn run(a: &ScaleArgs) -> anyhow::Result<()> {
    let kvm = a.backend == "kvm";
    if kvm {
        if let Some(&n) = a
            .vms
            .iter()
            .find(|&&n| n == 0 || n > kicklab_testbed::kvm::scale::MAX_VMS)
        {
            return Err(Usage(format!(
                "--vms: 1 to {} guests with kvm (a VM and a vCPU thread each), got {n}",
                kicklab_testbed::kvm::scale::MAX_VMS
            ))
            .into());
        }
        crate::args::kvm_usable()?;
    }
    let sim = a.backend == "sim";
    if !sim && a.sim.given() {
        return Err(Usage(
            "--cpus, --slice, --kick, --wake, --switch, --client-cost and --profile describe the simulated machine: add --backend sim".into(),
        )
        .into());
    }
    let profile = a
        .sim
        .profile
        .as_deref()
        .map(crate::args::read_profile)
        .transpose()?;
    if sim && a.work.is_zero() {
        return Err(Usage("--work: a time > 0 with --backend sim".into()).into());
    }
    crate::show::no_repeats("--vms", &a.vms)?;
    crate::show::no_repeats("--idle", &a.idle)?;
    let duration = std::time::Duration::try_from_secs_f64(a.seconds)
        .ok()
        .filter(|d| *d >= MIN_WINDOW && d.as_secs() <= 600)
        .ok_or_else(|| {
            Usage(format!(
                "--seconds: {MIN_WINDOW:?} (ten of the guests' timer periods at Linux's 1 ms) to 600 s"
            ))
        })?;
    if a.concurrency == 0 || a.concurrency > 1_000_000 {
        return Err(Usage("--concurrency: 1 to 1000000 requests outstanding".into()).into());
    }
    if a.timer < std::time::Duration::from_micros(1) {
        return Err(Usage(format!(
            "--timer: a period of at least 1us (shorter ones leave a guest no time but its timer), got {:?}",
            a.timer
        ))
        .into());
    }
    // Every run's settings before the first starts.
    let config = |vms, idle| ScaleConfig {
        concurrency: a.concurrency,
        work: a.work,
        timer: a.timer,
        duration,
        ..ScaleConfig::new(vms, idle)
    };
    for &vms in &a.vms {
        for &idle in &a.idle {
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
    for &vms in &a.vms {
        for &idle in &a.idle {
            let cfg = config(vms, idle);
            planned.push(if sim {
                PlannedRun::Sim(a.sim.config(&cfg, profile.as_ref())?)
            } else if kvm {
                PlannedRun::Kvm(cfg)
            } else {
                PlannedRun::Threads(cfg)
            });
        }
    }
    let output = kicklab_lab::scale_command::run(&planned, &crate::show::Bars::default())?;
    if a.json {
        return crate::show::print_json(&output.json);
    }
    for line in &output.text {
        outln!("{line}");
    }
    Ok(())
}
