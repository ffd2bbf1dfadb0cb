//! The paper's Fig. 4 on this machine: W_C fixed, W_P swept; the model
//! (calibrated means and medians), the simulator (calibrated
//! distributions) and the measurement, with notifications and with
//! polling, as points, a summary of the errors, charts, tables and a
//! report section.

use kicklab_model::{fmt_ns, predict, Params, Regime, WaitMode};
use kicklab_report::{html_escape, Chart, Column, Section, Series, Style, Table};
use kicklab_sim::{simulate, SimConfig, Vary};
use kicklab_testbed::{PairResult, Profile};
use serde::Serialize;

use crate::real::RunSpec;
use crate::{Input, LabError, Progress};

/// The paper's Fig. 4 sweep: W_P from 0.2 to 3 us, 15 points (W_C 1.1 us
/// from the default parameters).
pub const FIG4_SWEEP: &str = "wp=0.2us..3us:15";

/// One point of the validation.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// The swept value [ns].
    pub x: f64,
    /// Model regime.
    pub regime: Regime,
    /// Model T, E [ns] (notify), from the calibrated means.
    pub model: (f64, f64),
    /// Model T, E [ns] (notify), from the calibrated medians.
    pub model_median: (f64, f64),
    /// Simulator T, E [ns] (notify, calibrated distributions).
    pub sim: (f64, f64),
    /// Measured (notify).
    pub real: PairResult,
    /// Model T, E with polling.
    pub model_poll: (f64, f64),
    /// Measured with polling.
    pub real_poll: PairResult,
}

/// The regime a measurement shows: who slept.
pub fn observed(r: &PairResult) -> &'static str {
    r.rates.sleeper()
}

/// Who sleeps in a regime, as [`observed`] names it.
pub fn sleeper(r: Regime) -> &'static str {
    match r {
        Regime::GP | Regime::Lockstep => "none",
        Regime::FP => "P",
        Regime::FC => "C",
        Regime::SCS | Regime::SPS | Regime::SS => "both",
    }
}

/// Summary of a validation.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Median |measured - model| / measured of T, notify.
    pub median_err_t: f64,
    /// The same for the model fed the calibrated medians.
    pub median_err_t_medians: f64,
    /// Worst of the same.
    pub worst_err_t_medians: f64,
    /// Worst of the same.
    pub worst_err_t: f64,
    /// Median error of T, polling.
    pub median_err_t_poll: f64,
    /// Median error of E, notify.
    pub median_err_e: f64,
    /// Median error of the simulator's T against the measurement.
    pub median_err_t_sim: f64,
    /// Points whose measured sleeper matches the model's regime.
    pub regimes_agree: usize,
    /// Points.
    pub points: usize,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Summarizes points.
pub fn summarize(points: &[Point]) -> Summary {
    let err = |real: f64, model: f64| (real - model).abs() / real;
    let t: Vec<f64> = points
        .iter()
        .map(|p| err(p.real.rates.t_ns, p.model.0))
        .collect();
    let tm: Vec<f64> = points
        .iter()
        .map(|p| err(p.real.rates.t_ns, p.model_median.0))
        .collect();
    Summary {
        median_err_t: median(t.clone()),
        median_err_t_medians: median(tm.clone()),
        worst_err_t_medians: tm.iter().copied().fold(0.0, f64::max),
        worst_err_t: t.iter().copied().fold(0.0, f64::max),
        median_err_t_poll: median(
            points
                .iter()
                .map(|p| err(p.real_poll.rates.t_ns, p.model_poll.0))
                .collect(),
        ),
        median_err_e: median(
            points
                .iter()
                .map(|p| err(p.real.rates.e_ns, p.model.1))
                .collect(),
        ),
        median_err_t_sim: median(
            points
                .iter()
                .map(|p| err(p.real.rates.t_ns, p.sim.0))
                .collect(),
        ),
        regimes_agree: points
            .iter()
            .filter(|p| observed(&p.real) == sleeper(p.regime))
            .count(),
        points: points.len(),
    }
}

/// Checks a validation's inputs before anything runs: every point of the
/// sweep must be a valid pair.
///
/// # Errors
///
/// The first invalid point, or no messages.
pub fn check(
    base: &Params,
    be: kicklab_testbed::Backend,
    vary: &Vary,
    messages: u64,
) -> Result<(), LabError> {
    base.validate()?;
    for x in vary.values() {
        let p = vary.apply(base, x);
        p.validate().map_err(|e| {
            LabError::input(Input::Vary, format!("at {}={x}: {e}", vary.param.name()))
        })?;
        crate::real::check(&RunSpec::new(p, be, WaitMode::Notify, messages, 0))?;
    }
    Ok(())
}

