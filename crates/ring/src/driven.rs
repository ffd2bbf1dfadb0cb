//! Waits decided step by step by a policy: every strategy of
//! `kicklab_model::WaitMode` (`notify`, `poll`, `spin:<B>`, `sleep:<Y>`,
//! `halt-poll`, `haltpoll`, `hybrid`, `defer`, `adaptive`, and
//! `coalesce:<n>,<t>` on the notifier side) on the real ring, with the
//! semantics the simulator runs (`docs/control.md`):
//!
//! | [`Action`] | what this module does | kicked? |
//! | --- | --- | --- |
//! | `Spin(None)` | polls the condition until it holds | never |
//! | `Spin(Some(d))` | polls the condition and the clock until it holds or `d` passes | never |
//! | `Nap(t)` | a real timed sleep until `t` (`std::thread::sleep`), no registration; counted in [`WaitStats::sleeps`] and [`WaitStats::naps`] | never |
//! | `Block` | today's protocol: register need-kick -> fence -> re-check -> block | by the peer, per the protocol |
//! | `BlockUntil(k)` | a pause: the same protocol once, asking for a kick at `k` slots free (messages queued), then goes on | by the peer, at `k` |
//! | `TimedBlock(k, t)` | a wait: the same protocol once, asking for a kick at `k`, sleeping on the notifier until kicked or `t` ([`Notifier::wait_timeout`]), then withdraws and re-checks | by the peer, at `k` |
//!
//! Design: the ring depends on `kicklab-model` (serde, thiserror, libm: no
//! more) and runs its [`Controller`] directly, so a library user picks any
//! strategy by name (`WaitMode::parse("adaptive")`) and the ring carries
//! out exactly the decisions the simulator is checked with. The waits take
//! a [`Policy`], a two-method trait the `Controller` implements, so that
//! tests can script any sequence of actions (the loom tests do), and a
//! [`Clock`] in picoseconds, so that the caller picks its time source (the
//! testbed its TSC; [`MonotonicClock`] otherwise). [`Driven`] bundles the
//! policy and the clock with what a [`View`] needs that the ring's `u32`
//! indices lack: 64-bit counts.
//!
//! ```text
//!   wait (queue full / empty)                 after a publish / free
//!   ---------------------------               -----------------------
//!   policy.wait(view, start, first) -> Spin | Nap | Block    policy.after_work(view, W)
//!     Spin: poll condition (+ clock)  --+                       -> None | Nap | Spin(deadline)
//!     Nap:  sleep, re-check          ---+-> until it holds
//!     Block: register, re-check, block -+      BlockUntil(k): register at k, block once
//!   policy.done(view, episode)
//! ```
//!
//! Under loom there is no clock: a nap is a yield and a spin with a
//! deadline runs out after two rounds, as in [`crate::WaitStrategy`].

use kicklab_model::control::coalescing;
use kicklab_model::WaitMode;

pub use kicklab_model::control::{Action, Controller, Episode, View};

use crate::sync::spin_hint;
use crate::wait::{block, block_once, block_timed, Notifier, Side, TimedEnd, WaitError, WaitStats};
use crate::{Consumer, Producer};

/// A monotonic clock in picoseconds (the unit of [`View::now`]).
pub trait Clock {
    /// Now [ps]: never less than an earlier reading on the same thread.
    fn now_ps(&self) -> u64;
}

/// `std::time::Instant` (`CLOCK_MONOTONIC`) since the clock was made [ps].
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    epoch: std::time::Instant,
}

