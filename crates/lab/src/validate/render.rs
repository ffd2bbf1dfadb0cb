//! A validation as charts, a table, JSON, text and a report section.
//! What does not live here: running (`run`), judging (`judge`).

use std::fmt::Write as _;

use kicklab_model::{fmt_ns_short, Params, Party};
use kicklab_report::{html_escape, Chart, Column, ErrorBar, Section, Series, Style, Table};
use kicklab_sim::Vary;
use kicklab_testbed::Profile;

use crate::disturbance::check_profile;
use crate::LabError;

use super::judge::*;
use super::types::*;

/// The T and E charts: the measured series with error bars over the
/// repetitions (min to max), disturbed points ringed.
pub fn charts(points: &[Point], be: &str) -> (Chart, Chart) {
    let us = |v: f64| v / 1000.0;
    let line = |name: &str, style, f: &dyn Fn(&Point) -> f64| Series {
        name: name.into(),
        points: points.iter().map(|p| (us(p.x), us(f(p)))).collect(),
        style,
        ..Series::default()
    };
    let measured = |name: &str, style, f: &dyn Fn(&Point) -> Spread| Series {
        error_bars: points
            .iter()
            .map(|p| {
                let s = f(p);
                ErrorBar {
                    x: us(p.x),
                    lo: us(s.min),
                    hi: us(s.max),
                }
            })
            .collect(),
        ..line(name, style, &|p| f(p).median)
    };
    let disturbed = |f: &dyn Fn(&Point) -> [Spread; 2]| Series {
        name: "disturbed (after the extra tries)".into(),
        points: points
            .iter()
            .filter(|p| p.disturbed())
            .flat_map(|p| f(p).map(|s| (us(p.x), us(s.median))))
            .collect(),
        style: Style::Ring,
        ..Series::default()
    };
    let chart = |title: String, y_label: &str, mut series: Vec<Series>, ring: Series| {
        if !ring.points.is_empty() {
            series.push(ring);
        }
        Chart {
            title,
            x_label: "W_P [us]".into(),
            y_label: y_label.into(),
            series,
            // A model's plateau over the measurements (a KVM guest's
            // wake-up) spans decades: log there, so both read.
            y_scale: kicklab_report::YScale::Auto,
            ..Chart::default()
        }
    };
    (
        chart(
            format!("Fig. 4 on this machine ({be}): time per message, W_C = 1.1 us"),
            "T [us/message]",
            vec![
                line("model, notify (calibrated N, S)", Style::Thick, &|p| {
                    p.model.0
                }),
                line(
                    "simulator, notify (calibrated spread)",
                    Style::Points,
                    &|p| p.sim.0,
                ),
                measured("measured, notify (median, min-max)", Style::Dashed, &|p| {
                    p.t_real()
                }),
                line("model, poll", Style::Line, &|p| p.model_poll.0),
                measured("measured, poll (median, min-max)", Style::Points, &|p| {
                    p.t_poll()
                }),
                line("model, notify (calibrated medians)", Style::Line, &|p| {
                    p.model_median.0
                }),
            ],
            disturbed(&|p| [p.t_real(), p.t_poll()]),
        ),
        chart(
            format!("Fig. 4 on this machine ({be}): CPU per message"),
            "E [us of CPU/message]",
            vec![
                line("model, notify (calibrated N, S)", Style::Thick, &|p| {
                    p.model.1
                }),
                line(
                    "simulator, notify (calibrated spread)",
                    Style::Points,
                    &|p| p.sim.1,
                ),
                measured("measured, notify (median, min-max)", Style::Dashed, &|p| {
                    p.e_real()
                }),
                line("model, poll", Style::Line, &|p| p.model_poll.1),
                measured("measured, poll (median, min-max)", Style::Points, &|p| {
                    p.e_poll()
                }),
                line("model, notify (calibrated medians)", Style::Line, &|p| {
                    p.model_median.1
                }),
            ],
            disturbed(&|p| [p.e_real(), p.e_poll()]),
        ),
    )
}

