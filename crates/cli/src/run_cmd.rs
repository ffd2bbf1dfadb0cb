//! `kicklab run`: parses, calls `kicklab_lab::real`, prints.

use clap::Args;
use kicklab_lab::real::{expected, profile_for, Expected, RunSpec};
use kicklab_model::{fmt_ns, WaitMode};
use serde_json::json;

use crate::args::{mode, BackendArgs, ParamArgs};

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
    #[arg(long, visible_alias = "mode", default_value = "notify", value_parser = mode, allow_hyphen_values = true)]
    strategy: WaitMode,
    /// How P waits (overrides --strategy for the producer).
    #[arg(long, visible_alias = "mode-p", value_parser = mode, allow_hyphen_values = true)]
    strategy_p: Option<WaitMode>,
    /// How C waits (overrides --strategy for the consumer).
    #[arg(long, visible_alias = "mode-c", value_parser = mode, allow_hyphen_values = true)]
    strategy_c: Option<WaitMode>,
    /// Bound on the p99 message latency that `adaptive` keeps (unless its
    /// strategy gives one) [default: 100us].
    #[arg(long, value_parser = crate::args::latency_ns, allow_hyphen_values = true)]
    latency: Option<f64>,
    /// Messages measured (after a warm-up of a tenth as many).
    #[arg(long, value_parser = crate::args::whole::<u64>, default_value_t = 200_000, allow_hyphen_values = true)]
    messages: u64,
    /// Seed for random W_P / W_C.
    #[arg(long, value_parser = crate::args::whole::<u64>, default_value_t = 1, allow_hyphen_values = true)]
    seed: u64,
    /// Send combining: the producer publishes (and kicks at most once) every
    /// N messages (1 to L), or sooner when the ring fills or by --flush.
    /// With kvm tx the guest combines, with rx the host.
    #[arg(long, value_parser = crate::args::whole::<u32>, default_value_t = 1, allow_hyphen_values = true)]
    batch: u32,
    /// When a partial batch goes out as well: full (only when full, or when
    /// the producer must wait), timer:<T> (once the first held message is T
    /// old, checked after each write; the guest times it on its TSC) or
    /// on-interrupt (also when the consumer's kick wakes the producer).
    #[arg(long, default_value = "full", value_parser = crate::args::flush, allow_hyphen_values = true)]
    flush: kicklab_sim::Flush,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

impl RunArgs {
    /// The flags given (`given(id)`) that this run would not use, each
    /// with the reason ([`crate::args::WaitFlags::unused`]).
    pub fn unused(&self, given: &dyn Fn(&str) -> bool) -> Vec<String> {
        crate::args::WaitFlags {
            id: "strategy",
            both: self.strategy,
            p: self.strategy_p,
            c: self.strategy_c,
            batch: self.batch,
        }
        .unused(given)
    }
}

