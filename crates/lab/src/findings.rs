//! The report's findings: at most ten lines at the top of the page, each
//! made from data the page itself shows further down: whether the closed
//! form reproduces the paper, this machine's costs beside the paper's, how
//! well the forecast covers this machine's measurements (per backend, with
//! its knife-edges), what to run for this machine's pair (advise's pick,
//! the best anchor, the real mechanisms' settings), and what was
//! disturbed. The same data goes to `findings.json`, which the browser
//! test reads beside the page. What does not live here: the sections
//! themselves (`report` and the modules it calls).

use std::fmt::Write as _;

use kicklab_model::{fmt_ns_sig, predict, sig, Cost, Params, Party, Profile};
use kicklab_report::html_escape;
use serde::Serialize;

use crate::advise::{advise, AdviseSpec};
use crate::forecast::{forecast, Judged, Verdict};
use crate::knobs::Mechanism;
use crate::{LabError, Silent};

/// Significant digits of every figure in the box.
const DIGITS: u32 = kicklab_model::SHORT_DIGITS;

/// The paper's section 3.1 figures for its Fig. 4 set-up: FP at W_P = 1
/// us, FC at W_P = 2 us (T, E in ns).
const PAPER_FP: (f64, f64) = (1105.0, 2202.5);
const PAPER_FC: (f64, f64) = (4400.0, 5700.0);

/// One line of the box.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// What it answers: `paper`, `costs`, `forecast`, `advice`,
    /// `disturbed`.
    pub topic: &'static str,
    /// The line, as the page prints it.
    pub text: String,
    /// The section it summarises (its anchor).
    pub section: String,
}

/// The closed form at the paper's two worked points.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PaperCheck {
    /// FP at W_P = 1 us: T, E [ns].
    pub fp_ns: (f64, f64),
    /// FC at W_P = 2 us: T, E [ns].
    pub fc_ns: (f64, f64),
    /// Whether all four are the paper's within 0.1%.
    pub reproduced: bool,
}

/// A backend's forecast against its validation here.
#[derive(Debug, Clone, Serialize)]
pub struct ForecastCheck {
    /// The backend (`futex`, `kvm tx`, ...).
    pub backend: String,
    /// Coverage, sharpness, central error, knife-edges.
    pub verdict: Verdict,
    /// W_P of the points the forecast calls knife-edges [ns].
    pub knife_edges_ns: Vec<f64>,
    /// Repetitions measured, and how many were disturbed.
    pub runs: usize,
    /// See `runs`.
    pub disturbed: usize,
}

/// advise for one pair.
#[derive(Debug, Clone, Serialize)]
pub struct AdviceCheck {
    /// Whose costs (`futex`, `kvm tx`, `the paper's`).
    pub costs: String,
    /// W_P, W_C [ns].
    pub w_p_ns: f64,
    /// See `w_p_ns`.
    pub w_c_ns: f64,
    /// The pick: strategy, T, E, p99 [ns].
    pub pick: (String, f64, f64, f64),
    /// The anchor (any family but adaptive, sleep, poll) first in
    /// advise's order, the same fields.
    pub anchor: Option<(String, f64, f64, f64)>,
    /// NAPI's best setting: its settings line, T, E, p99 [ns].
    pub napi: Option<(String, f64, f64, f64)>,
    /// Every mechanism's best setting (`advise --for all`).
    pub knobs: Vec<crate::advise::Knob>,
}

/// The section that follows the box: each real mechanism's best setting
/// for every pair advised on, with its setting as shipped beside it
/// (`kicklab advise --for all` gives the commands).
pub fn knobs_section(advice: &[AdviceCheck]) -> kicklab_report::Section {
    use kicklab_report::{Column, Table};
    let mut h = String::from(
        "<p>For this machine's pair (the costs the findings name), each mechanism's best setting by advise's rule \
         (the least CPU within 5% of the best T and under the 100 us p99 bound; where none keeps the bound, the \
         lowest p99), simulated with both parties waiting by it, beside its setting as shipped. kicklab changes \
         no setting; <code>docs/knobs.md</code> says what each mechanism does and where the mapping comes \
         from.</p>",
    );
    for a in advice {
        let mut t = Table::new(
            &format!(
                "W_P {} against W_C {} ({} costs): advise's pick {}",
                ns(a.w_p_ns),
                ns(a.w_c_ns),
                a.costs,
                a.pick.0
            ),
            vec![
                Column::text("mechanism", "mechanism"),
                Column::text("setting", "best setting"),
                Column::text("T", "T"),
                Column::text("E", "E"),
                Column::text("p99", "p99"),
                Column::text("shipped", "as shipped: T, E, p99"),
            ],
        );
        for k in &a.knobs {
            let (b, d) = (&k.best.predicted, &k.default.predicted);
            t.push(vec![
                k.mechanism.into(),
                k.best.settings.line().into(),
                ns(b.t_ns).into(),
                ns(b.e_ns).into(),
                ns(b.latency_p99_ns).into(),
                format!("{}, {}, {}", ns(d.t_ns), ns(d.e_ns), ns(d.latency_p99_ns)).into(),
            ]);
        }
        let _ = write!(
            h,
            "{}<p>Reproduce: <code>{}</code>.</p>",
            t.to_html(),
            kicklab_model::CommandLine::new("advise")
                .raw(
                    &Params {
                        w_p: Cost::Const(a.w_p_ns),
                        ..Params::default()
                    }
                    .flags(&[])
                )
                .arg(kicklab_model::Flag::For, "all")
                .arg_some(
                    kicklab_model::Flag::Profile,
                    (a.costs != "the paper's")
                        .then(|| format!("{}.json", a.costs.replace(' ', "-")))
                )
        );
    }
    kicklab_report::Section {
        id: "knobs".into(),
        heading: "What to run here, in the knobs you have".into(),
        html: h,
        figures: vec![],
        layout: kicklab_report::Layout::Open,
    }
}

