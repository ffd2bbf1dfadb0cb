//! The one host party loop both backends run: a producer or a consumer
//! over a `kicklab-ring` endpoint, with busy work drawn from the sampler,
//! sequence checks, window marks, a progress counter and (where both ends
//! are host threads) each message's latency; and the pieces of a watchdog
//! ([`join_within`], [`Stoppable`]; the stall judgement is `watchdog`).
//! What does not live here: spawning the parties (each backend does), the
//! guest's half (`backend::kvm::guest`), the strategies' decisions
//! (`kicklab_model::Controller`, carried out by `kicklab_ring::Driven`).
//!
//! ```text
//!   producer: [flush held kick] [wait for space] -> busy W -> write seq, stamp
//!             -> (batch full / timer / end) publish, kick / hold / send held -> [pause]
//!   consumer: [flush held kick] wait for messages -> claim, check seq, read stamp
//!             -> busy W -> release, latency -> kick / hold / send held -> [pause]
//! ```
//!
//! A party waits by its [`WaitMode`]: `notify`, `poll` and `spin:<B>` by
//! the ring's fixed [`WaitStrategy`] (exactly as before controllers
//! existed); every other mode by a [`Controller`] on the TSC
//! ([`TscClock`]): it decides each step of a wait, learns when a wait ends,
//! and (`adaptive`) pauses between messages. `coalesce:<n>,<t>` holds the
//! party's kicks ([`Coalescer`]) and always sends a held one before the
//! party waits or finishes, else the pair could deadlock.

use std::num::NonZeroU64;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use kicklab_model::control::CheckStats;
use kicklab_model::{Latency, Params, Party, WaitMode};
use kicklab_ring::{
    Coalescer, Consumer, Controller, Driven, Notifier, Producer, WaitStats, WaitStrategy,
};
use kicklab_sim::{Flush, Sampler};

use crate::clock::{rdtsc, thread_cpu_ns, Tsc, TscClock};
use crate::pair::basic_strategy;
use crate::TestbedError;

/// A kick or a sleep of a party, by this host's TSC ([`HostParty::record`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Recorded {
    /// A kick (else a wait that blocked).
    pub kick: bool,
    /// Its start and end [TSC ticks].
    pub t0: u64,
    pub t1: u64,
}

/// What one host party saw at the start and the end of the window.
#[derive(Debug, Default, Clone)]
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
    pub naps0: u64,
    pub naps1: u64,
    /// Wake-ups that found nothing to do (whole run).
    pub spurious: u64,
    /// Consumer: messages never seen.
    pub lost: u64,
    /// Consumer: messages seen twice or out of order.
    pub bad: u64,
    /// Consumer: the window's message latency, where measured.
    pub latency: Option<Latency>,
    /// The first kicks and sleeps of the window ([`HostParty::record`]).
    pub recorded: Vec<Recorded>,
    /// What `adaptive`'s self-check did (whole run), where it ran.
    pub check: Option<CheckStats>,
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
    /// How it waits (and, for `coalesce`, kicks).
    pub mode: WaitMode,
    /// The pair's parameters: the means of N and S are what a planning
    /// strategy (`adaptive`) estimates with.
    pub params: Params,
    /// Its per-message work.
    pub work: Sampler,
    /// Producer: publish every `batch` messages (or when the ring is full).
    pub batch: u64,
    /// Producer: when a partial batch goes out as well.
    pub flush: Flush,
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
    /// Where this party stamps the start of each kick, and where it
    /// reads the peer's: a wake-up is timed from the peer's last kick.
    /// `None`: wake-ups are not timed.
    pub stamps: Option<&'a dyn KickStamps>,
    /// Write times (TSC), one per slot, indexed by sequence number
    /// modulo L: the producer stores each message's as it writes it
    /// (the publish's Release store of `tail` makes it visible), the
    /// consumer loads it after claiming. `None`: latency not measured.
    pub publish_times: Option<&'a [AtomicU64]>,
    /// Consumer: what to subtract from a stamp to get the host's TSC (a
    /// guest's stamps are its own TSC: the guest-minus-host offset in
    /// ticks; 0 for a host producer's).
    pub stamp_offset: i64,
    /// Producer: the consumer's completion stamps, for latency where the
    /// consumer is a guest (`None`: not measured this way).
    pub done: Option<DoneStamps<'a>>,
    /// Record the first this many kicks and sleeps of the window (0: none).
    pub record: usize,
}

