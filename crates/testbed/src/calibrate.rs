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

use std::time::Duration;

pub use kicklab_model::{Profile, Stat};

use crate::{Setting, TestbedError};

/// Whether four medians moved less than 5% since the previous round;
/// remembers these for the next call.
pub(crate) fn settled(prev: &mut Option<[f64; 4]>, med: [f64; 4]) -> bool {
    let done = prev.is_some_and(|p| {
        p.iter()
            .zip(&med)
            .all(|(a, b)| (a - b).abs() <= 0.05 * a.abs().max(b.abs()))
    });
    *prev = Some(med);
    done
}

/// The most samples per round a calibration takes: its buffers stay
/// around 100 MiB.
pub const MAX_SAMPLES: usize = 1_000_000;

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
