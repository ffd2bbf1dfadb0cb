//! A control study as its command shows it: the page (a chart of excess
//! CPU and one of T per workload) and the text table with the targets'
//! verdict and the simulator's picks. What does not live here: the study
//! (`super`), its charts and CSV (`super::charts`, `super::csv`).

use kicklab_model::fmt_ns_short;
use kicklab_report::{Page, Section};

use super::{charts, ControlSpec, ControlStudy};
use crate::LabError;

/// The study's page: both charts of every workload of `spec`.
///
/// # Errors
///
/// A chart that could not be drawn.
pub fn page(study: &ControlStudy, spec: &ControlSpec) -> Result<Page, LabError> {
    let mut figures = Vec::new();
    for w in &spec.workloads {
        let (excess, t) = charts(study, *w);
        figures.push((
            format!("excess-{}", w.name()),
            excess.to_svg(kicklab_report::FIG_W, kicklab_report::FIG_H)?,
            format!("Excess CPU per message, {} workload", w.name()),
        ));
        figures.push((
            format!("T-{}", w.name()),
            t.to_svg(kicklab_report::FIG_W, kicklab_report::FIG_H)?,
            format!("Time per message, {} workload", w.name()),
        ));
    }
    let page = Page {
        title: "kicklab control".into(),
        intro_html: format!(
            "<p>Every strategy against polling, {} ({} messages per run, seed {}, latency bound {}). Data: <a href=\"control.csv\">control.csv</a>.</p>",
            if study.backend == "sim" {
                "simulated".to_string()
            } else {
                format!("measured on {}", study.backend)
            },
            spec.messages,
            spec.seed,
            fmt_ns_short(spec.latency_ns)
        ),
        sections: vec![Section {
            id: "control".into(),
            heading: "Strategies".into(),
            html: String::new(),
            figures,
            layout: kicklab_report::Layout::Open,
        }],
    };
    Ok(page)
}

/// The study as text, line by line: one row per point, the verdict, the
/// simulator's picks that missed.
pub fn lines(study: &ControlStudy) -> Vec<String> {
    let mut lines = Vec::new();
    lines.push(format!(
        "{:<7} {:>8} {:>9} {:>9} {:>8} {:>8} {:>9}  {:<24} {:<12} verdict",
        "work",
        "W_P",
        "T poll",
        "excess",
        "T ratio",
        "excess",
        "p99",
        "best anchor (E)",
        "best sleep"
    ));
    for p in &study.points {
        let poll = p.run("poll").expect("poll ran");
        let adaptive = p
            .runs
            .iter()
            .find(|r| r.strategy.starts_with("adaptive"))
            .expect("adaptive ran");
        let anchor = p
            .best_anchor
            .as_ref()
            .and_then(|s| p.run(s))
            .map_or("-".into(), |r| {
                format!(
                    "{} ({})",
                    r.strategy.split(':').next().unwrap_or(""),
                    fmt_ns_short(r.e_ns)
                )
            });
        lines.push(format!(
            "{:<7} {:>8} {:>9} {:>9} {:>8.3} {:>8} {:>9}  {:<24} {:<12} {}",
            p.workload.name(),
            fmt_ns_short(p.w_p_ns),
            fmt_ns_short(poll.t_ns),
            fmt_ns_short(poll.excess_ns),
            p.t_ratio,
            p.excess_ratio.map_or("-".into(), |x| format!("{x:.3}")),
            fmt_ns_short(adaptive.latency_ns[1]),
            anchor,
            p.best_sleep.clone().unwrap_or_else(|| "-".into()),
            if p.failures.is_empty() {
                "ok".to_string()
            } else {
                p.failures.join("; ")
            }
        ));
    }
    lines.push(format!(
        "{}: adaptive against polling, notify, the anchors and the best fixed sleep at every point (docs/control.md, \"The targets\"; T ratio: adaptive/poll; excess: (E - W_P - W_C), adaptive/poll where poll's is >= 0.2us)",
        if study.passed() { "all targets hold" } else { "some targets missed" }
    ));
    for p in &study.points {
        for r in p.runs.iter().filter(|r| r.disturbed.is_some()) {
            lines.push(format!(
                "disturbed in every try: {} at {} W_P {} ({}); it is never the measured cheapest",
                r.strategy,
                p.workload.name(),
                fmt_ns_short(p.w_p_ns),
                r.disturbed.as_deref().unwrap_or("")
            ));
        }
    }
    // Where adaptive missed a target, what its self-check did there.
    for p in study.points.iter().filter(|p| !p.failures.is_empty()) {
        let checked = p
            .runs
            .iter()
            .filter(|r| r.strategy.starts_with("adaptive"))
            .find_map(|r| crate::self_check_text::parties(r.self_check_p, r.self_check_c));
        if let Some(checked) = checked {
            lines.push(format!(
                "adaptive's self-check at {} W_P {}: {checked}",
                p.workload.name(),
                fmt_ns_short(p.w_p_ns)
            ));
        }
    }
    picks(study, &mut lines);
    lines
}

/// A real study: where the simulator, from the profile, picks another
/// strategy than the machine showed cheapest within the bounds, one line
/// each, and how many held.
fn picks(study: &ControlStudy, lines: &mut Vec<String>) {
    let picks: Vec<_> = study
        .points
        .iter()
        .filter_map(|p| p.pick.as_ref().map(|k| (p, k)))
        .collect();
    if picks.is_empty() {
        return;
    }
    for (p, k) in picks.iter().filter(|(_, k)| !k.holds) {
        lines.push(format!(
            "at W_P {} the simulator, from the profile, picks {}; measured, the cheapest within the bounds is {} ({}) and {} {}",
            fmt_ns_short(p.w_p_ns),
            k.simulated,
            k.measured,
            fmt_ns_short(k.measured_e_ns),
            k.simulated,
            match (k.simulated_kept_bounds, k.simulated_measured_e_ns) {
                (false, _) | (_, None) => "left the bounds".to_string(),
                (true, Some(e)) => format!("cost {}", fmt_ns_short(e)),
            }
        ));
    }
    lines.push(format!(
        "the simulator's pick from the profile held at {} of {} points (measured within the bounds and within {:.0}% of the cheapest's E; docs/control.md, \"Recorded studies\")",
        picks.iter().filter(|(_, k)| k.holds).count(),
        picks.len(),
        super::targets::E_SPREAD * 100.0
    ));
}