/// A guest consumer's completion stamps, read back by the host producer:
/// the guest stores its TSC in slot i's stamp when it is done with the
/// message there (after its work, before it frees the slot), so the
/// producer, which knows when it wrote each message (`publish_times`),
/// reads a message's latency when it is about to write that slot again
/// (the slot is free: the stamp is there), and the last lap's once the
/// guest has finished ([`DoneStamps::last_lap`]).
pub(crate) struct DoneStamps<'a> {
    /// The guest's stamps, one per slot (its TSC).
    pub times: &'a [AtomicU64],
    /// The guest-minus-host offset of its TSC, in ticks.
    pub offset: i64,
    /// The window's latencies [ns].
    pub hist: &'a std::cell::RefCell<Histogram<u64>>,
}

impl DoneStamps<'_> {
    /// Records message `seq`'s latency: from `published` (host TSC) to
    /// the guest's stamp in its slot. The stamp is untrusted: one before
    /// the write or after now is not counted.
    pub(crate) fn record(&self, seq: u64, published: u64, tsc: &Tsc) {
        #[allow(clippy::cast_possible_truncation)] // < len, a usize
        let i = (seq % self.times.len() as u64) as usize;
        let done = self.times[i]
            .load(Ordering::Relaxed)
            .wrapping_add_signed(self.offset.wrapping_neg());
        if done < published || done > rdtsc() {
            return;
        }
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let ns = tsc.ns(done - published).round() as u64;
        let mut h = self.hist.borrow_mut();
        // `record` grows the histogram; `saturating_record` alone would
        // clamp to its current range.
        if h.record(ns).is_err() {
            h.saturating_record(ns);
        }
    }

    /// After the guest has finished: the latencies of the messages the
    /// producer did not write over (the last lap of `total`, from
    /// `warmup`), then the window's figures.
    pub(crate) fn last_lap(
        &self,
        publish_times: &[AtomicU64],
        warmup: u64,
        total: u64,
    ) -> Option<Latency> {
        let tsc = Tsc::get();
        let len = self.times.len() as u64;
        for seq in total.saturating_sub(len).max(warmup)..total {
            #[allow(clippy::cast_possible_truncation)] // < len, a usize
            let published = publish_times[(seq % len) as usize].load(Ordering::Relaxed);
            self.record(seq, published, &tsc);
        }
        let h = self.hist.borrow();
        (!h.is_empty()).then(|| latency_of(&h))
    }
}

/// The kick stamps two parties share, so that each times its wake-ups from
/// the start of the kick that woke it.
pub trait KickStamps: Sync {
    /// This party starts a kick at `tsc` (this host's TSC).
    fn mine(&self, tsc: u64);
    /// The start of the peer's last kick in this host's TSC; 0 if none.
    fn peer(&self) -> u64;
}

/// Two host threads' stamps: this party's and the peer's.
pub struct ThreadStamps<'a> {
    /// Where this party stamps.
    pub mine: &'a AtomicU64,
    /// Where the peer stamps.
    pub peer: &'a AtomicU64,
}

impl KickStamps for ThreadStamps<'_> {
    fn mine(&self, tsc: u64) {
        // Relaxed: the notify's Release publishes it to the woken peer.
        self.mine.store(tsc, Ordering::Relaxed);
    }
    fn peer(&self) -> u64 {
        self.peer.load(Ordering::Relaxed)
    }
}

/// Kicks and timed wake-ups so far: (kicks, kick ticks, wakes, wake ticks).
#[derive(Debug, Default, Clone, Copy)]
struct Timing {
    kicks: u64,
    kick_ticks: u64,
    wakes: u64,
    wake_ticks: u64,
}

/// How a party waits.
enum Waits {
    /// The ring's fixed strategies (`notify`, `poll`, `spin:<B>`).
    Fixed(WaitStrategy),
    /// A controller, step by step.
    Driven {
        by: Box<Driven<Controller, TscClock>>,
        /// Whether it may pause between messages (only `adaptive` does:
        /// the others skip the clock reads and the peer-index read a
        /// pause's decision needs).
        pauses: bool,
        /// Messages begun, for timing one in [`WORK_SAMPLE`].
        begun: u32,
    },
}

