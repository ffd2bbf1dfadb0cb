//! The validation's data: its options and limits, the spread of
//! repetitions, a repetition, a point, and which party slept. What does
//! not live here: running (`run`), judging (`judge`), rendering
//! (`render`).

use kicklab_model::{median, Regime};
use kicklab_testbed::PairResult;
use serde::Serialize;

use crate::disturbance::{distinct, Warning};

/// The paper's Fig. 4 sweep: W_P from 0.2 to 3 us, 15 points (W_C 1.1 us
/// from the default parameters).
pub const FIG4_SWEEP: &str = "wp=0.2us..3us:15";

/// Repetitions of each real run per point, by default.
pub const DEFAULT_REPEAT: u32 = 3;

/// The most repetitions per point: a sweep of 15 points of 60 000 messages
/// runs about a second per repetition already.
pub const MAX_REPEAT: u32 = 25;

/// Extra tries a point gets for repetitions that came out disturbed
/// ([`crate::disturbance`]) before it is reported as disturbed.
pub const MAX_RETRIES: u32 = 3;

/// How the real runs of a validation are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Messages per real run (after a warm-up of a tenth as many).
    pub messages: u64,
    /// Seed of the first repetition (each further try adds 1).
    pub seed: u64,
    /// Repetitions of the notify and the polling run per point
    /// (1..=[`MAX_REPEAT`]).
    pub repeat: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            messages: 60_000,
            seed: 1,
            repeat: DEFAULT_REPEAT,
        }
    }
}

/// The median and the range of one measured quantity over the repetitions
/// of a point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Median (the mean of the middle two for an even count).
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// Of `values` (NaN everywhere if there are none).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Spread {
        let v: Vec<f64> = values.into_iter().collect();
        Spread {
            median: median(v.clone()),
            min: v.iter().copied().reduce(f64::min).unwrap_or(f64::NAN),
            max: v.iter().copied().reduce(f64::max).unwrap_or(f64::NAN),
        }
    }

    /// The range over the median: how much the repetitions disagree.
    pub fn relative(&self) -> f64 {
        (self.max - self.min) / self.median
    }
}

/// One repetition at a point: a run with notifications and one with
/// polling, back to back, and what their checks found.
#[derive(Debug, Clone, Serialize)]
pub struct Rep {
    /// Measured with notifications.
    pub notify: PairResult,
    /// Measured with polling.
    pub poll: PairResult,
    /// Their own warnings ([`crate::disturbance::check_run`]).
    pub warnings: Vec<Warning>,
}

/// One point of the validation.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// The swept value [ns].
    pub x: f64,
    /// Model regime (at the operating point the runs sat in, where the
    /// pair has two).
    pub regime: Regime,
    /// A bistable pair's other operating point (regime, T [ns]): the one
    /// the runs did not sit in. `None` for a pair with one.
    pub other: Option<(Regime, f64)>,
    /// Model T, E [ns] (notify), from the calibrated means.
    pub model: (f64, f64),
    /// Model T, E [ns] (notify), from the calibrated medians.
    pub model_median: (f64, f64),
    /// Model T [ns] with each sleeper's S looked up at its idle time on
    /// the profile's idle curve (a fixed point over the sleep length;
    /// [`crate::real::predicted_at_idle`]); `None` where the profile has no
    /// idle curve (then it is [`Point::model`]).
    pub model_at_idle: Option<f64>,
    /// Model T, E [ns] (notify) with the race inside an FC or FP round
    /// taken as a chance: each party's effective start-up drawn per
    /// notification with the calibrated spread
    /// ([`kicklab_model::predict_with_start_spread`],
    /// [`kicklab_model::Profile::start_spread`]); [`Point::model`] where the
    /// point is not FC or FP.
    pub model_race: (f64, f64),
    /// Simulator T, E [ns] (notify, calibrated distributions).
    pub sim: (f64, f64),
    /// Model T, E with polling (T: the floor of a polling run).
    pub model_poll: (f64, f64),
    /// The wake-ups the model takes, from the start of the peer's kick to
    /// the party running [ns]: R_P = V_C + S_P, R_C = V_P + S_C (means),
    /// to set beside the runs' own ([`Summary::wake_p_run_ns`]).
    pub model_wake: [f64; 2],
    /// The repetitions reported: the first [`Options::repeat`] that were
    /// not disturbed, or, once [`MAX_RETRIES`] extra tries are spent, the
    /// disturbed ones too.
    pub reps: Vec<Rep>,
    /// Repetitions run, the ones run again included.
    pub tries: u32,
    /// Why the point is disturbed: the reported repetitions' warnings,
    /// then the profile's; empty if it is not.
    pub warnings: Vec<Warning>,
}

