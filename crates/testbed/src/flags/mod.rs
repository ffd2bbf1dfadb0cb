//! One consumer watching many notification sources (VMware's hosted VMM:
//! a shared-memory bit vector set by the host driver and checked on every
//! IRQ, instead of a `select()` over all devices). A producer thread
//! signals the sources one at a time, spaced so the consumer sleeps between
//! signals; the consumer finds which source fired either with a system
//! call over one eventfd per source (`poll`, the `select()` family, or
//! `epoll`) or from a shared bit vector and per-source counters, woken
//! through one futex for all. Each signal carries a count, so lost and
//! duplicated signals are caught. What it reports: the producer's CPU per
//! notification and the consumer's CPU per wake-up (waiting, finding the
//! source, consuming its count), calibrated costs the model takes as N
//! and S.
//!
//! Here: the dispatch to the backend. The types live in `types`, the
//! threads' run in `threads`, the guest's in `crate::backend::kvm::flags`.
//! What does not live here: sweeps over the number of sources and the
//! report (`kicklab-lab`).

pub(crate) mod epoll;
mod threads;
pub mod types;

pub use types::{FlagPath, FlagsBackend, FlagsConfig, FlagsResult};

use crate::TestbedError;

/// Runs the producer and the consumer on `cfg.backend`.
///
/// # Errors
///
/// A bad configuration, or a system call that fails.
pub fn flags(cfg: &FlagsConfig) -> Result<FlagsResult, TestbedError> {
    let _cpus = crate::cpu_lock::hold()?;
    match cfg.backend {
        FlagsBackend::Kvm => crate::backend::kvm::flags::flags(cfg),
        _ => threads::flags(cfg),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn every_path_counts_every_signal_once() {
        for path in [FlagPath::Poll, FlagPath::Epoll, FlagPath::Bitmap] {
            for sources in [1, 3, 64, 65] {
                let r = flags(&FlagsConfig {
                    backend: FlagsBackend::Threads,
                    sources,
                    path,
                    signals: 300,
                    gap: Duration::from_micros(20),
                })
                .unwrap();
                assert_eq!(r.received, 300, "{path:?} {sources}");
                // poll and epoll count every return; the bitmap counts
                // only its sleeps, and a consumer that starts after the
                // producer has flagged everything never sleeps at all.
                let least = u64::from(path != FlagPath::Bitmap);
                assert!(r.wakeups >= least && r.wakeups <= 300 + 1, "{r:?}");
            }
        }
    }
}
