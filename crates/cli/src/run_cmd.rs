//! `kicklab run`: parses, calls `kicklab_lab::real`, prints.

use clap::Args;
use kicklab_lab::run_command::RunRequest;
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
    /// Draw the window's first kicks and sleeps of both parties, as
    /// measured, to this SVG file (with kvm: the guest's own kicks and
    /// halts, not the pauses its VMM takes for it).
    #[arg(long, value_name = "FILE.svg", allow_hyphen_values = true)]
    timeline: Option<std::path::PathBuf>,
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
    let request = RunRequest {
        pair: a.params.input(),
        backend: a.be.input(),
        strategy: a.strategy,
        strategy_p: a.strategy_p,
        strategy_c: a.strategy_c,
        latency_ns: a.latency,
        messages: a.messages,
        seed: a.seed,
        batch: a.batch,
        flush: a.flush,
        timeline: a.timeline.is_some(),
    };
    request.check()?;
    if let Some(path) = &a.timeline {
        kicklab_term::files::check_out_file(path, kicklab_model::Flag::Timeline)?;
    }
    let out = request.run(&kicklab_term::progress::Bars::default())?;
    kicklab_term::show::print_warnings("", &out.warnings);
    let latency = out.result.rates.latency_ns.as_ref();
    if let Some(w) = kicklab_lab::disturbance::latency_bound_missed(
        out.spec.modes(),
        latency,
        kicklab_term::cmdline::latency_written_bare(),
    ) {
        errln!("warning: {w}");
    }
    if let Some(path) = &a.timeline {
        let svg = out.timeline_svg.as_deref();
        kicklab_term::show::save_timeline(path, svg, "the run's window holds")?;
    }
    kicklab_term::show::result(a.json, &out.json, &out.text)
}
