//! `kicklab._kicklab`: the Rust half of the `kicklab` Python package.
//!
//! Thin, like the command line: every function parses its inputs the way
//! the `kicklab` binary does (the same `Cost::parse`, `WaitMode::parse`,
//! `Vary::parse`), calls the library crates, and hands back what the
//! binary prints (the same JSON objects, the same CSV text), so that the
//! Python package and the command line agree to the last bit. The Python
//! half (`kicklab/__init__.py`) turns JSON into dicts and CSV into
//! DataFrames. Parameters arrive as strings (numbers already written as
//! nanoseconds by the Python half); input errors leave as `ValueError`s
//! naming the keyword argument, as the binary's name the flag.
//!
//! Long work runs with the GIL released.

mod arrays;
mod errors;
mod inputs;
mod interrupt;
mod sweeps;

use std::time::Duration;

use kicklab_lab::{LabError, Silent};
use kicklab_model::{parse_duration_ns, predict, Param, WaitMode};
use kicklab_sim::{default_warmup, SimConfig, Start};
use pyo3::prelude::*;
use serde_json::json;

use arrays::model_arrays;
use errors::{bad, invalid, lab_err, model_err, testbed_err, Fail, Res};
use inputs::{
    duration_ns, latency_ns, model_mode, text, to_value, wait_mode, Args, Pair, ProfileText,
};
use interrupt::interruptible;
use sweeps::{
    map_chunk_csv, map_len, not_given, sweep_chunk_csv, sweep_csv, sweep_len, vary_values,
};

/// `kicklab model --json`: the JSON object's text.
#[pyfunction]
#[pyo3(signature = (params, mode, profile=None))]
fn model_json(params: Args, mode: &str, profile: ProfileText) -> PyResult<String> {
    let pair = Pair::parse(&params, profile)?;
    let m = model_mode(mode)?;
    let params = pair.params_for(false, m == WaitMode::Notify)?;
    let p = predict(&params, m).map_err(|e| model_err(&e))?;
    let mut v = kicklab_lab::rates_text::prediction_json(&p);
    v["mode"] = json!(m.to_string());
    v["params"] = to_value(&params)?;
    // As the binary: with a profile, the FC or FP point with the batch
    // race drawn (`docs/model.md`, "The batch race").
    if let Some(profile) = &pair.profile {
        if let Some(r) = profile.race_at(&params, m).map_err(|e| model_err(&e))? {
            v["race"] = to_value(&r)?;
        }
    }
    Ok(text(&v)?)
}

/// `kicklab sim --json`: the JSON object's text and the warnings the
/// binary prints on stderr.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (params, mode, mode_p, mode_c, latency, messages, warmup, seed, record_latency, start, profile=None))]
fn sim_json(
    py: Python<'_>,
    params: Args,
    mode: &str,
    mode_p: Option<&str>,
    mode_c: Option<&str>,
    latency: Option<&str>,
    messages: u64,
    warmup: Option<u64>,
    seed: u64,
    record_latency: bool,
    start: &str,
    profile: ProfileText,
) -> PyResult<(String, Vec<String>)> {
    let pair = Pair::parse(&params, profile)?;
    let mode = wait_mode("mode", mode)?;
    let mode_p = mode_p.map(|m| wait_mode("mode_p", m)).transpose()?;
    let mode_c = mode_c.map(|m| wait_mode("mode_c", m)).transpose()?;
    let latency_text = latency;
    let latency = latency.map(latency_ns).transpose()?;
    // With a profile, the simulator gets the measured spread of N and S.
    let notify =
        mode_p.unwrap_or(mode) == WaitMode::Notify && mode_c.unwrap_or(mode) == WaitMode::Notify;
    let params = pair.params_for(true, notify)?;
    let start = match start {
        "empty" => Start::Empty,
        "full" => Start::Full,
        other => {
            return Err(invalid("start", other, "[possible values: empty, full]").into());
        }
    };
    // Explicit, so that `mode_p`/`mode_c` name the bound adaptive keeps (as the CLI).
    let latency = latency.unwrap_or(kicklab_model::DEFAULT_LATENCY_NS);
    let bound = |m: WaitMode| m.with_latency(Some(latency));
    let (mode_p, mode_c) = (bound(mode_p.unwrap_or(mode)), bound(mode_c.unwrap_or(mode)));
    let (idle_scale, nap) = pair.sim_costs();
    let cfg = SimConfig {
        params,
        mode_p,
        mode_c,
        messages,
        warmup: warmup.unwrap_or_else(|| default_warmup(messages, params.len)),
        seed,
        latency: record_latency,
        start,
        // With a profile, each start-up scales with the sleeper's idle
        // time on the profile's idle curve.
        // ... and each nap wakes as the profile's naps did.
        idle_scale,
        nap,
        combine: kicklab_sim::Combine::default(),
    };
    // The command line's own run (its JSON, its window warnings, a
    // warm-up named as such), and its warning where adaptive missed its
    // bound.
    let out =
        interruptible(py, || kicklab_lab::sim_command::run(&cfg))?.map_err(|e| lab_err(&e))?;
    let mut warnings = out.warnings;
    let written_bare = latency_text.is_some_and(|l| !l.chars().any(char::is_alphabetic));
    warnings.extend(kicklab_lab::disturbance::latency_bound_missed(
        [cfg.mode_p, cfg.mode_c],
        out.result.rates.latency_ns.as_ref(),
        written_bare,
    ));
    Ok((text(&out.json)?, warnings))
}