impl MonotonicClock {
    /// A clock that reads 0 now.
    pub fn new() -> MonotonicClock {
        MonotonicClock {
            epoch: std::time::Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> MonotonicClock {
        MonotonicClock::new()
    }
}

impl Clock for MonotonicClock {
    fn now_ps(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos())
            .unwrap_or(u64::MAX)
            .saturating_mul(1000)
    }
}

/// What decides a wait, step by step ([`Controller`] is the one every
/// strategy runs; tests script their own).
pub trait Policy {
    /// The party cannot go on at `v.now`: the next step. `first` is true
    /// when this starts an episode (at `start`), false when a spin ran out
    /// or a timed sleep ended with the condition still false.
    fn wait(&mut self, v: &View, start: u64, first: bool) -> Action;
    /// The episode `e` ended.
    fn done(&mut self, v: &View, e: Episode);
    /// The party finished a message whose work took `work_ps` (`None`: not
    /// timed; a party may time one message in several): a pause before
    /// the next one (`Nap`, or `Spin` with a deadline), if any.
    fn after_work(&mut self, v: &View, work_ps: Option<u64>) -> Option<Action> {
        let _ = (v, work_ps);
        None
    }
    /// Before [`Policy::after_work`]: whether it needs a fresh view (the
    /// peer's index re-read; reading it pulls a cache line the peer writes
    /// after every message), given `cached`, the ring as the endpoint last
    /// saw it (a producer's occupancy overstated, a consumer's
    /// understated). If not, [`Policy::own_work`] is called instead.
    fn needs_fresh(&mut self, cached: &View) -> bool {
        let _ = cached;
        true
    }
    /// The party finished a message whose work took `work_ps` and no
    /// decision needs the peer's index.
    fn own_work(&mut self, work_ps: u64) {
        let _ = work_ps;
    }
    /// A nap planned to end at `planned` [ps] (or a timed block whose
    /// deadline that was, and ended it) ended with the party running again
    /// at `now`.
    fn woke(&mut self, planned: u64, now: u64) {
        let _ = (planned, now);
    }
}

impl Policy for Controller {
    fn wait(&mut self, v: &View, start: u64, first: bool) -> Action {
        Controller::wait(self, v, start, first)
    }
    fn done(&mut self, v: &View, e: Episode) {
        Controller::done(self, v, e);
    }
    fn after_work(&mut self, v: &View, work_ps: Option<u64>) -> Option<Action> {
        match work_ps {
            Some(w) => Controller::after_work(self, v, w),
            None => Controller::after_untimed(self, v),
        }
    }
    fn needs_fresh(&mut self, cached: &View) -> bool {
        Controller::needs_fresh(self, cached)
    }
    fn own_work(&mut self, work_ps: u64) {
        Controller::own_work(self, work_ps);
    }
    fn woke(&mut self, planned: u64, now: u64) {
        Controller::woke(self, planned, now);
    }
}

/// A policy, its clock, and the 64-bit counts its views need: one per
/// endpoint (it follows that endpoint's index).
///
/// # Examples
///
/// A consumer that waits as `adaptive` does (a producer would use
/// [`Producer::wait_for_space_by`] and [`Producer::pause_by`] the same way):
///
/// ```
/// use kicklab_model::{Params, Party, WaitMode};
/// use kicklab_ring::{ring, Controller, Driven, FutexNotifier, MonotonicClock, WaitStats};
///
/// let (mut p, mut c) = ring(8);
/// let mode = WaitMode::parse("adaptive:latency=50us").unwrap();
/// let ctl = Controller::new(mode, Party::C, &Params::default(), None);
/// let mut by = Driven::new(ctl, MonotonicClock::new());
/// let (to_c, mut st) = (FutexNotifier::default(), WaitStats::default());
/// p.push(7).unwrap();
/// c.wait_for_messages_by(1, &mut by, &to_c, &mut st).unwrap();
/// assert_eq!(c.pop().unwrap(), 7);
/// ```
#[derive(Debug, Clone)]
pub struct Driven<P, C> {
    /// What decides.
    pub policy: P,
    /// Its time source.
    pub clock: C,
    /// The endpoint's own index, widened to 64 bits (starting at 2^32 plus
    /// the index, so that the peer's count, up to L below, stays >= 0).
    own: Option<u64>,
    /// The latest clock reading (readings never go back).
    last_ps: u64,
}

impl<P: Policy, C: Clock> Driven<P, C> {
    /// `policy` on `clock`.
    pub fn new(policy: P, clock: C) -> Driven<P, C> {
        Driven {
            policy,
            clock,
            own: None,
            last_ps: 0,
        }
    }