pub fn run(a: &RunArgs) -> anyhow::Result<()> {
    a.be.check()?;
    let params = a.params.params()?;
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
        ..RunSpec::new(params, a.be.get(), a.strategy, a.messages, a.seed)
    };
    kicklab_lab::real::check(&spec)?;
    let profile = profile_for(
        a.be.get(),
        a.params.load_profile()?,
        &crate::show::Bars::default(),
    )?;
    // A planning strategy (adaptive) estimates with this machine's costs.
    spec.params = a.params.params_from(&profile)?;
    let r = kicklab_lab::real::run(&spec)?;
    // The prediction: the model (or, where it has no closed form, the
    // simulator) with this machine's N and S.
    let expected = expected(&spec, &profile)?;
    let warnings = kicklab_lab::disturbance::check_modes(&r, &params, [mode_p, mode_c], &profile)?;
    crate::show::print_warnings("", &warnings);
    let [shown_p, shown_c] = spec.modes();
    if let Some(w) = crate::show::latency_bound_missed(spec.modes(), r.rates.latency_ns.as_ref()) {
        errln!("warning: {w}");
    }
    if a.json {
        let mut v = serde_json::to_value(r)?;
        v["warnings"] = serde_json::to_value(&warnings)?;
        v["disturbed"] = json!(!warnings.is_empty());
        v["backend"] = json!(a.be.get().name());
        v["strategy"] = json!(kicklab_lab::real::strategy_both_ran(
            a.strategy,
            a.strategy_p,
            a.strategy_c,
            spec.latency_bound_ns,
        )
        .map(|s| s.to_string()));
        v["strategy_p"] = json!(shown_p.to_string());
        v["strategy_c"] = json!(shown_c.to_string());
        v["batch"] = json!(a.batch);
        v["flush"] = json!(a.flush.to_string());
        v["predicted"] = match &expected {
            Expected::Model(p) => {
                let mut m = crate::model_cmd::prediction_json(p);
                m["source"] = json!("model");
                m
            }
            Expected::Sim(rates) => {
                let mut m = serde_json::to_value(rates)?;
                m["source"] = json!("sim");
                m["throughput_per_s"] = json!(rates.per_second());
                m
            }
        };
        v["profile"] = kicklab_lab::real::profile_json(&profile);
        return crate::show::print_json(&v);
    }
    let strategy = if shown_p == shown_c {
        shown_p.to_string()
    } else {
        format!("P {shown_p}, C {shown_c}")
    };
    let cpu = |c: Option<usize>| c.map_or("unpinned".to_string(), |c| format!("CPU {c}"));
    let pinned = if r.pinned {
        format!(
            "pinned to their own CPU (P {}, C {})",
            cpu(r.cpu_p),
            cpu(r.cpu_c)
        )
    } else if r.concurrent_runs > 0 {
        format!(
            "sharing the CPUs with {} other run(s) (P {}, C {})",
            r.concurrent_runs,
            cpu(r.cpu_p),
            cpu(r.cpu_c)
        )
    } else {
        format!(
            "NOT on CPUs of their own (P {}, C {})",
            cpu(r.cpu_p),
            cpu(r.cpu_c)
        )
    };
    match a.be.get() {
        kicklab_testbed::Backend::Kvm(o) => {
            outln!(
            "backend        kvm ({}), direction {}: {} in the guest, {} in a host thread, {pinned}",
            strategy,
            o.direction.name(),
            if o.direction == kicklab_testbed::kvm::Direction::Tx { "P" } else { "C" },
            if o.direction == kicklab_testbed::kvm::Direction::Tx { "C" } else { "P" },
        )
        }
        be => outln!(
            "backend        {} ({}), both threads {pinned}",
            be.name(),
            strategy
        ),
    }
    crate::show::RateLines {
        t_ns: r.rates.t_ns,
        e_ns: [r.rates.e_p_ns, r.rates.e_c_ns],
        notifications: [r.rates.notifications_p, r.rates.notifications_c],
        sleeps: [r.rates.sleeps_p, r.rates.sleeps_c],
        messages: r.rates.messages,
    }
    .print();
    if r.naps_p + r.naps_c > 0 {
        outln!(
            "of the sleeps  timed (never kicked): P {}, C {}",
            r.naps_p,
            r.naps_c
        );
    }
    if spec.combine().is_on() {
        #[allow(clippy::cast_precision_loss)]
        let per = r.rates.notifications_p as f64 / r.rates.messages.max(1) as f64;
        outln!(
            "combining      batch {}, flush {}: {per:.4} kicks per message by P (1/{:.1})",
            a.batch,
            a.flush,
            if per > 0.0 { 1.0 / per } else { f64::INFINITY }
        );
    }
    match r.rates.latency_ns {
        Some(l) => outln!(
            "latency        p50 {}  p99 {}  max {}  (write to release)",
            fmt_ns(l.p50),
            fmt_ns(l.p99),
            fmt_ns(l.max)
        ),
        None => outln!("latency        not measured (the emulated guest keeps no stamps)"),
    }
    outln!(
        "checked        {} messages: {} lost, {} duplicated or reordered",
        r.rates.messages,
        r.lost,
        r.duplicated_or_reordered
    );
    if let Some(d) = r.clock_drift_ns {
        outln!(
            "clocks         the guest's clock moved {} against the host's during the run (its kick, wake-up and latency timings across the boundary are off by up to that)",
            fmt_ns(d)
        );
    }
    outln!(
        "calibrated     N_P {}, N_C {}, S_P {}, S_C {}",
        fmt_ns(profile.np.mean_ns),
        fmt_ns(profile.nc.mean_ns),
        fmt_ns(profile.sp.mean_ns),
        fmt_ns(profile.sc.mean_ns)
    );
    match expected {
        Expected::Model(p) => outln!(
            "model          {}: T {} (measured/model {:.3}), E {} (measured/model {:.3})",
            p.regime,
            fmt_ns(p.rates.t_ns),
            r.rates.t_ns / p.rates.t_ns,
            fmt_ns(p.rates.e_ns),
            r.rates.e_ns / p.rates.e_ns
        ),
        Expected::Sim(s) => outln!(
            "simulated      T {} (measured/sim {:.3}), E {} (measured/sim {:.3}){}",
            fmt_ns(s.t_ns),
            r.rates.t_ns / s.t_ns,
            fmt_ns(s.e_ns),
            r.rates.e_ns / s.e_ns,
            s.latency_ns
                .map(|l| format!(", p99 latency {}", fmt_ns(l.p99)))
                .unwrap_or_default()
        ),
    }
    Ok(())
}
