//! The guest's waits run by the VMM: every strategy of
//! `kicklab_model::WaitMode` on the guest's side of a pair, carried out by
//! its vCPU thread when the guest exits to `port::WAIT` (it cannot go on)
//! or `port::PAUSE` (the ring holds its pause mark), as KVM's halt polling
//! runs in the host on a guest's `hlt`. The decisions are the same
//! [`Controller`] the simulator and the threads run; this module only
//! carries them out over guest memory:
//!
//! | action | here | the guest then |
//! | --- | --- | --- |
//! | `Spin(d)` | the vCPU thread polls the ring (and the clock) | goes on |
//! | `Nap(t)` | the vCPU thread sleeps until `t`, not woken by the host's kicks | re-checks |
//! | `Block` | returns at once | registers for a kick and halts (its own protocol) |
//! | `BlockUntil(k)` (a pause, user mode) | registers the guest's wait point for a kick at `k` slots free, re-checks, and sleeps on the guest's doorbell | goes on |
//!
//! What the guest pays that a thread does not: an exit to the VMM and back
//! for each wait and each pause (a few microseconds nested). Its spins and
//! naps run on the vCPU's thread, so their CPU counts as the guest's.
//! Guest memory is untrusted: indices are only read, clamped to the ring,
//! and used for decisions; every loop here ends when the run is stopped.
//! What does not live here: the decisions (`kicklab_model::control`), the
//! exits (`super::vm`), the guest's code (`super::guest`).

use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kicklab_model::control::{Action, CheckStats, Controller, Episode, View};
use kicklab_ring::{reached, Clock, WaitPoint};
use vmm_sys_util::eventfd::EventFd;

use super::guest::{ctrl, map, ring};
use super::vm::{GuestMemory, GuestWaits};
use crate::clock::TscClock;
use crate::TestbedError;

/// The longest single sleep of a nap: a stopped run is noticed this soon.
const NAP_SLICE: Duration = Duration::from_millis(5);

/// What the VMM's waits did, read by the host once the run is over.
#[derive(Debug, Default)]
pub(crate) struct DelegatedCounts {
    /// Timed sleeps while the guest was in the measured window.
    pub naps: AtomicU64,
    /// Pauses until the host's kick that slept, in the window.
    pub kicked: AtomicU64,
    /// Timed sleeps and kicked pauses over the whole run, warm-up
    /// included.
    pub all: AtomicU64,
    /// What `adaptive`'s self-check did, left here when the vCPU thread
    /// drops its waits at the run's end.
    pub check: Mutex<Option<CheckStats>>,
}

/// One guest's strategy, carried out by its vCPU thread.
pub(crate) struct DelegatedWaits {
    controller: Controller,
    mem: Arc<GuestMemory>,
    producer: bool,
    len: u32,
    /// The window, in the guest's own messages: [warmup, total).
    window: (u64, u64),
    clock: TscClock,
    last_ps: u64,
    /// The guest's own index, widened to 64 bits (as `kicklab_ring`'s
    /// driven waits widen theirs).
    own: Option<u64>,
    /// A wait that ended in a block: (its start, when it blocked).
    blocked: Option<(u64, u64)>,
    /// When the guest last went back to running: its index, and the
    /// ticks of its own work and of its kicks, then.
    resumed: Option<(u64, u32, u64)>,
    counts: Arc<DelegatedCounts>,
    slack_set: bool,
    /// What the host writes to wake the guest (user mode): a pause until
    /// the host's kick sleeps on it. `None`: no such pauses.
    doorbell: Option<EventFd>,
}

impl Drop for DelegatedWaits {
    fn drop(&mut self) {
        if let Ok(mut check) = self.counts.check.lock() {
            *check = self.controller.check_stats();
        }
    }
}

impl DelegatedWaits {
    /// `controller` for the guest on the producer's side (`producer`) or
    /// the consumer's, over the ring of `len` slots in `mem`; naps are
    /// counted while the guest's index is within `window`. With the
    /// guest's `doorbell` (user mode), its pauses may also sleep until the
    /// host's kick.
    pub(crate) fn new(
        controller: Controller,
        mem: Arc<GuestMemory>,
        producer: bool,
        len: u32,
        window: (u64, u64),
        counts: Arc<DelegatedCounts>,
        doorbell: Option<EventFd>,
    ) -> DelegatedWaits {
        // Never pause before the strategy has a mark.
        mem.write_u32(map::CTRL + ctrl::PAUSE_AT, u32::MAX);
        DelegatedWaits {
            controller,
            mem,
            producer,
            len,
            window,
            clock: TscClock::new(),
            last_ps: 0,
            own: None,
            blocked: None,
            resumed: None,
            counts,
            slack_set: false,
            doorbell,
        }
    }

    fn now(&mut self) -> u64 {
        self.last_ps = self.last_ps.max(self.clock.now_ps());
        self.last_ps
    }

    /// The ring as the guest would see it: its own index and the
    /// messages in the ring (untrusted: clamped to L).
    fn indices(&self) -> (u32, u32) {
        let (tail, head) = (self.mem.read_u32(ring::TAIL), self.mem.read_u32(ring::HEAD));
        let occupied = tail.wrapping_sub(head).min(self.len);
        (if self.producer { tail } else { head }, occupied)
    }