    /// The clock, never going back (a thread that moves between CPUs can
    /// see a TSC a few ticks behind).
    pub fn now(&mut self) -> u64 {
        self.last_ps = self.last_ps.max(self.clock.now_ps());
        self.last_ps
    }

    /// What the policy sees from `side` at `now`.
    fn view<S: Side>(&mut self, side: &mut S, now: u64, fresh: bool) -> Result<View, WaitError> {
        let (own32, occupied) = side.seen(fresh)?;
        let own = match self.own {
            None => (1 << 32) + u64::from(own32),
            Some(o) => {
                #[allow(clippy::cast_possible_truncation)] // the low half, on purpose
                let low = o as u32;
                o + u64::from(own32.wrapping_sub(low))
            }
        };
        self.own = Some(own);
        let len = side.len();
        let occupied = u64::from(occupied.min(len));
        let (published, consumed) = if S::PRODUCER {
            (own, own - occupied)
        } else {
            (own + occupied, own)
        };
        Ok(View {
            now,
            len: u64::from(len),
            published,
            consumed,
        })
    }

    /// Waits until `side` has at least one, as the policy decides.
    fn wait<S: Side>(
        &mut self,
        side: &mut S,
        k: u32,
        notifier: &dyn Notifier,
        stats: &mut WaitStats,
    ) -> Result<(), WaitError> {
        if side.have()? > 0 {
            return Ok(());
        }
        let start = self.now();
        let mut first = true;
        let mut blocked = None;
        loop {
            let now = self.now();
            let v = self.view(side, now, false)?;
            match self.policy.wait(&v, start, first) {
                Action::Spin(deadline) => {
                    if self.spin(Some(side), deadline, notifier)? {
                        break;
                    }
                }
                Action::Nap(until) => {
                    self.nap(until, stats);
                    let now = self.now();
                    self.policy.woke(until, now);
                    if Self::woken_to_go_on(side, notifier)? {
                        break;
                    }
                }
                // A wait takes the side's own threshold.
                Action::Block | Action::BlockUntil(_) => {
                    let t0 = self.now();
                    block(side, k, notifier, stats)?;
                    *blocked.get_or_insert(0) += self.now() - t0;
                    break;
                }
                Action::TimedBlock(at, until) => {
                    let t0 = self.now();
                    let timeout = std::time::Duration::from_nanos(until.saturating_sub(t0) / 1000);
                    let end = block_timed(side, at, timeout, notifier, stats)?;
                    let now = self.now();
                    match end {
                        // Blocked until the kick: an episode's block.
                        TimedEnd::Kicked => *blocked.get_or_insert(0) += now - t0,
                        // Woken as from a nap.
                        TimedEnd::TimedOut => self.policy.woke(until, now),
                        TimedEnd::Averted => {}
                    }
                    if Self::woken_to_go_on(side, notifier)? {
                        break;
                    }
                }
            }
            first = false;
        }
        let end = self.now();
        let v = self.view(side, end, false)?;
        self.policy.done(
            &v,
            Episode {
                start,
                end,
                blocked,
            },
        );
        Ok(())
    }

    /// After a timed sleep that did not end the wait by itself: whether
    /// the side can go on (true), or the policy decides again (false);
    /// a stopped notifier ends the wait.
    fn woken_to_go_on<S: Side>(side: &mut S, notifier: &dyn Notifier) -> Result<bool, WaitError> {
        if side.have()? > 0 {
            return Ok(true);
        }
        if notifier.stopped() {
            return Err(WaitError::Stopped);
        }
        Ok(false)
    }

