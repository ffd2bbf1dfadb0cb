//! Sweep results as a [`Table`] (CSV, HTML, JSON) and as the paper's
//! Fig. 2 (T) and Fig. 3 (E) charts, with the model's regimes as labelled
//! x intervals. What does not live here: running the sweep (`kicklab-sim`).

use kicklab_model::Regime;
use kicklab_sim::{SweepPoint, Vary};

use crate::chart::{Band, Chart, Mark, Series, Style};
use crate::table::{Column, Table};

fn x_of(v: &Vary, x: f64) -> f64 {
    if v.param.is_count() {
        x
    } else {
        x / 1000.0
    }
}

/// One row per point, times in ns: the swept value, the model's regime and
/// m, T and E of model, simulator, polling (model and simulator), the SS
/// formula and its best case, notification and message counts, latency.
pub fn sweep_table(points: &[SweepPoint], vary: &Vary) -> Table {
    let name = vary.param.name();
    let x = if vary.param.is_count() {
        Column::number(name, name)
    } else {
        Column::ns(name, name)
    };
    let mut t = Table::new(
        &format!("sweep {vary}"),
        vec![
            x,
            Column::text("regime", "regime"),
            Column::number("m", "m"),
            Column::ns("T_model", "T model"),
            Column::ns("E_model", "E model"),
            Column::ns("T_sim", "T sim"),
            Column::ns("E_sim", "E sim"),
            Column::ns("T_gp", "T poll model"),
            Column::ns("E_gp", "E poll model"),
            Column::ns("T_sim_poll", "T poll sim"),
            Column::ns("E_sim_poll", "E poll sim"),
            Column::ns("T_ss_formula", "T SS eq. 4"),
            Column::ns("E_ss_formula", "E SS eq. 4"),
            Column::ns("T_ss_best", "T SS best"),
            Column::ns("E_ss_best", "E SS best"),
            Column::number("notifications_p", "notifications P"),
            Column::number("notifications_c", "notifications C"),
            Column::number("sim_messages", "messages simulated"),
            Column::ns("latency_p50", "latency p50"),
            Column::ns("latency_p99", "latency p99"),
        ],
    );
    for p in points {
        let m = p.model.as_ref();
        let lat = p.sim.rates.latency_ns.as_ref();
        t.push(vec![
            p.x.into(),
            m.map(|m| m.regime.name()).into(),
            m.and_then(|m| m.m).into(),
            m.map(|m| m.rates.t_ns).into(),
            m.map(|m| m.rates.e_ns).into(),
            p.sim.rates.t_ns.into(),
            p.sim.rates.e_ns.into(),
            p.model_poll.rates.t_ns.into(),
            p.model_poll.rates.e_ns.into(),
            p.sim_poll.rates.t_ns.into(),
            p.sim_poll.rates.e_ns.into(),
            p.ss_formula.0.into(),
            p.ss_formula.1.into(),
            p.ss_best.0.into(),
            p.ss_best.1.into(),
            p.sim.rates.notifications_p.into(),
            p.sim.rates.notifications_c.into(),
            p.sim.rates.messages.into(),
            lat.map(|l| l.p50).into(),
            lat.map(|l| l.p99).into(),
        ]);
    }
    t
}

/// One CSV row per point; times in ns (`sweep_table(..).to_csv()`).
pub fn sweep_csv(points: &[SweepPoint], vary: &Vary) -> String {
    sweep_table(points, vary).to_csv()
}

