//! Sweeps and maps for the Python half: whole (`sweep_csv`) or in chunks
//! (`sweep_chunk_csv`, `map_chunk_csv`, for dask), their lengths and
//! values, the CSV the binary writes. What does not live here: one point
//! (`lib.rs`), arrays of the closed forms (`arrays`).

use kicklab_lab::Silent;
use kicklab_model::{Cost, Param, Params, WaitMode};
use kicklab_sim::{SimError, SweepPoint, Vary};
use pyo3::prelude::*;
use rayon::prelude::*;

use crate::errors::{bad, lab_err, sim_err, Res};
use crate::inputs::{wait_mode, Args, Pair, ProfileText};
use crate::interrupt::interruptible;

pub(crate) fn parse_vary(vary: &str) -> Res<Vary> {
    parse_range("vary", vary)
}

/// A `NAME=FROM..TO:POINTS` keyword (`vary`, `x`, `y`, `z`), as the
/// binary's `--vary` takes it: a count (L, k) swept over more points than
/// whole numbers in its range is refused (its rows would repeat).
pub(crate) fn parse_range(keyword: &str, s: &str) -> Res<Vary> {
    let v = Vary::parse(s).map_err(|e| bad(format!("{keyword}: {e}")))?;
    if let Some(values) = v.distinct_values().filter(|&n| f64::from(v.points) > n) {
        return Err(bad(format!(
            "{keyword}: {} takes whole numbers: {} points over {}..{} would repeat values; use at most {values}",
            v.param.name(),
            v.points,
            v.from,
            v.to
        )));
    }
    Ok(v)
}

/// Refuses a keyword for a parameter that `what` sets itself (`by`):
/// given, it would be ignored without a word (the binary refuses the flag
/// the same way). A distribution for a swept cost is not ignored (the
/// sweep sets its mean and keeps its shape), except by `control`, whose
/// workloads set W_P whatever is given.
pub(crate) fn not_given(params: &Args, param: Param, what: &str, by: &str) -> Res<()> {
    let name = param.name();
    let Some(given) = params.get(name) else {
        return Ok(());
    };
    let shape_kept = what != "control"
        && !param.is_count()
        && Cost::parse(given).is_ok_and(|c| !matches!(c, Cost::Const(_)));
    if !shape_kept {
        return Err(bad(format!(
            "{name}: {what} sets {} itself ({by}); leave {name}= out",
            param.symbol()
        )));
    }
    Ok(())
}

/// The inputs of a sweep, checked as the library checks them (`kicklab sweep`
/// also refuses a count swept over more points than it has values).
pub(crate) fn sweep_inputs(
    params: &Args,
    vary: &str,
    mode: &str,
    messages: u64,
    profile: ProfileText,
) -> Res<(Params, Vary, WaitMode)> {
    let pair = Pair::parse(params, profile)?;
    let vary = parse_vary(vary)?;
    not_given(params, vary.param, "sweep", "vary")?;
    let params = pair.params()?;
    let mode = wait_mode("mode", mode)?;
    if messages == 0 {
        return Err(bad("messages: need at least 1 message per point"));
    }
    Ok((params, vary, mode))
}

/// `kicklab sweep`'s sweep.csv, as text: `kicklab_sim::sweep` and
/// `kicklab_report::sweep_csv`, as the binary calls them.
#[pyfunction]
#[pyo3(signature = (params, vary, mode, messages, seed, profile=None))]
pub(crate) fn sweep_csv(
    py: Python<'_>,
    params: Args,
    vary: &str,
    mode: &str,
    messages: u64,
    seed: u64,
    profile: ProfileText,
) -> PyResult<String> {
    let (params, vary, mode) = sweep_inputs(&params, vary, mode, messages, profile)?;
    let points = interruptible(py, || {
        kicklab_sim::sweep(&params, &vary, mode, messages, seed, &|| {})
    })?
    .map_err(|e| sim_err(&e))?;
    Ok(kicklab_report::sweep_csv(&points, &vary))
}

/// The number of points of a sweep (`vary`'s POINTS), checked.
#[pyfunction]
pub(crate) fn sweep_len(vary: &str) -> PyResult<u32> {
    Ok(parse_vary(vary)?.points)
}

/// Checks that the chunk `start..stop` lies within the `len` points of a
/// `what` (sweep, map).
pub(crate) fn chunk_within(start: usize, stop: usize, len: usize, what: &str) -> Res<()> {
    if start > stop || stop > len {
        return Err(bad(format!(
            "chunk {start}..{stop} is not within the {what}'s {len} points"
        )));
    }
    Ok(())
}

