//! `kicklab advise`: the strategy to use for a pair and a workload, from
//! the paper's costs or a calibration profile, searched with the simulator.

use clap::Args;
use kicklab_lab::advise_command::AdviseRequest;
use kicklab_lab::knobs::{Mechanism, Mechanisms};

use crate::args::ParamArgs;

/// Arguments of `kicklab advise`.
#[derive(Debug, Args)]
pub struct AdviseArgs {
    #[command(flatten)]
    params: ParamArgs,
    /// Bound on the p99 message latency (publish to end of consumption).
    #[arg(long, default_value = "100us", value_parser = kicklab_model::typed::latency_ns, allow_hyphen_values = true)]
    latency: f64,
    /// Messages simulated per candidate.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 200_000, allow_hyphen_values = true)]
    messages: u64,
    /// Seed of the random cost streams.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 1, allow_hyphen_values = true)]
    seed: u64,
    /// Search every family over a fine grid (slower; what the default
    /// search is checked against).
    #[arg(long)]
    exhaustive: bool,
    /// The real mechanisms to give settings for, separated by commas:
    /// kvm-host (KVM halt polling), guest (cpuidle-haltpoll), napi
    /// (deferral), vhost (vhost-net busy loop), qemu (IOThread polling),
    /// virtio-net (notification coalescing), io-uring (hybrid polling),
    /// all, or none. kicklab prints the commands and applies none of them.
    #[arg(long = "for", value_name = "MECHANISMS", default_value = "all", value_parser = Mechanism::parse, allow_hyphen_values = true)]
    mechanisms: Mechanisms,
    /// Run the pick and each mechanism's best setting for real on this
    /// backend (futex, eventfd, pipe or kvm; needs a --profile calibrated
    /// on it) and print each beside its prediction.
    #[arg(long, value_name = "BACKEND", value_parser = crate::args::backend)]
    check: Option<kicklab_testbed::Backend>,
    /// Print {"strategy", "predicted": {"strategy", "T_ns", "E_ns", "latency_p99_ns"}, "reason", "alternatives": [...], "knobs": [{"mechanism", "strategy", "settings": {name: value}, "predicted", "commands", "implements_pick", "note", "default", "alternatives"}]}.
    #[arg(long)]
    json: bool,
}

pub fn run(a: &AdviseArgs) -> anyhow::Result<()> {
    let out = AdviseRequest {
        pair: a.params.input(),
        latency_ns: a.latency,
        messages: a.messages,
        seed: a.seed,
        exhaustive: a.exhaustive,
        mechanisms: a.mechanisms.0.clone(),
        check: a.check,
    }
    .run(&kicklab_term::progress::Bars::default())?;
    kicklab_term::show::result(a.json, &out.json, &out.text)
}
