//! Reading a cost from its string form (`2us`, `exp:1us`,
//! `phases:0.5us@5000+3us@5000`, `mix:0.01:1us+50us`). What does not live
//! here: the cost types and their means (the module above).

use super::*;
use crate::time::parse_duration_ns;

impl Cost {
    /// Parses the string forms listed on [`Cost`].
    ///
    /// # Errors
    ///
    /// [`CostParseError`] naming what is wrong.
    ///
    /// # Examples
    ///
    /// ```
    /// use kicklab_model::Cost;
    /// assert_eq!(Cost::parse("1.1us").unwrap(), Cost::Const(1100.0));
    /// assert_eq!(Cost::parse("exp:1us").unwrap().mean_ns(), 1000.0);
    /// assert!(Cost::parse("gamma:1us").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<Self, CostParseError> {
        let s = s.trim();
        let Some((name, args)) = s.split_once(':') else {
            return Ok(Cost::Const(parse_duration_ns(s)?));
        };
        let name = name.trim().to_ascii_lowercase();
        match name.as_str() {
            "phases" => return parse_phases(args),
            "mix" => return parse_mix(args),
            _ => {}
        }
        let args: Vec<&str> = args.split(',').map(str::trim).collect();
        let want = |dist: &'static str, n: usize, usage: &'static str| {
            if args.len() == n {
                Ok(())
            } else {
                Err(CostParseError::Arity {
                    dist,
                    expected: n,
                    usage,
                })
            }
        };
        let cost = match name.as_str() {
            "const" => {
                want("const", 1, "const:1us")?;
                Cost::Const(parse_duration_ns(args[0])?)
            }
            "uniform" => {
                want("uniform", 2, "uniform:0.8us,1.2us")?;
                Cost::Uniform {
                    lo_ns: parse_duration_ns(args[0])?,
                    hi_ns: parse_duration_ns(args[1])?,
                }
            }
            "exp" => {
                want("exp", 1, "exp:1us (mean)")?;
                Cost::Exp {
                    mean_ns: parse_duration_ns(args[0])?,
                }
            }
            "normal" => {
                want("normal", 2, "normal:1us,0.1us (mean, sd)")?;
                Cost::Normal {
                    mu_ns: parse_duration_ns(args[0])?,
                    sd_ns: parse_duration_ns(args[1])?,
                }
            }
            "lognormal" => {
                want("lognormal", 2, "lognormal:1us,0.2 (mean, sigma)")?;
                let sigma: f64 = args[1]
                    .parse()
                    .map_err(|_| CostParseError::BadNumber(args[1].to_string()))?;
                Cost::LogNormal {
                    mean_ns: parse_duration_ns(args[0])?,
                    sigma,
                }
            }
            other => return Err(CostParseError::UnknownDist(other.to_string())),
        };
        cost.check().map_err(CostParseError::Invalid)?;
        Ok(cost)
    }
}

const PHASES_USAGE: &str =
    "phases:<dist>@<count>+<dist>@<count>[+...], e.g. phases:0.5us@5000+3us@5000";
const MIX_USAGE: &str = "mix:<p>:<dist>+<dist>, e.g. mix:0.01:1us+50us";

/// The arguments of `phases:`.
fn parse_phases(args: &str) -> Result<Cost, CostParseError> {
    let invalid = CostParseError::Invalid;
    let mut parts = Vec::new();
    for part in split_plus(args) {
        refuse_nesting("phases", part)?;
        let Some((dist, count)) = part.rsplit_once('@') else {
            return Err(invalid(format!(
                "phase `{}` has no `@<count>`: {PHASES_USAGE}",
                part.trim()
            )));
        };
        let count: u64 = match count.trim().parse() {
            Ok(n) if n >= 1 => n,
            _ => {
                return Err(invalid(format!(
                    "phase count `{}` must be an integer >= 1: {PHASES_USAGE}",
                    count.trim()
                )))
            }
        };
        let dist = Cost::parse(dist)?.simple().expect("nesting refused above");
        parts.push((dist, count));
    }
    let cost =
        Cost::Phases(Phases::new(&parts).map_err(|e| invalid(format!("{e}: {PHASES_USAGE}")))?);
    cost.check().map_err(invalid)?;
    Ok(cost)
}

/// The arguments of `mix:`.
fn parse_mix(args: &str) -> Result<Cost, CostParseError> {
    let invalid = CostParseError::Invalid;
    let Some((p, dists)) = args.split_once(':') else {
        return Err(invalid(format!(
            "mix needs a probability and two distributions: {MIX_USAGE}"
        )));
    };
    let p: f64 = match p.trim().parse() {
        Ok(p) if (0.0..=1.0).contains(&p) => p,
        _ => {
            return Err(invalid(format!(
                "mix probability `{}` must be a number from 0 to 1: {MIX_USAGE}",
                p.trim()
            )))
        }
    };
    let parts = split_plus(dists);
    for part in &parts {
        refuse_nesting("mix", part)?;
    }
    let [first, second] = parts[..] else {
        return Err(invalid(format!(
            "mix takes exactly two distributions, not {}: {MIX_USAGE}",
            parts.len()
        )));
    };
    let simple = |s: &str| -> Result<SimpleCost, CostParseError> {
        Ok(Cost::parse(s)?.simple().expect("nesting refused above"))
    };
    let cost = Cost::Mix(Mix {
        p,
        first: simple(first)?,
        second: simple(second)?,
    });
    cost.check().map_err(invalid)?;
    Ok(cost)
}

/// Refuses a `phases` or `mix` inside `outer`.
fn refuse_nesting(outer: &str, part: &str) -> Result<(), CostParseError> {
    let name = part
        .split_once(':')
        .map(|(n, _)| n.trim().to_ascii_lowercase());
    match name.as_deref() {
        Some(inner @ ("phases" | "mix")) => Err(CostParseError::Invalid(format!(
            "`{inner}` cannot be nested in `{outer}`: its parts are simple distributions (const, uniform, exp, normal, lognormal)"
        ))),
        _ => Ok(()),
    }
}

/// Splits at `+`, except a `+` in a number's exponent (`1e+3ns`).
fn split_plus(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..b.len() {
        let exponent = i >= 2
            && matches!(b[i - 1], b'e' | b'E')
            && (b[i - 2].is_ascii_digit() || b[i - 2] == b'.');
        if b[i] == b'+' && !exponent {
            out.push(&s[start..i]);
            start = i + 1;
        }
    }
    out.push(&s[start..]);
    out
}
