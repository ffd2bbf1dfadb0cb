//! Cost distributions as plain data: what a cost is and its mean. Sampling
//! lives in the simulator (`kicklab-sim`), so this crate stays free of RNGs.

use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::time::{fmt_ns, parse_duration_ns, DurationParseError};

/// A per-event cost [ns]: a constant or a distribution drawn once per event.
///
/// String forms (see [`Cost::parse`]): `1.1us` or `const:1.1us`,
/// `uniform:0.8us,1.2us`, `exp:1us` (mean), `normal:1us,0.1us` (mean and
/// standard deviation of the normal *before* truncation at 0; negative draws
/// are redrawn), `lognormal:1us,0.2` (mean and sigma of the underlying
/// normal).
///
/// Two compound forms build on those simple ones (no nesting):
/// - `phases:<dist>@<count>+<dist>@<count>[+...]` (2 to [`MAX_PHASES`]
///   phases): the first `count` draws come from the first distribution, the
///   next `count` from the second, ..., then it starts over; draw `i` falls
///   in the phase of `i mod (sum of counts)`. E.g. `phases:0.5us@5000+3us@5000`
///   (rate steps), `phases:exp:1us@1000+2us@3000`. Its mean is the
///   count-weighted mean of the phases' means.
/// - `mix:<p>:<dist>+<dist>`: each draw comes from the second distribution
///   with probability `p` (`0 <= p <= 1`), else from the first. E.g.
///   `mix:0.01:1us+50us` (rare long messages). Its mean is
///   `(1 - p) mean1 + p mean2`.
///
/// Serialized (JSON, TOML profiles) as its exact string form, e.g.
/// `"1100ns"` or `"exp:1000ns"` ([`Cost::spec`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cost {
    /// Always the same value [ns].
    Const(f64),
    /// Uniform on `[lo_ns, hi_ns]`.
    Uniform {
        /// Lower bound [ns].
        lo_ns: f64,
        /// Upper bound [ns].
        hi_ns: f64,
    },
    /// Exponential with the given mean [ns].
    Exp {
        /// Mean [ns].
        mean_ns: f64,
    },
    /// Normal `N(mu, sd)` truncated to `[0, inf)` by redrawing.
    Normal {
        /// Mean of the untruncated normal [ns].
        mu_ns: f64,
        /// Standard deviation of the untruncated normal [ns].
        sd_ns: f64,
    },
    /// Log-normal with the given mean [ns] and log-space sigma.
    LogNormal {
        /// Mean of the distribution (not of its log) [ns].
        mean_ns: f64,
        /// Standard deviation of the underlying normal (dimensionless).
        sigma: f64,
    },
    /// Simple distributions taking turns by draw count (`phases:`).
    Phases(Phases),
    /// A two-way random mixture of simple distributions (`mix:`).
    Mix(Mix),
}

/// The most phases a [`Phases`] cost holds (a fixed array keeps [`Cost`]
/// `Copy`).
pub const MAX_PHASES: usize = 4;

/// The largest log-space sigma of a lognormal cost: the sample mean of n
/// draws has a relative spread of sqrt((e^(sigma^2) - 1) / n), 9% for a
/// million draws at 3 (and 300% at 4). Calibrated spreads are capped the
/// same ([`crate::Stat::as_cost`]).
pub const MAX_LOG_SIGMA: f64 = 3.0;

/// One of the simple distributions: what the phases of [`Cost::Phases`] and
/// the two sides of [`Cost::Mix`] are made of. Same meaning as the
/// [`Cost`] variants of the same names; convert with [`Cost::from`] and
/// [`Cost::simple`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SimpleCost {
    /// [`Cost::Const`].
    Const(f64),
    /// [`Cost::Uniform`].
    Uniform {
        /// Lower bound [ns].
        lo_ns: f64,
        /// Upper bound [ns].
        hi_ns: f64,
    },
    /// [`Cost::Exp`].
    Exp {
        /// Mean [ns].
        mean_ns: f64,
    },
    /// [`Cost::Normal`].
    Normal {
        /// Mean of the untruncated normal [ns].
        mu_ns: f64,
        /// Standard deviation of the untruncated normal [ns].
        sd_ns: f64,
    },
    /// [`Cost::LogNormal`].
    LogNormal {
        /// Mean of the distribution (not of its log) [ns].
        mean_ns: f64,
        /// Standard deviation of the underlying normal (dimensionless).
        sigma: f64,
    },
}

