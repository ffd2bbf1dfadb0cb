//! What the benchmark binaries share (a module of each, not a bench target).

/// The `q` quantile of `sorted` (ascending), the nearest rank.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i]
}