/// Everything the box says, and its lines.
#[derive(Debug, Clone, Serialize)]
pub struct Findings {
    /// The box, in order.
    pub lines: Vec<Finding>,
    /// The data behind it.
    pub paper: PaperCheck,
    /// Per calibrated backend: N_P, N_C, S_P, S_C means [ns], S as the
    /// model takes it.
    pub costs: Vec<(String, [f64; 4])>,
    /// Per validated backend.
    pub forecasts: Vec<ForecastCheck>,
    /// Per pair advised on.
    pub advice: Vec<AdviceCheck>,
}

/// The closed form at the paper's worked points.
///
/// # Errors
///
/// None in practice (the paper's parameters are valid).
pub fn paper_check() -> Result<PaperCheck, LabError> {
    let at = |w_p: f64| -> Result<(f64, f64), LabError> {
        let p = Params {
            w_p: Cost::Const(w_p),
            ..Params::default()
        };
        let r = predict(&p, kicklab_model::WaitMode::Notify)?;
        Ok((r.rates.t_ns, r.rates.e_ns))
    };
    let (fp, fc) = (at(1000.0)?, at(2000.0)?);
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-3 * b;
    let reproduced = close(fp.0, PAPER_FP.0)
        && close(fp.1, PAPER_FP.1)
        && close(fc.0, PAPER_FC.0)
        && close(fc.1, PAPER_FC.1);
    Ok(PaperCheck {
        fp_ns: fp,
        fc_ns: fc,
        reproduced,
    })
}

/// The forecast of each point of a validation (W_P from the sweep, the
/// rest the paper's Fig. 4 set-up) judged against its repetitions.
///
/// # Errors
///
/// What the forecast refuses.
pub fn forecast_check(
    backend: &str,
    points: &[crate::validate::Point],
    profile: &Profile,
) -> Result<ForecastCheck, LabError> {
    let mut judged = Vec::new();
    let mut knife_edges_ns = Vec::new();
    let (mut runs, mut disturbed) = (0, 0);
    for p in points {
        let pair = Params {
            w_p: Cost::Const(p.x),
            ..Params::default()
        };
        let f = forecast(&pair, profile, 1)?;
        let t: Vec<f64> = p.reps.iter().map(|r| r.notify.rates.t_ns).collect();
        if t.is_empty() {
            continue;
        }
        runs += t.len();
        disturbed += p.disturbed_reps();
        if f.knife_edge {
            knife_edges_ns.push(p.x);
        }
        let j = Judged::of(&f, &t);
        judged.push((f, j));
    }
    Ok(ForecastCheck {
        backend: backend.to_string(),
        verdict: Verdict::of(&judged),
        knife_edges_ns,
        runs,
        disturbed,
    })
}

