//! The closed forms over NumPy arrays (`model_arrays`): parameters as
//! float64 bytes in, T, E, E_P, E_C, m and the regime codes out, the loop
//! without the GIL. What does not live here: one point (`model_json` in
//! `lib.rs`).

use std::collections::HashMap;

use kicklab_model::{
    predict, Cost, Param, ParamError, Prediction, Profile, Regime, UnknownParam, WaitMode,
};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::{bad, invalid, model_err, param_err, Fail, Res};
use crate::inputs::{model_mode, param_named, Args, Given, Pair, ProfileText};

/// Reads `n` native-endian `f64`s.
pub(crate) fn floats(name: &str, b: &[u8], n: usize) -> Res<Vec<f64>> {
    if n.checked_mul(8) != Some(b.len()) {
        return Err(bad(format!(
            "{name}: expected {n} float64 values, got {} bytes",
            b.len()
        )));
    }
    let mut v = column(n)?;
    v.extend(
        b.chunks_exact(8)
            .map(|c| f64::from_ne_bytes(c.try_into().expect("8 bytes"))),
    );
    Ok(v)
}

/// `v` as Python bytes (native-endian float64), a `MemoryError` where
/// Python cannot have them.
pub(crate) fn py_bytes<'py>(py: Python<'py>, v: &[f64]) -> PyResult<Bound<'py, PyBytes>> {
    PyBytes::new_with(py, v.len() * 8, |buf| {
        for (b, x) in buf.chunks_exact_mut(8).zip(v) {
            b.copy_from_slice(&x.to_ne_bytes());
        }
        Ok(())
    })
}

/// An empty column for `n` values, a `MemoryError` where they do not fit.
fn column<T>(n: usize) -> Res<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        Fail::Memory(format!(
            "{n} points: no memory for their results ({} MiB a column)",
            n.saturating_mul(std::mem::size_of::<T>()) >> 20
        ))
    })?;
    Ok(v)
}

/// Points between two looks for a signal (Ctrl-C) while the loop runs
/// without the GIL: a few milliseconds of closed forms.
const SIGNAL_EVERY: usize = 1 << 14;

/// The regimes by their codes in [`model_arrays`].
pub(crate) const REGIMES: [Regime; 9] = [
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
pub(crate) const INVALID: u8 = 255;

/// One point of [`model_arrays`]: `given` with the arrays' values at `i`.
pub(crate) fn array_point(
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
pub(crate) struct Columns {
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
pub(crate) fn model_arrays<'py>(
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
    // A mode without a closed form fails every point alike: refused, even
    // with errors="nan" (which is for points whose parameters the model
    // refuses) and for no points at all.
    if let Err(e @ kicklab_model::ModelError::NoClosedForm) =
        predict(&kicklab_model::Params::default(), m)
    {
        return Err(model_err(&e).into());
    }
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
            t: column(n)?,
            e: column(n)?,
            e_p: column(n)?,
            e_c: column(n)?,
            m: column(n)?,
            regime: column(n)?,
        };
        for i in 0..n {
            if i % SIGNAL_EVERY == SIGNAL_EVERY - 1 {
                Python::attach(|py| py.check_signals()).map_err(Fail::Python)?;
            }
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
    let regime = PyBytes::new_with(py, c.regime.len(), |buf| {
        buf.copy_from_slice(&c.regime);
        Ok(())
    })?;
    Ok((
        vec![
            py_bytes(py, &c.t)?,
            py_bytes(py, &c.e)?,
            py_bytes(py, &c.e_p)?,
            py_bytes(py, &c.e_c)?,
            py_bytes(py, &c.m)?,
            regime,
        ],
        REGIMES.iter().map(|r| r.name().to_string()).collect(),
    ))
}
