//! Regime maps: the regime, T and E over a grid of two parameters (W_P x
//! W_C, say), the model's closed forms beside the simulator's T, as 2-D
//! charts and CSV. What does not live here: the closed forms, the
//! simulator, drawing (`kicklab-report`'s [`Heatmap`]).

use kicklab_model::{predict, Params, Regime, WaitMode};
use kicklab_report::{html_escape, Heatmap, MapCell, Section};
use kicklab_sim::{simulate, SimConfig, Vary};
use rayon::prelude::*;
use serde::Serialize;

use crate::{Input, LabError, Progress};

/// What a map covers.
#[derive(Debug, Clone)]
pub struct MapSpec {
    /// The pair (the two varied parameters are set per point).
    pub base: Params,
    /// Columns.
    pub x: Vary,
    /// Rows.
    pub y: Vary,
    /// How both parties wait.
    pub mode: WaitMode,
    /// Messages simulated per point; `None`: the model only.
    pub sim_messages: Option<u64>,
    /// Seed.
    pub seed: u64,
}

/// One point.
#[derive(Debug, Clone, Serialize)]
pub struct MapPoint {
    /// The column's value (ns, or a count).
    pub x: f64,
    /// The row's value.
    pub y: f64,
    /// The model's regime (`None` where there is no closed form).
    pub regime: Option<Regime>,
    /// The model's T and E [ns].
    pub t_model_ns: Option<f64>,
    /// The model's E [ns].
    pub e_model_ns: Option<f64>,
    /// The simulator's T [ns], if run.
    pub t_sim_ns: Option<f64>,
    /// The simulator's E [ns], if run.
    pub e_sim_ns: Option<f64>,
}

/// The most points a map takes (a 1000 x 1000 grid).
pub const MAX_POINTS: u64 = 1_000_000;

/// The most points a map's page draws (a 300 x 300 grid, about 50 MB of
/// SVG and under a second): a page of a 1000 x 1000 grid was 270 MB and
/// took over a gigabyte of memory to write. [`MAX_POINTS`] bounds the
/// computation alone (a map's data, as Python's `kicklab.map` returns it).
pub const MAX_PAGE_POINTS: u64 = 90_000;

/// Fails where `spec`'s grid has more points than a page draws
/// ([`MAX_PAGE_POINTS`]): checked before a map meant for a page runs.
///
/// # Errors
///
/// [`LabError::Input`] naming the axes.
pub fn check_page(spec: &MapSpec) -> Result<(), LabError> {
    let n = u64::from(spec.x.points) * u64::from(spec.y.points);
    if n > MAX_PAGE_POINTS {
        return Err(LabError::input(
            Input::Axes,
            format!(
                "{} x {} = {n} points: a map's page draws at most {MAX_PAGE_POINTS} (300 x 300, \
                 about 50 MB); Python's kicklab.map returns the data of up to {MAX_POINTS}",
                spec.x.points, spec.y.points
            ),
        ));
    }
    Ok(())
}

/// One line on the computed map: its points and how many fell in each
/// regime (or that `mode` has no closed form and the maps are the
/// simulator's).
#[must_use]
pub fn summary(points: &[MapPoint], mode: kicklab_model::WaitMode) -> String {
    if points.iter().all(|p| p.regime.is_none()) {
        return format!(
            "{} points; no regimes ({mode} has no closed form: the maps are the simulator's T)",
            points.len()
        );
    }
    let mut count = std::collections::BTreeMap::new();
    for p in points {
        *count
            .entry(p.regime.map_or("-", |r| r.name()))
            .or_insert(0u32) += 1;
    }
    format!("{} points; regimes: {count:?}", points.len())
}

/// Computes every point, in parallel.
///
/// # Errors
///
/// Too many points, the two axes on the same parameter, or a point whose
/// parameters make no pair.
pub fn map(spec: &MapSpec, progress: &dyn Progress) -> Result<Vec<MapPoint>, LabError> {
    let grid = grid(spec)?;
    progress.start("map", grid.len() as u64);
    let out = map_points(spec, &grid, progress);
    progress.finish();
    out
}

