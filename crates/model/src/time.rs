//! Durations: parsing `1.1us`-style strings to nanoseconds, and the
//! picosecond time base shared by the model's exact arithmetic and the
//! simulator's clock. Also whole numbers (counts, lengths, seeds) as the
//! command line and Python parse them, in the same words.

use thiserror::Error;

/// Picoseconds per nanosecond: the simulator clock and the model's exact
/// predicates count whole picoseconds.
pub const PS_PER_NS: f64 = 1000.0;

/// The longest duration kicklab accepts anywhere: one hour.
///
/// Times are counted in whole picoseconds in a `u64` (the simulator's
/// clock, the model's exact predicates), which holds 213 days (the
/// simulator's event keys spend two bits of it on the tie class: its
/// clock holds 53). Capping every
/// single duration at an hour keeps the clock exact for thousands of
/// messages at the largest costs, and any real cost (nanoseconds to
/// milliseconds) far inside the range. Longer runs of huge costs are
/// refused by the simulator as a clock overflow rather than wrapped.
pub const MAX_DURATION_NS: f64 = 3.6e12;

/// Rounds a duration in nanoseconds to whole picoseconds.
///
/// Negative and NaN inputs map to 0; callers validate costs first
/// ([`crate::Params::validate`]).
#[inline]
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
pub fn to_ps(ns: f64) -> u64 {
    // Round half up by adding 0.5 and truncating: for x >= 0 this is
    // `round()`, which on baseline x86-64 is a libm call and the simulator's
    // hottest instruction with random costs. `as` saturates: huge ->
    // u64::MAX; NaN and negatives fail the test and map to 0.
    if ns > 0.0 {
        (ns * PS_PER_NS + 0.5) as u64
    } else {
        0
    }
}

/// Why a duration string was rejected.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum DurationParseError {
    /// Empty string.
    #[error("empty duration")]
    Empty,
    /// The number part did not parse.
    #[error("`{0}` is not a number (expected e.g. 1.1us, 250ns, 3ms)")]
    BadNumber(String),
    /// A unit other than ns, us, µs, ms, s.
    #[error("unknown unit `{0}` (use ns, us, µs, ms or s; a bare number is ns)")]
    BadUnit(String),
    /// Negative (a minus sign, even on 0), NaN or infinite.
    #[error("`{0}` is not a finite duration >= 0 (no minus sign, not even on 0)")]
    OutOfRange(String),
    /// Longer than [`MAX_DURATION_NS`].
    #[error("`{0}` is longer than the longest duration kicklab handles (3600s, an hour)")]
    TooLong(String),
    /// Above 0 but below a picosecond, kicklab's unit of time.
    #[error(
        "`{0}` is below a picosecond, the finest time kicklab counts (use 0 or at least 0.001ns)"
    )]
    BelowResolution(String),
    /// A range where one duration is wanted (`1us..2us`).
    #[error(
        "`{0}` is a range; this takes one duration (a range of values is a sweep's or a map's)"
    )]
    RangeNotValue(String),
    /// A decimal comma (`2,5us`).
    #[error("`{0}`: a decimal point is `.` (e.g. 2.5us), and no thousands separators")]
    DecimalComma(String),
    /// Not `FROM..TO` with two dots between two values.
    #[error("`{0}`: expected FROM..TO, two dots between two values, e.g. 0.2us..3us")]
    BadRange(String),
}

/// The most characters of a bad value an error message repeats: enough
/// to recognize it, not a page of it.
const SHOWN_CHARS: usize = 40;

/// `s` as an error message repeats it: whole up to [`SHOWN_CHARS`]
/// characters, else its start and how long it was.
pub fn shown(s: &str) -> String {
    match s.char_indices().nth(SHOWN_CHARS) {
        None => s.to_string(),
        Some((end, _)) => format!("{}... ({} characters)", &s[..end], s.chars().count()),
    }
}

/// A path as an error message repeats it: whole up to 120 characters,
/// else its first 60 and last 40 (where the file's own name is) and its
/// length, so that a refusal stays a line one can read.
#[must_use]
pub fn shown_path(p: &std::path::Path) -> String {
    let s = p.display().to_string();
    let n = s.chars().count();
    if n <= 120 {
        return s;
    }
    let head: String = s.chars().take(60).collect();
    let tail: String = s.chars().skip(n - 40).collect();
    format!("{head}...{tail} ({n} characters)")
}

