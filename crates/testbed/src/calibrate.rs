//! What a calibration of the notification costs N and the start-up costs
//! S produces ([`Profile`], [`Stat`]) and the checks every backend's
//! calibration shares. The measurements themselves live with each backend
//! (`backend::threads::calibrate`, `backend::kvm::calibrate`); the thread
//! method (`docs/calibration.md`):
//!
//! For one direction (notifier on one CPU, waiter on the other), repeated:
//! the waiter announces it is about to wait and blocks; the notifier lets
//! it sit idle for a gap (so its CPU really idles, as a sleeping party's
//! does in a run), then reads the TSC, notifies, reads the TSC again; the
//! waiter reads the TSC as soon as its wait returns.
//! - N = notify's duration (the notifier's CPU is busy throughout);
//! - S = from the end of notify to the waiter running again (wall time);
//! - S_cpu = the waiter's thread CPU time across its wait (the part of S
//!   that is the waiter's own work; the rest is the CPU waking up).
//! - V (when the waiter became runnable, from the start of the
//!   notification) and the model's S = R - V, with R = N + S the time from
//!   the start of the notification to the waiter running.
//!
//! A whole calibration ([`Calibration`], `Backend::calibrate_with`) adds
//! the same costs after other idle gaps (the idle curve) and the ring's
//! cost per message (a polling pair with no work).

use std::time::Duration;

pub use kicklab_model::{IdlePoint, Profile, Stat};

use crate::{Setting, TestbedError};

/// The idle gaps of the default idle curve: 5, 10, 20, 50, 100, 200 and
/// 500 us.
pub const DEFAULT_GAPS: [Duration; 7] = [
    Duration::from_micros(5),
    Duration::from_micros(10),
    Duration::from_micros(20),
    Duration::from_micros(50),
    Duration::from_micros(100),
    Duration::from_micros(200),
    Duration::from_micros(500),
];

/// The most gaps an idle curve takes (what the simulator's curve holds).
pub const MAX_GAPS: usize = kicklab_model::IdleScale::MAX_POINTS;

/// The idle gaps of a calibration's idle curve as typed: `none`, or
/// durations separated by commas (each above 0, at most [`MAX_GAPS`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gaps(pub Vec<Duration>);

impl std::str::FromStr for Gaps {
    type Err = String;

    fn from_str(s: &str) -> Result<Gaps, String> {
        if s.trim() == "none" {
            return Ok(Gaps(Vec::new()));
        }
        let v = s
            .split(',')
            .map(|g| {
                let d = kicklab_model::typed::duration(g)?;
                if d.is_zero() {
                    return Err(format!("`{}`: every gap must be longer than 0", g.trim()));
                }
                Ok(d)
            })
            .collect::<Result<Vec<_>, String>>()?;
        if v.len() > MAX_GAPS {
            return Err(format!("at most {MAX_GAPS} gaps"));
        }
        Ok(Gaps(v))
    }
}

/// The most runs of the overhead measurement.
pub const MAX_OVERHEAD_RUNS: u32 = 100;

/// What a whole calibration measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Calibration {
    /// Notifications per direction per round, for the main costs and for
    /// each point of the idle curve.
    pub samples: usize,
    /// The idle gap of the main costs (N, V, S of the profile).
    pub gap: Duration,
    /// Most rounds of the main costs until their medians settle; each
    /// point of the idle curve is one round.
    pub max_rounds: usize,
    /// The idle gaps of the idle curve (empty: none). The main gap, if it
    /// is one of them, is not measured twice: its point is the main costs.
    pub gaps: Vec<Duration>,
    /// Runs of a polling pair with no work, for the ring's cost per
    /// message (0: not measured).
    pub overhead_runs: u32,
    /// Messages per overhead run (after a warm-up of a tenth as many).
    pub overhead_messages: u64,
    /// Runs of each reference pair that time N and the wake-up as a run
    /// meets them ([`crate::Backend::in_run`]; 0: not measured).
    pub reference_runs: u32,
}

impl Calibration {
    /// The main costs with `samples`, `gap` and `max_rounds`, the default
    /// idle curve ([`DEFAULT_GAPS`]) and 5 overhead runs of 100 000
    /// messages.
    pub fn new(samples: usize, gap: Duration, max_rounds: usize) -> Calibration {
        Calibration {
            samples,
            gap,
            max_rounds,
            gaps: DEFAULT_GAPS.to_vec(),
            overhead_runs: 5,
            overhead_messages: 100_000,
            reference_runs: 3,
        }
    }

