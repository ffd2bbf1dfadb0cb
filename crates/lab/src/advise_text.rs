//! `advise`'s printed lines: the pick with its predicted figures, the
//! alternatives, the real runs' check beside their forecasts, and each
//! knob's setting (also under `kicklab trace`'s advice). What does not
//! live here: choosing ([`crate::advise`]), running the checks
//! ([`crate::advise_check`]), printing them (the binary).

use kicklab_model::{fmt_ns, Flag};

use crate::advise::{Advice, Candidate, Knob};
use crate::advise_check::SettingCheck;

/// The advice as text, with its real runs where they were checked.
#[must_use]
pub fn lines(advice: &Advice, checks: Option<&[SettingCheck]>) -> Vec<String> {
    let mut out = vec![
        format!("use            {} {}", Flag::Strategy, advice.strategy),
        format!(
            "predicted      T {}, E {}, p99 latency {}",
            fmt_ns(advice.predicted.t_ns),
            fmt_ns(advice.predicted.e_ns),
            fmt_ns(advice.predicted.latency_p99_ns)
        ),
        format!("why            {}", advice.reason),
        format!(
            "\n{:<48} {:>10} {:>10} {:>12}",
            "alternatives (best first)", "T", "E", "p99 latency"
        ),
    ];
    for c in &advice.alternatives {
        out.push(format!(
            "{:<48} {:>10} {:>10} {:>12}",
            c.strategy,
            fmt_ns(c.t_ns),
            fmt_ns(c.e_ns),
            fmt_ns(c.latency_p99_ns)
        ));
    }
    if let Some(checks) = checks {
        out.push(format!(
            "\n{:<56} {:>10} {:>10} {:>8} {:>10} {:>10} {:>8}",
            "run for real", "T pred", "T run", "error", "E pred", "E run", "error"
        ));
        for c in checks {
            let name = format!("{} ({})", c.strategy, c.from);
            out.push(
                match (c.measured_t_ns, c.measured_e_ns, c.t_error, c.e_error) {
                    (Some(t), Some(e), Some(te), Some(ee)) => format!(
                        "{name:<56} {:>10} {:>10} {:>+7.1}% {:>10} {:>10} {:>+7.1}%",
                        fmt_ns(c.predicted_t_ns),
                        fmt_ns(t),
                        te * 100.0,
                        fmt_ns(c.predicted_e_ns),
                        fmt_ns(e),
                        ee * 100.0
                    ),
                    _ => format!("{name:<56} not run: {}", c.not_run.as_deref().unwrap_or("")),
                },
            );
            if let Some(note) = &c.note {
                out.push(format!("  ({note})"));
            }
        }
    }
    out.extend(knobs(advice));
    out
}

/// The knobs' lines under their heading (none without knobs).
#[must_use]
pub fn knobs(advice: &Advice) -> Vec<String> {
    let mut out = Vec::new();
    if !advice.knobs.is_empty() {
        out.push(
            "\nin the knobs you have (simulated with both parties waiting by the mechanism's rule; \
             kicklab changes none of them):"
                .to_string(),
        );
        for k in &advice.knobs {
            out.extend(knob(k));
        }
    }
    out
}

/// One knob: its best setting (or the pick's), as shipped, the next best,
/// and the commands that set it.
#[must_use]
pub fn knob(k: &Knob) -> Vec<String> {
    let figures = |c: &Candidate| {
        format!(
            "T {}, E {}, p99 {}",
            fmt_ns(c.t_ns),
            fmt_ns(c.e_ns),
            fmt_ns(c.latency_p99_ns)
        )
    };
    let verdict = if k.implements_pick {
        "the pick"
    } else if k.best.strategy == k.default.strategy {
        "keep"
    } else {
        "its best"
    };
    let mut out = vec![
        format!("\n{} ({})", k.mechanism, k.what),
        format!("  {verdict:<12} {}", k.best.settings.line()),
        format!(
            "  {:<12} {}  ({} {})",
            "",
            figures(&k.best.predicted),
            Flag::Strategy,
            k.best.strategy
        ),
    ];
    if let Some(note) = &k.note {
        out.push(format!("  {:<12} {note}", ""));
    }
    if k.best.strategy != k.default.strategy {
        out.push(format!(
            "  {:<12} {}",
            "as shipped",
            k.default.settings.line()
        ));
        out.push(format!("  {:<12} {}", "", figures(&k.default.predicted)));
    }
    for alt in &k.alternatives {
        out.push(format!(
            "  {:<12} {}: {}",
            "next",
            alt.settings.line(),
            figures(&alt.predicted)
        ));
    }
    for c in &k.commands {
        out.push(format!("  $ {c}"));
    }
    out
}