    /// Whether the guest can go on: a free slot, or a message.
    fn can_go_on(&self) -> bool {
        let (_, occupied) = self.indices();
        if self.producer {
            occupied < self.len
        } else {
            occupied > 0
        }
    }

    fn view(&mut self, now: u64) -> View {
        let (own32, occupied) = self.indices();
        let own = match self.own {
            None => (1 << 32) + u64::from(own32),
            Some(o) => {
                #[allow(clippy::cast_possible_truncation)] // the low half, on purpose
                let low = o as u32;
                o + u64::from(own32.wrapping_sub(low))
            }
        };
        self.own = Some(own);
        let occupied = u64::from(occupied);
        let (published, consumed) = if self.producer {
            (own, own - occupied)
        } else {
            (own + occupied, own)
        };
        View {
            now,
            len: u64::from(self.len),
            published,
            consumed,
        }
    }

    /// The guest's count of its own work's TSC ticks (wrapping).
    fn work_ticks(&self) -> u32 {
        self.mem.read_u32(map::CTRL + ctrl::WORK_TICKS)
    }

    /// The guest's count of its kicks' TSC ticks (user mode; 0 otherwise).
    fn kick_ticks(&self) -> u64 {
        self.mem.load_u64(map::CTRL + ctrl::KICK_TICKS)
    }

    /// Messages the guest has handled so far.
    fn handled(&self) -> u64 {
        self.own.map_or(0, |o| o - (1 << 32))
    }

    /// Polls until the guest can go on (true) or `deadline` passes or the
    /// run is stopped (false); `until_only`: just the deadline.
    fn spin(&mut self, deadline: Option<u64>, until_only: bool, stop: &AtomicBool) -> bool {
        let mut i = 0u32;
        loop {
            if !until_only && self.can_go_on() {
                return true;
            }
            std::hint::spin_loop();
            i = i.wrapping_add(1);
            if i.is_multiple_of(8) && deadline.is_some_and(|d| self.now() >= d) {
                return false;
            }
            if i.is_multiple_of(1024) && stop.load(Ordering::Relaxed) {
                return false;
            }
            if until_only && deadline.is_none() {
                return false;
            }
        }
    }

    /// A timed sleep until `until` [ps], not woken by the host's kicks.
    fn nap(&mut self, until: u64, stop: &AtomicBool) {
        if !self.slack_set {
            // Timed sleeps must not be stretched by the timer slack.
            let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
            self.slack_set = true;
        }
        let handled = self.handled();
        if handled >= self.window.0 && handled < self.window.1 {
            self.counts.naps.fetch_add(1, Ordering::Relaxed);
        }
        self.counts.all.fetch_add(1, Ordering::Relaxed);
        loop {
            let now = self.now();
            if now >= until || stop.load(Ordering::Relaxed) {
                // What the nap's wake-up really took (the strategy learns
                // what its timed sleeps cost).
                self.controller.woke(until, now);
                return;
            }
            std::thread::sleep(Duration::from_nanos((until - now) / 1000).min(NAP_SLICE));
        }
    }

    /// The guest's wait point (the producer's, or the consumer's) in its
    /// ring.
    fn wait_point(&self) -> &WaitPoint {
        let at = if self.producer {
            ring::PW_NEED
        } else {
            ring::CW_NEED
        };
        const _: () =
            assert!(ring::PW_WAKE == ring::PW_NEED + 4 && ring::CW_WAKE == ring::CW_NEED + 4);
        // SAFETY: the wait point lies inside the guest mapping (the map's
        // compile-time checks), is 4-byte aligned, and is two `AtomicU32`s
        // in `kicklab_ring`'s layout (`need_kick`, then `wake_at`, as the
        // assertion above pins); the borrow of `self` keeps `mem`, and so
        // the mapping, alive. The guest writes it with aligned 32-bit
        // stores only while it runs, and it is stopped in this exit.
        unsafe { &*self.mem.as_ptr().add(at as usize).cast::<WaitPoint>() }
    }

    /// A pause until the host's kick (`BlockUntil(k)`), as the ring's own
    /// `block_once` takes it for a thread: register the guest's wait point
    /// for a kick once `k` slots are free, fence, re-check, and sleep on the
    /// doorbell once; then withdraw. The host's consumer kicks by the
    /// ring's protocol, as it would kick the guest's own halt. Returns
    /// whether it slept.
    fn pause_until_kick(&mut self, k: u32, stop: &AtomicBool) -> Result<bool, TestbedError> {
        let Some(doorbell) = &self.doorbell else {
            return Ok(false);
        };
        // The guest published everything before it exited to its mark.
        let tail = self.mem.read_u32(ring::TAIL);
        let wake_at = tail
            .wrapping_sub(self.len)
            .wrapping_add(k.clamp(1, self.len));
        self.wait_point().register(wake_at);
        // SeqCst fence: the registration before the re-read of `head`
        // (pairs with the fence in the host's `peer_wants_kick`).
        fence(Ordering::SeqCst);
        if reached(self.mem.read_u32(ring::HEAD), wake_at) {
            self.wait_point().cancel();
            return Ok(false);
        }
        let handled = self.handled();
        if handled >= self.window.0 && handled < self.window.1 {
            self.counts.kicked.fetch_add(1, Ordering::Relaxed);
        }
        self.counts.all.fetch_add(1, Ordering::Relaxed);
        super::vm::halt(doorbell, Duration::ZERO, None, stop)?;
        self.wait_point().cancel();
        Ok(true)
    }