/// The table of points: one row per point, the same value rendered as
/// the page's table, the CSV and (with [`to_json`]) the JSON. Measured
/// values are medians over the repetitions, with their range; counts are
/// the median run's ([`Point::median_run`]).
pub fn table(points: &[Point]) -> Table {
    let mut t = Table::new(
        "validation points",
        vec![
            Column::ns("wp", "W_P").on_page(),
            Column::text("regime", "model regime").on_page(),
            Column::text("observed_sleeper", "who slept").on_page(),
            Column::text("other_point", "other operating point"),
            Column::ns("T_model", "T model").on_page(),
            Column::ns("E_model", "E model").on_page(),
            Column::ns("T_model_medians", "T model (medians)"),
            Column::ns("T_model_idle", "T model (S at the sleepers' idle time)"),
            Column::ns("T_model_race", "T model (batch race drawn)"),
            Column::ns("E_model_race", "E model (batch race drawn)"),
            Column::ns("T_sim", "T sim"),
            Column::ns("E_sim", "E sim"),
            Column::ns("T_real", "T measured").on_page(),
            Column::ns("T_real_min", "min"),
            Column::ns("T_real_max", "max"),
            Column::ns("E_real", "E measured").on_page(),
            Column::ns("E_real_min", "min"),
            Column::ns("E_real_max", "max"),
            Column::ns("T_poll_model", "T poll model"),
            Column::ns("E_poll_model", "E poll model"),
            Column::ns("T_poll_real", "T poll measured"),
            Column::ns("T_poll_real_min", "min"),
            Column::ns("T_poll_real_max", "max"),
            Column::ns("E_poll_real", "E poll measured"),
            Column::number("notifications_p", "kicks P"),
            Column::number("notifications_c", "kicks C"),
            Column::number("sleeps_p", "sleeps P"),
            Column::number("sleeps_c", "sleeps C"),
            Column::ns("kick_p", "P's kick in the run"),
            Column::ns("kick_c", "C's kick in the run"),
            Column::ns("wake_p", "P's wake-up in the run"),
            Column::ns("wake_c", "C's wake-up in the run"),
            Column::number("repetitions", "repetitions"),
            Column::number("tries", "tries"),
            Column::flag("disturbed", "disturbed").on_page(),
            Column::text("warnings", "warnings"),
        ],
    );
    for p in points {
        let (tr, er, tp) = (p.t_real(), p.e_real(), p.t_poll());
        let r = p.median_run();
        t.push(vec![
            p.x.into(),
            p.regime.name().into(),
            observed(r).into(),
            p.other
                .map_or(String::new(), |(g, t)| {
                    format!("{g} at {}", fmt_ns_short(t))
                })
                .into(),
            p.model.0.into(),
            p.model.1.into(),
            p.model_median.0.into(),
            p.model_at_idle.unwrap_or(f64::NAN).into(),
            p.model_race.0.into(),
            p.model_race.1.into(),
            p.sim.0.into(),
            p.sim.1.into(),
            tr.median.into(),
            tr.min.into(),
            tr.max.into(),
            er.median.into(),
            er.min.into(),
            er.max.into(),
            p.model_poll.0.into(),
            p.model_poll.1.into(),
            tp.median.into(),
            tp.min.into(),
            tp.max.into(),
            p.e_poll().median.into(),
            r.rates.notifications_p.into(),
            r.rates.notifications_c.into(),
            r.rates.sleeps_p.into(),
            r.rates.sleeps_c.into(),
            r.kick_p_ns.unwrap_or(f64::NAN).into(),
            r.kick_c_ns.unwrap_or(f64::NAN).into(),
            r.wake_p_ns.unwrap_or(f64::NAN).into(),
            r.wake_c_ns.unwrap_or(f64::NAN).into(),
            (p.reps.len() as u64).into(),
            p.tries.into(),
            p.disturbed().into(),
            warnings_text(&p.warnings).into(),
        ]);
    }
    t
}

/// The validation as one JSON object: `backend`, `direction` (kvm: `tx`
/// or `rx`; null for the thread backends, whose parties are both host
/// threads), the run options, the rule's margin, `summary`, and `points`:
/// [`table`]'s rows, whose `warnings` are the [`Warning`] objects.
pub fn to_json(
    points: &[Point],
    base: &Params,
    be: kicklab_testbed::Backend,
    vary: &Vary,
    opts: &Options,
) -> serde_json::Value {
    let mut rows = table(points).to_json();
    if let Some(rows) = rows.as_array_mut() {
        for (row, p) in rows.iter_mut().zip(points) {
            row["warnings"] = serde_json::to_value(&p.warnings).unwrap_or_default();
        }
    }
    let direction = match be {
        kicklab_testbed::Backend::Kvm(o) => serde_json::Value::from(o.direction.name()),
        kicklab_testbed::Backend::Threads(_) => serde_json::Value::Null,
    };
    serde_json::json!({
        "backend": be.name(),
        "direction": direction,
        "vary": vary.to_string(),
        "params": serde_json::to_value(base).unwrap_or_default(),
        "messages": opts.messages,
        "repeat": opts.repeat,
        "seed": opts.seed,
        "max_retries": MAX_RETRIES,
        "margin": crate::disturbance::MARGIN,
        "summary": summarize(points),
        "points": rows,
    })
}