/// An `adaptive` party times the work of one message in this many (its
/// controller keeps a moving average; the two clock reads of every
/// message cost the party that sets the pace about 20 ns a message here).
const WORK_SAMPLE: u32 = 8;

/// How a message's work is timed for the party's controller.
#[derive(Debug, Clone, Copy)]
enum WorkTimer {
    /// The party does not pause between messages.
    Off,
    /// It may pause; this message's work is not timed.
    Untimed,
    /// It may pause; this message's work began at this clock reading.
    From(u64),
}

impl Waits {
    /// What `adaptive`'s self-check did so far, where it runs.
    fn check_stats(&self) -> Option<CheckStats> {
        match self {
            Waits::Fixed(_) => None,
            Waits::Driven { by, .. } => by.policy.check_stats(),
        }
    }

    fn new(mode: WaitMode, party: Party, params: &Params) -> Waits {
        if let Some(s) = basic_strategy(mode) {
            return Waits::Fixed(s);
        }
        // Timed sleeps must not be stretched by the kernel's timer slack
        // (50 us for normal threads): 1 ns for this party's thread.
        let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(1));
        Waits::Driven {
            by: Box::new(Driven::new(
                Controller::new(mode, party, params, None),
                TscClock::new(),
            )),
            pauses: matches!(mode, WaitMode::Adaptive { .. }),
            begun: 0,
        }
    }

    /// The start of a message's work, as this party's controller needs it.
    fn work_start(&mut self) -> WorkTimer {
        match self {
            Waits::Driven {
                by,
                pauses: true,
                begun,
            } => {
                *begun = begun.wrapping_add(1);
                if begun.is_multiple_of(WORK_SAMPLE) {
                    WorkTimer::From(by.now())
                } else {
                    WorkTimer::Untimed
                }
            }
            _ => WorkTimer::Off,
        }
    }
}

/// What a party's loop keeps: its waits, its held kick, its counters, and
/// its record of kicks and sleeps once the window starts.
struct Loop {
    waits: Waits,
    coalesce: Option<Coalescer>,
    stats: WaitStats,
    timing: Timing,
    recorded: Vec<Recorded>,
    /// How many more to record (0 until the window starts, and after).
    to_record: usize,
}

impl Loop {
    /// The TSC while the record is open, else 0 (no clock read on the
    /// way into a wait of a run that records nothing).
    fn clock_if_recording(&self) -> u64 {
        if self.to_record > 0 {
            rdtsc()
        } else {
            0
        }
    }

    /// Notes a kick or a sleep while the record is open.
    fn note(&mut self, kick: bool, t0: u64, t1: u64) {
        if self.to_record > 0 {
            self.to_record -= 1;
            self.recorded.push(Recorded { kick, t0, t1 });
        }
    }
}

impl Marks {
    /// What this party did over the window.
    pub(crate) fn side(&self) -> crate::pair::PartyCounts {
        crate::pair::PartyCounts {
            cpu_ns: self.cpu1 - self.cpu0,
            kicks: self.kicks1 - self.kicks0,
            sleeps: self.sleeps1 - self.sleeps0,
            // The loop's counts start at zero with its first message.
            whole_run: [self.kicks1, self.sleeps1],
            naps: self.naps1 - self.naps0,
            spurious: self.spurious,
            #[allow(clippy::cast_precision_loss)]
            kick_ns: Some((self.kick_ticks1 - self.kick_ticks0) as f64 / Tsc::get().ticks_per_ns),
            #[allow(clippy::cast_precision_loss)]
            wake: (self.wakes1 > self.wakes0).then(|| {
                (self.wake_ticks1 - self.wake_ticks0) as f64
                    / Tsc::get().ticks_per_ns
                    / (self.wakes1 - self.wakes0) as f64
            }),
            check: self.check,
        }
    }
}