/// advise for the pair at `w_p_ns` (W_C and the rest the paper's Fig. 4
/// set-up) with `profile`'s costs, or the paper's where there is none.
///
/// # Errors
///
/// What advise refuses.
pub fn advice_check(
    costs: &str,
    profile: Option<&Profile>,
    w_p_ns: f64,
    seed: u64,
) -> Result<AdviceCheck, LabError> {
    let mut params = Params {
        w_p: Cost::Const(w_p_ns),
        ..Params::default()
    };
    let (idle_scale, nap) = match profile {
        Some(p) => {
            p.apply(&mut params, true);
            p.sim_costs()
        }
        None => ([None, None], [None, None]),
    };
    let spec = AdviseSpec {
        params,
        idle_scale,
        nap,
        latency_ns: kicklab_model::DEFAULT_LATENCY_NS,
        messages: 100_000,
        seed,
        exhaustive: false,
        mechanisms: crate::knobs::ALL.to_vec(),
    };
    let a = advise(&spec, &Silent)?;
    let four =
        |c: &crate::advise::Candidate| (c.strategy.clone(), c.t_ns, c.e_ns, c.latency_p99_ns);
    let anchor = a
        .alternatives
        .iter()
        .find(|c| {
            !matches!(
                c.mode,
                kicklab_model::WaitMode::Adaptive { .. }
                    | kicklab_model::WaitMode::Sleep { .. }
                    | kicklab_model::WaitMode::Poll
            )
        })
        .map(four);
    let napi = a
        .knobs
        .iter()
        .find(|k| k.mechanism == Mechanism::Napi.name())
        .map(|k| {
            (
                k.best.settings.line(),
                k.best.predicted.t_ns,
                k.best.predicted.e_ns,
                k.best.predicted.latency_p99_ns,
            )
        });
    Ok(AdviceCheck {
        costs: costs.to_string(),
        w_p_ns,
        w_c_ns: Params::default().w_c.mean_ns(),
        pick: four(&a.predicted),
        anchor,
        napi,
        knobs: a.knobs,
    })
}

/// The findings from the report's runs (`validated`: each validated
/// backend's name, profile and points): the paper's figures, each
/// backend's costs and forecast, and advise for this machine's pair (the
/// KVM guest's costs where measured, else futex's, else the paper's) at
/// W_P 0.5 us and 3 us.
///
/// # Errors
///
/// What the forecast or advise refuses.
pub fn of_runs(
    validated: &[(String, Profile, Vec<crate::validate::Point>)],
    seed: u64,
) -> Result<Findings, LabError> {
    let mut costs = Vec::new();
    let mut forecasts = Vec::new();
    for (backend, profile, points) in validated {
        if backend != "kvm rx" {
            // S as the model takes it (after V, a negative one as 0).
            costs.push((
                backend.clone(),
                [
                    profile.np.mean_ns,
                    profile.nc.mean_ns,
                    profile.start(Party::P).mean_ns.max(0.0),
                    profile.start(Party::C).mean_ns.max(0.0),
                ],
            ));
        }
        forecasts.push(forecast_check(backend, points, profile)?);
    }
    let pair = validated
        .iter()
        .find(|(b, _, _)| b == "kvm tx")
        .or_else(|| validated.first());
    let mut advice = Vec::new();
    for w_p in [500.0, 3000.0] {
        advice.push(match pair {
            Some((b, p, _)) => advice_check(b, Some(p), w_p, seed)?,
            None => advice_check("the paper's", None, w_p, seed)?,
        });
    }
    Ok(Findings::new(paper_check()?, costs, forecasts, advice))
}

fn ns(v: f64) -> String {
    fmt_ns_sig(v, DIGITS)
}

fn percent(v: f64) -> String {
    format!("{}%", sig(100.0 * v, 2))
}

impl Findings {
    /// The box's lines from its data.
    pub fn new(
        paper: PaperCheck,
        costs: Vec<(String, [f64; 4])>,
        forecasts: Vec<ForecastCheck>,
        advice: Vec<AdviceCheck>,
    ) -> Findings {
        let mut lines = Vec::new();
        lines.push(Finding {
            topic: "paper",
            text: format!(
                "The closed form {} the paper's worked figures (section 3.1): FP T {}, E {}; FC T {}, E {}.",
                if paper.reproduced { "reproduces" } else { "does not reproduce" },
                ns(paper.fp_ns.0),
                ns(paper.fp_ns.1),
                ns(paper.fc_ns.0),
                ns(paper.fc_ns.1),
            ),
            section: "regimes".into(),
        });
        if !costs.is_empty() {
            let d = Params::default();
            let paper: Vec<String> = [d.n_p, d.n_c, d.s_p, d.s_c]
                .iter()
                .map(|c| ns(c.mean_ns()))
                .collect();
            let mut text = String::from("Costs here (means), N_P / N_C / S_P / S_C:");
            for (backend, c) in &costs {
                let v: Vec<String> = c.iter().map(|&x| ns(x)).collect();
                let _ = write!(text, " {backend} {};", v.join(" / "));
            }
            let _ = write!(text, " the paper's KVM guest {}.", paper.join(" / "));
            lines.push(Finding {
                topic: "costs",
                text,
                section: "calibration".into(),
            });
        }
        for f in &forecasts {
            let v = &f.verdict;
            let edges = if f.knife_edges_ns.is_empty() {
                "no knife-edge".to_string()
            } else {
                let at: Vec<String> = f.knife_edges_ns.iter().map(|&x| ns(x)).collect();
                format!("knife-edges at W_P {}", at.join(", "))
            };
            lines.push(Finding {
                topic: "forecast",
                text: format!(
                    "Forecast, {}: its band holds {} of {} measured runs; central T off by a median {}; {edges}.",
                    f.backend,
                    percent(v.coverage),
                    f.runs,
                    percent(v.median_err_t),
                ),
                section: format!("validate-{}", f.backend.replace(' ', "-")),
            });
        }
        for a in &advice {
            let (s, t, e, p99) = &a.pick;
            let mut text = format!(
                "To run, {} costs, W_P {} against W_C {}, p99 within 100us: {s} (T {}, E {}, p99 {})",
                a.costs,
                ns(a.w_p_ns),
                ns(a.w_c_ns),
                ns(*t),
                ns(*e),
                ns(*p99)
            );
            if let Some((s, t, e, p99)) = &a.anchor {
                let _ = write!(
                    text,
                    "; best anchor {s} (T {}, E {}, p99 {})",
                    ns(*t),
                    ns(*e),
                    ns(*p99)
                );
            }
            if let Some((line, t, e, p99)) = &a.napi {
                let _ = write!(
                    text,
                    "; in NAPI's knobs {line} (T {}, E {}, p99 {})",
                    ns(*t),
                    ns(*e),
                    ns(*p99)
                );
            }
            text.push('.');
            lines.push(Finding {
                topic: "advice",
                text,
                section: "knobs".into(),
            });
        }
        let runs: usize = forecasts.iter().map(|f| f.runs).sum();
        if runs > 0 {
            let parts: Vec<String> = forecasts
                .iter()
                .map(|f| format!("{} of {} {} runs", f.disturbed, f.runs, f.backend))
                .collect();
            lines.push(Finding {
                topic: "disturbed",
                text: format!(
                    "Disturbed (flagged in their tables, kept out of the errors where others were clean): {}.",
                    parts.join(", ")
                ),
                section: "calibration".into(),
            });
        }
        lines.truncate(10);
        Findings {
            lines,
            paper,
            costs,
            forecasts,
            advice,
        }
    }

