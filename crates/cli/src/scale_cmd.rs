//! `kicklab scale`: idle-with-timeout at scale (Denali): N guests
//! time-sharing the CPUs, idling by spinning or with a timeout; for real
//! (threads, KVM guests) or simulated (`--backend sim`).

use clap::Args;
use kicklab_lab::scale_command::{plan, ScaleBackend, ScaleRequest, SimMachine};
use kicklab_term::cmdline::choice;
use kicklab_testbed::scale::ScaleIdle;

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
    #[arg(long, default_value = "futex", value_parser = choice(&ScaleBackend::ALL, ScaleBackend::name))]
    backend: ScaleBackend,
    /// Requests outstanding in all (the client's concurrency), spread over
    /// the guests.
    #[arg(long, value_parser = kicklab_model::typed::whole::<usize>, default_value_t = 32, allow_hyphen_values = true)]
    concurrency: usize,
    /// Work per request.
    #[arg(long, default_value = "20us", value_parser = kicklab_model::typed::duration, allow_hyphen_values = true)]
    work: std::time::Duration,
    /// Each guest's timer period (it must run then).
    #[arg(long, default_value = "1ms", value_parser = kicklab_model::typed::duration, allow_hyphen_values = true)]
    timer: std::time::Duration,
    /// Seconds measured per run (after a fifth as long of warm-up).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true, value_parser = kicklab_model::typed::number)]
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
    #[arg(long, value_parser = kicklab_model::typed::whole::<usize>, allow_hyphen_values = true)]
    cpus: Option<usize>,
    /// Scheduler slice. [default: Linux's for --cpus: 0.75 ms x (1 + log2 CPUs, up to 8)]
    #[arg(long, value_parser = kicklab_model::typed::duration_ns, allow_hyphen_values = true)]
    slice: Option<f64>,
    /// What waking a blocked guest or client costs the waker's CPU. [default: 2us, or the --profile's NP_cpu median: the notifier's CPU time in its notify]
    #[arg(long, value_parser = kicklab_model::typed::duration_ns, allow_hyphen_values = true)]
    kick: Option<f64>,
    /// A woken guest's or client's start-up on its CPU. [default: 4us, or the --profile's SC_cpu median: the woken party's own CPU time in its wake-up]
    #[arg(long, value_parser = kicklab_model::typed::duration_ns, allow_hyphen_values = true)]
    wake: Option<f64>,
    /// What resuming a preempted guest costs its CPU. [default: 1us]
    #[arg(long, value_parser = kicklab_model::typed::duration_ns, allow_hyphen_values = true)]
    switch: Option<f64>,
    /// The client's CPU per request it hands back. [default: 1us]
    #[arg(long, value_parser = kicklab_model::typed::duration_ns, allow_hyphen_values = true)]
    client_cost: Option<f64>,
    /// A calibration profile (`kicklab calibrate --save FILE`) for --kick
    /// (its notifier's CPU time, NP_cpu, not the wall time N_P) and --wake
    /// (its woken party's, SC_cpu): this simulator counts CPU shares.
    #[arg(long)]
    profile: Option<std::path::PathBuf>,
}

pub fn run(a: &ScaleArgs) -> anyhow::Result<()> {
    let backend = a.backend;
    let c = &a.sim;
    let req = ScaleRequest {
        backend,
        vms: a.vms.clone(),
        idle: a.idle.clone(),
        concurrency: a.concurrency,
        work: a.work,
        timer: a.timer,
        seconds: a.seconds,
        sim: SimMachine {
            cpus: c.cpus,
            slice_ns: c.slice,
            kick_ns: c.kick,
            wake_ns: c.wake,
            switch_ns: c.switch,
            client_ns: c.client_cost,
            profile: c
                .profile
                .as_deref()
                .map(kicklab_lab::pair_input::read_profile)
                .transpose()?,
        },
    };
    let planned = plan(&req)?;
    if backend == ScaleBackend::Kvm {
        kicklab_lab::backend_input::kvm_usable()?;
    }
    let output =
        kicklab_lab::scale_command::run(&planned, &kicklab_term::progress::Bars::default())?;
    kicklab_term::show::result(a.json, &output.json, &output.text)
}