/// `kicklab advise --json`: the JSON object's text.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (params, latency, messages, seed, exhaustive, profile=None, mechanisms="all"))]
fn advise_json(
    py: Python<'_>,
    params: Args,
    latency: &str,
    messages: u64,
    seed: u64,
    exhaustive: bool,
    profile: ProfileText,
    mechanisms: &str,
) -> PyResult<String> {
    let mechanisms = kicklab_lab::knobs::Mechanism::parse(mechanisms)
        .map_err(|e| invalid("mechanisms", mechanisms, e))?
        .0;
    let pair = Pair::parse(&params, profile)?;
    let params = pair.params_with(true)?;
    if pair.profile.is_some() {
        if let Some(why) = kicklab_lab::advise::ring_past_search(&pair.params()?, &params) {
            return Err(bad(format!("profile: {why}")).into());
        }
    }
    let (idle_scale, nap) = pair.sim_costs();
    let spec = kicklab_lab::advise::AdviseSpec {
        params,
        idle_scale,
        nap,
        latency_ns: latency_ns(latency)?,
        messages,
        seed,
        exhaustive,
        mechanisms,
    };
    let advice = interruptible(py, || kicklab_lab::advise::advise(&spec, &Silent))?
        .map_err(|e| lab_err(&e))?;
    Ok(text(&to_value(&advice)?)?)
}

/// Parses `FROM..TO` (W_P's range of the control study over `points`),
/// as the binary: one value for one point, two for more.
fn w_p_range(s: &str, points: u32) -> Res<(f64, f64)> {
    let (a, b) = kicklab_model::split_range(s).map_err(|e| invalid("range", s, e))?;
    let d = |x: &str| parse_duration_ns(x).map_err(|e| invalid("range", s, e));
    let (a, b) = (d(a)?, d(b)?);
    if a <= 0.0 || b < a {
        return Err(invalid("range", s, "need 0 < FROM <= TO"));
    }
    if points == 1 && a != b {
        return Err(invalid("range", s, "one point takes one W_P (FROM..FROM)"));
    }
    if points > 1 && a == b {
        return Err(invalid(
            "range",
            s,
            format!("FROM == TO is one W_P: {points} points would repeat it (use points=1)"),
        ));
    }
    Ok((a, b))
}

/// `kicklab control`: control.csv as text, and whether every target held.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (params, range, points, workloads, messages, latency, seed, profile=None))]
fn control_csv(
    py: Python<'_>,
    params: Args,
    range: &str,
    points: u32,
    workloads: Vec<String>,
    messages: u64,
    latency: &str,
    seed: u64,
    profile: ProfileText,
) -> PyResult<(String, bool)> {
    use kicklab_lab::control::{control_study, csv, ControlSpec, Workload};
    let pair = Pair::parse(&params, profile)?;
    not_given(&params, Param::Wp, "control", "range")?;
    let params = pair.params()?;
    // As `kicklab control --profile`: each start-up scales on the
    // profile's idle curve, and naps wake as the profile's did.
    let (idle_scale, nap) = pair.sim_costs();
    let workloads = workloads
        .iter()
        .map(|w| Workload::parse(w).map_err(|e| invalid("workloads", w, e)))
        .collect::<Res<Vec<_>>>()?;
    let spec = ControlSpec {
        params,
        w_p_range: w_p_range(range, points)?,
        points,
        workloads,
        messages,
        latency_ns: latency_ns(latency)?,
        seed,
        backend: None,
        idle_scale,
        nap,
    };
    let study = interruptible(py, || control_study(&spec, &Silent))?.map_err(|e| lab_err(&e))?;
    Ok((csv(&study), study.passed()))
}

