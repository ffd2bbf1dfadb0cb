//! Values as a user types them, parsed with errors that say what was
//! expected: whole numbers of each integer type ([`whole`]), plain numbers
//! ([`number`]), durations ([`duration_ns`], [`duration`]) and latency
//! bounds ([`latency_ns`]). Each is a `fn(&str) -> Result<T, String>`, the
//! shape a command-line parser takes. What does not live here: the
//! grammar of durations and of whole numbers themselves
//! ([`crate::parse_duration_ns`], [`crate::parse_whole`]), costs
//! ([`crate::Cost::parse`]).

use crate::{parse_duration_ns, parse_whole, shown};

/// A whole number's type: what [`whole`] parses to.
pub trait Whole: Sized + Clone + Send + Sync + 'static {
    /// The largest value the type holds.
    const MAX: u64;
    /// The value (at most [`Whole::MAX`]).
    fn of(v: u64) -> Self;
}

macro_rules! whole_type {
    ($($t:ty),*) => {$(
        impl Whole for $t {
            const MAX: u64 = <$t>::MAX as u64;
            #[allow(clippy::cast_possible_truncation)]
            fn of(v: u64) -> Self {
                v as $t
            }
        }
    )*};
}
whole_type!(u32, u64, usize);

/// A whole number (a count, a length, a seed): digits only. A generic
/// parser would repeat Rust's error and the type's range (`-1 is not in
/// 0..=4294967295` for a k whose range is 1 to L), which says nothing
/// about the input; its own range is checked where it is known.
///
/// # Errors
///
/// Not digits only, or above the type's largest value.
pub fn whole<T: Whole>(s: &str) -> Result<T, String> {
    parse_whole(s, T::MAX).map(T::of)
}

/// A plain number >= 0 (a rate, seconds, a scale): finite, with no sign
/// (so `-0` is refused as a cost of `-0` is) and no unit. Rust's own
/// float parser takes `-0`, `nan` and `inf`, and says `invalid float
/// literal` of `1s`.
///
/// # Errors
///
/// Not such a number.
///
/// ```
/// use kicklab_model::typed::number;
/// assert_eq!(number("0.5"), Ok(0.5));
/// assert!(number("-0").is_err() && number("inf").is_err() && number("1s").is_err());
/// ```
pub fn number(s: &str) -> Result<f64, String> {
    let t = s.trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && !t.starts_with(['-', '+']) => Ok(v),
        _ => Err(format!(
            "`{}` is not a number >= 0 (e.g. 800 or 0.5: digits, no sign, no unit)",
            shown(s)
        )),
    }
}

/// A duration in nanoseconds (`100us`).
///
/// # Errors
///
/// Not a duration.
pub fn duration_ns(s: &str) -> Result<f64, String> {
    parse_duration_ns(s).map_err(|e| e.to_string())
}

/// A latency bound in nanoseconds: a duration > 0 (`100us`).
///
/// # Errors
///
/// Not a duration, or 0.
pub fn latency_ns(s: &str) -> Result<f64, String> {
    match duration_ns(s)? {
        ns if ns > 0.0 => Ok(ns),
        _ => Err("a latency bound must be > 0".into()),
    }
}

/// A duration as a [`std::time::Duration`].
///
/// # Errors
///
/// Not a duration.
pub fn duration(s: &str) -> Result<std::time::Duration, String> {
    duration_ns(s).map(|ns| std::time::Duration::from_secs_f64(ns / 1e9))
}

/// A cost: a duration or a distribution ([`crate::Cost::parse`]).
///
/// # Errors
///
/// Not a cost.
pub fn cost(s: &str) -> Result<crate::Cost, String> {
    crate::Cost::parse(s).map_err(|e| e.to_string())
}
