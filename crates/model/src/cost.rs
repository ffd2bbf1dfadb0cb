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
}

/// Why a cost string was rejected.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum CostParseError {
    /// Unknown distribution name.
    #[error("unknown distribution `{0}` (use const, uniform, exp, normal or lognormal)")]
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
        let cost = match name.trim().to_ascii_lowercase().as_str() {
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
        let durations = match *self {
            Cost::Const(v) | Cost::Exp { mean_ns: v } | Cost::LogNormal { mean_ns: v, .. } => {
                [v, 0.0]
            }
            Cost::Uniform { lo_ns, hi_ns } => [lo_ns, hi_ns],
            Cost::Normal { mu_ns, sd_ns } => [mu_ns, sd_ns],
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
                format!("uniform bounds {lo_ns},{hi_ns}: need 0 <= lo <= hi"),
            ),
            Cost::Exp { mean_ns } if !ok(mean_ns) => {
                Err(format!("exp mean {mean_ns} must be >= 0"))
            }
            Cost::Normal { mu_ns, sd_ns } if !(ok(mu_ns) && ok(sd_ns)) => Err(format!(
                "normal {mu_ns},{sd_ns}: need mean >= 0 and sd >= 0"
            )),
            Cost::LogNormal { mean_ns, sigma } if !(ok(mean_ns) && ok(sigma) && sigma < 20.0) => {
                Err(format!(
                    "lognormal {mean_ns},{sigma}: need mean >= 0 and 0 <= sigma < 20"
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
        }
    }

    /// The same kind of distribution scaled so that its mean is `mean_ns`
    /// (used by sweeps: `--vary wp=...` on `exp:1us` keeps it exponential).
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
        }
    }
}

impl Cost {
    /// The same cost plus `ns` on every draw where the distribution allows
    /// it (a constant, a uniform: shifted), else the same kind of
    /// distribution with its mean raised by `ns` ([`Cost::with_mean`]):
    /// either way the mean grows by exactly `ns` (the truncated normal's
    /// by `ns` as well, through [`Cost::with_mean`]).
    pub fn plus(&self, ns: f64) -> Cost {
        match *self {
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

#[cfg(test)]
mod tests {
    use super::*;

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
        ] {
            let c = Cost::parse(s).unwrap();
            assert_eq!(Cost::parse(&c.to_string()).unwrap(), c, "{s}");
        }
    }
}