    /// After a message: the policy's pause, carried out. True if it paused.
    fn pause<S: Side>(
        &mut self,
        side: &mut S,
        work_ps: Option<u64>,
        notifier: &dyn Notifier,
        stats: &mut WaitStats,
    ) -> Result<bool, WaitError> {
        // The peer's index re-read only where the policy needs it: the
        // read pulls the line the peer writes after every message. The
        // stale view needs no clock either (the last reading stands).
        let cached = self.view(side, self.last_ps, false)?;
        if !self.policy.needs_fresh(&cached) {
            if let Some(w) = work_ps {
                self.policy.own_work(w);
            }
            return Ok(false);
        }
        let now = self.now();
        let v = self.view(side, now, true)?;
        match self.policy.after_work(&v, work_ps) {
            Some(Action::Nap(until)) => {
                self.nap(until, stats);
                let now = self.now();
                self.policy.woke(until, now);
                Ok(true)
            }
            Some(Action::Spin(Some(until))) => {
                self.spin::<S>(None, Some(until), notifier)?;
                Ok(true)
            }
            Some(Action::BlockUntil(k)) => {
                block_once(side, k, notifier, stats)?;
                Ok(true)
            }
            Some(Action::Spin(None) | Action::Block | Action::TimedBlock(..)) | None => Ok(false),
        }
    }

    /// Polls `side`'s condition (if any) and the clock until the condition
    /// holds (true) or `deadline` passes (false); with neither, until
    /// stopped.
    fn spin<S: Side>(
        &mut self,
        mut side: Option<&mut S>,
        deadline: Option<u64>,
        notifier: &dyn Notifier,
    ) -> Result<bool, WaitError> {
        let mut i = 0u32;
        loop {
            if let Some(s) = side.as_deref_mut() {
                if s.have()? > 0 {
                    return Ok(true);
                }
            }
            spin_hint();
            i = i.wrapping_add(1);
            // Under loom there is no clock: two rounds stand for the deadline.
            if cfg!(feature = "loom") && deadline.is_some() && i > 2 {
                return Ok(false);
            }
            // The clock every 8 rounds (a few hundred ns at most).
            if i.is_multiple_of(8) {
                if deadline.is_some_and(|d| self.now() >= d) {
                    return Ok(false);
                }
                if i.is_multiple_of(1024) && notifier.stopped() {
                    return Err(WaitError::Stopped);
                }
            }
        }
    }

    /// A timed sleep until `until` [ps], counted; no registration, so the
    /// peer never kicks it.
    fn nap(&mut self, until: u64, stats: &mut WaitStats) {
        stats.sleeps += 1;
        stats.naps += 1;
        #[cfg(feature = "loom")]
        {
            let _ = until;
            loom::thread::yield_now();
        }
        #[cfg(not(feature = "loom"))]
        {
            let now = self.now();
            if until > now {
                std::thread::sleep(std::time::Duration::from_nanos((until - now) / 1000));
            }
        }
    }
}

impl Producer {
    /// Returns once at least one slot is free, waiting as `by`'s policy
    /// decides step by step (see the module's table); when it blocks, it
    /// asks for a kick once `k_c` slots are free.
    ///
    /// # Errors
    ///
    /// A corrupt ring, a failing notifier, or a stopped one
    /// ([`Notifier::stopped`], checked while spinning and after each nap).
    pub fn wait_for_space_by<P: Policy, C: Clock>(
        &mut self,
        k_c: u32,
        by: &mut Driven<P, C>,
        notifier: &dyn Notifier,
        stats: &mut WaitStats,
    ) -> Result<(), WaitError> {
        by.wait(self, k_c, notifier, stats)
    }

