//! Sweeps: vary one parameter over a range and run the model (notify and
//! poll) and the simulator (the chosen mode and poll) at every point, in
//! parallel with rayon.

use std::fmt;

use kicklab_model::{
    parse_duration_ns, predict, ss_best_case, ss_formula, Param, Params, Prediction, WaitMode,
};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::config::{SimConfig, SimError, SimResult};
use crate::run::simulate;

/// A sweep specification (`wp=0.1us..3us:100`) was rejected.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("{0}")]
pub struct VaryError(pub String);

/// One swept parameter: `points` values evenly spaced from `from` to `to`
/// inclusive (durations in ns; L and k as numbers).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Vary {
    /// The parameter.
    pub param: Param,
    /// First value.
    pub from: f64,
    /// Last value.
    pub to: f64,
    /// Number of points (>= 1).
    pub points: u32,
}

impl Vary {
    /// The most points a sweep takes: every point is simulated and drawn.
    pub const MAX_POINTS: u32 = 100_000;

    /// Parses `wp=0.1us..3us:100` (durations take units; L and k are whole
    /// numbers: `kc=1..64:64`). One point: `wp=2us..2us:1`.
    ///
    /// # Errors
    ///
    /// [`VaryError`] naming what is wrong.
    pub fn parse(s: &str) -> Result<Vary, VaryError> {
        let usage = "expected NAME=FROM..TO:POINTS, e.g. wp=0.1us..3us:100";
        let (name, rest) = s
            .split_once('=')
            .ok_or_else(|| VaryError(format!("`{}`: {usage}", kicklab_model::shown(s))))?;
        let param: Param = name
            .parse()
            .map_err(|e: kicklab_model::UnknownParam| VaryError(e.to_string()))?;
        let (range, points) = rest
            .rsplit_once(':')
            .ok_or_else(|| VaryError(format!("`{}`: {usage}", kicklab_model::shown(s))))?;
        let (from, to) = kicklab_model::split_range(range)
            .map_err(|e| VaryError(format!("{e}, in NAME=FROM..TO:POINTS")))?;
        let points: u32 = points.trim().parse().map_err(|_| {
            VaryError(format!(
                "`{}` is not a number of points",
                kicklab_model::shown(points)
            ))
        })?;
        if points == 0 {
            return Err(VaryError("a range needs at least 1 point".into()));
        }
        if points > Vary::MAX_POINTS {
            return Err(VaryError(format!(
                "at most {} points (every point is simulated and drawn)",
                Vary::MAX_POINTS
            )));
        }
        let value = |v: &str| -> Result<f64, VaryError> {
            if param.is_count() {
                let n: u32 = v.trim().parse().map_err(|_| {
                    VaryError(match v.trim().parse::<u128>() {
                        Ok(_) => format!(
                            "`{}` is out of range (at most {})",
                            kicklab_model::shown(v),
                            u32::MAX
                        ),
                        Err(_) => {
                            format!("`{}` is not a whole number >= 1", kicklab_model::shown(v))
                        }
                    })
                })?;
                if n == 0 {
                    return Err(VaryError(format!("{} must be >= 1", param.name())));
                }
                Ok(f64::from(n))
            } else {
                parse_duration_ns(v).map_err(|e| VaryError(e.to_string()))
            }
        };
        let (from, to) = (value(from)?, value(to)?);
        if points == 1 && from != to {
            return Err(VaryError("one point needs FROM == TO".into()));
        }
        if points > 1 && from == to {
            return Err(VaryError(format!(
                "FROM == TO is one value: {points} points would repeat it (use :1)"
            )));
        }

        Ok(Vary {
            param,
            from,
            to,
            points,
        })
    }

    /// `x` as the sweep's parameter takes it: `wp=1.2us`, `kc=4`.
    pub fn show(&self, x: f64) -> String {
        let name = self.param.name();
        if self.param.is_count() {
            format!("{name}={x:.0}")
        } else {
            format!("{name}={}", kicklab_model::fmt_ns(x))
        }
    }

    /// The values, in order (counts rounded to whole numbers).
    pub fn values(&self) -> Vec<f64> {
        (0..self.points)
            .map(|i| {
                let v = if self.points == 1 {
                    self.from
                } else {
                    self.from + (self.to - self.from) * f64::from(i) / f64::from(self.points - 1)
                };
                if self.param.is_count() {
                    v.round()
                } else {
                    v
                }
            })
            .collect()
    }

    /// The most points a count (L, k) takes without repeating a value
    /// (one per whole number in its range); `None` for a duration, whose
    /// values never repeat.
    pub fn distinct_values(&self) -> Option<f64> {
        self.param
            .is_count()
            .then(|| (self.to - self.from).abs().floor() + 1.0)
    }