/// Runs the validation sweep: at every point the model, the simulator,
/// and a real run with notifications and one with polling.
///
/// # Errors
///
/// Bad inputs ([`check`]), or a model, simulator or real run that fails.
pub fn validate(
    base: &Params,
    profile: &Profile,
    be: kicklab_testbed::Backend,
    vary: &Vary,
    messages: u64,
    seed: u64,
    progress: &dyn Progress,
) -> Result<Vec<Point>, LabError> {
    check(base, be, vary, messages)?;
    progress.start("validate", u64::from(vary.points));
    let mut out = Vec::new();
    for x in vary.values() {
        let p = vary.apply(base, x);
        let mut mean = p;
        profile.apply(&mut mean, false);
        let mut spread = p;
        profile.apply(&mut spread, true);
        let m = predict(&mean, WaitMode::Notify)?;
        let mut typical = p;
        profile.apply_medians(&mut typical);
        let mm = predict(&typical, WaitMode::Notify)?;
        let g = predict(&mean, WaitMode::Poll)?;
        let s = simulate(&SimConfig {
            seed,
            ..SimConfig::new(spread, WaitMode::Notify, 200_000)
        })?;
        let real = crate::real::run(&RunSpec::new(p, be, WaitMode::Notify, messages, seed))?;
        let real_poll = crate::real::run(&RunSpec::new(p, be, WaitMode::Poll, messages, seed))?;
        out.push(Point {
            x,
            regime: m.regime,
            model: (m.rates.t_ns, m.rates.e_ns),
            model_median: (mm.rates.t_ns, mm.rates.e_ns),
            sim: (s.rates.t_ns, s.rates.e_ns),
            real,
            model_poll: (g.rates.t_ns, g.rates.e_ns),
            real_poll,
        });
        progress.step();
    }
    progress.finish();
    Ok(out)
}

/// The T and E charts.
pub fn charts(points: &[Point], be: &str) -> (Chart, Chart) {
    // One chart per metric; `pick` gives (model, simulator, measured, model
    // poll, measured poll) of a point.
    let chart = |title: String, y_label: &str, pick: &dyn Fn(&Point) -> [f64; 6]| {
        let xy = |i: usize| {
            points
                .iter()
                .map(|p| (p.x / 1000.0, pick(p)[i] / 1000.0))
                .collect::<Vec<_>>()
        };
        let names = [
            ("model, notify (calibrated N, S)", Style::Thick),
            ("simulator, notify (calibrated spread)", Style::Points),
            ("measured, notify", Style::Dashed),
            ("model, poll", Style::Line),
            ("measured, poll", Style::Points),
            ("model, notify (calibrated medians)", Style::Line),
        ];
        Chart {
            title,
            x_label: "W_P [us]".into(),
            y_label: y_label.into(),
            series: names
                .iter()
                .enumerate()
                .map(|(i, (n, style))| Series {
                    name: (*n).into(),
                    points: xy(i),
                    style: *style,
                    ..Series::default()
                })
                .collect(),
            ..Chart::default()
        }
    };
    (
        chart(
            format!("Fig. 4 on this machine ({be}): time per message, W_C = 1.1 us"),
            "T [us/message]",
            &|p| {
                [
                    p.model.0,
                    p.sim.0,
                    p.real.rates.t_ns,
                    p.model_poll.0,
                    p.real_poll.rates.t_ns,
                    p.model_median.0,
                ]
            },
        ),
        chart(
            format!("Fig. 4 on this machine ({be}): CPU per message"),
            "E [us of CPU/message]",
            &|p| {
                [
                    p.model.1,
                    p.sim.1,
                    p.real.rates.e_ns,
                    p.model_poll.1,
                    p.real_poll.rates.e_ns,
                    p.model_median.1,
                ]
            },
        ),
    )
}