    fn done(&mut self, start: u64, end: u64, blocked: Option<u64>) {
        let v = self.view(end);
        self.controller.done(
            &v,
            Episode {
                start,
                end,
                blocked,
            },
        );
    }

    /// A block that never halted (the ring changed between the decision
    /// and the guest's re-check) ended when the guest went back.
    fn end_stale_block(&mut self) {
        if let Some((start, at)) = self.blocked.take() {
            self.done(start, at, None);
        }
    }

    /// Back to the guest: its pause mark for now, and when it resumed.
    #[allow(clippy::cast_possible_truncation)]
    fn resume(&mut self) {
        let now = self.now();
        let v = self.view(now);
        let mark = self
            .controller
            .pause_mark(&v)
            .map_or(u32::MAX, |m| m.min(u64::from(u32::MAX)) as u32);
        self.mem.write_u32(map::CTRL + ctrl::PAUSE_AT, mark);
        self.resumed = Some((self.handled(), self.work_ticks(), self.kick_ticks()));
    }
}

impl GuestWaits for DelegatedWaits {
    fn wait(&mut self, stop: &AtomicBool) -> Result<(), TestbedError> {
        self.end_stale_block();
        let start = self.now();
        if self.can_go_on() {
            // The exit took longer than the peer's next message: no wait,
            // but what the ring shows now still teaches the estimators (a
            // strategy that learns only from its waits would never learn
            // where every wait ends this way).
            let v = self.view(start);
            self.controller.observe(&v);
            self.resume();
            return Ok(());
        }
        let mut first = true;
        while !self.can_go_on() && !stop.load(Ordering::Relaxed) {
            let now = self.now();
            let v = self.view(now);
            match self.controller.wait(&v, start, first) {
                Action::Spin(deadline) => {
                    if self.spin(deadline, false, stop) {
                        let end = self.now();
                        self.done(start, end, None);
                        break;
                    }
                }
                // A guest cannot sleep on its doorbell with a timeout (its
                // controller asks for none): a timed block would be a nap to
                // its deadline, with no kick.
                Action::Nap(until) | Action::TimedBlock(_, until) => {
                    self.nap(until, stop);
                    if self.can_go_on() {
                        let end = self.now();
                        self.done(start, end, None);
                        break;
                    }
                }
                // A wait takes the ring's own threshold.
                Action::Block | Action::BlockUntil(_) => {
                    let at = self.now();
                    self.blocked = Some((start, at));
                    break;
                }
            }
            first = false;
        }
        self.resume();
        Ok(())
    }

    fn pause(&mut self, stop: &AtomicBool) -> Result<(), TestbedError> {
        self.end_stale_block();
        let now = self.now();
        let v = self.view(now);
        // The guest's own cost per message since it last resumed: its work
        // and its kicks, as it times them by its TSC. Not the time between
        // the exits, which also holds the exits and the re-entries: a guest
        // that woke from a nap with a full ring timed itself at 2.3 us a
        // message for 0.5 us of work, judged itself the slower party,
        // stopped pausing and so never timed itself again. (Untrusted
        // counters: a wrong figure only misleads its own strategy.)
        let handled = self.handled();
        let work = self.resumed.and_then(|(n, w0, k0)| {
            let ticks = u64::from(self.work_ticks().wrapping_sub(w0))
                + self.kick_ticks().wrapping_sub(k0).min(u64::from(u32::MAX));
            (handled > n).then(|| self.clock.ps(ticks) / (handled - n))
        });
        // It exited because it reached its mark; the consumer may have
        // drained some of the ring during the exit.
        let action = self
            .controller
            .at_pause_mark(&v, work, self.doorbell.is_some());
        match action {
            Some(Action::Nap(until)) => self.nap(until, stop),
            Some(Action::Spin(Some(until))) => {
                self.spin(Some(until), true, stop);
            }
            Some(Action::BlockUntil(k)) => {
                if self.pause_until_kick(k, stop)? {
                    // What the wake-up left of the margin, before the guest
                    // publishes again.
                    let now = self.now();
                    let v = self.view(now);
                    self.controller.resumed(&v);
                }
            }
            Some(Action::Spin(None) | Action::Block | Action::TimedBlock(..)) | None => {}
        }
        self.resume();
        Ok(())
    }

    fn woke(&mut self) {
        if let Some((start, at)) = self.blocked {
            if self.can_go_on() {
                self.blocked = None;
                let end = self.now();
                self.done(start, end, Some(end - at));
            }
        }
        self.resume();
    }
}
