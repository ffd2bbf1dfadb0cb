//! The one host party loop both backends run: a producer or a consumer
//! over a `kicklab-ring` endpoint, with busy work drawn from the sampler,
//! sequence checks, window marks and a progress counter; and the pieces
//! of a watchdog that measures progress ([`Stall`], [`join_within`],
//! [`Stoppable`]). What does not live here: spawning the parties (each
//! backend does), the guest's half (`backend::kvm::guest`).
//!
//! ```text
//!   producer: [wait_for_space(k)] -> busy W -> write seq -> publish (every batch) -> maybe kick
//!   consumer: wait_for_messages(k) -> claim, check seq -> busy W -> release -> maybe kick
//! ```

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kicklab_ring::{Consumer, Notifier, Producer, WaitStats, WaitStrategy};
use kicklab_sim::Sampler;

use crate::clock::{rdtsc, thread_cpu_ns, Tsc};
use crate::TestbedError;

/// What one host party saw at the start and the end of the window.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Marks {
    pub t0: u64,
    pub t1: u64,
    pub cpu0: u64,
    pub cpu1: u64,
    /// An extra CPU clock read with the marks (the vCPU thread's), or 0.
    pub extra0: u64,
    pub extra1: u64,
    pub kicks0: u64,
    pub kicks1: u64,
    /// TSC ticks spent in notify calls, at the marks.
    pub kick_ticks0: u64,
    pub kick_ticks1: u64,
    /// Wake-ups timed from the peer's kick, and their TSC ticks, at the
    /// marks.
    pub wakes0: u64,
    pub wakes1: u64,
    pub wake_ticks0: u64,
    pub wake_ticks1: u64,
    pub sleeps0: u64,
    pub sleeps1: u64,
    /// Wake-ups that found nothing to do (whole run).
    pub spurious: u64,
    /// Consumer: messages never seen.
    pub lost: u64,
    /// Consumer: messages seen twice or out of order.
    pub bad: u64,
}

/// One host party: everything its loop needs.
pub(crate) struct HostParty<'a> {
    /// Messages in all (warm-up included).
    pub total: u64,
    /// Messages before the window.
    pub warmup: u64,
    /// The threshold this party registers with when it blocks (a producer
    /// waits for k_C free slots, a consumer for k_P messages).
    pub k: u32,
    /// How it waits.
    pub strategy: WaitStrategy,
    /// Its per-message work.
    pub work: Sampler,
    /// Producer: publish every `batch` messages (or when the ring is full).
    pub batch: u64,
    /// What it waits on.
    pub wait_on: &'a dyn Notifier,
    /// What it kicks the peer with.
    pub kick_peer: &'a dyn Notifier,
    /// Set by the watchdog: give up.
    pub stop: &'a AtomicBool,
    /// Messages this party has handled so far (for the watchdog).
    pub progress: &'a AtomicU64,
    /// An extra CPU clock read with the marks (the vCPU thread's).
    pub extra_clock: Option<&'a (dyn Fn() -> u64 + Sync)>,
    /// Where this party stamps the TSC at the start of each kick, and
    /// where the peer stamps its own: a wake-up is timed from the peer's
    /// last kick. `None` where the peer is no host thread (a guest).
    pub stamps: Option<(&'a AtomicU64, &'a AtomicU64)>,
}

/// Kicks and timed wake-ups so far: (kicks, kick ticks, wakes, wake ticks).
#[derive(Debug, Default, Clone, Copy)]
struct Timing {
    kicks: u64,
    kick_ticks: u64,
    wakes: u64,
    wake_ticks: u64,
}

impl Marks {
    /// What this party did over the window.
    pub(crate) fn side(&self) -> crate::pair::PartyCounts {
        crate::pair::PartyCounts {
            cpu_ns: self.cpu1 - self.cpu0,
            kicks: self.kicks1 - self.kicks0,
            sleeps: self.sleeps1 - self.sleeps0,
            spurious: self.spurious,
            #[allow(clippy::cast_precision_loss)]
            kick_ns: Some((self.kick_ticks1 - self.kick_ticks0) as f64 / Tsc::get().ticks_per_ns),
            #[allow(clippy::cast_precision_loss)]
            wake: (self.wakes1 > self.wakes0).then(|| {
                (self.wake_ticks1 - self.wake_ticks0) as f64
                    / Tsc::get().ticks_per_ns
                    / (self.wakes1 - self.wakes0) as f64
            }),
        }
    }
}

