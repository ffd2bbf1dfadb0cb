//! `kicklab sim`: one simulation run (or `--bench`: simulator speed).

use clap::Args;
use kicklab_model::{fmt_ns, predict, WaitMode};
use kicklab_sim::{default_warmup, simulate, SimConfig, SimResult, Start, Window};
use serde_json::json;

use crate::args::{mode, ParamArgs};

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
    #[arg(long = "strategy", visible_alias = "mode", value_name = "STRATEGY", default_value = "notify", value_parser = mode, allow_hyphen_values = true)]
    mode: WaitMode,
    /// How P waits (overrides --strategy for the producer).
    #[arg(long = "strategy-p", visible_alias = "mode-p", value_name = "STRATEGY", value_parser = mode, allow_hyphen_values = true)]
    mode_p: Option<WaitMode>,
    /// How C waits (overrides --strategy for the consumer).
    #[arg(long = "strategy-c", visible_alias = "mode-c", value_name = "STRATEGY", value_parser = mode, allow_hyphen_values = true)]
    mode_c: Option<WaitMode>,
    /// Bound on the p99 message latency that `adaptive` keeps (unless its
    /// mode gives one) [default: 100us].
    #[arg(long, value_parser = crate::args::latency_ns, allow_hyphen_values = true)]
    latency: Option<f64>,
    /// Send combining: P publishes (and kicks at most once) every N written
    /// messages (and always before it waits); latency counts from the write.
    #[arg(long, value_parser = crate::args::whole::<u32>, default_value_t = 1, allow_hyphen_values = true)]
    batch: u32,
    /// When a partial batch goes out as well: full (only when full, or when
    /// P must wait), timer:<T> (once the first held message is T old,
    /// checked as P writes) or on-interrupt (also when C's kick reaches P).
    #[arg(long, default_value = "full", value_parser = crate::args::flush, allow_hyphen_values = true)]
    flush: kicklab_sim::Flush,
    /// Messages to consume after the warm-up. T and E are taken over the
    /// whole rounds (else the publishes) inside that stretch, so the
    /// `measured` line can count a few more or fewer (docs/cli.md, `window`).
    #[arg(long, value_parser = crate::args::whole::<u64>, default_value_t = 1_000_000, allow_hyphen_values = true)]
    messages: u64,
    /// Messages consumed before measuring [default: messages/10 + 4 L].
    #[arg(long, value_parser = crate::args::whole::<u64>, allow_hyphen_values = true)]
    warmup: Option<u64>,
    /// Seed of the random cost streams (one stream per cost).
    #[arg(long, value_parser = crate::args::whole::<u64>, default_value_t = 1, allow_hyphen_values = true)]
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
    /// The flags given (`given(id)`) that this run would not use, each
    /// with the reason ([`crate::args::WaitFlags::unused`]).
    pub fn unused(&self, given: &dyn Fn(&str) -> bool) -> Vec<String> {
        crate::args::WaitFlags {
            id: "mode",
            both: self.mode,
            p: self.mode_p,
            c: self.mode_c,
            batch: self.batch,
        }
        .unused(given)
    }
}