impl HostParty<'_> {
    /// A notify call, timed (and stamped for the peer's wake-up).
    fn kick(&self, kick: &dyn Notifier, l: &mut Loop) -> Result<(), TestbedError> {
        let t0 = rdtsc();
        if let Some(s) = self.stamps {
            s.mine(t0);
        }
        kick.notify()?;
        let t1 = rdtsc();
        l.timing.kick_ticks += t1.wrapping_sub(t0);
        l.timing.kicks += 1;
        l.note(true, t0, t1);
        Ok(())
    }

    /// After a wait: if it blocked, the time from the peer's last kick.
    fn woke(&self, blocked: bool, t: &mut Timing) {
        if let (true, Some(s)) = (blocked, self.stamps) {
            let (now, at) = (rdtsc(), s.peer());
            if at != 0 && now > at {
                t.wakes += 1;
                t.wake_ticks += now - at;
            }
        }
    }

    fn start(&self, party: Party, len: u32) -> Loop {
        Loop {
            waits: Waits::new(self.mode, party, &self.params),
            coalesce: Coalescer::of(self.mode, len),
            stats: WaitStats::default(),
            timing: Timing::default(),
            recorded: Vec::with_capacity(self.record),
            to_record: 0,
        }
    }

    /// After a publish or free: kicks if the peer asked and coalescing
    /// (if any) says it is due; `pending` (the items the peer has now) is
    /// asked only while coalescing holds a kick.
    fn kick_or_hold(
        &self,
        l: &mut Loop,
        wanted: bool,
        pending: impl FnOnce() -> Result<u64, kicklab_ring::RingError>,
    ) -> Result<(), TestbedError> {
        let go = match (&mut l.coalesce, &mut l.waits) {
            (None, _) => wanted,
            (Some(c), Waits::Driven { by, .. }) if wanted || c.holding() => {
                let now = by.now();
                c.kick_now(wanted, now, pending()?)
            }
            (Some(c), _) if wanted || c.holding() => c.kick_now(wanted, 0, pending()?),
            (Some(_), _) => false,
        };
        if go {
            self.kick(self.kick_peer, l)?;
        }
        Ok(())
    }

    /// Sends a held kick: before this party waits or finishes.
    fn flush_held(&self, l: &mut Loop) -> Result<(), TestbedError> {
        if l.coalesce.as_mut().is_some_and(Coalescer::flush) {
            self.kick(self.kick_peer, l)?;
        }
        Ok(())
    }

    /// After a message: the pause the controller asks for, if it pauses
    /// (`adaptive`; never with a kick held: coalescing waits as `notify`).
    fn pause<E: PauseBy>(
        &self,
        l: &mut Loop,
        end: &mut E,
        work_start: WorkTimer,
    ) -> Result<(), TestbedError> {
        if let WorkTimer::Off = work_start {
            return Ok(());
        }
        self.flush_held(l)?;
        if let Waits::Driven { by, .. } = &mut l.waits {
            let work = match work_start {
                WorkTimer::From(t0) => Some(by.now().saturating_sub(t0)),
                _ => None,
            };
            end.pause_by(work, by, self.wait_on, &mut l.stats)?;
        }
        Ok(())
    }
}

/// A pause after work on either endpoint.
trait PauseBy {
    fn pause_by(
        &mut self,
        work_ps: Option<u64>,
        by: &mut Driven<Controller, TscClock>,
        notifier: &dyn Notifier,
        stats: &mut WaitStats,
    ) -> Result<bool, kicklab_ring::WaitError>;
}

impl PauseBy for Producer {
    fn pause_by(
        &mut self,
        work_ps: Option<u64>,
        by: &mut Driven<Controller, TscClock>,
        notifier: &dyn Notifier,
        stats: &mut WaitStats,
    ) -> Result<bool, kicklab_ring::WaitError> {
        Producer::pause_by(self, work_ps, by, notifier, stats)
    }
}

impl PauseBy for Consumer {
    fn pause_by(
        &mut self,
        work_ps: Option<u64>,
        by: &mut Driven<Controller, TscClock>,
        notifier: &dyn Notifier,
        stats: &mut WaitStats,
    ) -> Result<bool, kicklab_ring::WaitError> {
        Consumer::pause_by(self, work_ps, by, notifier, stats)
    }
}