/// The map's grid, row by row (`y` outer, `x` inner: the order of
/// [`map`]'s points and of the CSV), each point's parameters checked.
///
/// # Errors
///
/// As [`map`].
pub fn grid(spec: &MapSpec) -> Result<Vec<(f64, f64, Params)>, LabError> {
    let n = u64::from(spec.x.points) * u64::from(spec.y.points);
    if n > MAX_POINTS {
        return Err(LabError::input(
            Input::Axes,
            format!(
                "{} x {} = {n} points: at most {MAX_POINTS} in a map",
                spec.x.points, spec.y.points
            ),
        ));
    }
    if spec.x.param == spec.y.param {
        return Err(LabError::input(
            Input::Axes,
            "the two axes vary the same parameter",
        ));
    }
    if spec.sim_messages.is_none() && kicklab_model::classify(&spec.base, spec.mode).is_none() {
        // The model only, and the model has no closed form for the mode:
        // a map with nothing in it.
        return Err(LabError::input(
            Input::Messages,
            format!(
                "0 asks for the model only, and it has no closed form for {} (notify, poll and \
                 spin:0 have one): simulate some messages",
                spec.mode
            ),
        ));
    }
    let grid: Vec<(f64, f64, Params)> = spec
        .y
        .values()
        .into_iter()
        .flat_map(|y| spec.x.values().into_iter().map(move |x| (x, y)))
        .map(|(x, y)| (x, y, spec.y.apply(&spec.x.apply(&spec.base, x), y)))
        .collect();
    if let Some(messages) = spec.sim_messages {
        // A run a point, each after its own warm-up: hours are refused.
        let warmups: u128 = grid
            .iter()
            .map(|(_, _, p)| u128::from(kicklab_sim::default_warmup(messages, p.len)))
            .sum();
        let runs = grid.len() as u64;
        let warmup = u64::try_from(warmups.div_ceil(u128::from(runs.max(1)))).unwrap_or(u64::MAX);
        let len = grid
            .iter()
            .map(|(_, _, p)| p.len)
            .max()
            .unwrap_or(spec.base.len);
        crate::study_within_budget("map", runs, messages, warmup, len)?;
    }
    for (x, y, p) in &grid {
        let at = || format!("at {}, {}", spec.x.show(*x), spec.y.show(*y));
        p.validate()
            .map_err(|e| LabError::input(Input::Axes, format!("{}: {e}", at())))?;
        if spec.sim_messages.is_some() && p.len > kicklab_sim::MAX_LEN {
            return Err(LabError::input(
                Input::Axes,
                format!(
                    "{}: the simulator holds at most {} slots (it keeps each slot's publish time)",
                    at(),
                    kicklab_sim::MAX_LEN
                ),
            ));
        }
    }
    Ok(grid)
}

/// The points of `grid` (all of [`grid`]'s, or a contiguous part of them:
/// a chunk of a map spread over workers gives, point for point, what the
/// whole map gives there), in parallel; `progress` steps once per point.
///
/// # Errors
///
/// A point the simulator refuses.
pub fn map_points(
    spec: &MapSpec,
    grid: &[(f64, f64, Params)],
    progress: &dyn Progress,
) -> Result<Vec<MapPoint>, LabError> {
    grid.par_iter()
        .map(|&(x, y, p)| {
            let m = predict(&p, spec.mode).ok();
            let sim = match spec.sim_messages {
                Some(messages) => Some(simulate(&SimConfig {
                    seed: spec.seed,
                    latency: false,
                    ..SimConfig::new(p, spec.mode, messages)
                })?),
                None => None,
            };
            progress.step();
            Ok(MapPoint {
                x,
                y,
                regime: m.as_ref().map(|m| m.regime),
                t_model_ns: m.as_ref().map(|m| m.rates.t_ns),
                e_model_ns: m.as_ref().map(|m| m.rates.e_ns),
                t_sim_ns: sim.as_ref().map(|s| s.rates.t_ns),
                e_sim_ns: sim.as_ref().map(|s| s.rates.e_ns),
            })
        })
        .collect::<Result<Vec<_>, LabError>>()
}

fn axis(v: &Vary) -> (Vec<f64>, String) {
    let scale = if v.param.is_count() { 1.0 } else { 1e-3 };
    (
        v.values().into_iter().map(|x| x * scale).collect(),
        if v.param.is_count() {
            v.param.name().to_string()
        } else {
            format!("{} [us]", v.param.symbol())
        },
    )
}

/// The maps: the model's regime, the model's T, and (if simulated) the
/// simulator's T; a map with no value anywhere (the model's, for a
/// strategy with no closed form) is left out.
pub fn heatmaps(points: &[MapPoint], spec: &MapSpec) -> Vec<(String, Heatmap)> {
    let (xs, x_label) = axis(&spec.x);
    let (ys, y_label) = axis(&spec.y);
    let nx = xs.len();
    let rows = |f: &dyn Fn(&MapPoint) -> MapCell| -> Vec<Vec<MapCell>> {
        points
            .chunks(nx)
            .map(|r| r.iter().map(f).collect())
            .collect()
    };
    let base = Heatmap {
        x_label,
        y_label,
        xs,
        ys,
        unit: "us".into(),
        ..Heatmap::default()
    };
    let mut out = vec![
        (
            "map-regime".to_string(),
            Heatmap {
                title: format!("Regime ({})", spec.mode),
                cells: rows(&|p| {
                    p.regime.map_or(MapCell::Empty, |r| {
                        MapCell::Category(Regime::ALL.iter().position(|a| *a == r).unwrap_or(0))
                    })
                }),
                categories: Regime::ALL.iter().map(|r| r.name().to_string()).collect(),
                ..base.clone()
            },
        ),
        (
            "map-T-model".to_string(),
            Heatmap {
                title: "T, model".into(),
                cells: rows(&|p| {
                    p.t_model_ns
                        .map_or(MapCell::Empty, |t| MapCell::Value(t / 1e3))
                }),
                ..base.clone()
            },
        ),
    ];
    if spec.sim_messages.is_some() {
        out.push((
            "map-T-sim".to_string(),
            Heatmap {
                title: "T, simulator".into(),
                cells: rows(&|p| {
                    p.t_sim_ns
                        .map_or(MapCell::Empty, |t| MapCell::Value(t / 1e3))
                }),
                ..base
            },
        ));
    }
    out.retain(|(_, m)| {
        m.cells
            .iter()
            .flatten()
            .any(|c| !matches!(c, MapCell::Empty))
    });
    out
}