    /// The main costs only (no idle curve, no overhead).
    pub fn costs_only(samples: usize, gap: Duration, max_rounds: usize) -> Calibration {
        Calibration {
            gaps: Vec::new(),
            overhead_runs: 0,
            reference_runs: 0,
            ..Calibration::new(samples, gap, max_rounds)
        }
    }

    /// Refuses what `check_round` refuses for the main gap and every gap
    /// of the curve, a zero gap on the curve (it is looked up in log gap),
    /// more than [`MAX_GAPS`] gaps or [`MAX_OVERHEAD_RUNS`] runs, a gap
    /// of the curve given twice, and no messages for a run. Front ends
    /// call it before they say what they are about to measure.
    ///
    /// # Errors
    ///
    /// [`TestbedError`] naming the setting.
    pub fn check(&self) -> Result<(), TestbedError> {
        if self.samples < MIN_SAMPLES {
            return Err(TestbedError::invalid(
                Setting::Samples,
                format!(
                    "between {MIN_SAMPLES} and {MAX_SAMPLES} ({} asked)",
                    self.samples
                ),
            ));
        }
        if !(1..=MAX_ROUNDS).contains(&self.max_rounds) {
            return Err(TestbedError::invalid(
                Setting::Rounds,
                format!("between 1 and {MAX_ROUNDS} ({} asked)", self.max_rounds),
            ));
        }
        check_round(self.samples, self.gap)?;
        if self.gaps.len() > MAX_GAPS {
            return Err(TestbedError::limit(
                Setting::Gaps,
                format!("at most {MAX_GAPS} gaps ({} asked)", self.gaps.len()),
            ));
        }
        if let Some(g) = kicklab_model::first_repeat(&self.gaps) {
            return Err(TestbedError::invalid(
                Setting::Gaps,
                format!("{g:?} is listed twice (each gap is one round)"),
            ));
        }
        for g in &self.gaps {
            if g.is_zero() {
                return Err(TestbedError::invalid(
                    Setting::Gaps,
                    "every gap of the curve must be longer than 0",
                ));
            }
            check_round(self.samples, *g).map_err(|e| match e {
                TestbedError::Limit {
                    what: Setting::Gap,
                    reason,
                } => TestbedError::limit(Setting::Gaps, reason),
                other => other,
            })?;
        }
        if self.overhead_runs > MAX_OVERHEAD_RUNS {
            return Err(TestbedError::limit(
                Setting::Runs,
                format!("at most {MAX_OVERHEAD_RUNS} ({} asked)", self.overhead_runs),
            ));
        }
        if self.reference_runs > MAX_OVERHEAD_RUNS {
            return Err(TestbedError::limit(
                Setting::Runs,
                format!(
                    "at most {MAX_OVERHEAD_RUNS} reference runs ({} asked)",
                    self.reference_runs
                ),
            ));
        }
        if self.overhead_runs > 0 && self.overhead_messages == 0 {
            return Err(TestbedError::invalid(
                Setting::Messages,
                "an overhead run needs at least 1 message",
            ));
        }
        Ok(())
    }
}

/// Whether four medians moved less than 5% since the previous round;
/// remembers these for the next call. A cost under a tenth of the largest
/// is held to 5% of that tenth instead of its own: a start-up measured
/// from the end of a kick that woke the peer half-way through it sits
/// near zero (a guest's kick to a host on KVM rx: -0.2 to 0.6 us beside
/// 8-15 us), where 5% of itself is a few nanoseconds, below the clocks'
/// agreement, and no number of rounds would settle it.
pub(crate) fn settled(prev: &mut Option<[f64; 4]>, med: [f64; 4]) -> bool {
    let scale = 0.1 * med.iter().fold(0.0_f64, |m, x| m.max(x.abs()));
    let done = prev.is_some_and(|p| {
        p.iter()
            .zip(&med)
            .all(|(a, b)| (a - b).abs() <= 0.05 * a.abs().max(b.abs()).max(scale))
    });
    *prev = Some(med);
    done
}

/// The model's start-up after a visibility measured apart from the
/// start-ups (not per sample): S = R - V on the statistics, from the
/// samples `r` of R (start of the notification to the woken party
/// running). Its mean is R's mean minus V's, its median R's median minus
/// V's, its percentiles and spread those of R shifted by V's mean.
pub(crate) fn start_after(r: Vec<f64>, v: &Stat) -> Stat {
    let median_r = Stat::of(r.clone()).median_ns;
    let mut s = Stat::of(r.into_iter().map(|x| x - v.mean_ns).collect());
    s.median_ns = median_r - v.median_ns;
    s
}