impl From<SimpleCost> for Cost {
    fn from(c: SimpleCost) -> Cost {
        match c {
            SimpleCost::Const(v) => Cost::Const(v),
            SimpleCost::Uniform { lo_ns, hi_ns } => Cost::Uniform { lo_ns, hi_ns },
            SimpleCost::Exp { mean_ns } => Cost::Exp { mean_ns },
            SimpleCost::Normal { mu_ns, sd_ns } => Cost::Normal { mu_ns, sd_ns },
            SimpleCost::LogNormal { mean_ns, sigma } => Cost::LogNormal { mean_ns, sigma },
        }
    }
}

impl SimpleCost {
    /// As a [`Cost`] (for its mean, check, string forms, sampling).
    pub fn cost(self) -> Cost {
        Cost::from(self)
    }
}

/// The phases of a [`Cost::Phases`]: 2 to [`MAX_PHASES`] simple
/// distributions, each with the number of consecutive draws it lasts.
///
/// Built by [`Phases::new`], which enforces the shape (the unused slots
/// stay zero, so `==` compares the phases only).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phases {
    parts: [(SimpleCost, u64); MAX_PHASES],
    n: u8,
}

impl Phases {
    /// Phases from `(distribution, draws)` pairs, in order.
    ///
    /// # Errors
    ///
    /// A sentence when there are fewer than 2 or more than [`MAX_PHASES`]
    /// phases, a count is 0, or the counts add up past `u64::MAX`. The
    /// distributions themselves are checked by [`Cost::check`].
    pub fn new(parts: &[(SimpleCost, u64)]) -> Result<Phases, String> {
        if parts.len() < 2 || parts.len() > MAX_PHASES {
            return Err(format!(
                "phases takes 2 to {MAX_PHASES} phases, not {}",
                parts.len()
            ));
        }
        if let Some((c, _)) = parts.iter().find(|(_, n)| *n == 0) {
            return Err(format!(
                "phase `{}` has count 0: counts are integers >= 1",
                c.cost()
            ));
        }
        parts
            .iter()
            .try_fold(0u64, |t, (_, n)| t.checked_add(*n))
            .ok_or("the phases' counts add up to more than 2^64 draws")?;
        let mut all = [(SimpleCost::Const(0.0), 0); MAX_PHASES];
        all[..parts.len()].copy_from_slice(parts);
        Ok(Phases {
            parts: all,
            #[allow(clippy::cast_possible_truncation)]
            n: parts.len() as u8,
        })
    }

    /// The phases in order: `(distribution, draws)`.
    pub fn parts(&self) -> &[(SimpleCost, u64)] {
        &self.parts[..usize::from(self.n)]
    }

    /// Draws in one cycle through all phases.
    pub fn total(&self) -> u64 {
        self.parts().iter().map(|(_, n)| n).sum()
    }

    /// The phase (index into [`Phases::parts`]) that draw `i` (from 0)
    /// comes from.
    pub fn phase_of(&self, i: u64) -> usize {
        let mut r = i % self.total();
        for (k, (_, n)) in self.parts().iter().enumerate() {
            if r < *n {
                return k;
            }
            r -= n;
        }
        unreachable!("i mod total lies in a phase")
    }

    /// The same counts with each distribution mapped by `f`.
    fn map(&self, f: impl Fn(Cost) -> Cost) -> Phases {
        let mut out = *self;
        for (c, _) in &mut out.parts[..usize::from(self.n)] {
            *c = f(c.cost()).simple().expect("maps simple to simple");
        }
        out
    }
}

/// The two sides of a [`Cost::Mix`]: `second` with probability `p`, else
/// `first`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mix {
    /// Probability of drawing from `second` (`0 <= p <= 1`).
    pub p: f64,
    /// Drawn with probability `1 - p`.
    pub first: SimpleCost,
    /// Drawn with probability `p`.
    pub second: SimpleCost,
}

impl Mix {
    fn map(&self, f: impl Fn(Cost) -> Cost) -> Mix {
        let g = |c: SimpleCost| f(c.cost()).simple().expect("maps simple to simple");
        Mix {
            p: self.p,
            first: g(self.first),
            second: g(self.second),
        }
    }
}