impl HostParty<'_> {
    /// A notify call, timed (and stamped for the peer's wake-up).
    fn kick(&self, kick: &dyn Notifier, t: &mut Timing) -> Result<(), TestbedError> {
        let t0 = rdtsc();
        if let Some((mine, _)) = self.stamps {
            // Relaxed: the notify's Release publishes it to the woken peer.
            mine.store(t0, Ordering::Relaxed);
        }
        kick.notify()?;
        t.kick_ticks += rdtsc().wrapping_sub(t0);
        t.kicks += 1;
        Ok(())
    }

    /// After a wait: if it slept, the time from the peer's last kick.
    fn woke(&self, slept: bool, t: &mut Timing) {
        if let (true, Some((_, peer))) = (slept, self.stamps) {
            let (now, at) = (rdtsc(), peer.load(Ordering::Relaxed));
            if at != 0 && now > at {
                t.wakes += 1;
                t.wake_ticks += now - at;
            }
        }
    }
}

impl HostParty<'_> {
    fn mark(&self, m: &mut Marks, k: Timing, st: &WaitStats, end: bool) {
        let (t, c) = (rdtsc(), thread_cpu_ns());
        let x = self.extra_clock.map_or(0, |f| f());
        if end {
            (m.t1, m.cpu1, m.extra1, m.kicks1, m.sleeps1, m.spurious) =
                (t, c, x, k.kicks, st.sleeps, st.spurious);
            (m.kick_ticks1, m.wakes1, m.wake_ticks1) = (k.kick_ticks, k.wakes, k.wake_ticks);
        } else {
            (m.t0, m.cpu0, m.extra0, m.kicks0, m.sleeps0) = (t, c, x, k.kicks, st.sleeps);
            (m.kick_ticks0, m.wakes0, m.wake_ticks0) = (k.kick_ticks, k.wakes, k.wake_ticks);
        }
    }

    /// Busy work of one message, cut short by the watchdog.
    fn busy(&mut self, tsc: &Tsc) -> Result<(), TestbedError> {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let ticks = (self.work.draw_ps() as f64 * tsc.ticks_per_ns / 1000.0) as u64;
        if tsc.spin_ticks_or_stop(ticks, self.stop) {
            Ok(())
        } else {
            Err(stopped())
        }
    }

    /// Produces sequence numbers 0..total.
    pub(crate) fn produce(mut self, producer: &mut Producer) -> Result<Marks, TestbedError> {
        let tsc = Tsc::get();
        let mut st = WaitStats::default();
        let (mut kicks, mut m) = (Timing::default(), Marks::default());
        let batch = self.batch.max(1);
        let mut pending = 0u64;
        // Publish what is written, with at most one kick (counted, timed).
        let flush = |me: &Self, producer: &mut Producer, kicks: &mut Timing| {
            let pubd = producer.publish();
            if producer.peer_wants_kick(pubd) {
                me.kick(me.kick_peer, kicks)?;
            }
            Ok::<(), TestbedError>(())
        };
        for seq in 0..self.total {
            if seq == self.warmup {
                self.mark(&mut m, kicks, &st, false);
            }
            // Send combining: a full ring must not hold unpublished
            // messages while P waits, or C could never free a slot.
            if pending > 0 && producer.free()? == 0 {
                flush(&self, producer, &mut kicks)?;
                self.progress.fetch_add(pending, Ordering::Relaxed);
                pending = 0;
            }
            let sleeps = st.sleeps;
            producer.wait_for_space(self.k, self.strategy, self.wait_on, &mut st)?;
            self.woke(st.sleeps > sleeps, &mut kicks);
            self.busy(&tsc)?;
            producer.write(seq)?;
            pending += 1;
            if pending == batch || seq + 1 == self.total {
                flush(&self, producer, &mut kicks)?;
                self.progress.fetch_add(pending, Ordering::Relaxed);
                pending = 0;
            }
            if self.stop.load(Ordering::Relaxed) {
                return Err(stopped());
            }
        }
        self.mark(&mut m, kicks, &st, true);
        // End of stream: fewer than k_P messages may wait for a kick.
        self.kick_peer.notify()?;
        Ok(m)
    }

    /// Consumes `total` messages, checking their sequence numbers.
    pub(crate) fn consume(mut self, consumer: &mut Consumer) -> Result<Marks, TestbedError> {
        let tsc = Tsc::get();
        let mut st = WaitStats::default();
        let (mut kicks, mut m) = (Timing::default(), Marks::default());
        let mut next = 0u64;
        let mut done = 0u64;
        while done < self.total {
            if done == self.warmup {
                self.mark(&mut m, kicks, &st, false);
            }
            let sleeps = st.sleeps;
            consumer.wait_for_messages(self.k, self.strategy, self.wait_on, &mut st)?;
            self.woke(st.sleeps > sleeps, &mut kicks);
            if self.stop.load(Ordering::Relaxed) {
                return Err(stopped());
            }
            let Some(seq) = consumer.claim()? else {
                continue;
            };
            match seq.cmp(&next) {
                std::cmp::Ordering::Equal => next += 1,
                std::cmp::Ordering::Greater => {
                    m.lost = m.lost.saturating_add(seq - next);
                    next = seq.saturating_add(1);
                }
                std::cmp::Ordering::Less => m.bad += 1,
            }
            self.busy(&tsc)?;
            let rel = consumer.release();
            done += 1;
            self.progress.store(done, Ordering::Relaxed);
            if consumer.peer_wants_kick(rel) {
                self.kick(self.kick_peer, &mut kicks)?;
            }
        }
        self.mark(&mut m, kicks, &st, true);
        m.lost = m.lost.saturating_add(self.total.saturating_sub(next));
        Ok(m)
    }
}

