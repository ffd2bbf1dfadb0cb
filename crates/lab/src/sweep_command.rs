//! `kicklab sweep` as one library call: the pair, the swept parameter and
//! a wait strategy in; the model and the simulator at every point out, as
//! a page with its two charts, the CSV, a table and the points whose
//! window measured a transient. What does not live here: the sweep itself
//! (`kicklab_sim::sweep`), its charts and CSV (`kicklab_report`), parsing
//! and writing (the binary).

use kicklab_model::{fmt_ns, Params, WaitMode};
use kicklab_report::{sweep_charts, sweep_csv, Page, Section};
use kicklab_sim::{sweep, SweepPoint, Vary};

use crate::{Input, LabError, Progress};

/// What a sweep gives back.
#[derive(Debug)]
pub struct SweepOutput {
    /// The points, in order.
    pub points: Vec<SweepPoint>,
    /// The page (`index.html` and its two charts).
    pub page: Page,
    /// `sweep.csv`.
    pub csv: String,
    /// The table, line by line.
    pub text: Vec<String>,
    /// A line for standard error where some points' windows measured a
    /// transient or a partial round.
    pub warning: Option<String>,
}

/// Sweeps `vary` over `params` with `mode`, `messages` simulated per point
/// (a step of `progress` each).
///
/// # Errors
///
/// No message per point ([`Input::Messages`]); parameters the model or
/// the simulator refuse; a chart that cannot be drawn.
pub fn run(
    params: &Params,
    vary: &Vary,
    mode: WaitMode,
    messages: u64,
    seed: u64,
    progress: &dyn Progress,
) -> Result<SweepOutput, LabError> {
    if messages == 0 {
        return Err(LabError::input(
            Input::Messages,
            "need at least 1 message per point",
        ));
    }
    progress.start("sweep", u64::from(vary.points));
    let points = sweep(params, vary, mode, messages, seed, &|| progress.step());
    progress.finish();
    let points = points?;
    let (t, e) = sweep_charts(&points, vary, &format!("sweep {vary}"));
    let page = Page {
        title: format!("kicklab sweep {vary}"),
        intro_html: format!(
            "<p>Model and simulator ({messages} messages per point, seed {seed}), mode {mode}.</p>"
        ),
        sections: vec![Section {
            id: "sweep".into(),
            heading: vary.to_string(),
            html: "<p>Data: <a href=\"sweep.csv\">sweep.csv</a>.</p>".into(),
            figures: vec![
                (
                    "T".into(),
                    t.to_svg(kicklab_report::FIG_W, kicklab_report::FIG_H)?,
                    "Time per message".into(),
                ),
                (
                    "E".into(),
                    e.to_svg(kicklab_report::FIG_W, kicklab_report::FIG_H)?,
                    "CPU cost per message".into(),
                ),
            ],
            layout: kicklab_report::Layout::Open,
        }],
    };
    let count = vary.param.is_count();
    let show_x = |x: f64| if count { format!("{x}") } else { fmt_ns(x) };
    let mut text = vec![format!(
        "{:>10}  {:<8} {:>12} {:>12} {:>12} {:>12} {:>12}",
        vary.param.name(),
        "regime",
        "T model",
        "T sim",
        "E model",
        "E sim",
        "T poll"
    )];
    for p in &points {
        let x = show_x(p.x);
        let (r, tm, em) = p.model.map_or(("-".into(), "-".into(), "-".into()), |m| {
            (
                m.regime.name().to_string(),
                fmt_ns(m.rates.t_ns),
                fmt_ns(m.rates.e_ns),
            )
        });
        text.push(format!(
            "{x:>10}  {r:<8} {tm:>12} {:>12} {em:>12} {:>12} {:>12}",
            fmt_ns(p.sim.rates.t_ns),
            fmt_ns(p.sim.rates.e_ns),
            fmt_ns(p.model_poll.rates.t_ns)
        ));
    }
    // What `sim` warns of, once for the sweep: windows too short for
    // whole rounds, or a transient below the slower party.
    let warned: Vec<String> = points
        .iter()
        .filter_map(|p| {
            let w = p
                .sim
                .window_warnings(&p.params, p.model.and_then(|m| m.round_messages));
            (!w.is_empty()).then(|| show_x(p.x))
        })
        .collect();
    let warning = (!warned.is_empty()).then(|| {
        format!(
            "at {} of {} points ({}) the simulator measured a transient or a partial round, not the \
             steady state (as `kicklab sim` would warn there): simulate more messages per point",
            warned.len(),
            points.len(),
            warned.join(", ")
        )
    });
    let csv = sweep_csv(&points, vary);
    Ok(SweepOutput {
        points,
        page,
        csv,
        text,
        warning,
    })
}