/// Why a cost string was rejected.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum CostParseError {
    /// Unknown distribution name.
    #[error(
        "unknown distribution `{0}` (use const, uniform, exp, normal, lognormal, phases or mix)"
    )]
    UnknownDist(String),
    /// Wrong number of comma-separated arguments.
    #[error("`{dist}` takes {expected} argument(s): {usage}")]
    Arity {
        /// Distribution name.
        dist: &'static str,
        /// Expected count.
        expected: usize,
        /// Example.
        usage: &'static str,
    },
    /// A duration argument did not parse.
    #[error(transparent)]
    Duration(#[from] DurationParseError),
    /// A plain number (lognormal sigma) did not parse or is out of range.
    #[error("`{0}` must be a finite number >= 0")]
    BadNumber(String),
    /// Arguments that parse but make no distribution (lo > hi, ...).
    #[error("{0}")]
    Invalid(String),
}

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

    /// Checks that the numbers make a distribution of non-negative costs.
    ///
    /// # Errors
    ///
    /// A sentence saying what is wrong.
    pub fn check(&self) -> Result<(), String> {
        let max = crate::MAX_DURATION_NS;
        let ok = |v: f64| v.is_finite() && v >= 0.0;
        let part = |c: SimpleCost| c.cost().check().map_err(|e| format!("`{}`: {e}", c.cost()));
        let durations = match *self {
            Cost::Const(v) | Cost::Exp { mean_ns: v } | Cost::LogNormal { mean_ns: v, .. } => {
                [v, 0.0]
            }
            Cost::Uniform { lo_ns, hi_ns } => [lo_ns, hi_ns],
            Cost::Normal { mu_ns, sd_ns } => [mu_ns, sd_ns],
            Cost::Phases(ph) => {
                return ph.parts().iter().try_for_each(|&(c, _)| part(c));
            }
            Cost::Mix(m) => {
                if !(m.p >= 0.0 && m.p <= 1.0) {
                    return Err(format!("mix probability {} must be in [0, 1]", m.p));
                }
                part(m.first)?;
                return part(m.second);
            }
        };
        if let Some(v) = durations.into_iter().find(|&v| ok(v) && v > max) {
            return Err(format!(
                "{} is longer than the longest duration kicklab handles (1h)",
                crate::fmt_ns(v)
            ));
        }
        match *self {
            Cost::Const(v) if !ok(v) => Err(format!("cost {v} is not a finite value >= 0")),
            Cost::Uniform { lo_ns, hi_ns } if !(ok(lo_ns) && ok(hi_ns) && lo_ns <= hi_ns) => Err(
                format!(
                    "uniform bounds {},{}: need 0 <= lo <= hi",
                    crate::fmt_ns(lo_ns),
                    crate::fmt_ns(hi_ns)
                ),
            ),
            Cost::Exp { mean_ns } if !ok(mean_ns) => {
                Err(format!("exp mean {mean_ns} must be >= 0"))
            }
            Cost::Normal { mu_ns, sd_ns } if !(ok(mu_ns) && ok(sd_ns)) => Err(format!(
                "normal {mu_ns},{sd_ns}: need mean >= 0 and sd >= 0"
            )),
            Cost::LogNormal { mean_ns, sigma }
                if !(ok(mean_ns) && ok(sigma) && sigma <= MAX_LOG_SIGMA) =>
            {
                Err(format!(
                    "lognormal {},{sigma}: need mean >= 0 and 0 <= sigma <= {MAX_LOG_SIGMA} \
                     (beyond it the mean of a million draws misses the stated mean by more than 10%: \
                     its weight is in draws too rare to come up)",
                    fmt_ns(mean_ns)
                ))
            }
            _ => Ok(()),
        }
    }

    /// The mean cost [ns]. For the truncated normal this is the mean of the
    /// truncated distribution, `mu + sd * phi(a) / (1 - Phi(a))` with
    /// `a = -mu / sd`.
    pub fn mean_ns(&self) -> f64 {
        match *self {
            Cost::Const(v) => v,
            Cost::Uniform { lo_ns, hi_ns } => 0.5 * (lo_ns + hi_ns),
            Cost::Exp { mean_ns } | Cost::LogNormal { mean_ns, .. } => mean_ns,
            Cost::Normal { mu_ns, sd_ns } => {
                if sd_ns == 0.0 {
                    return mu_ns;
                }
                let a = -mu_ns / sd_ns;
                let pdf = (-0.5 * a * a).exp() / (2.0 * std::f64::consts::PI).sqrt();
                let tail = 0.5 * libm::erfc(a / std::f64::consts::SQRT_2); // 1 - Phi(a)
                mu_ns + sd_ns * pdf / tail
            }
            Cost::Phases(ph) => {
                let parts = ph.parts();
                let m0 = parts[0].0.cost().mean_ns();
                if parts.iter().all(|(c, _)| c.cost().mean_ns() == m0) {
                    return m0; // exact, with no rounding from the weights
                }
                #[allow(clippy::cast_precision_loss)]
                let sum: f64 = parts
                    .iter()
                    .map(|&(c, n)| n as f64 * c.cost().mean_ns())
                    .sum();
                #[allow(clippy::cast_precision_loss)]
                let total = ph.total() as f64;
                sum / total
            }
            Cost::Mix(m) => {
                let (a, b) = (m.first.cost().mean_ns(), m.second.cost().mean_ns());
                if a == b {
                    a
                } else {
                    (1.0 - m.p) * a + m.p * b
                }
            }
        }
    }

    /// True for [`Cost::Const`] (and for degenerate distributions with no
    /// spread, which sample as constants).
    pub fn is_const(&self) -> bool {
        match *self {
            Cost::Const(_) => true,
            Cost::Uniform { lo_ns, hi_ns } => lo_ns == hi_ns,
            Cost::Exp { mean_ns } => mean_ns == 0.0,
            Cost::Normal { sd_ns, .. } => sd_ns == 0.0,
            Cost::LogNormal { mean_ns, sigma } => sigma == 0.0 || mean_ns == 0.0,
            // Only when every phase draws the same constant.
            Cost::Phases(ph) => {
                let m0 = ph.parts()[0].0.cost().mean_ns();
                ph.parts()
                    .iter()
                    .all(|(c, _)| c.cost().is_const() && c.cost().mean_ns() == m0)
            }
            Cost::Mix(m) => {
                let (a, b) = (m.first.cost(), m.second.cost());
                if m.p == 0.0 {
                    a.is_const()
                } else if m.p == 1.0 {
                    b.is_const()
                } else {
                    a.is_const() && b.is_const() && a.mean_ns() == b.mean_ns()
                }
            }
        }
    }

    /// The simple distribution this is, or `None` for `phases` and `mix`.
    pub fn simple(&self) -> Option<SimpleCost> {
        Some(match *self {
            Cost::Const(v) => SimpleCost::Const(v),
            Cost::Uniform { lo_ns, hi_ns } => SimpleCost::Uniform { lo_ns, hi_ns },
            Cost::Exp { mean_ns } => SimpleCost::Exp { mean_ns },
            Cost::Normal { mu_ns, sd_ns } => SimpleCost::Normal { mu_ns, sd_ns },
            Cost::LogNormal { mean_ns, sigma } => SimpleCost::LogNormal { mean_ns, sigma },
            Cost::Phases(_) | Cost::Mix(_) => return None,
        })
    }

    /// The same kind of distribution scaled so that its mean is `mean_ns`
    /// (used by sweeps: `--vary wp=...` on `exp:1us` keeps it exponential;
    /// `phases` and `mix` scale every part by the same factor).
    pub fn with_mean(&self, mean_ns: f64) -> Cost {
        let old = self.mean_ns();
        let r = if old > 0.0 { mean_ns / old } else { 0.0 };
        match *self {
            Cost::Const(_) => Cost::Const(mean_ns),
            Cost::Exp { .. } => Cost::Exp { mean_ns },
            Cost::LogNormal { sigma, .. } => Cost::LogNormal { mean_ns, sigma },
            _ if old <= 0.0 => Cost::Const(mean_ns),
            Cost::Uniform { lo_ns, hi_ns } => Cost::Uniform {
                lo_ns: lo_ns * r,
                hi_ns: hi_ns * r,
            },
            Cost::Normal { mu_ns, sd_ns } => Cost::Normal {
                mu_ns: mu_ns * r,
                sd_ns: sd_ns * r,
            },
            Cost::Phases(ph) => Cost::Phases(ph.map(|c| c.with_mean(c.mean_ns() * r))),
            Cost::Mix(m) => Cost::Mix(m.map(|c| c.with_mean(c.mean_ns() * r))),
        }
    }
}

