//! A request, from outside, that every simulation running in this process
//! stop: the Python bindings make it when Ctrl-C arrives during a long
//! call. A run checks it with its event budget, every 65 536 events, and
//! ends with [`crate::SimError::Stopped`]. The command line never makes it
//! (its signal handler ends the process).

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Every simulation running now, or started before [`clear`], stops at
/// its next check.
pub fn request() {
    REQUESTED.store(true, Ordering::Relaxed);
}

/// Simulations run again to the end.
pub fn clear() {
    REQUESTED.store(false, Ordering::Relaxed);
}

/// Whether a stop was requested: checked every [`EVERY`] events.
pub(crate) fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// Events between two checks (a power of two: a mask, not a division).
pub(crate) const EVERY: u64 = 1 << 16;