/// Parses a whole number (a count, a queue length, a seed) of at most
/// `max`: digits only, no sign, no blanks. The error says what is wanted;
/// a flag's own range (`--kp` 1 to L) is checked where it is known.
///
/// # Errors
///
/// Not digits only, or above `max`.
///
/// ```
/// use kicklab_model::parse_whole;
/// assert_eq!(parse_whole("256", u64::from(u32::MAX)), Ok(256));
/// assert!(parse_whole("-1", 10).unwrap_err().contains("not a whole number"));
/// assert!(parse_whole("11", 10).unwrap_err().contains("at most 10"));
/// ```
pub fn parse_whole(s: &str, max: u64) -> Result<u64, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "`{}` is not a whole number (digits only, no sign, e.g. 256)",
            shown(s)
        ));
    }
    match s.parse::<u64>() {
        Ok(v) if v <= max => Ok(v),
        _ => Err(format!("`{}` is too large (at most {max})", shown(s))),
    }
}

/// Splits a range `FROM..TO` at its two dots. A third dot (`1us...2us`,
/// which would read TO as `.2us`) or a second range is refused, as is an
/// empty end.
///
/// # Errors
///
/// [`DurationParseError::BadRange`].
///
/// ```
/// use kicklab_model::split_range;
/// assert_eq!(split_range("0.2us..3us").unwrap(), ("0.2us", "3us"));
/// assert!(split_range("1us...2us").is_err());
/// ```
pub fn split_range(s: &str) -> Result<(&str, &str), DurationParseError> {
    let bad = || DurationParseError::BadRange(shown(s));
    let (from, to) = s.split_once("..").ok_or_else(bad)?;
    let (from_t, to_t) = (from.trim(), to.trim());
    if from_t.is_empty() || to_t.is_empty() || to_t.starts_with('.') || to_t.contains("..") {
        return Err(bad());
    }
    Ok((from, to))
}

/// Parses a duration such as `1.1us`, `250ns`, `3ms`, `2s`, `0.5µs` or a bare
/// number (nanoseconds) to nanoseconds.
///
/// # Errors
///
/// [`DurationParseError`] for an empty string, a bad number, an unknown
/// unit, a negative / NaN / infinite value, or one longer than
/// [`MAX_DURATION_NS`].
///
/// # Examples
///
/// ```
/// use kicklab_model::parse_duration_ns;
/// assert_eq!(parse_duration_ns("1.1us").unwrap(), 1100.0);
/// assert_eq!(parse_duration_ns("250").unwrap(), 250.0);
/// assert!(parse_duration_ns("3 parsecs").is_err());
/// ```
pub fn parse_duration_ns(s: &str) -> Result<f64, DurationParseError> {
    let s = s.trim();
    if s.is_empty() {
        return Err(DurationParseError::Empty);
    }
    if s.contains("..") {
        return Err(DurationParseError::RangeNotValue(shown(s)));
    }
    let comma = s.split_once(',');
    if comma.is_some_and(|(a, b)| {
        !a.is_empty()
            && a.bytes().all(|c| c.is_ascii_digit())
            && b.starts_with(|c: char| c.is_ascii_digit())
    }) {
        return Err(DurationParseError::DecimalComma(shown(s)));
    }
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E')))
        .unwrap_or(s.len());
    // "1e3ns": 'e' belongs to the number; "2s" has no 'e' ambiguity. A unit
    // never starts with 'e', so the split above is unambiguous.
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| DurationParseError::BadNumber(shown(s)))?;
    let scale = match unit.trim() {
        "" | "ns" => 1.0,
        "us" | "µs" | "μs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        other => return Err(DurationParseError::BadUnit(shown(other))),
    };
    let ns = value * scale;
    if ns.is_nan() || ns < 0.0 || num.starts_with('-') {
        return Err(DurationParseError::OutOfRange(shown(s)));
    }
    // (The number is digits, so an infinite value is one too large for a
    // float, `1e400`: too long, as it is.)
    if ns > MAX_DURATION_NS {
        return Err(DurationParseError::TooLong(shown(s)));
    }
    // A value written above 0 that a float cannot hold (`1e-400`) reads
    // as 0: below a picosecond too, not a silent 0.
    let mantissa = num.split(['e', 'E']).next().unwrap_or("");
    let written_above_0 = mantissa.chars().any(|c| matches!(c, '1'..='9'));
    if (ns > 0.0 || written_above_0) && ns < 1.0 / PS_PER_NS {
        return Err(DurationParseError::BelowResolution(shown(s)));
    }
    Ok(ns)
}