    /// The box as HTML.
    pub fn html(&self) -> String {
        let mut h =
            String::from("<div id=\"findings\" class=\"kl-findings\"><h2>Findings</h2><ul>");
        for f in &self.lines {
            let _ = write!(
                h,
                "<li data-topic=\"{}\">{} <a href=\"#{}\">more</a></li>",
                f.topic,
                html_escape(&f.text),
                html_escape(&f.section)
            );
        }
        h.push_str("</ul></div>");
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_closed_form_reproduces_the_papers_worked_figures() {
        let p = paper_check().unwrap();
        assert!(p.reproduced, "{p:?}");
        let f = Findings::new(p, vec![], vec![], vec![]);
        assert_eq!(f.lines.len(), 1);
        assert_eq!(
            f.lines[0].text,
            "The closed form reproduces the paper's worked figures (section 3.1): FP T 1.11us, E 2.2us; FC T 4.4us, E 5.7us."
        );
    }

    #[test]
    fn a_forecast_line_gives_coverage_error_and_knife_edges_in_three_digits() {
        let check = ForecastCheck {
            backend: "kvm tx".into(),
            verdict: Verdict {
                coverage: 0.6667,
                sharpness: Some(0.2),
                width: 0.2,
                knife_edges: 0,
                median_err_t: 0.0614,
                wide_points: 1,
                knife_edges_missed: 0,
                points: 15,
            },
            knife_edges_ns: vec![1200.0, 1433.3],
            runs: 45,
            disturbed: 3,
        };
        let f = Findings::new(paper_check().unwrap(), vec![], vec![check], vec![]);
        assert_eq!(
            f.lines[1].text,
            "Forecast, kvm tx: its band holds 67% of 45 measured runs; central T off by a median 6.1%; \
             knife-edges at W_P 1.2us, 1.43us."
        );
        assert_eq!(f.lines[1].section, "validate-kvm-tx");
        assert_eq!(
            f.lines[2].text,
            "Disturbed (flagged in their tables, kept out of the errors where others were clean): 3 of 45 kvm tx runs."
        );
    }

    #[test]
    fn advice_on_the_papers_costs_names_a_pick_an_anchor_and_napis_knobs() {
        let a = advice_check("the paper's", None, 2000.0, 1).unwrap();
        assert!(a.anchor.is_some() && a.napi.is_some(), "{a:?}");
        let f = Findings::new(paper_check().unwrap(), vec![], vec![], vec![a]);
        let text = &f.lines[1].text;
        assert!(text.contains("napi_defer_hard_irqs="), "{text}");
        assert!(f.html().contains("data-topic=\"advice\""));
        let section = knobs_section(&f.advice);
        assert!(
            section.html.contains("napi_defer_hard_irqs="),
            "{}",
            section.html
        );
        assert!(section
            .html
            .contains("kicklab advise --wp 2us --for all</code>"));
        assert_eq!(f.advice[0].knobs.len(), crate::knobs::ALL.len());
    }
}
