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

use std::collections::HashMap;
use std::time::Duration;

use kicklab_lab::{Input, LabError, Silent};
use kicklab_model::{
    parse_duration_ns, predict, Cost, ModelError, Param, ParamError, Params, Prediction, Profile,
    Regime, UnknownParam, WaitMode,
};
use kicklab_sim::{default_warmup, simulate, SimConfig, SimError, Start, SweepPoint, Vary};
use kicklab_testbed::{Setting, TestbedError};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use rayon::prelude::*;
use serde_json::{json, Value};

/// Keyword arguments as the Python half passes them: name -> text.
type Args = HashMap<String, String>;

/// A profile as `(JSON text, where it came from)`.
type ProfileText = Option<(String, String)>;

/// Why a call failed, without the GIL (so that it can cross
/// `Python::detach`): bad input (`ValueError`) or a failure
/// (`RuntimeError`).
#[derive(Debug)]
enum Fail {
    Value(String),
    Runtime(String),
}

impl From<Fail> for PyErr {
    fn from(f: Fail) -> PyErr {
        match f {
            Fail::Value(m) => PyValueError::new_err(m),
            Fail::Runtime(m) => PyRuntimeError::new_err(m),
        }
    }
}

type Res<T> = Result<T, Fail>;

/// A `ValueError` with this message.
fn bad(msg: impl Into<String>) -> Fail {
    Fail::Value(msg.into())
}

/// A parameter error as Python says it: `kp (k_P): ...` (the binary:
/// `--kp (k_P): ...`).
fn param_err(e: &ParamError) -> Fail {
    bad(format!(
        "{} ({}): {}",
        e.param.name(),
        e.param.symbol(),
        e.reason
    ))
}

/// `name: invalid value 'text': why`, as clap says it, the keyword for
/// the flag.
fn invalid(name: &str, text: &str, why: impl std::fmt::Display) -> Fail {
    bad(format!("{name}: invalid value '{text}': {why}"))
}

fn model_err(e: &ModelError) -> Fail {
    match e {
        ModelError::Params(p) => param_err(p),
        ModelError::NoClosedForm => bad(format!("mode: {e}: use kicklab.sim()")),
    }
}

fn sim_err(e: &SimError) -> Fail {
    match e {
        SimError::Params(p) => param_err(p),
        // "messages: ..." names the input; its keyword is the same word.
        SimError::NoMessages
        | SimError::TooManyMessages(_)
        | SimError::StudyTooLarge { .. }
        | SimError::Combine(_) => bad(e.to_string()),
        SimError::Mode { .. } | SimError::TooManyEvents { .. } => bad(format!("mode: {e}")),
        SimError::SweepPoint { .. } => bad(format!("vary: {e}")),
        SimError::TimeOverflow => bad(format!("messages: {e}: simulate fewer")),
        SimError::Deadlock { .. } => Fail::Runtime(e.to_string()),
        // Only a profile sets it.
        SimError::Nap { .. } => bad(format!("profile: {e}")),
    }
}

fn testbed_err(e: &TestbedError) -> Fail {
    match e {
        TestbedError::Params(p) => param_err(p),
        TestbedError::Invalid { what, reason } | TestbedError::Limit { what, reason } => {
            let name = match what {
                Setting::Len => "len",
                Setting::Messages | Setting::Warmup => "messages",
                Setting::Batch => "batch",
                Setting::Flush => "flush",
                Setting::Work => "work",
                Setting::Timer => "timer",
                Setting::Spin | Setting::Strategy => "strategy",
                Setting::Vms => "vms",
                Setting::Samples => "samples",
                Setting::Gap => "gap",
                Setting::Gaps => "gaps",
                Setting::Runs => "overhead_runs",
                Setting::Idle => "idle",
                Setting::HaltPoll => "halt_poll",
                Setting::Timeout => return Fail::Runtime(e.to_string()),
            };
            bad(format!("{name}: {reason}"))
        }
        _ => Fail::Runtime(e.to_string()),
    }
}

fn lab_err(e: &LabError) -> Fail {
    match e {
        LabError::Input { input, reason } => {
            // A real run's strategy is `strategy=`, as on the command
            // line (`--strategy`).
            let name = match input {
                Input::Mode => "strategy",
                // `workloads=` takes the list.
                Input::Workload => "workloads",
                // A map's grid: `x=` and `y=` together.
                Input::Axes => "x, y",
                other => other.name(),
            };
            bad(format!("{name}: {reason}"))
        }
        LabError::Param(p) => param_err(p),
        LabError::Model(m) => model_err(m),
        LabError::Sim(s) => sim_err(s),
        LabError::Testbed(t) => testbed_err(t),
        _ => Fail::Runtime(e.to_string()),
    }
}