pub fn run(a: &SimArgs) -> anyhow::Result<()> {
    if a.bench {
        return crate::bench::run(a.json);
    }
    // Explicit, so that the JSON names the bound adaptive keeps (as `run`).
    let latency = a.latency.unwrap_or(kicklab_model::DEFAULT_LATENCY_NS);
    let bound = |m: WaitMode| m.with_latency(Some(latency));
    let (mode_p, mode_c) = (
        bound(a.mode_p.unwrap_or(a.mode)),
        bound(a.mode_c.unwrap_or(a.mode)),
    );
    // With a profile, the simulator gets the measured spread of N and S.
    let notify = mode_p == WaitMode::Notify && mode_c == WaitMode::Notify;
    let params = a.params.params_for(true, notify)?;
    // With a profile, each start-up scales with the sleeper's idle time on
    // the profile's idle curve, and each nap wakes as the profile's did.
    let (idle_scale, nap_ns) = a
        .params
        .load_profile()?
        .map_or(([None, None], [None, None]), |p| p.sim_costs());
    let cfg = SimConfig {
        params,
        mode_p,
        mode_c,
        messages: a.messages,
        warmup: a
            .warmup
            .unwrap_or_else(|| default_warmup(a.messages, params.len)),
        seed: a.seed,
        latency: !a.no_latency,
        start: if a.start == "full" {
            Start::Full
        } else {
            Start::Empty
        },
        combine: kicklab_sim::Combine {
            batch: a.batch,
            flush: a.flush,
        },
        idle_scale,
        nap_ns,
    };
    // A run too long because of its warm-up names --warmup, not --messages.
    let r = simulate(&cfg).map_err(|e| match (e, a.warmup) {
        (
            kicklab_sim::SimError::TooManyMessages(_) | kicklab_sim::SimError::TimeOverflow,
            Some(w),
        ) if w > a.messages => anyhow::Error::new(crate::errors::Usage(format!(
            "--warmup: {w} messages of warm-up with --messages {} pass what one run may \
             simulate ({} messages in all, or the simulator's clock); warm up with fewer",
            a.messages,
            kicklab_sim::MAX_MESSAGES
        ))),
        (e, _) => e.into(),
    })?;
    // The closed form, where one exists for these modes.
    // (Send combining has its closed form in docs/model.md for the fast
    // consumer only; none is printed.)
    let predicted = (mode_p == mode_c && !cfg.combine.is_on())
        .then(|| predict(&params, mode_p).ok())
        .flatten();
    for w in r.window_warnings(&params, predicted.and_then(|p| p.round_messages)) {
        errln!("warning: {w}");
    }
    if let Some(w) =
        crate::show::latency_bound_missed([mode_p, mode_c], r.rates.latency_ns.as_ref())
    {
        errln!("warning: {w}");
    }
    if a.json {
        let mut v = result_json(&r);
        v["mode_p"] = json!(mode_p.to_string());
        v["mode_c"] = json!(mode_c.to_string());
        v["seed"] = json!(a.seed);
        v["start"] = json!(a.start);
        // The model's point for this start: from a full queue, a bistable
        // pair's other operating point.
        v["predicted"] = match predicted {
            Some(p) if cfg.start == Start::Full && p.other.is_some() => {
                serde_json::to_value(p.other).unwrap_or_default()
            }
            Some(p) => kicklab_lab::rates_text::prediction_json(&p),
            None => serde_json::Value::Null,
        };
        return crate::show::print_json(&v);
    }
    let point = predicted.map(|p| match p.other {
        Some(o) if cfg.start == Start::Full => (o.regime, o.t_ns, o.e_ns),
        _ => (p.regime, p.rates.t_ns, p.rates.e_ns),
    });
    print_result(&r, point, mode_p, mode_c);
    if cfg.combine.is_on() {
        outln!(
            "combining      batch {}, flush {} (latency from the write)",
            a.batch,
            a.flush
        );
    }
    Ok(())
}

/// The result as the JSON object of the contract: the serialized
/// [`SimResult`] (its rates flattened, the window, events, simulated time,
/// raw totals).
pub fn result_json(r: &SimResult) -> serde_json::Value {
    serde_json::to_value(r).unwrap_or_default()
}

fn print_result(
    r: &SimResult,
    predicted: Option<(kicklab_model::Regime, f64, f64)>,
    mode_p: WaitMode,
    mode_c: WaitMode,
) {
    outln!("modes          P {mode_p}, C {mode_c}");
    for line in (kicklab_lab::rates_text::RateLines {
        t_ns: r.rates.t_ns,
        e_ns: [r.rates.e_p_ns, r.rates.e_c_ns],
        notifications: [r.rates.notifications_p, r.rates.notifications_c],
        sleeps: [r.rates.sleeps_p, r.rates.sleeps_c],
        messages: r.rates.messages,
    })
    .lines()
    {
        outln!("{line}");
    }
    if let Some(l) = r.rates.latency_ns {
        outln!(
            "latency        p50 {}  p99 {}  max {}  mean {}",
            fmt_ns(l.p50),
            fmt_ns(l.p99),
            fmt_ns(l.max),
            fmt_ns(l.mean)
        );
    }
    let window = match r.window {
        Window::RoundsPc => "whole rounds between P->C notifications",
        Window::RoundsCp => "whole rounds between C->P notifications",
        Window::Messages => "messages (no notification rounds)",
        Window::Consumed => "messages consumed after the warm-up",
    };
    let n = r.rates.messages;
    let noun = if n == 1 { "message" } else { "messages" };
    outln!("measured       {n} {noun} over {window}");
    if let Some((regime, t_ns, e_ns)) = predicted {
        outln!(
            "model          {regime}: T {} (sim/model {:.6}), E {} (sim/model {:.6})",
            fmt_ns(t_ns),
            r.rates.t_ns / t_ns,
            fmt_ns(e_ns),
            r.rates.e_ns / e_ns
        );
    }
}