impl Cost {
    /// The same cost plus `ns` on every draw where the distribution allows
    /// it (a constant, a uniform: shifted), else the same kind of
    /// distribution with its mean raised by `ns` ([`Cost::with_mean`]):
    /// either way the mean grows by exactly `ns` (the truncated normal's
    /// by `ns` as well, through [`Cost::with_mean`]). `phases` and `mix`
    /// add `ns` to every part.
    pub fn plus(&self, ns: f64) -> Cost {
        match *self {
            Cost::Phases(ph) => Cost::Phases(ph.map(|c| c.plus(ns))),
            Cost::Mix(m) => Cost::Mix(m.map(|c| c.plus(ns))),
            Cost::Const(v) => Cost::Const(v + ns),
            Cost::Uniform { lo_ns, hi_ns } => Cost::Uniform {
                lo_ns: lo_ns + ns,
                hi_ns: hi_ns + ns,
            },
            _ => self.with_mean(self.mean_ns() + ns),
        }
    }
}

impl fmt::Display for Cost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Cost::Const(v) => write!(f, "{}", fmt_ns(v)),
            Cost::Uniform { lo_ns, hi_ns } => {
                write!(f, "uniform:{},{}", fmt_ns(lo_ns), fmt_ns(hi_ns))
            }
            Cost::Exp { mean_ns } => write!(f, "exp:{}", fmt_ns(mean_ns)),
            Cost::Normal { mu_ns, sd_ns } => {
                write!(f, "normal:{},{}", fmt_ns(mu_ns), fmt_ns(sd_ns))
            }
            Cost::LogNormal { mean_ns, sigma } => {
                write!(f, "lognormal:{},{sigma}", fmt_ns(mean_ns))
            }
            Cost::Phases(ph) => {
                f.write_str("phases:")?;
                for (i, (c, n)) in ph.parts().iter().enumerate() {
                    let sep = if i == 0 { "" } else { "+" };
                    write!(f, "{sep}{}@{n}", c.cost())?;
                }
                Ok(())
            }
            Cost::Mix(m) => write!(f, "mix:{}:{}+{}", m.p, m.first.cost(), m.second.cost()),
        }
    }
}

