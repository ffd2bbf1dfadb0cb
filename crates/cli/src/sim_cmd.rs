//! `kicklab sim`: one simulation run (or `--bench`: simulator speed).

use clap::Args;
use kicklab_lab::sim_command::SimRequest;
use kicklab_lab::unused::Unused;
use kicklab_model::{Flag, WaitMode};
use kicklab_sim::Start;

use crate::args::ParamArgs;

/// Arguments of `kicklab sim`.
#[derive(Debug, Args)]
pub struct SimArgs {
    #[command(flatten)]
    params: ParamArgs,
    /// How both parties wait: notify, poll, spin:<B> (spin, then block),
    /// sleep:<Y> (timed sleeps), halt-poll[:max=..,grow=..,start=..,shrink=..]
    /// (KVM's, also host-halt-poll), haltpoll[:...] (guest governor, also
    /// guest-haltpoll), hybrid[:mean|min] (block
    /// layer / io_uring), defer[:timeout=..,count=..] (NAPI),
    /// coalesce:<n>,<t> (held kicks), adaptive[:latency=<D>,check=on|off] (kicklab's
    /// controller). See docs/control.md.
    #[arg(long, visible_alias = "mode", default_value = "notify", value_parser = WaitMode::parse, allow_hyphen_values = true)]
    strategy: WaitMode,
    /// How P waits (overrides --strategy for the producer).
    #[arg(long, visible_alias = "mode-p", value_name = "STRATEGY", value_parser = WaitMode::parse, allow_hyphen_values = true)]
    strategy_p: Option<WaitMode>,
    /// How C waits (overrides --strategy for the consumer).
    #[arg(long, visible_alias = "mode-c", value_name = "STRATEGY", value_parser = WaitMode::parse, allow_hyphen_values = true)]
    strategy_c: Option<WaitMode>,
    /// Bound on the p99 message latency that `adaptive` keeps (unless its
    /// mode gives one) [default: 100us].
    #[arg(long, value_parser = kicklab_model::typed::latency_ns, allow_hyphen_values = true)]
    latency: Option<f64>,
    /// Send combining: P publishes (and kicks at most once) every N written
    /// messages (and always before it waits); latency counts from the write.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u32>, default_value_t = 1, allow_hyphen_values = true)]
    batch: u32,
    /// When a partial batch goes out as well: full (only when full, or when
    /// P must wait), timer:<T> (once the first held message is T old,
    /// checked as P writes) or on-interrupt (also when C's kick reaches P).
    #[arg(long, default_value = "full", value_parser = <kicklab_sim::Flush as std::str::FromStr>::from_str, allow_hyphen_values = true)]
    flush: kicklab_sim::Flush,
    /// Messages to consume after the warm-up. T and E are taken over the
    /// whole rounds (else the publishes) inside that stretch, so the
    /// `measured` line can count a few more or fewer (docs/cli.md, `window`).
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 1_000_000, allow_hyphen_values = true)]
    messages: u64,
    /// Messages consumed before measuring [default: messages/10 + 4 L].
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, allow_hyphen_values = true)]
    warmup: Option<u64>,
    /// Seed of the random cost streams (one stream per cost).
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 1, allow_hyphen_values = true)]
    seed: u64,
    /// Do not record per-message latency (faster).
    #[arg(long)]
    no_latency: bool,
    /// The state at t = 0: empty (the model's start) or full (a full queue,
    /// P asleep). With kick visibility (V < N) some pairs have two
    /// operating points and the start picks one.
    #[arg(long, default_value = "empty", value_parser = ["empty", "full"])]
    start: String,
    /// Print one JSON object: {"T_ns", "E_ns", "messages", "notifications_p", ...}.
    #[arg(long)]
    json: bool,
    /// Measure the simulator's own speed (simulated messages per second,
    /// sweep speed-up on all cores) instead of running the pair once.
    #[arg(long)]
    bench: bool,
}

impl SimArgs {
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

pub fn run(a: &SimArgs) -> anyhow::Result<()> {
    if a.bench {
        return crate::bench::run(a.json);
    }
    let cfg = SimRequest {
        pair: a.params.input(),
        strategy: a.strategy,
        strategy_p: a.strategy_p,
        strategy_c: a.strategy_c,
        latency_ns: a.latency,
        combine: kicklab_sim::Combine {
            batch: a.batch,
            flush: a.flush,
        },
        messages: a.messages,
        warmup: a.warmup,
        seed: a.seed,
        latency: !a.no_latency,
        start: if a.start == "full" {
            Start::Full
        } else {
            Start::Empty
        },
    }
    .config()?;
    let out = kicklab_lab::sim_command::run(&cfg)?;
    for w in &out.warnings {
        errln!("warning: {w}");
    }
    if let Some(w) = kicklab_lab::disturbance::latency_bound_missed(
        [cfg.mode_p, cfg.mode_c],
        out.result.rates.latency_ns.as_ref(),
        kicklab_term::cmdline::latency_written_bare(),
    ) {
        errln!("warning: {w}");
    }
    kicklab_term::show::result(a.json, &out.json, &out.text)
}
/// A flag beside `sim --bench` other than `--json`: the benchmark runs
/// its own pairs and sizes, so the flag would be ignored without a word.
pub fn bench_flag(matches: &clap::ArgMatches) -> Option<String> {
    let sub = matches.subcommand_matches("sim")?;
    let flag = sub
        .get_flag("bench")
        .then(|| kicklab_term::cmdline::given_besides(sub, &[Flag::Bench, Flag::Json]))??;
    Some(format!(
        "{flag}: sim {} measures the simulator on its own pairs and sizes; \
         leave {flag} out (only {} goes with {0})",
        Flag::Bench,
        Flag::Json
    ))
}