/// Formats nanoseconds with a readable unit (`950ns`, `1.1us`, `3.9ms`).
pub fn fmt_ns(ns: f64) -> String {
    let a = ns.abs();
    if a >= 1e9 {
        format!("{}s", trim(ns / 1e9))
    } else if a >= 1e6 {
        format!("{}ms", trim(ns / 1e6))
    } else if a >= 1e3 {
        format!("{}us", trim(ns / 1e3))
    } else {
        format!("{}ns", trim(ns))
    }
}

/// Formats nanoseconds with a readable unit and at most `digits`
/// significant digits (`1.11us` for 1105 ns at 3, `950ns`, `38.2us`):
/// for text a reader compares at a glance; data files keep every digit.
pub fn fmt_ns_sig(ns: f64, digits: u32) -> String {
    let a = ns.abs();
    let (v, unit) = if a >= 1e9 {
        (ns / 1e9, "s")
    } else if a >= 1e6 {
        (ns / 1e6, "ms")
    } else if a >= 1e3 {
        (ns / 1e3, "us")
    } else {
        (ns, "ns")
    };
    format!("{}{unit}", sig(v, digits))
}

/// Significant digits of a figure a reader compares at a glance (the
/// report's text and tables, [`fmt_ns_short`]).
pub const SHORT_DIGITS: u32 = 3;

/// A time for people at a glance: [`fmt_ns_sig`] with [`SHORT_DIGITS`]
/// (`1.11us` for 1105 ns, `53.4us`, `75.6ns`).
pub fn fmt_ns_short(ns: f64) -> String {
    fmt_ns_sig(ns, SHORT_DIGITS)
}