    /// [`Vary::parse`], refusing a count (L, k) given more points than
    /// whole numbers in its range: they would repeat rows.
    ///
    /// # Errors
    ///
    /// The reason, as text.
    pub fn parse_distinct(s: &str) -> Result<Vary, String> {
        let v = Vary::parse(s).map_err(|e| e.0)?;
        if let Some(values) = v.distinct_values().filter(|&n| f64::from(v.points) > n) {
            return Err(format!(
                "{} takes whole numbers: {} points over {}..{} would repeat values; use at most {values}",
                v.param.name(),
                v.points,
                v.from,
                v.to
            ));
        }
        Ok(v)
    }

    /// `base` with the parameter set to `value`. A cost keeps its kind of
    /// distribution and takes `value` as its mean.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    pub fn apply(&self, base: &Params, value: f64) -> Params {
        let mut p = *base;
        if let Some(n) = self.param.count_mut(&mut p) {
            *n = value as u32;
        } else if let Some(c) = self.param.cost_mut(&mut p) {
            *c = c.with_mean(value);
        }
        p
    }
}

impl fmt::Display for Vary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.param.is_count() {
            write!(
                f,
                "{}={}..{}:{}",
                self.param.name(),
                self.from,
                self.to,
                self.points
            )
        } else {
            write!(
                f,
                "{}={}..{}:{}",
                self.param.name(),
                kicklab_model::fmt_ns(self.from),
                kicklab_model::fmt_ns(self.to),
                self.points
            )
        }
    }
}

/// Model and simulator at one point of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    /// The swept value (ns for durations).
    pub x: f64,
    /// The full parameter set at this point.
    pub params: Params,
    /// Closed form in the sweep's mode (`None` for spin-then-sleep).
    pub model: Option<Prediction>,
    /// Closed form with polling (GP).
    pub model_poll: Prediction,
    /// The paper's eq. (4) evaluated here, `(T_ns, E_ns)`.
    pub ss_formula: (f64, f64),
    /// The best case of SS for these W and N (`ss_best_case`), `(T_ns, E_ns)`:
    /// the paper's Fig. 2 "T_SS" curve.
    pub ss_best: (f64, f64),
    /// Simulator in the sweep's mode.
    pub sim: SimResult,
    /// Simulator with polling.
    pub sim_poll: SimResult,
}

/// The points of `vary` over `base`: `(x, params)`, each checked.
///
/// # Errors
///
/// The first point whose parameters are invalid.
pub fn sweep_points(base: &Params, vary: &Vary) -> Result<Vec<(f64, Params)>, SimError> {
    let points: Vec<(f64, Params)> = vary
        .values()
        .into_iter()
        .map(|x| (x, vary.apply(base, x)))
        .collect();
    for (x, p) in &points {
        p.validate().map_err(|source| SimError::SweepPoint {
            at: vary.show(*x),
            source,
        })?;
    }
    Ok(points)
}

/// Model and simulator (in `mode`, and polling) at one point.
///
/// # Errors
///
/// Invalid parameters, or a simulator error.
pub fn sweep_point(
    x: f64,
    params: Params,
    mode: WaitMode,
    messages: u64,
    seed: u64,
) -> Result<SweepPoint, SimError> {
    params.validate()?;
    let cfg = |mode| SimConfig {
        seed,
        ..SimConfig::new(params, mode, messages)
    };
    Ok(SweepPoint {
        x,
        params,
        model: predict(&params, mode).ok(),
        model_poll: predict(&params, WaitMode::Poll).expect("valid: polling has a closed form"),
        ss_formula: ss_formula(&params),
        ss_best: ss_best_case(&params),
        sim: simulate(&cfg(mode))?,
        sim_poll: simulate(&cfg(WaitMode::Poll))?,
    })
}

pub use crate::config::MAX_STUDY_MESSAGES;

/// Refuses, without simulating, a run of `params` in `mode` over
/// `messages` that [`simulate`] would refuse before its first event
/// (simulated time past the clock's range, too many messages, a strategy
/// out of range): what a sweep's or a map's points are checked with before
/// any of them runs (a cluster's workers would meet it only after the
/// work was sent).
///
/// # Errors
///
/// As [`simulate`] before it runs.
pub fn check_point(params: &Params, mode: WaitMode, messages: u64) -> Result<(), SimError> {
    crate::engine::check_config(&SimConfig::new(*params, mode, messages))
}

/// Where `runs` runs of `messages` each, every one after a warm-up of
/// `warmup`, exceed `max` messages in all: the total, and whether the
/// warm-up's 4 L (`len`) is what grew it rather than the messages.
pub fn over_budget(
    runs: u64,
    messages: u64,
    warmup: u64,
    len: u32,
    max: u64,
) -> Option<(u128, bool)> {
    let total = u128::from(runs) * (u128::from(messages) + u128::from(warmup));
    (total > u128::from(max)).then_some((total, 4 * u64::from(len) > messages))
}

