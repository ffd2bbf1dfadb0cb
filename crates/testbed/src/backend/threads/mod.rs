//! The thread backend: both parties are host threads, pinned to CPUs 0
//! and 1, notifying each other through a `kicklab-ring` notifier (futex,
//! eventfd or pipe).
//!
//! What lives here: the pair ([`run_pair`], over the host party loop that
//! the KVM backend shares), calibration of N and S ([`calibrate()`]) and
//! ping-pong with a thread responder ([`pingpong::run`]). What does not:
//! the loop itself (`crate::party`), the shared types (`crate::pair`,
//! `crate::pingpong`, `crate::calibrate`).

mod calibrate;
mod pair;
pub mod pingpong;

pub use calibrate::calibrate;
pub(crate) use calibrate::visibility;
pub use pair::{check_pair, run_pair, MAX_RING_BYTES};