fn stopped() -> TestbedError {
    TestbedError::Hang("stopped by the watchdog".into())
}

/// A notifier whose waits end with an error once the run is stopped, so
/// the watchdog can unblock a party (notify it, then it sees the flag).
pub(crate) struct Stoppable<'a> {
    pub inner: &'a dyn Notifier,
    pub stop: &'a AtomicBool,
}

impl Notifier for Stoppable<'_> {
    fn notify(&self) -> std::io::Result<()> {
        self.inner.notify()
    }

    fn wait(&self) -> std::io::Result<()> {
        self.inner.wait()?;
        if self.stop.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("run stopped"));
        }
        Ok(())
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Progress watchdog: fed a snapshot of the run's counters now and then,
/// says when they have not moved for longer than the stall limit.
pub(crate) struct Stall<T> {
    limit: Duration,
    last: Option<T>,
    since: Instant,
}

impl<T: PartialEq + Copy> Stall<T> {
    pub(crate) fn new(limit: Duration) -> Stall<T> {
        Stall {
            limit,
            last: None,
            since: Instant::now(),
        }
    }

    /// Whether `now` is the same as for longer than the limit.
    pub(crate) fn stalled(&mut self, now: T) -> bool {
        if self.last != Some(now) {
            self.last = Some(now);
            self.since = Instant::now();
            return false;
        }
        self.since.elapsed() > self.limit
    }
}

/// How often watchdogs look.
pub(crate) const TICK: Duration = Duration::from_millis(20);

/// Joins `h` if it finishes within `within`; otherwise leaves it running
/// (detached) and says so: a join never waits for ever.
pub(crate) fn join_within<T>(
    h: JoinHandle<Result<T, TestbedError>>,
    within: Duration,
    who: &str,
) -> Result<T, TestbedError> {
    let start = Instant::now();
    while !h.is_finished() {
        if start.elapsed() > within {
            return Err(TestbedError::Hang(format!(
                "the {who} thread did not stop within {within:?} of being told to"
            )));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    h.join()
        .map_err(|_| TestbedError::Hang(format!("the {who} thread panicked")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stall_fires_only_without_progress() {
        let mut s = Stall::new(Duration::from_millis(30));
        assert!(!s.stalled(1));
        for i in 2..6 {
            std::thread::sleep(Duration::from_millis(15));
            assert!(!s.stalled(i), "it moved");
        }
        std::thread::sleep(Duration::from_millis(40));
        assert!(s.stalled(5));
    }

    #[test]
    fn a_join_is_bounded() {
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let s2 = std::sync::Arc::clone(&stop);
        let h = std::thread::spawn(move || -> Result<(), TestbedError> {
            while !s2.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
            }
            Ok(())
        });
        let e = join_within(h, Duration::from_millis(20), "test").unwrap_err();
        assert!(e.to_string().contains("did not stop"), "{e}");
        stop.store(true, Ordering::Relaxed);
    }
}