/// A share as a percentage at a glance (three significant digits).
fn pct(share: f64) -> String {
    kicklab_model::sig(100.0 * share, kicklab_model::SHORT_DIGITS)
}

/// The error lines of a set of points.
fn errors_text(e: &Errors) -> String {
    format!(
        "T, notify: median error {}%, worst {}% (model of the calibrated means vs measured)\n\
         T, notify: median error {}%, worst {}% (model of the calibrated medians vs measured)\n\
         T, notify: median error {}% (simulator, calibrated spread and idle curve, vs measured)\n\
         T, notify: median error {}% (model with S at the sleepers' idle time, from the idle curve)\n\
         T, notify: median error {}%, worst {}%; E {}%, worst {}% (model with the batch race drawn: s per kick with the calibrated spread)\n\
         T, poll:   median error {}%\n\
         E, poll:   median error {}%\n\
         E, notify: median error {}%, worst {}% (CPU: a sleep counts what one cost the sleeper's CPU in calibration's reference pairs)\n\
         regimes:   {}/{} points where the side that slept is the one the model's regime says",
        pct(e.median_err_t),
        pct(e.worst_err_t),
        pct(e.median_err_t_medians),
        pct(e.worst_err_t_medians),
        pct(e.median_err_t_sim),
        pct(e.median_err_t_idle),
        pct(e.median_err_t_race),
        pct(e.worst_err_t_race),
        pct(e.median_err_e_race),
        pct(e.worst_err_e_race),
        pct(e.median_err_t_poll),
        pct(e.median_err_e_poll),
        pct(e.median_err_e),
        pct(e.worst_err_e),
        e.regimes_agree,
        e.points
    )
}

/// The validation as text: a line per point (W_P, regime, the side that
/// slept, T of the model, the simulator, the runs and polling, the runs'
/// spread), then the summary.
pub fn text_lines(points: &[Point]) -> Vec<String> {
    let f = kicklab_model::fmt_ns;
    let mut out = vec![format!(
        "{:>8}  {:<8} {:<6} {:>10} {:>10} {:>10} {:>10} {:>10}  {:>6}",
        "W_P", "regime", "slept", "T model", "T sim", "T real", "T poll", "poll real", "spread"
    )];
    for p in points {
        out.push(format!(
            "{:>8}  {:<8} {:<6} {:>10} {:>10} {:>10} {:>10} {:>10}  {:>6}{}",
            f(p.x),
            p.regime.name(),
            super::observed(p.median_run()),
            f(p.model.0),
            f(p.sim.0),
            f(p.t_real().median),
            f(p.model_poll.0),
            f(p.t_poll().median),
            if p.reps.len() > 1 {
                format!("{:.1}%", 100.0 * p.t_real().relative())
            } else {
                "-".into()
            },
            if p.disturbed() { "  DISTURBED" } else { "" }
        ));
    }
    out.extend(
        summary_text(&super::summarize(points))
            .lines()
            .map(String::from),
    );
    out
}

