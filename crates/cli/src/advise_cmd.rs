//! `kicklab advise`: the strategy to use for a pair and a workload, from
//! the paper's costs or a calibration profile, searched with the simulator.

use clap::Args;
use kicklab_lab::advise::{advise, AdviseSpec};
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
    #[arg(long, default_value_t = 200_000, allow_hyphen_values = true)]
    messages: u64,
    /// Seed of the random cost streams.
    #[arg(long, default_value_t = 1, allow_hyphen_values = true)]
    seed: u64,
    /// Search every family over a fine grid (slower; what the default
    /// search is checked against).
    #[arg(long)]
    exhaustive: bool,
    /// Print {"strategy", "predicted": {"T_ns", "E_ns", "latency_p99_ns"}, "alternatives": [...]}.
    #[arg(long)]
    json: bool,
}

pub fn run(a: &AdviseArgs) -> anyhow::Result<()> {
    let profile = a.params.load_profile()?;
    let params = a.params.params_for_profile(profile.as_ref(), true, false)?;
    if let Some(profile) = &profile {
        ring_within_search(&a.params.params_from(profile)?, &params)?;
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
    println!("use            --mode {}", advice.strategy);
    println!(
        "predicted      T {}, E {}, p99 latency {}",
        fmt_ns(advice.predicted.t_ns),
        fmt_ns(advice.predicted.e_ns),
        fmt_ns(advice.predicted.latency_p99_ns)
    );
    println!("why            {}", advice.reason);
    println!(
        "\n{:<48} {:>10} {:>10} {:>12}",
        "alternatives (best first)", "T", "E", "p99 latency"
    );
    for c in &advice.alternatives {
        println!(
            "{:<48} {:>10} {:>10} {:>12}",
            c.strategy,
            fmt_ns(c.t_ns),
            fmt_ns(c.e_ns),
            fmt_ns(c.latency_p99_ns)
        );
    }
    Ok(())
}

/// Refuses a profile whose ring cost per message alone takes W_P or W_C
/// past what advise searches (`given`: W as the flags give it; `with_ring`:
/// with the profile's ring cost added), naming the profile rather than
/// `--wp`/`--wc`, which are within bounds.
fn ring_within_search(
    given: &kicklab_model::Params,
    with_ring: &kicklab_model::Params,
) -> anyhow::Result<()> {
    use kicklab_lab::advise::MAX_COST_NS;
    for (name, w, total) in [
        ("W_P", given.w_p, with_ring.w_p),
        ("W_C", given.w_c, with_ring.w_c),
    ] {
        if w.mean_ns() <= MAX_COST_NS && total.mean_ns() > MAX_COST_NS {
            return Err(crate::Usage(format!(
                "--profile: its ring cost per message ({}) added to {name} ({}) makes it {}, past the {} \
                 advise searches; a ring cost that large is no calibration of this machine's ring (calibrate again)",
                fmt_ns(total.mean_ns() - w.mean_ns()),
                fmt_ns(w.mean_ns()),
                fmt_ns(total.mean_ns()),
                fmt_ns(MAX_COST_NS)
            ))
            .into());
        }
    }
    Ok(())
}