    /// After a publish whose work took `work_ps` (`None` where it was not
    /// timed: a party may time one message in several, which spares the
    /// clock reads): the pause `by`'s policy asks for (a nap, or a spin to
    /// a deadline), carried out. Returns whether it paused. Re-reads the
    /// consumer's index first where the policy needs it
    /// ([`Policy::needs_fresh`]).
    ///
    /// # Errors
    ///
    /// A corrupt ring, or a stopped notifier while spinning.
    pub fn pause_by<P: Policy, C: Clock>(
        &mut self,
        work_ps: Option<u64>,
        by: &mut Driven<P, C>,
        notifier: &dyn Notifier,
        stats: &mut WaitStats,
    ) -> Result<bool, WaitError> {
        by.pause(self, work_ps, notifier, stats)
    }
}

impl Consumer {
    /// Returns once at least one message is available, waiting as `by`'s
    /// policy decides; when it blocks, it asks for a kick once `k_p`
    /// messages are there.
    ///
    /// # Errors
    ///
    /// As [`Producer::wait_for_space_by`].
    pub fn wait_for_messages_by<P: Policy, C: Clock>(
        &mut self,
        k_p: u32,
        by: &mut Driven<P, C>,
        notifier: &dyn Notifier,
        stats: &mut WaitStats,
    ) -> Result<(), WaitError> {
        by.wait(self, k_p, notifier, stats)
    }

    /// After a release whose work took `work_ps`: the pause `by`'s policy
    /// asks for, carried out (see [`Producer::pause_by`]).
    ///
    /// # Errors
    ///
    /// As [`Producer::pause_by`].
    pub fn pause_by<P: Policy, C: Clock>(
        &mut self,
        work_ps: Option<u64>,
        by: &mut Driven<P, C>,
        notifier: &dyn Notifier,
        stats: &mut WaitStats,
    ) -> Result<bool, WaitError> {
        by.pause(self, work_ps, notifier, stats)
    }
}

/// Notifier-side coalescing (`coalesce:<n>,<t>`, virtio-net's): a kick the
/// peer asked for ([`Producer::peer_wants_kick`] said yes, which also
/// cleared the peer's request) is held until `n` items are pending for the
/// peer or `t` has passed since the first held one, checked at each
/// publish or free.
///
/// The owner must send a held kick before it waits, pauses or finishes
/// ([`Coalescer::flush`]): the peer sleeps until it comes, so holding it
/// across a wait of one's own can deadlock the pair.
///
/// # Examples
///
/// ```
/// use kicklab_ring::Coalescer;
/// let mut c = Coalescer::new(4, 1_000_000); // 4 items or 1 us
/// assert!(!c.kick_now(true, 0, 1), "asked for, held: 1 pending");
/// assert!(!c.kick_now(false, 10, 3));
/// assert!(c.kick_now(false, 20, 4), "4 pending: kick");
/// assert!(!c.kick_now(true, 30, 1));
/// assert!(c.flush(), "a held kick goes before the owner waits");
/// assert!(!c.flush(), "once");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Coalescer {
    n: u64,
    t_ps: u64,
    held_since: Option<u64>,
}

impl Coalescer {
    /// Kick once `n` items are pending or `t_ps` has passed.
    pub fn new(n: u64, t_ps: u64) -> Coalescer {
        Coalescer {
            n: n.max(1),
            t_ps,
            held_since: None,
        }
    }

    /// The coalescing `mode` asks for on a ring of `len` slots (`n` capped
    /// at `len`, so that a full ring always kicks); `None` for plain
    /// notifications.
    pub fn of(mode: WaitMode, len: u32) -> Option<Coalescer> {
        coalescing(mode, len).map(|(n, t)| Coalescer::new(n, t))
    }

    /// After a publish (free): `wanted` is what `peer_wants_kick` said,
    /// `pending` the items the peer has now (messages, or free slots),
    /// `now_ps` the clock. Whether to kick now. Only needs `pending` and
    /// `now_ps` when `wanted` or [`Coalescer::holding`].
    pub fn kick_now(&mut self, wanted: bool, now_ps: u64, pending: u64) -> bool {
        if wanted && self.held_since.is_none() {
            self.held_since = Some(now_ps);
        }
        match self.held_since {
            Some(since) if pending >= self.n || now_ps.saturating_sub(since) >= self.t_ps => {
                self.held_since = None;
                true
            }
            _ => false,
        }
    }

