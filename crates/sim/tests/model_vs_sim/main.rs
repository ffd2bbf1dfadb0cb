//! Model against simulator: one test binary, a module per topic.

mod exactness;
mod paper;
mod reference;
mod strategies;
mod visibility;
mod workloads;

use kicklab_model::{Cost, Params};

/// Relative error, with an absolute floor for zero.
pub fn rel(a: f64, b: f64) -> f64 {
    if a == b {
        0.0
    } else {
        (a - b).abs() / a.abs().max(b.abs())
    }
}

/// Params from whole picoseconds (so the rules' ties are exact).
#[allow(clippy::too_many_arguments)]
pub fn params_ps(
    len: u32,
    k_p: u32,
    k_c: u32,
    w_p: u64,
    w_c: u64,
    n_p: u64,
    n_c: u64,
    s_p: u64,
    s_c: u64,
) -> Params {
    #[allow(clippy::cast_precision_loss)]
    let c = |ps: u64| Cost::Const(ps as f64 / 1000.0);
    Params {
        len,
        k_p,
        k_c,
        w_p: c(w_p),
        w_c: c(w_c),
        n_p: c(n_p),
        n_c: c(n_c),
        s_p: c(s_p),
        s_c: c(s_c),
        v_p: None,
        v_c: None,
    }
}

/// Proptest cases: `PROPTEST_CASES` if set (for long runs), else `default`.
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}