/// The backend a keyword names, with the kvm options (the binary's
/// `BackendArgs::get`); kvm is refused, with the reason, where this
/// machine has no usable KVM.
fn backend(
    name: &str,
    direction: Option<&str>,
    halt_poll: Option<&str>,
    guest: Option<&str>,
) -> Res<kicklab_testbed::Backend> {
    use kicklab_testbed::{kvm, Backend};
    let be: Backend = name
        .parse()
        .map_err(|e: String| invalid("backend", name, e))?;
    let Backend::Kvm(_) = be else {
        // A kvm option given with another backend would be ignored: refused,
        // as the binary refuses the flags.
        for (keyword, given) in [
            ("direction", direction.is_some()),
            ("halt_poll", halt_poll.is_some()),
            ("guest", guest.is_some()),
        ] {
            if given {
                return Err(bad(format!(
                    "{keyword}: a kvm option; only backend='kvm' has a guest"
                )));
            }
        }
        return Ok(be);
    };
    kvm::available()
        .map_err(|why| invalid("backend", name, format!("kvm is not usable here: {why}")))?;
    let defaults = kvm::KvmOptions::default();
    let halt = halt_poll.map(|h| duration_ns("halt_poll", h)).transpose()?;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(Backend::Kvm(kvm::KvmOptions {
        direction: match direction {
            Some(d) => d.parse().map_err(|e: String| invalid("direction", d, e))?,
            None => defaults.direction,
        },
        halt_poll_ns: halt.map_or(defaults.halt_poll_ns, |h| h.min(f64::from(u32::MAX)) as u32),
        guest: match guest {
            Some(g) => g.parse().map_err(|e: String| invalid("guest", g, e))?,
            None => defaults.guest,
        },
    }))
}

/// The most notifications per direction per round (the binary's bound).
const MAX_SAMPLES: usize = 1_000_000;

fn gap(name: &str, s: &str) -> Res<Duration> {
    duration_ns(name, s).map(|ns| Duration::from_secs_f64(ns / 1e9))
}

/// `kicklab calibrate --json` (and `--save`): the JSON object's text.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (backend, direction, halt_poll, guest, samples, gap, rounds, gaps, overhead_runs, reference_runs, save=None))]
fn calibrate_json(
    py: Python<'_>,
    backend: &str,
    direction: Option<&str>,
    halt_poll: Option<&str>,
    guest: Option<&str>,
    samples: usize,
    gap: &str,
    rounds: usize,
    gaps: Vec<String>,
    overhead_runs: u32,
    reference_runs: u32,
    save: Option<std::path::PathBuf>,
) -> PyResult<String> {
    use kicklab_testbed::calibrate::{MAX_GAPS, MAX_OVERHEAD_RUNS};
    let be = self::backend(backend, direction, halt_poll, guest)?;
    if !(10..=MAX_SAMPLES).contains(&samples) {
        return Err(bad(format!("samples: between 10 and {MAX_SAMPLES}")).into());
    }
    if !(1..=100).contains(&rounds) {
        return Err(bad("rounds: between 1 and 100").into());
    }
    if overhead_runs > MAX_OVERHEAD_RUNS {
        return Err(bad(format!("overhead_runs: at most {MAX_OVERHEAD_RUNS}")).into());
    }
    if reference_runs > MAX_OVERHEAD_RUNS {
        return Err(bad(format!("reference_runs: at most {MAX_OVERHEAD_RUNS}")).into());
    }
    // Where the profile goes, before seconds of measuring (as `--save`):
    // a path that cannot be written is refused, and nothing is left there.
    if let Some(path) = &save {
        kicklab_report::check_writable(path).map_err(|e| bad(format!("save: {e}")))?;
    }
    let main_gap = self::gap("gap", gap)?;
    let gaps = gaps
        .iter()
        .map(|g| {
            let d = self::gap("gaps", g)?;
            if d.is_zero() {
                return Err(bad(format!(
                    "gaps: `{}`: every gap must be longer than 0",
                    g.trim()
                )));
            }
            Ok(d)
        })
        .collect::<Res<Vec<_>>>()?;
    if gaps.len() > MAX_GAPS {
        return Err(bad(format!("gaps: at most {MAX_GAPS} gaps")).into());
    }
    let c = kicklab_testbed::Calibration {
        gaps,
        overhead_runs,
        reference_runs,
        ..kicklab_testbed::Calibration::new(samples, main_gap, rounds)
    };
    let p = py
        .detach(|| kicklab_testbed::calibrate_backend(be, &c))
        .map_err(|e| testbed_err(&e))?;
    if let Some(path) = &save {
        let pretty = serde_json::to_string_pretty(&p).map_err(|e| Fail::Runtime(e.to_string()))?;
        // Whole or not at all, as the binary's --save.
        kicklab_report::write_atomic(path, pretty).map_err(|e| bad(format!("save: {e}")))?;
    }
    Ok(text(&kicklab_lab::real::profile_json(&p))?)
}