/// A JSON value as text (what the Python half `json.loads`).
fn text(v: &Value) -> Res<String> {
    serde_json::to_string(v).map_err(|e| Fail::Runtime(e.to_string()))
}

fn to_value<T: serde::Serialize>(x: &T) -> Res<Value> {
    serde_json::to_value(x).map_err(|e| Fail::Runtime(e.to_string()))
}

/// Parses a duration keyword (`gap`, ...) to nanoseconds.
fn duration_ns(name: &str, s: &str) -> Res<f64> {
    parse_duration_ns(s).map_err(|e| invalid(name, s, e))
}

/// Parses the `latency` keyword: a bound > 0 (the binary's `--latency`).
fn latency_ns(s: &str) -> Res<f64> {
    match duration_ns("latency", s)? {
        ns if ns > 0.0 => Ok(ns),
        _ => Err(invalid("latency", s, "a latency bound must be > 0")),
    }
}

/// Parses a wait strategy keyword (`mode`, `mode_p`, `strategy`, ...).
fn wait_mode(name: &str, s: &str) -> Res<WaitMode> {
    WaitMode::parse(s).map_err(|e| invalid(name, s, e))
}

fn param_named(name: &str) -> Res<Param> {
    Param::ALL
        .into_iter()
        .find(|p| p.name() == name)
        .ok_or_else(|| bad(UnknownParam(name.to_string()).to_string()))
}

fn parse_profile(profile: ProfileText) -> Res<Option<Profile>> {
    profile
        .map(|(text, from)| {
            let p: Profile = serde_json::from_str(&text)
                .map_err(|e| bad(format!("profile: {from} is not a kicklab profile: {e}")))?;
            p.check()
                .map_err(|e| bad(format!("profile: {from}: {e}")))?;
            Ok(p)
        })
        .transpose()
}

/// Parses a whole-number keyword (`len`, `kp`, `kc`) as the command line
/// parses a `u32` flag, with its words (no blanks around it either).
fn count(name: &str, value: &str) -> Res<u32> {
    kicklab_model::parse_whole(value, u64::from(u32::MAX))
        .map(|v| u32::try_from(v).expect("at most u32::MAX"))
        .map_err(|e| invalid(name, value, e))
}

/// The pair's parameters as given, before defaults and a profile.
#[derive(Debug, Clone, Copy)]
struct Given {
    len: u32,
    kp: u32,
    kc: u32,
    wp: Cost,
    wc: Cost,
    np: Option<Cost>,
    nc: Option<Cost>,
    sp: Option<Cost>,
    sc: Option<Cost>,
    vp: Option<Cost>,
    vc: Option<Cost>,
}

impl Given {
    /// Parses the keywords (defaults: the paper's Fig. 4 set-up, as the
    /// binary's).
    fn parse(args: &Args) -> Res<Given> {
        let d = Params::default();
        let mut g = Given {
            len: d.len,
            kp: d.k_p,
            kc: d.k_c,
            wp: d.w_p,
            wc: d.w_c,
            np: None,
            nc: None,
            sp: None,
            sc: None,
            vp: None,
            vc: None,
        };
        // In the order of `Param::ALL`, so that the first bad one is the
        // same whatever the dict's order.
        for param in Param::ALL {
            let Some(value) = args.get(param.name()) else {
                continue;
            };
            let name = param.name();
            if param.is_count() {
                g.set_count(param, count(name, value)?);
            } else {
                let c = Cost::parse(value).map_err(|e| invalid(name, value, e))?;
                g.set_cost(param, c);
            }
        }
        if let Some(name) = args.keys().find(|k| param_named(k).is_err()) {
            return Err(bad(UnknownParam(name.clone()).to_string()));
        }
        Ok(g)
    }

    fn set_count(&mut self, param: Param, n: u32) {
        match param {
            Param::Len => self.len = n,
            Param::Kp => self.kp = n,
            _ => self.kc = n,
        }
    }

    fn set_cost(&mut self, param: Param, c: Cost) {
        match param {
            Param::Wp => self.wp = c,
            Param::Wc => self.wc = c,
            Param::Np => self.np = Some(c),
            Param::Nc => self.nc = Some(c),
            Param::Sp => self.sp = Some(c),
            Param::Sc => self.sc = Some(c),
            Param::Vp => self.vp = Some(c),
            _ => self.vc = Some(c),
        }
    }

