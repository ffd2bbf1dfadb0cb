//! What `kicklab trace` prints of a [`TraceReport`], as lines: the pair,
//! its rates and costs, the regime beside the model's, where each cost
//! came from and what the trace lacked; then the advice, as `advise`
//! prints its knobs ([`crate::advise_text::knob`]).

use kicklab_model::fmt_ns_short as fmt_ns;

use crate::trace::TraceReport;

/// The report's lines, the advice last where there is one.
pub fn lines(r: &TraceReport) -> Vec<String> {
    let mut out = facts(r);
    if let Some(advice) = &r.advice {
        out.push(format!(
            "\nuse            {} {}",
            kicklab_model::Flag::Strategy,
            advice.strategy
        ));
        out.push(format!("why            {}", advice.reason));
        for k in &advice.knobs {
            out.extend(crate::advise_text::knob(k));
        }
    }
    if let Some(why) = &r.advice_skipped {
        out.push(format!("\n{why}"));
    }
    out
}

/// The report's lines without the advice.
fn facts(r: &TraceReport) -> Vec<String> {
    let ns = |v: Option<f64>| v.map_or_else(|| "not in the trace".to_string(), fmt_ns);
    let role = |g: &str| if r.guest == Some(g) { " (vCPU)" } else { "" };
    let [np, nc] = r.rates.notifications_per_message();
    let model = |k: &str| r.predicted.get(k).and_then(serde_json::Value::as_f64);
    let per_message = |k: &str| Some(model(k)? / model("messages")?.max(1.0));
    let mut out = vec![
        format!(
            "producer       {} {}{}",
            r.producer.tid,
            r.producer.comm,
            role("P")
        ),
        format!(
            "consumer       {} {}{}",
            r.consumer.tid,
            r.consumer.comm,
            role("C")
        ),
        format!(
            "window         {} over {} messages: T {}, E {} (P {}, C {})",
            fmt_ns(r.window_ns),
            r.rates.messages,
            fmt_ns(r.rates.t_ns),
            fmt_ns(r.rates.e_ns),
            fmt_ns(r.rates.e_p_ns),
            fmt_ns(r.rates.e_c_ns)
        ),
        format!(
            "notifications  P {np:.3}/message, C {nc:.3}/message; sleeps P {}, C {}",
            r.rates.sleeps_p, r.rates.sleeps_c
        ),
        format!(
            "kick           P {}, C {}",
            ns(r.kick_p_ns),
            ns(r.kick_c_ns)
        ),
        format!(
            "seen by peer   P {}, C {}",
            ns(r.visible_p_ns),
            ns(r.visible_c_ns)
        ),
        format!(
            "wake-up        P {}, C {}",
            ns(r.wake_p_ns),
            ns(r.wake_c_ns)
        ),
        format!(
            "regime         the trace: {} slept, T {}, P kicks {np:.3}/message",
            r.observed,
            fmt_ns(r.rates.t_ns)
        ),
        format!(
            "               the model: {} ({} sleeps), T {}, P kicks {}/message",
            r.regime,
            r.regime_sleeper,
            model("T_ns").map_or_else(String::new, fmt_ns),
            per_message("notifications_p").map_or_else(String::new, |n| format!("{n:.3}"))
        ),
        format!(
            "costs from     N_P {}, N_C {}, S_P {}, S_C {}, W {}",
            r.sources.np, r.sources.nc, r.sources.sp, r.sources.sc, r.sources.w
        ),
    ];
    for g in &r.missing {
        out.push(format!("missing        {}: needs {}", g.estimate, g.needs));
    }
    if r.truncated {
        out.push("note           the file ends in the middle of a line (cut short?)".into());
    }
    out
}