/// One line per summary figure: the errors over the undisturbed points,
/// then, if some are disturbed, the main ones with them included; if all
/// are, the errors over all of them.
pub fn summary_text(s: &Summary) -> String {
    let mut t = format!(
        "points:    {}, {} repetition(s) each (measured values are their medians), {} disturbed",
        s.points, s.repeat, s.disturbed
    );
    if s.disturbed == 0 {
        t.push('\n');
        t.push_str(&errors_text(&s.all));
    } else if s.undisturbed.points > 0 {
        let a = &s.all;
        let _ = write!(
            t,
            " (marked; left out of the errors below)\n{}\nwith the disturbed: T, notify: median error {}%, worst {}%; \
             T, poll: {}%; E, poll: {}%; E, notify: {}%; regimes {}/{}",
            errors_text(&s.undisturbed),
            pct(a.median_err_t),
            pct(a.worst_err_t),
            pct(a.median_err_t_poll),
            pct(a.median_err_e_poll),
            pct(a.median_err_e),
            a.regimes_agree,
            a.points
        );
    } else {
        let _ = write!(
            t,
            " (every point: the errors below are over all of them)\n{}",
            errors_text(&s.all)
        );
    }
    if !(s.kick_p_run_ns.is_nan() && s.kick_c_run_ns.is_nan()) {
        let show = |v: f64| {
            if v.is_nan() {
                "-".to_string()
            } else {
                fmt_ns_short(v)
            }
        };
        let _ = write!(
            t,
            "\nkicks:     a notify call in the runs took {} (P) and {} (C), median over the points (the runs' N, \
             to set beside the calibrated N)",
            show(s.kick_p_run_ns),
            show(s.kick_c_run_ns)
        );
    }
    for (who, w, model) in [
        ("P", &s.wake_p_run_ns, s.wake_model_ns[0]),
        ("C", &s.wake_c_run_ns, s.wake_model_ns[1]),
    ] {
        if w.median.is_nan() {
            continue;
        }
        let _ = write!(
            t,
            "\nwakes:     {who}'s wake-ups in the runs took {} to {} (median {}) over the points where it slept \
             {WAKES_SEEN} times or more; the model takes {}",
            fmt_ns_short(w.min),
            fmt_ns_short(w.max),
            fmt_ns_short(w.median),
            fmt_ns_short(model)
        );
        let ratio = w.median / model;
        if model > 0.0 && !(1.0 / WAKE_DRIFT..=WAKE_DRIFT).contains(&ratio) {
            let _ = write!(
                t,
                " ({ratio:.2}x, {} the model's: the machine's wake-ups were in another state than in \
                 calibration; calibrate again, and see docs/calibration.md)",
                if ratio > 1.0 { "over twice" } else { "under half" }
            );
        }
    }
    if let Some(u) = s.poll_under_floor {
        let _ = write!(
            t,
            "\nring:      polling ran under the model's floor at every point, by a median {}%: calibration met \
             the ring's cost per message in a slower state than these runs did (calibrate again)",
            pct(u)
        );
    }
    if s.repeat > 1 {
        let _ = write!(
            t,
            "\nrepeats:   measured T varies by a median {}% between repetitions (notify), {}% (poll) \
             (max - min over the median)",
            pct(s.median_spread_t),
            pct(s.median_spread_t_poll)
        );
    }
    t
}

