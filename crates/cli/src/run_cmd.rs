//! `kicklab run`: parses, calls `kicklab_lab::real`, prints.

use clap::Args;
use kicklab_lab::real::{expected, profile_for, RunSpec};
use kicklab_lab::unused::Unused;
use kicklab_model::{Flag, WaitMode};

use crate::args::{BackendArgs, ParamArgs};

/// Arguments of `kicklab run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    params: ParamArgs,
    #[command(flatten)]
    be: BackendArgs,
    /// How both parties wait: notify (block), poll (spin), spin:<B> (spin,
    /// then block), sleep:<Y> (timed sleeps), halt-poll[:...] (KVM),
    /// haltpoll[:...] (guest governor), hybrid[:mean|min], defer[:...]
    /// (NAPI), coalesce:<n>,<t> (held kicks), adaptive[:latency=<D>,check=on|off]
    /// (kicklab's controller). A kvm guest waits by notify, poll and
    /// spin:<B> itself and by the others through its VMM (an exit per
    /// wait); its side takes any but coalesce.
    #[arg(long, visible_alias = "mode", default_value = "notify", value_parser = WaitMode::parse, allow_hyphen_values = true)]
    strategy: WaitMode,
    /// How P waits (overrides --strategy for the producer).
    #[arg(long, visible_alias = "mode-p", value_parser = WaitMode::parse, allow_hyphen_values = true)]
    strategy_p: Option<WaitMode>,
    /// How C waits (overrides --strategy for the consumer).
    #[arg(long, visible_alias = "mode-c", value_parser = WaitMode::parse, allow_hyphen_values = true)]
    strategy_c: Option<WaitMode>,
    /// Bound on the p99 message latency that `adaptive` keeps (unless its
    /// strategy gives one) [default: 100us].
    #[arg(long, value_parser = kicklab_model::typed::latency_ns, allow_hyphen_values = true)]
    latency: Option<f64>,
    /// Messages measured (after a warm-up of a tenth as many).
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 200_000, allow_hyphen_values = true)]
    messages: u64,
    /// Seed for random W_P / W_C.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 1, allow_hyphen_values = true)]
    seed: u64,
    /// Send combining: the producer publishes (and kicks at most once) every
    /// N messages (1 to L), or sooner when the ring fills or by --flush.
    /// With kvm tx the guest combines, with rx the host.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u32>, default_value_t = 1, allow_hyphen_values = true)]
    batch: u32,
    /// When a partial batch goes out as well: full (only when full, or when
    /// the producer must wait), timer:<T> (once the first held message is T
    /// old, checked after each write; the guest times it on its TSC) or
    /// on-interrupt (also when the consumer's kick wakes the producer).
    #[arg(long, default_value = "full", value_parser = <kicklab_sim::Flush as std::str::FromStr>::from_str, allow_hyphen_values = true)]
    flush: kicklab_sim::Flush,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

impl RunArgs {
    /// The flags given that this run would not use, each with the reason.
    pub fn unused(&self, given: &dyn Fn(Flag) -> bool) -> Vec<Unused> {
        kicklab_lab::unused::WaitFlags {
            both: self.strategy,
            p: self.strategy_p,
            c: self.strategy_c,
            batch: self.batch,
        }
        .unused(given)
    }
}

pub fn run(a: &RunArgs) -> anyhow::Result<()> {
    a.be.input().check()?;
    let params = a.params.input().params()?;
    let (mode_p, mode_c) = (
        a.strategy_p.unwrap_or(a.strategy),
        a.strategy_c.unwrap_or(a.strategy),
    );
    let mut spec = RunSpec {
        batch: a.batch,
        flush: a.flush,
        mode_p,
        mode_c,
        // Explicit, so that the JSON names the bound adaptive kept.
        latency_bound_ns: Some(a.latency.unwrap_or(kicklab_model::DEFAULT_LATENCY_NS)),
        latency: true,
        ..RunSpec::new(params, a.be.input().get(), a.strategy, a.messages, a.seed)
    };
    kicklab_lab::real::check(&spec)?;
    let profile = profile_for(
        a.be.input().get(),
        a.params.input().load_profile()?,
        &kicklab_term::progress::Bars::default(),
    )?;
    // A planning strategy (adaptive) estimates with this machine's costs.
    spec.params = a.params.input().params_from(Some(&profile))?;
    let r = kicklab_lab::real::run(&spec)?;
    // The prediction: the model (or, where it has no closed form, the
    // simulator) with this machine's N and S.
    let expected = expected(&spec, &profile)?;
    let warnings = kicklab_lab::disturbance::check_modes(&r, &params, [mode_p, mode_c], &profile)?;
    crate::show::print_warnings("", &warnings);
    if let Some(w) = crate::show::latency_bound_missed(spec.modes(), r.rates.latency_ns.as_ref()) {
        errln!("warning: {w}");
    }
    if a.json {
        let given = (a.strategy, a.strategy_p, a.strategy_c);
        let v = kicklab_lab::run_output::json(&spec, &r, &profile, &expected, &warnings, given)?;
        return crate::show::print_json(&v);
    }
    for line in kicklab_lab::run_output::lines(&spec, &r, &profile, &expected) {
        outln!("{line}");
    }
    Ok(())
}