/// Refuses a sweep of `vary` at `messages` a run that would simulate more
/// than [`MAX_STUDY_MESSAGES`] (two runs a point: `mode` and polling).
///
/// # Errors
///
/// [`SimError::Params`] naming L where the warm-up grew it, else
/// [`SimError::StudyTooLarge`].
pub fn check_sweep_budget(base: &Params, vary: &Vary, messages: u64) -> Result<(), SimError> {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let len = if vary.param == kicklab_model::Param::Len {
        vary.from.max(vary.to) as u32
    } else {
        base.len
    };
    // Each point's own warm-up (a sweep over L warms each point up by its
    // L); their mean, rounded up, for the one count.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let warmups: u128 = vary
        .values()
        .iter()
        .map(|&x| {
            let l = if vary.param == kicklab_model::Param::Len {
                x as u32
            } else {
                base.len
            };
            u128::from(crate::config::default_warmup(messages, l))
        })
        .sum();
    let warmup =
        u64::try_from(warmups.div_ceil(u128::from(vary.points.max(1)))).unwrap_or(u64::MAX);
    match over_budget(
        2 * u64::from(vary.points),
        messages,
        warmup,
        len,
        MAX_STUDY_MESSAGES,
    ) {
        None => Ok(()),
        Some((total, true)) => {
            let source = kicklab_model::ParamError {
                param: kicklab_model::Param::Len,
                reason: format!(
                    "{} points of two runs, each after a warm-up of 4 L = {} messages, are \
                     {total} simulated messages, hours; a sweep takes at most {MAX_STUDY_MESSAGES}",
                    vary.points,
                    4 * u64::from(len)
                ),
            };
            // The sweep's own L, or the one given.
            Err(if vary.param == kicklab_model::Param::Len {
                SimError::SweepPoint {
                    at: vary.show(f64::from(len)),
                    source,
                }
            } else {
                SimError::Params(source)
            })
        }
        Some((total, false)) => Err(SimError::StudyTooLarge {
            runs: 2 * u64::from(vary.points),
            messages,
            total,
        }),
    }
}

/// Runs model and simulator at every point of `vary`, in parallel.
/// `progress` is called once per finished point (from any thread).
///
/// # Errors
///
/// The first point whose parameters are invalid (checked before anything
/// runs), or a simulator error.
pub fn sweep(
    base: &Params,
    vary: &Vary,
    mode: WaitMode,
    messages: u64,
    seed: u64,
    progress: &(dyn Fn() + Sync),
) -> Result<Vec<SweepPoint>, SimError> {
    let points = sweep_points(base, vary)?;
    check_sweep_budget(base, vary, messages)?;
    points
        .par_iter()
        .map(|&(x, params)| {
            let point = sweep_point(x, params, mode, messages, seed).map_err(|e| match e {
                // The sweep set the value the simulator refused.
                SimError::Params(source) if source.param == vary.param => SimError::SweepPoint {
                    at: vary.show(x),
                    source,
                },
                e => e,
            })?;
            progress();
            Ok(point)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_has_one_distinct_value_per_whole_number_in_its_range() {
        let v = Vary::parse("kc=1..4:5").unwrap();
        assert_eq!(v.distinct_values(), Some(4.0));
        // Five points over four whole numbers: one repeats.
        let mut values = v.values();
        values.dedup();
        assert_eq!(values.len(), 4);
        assert_eq!(
            Vary::parse("wp=1us..2us:500").unwrap().distinct_values(),
            None
        );
    }

    #[test]
    fn parses_ranges() {
        let v = Vary::parse("wp=0.1us..3us:30").unwrap();
        assert_eq!(v.param, Param::Wp);
        assert_eq!((v.from, v.to, v.points), (100.0, 3000.0, 30));
        let xs = v.values();
        assert_eq!(xs.len(), 30);
        assert_eq!(xs[0], 100.0);
        assert!((xs[29] - 3000.0).abs() < 1e-9);
        let k = Vary::parse("kc=1..64:64").unwrap();
        assert_eq!(k.values()[63], 64.0);
    }

    #[test]
    fn rejects_bad_ranges() {
        for bad in [
            "wp=1us..3us:0",
            "wq=1us..2us:3",
            "wp=1us-3us:3",
            "wp=1us..3zz:3",
            "kp=0..3:3",
            "wp=1us..3us:x",
            "wp",
            "wp=1us..2us:4294967295",
            // One value many times; a count past u32.
            "wp=1us..1us:5",
            "len=1..4294967296:2",
        ] {
            let e = Vary::parse(bad).unwrap_err();
            assert!(!e.to_string().contains("--"), "{bad}: {e}");
        }
    }

    #[test]
    fn invalid_point_is_rejected_before_running() {
        let v = Vary::parse("kp=1..300:3").unwrap();
        let err = sweep(&Params::default(), &v, WaitMode::Notify, 100, 1, &|| {}).unwrap_err();
        assert!(err.to_string().starts_with("at kp=300: k_P"), "{err}");
    }
}