/// `v` with at most `digits` significant digits, trailing zeros dropped
/// (a whole part longer than `digits` keeps its digits: 1234 at 3).
pub fn sig(v: f64, digits: u32) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    #[allow(clippy::cast_possible_truncation)]
    let magnitude = v.abs().log10().floor() as i32;
    #[allow(clippy::cast_possible_wrap, clippy::cast_sign_loss)]
    let decimals = (digits as i32 - 1 - magnitude).max(0) as usize;
    // Halves round away from 0 as written in decimal (1.105 to 1.11),
    // not as the nearest binary fraction lies (1.10499...).
    #[allow(clippy::cast_possible_wrap, clippy::cast_possible_truncation)]
    let scale = 10f64.powi(decimals as i32);
    let rounded = (v * scale * (1.0 + 1e-12)).round() / scale;
    let s = format!("{rounded:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_path_is_shown_by_its_ends_and_length() {
        use std::path::Path;
        assert_eq!(super::shown_path(Path::new("/tmp/p.json")), "/tmp/p.json");
        let long = format!("/tmp/{}/p.json", "d".repeat(300));
        let s = super::shown_path(Path::new(&long));
        assert!(
            s.starts_with("/tmp/ddd") && s.contains("/p.json (312 characters)"),
            "{s}"
        );
        assert!(s.chars().count() < 140, "{s}");
    }

    #[test]
    fn units() {
        assert_eq!(parse_duration_ns("1us").unwrap(), 1000.0);
        assert_eq!(parse_duration_ns("1.1µs").unwrap(), 1100.0);
        assert_eq!(parse_duration_ns("3ms").unwrap(), 3e6);
        assert_eq!(parse_duration_ns("2s").unwrap(), 2e9);
        assert_eq!(parse_duration_ns("42").unwrap(), 42.0);
        assert_eq!(parse_duration_ns("1e3ns").unwrap(), 1000.0);
        assert_eq!(parse_duration_ns(" 7ns ").unwrap(), 7.0);
    }

    #[test]
    fn significant_digits() {
        assert_eq!(fmt_ns_sig(1105.0, 3), "1.11us");
        assert_eq!(fmt_ns_sig(2202.5, 3), "2.2us");
        assert_eq!(fmt_ns_sig(53_430.2, 3), "53.4us");
        assert_eq!(fmt_ns_sig(75.5979, 3), "75.6ns");
        assert_eq!(fmt_ns_sig(-24_811.3, 3), "-24.8us");
        assert_eq!(fmt_ns_sig(4400.0, 3), "4.4us");
        assert_eq!(fmt_ns_sig(0.0, 3), "0ns");
        assert_eq!(sig(0.0734, 2), "0.073");
        assert_eq!(sig(1234.0, 3), "1234");
        assert_eq!(sig(0.99999, 3), "1");
    }

    #[test]
    fn rejects() {
        assert!(matches!(
            parse_duration_ns(""),
            Err(DurationParseError::Empty)
        ));
        // A range or a decimal comma says so, not "unknown unit".
        assert!(matches!(
            parse_duration_ns("1us..2us"),
            Err(DurationParseError::RangeNotValue(_))
        ));
        assert!(matches!(
            parse_duration_ns("2,5us"),
            Err(DurationParseError::DecimalComma(_))
        ));
        assert!(matches!(
            parse_duration_ns("5us,10us"),
            Err(DurationParseError::BadUnit(_))
        ));
        assert!(matches!(
            parse_duration_ns("1parsec"),
            Err(DurationParseError::BadUnit(_))
        ));
        assert!(matches!(
            parse_duration_ns("-1us"),
            Err(DurationParseError::OutOfRange(_))
        ));
        assert!(matches!(
            parse_duration_ns("NaN"),
            Err(DurationParseError::BadUnit(_) | DurationParseError::BadNumber(_))
        ));
        assert!(matches!(
            parse_duration_ns("abc"),
            Err(DurationParseError::BadUnit(_) | DurationParseError::BadNumber(_))
        ));
        // Too large for a float: too long, not "not finite".
        assert!(matches!(
            parse_duration_ns("1e400"),
            Err(DurationParseError::TooLong(_))
        ));
        assert!(matches!(
            parse_duration_ns("1e30s"),
            Err(DurationParseError::TooLong(_))
        ));
        assert!(matches!(
            parse_duration_ns("3601s"),
            Err(DurationParseError::TooLong(_))
        ));
        assert_eq!(parse_duration_ns("3600s").unwrap(), MAX_DURATION_NS);
        assert!(matches!(
            parse_duration_ns("1e-300ns"),
            Err(DurationParseError::BelowResolution(_))
        ));
        assert_eq!(parse_duration_ns("0.001ns").unwrap(), 0.001);
        assert_eq!(parse_duration_ns("0").unwrap(), 0.0);
        // Above 0 as written, 0 as a float: refused, not read as 0.
        for tiny in ["1e-400", "1e-400us", "5e-999s"] {
            assert!(
                matches!(
                    parse_duration_ns(tiny),
                    Err(DurationParseError::BelowResolution(_))
                ),
                "{tiny}"
            );
        }
        let zeros = format!("0.{}1us", "0".repeat(5000));
        assert!(matches!(
            parse_duration_ns(&zeros),
            Err(DurationParseError::BelowResolution(_))
        ));
        assert_eq!(parse_duration_ns("0e-400").unwrap(), 0.0);
        assert_eq!(parse_duration_ns("0.000us").unwrap(), 0.0);
    }

    #[test]
    fn a_long_bad_value_is_repeated_in_part() {
        let long = format!("{}us", "9x".repeat(2500));
        let msg = parse_duration_ns(&long).unwrap_err().to_string();
        assert!(
            msg.len() < 150 && msg.contains("(5001 characters)"),
            "{msg}"
        );
        let msg = parse_duration_ns(&"1".repeat(400)).unwrap_err().to_string();
        assert!(msg.len() < 150 && msg.contains("(400 characters)"), "{msg}");
        assert_eq!(shown("1.1us"), "1.1us");
    }

    #[test]
    fn a_range_has_two_dots_between_two_values() {
        assert_eq!(split_range("1us..2us").unwrap(), ("1us", "2us"));
        assert_eq!(split_range("1..64").unwrap(), ("1", "64"));
        for bad in [
            "1us...2us",
            "1us....2us",
            "1us..2us..3us",
            "..2us",
            "1us..",
            "1us-2us",
        ] {
            assert!(
                matches!(split_range(bad), Err(DurationParseError::BadRange(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn ps_rounding_and_format() {
        assert_eq!(to_ps(1.1), 1100);
        assert_eq!(to_ps(1100.0), 1_100_000);
        assert_eq!(to_ps(-3.0), 0);
        assert_eq!(fmt_ns(1100.0), "1.1us");
        assert_eq!(fmt_ns(950.0), "950ns");
    }
}
