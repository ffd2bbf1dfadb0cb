//! Waiting: spin, block, or spin then block, in crossbeam `Backoff`'s
//! vocabulary: spin -> register need-kick -> fence -> re-check -> block.
//! The fixed strategies live here ([`WaitStrategy`]); waits decided step
//! by step by a policy (timed sleeps, spins with deadlines, blocks) are in
//! `driven.rs` and share the block protocol below.

use std::time::{Duration, Instant};

use crate::sync::spin_hint;
use crate::{Consumer, Producer, RingError};

/// Wakes a blocked peer. A notification sent while nobody waits is kept
/// (at most one), so the next [`Notifier::wait`] returns at once: waits
/// must always re-check their condition in a loop.
pub trait Notifier: Send + Sync {
    /// Wakes the waiter, or lets its next wait return at once.
    ///
    /// # Errors
    ///
    /// The underlying system call failed.
    fn notify(&self) -> std::io::Result<()>;

    /// Blocks until notified, consuming the notification.
    ///
    /// # Errors
    ///
    /// The underlying system call failed.
    fn wait(&self) -> std::io::Result<()>;

    /// Blocks until notified (consuming the notification: true) or until
    /// `timeout` has passed (false). The default sleeps the whole timeout
    /// and returns false: a notification sent meanwhile stays pending and
    /// ends the next wait at once (a stale kick, which every wait
    /// survives), so a notifier without a timed wait loses none either.
    ///
    /// # Errors
    ///
    /// The underlying system call failed.
    fn wait_timeout(&self, timeout: Duration) -> std::io::Result<bool> {
        std::thread::sleep(timeout);
        Ok(false)
    }

    /// Whether the waiter should give up: a polling wait checks it now and
    /// then (a blocked one relies on `wait` returning an error), so the
    /// owner of a run can end a wait on a peer that will never come, such
    /// as a misbehaving guest. Never, by default.
    fn stopped(&self) -> bool {
        false
    }
}

/// How a party waits when it cannot go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitStrategy {
    /// Spin until the condition holds (never sleeps, never needs a kick).
    Poll,
    /// Register for a kick and block at once.
    Block,
    /// Spin for at most this long, then as `Block`.
    SpinThenBlock(Duration),
}

/// What waiting cost one side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaitStats {
    /// Times it slept: blocked on its notifier, or a timed sleep (the
    /// naps, counted here too, as the simulator counts them).
    pub sleeps: u64,
    /// Of the sleeps, the timed ones: never registered, never kicked.
    pub naps: u64,
    /// Times it registered but the re-check found the condition true.
    pub averted: u64,
    /// Wake-ups from a block that found the condition still false
    /// (spurious or stale kicks; a nap that finds nothing is not one).
    pub spurious: u64,
}

impl WaitStats {
    /// Times it blocked on its notifier (the sleeps that were not naps).
    pub fn blocks(&self) -> u64 {
        self.sleeps - self.naps
    }
}

/// An error while waiting.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    /// The ring's shared indices are corrupt.
    #[error(transparent)]
    Ring(#[from] RingError),
    /// The notifier failed.
    #[error("notifier: {0}")]
    Io(#[from] std::io::Error),
    /// The notifier said to stop ([`Notifier::stopped`]).
    #[error("the wait was stopped")]
    Stopped,
}

/// The side-specific parts of a wait.
pub(crate) trait Side {
    /// How much of the resource (free slots / available messages) there is.
    fn have(&mut self) -> Result<u32, RingError>;
    fn prepare_sleep(&mut self, k: u32) -> Result<bool, RingError>;
    fn finish_sleep(&self);
    /// This side's own index and the messages in the ring (published, not
    /// yet freed) as it last saw them; `fresh`: re-read the peer's index
    /// first.
    fn seen(&mut self, fresh: bool) -> Result<(u32, u32), RingError>;
    /// The ring's length L.
    fn len(&self) -> u32;
    /// Whether this is the producer.
    const PRODUCER: bool;
}

impl Side for Producer {
    const PRODUCER: bool = true;
    fn have(&mut self) -> Result<u32, RingError> {
        self.free()
    }
    fn seen(&mut self, fresh: bool) -> Result<(u32, u32), RingError> {
        if fresh {
            self.free_now()?;
        }
        Ok(self.seen_indices())
    }
    fn len(&self) -> u32 {
        self.len()
    }
    fn prepare_sleep(&mut self, k: u32) -> Result<bool, RingError> {
        Producer::prepare_sleep(self, k)
    }
    fn finish_sleep(&self) {
        Producer::finish_sleep(self);
    }
}

impl Side for Consumer {
    const PRODUCER: bool = false;
    fn have(&mut self) -> Result<u32, RingError> {
        self.available()
    }
    fn seen(&mut self, fresh: bool) -> Result<(u32, u32), RingError> {
        if fresh {
            self.available_now()?;
        }
        Ok(self.seen_indices())
    }
    fn len(&self) -> u32 {
        self.len()
    }
    fn prepare_sleep(&mut self, k: u32) -> Result<bool, RingError> {
        Consumer::prepare_sleep(self, k)
    }
    fn finish_sleep(&self) {
        Consumer::finish_sleep(self);
    }
}

fn wait_for<S: Side>(
    side: &mut S,
    k: u32,
    strategy: WaitStrategy,
    notifier: &dyn Notifier,
    stats: &mut WaitStats,
) -> Result<(), WaitError> {
    if side.have()? > 0 {
        return Ok(());
    }
    match strategy {
        WaitStrategy::Poll => {
            let mut i = 0u32;
            loop {
                spin_hint();
                if side.have()? > 0 {
                    return Ok(());
                }
                i = i.wrapping_add(1);
                if i.is_multiple_of(1024) && notifier.stopped() {
                    return Err(WaitError::Stopped);
                }
            }
        }
        WaitStrategy::SpinThenBlock(budget) if !budget.is_zero() => {
            let start = Instant::now();
            let mut i = 0u32;
            loop {
                spin_hint();
                if side.have()? > 0 {
                    return Ok(());
                }
                i = i.wrapping_add(1);
                // Read the clock every 64 spins (about 2 us), not every spin.
                // Under loom there is no clock: two spins stand for the budget.
                if (cfg!(feature = "loom") && i > 2)
                    || (i.is_multiple_of(64) && start.elapsed() >= budget)
                {
                    break;
                }
            }
        }
        WaitStrategy::Block | WaitStrategy::SpinThenBlock(_) => {}
    }
    block(side, k, notifier, stats)
}

/// A pause: register need-kick at `k` -> fence -> re-check -> block, once.
/// The party goes on whatever it finds on waking (it has slots or
/// messages already); a stale kick only ends the pause early.
pub(crate) fn block_once<S: Side>(
    side: &mut S,
    k: u32,
    notifier: &dyn Notifier,
    stats: &mut WaitStats,
) -> Result<(), WaitError> {
    if side.prepare_sleep(k)? {
        stats.sleeps += 1;
        notifier.wait()?;
        side.finish_sleep();
    } else {
        stats.averted += 1;
    }
    Ok(())
}

/// How a [`block_timed`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimedEnd {
    /// Kicked, with the `k` it asked for there.
    Kicked,
    /// The timeout passed first.
    TimedOut,
    /// The re-check after registering found the `k` there: no sleep.
    Averted,
}