impl HostParty<'_> {
    fn mark(&self, m: &mut Marks, k: Timing, st: &WaitStats, end: bool) {
        let (t, c) = (rdtsc(), thread_cpu_ns());
        let x = self.extra_clock.map_or(0, |f| f());
        if end {
            (m.t1, m.cpu1, m.extra1, m.kicks1, m.sleeps1, m.spurious) =
                (t, c, x, k.kicks, st.sleeps, st.spurious);
            (m.kick_ticks1, m.wakes1, m.wake_ticks1, m.naps1) =
                (k.kick_ticks, k.wakes, k.wake_ticks, st.naps);
        } else {
            (m.t0, m.cpu0, m.extra0, m.kicks0, m.sleeps0) = (t, c, x, k.kicks, st.sleeps);
            (m.kick_ticks0, m.wakes0, m.wake_ticks0, m.naps0) =
                (k.kick_ticks, k.wakes, k.wake_ticks, st.naps);
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

    /// Publishes what is written (`count` messages); kicks, holds or
    /// sends a held kick.
    fn publish(
        &self,
        producer: &mut Producer,
        l: &mut Loop,
        count: u64,
    ) -> Result<(), TestbedError> {
        let pubd = producer.publish();
        let wanted = producer.peer_wants_kick(pubd);
        let len = u64::from(producer.len());
        self.kick_or_hold(l, wanted, || Ok(len - u64::from(producer.free_now()?)))?;
        self.progress.fetch_add(count, Ordering::Relaxed);
        Ok(())
    }

    /// Produces sequence numbers 0..total.
    ///
    /// Send combining: written messages are held and published together
    /// when `batch` are held, when the oldest has been held for the
    /// timer (`Flush::Timer`, checked after each write), when the peer's
    /// kick has woken this party (`Flush::OnInterrupt`), before it waits
    /// (a full ring must not hold unpublished messages, or C could never
    /// free a slot) and at the end.
    pub(crate) fn produce(mut self, producer: &mut Producer) -> Result<Marks, TestbedError> {
        let tsc = Tsc::get();
        let mut l = self.start(Party::P, producer.len());
        let mut m = Marks::default();
        let batch = self.batch.max(1);
        let timer = match self.flush {
            Flush::Timer { ns } => Some(tsc.ticks(ns)),
            Flush::Full | Flush::OnInterrupt => None,
        };
        let on_interrupt = self.flush == Flush::OnInterrupt;
        let (mut pending, mut first_at) = (0u64, 0u64);
        for seq in 0..self.total {
            if seq == self.warmup {
                self.mark(&mut m, l.timing, &l.stats, false);
                l.to_record = self.record;
            }
            if pending > 0 && producer.free()? == 0 {
                self.publish(producer, &mut l, pending)?;
                pending = 0;
            }
            if producer.free()? == 0 {
                self.flush_held(&mut l)?;
                let (blocks, waited) = (l.stats.blocks(), l.clock_if_recording());
                match &mut l.waits {
                    Waits::Fixed(s) => {
                        producer.wait_for_space(self.k, *s, self.wait_on, &mut l.stats)?;
                    }
                    Waits::Driven { by, .. } => {
                        producer.wait_for_space_by(self.k, by, self.wait_on, &mut l.stats)?;
                    }
                }
                let kicked = l.stats.blocks() > blocks;
                if kicked && l.to_record > 0 {
                    l.note(false, waited, rdtsc());
                }
                self.woke(kicked, &mut l.timing);
                // Flush on interrupt: the peer's kick woke us. (In a
                // one-way pair nothing is held here: see above.)
                if on_interrupt && kicked && pending > 0 {
                    self.publish(producer, &mut l, pending)?;
                    pending = 0;
                }
            }
            let work_start = l.waits.work_start();
            self.busy(&tsc)?;
            if let (Some(done), Some(times)) = (&self.done, self.publish_times) {
                // The slot is free: the message written there a lap ago
                // is done, and its stamp is there.
                let len = times.len() as u64;
                if seq >= len + self.warmup {
                    #[allow(clippy::cast_possible_truncation)] // < len, a usize
                    let published = times[(seq % len) as usize].load(Ordering::Relaxed);
                    done.record(seq - len, published, &tsc);
                }
            }
            producer.write(seq)?;
            if let Some(times) = self.publish_times {
                #[allow(clippy::cast_possible_truncation)] // < len, a usize
                let i = (seq % times.len() as u64) as usize;
                // Relaxed: the publish's Release store of `tail` makes it
                // visible to the consumer that claims the message.
                times[i].store(rdtsc(), Ordering::Relaxed);
            }
            pending += 1;
            let expired = match timer {
                Some(ticks) if pending > 1 => rdtsc().wrapping_sub(first_at) >= ticks,
                Some(_) => {
                    first_at = rdtsc();
                    false
                }
                None => false,
            };
            if pending == batch || expired || seq + 1 == self.total {
                self.publish(producer, &mut l, pending)?;
                pending = 0;
                self.pause(&mut l, producer, work_start)?;
            }
            if self.stop.load(Ordering::Relaxed) {
                return Err(stopped());
            }
        }
        self.flush_held(&mut l)?;
        self.mark(&mut m, l.timing, &l.stats, true);
        m.recorded = std::mem::take(&mut l.recorded);
        m.check = l.waits.check_stats();
        // End of stream: fewer than k_P messages may wait for a kick.
        self.kick_peer.notify()?;
        Ok(m)
    }

    /// Consumes `total` messages, checking their sequence numbers.
    pub(crate) fn consume(mut self, consumer: &mut Consumer) -> Result<Marks, TestbedError> {
        let tsc = Tsc::get();
        let mut l = self.start(Party::C, consumer.len());
        let mut m = Marks::default();
        let mut hist = self
            .publish_times
            .map(|_| Histogram::<u64>::new(3).expect("3 significant digits"));
        let mut next = 0u64;
        let mut done = 0u64;
        while done < self.total {
            if done == self.warmup {
                self.mark(&mut m, l.timing, &l.stats, false);
                l.to_record = self.record;
            }
            if consumer.available()? == 0 {
                self.flush_held(&mut l)?;
                let (blocks, waited) = (l.stats.blocks(), l.clock_if_recording());
                match &mut l.waits {
                    Waits::Fixed(s) => {
                        consumer.wait_for_messages(self.k, *s, self.wait_on, &mut l.stats)?;
                    }
                    Waits::Driven { by, .. } => {
                        consumer.wait_for_messages_by(self.k, by, self.wait_on, &mut l.stats)?;
                    }
                }
                let blocked = l.stats.blocks() > blocks;
                if blocked && l.to_record > 0 {
                    l.note(false, waited, rdtsc());
                }
                self.woke(blocked, &mut l.timing);
            }
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
            // The message's write time: the Acquire load of `tail` that
            // let this claim see the message made its stamp visible.
            let published = self.publish_times.map(|times| {
                #[allow(clippy::cast_possible_truncation)] // < len, a usize
                let i = (seq % times.len() as u64) as usize;
                times[i]
                    .load(Ordering::Relaxed)
                    .wrapping_add_signed(self.stamp_offset.wrapping_neg())
            });
            let work_start = l.waits.work_start();
            self.busy(&tsc)?;
            let rel = consumer.release();
            if let (Some(h), Some(at)) = (hist.as_mut(), published) {
                if done >= self.warmup {
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    let ns = tsc.ns(rdtsc().saturating_sub(at)).round() as u64;
                    // `record` grows the histogram; `saturating_record`
                    // alone would clamp to its current range.
                    if h.record(ns).is_err() {
                        h.saturating_record(ns);
                    }
                }
            }
            done += 1;
            self.progress.store(done, Ordering::Relaxed);
            let wanted = consumer.peer_wants_kick(rel);
            let len = u64::from(consumer.len());
            self.kick_or_hold(&mut l, wanted, || {
                Ok(len - u64::from(consumer.available_now()?))
            })?;
            self.pause(&mut l, consumer, work_start)?;
        }
        self.flush_held(&mut l)?;
        self.mark(&mut m, l.timing, &l.stats, true);
        m.lost = m.lost.saturating_add(self.total.saturating_sub(next));
        m.latency = hist.filter(|h| !h.is_empty()).map(|h| latency_of(&h));
        m.recorded = std::mem::take(&mut l.recorded);
        m.check = l.waits.check_stats();
        Ok(m)
    }
}

/// p50, p99, max and mean of a histogram of latencies [ns].
#[allow(clippy::cast_precision_loss)]
fn latency_of(h: &Histogram<u64>) -> Latency {
    Latency {
        p50: h.value_at_quantile(0.5) as f64,
        p99: h.value_at_quantile(0.99) as f64,
        max: h.max() as f64,
        mean: h.mean(),
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

    fn wait_timeout(&self, timeout: std::time::Duration) -> std::io::Result<bool> {
        let kicked = self.inner.wait_timeout(timeout)?;
        if self.stop.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("run stopped"));
        }
        Ok(kicked)
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
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