/// The most samples per round a calibration takes: its buffers stay
/// around 100 MiB.
pub const MAX_SAMPLES: usize = 1_000_000;

/// The fewest notifications per direction per round: fewer make no median.
pub const MIN_SAMPLES: usize = 10;

/// The most rounds of the main costs.
pub const MAX_ROUNDS: usize = 100;

/// The longest idle gap before each notification.
pub const MAX_GAP: Duration = Duration::from_secs(10);

/// Refuses sample counts and gaps beyond [`MAX_SAMPLES`] and [`MAX_GAP`].
pub(crate) fn check_round(samples: usize, gap: Duration) -> Result<(), TestbedError> {
    if samples > MAX_SAMPLES {
        return Err(TestbedError::limit(
            Setting::Samples,
            format!("at most {MAX_SAMPLES} per round ({samples} asked)"),
        ));
    }
    if gap > MAX_GAP {
        return Err(TestbedError::limit(
            Setting::Gap,
            format!("at most {MAX_GAP:?} ({gap:?} asked)"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_settle_within_5_percent_or_a_tenth_of_the_largest() {
        let mut prev = None;
        assert!(!settled(&mut prev, [10_000.0, 1_000.0, 8_000.0, 300.0]));
        // Each within 5% of itself: settled.
        assert!(settled(&mut prev, [10_400.0, 1_040.0, 8_300.0, 310.0]));
        // 1_040 -> 1_100 ns is 5.5%: not.
        assert!(!settled(&mut prev, [10_400.0, 1_100.0, 8_300.0, 310.0]));
        // A start-up near zero beside a 10 us kick: 310 -> -20 ns moved
        // more than 5% of a tenth of 10.4 us (52 ns) - not settled; then
        // -20 -> 30 ns, within it.
        assert!(!settled(&mut prev, [10_400.0, 1_100.0, 8_300.0, -20.0]));
        assert!(settled(&mut prev, [10_400.0, 1_100.0, 8_300.0, 30.0]));
    }

    #[test]
    fn start_after_subtracts_v_on_the_statistics() {
        let v = Stat::of(vec![5.0, 6.0, 10.0]); // mean 7, median 6
        let s = start_after(vec![10.0, 20.0, 30.0], &v);
        assert!((s.mean_ns - 13.0).abs() < 1e-9);
        assert!((s.median_ns - 14.0).abs() < 1e-9);
        assert_eq!(s.n, 3);
    }

    #[test]
    fn whole_calibrations_are_checked_first() {
        let ok = Calibration::new(10, Duration::from_micros(50), 1);
        ok.check().unwrap();
        let mut c = ok.clone();
        c.gaps.push(Duration::MAX);
        assert!(matches!(
            c.check(),
            Err(TestbedError::Limit {
                what: Setting::Gaps,
                ..
            })
        ));
        let mut c = ok.clone();
        c.gaps.push(Duration::ZERO);
        assert!(matches!(
            c.check(),
            Err(TestbedError::Invalid {
                what: Setting::Gaps,
                ..
            })
        ));
        let mut c = ok.clone();
        c.gaps = vec![Duration::from_micros(1); MAX_GAPS + 1];
        assert!(c.check().is_err());
        for (c, what) in [
            (
                Calibration::new(MIN_SAMPLES - 1, Duration::from_micros(50), 1),
                Setting::Samples,
            ),
            (
                Calibration::new(10, Duration::from_micros(50), 0),
                Setting::Rounds,
            ),
            (
                Calibration::new(10, Duration::from_micros(50), MAX_ROUNDS + 1),
                Setting::Rounds,
            ),
        ] {
            assert!(
                matches!(c.check(), Err(TestbedError::Invalid { what: w, .. }) if w == what),
                "{what:?}"
            );
        }
        let mut c = ok;
        c.overhead_runs = MAX_OVERHEAD_RUNS + 1;
        assert!(matches!(
            c.check(),
            Err(TestbedError::Limit {
                what: Setting::Runs,
                ..
            })
        ));
    }

    #[test]
    fn huge_calibrations_are_refused() {
        let e = check_round(100_000_000_000, Duration::from_micros(50)).unwrap_err();
        assert!(
            matches!(
                e,
                TestbedError::Limit {
                    what: Setting::Samples,
                    ..
                }
            ),
            "{e}"
        );
        let e = check_round(10, Duration::MAX).unwrap_err();
        assert!(
            matches!(
                e,
                TestbedError::Limit {
                    what: Setting::Gap,
                    ..
                }
            ),
            "{e}"
        );
    }
}