/// Points `start..stop` of a sweep as CSV rows (with the header line when
/// `header`): what [`sweep_csv`] has on those rows, computed point by
/// point as `kicklab_sim::sweep` computes each (a chunk of a sweep
/// spread over workers). Every point of the sweep is validated first, as
/// the whole sweep does.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (params, vary, mode, messages, seed, start, stop, header, profile=None))]
pub(crate) fn sweep_chunk_csv(
    py: Python<'_>,
    params: Args,
    vary: &str,
    mode: &str,
    messages: u64,
    seed: u64,
    start: usize,
    stop: usize,
    header: bool,
    profile: ProfileText,
) -> PyResult<String> {
    let (base, vary, mode) = sweep_inputs(&params, vary, mode, messages, profile)?;
    let points = kicklab_sim::sweep_points(&base, &vary).map_err(|e| sim_err(&e))?;
    kicklab_sim::check_sweep_budget(&base, &vary, messages).map_err(|e| sim_err(&e))?;
    // Every point, as its runs would refuse it before simulating: a chunk
    // on a cluster's worker must not be the first to find it.
    for (_, p) in &points {
        for m in [mode, WaitMode::Poll] {
            kicklab_sim::check_point(p, m, messages).map_err(|e| sim_err(&e))?;
        }
    }
    chunk_within(start, stop, points.len(), "sweep")?;
    let run = |&(x, params): &(f64, Params)| -> Result<SweepPoint, SimError> {
        kicklab_sim::sweep_point(x, params, mode, messages, seed)
    };
    let chunk = interruptible(py, || {
        points[start..stop]
            .par_iter()
            .map(run)
            .collect::<Result<Vec<_>, _>>()
    })?
    .map_err(|e| sim_err(&e))?;
    let csv = kicklab_report::sweep_csv(&chunk, &vary);
    Ok(if header {
        csv
    } else {
        csv.split_once('\n')
            .map_or(String::new(), |(_, rows)| rows.to_string())
    })
}

/// Points `start..stop` of `kicklab map`'s grid as map.csv rows (with the
/// header line when `header`; all of map.csv for `0..map_len`): each point
/// computed as `kicklab_lab::map::map` computes it, so chunks spread over
/// workers make, in order, the whole map's CSV. `messages` 0: the model
/// only. Every point of the grid is validated first.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (params, x, y, mode, messages, seed, start, stop, header, profile=None))]
pub(crate) fn map_chunk_csv(
    py: Python<'_>,
    params: Args,
    x: &str,
    y: &str,
    mode: &str,
    messages: u64,
    seed: u64,
    start: usize,
    stop: usize,
    header: bool,
    profile: ProfileText,
) -> PyResult<String> {
    let (x, y) = (parse_range("x", x)?, parse_range("y", y)?);
    let base = Pair::parse(&params, profile)?.params()?;
    not_given(&params, x.param, "map", "x")?;
    not_given(&params, y.param, "map", "y")?;
    if x.param == y.param {
        return Err(bad("y: vary another parameter than x").into());
    }
    let spec = kicklab_lab::map::MapSpec {
        base,
        x,
        y,
        mode: wait_mode("mode", mode)?,
        sim_messages: (messages > 0).then_some(messages),
        seed,
    };
    let grid = kicklab_lab::map::grid(&spec).map_err(|e| lab_err(&e))?;
    if let Some(messages) = spec.sim_messages {
        // As the sweep's: every point checked before any runs.
        for (_, _, p) in &grid {
            kicklab_sim::check_point(p, spec.mode, messages).map_err(|e| sim_err(&e))?;
        }
    }
    chunk_within(start, stop, grid.len(), "map")?;
    let points = interruptible(py, || {
        kicklab_lab::map::map_points(&spec, &grid[start..stop], &Silent)
    })?
    .map_err(|e| lab_err(&e))?;
    let csv = kicklab_lab::map::csv(&points, &spec);
    Ok(if header {
        csv
    } else {
        csv.split_once('\n')
            .map_or(String::new(), |(_, rows)| rows.to_string())
    })
}

/// A `NAME=FROM..TO:POINTS` range's parameter name, its values (ns, or
/// counts) in the order sweeps visit them, and whether it is a count.
#[pyfunction]
#[pyo3(signature = (vary, keyword="vary"))]
pub(crate) fn vary_values(vary: &str, keyword: &str) -> PyResult<(String, Vec<f64>, bool)> {
    let v = parse_range(keyword, vary)?;
    Ok((v.param.name().to_string(), v.values(), v.param.is_count()))
}

/// The number of points of a map over `x` and `y` (checked).
#[pyfunction]
pub(crate) fn map_len(x: &str, y: &str) -> PyResult<u64> {
    let (x, y) = (parse_range("x", x)?, parse_range("y", y)?);
    Ok(u64::from(x.points) * u64::from(y.points))
}