/// The table of points: one row per point, the same value rendered as
/// the page's table, the CSV and JSON.
pub fn table(points: &[Point]) -> Table {
    let mut t = Table::new(
        "validation points",
        vec![
            Column::ns("wp", "W_P"),
            Column::text("regime", "model regime"),
            Column::text("observed_sleeper", "who slept"),
            Column::ns("T_model", "T model"),
            Column::ns("E_model", "E model"),
            Column::ns("T_model_medians", "T model (medians)"),
            Column::ns("T_sim", "T sim"),
            Column::ns("E_sim", "E sim"),
            Column::ns("T_real", "T measured"),
            Column::ns("E_real", "E measured"),
            Column::ns("T_poll_model", "T poll model"),
            Column::ns("T_poll_real", "T poll measured"),
            Column::ns("E_poll_real", "E poll measured"),
            Column::number("notifications_p", "kicks P"),
            Column::number("notifications_c", "kicks C"),
            Column::number("sleeps_p", "sleeps P"),
            Column::number("sleeps_c", "sleeps C"),
        ],
    );
    for p in points {
        t.push(vec![
            p.x.into(),
            p.regime.name().into(),
            observed(&p.real).into(),
            p.model.0.into(),
            p.model.1.into(),
            p.model_median.0.into(),
            p.sim.0.into(),
            p.sim.1.into(),
            p.real.rates.t_ns.into(),
            p.real.rates.e_ns.into(),
            p.model_poll.0.into(),
            p.real_poll.rates.t_ns.into(),
            p.real_poll.rates.e_ns.into(),
            p.real.rates.notifications_p.into(),
            p.real.rates.notifications_c.into(),
            p.real.rates.sleeps_p.into(),
            p.real.rates.sleeps_c.into(),
        ]);
    }
    t
}

/// One line per summary figure.
pub fn summary_text(s: &Summary) -> String {
    format!(
        "T, notify: median error {:.1}%, worst {:.1}% (model of the calibrated means vs measured)\n\
         T, notify: median error {:.1}%, worst {:.1}% (model of the calibrated medians vs measured)\n\
         T, notify: median error {:.1}% (simulator, calibrated spread, vs measured)\n\
         T, poll:   median error {:.1}%\n\
         E, notify: median error {:.1}%\n\
         regimes:   {}/{} points where the side that slept is the one the model's regime says",
        100.0 * s.median_err_t,
        100.0 * s.worst_err_t,
        100.0 * s.median_err_t_medians,
        100.0 * s.worst_err_t_medians,
        100.0 * s.median_err_t_sim,
        100.0 * s.median_err_t_poll,
        100.0 * s.median_err_e,
        s.regimes_agree,
        s.points
    )
}

/// The section for a page.
///
/// # Errors
///
/// A chart that cannot be drawn.
pub fn section(
    points: &[Point],
    profile: &Profile,
    be: &str,
    cmd: &str,
) -> Result<Section, LabError> {
    let s = summarize(points);
    let (t, e) = charts(points, be);
    let table = table(points).to_html();
    let placed = if points.iter().all(|p| p.real.pinned && p.real_poll.pinned) {
        "each pinned to a CPU of its own"
    } else {
        "NOT every run had a CPU per party (see the run's placement fields)"
    };
    let setup = if be == "kvm" {
        format!(
            "One party inside a tiny KVM guest (its message loop in guest user mode; its kicks are `out`s to an \
             ioeventfd port; it halts by exiting to the VMM, whose vCPU thread sleeps on a doorbell eventfd), the other \
             a host thread, the kicklab ring in guest memory; {placed}."
        )
    } else {
        format!("Two threads, the kicklab ring, {be} notifications; {placed}.")
    };
    let html = format!(
        "<p>{setup} N and S from \
         <code>kicklab calibrate --backend {be}</code> (N_P {}, N_C {}, S_P {}, S_C {} means). The model uses the means; \
         the simulator draws them from lognormals with the measured spread.</p><pre>{}</pre>\
         <p>Reproduce: <code>{}</code>.</p>{table}",
        fmt_ns(profile.np.mean_ns),
        fmt_ns(profile.nc.mean_ns),
        fmt_ns(profile.sp.mean_ns),
        fmt_ns(profile.sc.mean_ns),
        html_escape(&summary_text(&s)),
        html_escape(cmd)
    );
    Ok(Section {
        id: format!("validate-{be}"),
        heading: format!("Model vs simulator vs measurement ({be})"),
        html,
        figures: vec![
            (format!("validate-{be}-T"), t.to_svg(960, 540)?, t.caption()),
            (format!("validate-{be}-E"), e.to_svg(960, 540)?, e.caption()),
        ],
    })
}