/// The model's regime at each point, in increasing x (chart units).
fn regimes_by_x(points: &[SweepPoint], vary: &Vary) -> Vec<(f64, Regime)> {
    let mut v: Vec<(f64, Regime)> = points
        .iter()
        .filter_map(|p| p.model.map(|m| (x_of(vary, p.x), m.regime)))
        .filter(|(x, _)| x.is_finite())
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// Vertical marks where the model's regime changes between two points (in
/// increasing x, whatever the sweep's direction), labelled with the regime
/// on the right of the mark (and one at the smallest x).
pub fn regime_marks(points: &[SweepPoint], vary: &Vary) -> Vec<Mark> {
    let mut marks: Vec<Mark> = Vec::new();
    let mut prev: Option<(f64, Regime)> = None;
    for (x, r) in regimes_by_x(points, vary) {
        match prev {
            None => marks.push(Mark {
                x,
                label: r.name().into(),
            }),
            Some((px, pr)) if pr != r => marks.push(Mark {
                x: (px + x) / 2.0,
                label: r.name().into(),
            }),
            _ => {}
        }
        prev = Some((x, r));
    }
    marks
}

/// The model's regimes as x intervals (chart units), in increasing x
/// whatever the sweep's direction: a boundary halfway between two points
/// of different regimes, the ends at the smallest and largest x.
pub fn regime_bands(points: &[SweepPoint], vary: &Vary) -> Vec<Band> {
    regime_bands_of(regimes_by_x(points, vary))
}

/// [`regime_bands`] of `(x, regime)` pairs in any order (non-finite x
/// left out): for curves drawn from the model alone.
pub fn regime_bands_of(mut regimes: Vec<(f64, Regime)>) -> Vec<Band> {
    regimes.retain(|(x, _)| x.is_finite());
    regimes.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut bands: Vec<Band> = Vec::new();
    let mut prev: Option<(f64, Regime)> = None;
    for (x, r) in regimes {
        match prev {
            Some((_, pr)) if pr == r => {
                if let Some(b) = bands.last_mut() {
                    b.x1 = x;
                }
            }
            Some((px, _)) => {
                let mid = (px + x) / 2.0;
                if let Some(b) = bands.last_mut() {
                    b.x1 = mid;
                }
                bands.push(Band {
                    x0: mid,
                    x1: x,
                    label: r.name().into(),
                });
            }
            None => bands.push(Band {
                x0: x,
                x1: x,
                label: r.name().into(),
            }),
        }
        prev = Some((x, r));
    }
    bands
}

/// The T chart (paper Fig. 2 when W_P is swept) and the E chart (Fig. 3
/// when W_C is swept): model and simulator, notifications and polling, and
/// the SS formula (eq. 4) as the short-queue reference curve.
pub fn sweep_charts(points: &[SweepPoint], vary: &Vary, title: &str) -> (Chart, Chart) {
    let xs = |f: &dyn Fn(&SweepPoint) -> Option<f64>| -> Vec<(f64, f64)> {
        points
            .iter()
            .filter_map(|p| f(p).map(|y| (x_of(vary, p.x), y / 1000.0)))
            .collect()
    };
    let mode = points
        .first()
        .and_then(|p| p.model.map(|_| "notify"))
        .unwrap_or("spin");
    let bands = regime_bands(points, vary);
    let t = Chart {
        title: format!("{title}: time per message T"),
        x_label: vary.param.label().into(),
        y_label: "T [us/message]".into(),
        series: vec![
            Series {
                name: format!("model, {mode}"),
                points: xs(&|p| p.model.map(|m| m.rates.t_ns)),
                style: Style::Thick,
                ..Series::default()
            },
            Series {
                name: format!("simulator, {mode}"),
                points: xs(&|p| Some(p.sim.rates.t_ns)),
                style: Style::Points,
                ..Series::default()
            },
            Series {
                name: "T_GP = max(W_P, W_C), polling".into(),
                points: xs(&|p| Some(p.model_poll.rates.t_ns)),
                style: Style::Line,
                ..Series::default()
            },
            Series {
                name: "T_SS best case (the lowest eq. 4 gives in SS)".into(),
                points: xs(&|p| Some(p.ss_best.0)),
                style: Style::Dashed,
                ..Series::default()
            },
        ],
        bands: bands.clone(),
        ..Chart::default()
    };
    let e = Chart {
        title: format!("{title}: CPU cost per message E"),
        x_label: vary.param.label().into(),
        y_label: "E [us of busy CPU/message]".into(),
        series: vec![
            Series {
                name: format!("model, {mode}"),
                points: xs(&|p| p.model.map(|m| m.rates.e_ns)),
                style: Style::Thick,
                ..Series::default()
            },
            Series {
                name: format!("simulator, {mode}"),
                points: xs(&|p| Some(p.sim.rates.e_ns)),
                style: Style::Points,
                ..Series::default()
            },
            Series {
                name: "E_GP = 2 T_GP, polling".into(),
                points: xs(&|p| Some(p.model_poll.rates.e_ns)),
                style: Style::Line,
                ..Series::default()
            },
            Series {
                name: "simulator, polling".into(),
                points: xs(&|p| Some(p.sim_poll.rates.e_ns)),
                style: Style::Points,
                ..Series::default()
            },
            Series {
                name: "E_SS best case (the lowest eq. 4 gives in SS)".into(),
                points: xs(&|p| Some(p.ss_best.1)),
                style: Style::Dashed,
                ..Series::default()
            },
        ],
        bands,
        ..Chart::default()
    };
    (t, e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kicklab_model::{Params, WaitMode};

    #[test]
    fn csv_and_marks_follow_the_sweep() {
        let v = Vary::parse("wp=0.5us..2us:4").unwrap();
        let pts =
            kicklab_sim::sweep(&Params::default(), &v, WaitMode::Notify, 2_000, 1, &|| {}).unwrap();
        let csv = sweep_csv(&pts, &v);
        assert_eq!(csv.lines().count(), 5);
        assert!(csv.starts_with("wp_ns,regime,m,T_model_ns"));
        assert!(csv.lines().nth(1).unwrap().starts_with("500,FP,"));
        let marks = regime_marks(&pts, &v);
        // 0.5 and 1.0 us are FP, 1.5 and 2.0 us are FC: one start, one change.
        assert_eq!(
            marks.iter().map(|m| m.label.as_str()).collect::<Vec<_>>(),
            ["FP", "FC"]
        );
        assert!((marks[1].x - 1.25).abs() < 1e-12);
        let (t, e) = sweep_charts(&pts, &v, "x");
        assert_eq!(t.series.len(), 4);
        assert_eq!(e.series.len(), 5);
        let table = sweep_table(&pts, &v);
        assert_eq!(table.to_csv(), csv);
        assert_eq!(table.to_json().as_array().unwrap().len(), 4);
        assert_eq!(
            table.to_json()[0]["T_model_ns"],
            pts[0].model.unwrap().rates.t_ns
        );
    }

    /// A descending sweep: the same regimes on the same sides of the axis,
    /// each label within its regime's x interval.
    #[test]
    fn descending_sweep_labels_each_regime_within_its_interval() {
        let up = Vary::parse("wp=0.1us..3us:5").unwrap();
        let down = Vary::parse("wp=3us..0.1us:5").unwrap();
        let run = |v: &Vary| {
            kicklab_sim::sweep(&Params::default(), v, WaitMode::Notify, 2_000, 1, &|| {}).unwrap()
        };
        let (pu, pd) = (run(&up), run(&down));
        assert!(pd[0].x > pd[4].x, "the sweep runs downwards");
        let bands = regime_bands(&pd, &down);
        assert_eq!(bands, regime_bands(&pu, &up));
        // 0.1 and 0.825 us are FP, 1.55 us and up FC.
        assert_eq!(
            bands.iter().map(|b| b.label.as_str()).collect::<Vec<_>>(),
            ["FP", "FC"]
        );
        assert!((bands[0].x0 - 0.1).abs() < 1e-9 && (bands[1].x1 - 3.0).abs() < 1e-9);
        for p in &pd {
            let m = p.model.unwrap();
            let x = p.x / 1000.0;
            let b = bands.iter().find(|b| b.x0 <= x && x <= b.x1).unwrap();
            assert_eq!(b.label, m.regime.name(), "at {x}");
        }
        assert_eq!(
            regime_marks(&pd, &down)
                .iter()
                .map(|m| m.label.as_str())
                .collect::<Vec<_>>(),
            ["FP", "FC"]
        );
        // The drawn labels: each centred within its interval, in pixels.
        let (t, _) = sweep_charts(&pd, &down, "down");
        let l = t.layout(960, 540);
        let px = |x: f64| l.plot.x + (x - l.x.0) / (l.x.1 - l.x.0) * l.plot.w;
        for b in &bands {
            let (_, r) = l.labels.iter().find(|(s, _)| *s == b.label).unwrap();
            let mid = r.x + r.w / 2.0;
            assert!(px(b.x0) <= mid && mid <= px(b.x1), "{} at {mid}", b.label);
        }
    }

    /// E_GP (a thin line) is drawn after the simulator's polling points
    /// that lie on it, so it stays visible.
    #[test]
    fn polling_reference_line_is_drawn_over_the_points() {
        let v = Vary::parse("wc=0.5us..2us:6").unwrap();
        let pts =
            kicklab_sim::sweep(&Params::default(), &v, WaitMode::Notify, 2_000, 1, &|| {}).unwrap();
        let (_, e) = sweep_charts(&pts, &v, "Fig. 3");
        let gp = e
            .series
            .iter()
            .position(|s| s.name.starts_with("E_GP"))
            .unwrap();
        let sim = e
            .series
            .iter()
            .position(|s| s.name == "simulator, polling")
            .unwrap();
        let svg = e.to_svg(960, 540).unwrap();
        let color = |i: usize| format!("\"{}\"", crate::chart::PALETTE[i]);
        let line = svg
            .lines()
            .position(|l| l.starts_with("<polyline") && l.contains(&color(gp)))
            .unwrap();
        let last_dot = svg
            .lines()
            .collect::<Vec<_>>()
            .iter()
            .rposition(|l| l.starts_with("<circle") && l.contains(&color(sim)))
            .unwrap();
        assert!(line > last_dot, "E_GP drawn under the points");
    }

    #[test]
    fn captions_name_their_own_metric() {
        let v = Vary::parse("wc=0.5us..2us:3").unwrap();
        let pts =
            kicklab_sim::sweep(&Params::default(), &v, WaitMode::Notify, 2_000, 1, &|| {}).unwrap();
        let (t, e) = sweep_charts(&pts, &v, "Fig. 3");
        assert!(
            t.caption().contains("time per message T"),
            "{}",
            t.caption()
        );
        assert!(t.caption().contains("T [us"));
        assert!(!t.caption().contains("CPU"));
        assert!(
            e.caption().contains("CPU cost per message E"),
            "{}",
            e.caption()
        );
        assert!(e.caption().contains("E [us"));
        assert!(!e.caption().contains("T ["));
        // The page shows that caption under the figure.
        let mut s = crate::Section::new("fig3", "Fig. 3");
        s.push_chart("fig3-E", &e, 600, 400).unwrap();
        assert_eq!(s.figures[0].2, e.caption());
    }
}
