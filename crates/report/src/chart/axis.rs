//! A chart's numbers: round tick values and their labels, values rounded
//! for the page. Drawing is in the parent module.

/// About `n` round tick values in `[a, b]`.
pub(super) fn nice_ticks(a: f64, b: f64, n: usize) -> (Vec<f64>, f64) {
    #[allow(clippy::cast_precision_loss)]
    let raw = (b - a) / n.max(1) as f64;
    if !(raw.is_finite() && raw > 0.0) {
        return (vec![a], 1.0);
    }
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let mut v = (a / step).ceil() * step;
    let mut out = Vec::new();
    while v <= b + step * 1e-9 {
        out.push(if v.abs() < step * 1e-9 { 0.0 } else { v });
        v += step;
    }
    (out, step)
}

/// A tick label with as many decimals as the step needs.
pub(super) fn tick_label(v: f64, step: f64) -> String {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let d = (-step.log10().floor()).max(0.0) as usize;
    let d = if (step * 10f64.powi(i32::try_from(d).unwrap_or(0)))
        .fract()
        .abs()
        > 1e-9
    {
        d + 1
    } else {
        d
    };
    format!("{v:.d$}")
}

/// `v` rounded to 6 significant digits (the hover text's precision, and
/// a smaller page).
pub(super) fn sig6(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    #[allow(clippy::cast_possible_truncation)]
    let d = 5 - v.abs().log10().floor() as i32;
    // Scale by an exact power of ten on the side that keeps it exact.
    let r = if d >= 0 {
        let f = 10f64.powi(d);
        (v * f).round() / f
    } else {
        let f = 10f64.powi(-d);
        (v / f).round() * f
    };
    if r.is_finite() {
        r
    } else {
        v
    }
}

pub(super) fn fmt_short(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Ticks of a log axis from `lo` to `hi` (both > 0): powers of 2 where
/// the range spans at most three decades (ten ticks at most), else powers
/// of 10; the two ends where no power lies between
/// them.
pub(super) fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let eps = 1e-9;
    let ticks: Vec<f64> = if hi / lo <= 1000.0 {
        #[allow(clippy::cast_possible_truncation)]
        let (a, b) = (
            (lo.log2() - eps).ceil() as i32,
            (hi.log2() + eps).floor() as i32,
        );
        (a..=b).map(|e| 2f64.powi(e)).collect()
    } else {
        #[allow(clippy::cast_possible_truncation)]
        let (a, b) = (
            (lo.log10() - eps).ceil() as i32,
            (hi.log10() + eps).floor() as i32,
        );
        (a..=b).map(|e| 10f64.powi(e)).collect()
    };
    if ticks.len() < 2 {
        vec![lo, hi]
    } else {
        ticks
    }
}