/// `kicklab run --json`: the JSON object's text and the warnings (the
/// binary prints them on stderr). The same steps as the binary's `run`.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (params, backend, direction, halt_poll, guest, strategy, messages, seed, batch, profile=None, strategy_p=None, strategy_c=None, latency=None, flush=None))]
fn run_json(
    py: Python<'_>,
    params: Args,
    backend: &str,
    direction: Option<&str>,
    halt_poll: Option<&str>,
    guest: Option<&str>,
    strategy: &str,
    messages: u64,
    seed: u64,
    batch: u32,
    profile: ProfileText,
    strategy_p: Option<&str>,
    strategy_c: Option<&str>,
    latency: Option<&str>,
    flush: Option<&str>,
) -> PyResult<(String, Vec<String>)> {
    use kicklab_lab::real::{expected, profile_for, RunSpec};
    let flush: kicklab_sim::Flush = match flush {
        Some(f) => f.parse().map_err(|e| invalid("flush", f, e))?,
        None => kicklab_sim::Flush::Full,
    };
    let pair = Pair::parse(&params, profile)?;
    let params = pair.params()?;
    let be = self::backend(backend, direction, halt_poll, guest)?;
    let strategy = wait_mode("strategy", strategy)?;
    let mode_p = strategy_p.map(|s| wait_mode("strategy_p", s)).transpose()?;
    let mode_c = strategy_c.map(|s| wait_mode("strategy_c", s)).transpose()?;
    let latency_ns = latency.map(latency_ns).transpose()?;
    let given_strategies = (strategy, mode_p, mode_c);
    let (mode_p, mode_c) = (mode_p.unwrap_or(strategy), mode_c.unwrap_or(strategy));
    let mut spec = RunSpec {
        batch,
        flush,
        mode_p,
        mode_c,
        // Explicit, so that the JSON names the bound adaptive kept.
        latency_bound_ns: Some(latency_ns.unwrap_or(kicklab_model::DEFAULT_LATENCY_NS)),
        latency: true,
        ..RunSpec::new(params, be, strategy, messages, seed)
    };
    kicklab_lab::real::check(&spec).map_err(|e| lab_err(&e))?;
    let given = pair.profile.clone();
    let out = py.detach(|| -> Result<_, LabError> {
        let profile = profile_for(be, given, &Silent)?;
        Ok(profile)
    });
    let profile = out.map_err(|e| lab_err(&e))?;
    // A planning strategy (adaptive) estimates with this machine's costs.
    spec.params = pair
        .given
        .build(Some(&profile), |pr, p| pr.apply_costs(p, false))?;
    let out = py.detach(|| -> Result<_, LabError> {
        let r = kicklab_lab::real::run(&spec)?;
        // The model (or, with no closed form, the simulator) with this
        // machine's N and S.
        let expected = expected(&spec, &profile)?;
        let warnings =
            kicklab_lab::disturbance::check_modes(&r, &params, [mode_p, mode_c], &profile)?;
        Ok((r, expected, warnings))
    });
    let (r, expected, warnings) = out.map_err(|e| lab_err(&e))?;
    let v =
        kicklab_lab::run_output::json(&spec, &r, &profile, &expected, &warnings, given_strategies)
            .map_err(|e| lab_err(&e))?;
    let lines = warnings.iter().map(ToString::to_string).collect();
    Ok((text(&v)?, lines))
}

/// What the CPU lock said when its file could not be used (a run went on
/// unlocked), kept for [`unlocked_note`].
static UNLOCKED: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);

fn keep_unlocked(why: &str) {
    *UNLOCKED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(why.to_string());
}

/// The CPU lock's note, once: its file could not be used, so a kicklab
/// run started beside this process will not wait for its real runs (the
/// Python layer raises it as a `KicklabWarning`).
#[pyfunction]
fn unlocked_note() -> Option<String> {
    UNLOCKED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take()
}

/// The Rust half of `kicklab`.
#[pymodule]
fn _kicklab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    kicklab_testbed::cpu_lock::on_unlocked(keep_unlocked);
    m.add_function(wrap_pyfunction!(model_json, m)?)?;
    m.add_function(wrap_pyfunction!(model_arrays, m)?)?;
    m.add_function(wrap_pyfunction!(sim_json, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_csv, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_len, m)?)?;
    m.add_function(wrap_pyfunction!(sweep_chunk_csv, m)?)?;
    m.add_function(wrap_pyfunction!(map_chunk_csv, m)?)?;
    m.add_function(wrap_pyfunction!(map_len, m)?)?;
    m.add_function(wrap_pyfunction!(vary_values, m)?)?;
    m.add_function(wrap_pyfunction!(advise_json, m)?)?;
    m.add_function(wrap_pyfunction!(control_csv, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate_json, m)?)?;
    m.add_function(wrap_pyfunction!(run_json, m)?)?;
    m.add_function(wrap_pyfunction!(unlocked_note, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