    /// The validated parameters (the binary's `ParamArgs::build`): with a
    /// profile, what `apply` puts in, then the costs given by keyword.
    fn build(
        &self,
        profile: Option<&Profile>,
        apply: impl Fn(&Profile, &mut Params),
    ) -> Res<Params> {
        let given = kicklab_model::GivenParams {
            len: self.len,
            k_p: self.kp,
            k_c: self.kc,
            w_p: self.wp,
            w_c: self.wc,
            costs: kicklab_model::CostOverrides {
                n_p: self.np,
                n_c: self.nc,
                s_p: self.sp,
                s_c: self.sc,
                v_p: self.vp,
                v_c: self.vc,
            },
        };
        given
            .build(profile, apply)
            .map_err(|e| match profile.and(given.profile_at_fault(&e)) {
                Some(why) => bad(format!("profile: {why}")),
                None => param_err(&e),
            })
    }
}

/// The pair and its profile, parsed.
struct Pair {
    given: Given,
    profile: Option<Profile>,
}

impl Pair {
    fn parse(args: &Args, profile: ProfileText) -> Res<Pair> {
        Ok(Pair {
            given: Given::parse(args)?,
            profile: parse_profile(profile)?,
        })
    }

    /// A real run's, a sweep's or the control study's parameters (the
    /// binary's `ParamArgs::params`): a profile's N, V and S (means)
    /// where not given; W as given.
    fn params(&self) -> Res<Params> {
        self.given
            .build(self.profile.as_ref(), |pr, p| pr.apply_costs(p, false))
    }

    /// The model's (`spread` false) or the simulator's (`spread`)
    /// parameters (the binary's `ParamArgs::params_with`): with a
    /// profile, its N, V and S and W plus the ring's cost per message.
    fn params_with(&self, spread: bool) -> Res<Params> {
        self.given
            .build(self.profile.as_ref(), |pr, p| pr.apply(p, spread))
    }

    /// [`Pair::params_with`] for a pair whose parties both wait by
    /// `notify`: the ring's cost per message as measured with the peer
    /// asleep (the binary's `ParamArgs::params_for`).
    fn params_for(&self, spread: bool, notify: bool) -> Res<Params> {
        if notify {
            self.given
                .build(self.profile.as_ref(), |pr, p| pr.apply_notify(p, spread))
        } else {
            self.params_with(spread)
        }
    }

    /// How start-ups scale with idle time and what naps cost, per party,
    /// from the profile.
    fn sim_costs(&self) -> ([Option<kicklab_model::IdleScale>; 2], [Option<f64>; 2]) {
        self.profile
            .as_ref()
            .map_or(([None, None], [None, None]), Profile::sim_costs)
    }
}

/// The prediction as `kicklab model --json` has it: the serialized
/// [`Prediction`] plus the throughput (the binary's `prediction_json`).
fn prediction_json(p: &Prediction) -> Value {
    let mut v = serde_json::to_value(p).unwrap_or_default();
    v["throughput_per_s"] = json!(p.rates.per_second());
    v
}

/// The model's mode: notify, poll, or a strategy with no closed form.
fn model_mode(mode: &str) -> Res<WaitMode> {
    let m = wait_mode("mode", mode)?;
    if let WaitMode::Spin { .. } = m {
        return Err(bad(
            "mode: the model covers notify and poll; simulate spin:<budget> with kicklab.sim()",
        ));
    }
    Ok(m)
}

/// `kicklab model --json`: the JSON object's text.
#[pyfunction]
#[pyo3(signature = (params, mode, profile=None))]
fn model_json(params: Args, mode: &str, profile: ProfileText) -> PyResult<String> {
    let pair = Pair::parse(&params, profile)?;
    let m = model_mode(mode)?;
    let params = pair.params_for(false, m == WaitMode::Notify)?;
    let p = predict(&params, m).map_err(|e| model_err(&e))?;
    let mut v = prediction_json(&p);
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

/// Reads `n` native-endian `f64`s.
fn floats(name: &str, b: &[u8], n: usize) -> Res<Vec<f64>> {
    if n.checked_mul(8) != Some(b.len()) {
        return Err(bad(format!(
            "{name}: expected {n} float64 values, got {} bytes",
            b.len()
        )));
    }
    Ok(b.chunks_exact(8)
        .map(|c| f64::from_ne_bytes(c.try_into().expect("8 bytes")))
        .collect())
}

fn bytes_of(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_ne_bytes()).collect()
}