    /// Whether a kick is held.
    pub fn holding(&self) -> bool {
        self.held_since.is_some()
    }

    /// Before the owner waits, pauses or finishes: true if a held kick must
    /// be sent now (and it is no longer held).
    pub fn flush(&mut self) -> bool {
        self.held_since.take().is_some()
    }
}

#[cfg(all(test, not(feature = "loom")))]
mod tests {
    use super::*;
    use kicklab_model::{Params, Party};

    /// A notifier that counts and never blocks (a wait returns at once).
    #[derive(Default)]
    struct Counting(std::sync::atomic::AtomicU64);

    impl Notifier for Counting {
        fn notify(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn wait(&self) -> std::io::Result<()> {
            self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(())
        }
    }

    /// Plays a script, then blocks; records what it saw.
    struct Script {
        steps: Vec<Action>,
        seen: Vec<(View, bool)>,
        done: Vec<Episode>,
    }

    impl Policy for Script {
        fn wait(&mut self, v: &View, _start: u64, first: bool) -> Action {
            self.seen.push((*v, first));
            if self.steps.is_empty() {
                Action::Block
            } else {
                self.steps.remove(0)
            }
        }
        fn done(&mut self, _v: &View, e: Episode) {
            self.done.push(e);
        }
        fn after_work(&mut self, _v: &View, _work_ps: Option<u64>) -> Option<Action> {
            Some(Action::Nap(0))
        }
    }

