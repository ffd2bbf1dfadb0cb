//! A single-producer single-consumer ring of 64-bit messages over a plain
//! `#[repr(C)]` memory region, with the notification protocol of the
//! kicklab model: each side, before it sleeps, publishes in shared memory
//! that it wants a kick (a need-kick flag, as netmap's `need_kick` and
//! VMware's shared bit vector) and at which index (an event index, as
//! virtio's `used_event`/`avail_event`); its peer kicks only when it crosses
//! that index, so a busy peer is never notified.
//!
//! What lives here: the memory layout ([`RingHeader`]), the two endpoints
//! ([`Producer`], [`Consumer`]), the wait protocol ([`WaitStrategy`]; and
//! every strategy of `kicklab_model::WaitMode`, decided step by step by a
//! [`Controller`] or any [`Policy`]: [`Driven`], [`Coalescer`]), and
//! notifiers ([`Notifier`]: futex, eventfd, pipe). What does not: busy
//! work, threads, KVM (see `kicklab-testbed`), the strategies' decisions
//! (`kicklab-model`).
//!
//! ```text
//!   Producer (P)                     shared region                    Consumer (C)
//!   ------------                     -------------                    ------------
//!   write slot[pos]  ---------->  slots[0..L]: u64 messages  -------> read slot[pos]
//!   tail += n (Release)  ------>  tail  (published, free-running u32)
//!                                 head  (freed, free-running u32) <--- head += n (Release)
//!   P registers before sleeping:  producer_wait {need_kick, wake_at}  <- C reads, clears, kicks
//!   P reads, clears, kicks ---->  consumer_wait {need_kick, wake_at}     C registers before sleeping
//! ```
//!
//! # Example
//!
//! 1. Make a ring of 4 slots: one producer and one consumer handle.
//! 2. Push two messages with one publish (send combining).
//! 3. The consumer claims them, then frees their slots.
//!
//! ```
//! use kicklab_ring::ring;
//!
//! let (mut p, mut c) = ring(4);
//! p.write(10).unwrap();
//! p.write(11).unwrap();
//! let published = p.publish();                 // one tail store for both
//! assert_eq!(published.count(), 2);
//! assert_eq!(c.available().unwrap(), 2);
//! assert_eq!(c.claim().unwrap(), Some(10));
//! assert_eq!(c.claim().unwrap(), Some(11));
//! assert_eq!(c.release().count(), 2);          // both slots free again
//! assert_eq!(p.free_now().unwrap(), 4);       // re-reads the consumer's index
//! ```
//!
//! Counters are free-running `u32`s and each side keeps its own slot
//! position, so any length L >= 1 works (not only powers of two) and a
//! 32-bit guest can use the same layout. Indices read from the other side
//! are validated: a peer that writes garbage gets [`RingError::Corrupt`],
//! never an out-of-bounds access.

mod driven;
mod endpoint;
mod layout;
#[cfg(not(feature = "loom"))]
mod notify;
pub mod sync;
#[cfg(not(feature = "loom"))]
pub mod untrusted;
mod wait;

pub use driven::{
    Action, Clock, Coalescer, Controller, Driven, Episode, MonotonicClock, Policy, View,
};
#[cfg(not(feature = "loom"))]
pub use endpoint::on_raw;
pub use endpoint::{ring, Consumer, Producer, Published, Released};
#[cfg(not(feature = "loom"))]
pub use layout::RawRing;
pub use layout::{offsets, reached, RingHeader, WaitPoint, CACHE_LINE};
#[cfg(not(feature = "loom"))]
pub use notify::{wait_readable, EventFdNotifier, FutexNotifier, NotifierKind, PipeNotifier};
pub use wait::{Notifier, WaitError, WaitStats, WaitStrategy};

/// The other side broke the ring's invariants: an index read from shared
/// memory is impossible. It is detected before any slot is touched (never
/// an out-of-bounds access); the ring cannot be trusted after it.
///
/// Kept small (an enum tag, no strings) so that results carrying it stay in
/// registers; the fast paths ([`Producer::push`], [`Consumer::pop`]) return
/// the even smaller [`PushError`] / [`PopError`]. Why: see
/// docs/ring-benchmarks.md.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RingError {
    /// An index read from shared memory is impossible (for example more
    /// messages published than the ring holds).
    #[error("corrupt ring: {what} = {value} (tail - head must be at most L = {len})")]
    Corrupt {
        /// Which index.
        what: Index,
        /// The value read.
        value: u32,
        /// The ring's length.
        len: u32,
    },
}

/// Why [`Producer::push`] did not push. Two bytes, so that
/// `Result<(), PushError>` stays in a register (see [`RingError`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PushError {
    /// No free slot.
    #[error("ring full")]
    Full,
    /// The consumer's index is impossible.
    #[error("corrupt ring: impossible {0}")]
    Corrupt(Index),
}

/// Why [`Consumer::pop`] returned no message. Two bytes, so that
/// `Result<u64, PopError>` fits in two registers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PopError {
    /// Nothing published.
    #[error("ring empty")]
    Empty,
    /// The producer's index is impossible.
    #[error("corrupt ring: impossible {0}")]
    Corrupt(Index),
}

/// A shared index of the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Index {
    /// Published count, written by the producer.
    Tail,
    /// Freed count, written by the consumer.
    Head,
}

impl std::fmt::Display for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Index::Tail => "tail",
            Index::Head => "head",
        })
    }
}