impl Cost {
    /// The exact string form (nanoseconds, shortest round-trip decimals),
    /// parsed back by [`Cost::parse`] to the same value.
    pub fn spec(&self) -> String {
        match *self {
            Cost::Const(v) => format!("{v}ns"),
            Cost::Uniform { lo_ns, hi_ns } => format!("uniform:{lo_ns}ns,{hi_ns}ns"),
            Cost::Exp { mean_ns } => format!("exp:{mean_ns}ns"),
            Cost::Normal { mu_ns, sd_ns } => format!("normal:{mu_ns}ns,{sd_ns}ns"),
            Cost::LogNormal { mean_ns, sigma } => format!("lognormal:{mean_ns}ns,{sigma}"),
            Cost::Phases(ph) => {
                let parts: Vec<String> = ph
                    .parts()
                    .iter()
                    .map(|(c, n)| format!("{}@{n}", c.cost().spec()))
                    .collect();
                format!("phases:{}", parts.join("+"))
            }
            Cost::Mix(m) => format!(
                "mix:{}:{}+{}",
                m.p,
                m.first.cost().spec(),
                m.second.cost().spec()
            ),
        }
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

impl Serialize for Cost {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.spec())
    }
}

impl<'de> Deserialize<'de> for Cost {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Cost::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl From<f64> for Cost {
    fn from(ns: f64) -> Self {
        Cost::Const(ns)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ph(parts: &[(Cost, u64)]) -> Cost {
        let parts: Vec<_> = parts
            .iter()
            .map(|&(c, n)| (c.simple().unwrap(), n))
            .collect();
        Cost::Phases(Phases::new(&parts).unwrap())
    }

    fn mix(p: f64, a: Cost, b: Cost) -> Cost {
        Cost::Mix(Mix {
            p,
            first: a.simple().unwrap(),
            second: b.simple().unwrap(),
        })
    }

    #[test]
    fn parses_phases_and_mix() {
        assert_eq!(
            Cost::parse("phases:0.5us@5000+3us@5000").unwrap(),
            ph(&[(Cost::Const(500.0), 5000), (Cost::Const(3000.0), 5000)])
        );
        assert_eq!(
            Cost::parse(" Phases: exp:1us@1000 + uniform:1us,2us@3000 + lognormal:1us,0.5@7 ")
                .unwrap(),
            ph(&[
                (Cost::Exp { mean_ns: 1000.0 }, 1000),
                (
                    Cost::Uniform {
                        lo_ns: 1000.0,
                        hi_ns: 2000.0
                    },
                    3000
                ),
                (
                    Cost::LogNormal {
                        mean_ns: 1000.0,
                        sigma: 0.5
                    },
                    7
                ),
            ])
        );
        // Four phases, the most; a `+` in an exponent is part of the number.
        let c = Cost::parse("phases:1e+3ns@1+2us@2+normal:3us,1us@3+const:4us@4").unwrap();
        let Cost::Phases(p) = c else { panic!() };
        assert_eq!(p.parts().len(), 4);
        assert_eq!(p.parts()[0], (SimpleCost::Const(1000.0), 1));
        assert_eq!(p.total(), 10);
        assert_eq!(
            Cost::parse("mix:0.01:1us+50us").unwrap(),
            mix(0.01, Cost::Const(1000.0), Cost::Const(50_000.0))
        );
        assert_eq!(
            Cost::parse("MIX:1:exp:1us+normal:2us,0.5us").unwrap(),
            mix(
                1.0,
                Cost::Exp { mean_ns: 1000.0 },
                Cost::Normal {
                    mu_ns: 2000.0,
                    sd_ns: 500.0
                }
            )
        );
        assert!(Cost::parse("mix:0:1us+2us").is_ok());
    }

    #[test]
    fn rejects_bad_phases_and_mix() {
        let err = |s: &str| match Cost::parse(s) {
            Err(CostParseError::Invalid(m)) => m,
            other => panic!("{s}: {other:?}"),
        };
        let m = err("phases:1us@1+2us@1+3us@1+4us@1+5us@1");
        assert!(m.contains("2 to 4 phases, not 5"), "{m}");
        let m = err("phases:1us@1");
        assert!(m.contains("2 to 4 phases, not 1"), "{m}");
        let m = err("phases:1us@0+2us@1");
        assert!(m.contains("count `0`"), "{m}");
        let m = err("phases:1us@-1+2us@1");
        assert!(m.contains("integer >= 1"), "{m}");
        let m = err("phases:1us@1.5+2us@1");
        assert!(m.contains("integer >= 1"), "{m}");
        let m = err("phases:1us+2us@1");
        assert!(m.contains("no `@<count>`"), "{m}");
        let m = err("phases:");
        assert!(m.contains("no `@<count>`"), "{m}");
        let m = err("phases:phases:1us@1+2us@2@3+1us@1");
        assert!(m.contains("`phases` cannot be nested in `phases`"), "{m}");
        let m = err("phases:mix:0.5:1us+2us@3+1us@1");
        assert!(m.contains("`mix` cannot be nested in `phases`"), "{m}");
        let m = err("mix:0.5:phases:1us@1+2us@1");
        assert!(m.contains("`phases` cannot be nested in `mix`"), "{m}");
        let m = err("mix:0.5:mix:0.5:1us+2us");
        assert!(m.contains("`mix` cannot be nested in `mix`"), "{m}");
        for p in ["1.5", "-0.1", "NaN", "inf", "x", ""] {
            let m = err(&format!("mix:{p}:1us+2us"));
            assert!(m.contains("from 0 to 1"), "{p}: {m}");
        }
        let m = err("mix:0.5:1us");
        assert!(m.contains("exactly two distributions, not 1"), "{m}");
        let m = err("mix:0.5:1us+2us+3us");
        assert!(m.contains("exactly two distributions, not 3"), "{m}");
        let m = err("mix:1us+2us");
        assert!(m.contains("probability and two distributions"), "{m}");
        let m = err("phases:uniform:2us,1us@1+1us@1");
        assert!(m.contains("lo <= hi"), "{m}");
        // The parts' own errors come through.
        assert!(matches!(
            Cost::parse("phases:gamma:1us@1+1us@1"),
            Err(CostParseError::UnknownDist(_))
        ));
        assert!(matches!(
            Cost::parse("mix:0.5:1us+-2us"),
            Err(CostParseError::Duration(_))
        ));
        let m = Cost::parse("gamma:1us").unwrap_err().to_string();
        assert!(m.contains("phases or mix"), "{m}");
        // check() refuses what parse would.
        let Cost::Mix(mut m) = mix(0.5, Cost::Const(1.0), Cost::Const(2.0)) else {
            unreachable!()
        };
        m.p = 1.01;
        assert!(Cost::Mix(m).check().is_err());
        m.p = 0.5;
        m.second = SimpleCost::Exp { mean_ns: -1.0 };
        assert!(Cost::Mix(m).check().is_err());
        assert!(Phases::new(&[(SimpleCost::Const(1.0), 1)]).is_err());
        assert!(Phases::new(&[
            (SimpleCost::Const(1.0), u64::MAX),
            (SimpleCost::Const(1.0), 1)
        ])
        .is_err());
    }

    #[test]
    fn compound_means_and_shapes() {
        let p = Cost::parse("phases:0.5us@5000+3us@5000").unwrap();
        assert_eq!(p.mean_ns(), 1750.0);
        let p = Cost::parse("phases:exp:1us@1000+2us@3000").unwrap();
        assert_eq!(p.mean_ns(), 1750.0);
        let m = Cost::parse("mix:0.01:1us+50us").unwrap();
        assert!((m.mean_ns() - 1490.0).abs() < 1e-9, "{}", m.mean_ns());
        // Equal means are exact, whatever the weights.
        assert_eq!(
            Cost::parse("phases:0.1ns@3+exp:0.1ns@7").unwrap().mean_ns(),
            0.1
        );
        assert_eq!(
            Cost::parse("mix:0.3:0.1ns+exp:0.1ns").unwrap().mean_ns(),
            0.1
        );

        assert!(!p.is_const());
        assert!(!m.is_const());
        assert!(Cost::parse("phases:1us@3+const:1000ns@2")
            .unwrap()
            .is_const());
        assert!(!Cost::parse("phases:1us@3+exp:1us@2").unwrap().is_const());
        assert!(Cost::parse("mix:0.5:1us+1us").unwrap().is_const());
        assert!(Cost::parse("mix:0:1us+exp:1us").unwrap().is_const());
        assert!(Cost::parse("mix:1:exp:1us+1us").unwrap().is_const());
        assert!(!Cost::parse("mix:1:1us+exp:1us").unwrap().is_const());

        let Cost::Phases(ph) = Cost::parse("phases:1ns@3+2ns@2").unwrap() else {
            unreachable!()
        };
        let phases: Vec<usize> = (0..11).map(|i| ph.phase_of(i)).collect();
        assert_eq!(phases, [0, 0, 0, 1, 1, 0, 0, 0, 1, 1, 0]);

        // Scaling keeps the shape and sets the mean.
        for c in [p, m] {
            let d = c.with_mean(3500.0);
            assert!((d.mean_ns() - 3500.0).abs() < 1e-9, "{c} -> {d}");
            assert_eq!(std::mem::discriminant(&c), std::mem::discriminant(&d));
            d.check().unwrap();
        }
        assert_eq!(
            Cost::parse("phases:0.5us@5+3us@5")
                .unwrap()
                .with_mean(3500.0),
            Cost::parse("phases:1us@5+6us@5").unwrap()
        );
        assert_eq!(
            Cost::parse("phases:0.5us@5+3us@5").unwrap().plus(100.0),
            Cost::parse("phases:0.6us@5+3.1us@5").unwrap()
        );
    }

    #[test]
    fn compound_serde_round_trips() {
        for s in [
            "phases:0.5us@5000+exp:3us@5000",
            "mix:0.01:1us+lognormal:50us,0.5",
        ] {
            let c = Cost::parse(s).unwrap();
            let j = serde_json::to_string(&c).unwrap();
            assert_eq!(serde_json::from_str::<Cost>(&j).unwrap(), c, "{j}");
        }
    }

    fn simple() -> impl Strategy<Value = Cost> {
        let ns = 0.0f64..1e7;
        prop_oneof![
            ns.clone().prop_map(Cost::Const),
            (ns.clone(), 0.0f64..1e6).prop_map(|(a, d)| Cost::Uniform {
                lo_ns: a,
                hi_ns: a + d
            }),
            ns.clone().prop_map(|m| Cost::Exp { mean_ns: m }),
            (ns.clone(), 0.0f64..1e6).prop_map(|(m, sd)| Cost::Normal {
                mu_ns: m,
                sd_ns: sd
            }),
            (ns, 0.0f64..=MAX_LOG_SIGMA).prop_map(|(m, s)| Cost::LogNormal {
                mean_ns: m,
                sigma: s
            }),
        ]
    }

    fn any_cost() -> impl Strategy<Value = Cost> {
        prop_oneof![
            simple(),
            proptest::collection::vec((simple(), 1u64..u64::MAX / 4), 2..=MAX_PHASES)
                .prop_map(|v| ph(&v)),
            (
                prop_oneof![Just(0.0), Just(1.0), 0.0f64..=1.0],
                simple(),
                simple()
            )
                .prop_map(|(p, a, b)| mix(p, a, b)),
        ]
    }

    proptest! {
        #[test]
        fn spec_round_trips_for_any_cost(c in any_cost()) {
            prop_assert_eq!(Cost::parse(&c.spec()).unwrap(), c);
            let d = Cost::parse(&c.to_string()).unwrap();
            prop_assert_eq!(std::mem::discriminant(&d), std::mem::discriminant(&c));
            prop_assert!(c.mean_ns().is_finite() && c.mean_ns() >= 0.0);
        }
    }

    #[test]
    fn parses_every_form() {
        assert_eq!(Cost::parse("const:1us").unwrap(), Cost::Const(1000.0));
        assert_eq!(
            Cost::parse("uniform:0.8us,1.2us").unwrap(),
            Cost::Uniform {
                lo_ns: 800.0,
                hi_ns: 1200.0
            }
        );
        assert_eq!(
            Cost::parse("exp:1us").unwrap(),
            Cost::Exp { mean_ns: 1000.0 }
        );
        assert_eq!(
            Cost::parse("normal:1us,0.1us").unwrap(),
            Cost::Normal {
                mu_ns: 1000.0,
                sd_ns: 100.0
            }
        );
        assert_eq!(
            Cost::parse("lognormal:1us,0.2").unwrap(),
            Cost::LogNormal {
                mean_ns: 1000.0,
                sigma: 0.2
            }
        );
    }

    #[test]
    fn rejects_bad_forms() {
        assert!(matches!(
            Cost::parse("gamma:1us"),
            Err(CostParseError::UnknownDist(_))
        ));
        assert!(matches!(
            Cost::parse("uniform:1us"),
            Err(CostParseError::Arity { .. })
        ));
        assert!(matches!(
            Cost::parse("uniform:2us,1us"),
            Err(CostParseError::Invalid(_))
        ));
        assert!(matches!(
            Cost::parse("lognormal:1us,x"),
            Err(CostParseError::BadNumber(_))
        ));
        assert!(matches!(
            Cost::parse("exp:-1us"),
            Err(CostParseError::Duration(_))
        ));
        assert!(Cost::parse("lognormal:1us,NaN").is_err());
        // A spread whose mean a million draws would not reach.
        assert!(Cost::parse("lognormal:1us,3").is_ok());
        assert!(matches!(
            Cost::parse("lognormal:1us,3.5"),
            Err(CostParseError::Invalid(_))
        ));
    }

    #[test]
    fn means() {
        assert_eq!(
            Cost::Uniform {
                lo_ns: 800.0,
                hi_ns: 1200.0
            }
            .mean_ns(),
            1000.0
        );
        // Truncation at 0 of N(0, 1): mean sqrt(2/pi).
        let m = Cost::Normal {
            mu_ns: 0.0,
            sd_ns: 1.0,
        }
        .mean_ns();
        assert!(
            (m - (2.0 / std::f64::consts::PI).sqrt()).abs() < 1e-12,
            "{m}"
        );
        // Far from 0 truncation changes nothing measurable.
        assert!(
            (Cost::Normal {
                mu_ns: 1000.0,
                sd_ns: 100.0
            }
            .mean_ns()
                - 1000.0)
                .abs()
                < 1e-9
        );
    }

    #[test]
    fn spec_round_trips_exactly() {
        for c in [
            Cost::Const(1100.1234567),
            Cost::Uniform {
                lo_ns: 0.1,
                hi_ns: 0.3,
            },
            Cost::Exp { mean_ns: 1e-3 },
            Cost::Normal {
                mu_ns: 1000.0,
                sd_ns: 33.3,
            },
            Cost::LogNormal {
                mean_ns: 7.0,
                sigma: 0.25,
            },
            ph(&[
                (Cost::Const(0.1), 1),
                (Cost::Exp { mean_ns: 1e-3 }, u64::MAX / 2),
            ]),
            mix(
                0.123_456_789,
                Cost::Const(1100.1234567),
                Cost::Exp { mean_ns: 7.5 },
            ),
        ] {
            assert_eq!(Cost::parse(&c.spec()).unwrap(), c);
        }
    }

    #[test]
    fn plus_raises_the_mean() {
        for c in [
            Cost::Const(100.0),
            Cost::Uniform {
                lo_ns: 50.0,
                hi_ns: 150.0,
            },
            Cost::Exp { mean_ns: 100.0 },
            Cost::Normal {
                mu_ns: 100.0,
                sd_ns: 30.0,
            },
            Cost::LogNormal {
                mean_ns: 100.0,
                sigma: 0.3,
            },
            Cost::parse("phases:100ns@3+exp:50ns@2+normal:10ns,30ns@9").unwrap(),
            Cost::parse("mix:0.2:uniform:50ns,150ns+lognormal:1us,0.5").unwrap(),
        ] {
            let d = c.plus(25.0);
            assert!(
                (d.mean_ns() - c.mean_ns() - 25.0).abs() < 1e-9,
                "{c} -> {d}"
            );
            d.check().unwrap();
        }
    }

    #[test]
    fn display_round_trips() {
        for s in [
            "1.1us",
            "uniform:800ns,1.2us",
            "exp:1us",
            "normal:1us,100ns",
            "lognormal:1us,0.2",
            "phases:500ns@5000+uniform:3us,4us@5000",
            "phases:exp:1us@1000+2us@3000+normal:1us,100ns@1+lognormal:1us,0.2@2",
            "mix:0.01:1us+50us",
            "mix:0.5:exp:1us+normal:1us,100ns",
        ] {
            let c = Cost::parse(s).unwrap();
            assert_eq!(Cost::parse(&c.to_string()).unwrap(), c, "{s}");
        }
    }
}