    #[test]
    fn naps_and_deadline_spins_end_in_a_block_that_is_counted_apart() {
        let (mut p, mut c) = crate::ring(4);
        let n = Counting::default();
        let mut st = WaitStats::default();
        let script = Script {
            steps: vec![Action::Nap(0), Action::Spin(Some(0)), Action::Nap(0)],
            seen: Vec::new(),
            done: Vec::new(),
        };
        let mut by = Driven::new(script, MonotonicClock::new());
        // Nobody publishes: nap, spin to a passed deadline, nap, then block
        // (the notifier returns at once: spurious until a message is there).
        let t = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            p.push(1).unwrap();
            p
        });
        c.wait_for_messages_by(1, &mut by, &n, &mut st).unwrap();
        let _p = t.join().unwrap();
        assert_eq!(c.pop().unwrap(), 1);
        let firsts: Vec<bool> = by.policy.seen.iter().map(|s| s.1).collect();
        assert_eq!(firsts, [true, false, false, false]);
        assert_eq!(st.naps, 2);
        assert_eq!(st.blocks(), st.sleeps - 2);
        assert!(st.blocks() >= 1);
        let e = by.policy.done[0];
        assert!(e.blocked.is_some() && e.end >= e.start);
        // The views: an empty ring of 4, counts widened to 64 bits.
        let v = by.policy.seen[0].0;
        assert_eq!((v.len, v.occupancy()), (4, 0));
        assert_eq!(v.published, 1 << 32);
        // A pause is a nap, counted as a sleep.
        assert!(c.pause_by(Some(5), &mut by, &n, &mut st).unwrap());
        assert_eq!(st.naps, 3);
    }

    #[test]
    fn views_follow_indices_across_the_u32_wrap() {
        use crate::layout::Memory;
        use crate::sync::Ordering;
        let raw = crate::RawRing::allocate(4);
        // Both indices 5 below the wrap: 10 rounds cross it.
        raw.header().tail.0.store(u32::MAX - 4, Ordering::Relaxed);
        raw.header().head.0.store(u32::MAX - 4, Ordering::Relaxed);
        let (mut p, mut c) = crate::on_raw(raw);
        let script = Script {
            steps: Vec::new(),
            seen: Vec::new(),
            done: Vec::new(),
        };
        let mut by = Driven::new(script, MonotonicClock::new());
        let n = Counting::default();
        let mut st = WaitStats::default();
        let mut last = None;
        for i in 0..10u64 {
            p.push(i).unwrap();
            p.push(i).unwrap();
            c.pop().unwrap();
            let _ = p.pause_by(Some(0), &mut by, &n, &mut st).unwrap();
            let v = by.view(&mut p, 0, true).unwrap();
            assert_eq!(v.occupancy(), 1);
            if let Some(l) = last {
                assert_eq!(v.published, l + 2, "two published a round");
            }
            last = Some(v.published);
            c.pop().unwrap();
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "system calls")]
    fn the_controller_runs_every_strategy_through_a_wait() {
        for s in [
            "notify",
            "poll",
            "spin:2us",
            "sleep:5us",
            "halt-poll",
            "haltpoll",
            "hybrid",
            "hybrid:min",
            "defer:timeout=5us,count=2",
            "coalesce:4,10us",
            "adaptive",
        ] {
            let mode = WaitMode::parse(s).unwrap();
            let (mut p, mut c) = crate::ring(8);
            let to_c = std::sync::Arc::new(crate::FutexNotifier::default());
            let to_c2 = std::sync::Arc::clone(&to_c);
            let t = std::thread::spawn(move || {
                for i in 0..200u64 {
                    if i % 50 == 0 {
                        std::thread::sleep(std::time::Duration::from_micros(200));
                    }
                    while !p.write(i).unwrap() {
                        std::hint::spin_loop();
                    }
                    let pubd = p.publish();
                    if p.peer_wants_kick(pubd) {
                        to_c2.notify().unwrap();
                    }
                }
            });
            let ctl = Controller::new(mode, Party::C, &Params::default(), None);
            let mut by = Driven::new(ctl, MonotonicClock::new());
            let mut st = WaitStats::default();
            for want in 0..200u64 {
                c.wait_for_messages_by(1, &mut by, &*to_c, &mut st)
                    .unwrap_or_else(|e| panic!("{s}: {e}"));
                assert_eq!(c.pop().unwrap(), want, "{s}");
                let _ = c.pause_by(Some(1000), &mut by, &*to_c, &mut st).unwrap();
            }
            t.join().unwrap();
            if mode == WaitMode::Poll {
                assert_eq!(st.sleeps, 0, "{s}");
            }
            if let WaitMode::Sleep { .. } = mode {
                assert_eq!(st.sleeps, st.naps, "{s} never blocks");
            }
        }
    }

    /// Asks for a kick at 2 messages with a deadline `deadline` [ps]
    /// after the clock's start, then blocks; records the deadlines that
    /// ended a wait.
    struct TimedAtTwo {
        deadline: u64,
        woke: Vec<u64>,
    }

    impl Policy for TimedAtTwo {
        fn wait(&mut self, _v: &View, _start: u64, first: bool) -> Action {
            if first {
                Action::TimedBlock(2, self.deadline)
            } else {
                Action::Block
            }
        }
        fn done(&mut self, _v: &View, _e: Episode) {}
        fn woke(&mut self, planned: u64, _now: u64) {
            self.woke.push(planned);
        }
    }

    /// A futex notifier that says when its waiter has begun a timed wait
    /// (it has registered by then).
    #[derive(Default)]
    struct Announcing {
        inner: crate::FutexNotifier,
        waiting: std::sync::atomic::AtomicBool,
    }

    impl Notifier for Announcing {
        fn notify(&self) -> std::io::Result<()> {
            self.inner.notify()
        }
        fn wait(&self) -> std::io::Result<()> {
            self.inner.wait()
        }
        fn wait_timeout(&self, timeout: std::time::Duration) -> std::io::Result<bool> {
            self.waiting
                .store(true, std::sync::atomic::Ordering::SeqCst);
            self.inner.wait_timeout(timeout)
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "system calls")]
    fn a_timed_block_ends_by_the_kick_at_its_count_or_by_its_deadline() {
        // One message asks for no kick: the 200 ms deadline ends the wait.
        // The second is the count it asked for: its kick ends it, long
        // before a 60 s deadline.
        for (published, kicked, deadline) in [
            (1u64, false, 200_000_000_000u64),
            (2, true, 60 * 1_000_000_000_000),
        ] {
            let (mut p, mut c) = crate::ring(8);
            let to_c = std::sync::Arc::new(Announcing::default());
            let to_c2 = std::sync::Arc::clone(&to_c);
            let policy = TimedAtTwo {
                deadline,
                woke: Vec::new(),
            };
            let mut by = Driven::new(policy, MonotonicClock::new());
            let t = std::thread::spawn(move || {
                while !to_c2.waiting.load(std::sync::atomic::Ordering::SeqCst) {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                let mut kicks = 0u32;
                for i in 0..published {
                    assert!(p.write(i).unwrap());
                    let pubd = p.publish();
                    if p.peer_wants_kick(pubd) {
                        kicks += 1;
                        to_c2.notify().unwrap();
                    }
                }
                kicks
            });
            let mut st = WaitStats::default();
            c.wait_for_messages_by(1, &mut by, &*to_c, &mut st).unwrap();
            let waited = by.now();
            assert_eq!(t.join().unwrap(), u32::from(kicked), "{published}");
            assert_eq!(by.policy.woke.is_empty(), kicked, "{published}");
            assert_eq!(waited >= deadline, !kicked, "{published}: {waited} ps");
            assert_eq!((st.sleeps, st.naps, st.spurious), (1, 0, 0));
            assert_eq!(c.pop().unwrap(), 0);
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "system calls")]
    fn a_stale_kick_does_not_end_a_timed_block_early() {
        // A kick left pending (as one sent after an earlier wait withdrew
        // is): the wait asks for 2 messages, finds the one there, counts a
        // spurious wake-up, sleeps again, and ends at its timeout.
        let (mut p, mut c) = crate::ring(8);
        let n = crate::FutexNotifier::default();
        n.notify().unwrap();
        assert!(p.write(7).unwrap());
        let _ = p.publish();
        let mut st = WaitStats::default();
        let timeout = std::time::Duration::from_millis(20);
        let end = crate::wait::block_timed(&mut c, 2, timeout, &n, &mut st).unwrap();
        assert_eq!(end, TimedEnd::TimedOut);
        assert_eq!((st.sleeps, st.spurious), (2, 1));
        assert_eq!(c.pop().unwrap(), 7);
    }

    #[test]
    fn coalescing_holds_until_n_or_t_and_flushes_before_a_wait() {
        let mut c = Coalescer::of(WaitMode::parse("coalesce:8,20us").unwrap(), 256).unwrap();
        // Nothing asked for: nothing held, no kick.
        assert!(!c.kick_now(false, 0, 100));
        // Asked for at t = 0 with 1 pending: held, until 20 us pass.
        assert!(!c.kick_now(true, 0, 1));
        assert!(c.holding());
        assert!(!c.kick_now(false, 19_999_999, 7));
        assert!(c.kick_now(false, 20_000_000, 7));
        assert!(!c.holding());
        // Or until n are pending.
        assert!(!c.kick_now(true, 100, 1));
        assert!(c.kick_now(false, 200, 8));
        // The owner is about to wait with a kick held: it must go first.
        assert!(!c.kick_now(true, 300, 2));
        assert!(c.flush());
        assert!(!c.holding() && !c.flush());
        // n is capped at the ring: a full ring always kicks.
        let mut small = Coalescer::of(WaitMode::parse("coalesce:64,1s").unwrap(), 4).unwrap();
        assert!(small.kick_now(true, 0, 4));
        assert_eq!(Coalescer::of(WaitMode::Notify, 4), None);
    }
}
