//! `kicklab advise`: the strategy to use for a pair and a workload, from
//! the paper's costs or a calibration profile, searched with the simulator.

use clap::Args;
use kicklab_lab::advise::{advise, ring_past_search, AdviseSpec};
use kicklab_model::fmt_ns;

use crate::args::ParamArgs;

/// Arguments of `kicklab advise`.
#[derive(Debug, Args)]
pub struct AdviseArgs {
    #[command(flatten)]
    params: ParamArgs,
    /// Bound on the p99 message latency (publish to end of consumption).
    #[arg(long, default_value = "100us", value_parser = crate::args::latency_ns, allow_hyphen_values = true)]
    latency: f64,
    /// Messages simulated per candidate.
    #[arg(long, value_parser = crate::args::whole::<u64>, default_value_t = 200_000, allow_hyphen_values = true)]
    messages: u64,
    /// Seed of the random cost streams.
    #[arg(long, value_parser = crate::args::whole::<u64>, default_value_t = 1, allow_hyphen_values = true)]
    seed: u64,
    /// Search every family over a fine grid (slower; what the default
    /// search is checked against).
    #[arg(long)]
    exhaustive: bool,
    /// Print {"strategy", "predicted": {"strategy", "T_ns", "E_ns", "latency_p99_ns"}, "reason", "alternatives": [...]}.
    #[arg(long)]
    json: bool,
}

pub fn run(a: &AdviseArgs) -> anyhow::Result<()> {
    let profile = a.params.load_profile()?;
    let params = a.params.params_for_profile(profile.as_ref(), true, false)?;
    if let Some(profile) = &profile {
        if let Some(why) = ring_past_search(&a.params.params_from(profile)?, &params) {
            return Err(crate::Usage(format!("--profile: {why}")).into());
        }
    }
    let (idle_scale, nap_ns) = profile
        .as_ref()
        .map_or(([None, None], [None, None]), |p| p.sim_costs());
    let spec = AdviseSpec {
        params,
        idle_scale,
        nap_ns,
        latency_ns: a.latency,
        messages: a.messages,
        seed: a.seed,
        exhaustive: a.exhaustive,
    };
    let advice = advise(&spec, &crate::Bars::default())?;
    if a.json {
        return crate::print_json(&serde_json::to_value(&advice)?);
    }
    outln!("use            --mode {}", advice.strategy);
    outln!(
        "predicted      T {}, E {}, p99 latency {}",
        fmt_ns(advice.predicted.t_ns),
        fmt_ns(advice.predicted.e_ns),
        fmt_ns(advice.predicted.latency_p99_ns)
    );
    outln!("why            {}", advice.reason);
    outln!(
        "\n{:<48} {:>10} {:>10} {:>12}",
        "alternatives (best first)",
        "T",
        "E",
        "p99 latency"
    );
    for c in &advice.alternatives {
        outln!(
            "{:<48} {:>10} {:>10} {:>12}",
            c.strategy,
            fmt_ns(c.t_ns),
            fmt_ns(c.e_ns),
            fmt_ns(c.latency_p99_ns)
        );
    }
    Ok(())
}