/// The regimes by their codes in [`model_arrays`].
const REGIMES: [Regime; 9] = [
    Regime::GP,
    Regime::FC,
    Regime::FP,
    Regime::SCS,
    Regime::SPS,
    Regime::SS,
    Regime::EWC,
    Regime::EWP,
    Regime::Lockstep,
];

/// The code of an invalid point in [`model_arrays`].
const INVALID: u8 = 255;

/// One point of [`model_arrays`]: `given` with the arrays' values at `i`.
fn array_point(
    given: &Given,
    profile: Option<&Profile>,
    columns: &[(Param, Vec<f64>)],
    i: usize,
    mode: WaitMode,
) -> Res<Prediction> {
    let mut g = *given;
    for (param, v) in columns {
        let x = v[i];
        let name = param.name();
        if param.is_count() {
            if !(x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x <= f64::from(u32::MAX)) {
                return Err(invalid(name, &x.to_string(), "not a whole number >= 0"));
            }
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            g.set_count(*param, x as u32);
        } else {
            if x > 0.0 && x < 1.0 / kicklab_model::PS_PER_NS {
                return Err(invalid(
                    name,
                    &x.to_string(),
                    "below a picosecond, the finest time kicklab counts (use 0 or at least 0.001 ns)",
                ));
            }
            let c = Cost::Const(x);
            c.check().map_err(|reason| {
                param_err(&ParamError {
                    param: *param,
                    reason,
                })
            })?;
            g.set_cost(*param, c);
        }
    }
    let p = if mode == WaitMode::Notify {
        g.build(profile, |pr, p| pr.apply_notify(p, false))?
    } else {
        g.build(profile, |pr, p| pr.apply(p, false))?
    };
    predict(&p, mode).map_err(|e| model_err(&e))
}

/// What [`model_arrays`] computes, before it becomes bytes.
struct Columns {
    t: Vec<f64>,
    e: Vec<f64>,
    e_p: Vec<f64>,
    e_c: Vec<f64>,
    m: Vec<f64>,
    regime: Vec<u8>,
}

/// The closed forms over arrays: `arrays` maps parameter names to `n`
/// float64 values each (already broadcast and flat, durations in ns), the
/// rest of the pair as in [`model_json`]. Returns the bytes of T, E, E_P,
/// E_C and m (float64, NaN where undefined), of the regime codes (uint8,
/// 255 for an invalid point when `nan_on_error`), and the regime names
/// by code. The loop runs without the GIL.
#[allow(clippy::too_many_arguments)]
#[pyfunction]
#[pyo3(signature = (params, mode, arrays, n, nan_on_error, profile=None))]
fn model_arrays<'py>(
    py: Python<'py>,
    params: Args,
    mode: &str,
    arrays: HashMap<String, Bound<'py, PyBytes>>,
    n: usize,
    nan_on_error: bool,
    profile: ProfileText,
) -> PyResult<(Vec<Bound<'py, PyBytes>>, Vec<String>)> {
    let pair = Pair::parse(&params, profile)?;
    let m = model_mode(mode)?;
    if arrays.is_empty() && n != 1 {
        return Err(bad(format!(
            "n: without arrays the model has one point, got {n}"
        ))
        .into());
    }
    let mut columns: Vec<(Param, Vec<f64>)> = Vec::new();
    for param in Param::ALL {
        if let Some(b) = arrays.get(param.name()) {
            columns.push((param, floats(param.name(), b.as_bytes(), n)?));
        }
    }
    if let Some(name) = arrays.keys().find(|k| param_named(k).is_err()) {
        return Err(bad(UnknownParam(name.clone()).to_string()).into());
    }
    let out: Res<Columns> = py.detach(|| {
        let mut c = Columns {
            t: Vec::with_capacity(n),
            e: Vec::with_capacity(n),
            e_p: Vec::with_capacity(n),
            e_c: Vec::with_capacity(n),
            m: Vec::with_capacity(n),
            regime: Vec::with_capacity(n),
        };
        for i in 0..n {
            match array_point(&pair.given, pair.profile.as_ref(), &columns, i, m) {
                Ok(p) => {
                    c.t.push(p.rates.t_ns);
                    c.e.push(p.rates.e_ns);
                    c.e_p.push(p.rates.e_p_ns);
                    c.e_c.push(p.rates.e_c_ns);
                    #[allow(clippy::cast_precision_loss)]
                    c.m.push(p.m.map_or(f64::NAN, |m| m as f64));
                    #[allow(clippy::cast_possible_truncation)]
                    c.regime.push(
                        REGIMES
                            .iter()
                            .position(|r| *r == p.regime)
                            .expect("every regime has a code") as u8,
                    );
                }
                Err(_) if nan_on_error => {
                    for v in [&mut c.t, &mut c.e, &mut c.e_p, &mut c.e_c, &mut c.m] {
                        v.push(f64::NAN);
                    }
                    c.regime.push(INVALID);
                }
                Err(Fail::Value(msg)) => {
                    return Err(Fail::Value(format!("{msg} (at flat index {i})")))
                }
                Err(f) => return Err(f),
            }
        }
        Ok(c)
    });
    let c = out?;
    let b = |v: &[u8]| PyBytes::new(py, v);
    Ok((
        vec![
            b(&bytes_of(&c.t)),
            b(&bytes_of(&c.e)),
            b(&bytes_of(&c.e_p)),
            b(&bytes_of(&c.e_c)),
            b(&bytes_of(&c.m)),
            b(&c.regime),
        ],
        REGIMES.iter().map(|r| r.name().to_string()).collect(),
    ))
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
    let (idle_scale, nap_ns) = pair.sim_costs();
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
        nap_ns,
        combine: kicklab_sim::Combine::default(),
    };
    let r = py.detach(|| simulate(&cfg)).map_err(|e| sim_err(&e))?;
    let predicted = (mode_p == mode_c)
        .then(|| predict(&params, mode_p).ok())
        .flatten();
    let warnings = r.window_warnings(&params, predicted.as_ref().and_then(|p| p.round_messages));
    let mut v = to_value(&r)?;
    v["mode_p"] = json!(mode_p.to_string());
    v["mode_c"] = json!(mode_c.to_string());
    v["seed"] = json!(seed);
    v["start"] = json!(if start == Start::Full {
        "full"
    } else {
        "empty"
    });
    // The model's point for this start: from a full queue, a bistable
    // pair's other operating point.
    v["predicted"] = match predicted {
        Some(p) if start == Start::Full && p.other.is_some() => to_value(&p.other)?,
        Some(p) => prediction_json(&p),
        None => Value::Null,
    };
    Ok((text(&v)?, warnings))
}

