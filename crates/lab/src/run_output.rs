//! A real run as `kicklab run` shows it: its JSON object (the run, its
//! warnings, what both parties ran, the prediction and the profile) and
//! its text. What does not live here: the run and its prediction
//! ([`crate::real`]), the disturbance checks ([`crate::disturbance`]).

use kicklab_model::{fmt_ns, Profile, WaitMode};
use kicklab_testbed::PairResult;
use serde_json::json;

use crate::disturbance::Warning;
use crate::real::{Expected, RunSpec};
use crate::LabError;

/// The strategies as given: for both parties, for P alone, for C alone.
pub type Given = (WaitMode, Option<WaitMode>, Option<WaitMode>);

/// The run's JSON object.
///
/// # Errors
///
/// A result that could not be put in JSON.
pub fn json(
    spec: &RunSpec,
    r: &PairResult,
    profile: &Profile,
    expected: &Expected,
    warnings: &[Warning],
    given: Given,
) -> Result<serde_json::Value, LabError> {
    let [shown_p, shown_c] = spec.modes();
    let mut v = serde_json::to_value(r)?;
    v["warnings"] = serde_json::to_value(warnings)?;
    v["disturbed"] = json!(!warnings.is_empty());
    v["backend"] = json!(spec.backend.name());
    let (both, p, c) = given;
    let ran = crate::real::strategy_both_ran(both, p, c, spec.latency_bound_ns);
    v["strategy"] = json!(ran.map(|s| s.to_string()));
    v["strategy_p"] = json!(shown_p.to_string());
    v["strategy_c"] = json!(shown_c.to_string());
    v["batch"] = json!(spec.batch);
    v["flush"] = json!(spec.flush.to_string());
    v["predicted"] = match expected {
        Expected::Model(p) => {
            let mut m = crate::rates_text::prediction_json(p);
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
    v["profile"] = crate::real::profile_json(profile);
    Ok(v)
}

/// The run as text, line by line.
#[allow(clippy::too_many_lines)]
pub fn lines(
    spec: &RunSpec,
    r: &PairResult,
    profile: &Profile,
    expected: &Expected,
) -> Vec<String> {
    let [shown_p, shown_c] = spec.modes();
    let mut lines = Vec::new();
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
    match spec.backend {
        kicklab_testbed::Backend::Kvm(o) => {
            lines.push(format!(
            "backend        kvm ({}), direction {}: {} in the guest, {} in a host thread, {pinned}",
            strategy,
            o.direction.name(),
            if o.direction == kicklab_testbed::kvm::Direction::Tx { "P" } else { "C" },
            if o.direction == kicklab_testbed::kvm::Direction::Tx { "C" } else { "P" },
        ))
        }
        be => lines.push(format!(
            "backend        {} ({}), both threads {pinned}",
            be.name(),
            strategy
        )),
    }
    lines.extend(crate::rates_text::RateLines::of(&r.rates).lines());
    if r.naps_p + r.naps_c > 0 {
        lines.push(format!(
            "of the sleeps  timed (never kicked): P {}, C {}",
            r.naps_p, r.naps_c
        ));
    }
    lines.extend(crate::self_check_text::line(r.self_check_p, r.self_check_c));
    if spec.combine().is_on() {
        #[allow(clippy::cast_precision_loss)]
        let per = r.rates.notifications_p as f64 / r.rates.messages.max(1) as f64;
        lines.push(format!(
            "combining      batch {}, flush {}: {per:.4} kicks per message by P (1/{:.1})",
            spec.batch,
            spec.flush,
            if per > 0.0 { 1.0 / per } else { f64::INFINITY }
        ));
    }
    match r.rates.latency_ns {
        Some(l) => lines.push(format!(
            "latency        p50 {}  p99 {}  max {}  (write to release)",
            fmt_ns(l.p50),
            fmt_ns(l.p99),
            fmt_ns(l.max)
        )),
        None => lines
            .push("latency        not measured (the emulated guest keeps no stamps)".to_string()),
    }
    lines.push(format!(
        "checked        {} messages: {} lost, {} duplicated or reordered",
        r.rates.messages, r.lost, r.duplicated_or_reordered
    ));
    if let Some(d) = r.clock_drift_ns {
        lines.push(format!(
            "clocks         the guest's clock moved {} against the host's during the run (its kick, wake-up and latency timings across the boundary are off by up to that)",
            fmt_ns(d)
        ));
    }
    lines.push(format!(
        "calibrated     N_P {}, N_C {}, S_P {}, S_C {}",
        fmt_ns(profile.np.mean_ns),
        fmt_ns(profile.nc.mean_ns),
        fmt_ns(profile.sp.mean_ns),
        fmt_ns(profile.sc.mean_ns)
    ));
    match expected {
        Expected::Model(p) => lines.push(format!(
            "model          {}: T {} (measured/model {:.3}), E {} (measured/model {:.3})",
            p.regime,
            fmt_ns(p.rates.t_ns),
            r.rates.t_ns / p.rates.t_ns,
            fmt_ns(p.rates.e_ns),
            r.rates.e_ns / p.rates.e_ns
        )),
        Expected::Sim(s) => lines.push(format!(
            "simulated      T {} (measured/sim {:.3}), E {} (measured/sim {:.3}){}",
            fmt_ns(s.t_ns),
            r.rates.t_ns / s.t_ns,
            fmt_ns(s.e_ns),
            r.rates.e_ns / s.e_ns,
            s.latency_ns
                .map(|l| format!(", p99 latency {}", fmt_ns(l.p99)))
                .unwrap_or_default()
        )),
    }
    lines
}
