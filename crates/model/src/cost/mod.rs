//! Cost distributions as plain data: what a cost is and its mean. Sampling
//! lives in the simulator (`kicklab-sim`), so this crate stays free of RNGs.
//! Reading a cost from its string form is in `parse`.

use std::fmt;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::time::{fmt_ns, DurationParseError};

mod parse;
#[cfg(test)]
mod tests;

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