/// A wait with a deadline: register need-kick at `k` -> fence -> re-check
/// -> block until kicked or `timeout` has passed, then withdraw. A stale
/// kick (one sent after an earlier wait had withdrawn, left pending) finds
/// fewer than `k`: counted as spurious, it registers and sleeps again for
/// the time left. A kick sent after the timeout stays pending: the next
/// wait ends at once and re-checks.
pub(crate) fn block_timed<S: Side>(
    side: &mut S,
    k: u32,
    timeout: Duration,
    notifier: &dyn Notifier,
    stats: &mut WaitStats,
) -> Result<TimedEnd, WaitError> {
    let deadline = Instant::now().checked_add(timeout);
    loop {
        if !side.prepare_sleep(k)? {
            stats.averted += 1;
            return Ok(TimedEnd::Averted);
        }
        stats.sleeps += 1;
        let left = deadline.map_or(timeout, |d| d.saturating_duration_since(Instant::now()));
        let kicked = notifier.wait_timeout(left)?;
        side.finish_sleep();
        if !kicked {
            return Ok(TimedEnd::TimedOut);
        }
        if side.have()? >= k.max(1) {
            return Ok(TimedEnd::Kicked);
        }
        stats.spurious += 1;
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(TimedEnd::TimedOut);
        }
    }
}

/// Register need-kick -> fence -> re-check -> block, until the condition
/// holds: a wake-up that finds nothing (a stale kick) blocks again.
pub(crate) fn block<S: Side>(
    side: &mut S,
    k: u32,
    notifier: &dyn Notifier,
    stats: &mut WaitStats,
) -> Result<(), WaitError> {
    loop {
        if side.prepare_sleep(k)? {
            stats.sleeps += 1;
            notifier.wait()?;
            side.finish_sleep();
            if side.have()? > 0 {
                return Ok(());
            }
            stats.spurious += 1;
        } else {
            stats.averted += 1;
            if side.have()? > 0 {
                return Ok(());
            }
        }
    }
}

impl Producer {
    /// Returns once at least one slot is free, waiting per `strategy`; when
    /// blocking, asks for a kick once `k_c` slots are free.
    ///
    /// # Errors
    ///
    /// A corrupt ring or a failing notifier.
    pub fn wait_for_space(
        &mut self,
        k_c: u32,
        strategy: WaitStrategy,
        notifier: &dyn Notifier,
        stats: &mut WaitStats,
    ) -> Result<(), WaitError> {
        wait_for(self, k_c, strategy, notifier, stats)
    }
}

impl Consumer {
    /// Returns once at least one message is available, waiting per
    /// `strategy`; when blocking, asks for a kick once `k_p` messages are
    /// there.
    ///
    /// # Errors
    ///
    /// A corrupt ring or a failing notifier.
    pub fn wait_for_messages(
        &mut self,
        k_p: u32,
        strategy: WaitStrategy,
        notifier: &dyn Notifier,
        stats: &mut WaitStats,
    ) -> Result<(), WaitError> {
        wait_for(self, k_p, strategy, notifier, stats)
    }
}

#[cfg(all(test, not(feature = "loom")))]
mod tests {
    use super::*;

    /// Never notifies; says stop once told to.
    struct Stopper(std::sync::atomic::AtomicBool);

    impl Notifier for Stopper {
        fn notify(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn wait(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn stopped(&self) -> bool {
            self.0.load(std::sync::atomic::Ordering::Relaxed)
        }
    }

    #[test]
    fn a_stopped_notifier_ends_a_polling_wait() {
        let (mut p, mut c) = crate::ring(4);
        let stop = Stopper(std::sync::atomic::AtomicBool::new(true));
        let mut st = WaitStats::default();
        let r = c.wait_for_messages(1, WaitStrategy::Poll, &stop, &mut st);
        assert!(matches!(r, Err(WaitError::Stopped)), "{r:?}");
        // With a message there, polling returns at once even if stopped.
        p.push(7).unwrap();
        c.wait_for_messages(1, WaitStrategy::Poll, &stop, &mut st)
            .unwrap();
        assert_eq!(c.pop().unwrap(), 7);
    }
}