/// The section's first paragraph: how far the model is from the
/// measurements here, which of its variants comes closest, and how many
/// points were disturbed; over the undisturbed points where there are
/// any.
pub(super) fn lead(s: &Summary) -> String {
    let (e, which) = if s.undisturbed.points > 0 {
        (&s.undisturbed, "undisturbed point")
    } else {
        (&s.all, "point")
    };
    if e.points == 0 || e.median_err_t.is_nan() {
        return "<p>No point was measured.</p>\n".into();
    }
    let variants = [
        (
            "the model of the calibrated means (the thick line)",
            e.median_err_t,
        ),
        (
            "the model of the calibrated medians",
            e.median_err_t_medians,
        ),
        (
            "the simulator with the calibrated spread",
            e.median_err_t_sim,
        ),
        (
            "the model with S at the sleepers' idle time",
            e.median_err_t_idle,
        ),
        ("the model with the batch race drawn", e.median_err_t_race),
    ];
    // The variant with the least median error, and that error.
    let (closest, closest_err) = variants
        .iter()
        .filter(|v| v.1.is_finite())
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map_or(("", f64::NAN), |v| *v);
    let mut h = format!(
        "<p>On this machine the model's T is {}% off the measured at the median {which} (worst {}%) and its E \
         {}% (worst {}%); the side that slept is the one its regime says at {} of {} points. Of its variants, \
         {closest} comes closest here (T {}% at the median).",
        pct(e.median_err_t),
        pct(e.worst_err_t),
        pct(e.median_err_e),
        pct(e.worst_err_e),
        e.regimes_agree,
        e.points,
        pct(closest_err),
    );
    if s.disturbed == s.points {
        h.push_str(" Every point was disturbed: these figures are over them all.");
    } else if s.disturbed > 0 {
        let _ = write!(
            h,
            " {} of {} points were disturbed and are left out.",
            s.disturbed, s.points
        );
    }
    h + "</p>\n"
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
    let runs = || {
        points
            .iter()
            .flat_map(|p| &p.reps)
            .flat_map(|r| [&r.notify, &r.poll])
    };
    let placed = if runs().all(|r| r.pinned) {
        "each pinned to a CPU of its own"
    } else {
        "NOT every run had a CPU per party (see the run's placement fields)"
    };
    // `be` is a label: a backend's name, or `kvm tx` / `kvm rx`.
    let calibrate = match be.split_once(' ') {
        Some((name, direction)) => kicklab_model::CommandLine::new("calibrate")
            .arg(kicklab_model::Flag::Backend, name)
            .arg(kicklab_model::Flag::Direction, direction),
        None => kicklab_model::CommandLine::new("calibrate").arg(kicklab_model::Flag::Backend, be),
    };
    let slug = be.replace(' ', "-");
    let setup = if be.starts_with("kvm") {
        format!(
            "One party inside a tiny KVM guest (its message loop in guest user mode; its kicks are <code>out</code> instructions to an \
             ioeventfd port; it halts by exiting to the VMM, whose vCPU thread sleeps on a doorbell eventfd), the other \
             a host thread, the kicklab ring in guest memory; {placed}."
        )
    } else {
        format!("Two threads, the kicklab ring, {be} notifications; {placed}.")
    };
    let mut disturbed = format!(
        "<p>Each point: {} repetition(s) of the run with notifications and of the one with polling; the measured \
         values are their medians, the error bars their range (min to max). A run is <em>disturbed</em> when polling \
         is more than {margin:.0}% slower than its floor (the model's polling T), when a party that did not sleep (at \
         most once per 1000 messages) was on its CPU for less than 1/(1 + {margin:.0}%) of the run, when threads \
         outnumber CPUs, or when the calibration it is compared with is unstable or has a negative start-up cost; a \
         disturbed repetition is run again, up to {MAX_RETRIES} extra tries per point (<code>docs/cli.md</code>).</p>",
        s.repeat,
        margin = 100.0 * crate::disturbance::MARGIN
    );
    let doubtful = check_profile(profile);
    if s.disturbed > 0 {
        let _ = write!(
            disturbed,
            "<p class=\"warning\"><strong>{} of {} points still disturbed</strong> (highlighted in the table, ringed \
             in the charts):</p><ul>",
            s.disturbed, s.points
        );
        if !doubtful.is_empty() {
            let _ = write!(
                disturbed,
                "<li>every point: {}</li>",
                html_escape(&warnings_text(&doubtful))
            );
        }
        for (p, line) in points
            .iter()
            .filter_map(|p| p.run_disturbance().map(|l| (p, l)))
        {
            let _ = write!(
                disturbed,
                "<li>W_P {}: {}</li>",
                fmt_ns_short(p.x),
                html_escape(&line)
            );
        }
        disturbed.push_str("</ul>");
    }
    let html = format!(
        "{}<p>Method: {setup} N and S from \
         <code>{calibrate}</code> (N_P {}, N_C {}, S_P {}, S_C {} means; V_P {}, V_C {}: when \
         the sleeping party sees the notification, from its start; the ring's own cost per message, {} (median), is added to W_P \
         and W_C). The model uses the means; the simulator draws them from lognormals with the measured spread and \
         scales each S on the idle curve at the sleeper's actual idle time; the model's E counts each sleep at what one \
         cost the sleeper's CPU in calibration's reference pairs (else the CPU part of a wake-up, S cpu). A bistable pair is compared at the operating point its runs sat in (who slept).</p>{disturbed}<pre>{}</pre>\
         <p>Reproduce: <code>{}</code>.</p>{table}",
        lead(&s),
        fmt_ns_short(profile.np.mean_ns),
        fmt_ns_short(profile.nc.mean_ns),
        fmt_ns_short(profile.sp.mean_ns),
        fmt_ns_short(profile.sc.mean_ns),
        profile
            .visibility(Party::P)
            .map_or_else(|| "= N_P".to_string(), |v| fmt_ns_short(v.mean_ns)),
        profile
            .visibility(Party::C)
            .map_or_else(|| "= N_C".to_string(), |v| fmt_ns_short(v.mean_ns)),
        profile
            .overhead
            .as_ref()
            .map_or_else(|| "not measured".to_string(), |o| fmt_ns_short(o.median_ns)),
        html_escape(&summary_text(&s)),
        html_escape(cmd)
    );
    Ok(Section {
        id: format!("validate-{slug}"),
        heading: format!("Model vs simulator vs measurement ({be})"),
        html,
        figures: vec![
            (
                format!("validate-{slug}-T"),
                t.to_svg(kicklab_report::FIG_W, kicklab_report::FIG_H)?,
                t.caption(),
            ),
            (
                format!("validate-{slug}-E"),
                e.to_svg(kicklab_report::FIG_W, kicklab_report::FIG_H)?,
                e.caption(),
            ),
        ],
        layout: kicklab_report::Layout::Summary,
    })
}