/// The map as CSV, a row per point.
pub fn csv(points: &[MapPoint], spec: &MapSpec) -> String {
    let mut s = format!(
        "{},{},regime,T_model_ns,E_model_ns,T_sim_ns,E_sim_ns\n",
        spec.x.param.name(),
        spec.y.param.name()
    );
    let o = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
    for p in points {
        s.push_str(&format!(
            "{},{},{},{},{},{},{}\n",
            p.x,
            p.y,
            p.regime.map_or("", |r| r.name()),
            o(p.t_model_ns),
            o(p.e_model_ns),
            o(p.t_sim_ns),
            o(p.e_sim_ns)
        ));
    }
    s
}

/// The report's section.
///
/// # Errors
///
/// A map that cannot be drawn.
pub fn section(points: &[MapPoint], spec: &MapSpec, cmd: &str) -> Result<Section, LabError> {
    let mut s = Section::new(
        "map",
        &format!(
            "Regime map: {} x {}",
            spec.x.param.symbol(),
            spec.y.param.symbol()
        ),
    );
    // What this map shows, from its points: the regimes present, and how
    // far the simulator strays from the closed forms.
    let present: Vec<&str> = Regime::ALL
        .iter()
        .filter(|r| points.iter().any(|p| p.regime == Some(**r)))
        .map(|r| r.name())
        .collect();
    // The largest relative difference of the simulator's T from the
    // closed form's over the cells that have both.
    let worst = points
        .iter()
        .filter_map(|p| Some((p.t_sim_ns? / p.t_model_ns? - 1.0).abs()))
        .filter(|d| d.is_finite())
        .fold(None, |m: Option<f64>, d| Some(m.map_or(d, |m| m.max(d))));
    let sim = worst.map_or(String::new(), |d| {
        if d == 0.0 {
            " The simulator's T equals the closed form's at every cell, so the two T maps look alike.".into()
        } else if d <= 0.01 {
            format!(
                " The simulator's T is within {:.2}% of the closed form's at every cell, so the two T maps look alike.",
                d * 100.0
            )
        } else {
            format!(
                " The simulator's T differs from the closed form's by up to {:.1}% (the closed form takes the costs' \
                 means and one operating point).",
                d * 100.0
            )
        }
    });
    let regimes = if present.is_empty() {
        format!(
            "{} has no closed form: the map is the simulator's.",
            html_escape(&spec.mode.to_string())
        )
    } else {
        format!("Regimes on this map: {}.", present.join(", "))
    };
    let wp_by_wc =
        spec.x.param == kicklab_model::Param::Wp && spec.y.param == kicklab_model::Param::Wc;
    let diagonal = if wp_by_wc && present.iter().any(|r| ["FP", "FC"].contains(r)) {
        " The diagonal W_P = W_C separates FP (above it, W_C &gt; W_P: the producer is faster and the consumer sets the \
         pace) from FC (below it)."
    } else {
        ""
    };
    let start_ups = if spec.mode == WaitMode::Notify
        && spec.base.len > 4
        && !present.is_empty()
        && !present.iter().any(|r| ["SCS", "SPS", "SS"].contains(r))
    {
        format!(" No start-up outlasts what the queue holds on this grid, so SCS, SPS and SS do not appear; a short queue \
         brings start-ups in (<code>{}</code> has SPS and SS).", kicklab_model::CommandLine::new("map").arg(kicklab_model::Param::Len, 4))
    } else {
        String::new()
    };
    s.html = format!(
        "<p>The regime and T over a grid of {} and {} (the other parameters as given; kicklab's defaults are the \
         Fig. 4 costs), the closed forms beside the simulator; hover a cell for its values. \
         {regimes}{diagonal}{start_ups}{sim}</p>\
         <p>Reproduce: <code>{}</code>. Data: <a href=\"map.csv\">map.csv</a>.</p>",
        spec.x.param.symbol(),
        spec.y.param.symbol(),
        html_escape(cmd)
    );
    for (stem, m) in heatmaps(points, spec) {
        let caption = m.title.clone();
        s.figures.push((stem, m.to_svg(720, 560)?, caption));
    }
    Ok(s)
}