impl Point {
    /// Whether anything disturbed it.
    pub fn disturbed(&self) -> bool {
        !self.warnings.is_empty()
    }

    /// Reported repetitions that were disturbed themselves (not counting
    /// the profile's warnings, which concern them all).
    pub fn disturbed_reps(&self) -> usize {
        self.reps.iter().filter(|r| !r.warnings.is_empty()).count()
    }

    /// What disturbed the reported repetitions themselves, each kind once:
    /// `disturbed in 2 of 3 repetitions, after 3 extra tries: ...`; `None`
    /// if none was (the profile's warnings are the profile's to say).
    pub fn run_disturbance(&self) -> Option<String> {
        let own: Vec<Warning> = self.reps.iter().flat_map(|r| r.warnings.clone()).collect();
        (!own.is_empty()).then(|| {
            format!(
                "disturbed in {} of {} repetitions, after {} extra tries: {}",
                self.disturbed_reps(),
                self.reps.len(),
                (self.tries as usize).saturating_sub(self.reps.len()),
                warnings_text(&distinct(&own))
            )
        })
    }

    fn spread(&self, f: impl Fn(&Rep) -> f64) -> Spread {
        Spread::of(self.reps.iter().map(f))
    }

    /// Measured T with notifications over the repetitions.
    pub fn t_real(&self) -> Spread {
        self.spread(|r| r.notify.rates.t_ns)
    }

    /// Measured E with notifications.
    pub fn e_real(&self) -> Spread {
        self.spread(|r| r.notify.rates.e_ns)
    }

    /// Measured T with polling.
    pub fn t_poll(&self) -> Spread {
        self.spread(|r| r.poll.rates.t_ns)
    }

    /// Measured E with polling.
    pub fn e_poll(&self) -> Spread {
        self.spread(|r| r.poll.rates.e_ns)
    }

    /// The notify run of median T (the lower of the middle two for an even
    /// count): whose counts (kicks, sleeps, who slept) the point shows.
    ///
    /// # Panics
    ///
    /// A point without repetitions ([`validate`] makes none).
    pub fn median_run(&self) -> &PairResult {
        let mut runs: Vec<&PairResult> = self.reps.iter().map(|r| &r.notify).collect();
        runs.sort_by(|a, b| a.rates.t_ns.total_cmp(&b.rates.t_ns));
        runs[(runs.len() - 1) / 2]
    }
}

/// Who slept in most of the repetitions' notify runs (ties: the median
/// run's).
pub(super) fn majority_sleeper(reps: &[Rep]) -> &'static str {
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    for r in reps {
        let s = r.notify.rates.sleeper();
        match counts.iter_mut().find(|(k, _)| *k == s) {
            Some((_, n)) => *n += 1,
            None => counts.push((s, 1)),
        }
    }
    counts
        .iter()
        .max_by_key(|(_, n)| *n)
        .map_or("none", |(k, _)| *k)
}

/// The regime a measurement shows: who slept.
pub fn observed(r: &PairResult) -> &'static str {
    r.rates.sleeper()
}

/// Who sleeps in a regime, as [`observed`] names it.
pub fn sleeper(r: Regime) -> &'static str {
    r.sleeper()
}

/// Warnings as one line of text.
pub(super) fn warnings_text(w: &[Warning]) -> String {
    w.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