fn parse_vary(vary: &str) -> Res<Vary> {
    parse_range("vary", vary)
}

/// A `NAME=FROM..TO:POINTS` keyword (`vary`, `x`, `y`, `z`), as the
/// binary's `--vary` takes it: a count (L, k) swept over more points than
/// whole numbers in its range is refused (its rows would repeat).
fn parse_range(keyword: &str, s: &str) -> Res<Vary> {
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
fn not_given(params: &Args, param: Param, what: &str, by: &str) -> Res<()> {
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
fn sweep_inputs(
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
fn sweep_csv(
    py: Python<'_>,
    params: Args,
    vary: &str,
    mode: &str,
    messages: u64,
    seed: u64,
    profile: ProfileText,
) -> PyResult<String> {
    let (params, vary, mode) = sweep_inputs(&params, vary, mode, messages, profile)?;
    let points = py
        .detach(|| kicklab_sim::sweep(&params, &vary, mode, messages, seed, &|| {}))
        .map_err(|e| sim_err(&e))?;
    Ok(kicklab_report::sweep_csv(&points, &vary))
}

/// The number of points of a sweep (`vary`'s POINTS), checked.
#[pyfunction]
fn sweep_len(vary: &str) -> PyResult<u32> {
    Ok(parse_vary(vary)?.points)
}

/// Checks that the chunk `start..stop` lies within the `len` points of a
/// `what` (sweep, map).
fn chunk_within(start: usize, stop: usize, len: usize, what: &str) -> Res<()> {
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
fn sweep_chunk_csv(
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
    chunk_within(start, stop, points.len(), "sweep")?;
    let run = |&(x, params): &(f64, Params)| -> Result<SweepPoint, SimError> {
        kicklab_sim::sweep_point(x, params, mode, messages, seed)
    };
    let chunk = py
        .detach(|| {
            points[start..stop]
                .par_iter()
                .map(run)
                .collect::<Result<Vec<_>, _>>()
        })
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
fn map_chunk_csv(
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
    chunk_within(start, stop, grid.len(), "map")?;
    let points = py
        .detach(|| kicklab_lab::map::map_points(&spec, &grid[start..stop], &Silent))
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
fn vary_values(vary: &str, keyword: &str) -> PyResult<(String, Vec<f64>, bool)> {
    let v = parse_range(keyword, vary)?;
    Ok((v.param.name().to_string(), v.values(), v.param.is_count()))
}

/// The number of points of a map over `x` and `y` (checked).
#[pyfunction]
fn map_len(x: &str, y: &str) -> PyResult<u64> {
    let (x, y) = (parse_range("x", x)?, parse_range("y", y)?);
    Ok(u64::from(x.points) * u64::from(y.points))
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
    let (idle_scale, nap_ns) = pair.sim_costs();
    let spec = kicklab_lab::advise::AdviseSpec {
        params,
        idle_scale,
        nap_ns,
        latency_ns: latency_ns(latency)?,
        messages,
        seed,
        exhaustive,
        mechanisms,
    };
    let advice = py
        .detach(|| kicklab_lab::advise::advise(&spec, &Silent))
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
    let (idle_scale, nap_ns) = pair.sim_costs();
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
        nap_ns,
    };
    let study = py
        .detach(|| control_study(&spec, &Silent))
        .map_err(|e| lab_err(&e))?;
    Ok((csv(&study), study.passed()))
}

/// The backend a keyword names, with the kvm options (the binary's
/// `BackendArgs::get`); kvm is refused, with the reason, where this
/// machine has no usable KVM.
fn backend(
    name: &str,
    direction: &str,
    halt_poll: &str,
    guest: &str,
) -> Res<kicklab_testbed::Backend> {
    use kicklab_testbed::{kvm, Backend};
    let be: Backend = name
        .parse()
        .map_err(|e: String| invalid("backend", name, e))?;
    let Backend::Kvm(_) = be else {
        // The kvm options away from their defaults would be ignored (the
        // binary refuses the flags the same way).
        let halt = duration_ns("halt_poll", halt_poll)?;
        for (keyword, away) in [
            ("direction", direction != "tx"),
            ("halt_poll", halt != 0.0),
            ("guest", guest != "user"),
        ] {
            if away {
                return Err(bad(format!(
                    "{keyword}: a kvm option; only backend='kvm' has a guest"
                )));
            }
        }
        return Ok(be);
    };
    kvm::available()
        .map_err(|why| invalid("backend", name, format!("kvm is not usable here: {why}")))?;
    let halt = duration_ns("halt_poll", halt_poll)?;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(Backend::Kvm(kvm::KvmOptions {
        direction: direction
            .parse()
            .map_err(|e: String| invalid("direction", direction, e))?,
        halt_poll_ns: halt.min(f64::from(u32::MAX)) as u32,
        guest: guest
            .parse()
            .map_err(|e: String| invalid("guest", guest, e))?,
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
    direction: &str,
    halt_poll: &str,
    guest: &str,
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
        std::fs::write(path, pretty)
            .map_err(|e| bad(format!("save: cannot write {}: {e}", path.display())))?;
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
    direction: &str,
    halt_poll: &str,
    guest: &str,
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
    use kicklab_lab::real::{expected, profile_for, Expected, RunSpec};
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
    let shared = kicklab_lab::real::strategy_both_ran(
        strategy,
        mode_p,
        mode_c,
        Some(latency_ns.unwrap_or(kicklab_model::DEFAULT_LATENCY_NS)),
    );
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
    let [shown_p, shown_c] = spec.modes();
    let mut v = to_value(&r)?;
    v["warnings"] = to_value(&warnings)?;
    v["disturbed"] = json!(!warnings.is_empty());
    v["backend"] = json!(be.name());
    v["strategy"] = json!(shared.map(|s| s.to_string()));
    v["strategy_p"] = json!(shown_p.to_string());
    v["strategy_c"] = json!(shown_c.to_string());
    v["batch"] = json!(batch);
    v["flush"] = json!(flush.to_string());
    v["predicted"] = match &expected {
        Expected::Model(p) => {
            let mut m = prediction_json(p);
            m["source"] = json!("model");
            m
        }
        Expected::Sim(rates) => {
            let mut m = to_value(rates)?;
            m["source"] = json!("sim");
            m["throughput_per_s"] = json!(rates.per_second());
            m
        }
    };
    v["profile"] = kicklab_lab::real::profile_json(&profile);
    let lines = warnings.iter().map(ToString::to_string).collect();
    Ok((text(&v)?, lines))
}

/// The Rust half of `kicklab`.
#[pymodule]
fn _kicklab(m: &Bound<'_, PyModule>) -> PyResult<()> {
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
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
