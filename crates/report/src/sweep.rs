//! Sweep results as CSV and as the paper's Fig. 2 (T) and Fig. 3 (E) charts.

use std::fmt::Write as _;

use kicklab_sim::{SweepPoint, Vary};

use crate::chart::{Chart, Mark, Series, Style};

fn x_of(v: &Vary, x: f64) -> f64 {
    if v.param.is_count() {
        x
    } else {
        x / 1000.0
    }
}

/// One CSV row per point; times in ns.
pub fn sweep_csv(points: &[SweepPoint], vary: &Vary) -> String {
    let mut s = String::new();
    let unit = if vary.param.is_count() { "" } else { "_ns" };
    let _ = writeln!(
        s,
        "{}{unit},regime,m,T_model_ns,E_model_ns,T_sim_ns,E_sim_ns,T_gp_ns,E_gp_ns,T_sim_poll_ns,E_sim_poll_ns,T_ss_formula_ns,E_ss_formula_ns,T_ss_best_ns,E_ss_best_ns,notifications_p,notifications_c,sim_messages,latency_p50_ns,latency_p99_ns",
        vary.param.name()
    );
    for p in points {
        let (regime, m, t, e) = match &p.model {
            Some(m) => (
                m.regime.name().to_string(),
                m.m.map(|v| v.to_string()).unwrap_or_default(),
                m.rates.t_ns.to_string(),
                m.rates.e_ns.to_string(),
            ),
            None => (String::new(), String::new(), String::new(), String::new()),
        };
        let (p50, p99) = p
            .sim
            .rates
            .latency_ns
            .map(|l| (l.p50.to_string(), l.p99.to_string()))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "{},{regime},{m},{t},{e},{},{},{},{},{},{},{},{},{},{},{},{},{},{p50},{p99}",
            p.x,
            p.sim.rates.t_ns,
            p.sim.rates.e_ns,
            p.model_poll.rates.t_ns,
            p.model_poll.rates.e_ns,
            p.sim_poll.rates.t_ns,
            p.sim_poll.rates.e_ns,
            p.ss_formula.0,
            p.ss_formula.1,
            p.ss_best.0,
            p.ss_best.1,
            p.sim.rates.notifications_p,
            p.sim.rates.notifications_c,
            p.sim.rates.messages,
        );
    }
    s
}

/// Vertical marks where the model's regime changes between two points,
/// labelled with the regime on the right of the mark (and one at the start).
pub fn regime_marks(points: &[SweepPoint], vary: &Vary) -> Vec<Mark> {
    let mut marks = Vec::new();
    let mut prev: Option<(f64, kicklab_model::Regime)> = None;
    for p in points {
        let Some(m) = &p.model else { continue };
        match prev {
            None => marks.push(Mark {
                x: x_of(vary, p.x),
                label: m.regime.name().into(),
            }),
            Some((px, r)) if r != m.regime => {
                marks.push(Mark {
                    x: x_of(vary, (px + p.x) / 2.0),
                    label: m.regime.name().into(),
                });
            }
            _ => {}
        }
        prev = Some((p.x, m.regime));
    }
    marks
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
    let marks = regime_marks(points, vary);
    let t = Chart {
        title: format!("{title}: time per message T"),
        x_label: vary.param.label().into(),
        y_label: "T [us/message]".into(),
        series: vec![
            Series {
                name: format!("model, {mode}"),
                points: xs(&|p| p.model.map(|m| m.rates.t_ns)),
                style: Style::Thick,
            },
            Series {
                name: format!("simulator, {mode}"),
                points: xs(&|p| Some(p.sim.rates.t_ns)),
                style: Style::Points,
            },
            Series {
                name: "T_GP = max(W_P, W_C), polling".into(),
                points: xs(&|p| Some(p.model_poll.rates.t_ns)),
                style: Style::Line,
            },
            Series {
                name: "T_SS best case (inf of eq. 4 over SS)".into(),
                points: xs(&|p| Some(p.ss_best.0)),
                style: Style::Dashed,
            },
        ],
        marks: marks.clone(),
        y_range: None,
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
            },
            Series {
                name: format!("simulator, {mode}"),
                points: xs(&|p| Some(p.sim.rates.e_ns)),
                style: Style::Points,
            },
            Series {
                name: "E_GP = 2 T_GP, polling".into(),
                points: xs(&|p| Some(p.model_poll.rates.e_ns)),
                style: Style::Line,
            },
            Series {
                name: "simulator, polling".into(),
                points: xs(&|p| Some(p.sim_poll.rates.e_ns)),
                style: Style::Points,
            },
            Series {
                name: "E_SS best case (inf of eq. 4 over SS)".into(),
                points: xs(&|p| Some(p.ss_best.1)),
                style: Style::Dashed,
            },
        ],
        marks,
        y_range: None,
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
    }
}
