//! kicklab's own controller, `adaptive`: the planner that sizes a party's
//! sleeps from the queue, the latency bound and what its naps and kicked
//! pauses have shown (`docs/control.md`). What does not live here: the
//! anchors' strategies and the dispatch ([`super::Controller`]), and the
//! self-check that weighs this planner against a fallback (`check.rs`).

use super::{Action, Episode, View};
use crate::params::{Params, Party};

/// kicklab's controller (`docs/control.md`).
///
/// The fast party sleeps for as long as the queue lets it, in timed sleeps
/// that need no kick: a consumer that keeps up sleeps while messages
/// accumulate (as long as the latency bound allows), a producer that runs
/// ahead stops publishing once the queue holds a latency bound's worth and
/// sleeps while the consumer drains it down to a safety margin. The peer's
/// pace comes from the ring's indices; its own from its clock.
#[derive(Debug, Clone)]
pub(super) struct Adaptive {
    party: Party,
    /// Latency budget [ps]: 80% of the bound, for the p99 to keep under it.
    budget: f64,
    /// Own start-up cost S [ps] (from the parameters' means).
    s_own: f64,
    /// What blocking costs the pair [ps]: own S plus the peer's kick N.
    block_cost: f64,
    /// The peer's kick N [ps].
    n_peer: f64,
    /// Own work per message [ps], moving average.
    w_own: Option<f64>,
    /// The peer's pace [ps per message].
    peer: PeerPace,
    /// Last observation: (time, peer's count, occupancy).
    last: Option<(u64, u64, u64)>,
    /// What its naps' wake-ups took [ps]: the median of the last
    /// [`LATE_KEEP`] naps' (from the planned end to running again), so
    /// that one nap the machine stalled for milliseconds does not stop a
    /// party napping for good (it would never nap again to unlearn it).
    late: Option<f64>,
    /// The last [`LATE_KEEP`] of them, oldest overwritten first.
    late_recent: [f64; LATE_KEEP],
    /// The slot of `late_recent` the next nap's wake-up goes to.
    late_next: usize,
    /// Naps timed so far.
    late_n: u32,
    /// The last [`TAIL_KEEP`] naps' wake-ups [ps], oldest overwritten
    /// first: their spread sizes a consumer's naps (`tail.rs`).
    tail_recent: [f64; TAIL_KEEP],
    /// The longest nap [ps] those wake-ups allow under the latency bound
    /// ([`OVER_SHARE`]), worked out at the first wait after a nap was
    /// timed (`None` until then); 0 where the stalls among them allow
    /// none.
    tail_nap: Option<f64>,
    /// Messages the peer handles while a producer wakes from a kicked
    /// pause and publishes once (a consumer: the producer publishes while
    /// it wakes from a kick), moving average.
    kick_wake: Option<f64>,
    /// The kick threshold of a consumer's [`Action::TimedBlock`] in this
    /// wait, until its end shows whether the kick ended it and how many
    /// messages its wake-up let gather.
    blocked_at: Option<u32>,
    /// The margin [messages] of a kicked pause just taken, until the next
    /// publish measures how much of it the wake-up used.
    paused_margin: Option<f64>,
    /// Waits in which a consumer declined to nap for its naps' wake-up
    /// alone, since its last nap: every [`PROBE_EVERY`]th is a short nap,
    /// to time naps again (the machine's wake-ups change, and a party that
    /// never naps would never see it).
    declined: u32,
    /// Whether its waits may be [`Action::TimedBlock`]s.
    pub(super) timed_blocks: bool,
    /// The peer's kick threshold (k_P for a producer): a consumer asleep
    /// for k_P messages is surely awake, or kicked, once that many wait.
    k_peer: u64,
    /// Messages finished since the party last saw the peer's index
    /// ([`Adaptive::needs_fresh`]).
    unseen: u32,
    /// Pauses (a producer's) or waits (a consumer's) taken by a kick for
    /// naps' sake since its last nap: every [`KICK_PROBE_EVERY`]th is a
    /// nap instead, timed like any.
    kicked: u32,
    /// Whether a consumer is in kicked waits: it goes into them once its
    /// naps wake more than [`DEAR`] times later than a kicked wait does,
    /// and back to naps once they wake no later (hysteresis: wake-ups
    /// near the line do not flip it at every wait).
    kick_waits: bool,
}

/// Windows of at least this many of the peer's messages make one sample
/// of its pace.
pub(super) const WINDOW_MESSAGES: u64 = 16;
/// The moving average of the party's own work weighs each message 1/32:
/// smooth enough that exponential work (relative spread 1) is known within
/// about 13%, quick enough to follow a rate step within a few hundred
/// messages.
pub(super) const OWN_WEIGHT: f64 = 32.0;
/// Samples a producer keeps (it takes their minimum).
pub(super) const KEEP: usize = 4;
/// Naps timed before a producer judges what a nap costs it.
pub(super) const NAP_SAMPLES: u32 = 4;
/// Naps whose wake-ups decide what a nap costs (their median).
pub(super) const LATE_KEEP: usize = 8;
/// Naps whose wake-ups' spread sizes a consumer's naps: enough that a
/// wake-up in a hundred is among them.
pub(super) const TAIL_KEEP: usize = 128;
/// A consumer's naps keep at most this share of the messages they gather
/// waiting past the latency bound, were they to wake as the last
/// [`TAIL_KEEP`] did: the 1% a p99 allows. The estimate is on the safe
/// side (each nap's first message counted as arriving when it fell
/// asleep, two messages' work ahead of it).
pub(super) const OVER_SHARE: f64 = 0.01;
/// A consumer that declines to nap, its naps having woken too late to
/// fit under the latency bound, times a short one again every this many
/// waits: rarely enough that the few messages that wait for a probe's
/// wake-up stay well under 1% and its wake-ups cost little (one in 128
/// messages at most), often enough that the [`TAIL_KEEP`] naps that
/// decide are timed afresh within some 16 000 messages once a stall has
/// passed.
pub(super) const PROBE_EVERY: u32 = 128;
/// Weight of a new sample in the average of a kicked pause's wake-up: 1/4
/// (a few wake-ups, not one, decide).
pub(super) const KICK_WEIGHT: f64 = 4.0;
/// The most of the producer's time a consumer's kicked pauses may take
/// (one kick N_P a pause): the 5% within which a pair still has polling's
/// throughput.
pub(super) const KICK_SHARE: f64 = 0.05;
/// A party that pauses or waits by kicks because its naps wake too late
/// takes every this many a nap instead (a probe): the machine's wake-ups
/// change (`docs/calibration.md`), and a party that never naps would never
/// see naps turn cheap again.
pub(super) const KICK_PROBE_EVERY: u32 = 32;
/// A party re-reads the peer's index after at least every this many
/// messages to follow its pace, where no decision needs it sooner
/// ([`Adaptive::needs_fresh`]).
pub(super) const FRESH_EVERY: u32 = 16;
/// How many times a kicked wake-up's cost naps must cost before a party
/// pauses (a producer) or starts waiting (a consumer) by kicks: the margin
/// keeps the spread of random wake-ups from flipping the choice, and a
/// kick also costs the peer its N.
pub(super) const DEAR: f64 = 1.5;

/// The peer's pace, estimated from windows of the ring's indices.
#[derive(Debug, Clone)]
struct PeerPace {
    /// Time and messages accumulated toward the next sample.
    acc_t: u64,
    acc_n: u64,
    /// How long the peer's count has not moved [ps].
    stalled: u64,
    /// Windows dropped in a row for a stall.
    dropped: u32,
    /// Recent samples [ps per message], newest last.
    samples: Vec<f64>,
}

impl PeerPace {
    /// Adds an interval in which the consumer should have been working
    /// all along (a producer's view): a window in which its count stalled
    /// for more than 8 of its messages is dropped, for the consumer was
    /// asleep, not slow; after 4 such windows in a row the consumer has
    /// slowed down and the window counts.
    #[allow(clippy::cast_precision_loss)]
    fn add_busy(&mut self, dt: u64, dn: u64, guess: Option<f64>) {
        self.stalled = if dn == 0 { self.stalled + dt } else { 0 };
        if let Some(g) = guess {
            if self.stalled as f64 > 8.0 * g && self.dropped < 4 {
                self.dropped += 1;
                self.stalled = 0;
                self.acc_t = 0;
                self.acc_n = 0;
                return;
            }
        }
        let before = self.samples.len();
        self.add(dt, dn, guess);
        if self.samples.len() != before || dn > 0 && self.acc_n == 0 {
            self.dropped = 0;
        }
    }

    fn add(&mut self, dt: u64, dn: u64, guess: Option<f64>) {
        self.acc_t += dt;
        self.acc_n += dn;
        #[allow(clippy::cast_precision_loss)]
        let long = guess.is_some_and(|g| self.acc_t as f64 > 4.0 * WINDOW_MESSAGES as f64 * g);
        if self.acc_n >= WINDOW_MESSAGES || (long && self.acc_n > 0) {
            #[allow(clippy::cast_precision_loss)]
            let s = self.acc_t as f64 / self.acc_n as f64;
            if self.samples.len() == KEEP {
                self.samples.remove(0);
            }
            self.samples.push(s);
            self.acc_t = 0;
            self.acc_n = 0;
        }
    }
    /// The fastest recent pace: what a producer plans its sleeps with (a
    /// sleeping consumer only makes windows look slower).
    fn fastest(&self) -> Option<f64> {
        self.samples.iter().copied().reduce(f64::min)
    }
    /// The slowest recent pace: what a consumer sizes a kicked pause with
    /// (a producer that slowed down brings the kick's count later).
    fn slowest(&self) -> Option<f64> {
        self.samples.iter().copied().reduce(f64::max)
    }
    /// The recent pace, newest weighted most: the arrival rate a consumer
    /// plans with.
    fn recent(&self) -> Option<f64> {
        self.samples
            .iter()
            .copied()
            .reduce(|avg, s| 0.5 * avg + 0.5 * s)
    }
}

impl Adaptive {
    pub(super) fn new(party: Party, p: &Params, latency_ns: f64) -> Adaptive {
        let (s_own, n_peer) = match party {
            Party::P => (p.s_p.mean_ns(), p.n_c.mean_ns()),
            Party::C => (p.s_c.mean_ns(), p.n_p.mean_ns()),
        };
        Adaptive {
            party,
            budget: 0.8 * latency_ns * 1000.0,
            s_own: s_own * 1000.0,
            block_cost: (s_own + n_peer) * 1000.0,
            n_peer: n_peer * 1000.0,
            w_own: None,
            peer: PeerPace {
                acc_t: 0,
                acc_n: 0,
                stalled: 0,
                dropped: 0,
                samples: Vec::with_capacity(KEEP),
            },
            last: None,
            late: None,
            late_recent: [0.0; LATE_KEEP],
            late_next: 0,
            late_n: 0,
            tail_recent: [0.0; TAIL_KEEP],
            tail_nap: None,
            kick_wake: None,
            blocked_at: None,
            paused_margin: None,
            declined: 0,
            timed_blocks: true,
            k_peer: u64::from(match party {
                Party::P => p.k_p,
                Party::C => p.k_c,
            }),
            unseen: 0,
            kicked: 0,
            kick_waits: false,
        }
    }

    /// Its latency bound [ps] (it plans for 80% of it).
    pub(super) fn bound(&self) -> f64 {
        self.budget / 0.8
    }

    /// What a nap's wake-up costs [ps]: as its naps showed, else the
    /// model's S.
    pub(super) fn nap_cost(&self) -> f64 {
        self.late.unwrap_or(self.s_own)
    }

    /// Whether a nap costs clearly more than a kicked wake-up: over at
    /// least [`NAP_SAMPLES`] naps, waking (and publishing once) took more
    /// than [`DEAR`] times what a kicked pause's wake-up takes. A kicked pause's wake-up is what such
    /// pauses showed once taken ([`Adaptive::kick_wake`]), else S plus the
    /// peer's kick: calibrated costs are those of short idles, and where a
    /// wake-up after a pause's long idle costs more than that, a producer
    /// goes back to naps once its kicked pauses have shown it. Never under
    /// the model's own rules (a nap pays S), so only a machine whose timed
    /// sleeps cost more than its kicks pauses by kicks.
    pub(super) fn naps_dear(&self, peer: f64, own: f64) -> bool {
        let kicked = self.kick_wake.map_or(self.block_cost + own, |m| m * peer);
        self.late_n >= NAP_SAMPLES && self.nap_cost() + own > DEAR * kicked
    }

    #[allow(clippy::cast_precision_loss)]
    pub(super) fn woke(&mut self, planned: u64, now: u64) {
        // A kicked wait that its deadline ended: no kick's wake-up to learn.
        self.blocked_at = None;
        // Naps are timed again (a deadline that ended a kicked wait times
        // one too).
        self.kicked = 0;
        let x = now.saturating_sub(planned) as f64;
        self.late_recent[self.late_next] = x;
        self.late_next = (self.late_next + 1) % LATE_KEEP;
        self.late_n = self.late_n.saturating_add(1);
        let mut kept = self.late_recent;
        let kept = &mut kept[..(self.late_n as usize).min(LATE_KEEP)];
        kept.sort_by(f64::total_cmp);
        let mid = kept.len() / 2;
        let median = if kept.len().is_multiple_of(2) {
            0.5 * (kept[mid - 1] + kept[mid])
        } else {
            kept[mid]
        };
        self.late = Some(median);
        self.tail_recent[(self.late_n as usize - 1) % TAIL_KEEP] = x;
        self.tail_nap = None;
    }

    /// The longest nap [ps] that the spread of its naps' wake-ups allows
    /// (`tail.rs`), for a consumer whose own work per message is `own`.
    fn tail_nap(&mut self, own: f64) -> f64 {
        if let Some(y) = self.tail_nap {
            return y;
        }
        let seen = &self.tail_recent[..(self.late_n as usize).min(TAIL_KEEP)];
        let y = super::tail::longest_nap(seen, self.bound(), 2.0 * own, OVER_SHARE).unwrap_or(0.0);
        self.tail_nap = Some(y);
        y
    }

    /// The messages a producer leaves queued when it asks for a kick: what
    /// the consumer handles while it wakes and publishes again (learned,
    /// else from S + N and its own work), plus two standard deviations of
    /// a Poisson count.
    pub(super) fn kick_margin(&self, peer: f64, own: f64) -> f64 {
        let m = self.kick_wake_estimate(peer, own);
        m + 2.0 + 2.0 * m.sqrt()
    }

    /// The messages the peer handles while a producer wakes from a kicked
    /// pause and publishes once: learned, else from S + N and its own work.
    pub(super) fn kick_wake_estimate(&self, peer: f64, own: f64) -> f64 {
        self.kick_wake.unwrap_or((self.block_cost + own) / peer)
    }

    pub(super) fn peer_count(&self, v: &View) -> u64 {
        match self.party {
            Party::P => v.consumed,
            Party::C => v.published,
        }
    }

    /// Whether the peer surely worked all the time since the last
    /// observation as far as the ring shows: a consumer works while
    /// messages wait, a producer while slots are free.
    pub(super) fn observe(&mut self, v: &View) {
        let count = self.peer_count(v);
        if let Some((t, c, occupied)) = self.last {
            let guess = self.pace();
            match self.party {
                // The consumer works while messages wait: an interval
                // counts if it began with two or more in the ring and ends,
                // just after this producer's publish, with two or more (so
                // at least one waited all along; an interval that ran dry
                // shows the producer's pace, not the consumer's), unless
                // the consumer's count stalled (it slept).
                // An interval that ran dry still bounds the consumer's
                // pace from above: it took at most that long per message.
                Party::P => {
                    let (dt, dn) = (v.now - t, count - c);
                    if occupied >= 2 && v.occupancy() >= 2 {
                        self.peer.add_busy(dt, dn, guess.or(self.w_own));
                    } else {
                        self.peer.acc_t = 0;
                        self.peer.acc_n = 0;
                        if dn > 0 {
                            #[allow(clippy::cast_precision_loss)]
                            let bound = dt as f64 / dn as f64;
                            for s in &mut self.peer.samples {
                                *s = s.min(bound);
                            }
                        }
                    }
                }
                // A producer that stops publishing while messages still
                // wait has paused (for this consumer's kick, or a nap), not
                // slowed down: such a window is dropped as the producer
                // drops a stalled consumer's, or this consumer would nap
                // while the producer waits for it.
                Party::C => {
                    if v.occupancy() < v.len && occupied >= 1 {
                        self.peer.add_busy(v.now - t, count - c, guess);
                    } else if v.occupancy() < v.len {
                        self.peer.add(v.now - t, count - c, guess);
                    } else {
                        self.peer.acc_t = 0;
                        self.peer.acc_n = 0;
                    }
                }
            }
        }
        self.last = Some((v.now, count, v.occupancy()));
    }

    pub(super) fn pace(&self) -> Option<f64> {
        match self.party {
            Party::P => self.peer.fastest(),
            Party::C => self.peer.recent(),
        }
    }

    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    pub(super) fn wait(&mut self, v: &View, start: u64, first: bool) -> Action {
        self.observe(v);
        let own = self.w_own.unwrap_or(0.0);
        let Some(peer) = self.pace() else {
            // Nothing known yet: spin for what blocking would cost, then
            // block (never more than twice the best choice).
            return if first {
                Action::Spin(Some(start + self.block_cost as u64))
            } else {
                Action::Block
            };
        };
        match self.party {
            Party::C => {
                // The queue is empty. If the producer is the slower one,
                // sleep while messages accumulate, as long as the latency
                // bound and half the ring allow: the first message waits
                // for the nap, its wake-up (as its naps showed, once it
                // has timed NAP_SAMPLES, else S) and the work ahead of it.
                // A nap pays where at least two messages gather by the end
                // of its wake-up (blocking instead costs the producer a
                // kick for each wake-up).
                let len = v.len as f64;
                let wake = if self.late_n >= NAP_SAMPLES {
                    self.nap_cost()
                } else {
                    self.s_own
                };
                // Once naps are timed, no longer than their wake-ups'
                // spread allows (`tail.rs`): the median alone let the
                // late ones keep the first messages past the bound.
                let tail = if self.late_n >= NAP_SAMPLES {
                    self.tail_nap(own)
                } else {
                    f64::INFINITY
                };
                let nap = (self.budget - wake - 2.0 * own)
                    .min(tail)
                    .min(0.5 * len * peer);
                let slower = peer > 1.05 * own;
                if slower && first {
                    if let Some(a) = self.kicked_wait(v, peer, own) {
                        self.declined = 0;
                        return a;
                    }
                }
                if slower && nap > 0.0 && nap + wake >= 2.0 * peer {
                    self.declined = 0;
                    Action::Nap(v.now + nap as u64)
                } else if slower
                    && nap <= 0.0
                    && self.budget - self.s_own - 2.0 * own > 0.0
                    && self.budget - 2.0 * own >= 2.0 * peer
                    && first
                    && self.probe_due()
                {
                    // Declined for its naps' wake-up alone: a probe, one
                    // of the producer's messages long, timed like any nap.
                    Action::Nap(v.now + peer as u64)
                } else if first {
                    Action::Spin(Some(start + (2.0 * peer).max(self.block_cost) as u64))
                } else {
                    Action::Block
                }
            }
            Party::P => {
                // The ring is full. A producer ahead of its consumer sleeps
                // while the consumer drains it down to the margin; one that
                // is not ahead met a passing backlog (the consumer slept,
                // or random work): a slot frees within about one of the
                // consumer's messages, so it spins for that, then blocks.
                let nap = self.drain_time(v.occupancy(), peer, own);
                if own * 1.05 <= peer && nap > 0.0 {
                    Action::Nap(v.now + nap as u64)
                } else if first {
                    Action::Spin(Some(start + (2.0 * peer).max(self.block_cost) as u64))
                } else {
                    Action::Block
                }
            }
        }
    }

    /// A consumer's pause until the producer's kick, where its naps have
    /// shown they wake more than [`DEAR`] times later than a kicked wait
    /// does (once in kicked waits: any later), counting the producer's
    /// kick: what kicked waits showed (the messages that
    /// gathered while it woke, at the producer's pace, plus N_P), else the
    /// calibrated S + N_P. A nap's lateness is also what it costs in CPU
    /// where a timer's wake-up is charged to the sleeper (the simulator
    /// charges it; so does a nested guest's thread clock,
    /// `docs/control.md`). Its deadline is the nap it would take, and it
    /// asks for the kick once as many messages are queued as the producer
    /// brings by then at its slowest recent pace (at most half the ring):
    /// it gathers what the nap would, and wakes sooner and more cheaply; a
    /// producer that slows down or stops meets the deadline, and the wait
    /// ends as that nap would. Only where the producer, which sets the
    /// pace, spends at most [`KICK_SHARE`] of its time in these kicks (its
    /// calibrated N_P).
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    pub(super) fn kicked_wait(&mut self, v: &View, peer: f64, own: f64) -> Option<Action> {
        let wake = self
            .kick_wake
            .map_or(self.block_cost, |m| m * peer + self.n_peer);
        let line = if self.kick_waits { wake } else { DEAR * wake };
        if !self.timed_blocks || self.late_n < NAP_SAMPLES || self.nap_cost() <= line {
            self.kick_waits = false;
            return None;
        }
        if self.kicked + 1 >= KICK_PROBE_EVERY {
            // A probe: this wait is the nap, timed.
            self.kicked = 0;
            return None;
        }
        // The deadline is the nap it replaces: one the deadline ends wakes
        // as that nap would, within the bound. The kick comes before it:
        // the at-th message arrives by at x the producer's slowest recent
        // pace (the first may come a message after the wait begins).
        let length = self.budget - self.nap_cost() - 2.0 * own;
        let slowest = self.peer.slowest().unwrap_or(peer).max(peer);
        let at = (length / slowest).floor().min((0.5 * v.len as f64).floor());
        if at < 2.0 || self.n_peer > KICK_SHARE * at * peer {
            self.kick_waits = false;
            return None;
        }
        self.kick_waits = true;
        self.blocked_at = Some(at as u32);
        self.kicked += 1;
        Some(Action::TimedBlock(at as u32, v.now + length as u64))
    }

    /// Counts a nap declined for its wake-up: true (and starts counting
    /// again) at every [`PROBE_EVERY`]th.
    pub(super) fn probe_due(&mut self) -> bool {
        self.declined += 1;
        if self.declined >= PROBE_EVERY {
            self.declined = 0;
            true
        } else {
            false
        }
    }

    /// How long a producer may sleep with `queued` messages in the ring
    /// and the consumer at `peer` per message, so that the ring still holds
    /// a margin when it has woken (S) and published again (its W): the
    /// margin absorbs the consumer's jitter, two standard deviations of a
    /// Poisson count.
    #[allow(clippy::cast_precision_loss)]
    pub(super) fn drain_time(&self, queued: u64, peer: f64, own: f64) -> f64 {
        let q = queued as f64;
        let margin = 2.0 + 2.0 * q.sqrt();
        // Never longer than the latency budget: a consumer that looks slow
        // may only be waiting for this producer (a kick threshold k_P it has
        // not reached), and no message should wait longer anyway.
        ((q - margin) * peer - self.nap_cost() - own).min(self.budget)
    }

    pub(super) fn done(&mut self, v: &View, e: Episode) {
        self.observe(v);
        // A kicked wait ends with its threshold queued and what the
        // producer published while the consumer woke (one its deadline
        // ended was forgotten in `woke`; one the re-check averted, with no
        // sleep, shows no wake-up).
        if let Some(at) = self.blocked_at.take() {
            let queued = v.occupancy();
            if e.blocked.is_some() && queued >= u64::from(at) {
                #[allow(clippy::cast_precision_loss)]
                self.note_kick_wake((queued - u64::from(at)) as f64);
            }
        }
    }

    /// The producer's pause mark: the occupancy from which it pauses.
    pub(super) fn needs_fresh(&mut self, cached: &View) -> bool {
        self.unseen += 1;
        let due = self.unseen >= FRESH_EVERY
            || self.paused_margin.is_some()
            || self
                .pause_mark(cached)
                .is_some_and(|m| cached.occupancy() >= m);
        if due {
            self.unseen = 0;
        }
        due
    }

    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    pub(super) fn pause_mark(&self, v: &View) -> Option<u64> {
        if self.party == Party::C {
            return None;
        }
        let peer = self.pace()?;
        let own = self.w_own.unwrap_or(0.0);
        if own * 1.05 > peer {
            // Not the faster party: the queue only builds up while the
            // consumer sleeps, and it sleeps only as long as that is safe.
            return None;
        }
        // The queue's depth is sized with the consumer's typical pace (a
        // message waits for those ahead of it), the sleep with its fastest.
        let typical = self.peer.recent().unwrap_or(peer);
        Some(((self.budget / typical) as u64).clamp(2, v.len.saturating_sub(1).max(2)))
    }

    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    pub(super) fn after_work(&mut self, v: &View, work: Option<u64>) -> Option<Action> {
        self.unseen = 0;
        if let Some(w) = work {
            self.own_work(w);
        }
        self.observe(v);
        self.learn_kick_wake(v, 1.0);
        self.pause_action(v, false, true)
    }

    /// [`Adaptive::learn_kick_wake`] from a lower bound: the ring at `v`
    /// before the party runs again; learned only where it exceeds the
    /// estimate.
    pub(super) fn learn_kick_wake_at_least(&mut self, v: &View) {
        if let Some(m) = self.paused_margin.take() {
            let used = wake_used(m, v, 0.0);
            let exceeds = match self.pace() {
                Some(peer) => used > self.kick_wake_estimate(peer, self.w_own.unwrap_or(0.0)),
                None => true,
            };
            if exceeds {
                self.note_kick_wake(used);
            }
        }
    }

    /// After a kicked pause, the ring at `v` once the producer has woken
    /// and published `published` since: what the wake-up used of the
    /// margin ([`wake_used`]), learned.
    pub(super) fn learn_kick_wake(&mut self, v: &View, published: f64) {
        if let Some(m) = self.paused_margin.take() {
            self.note_kick_wake(wake_used(m, v, published));
        }
    }

    /// A sample of what a kicked pause's wake-up used [messages] (moving
    /// average).
    pub(super) fn note_kick_wake(&mut self, x: f64) {
        self.kick_wake = Some(self.kick_wake.map_or(x, |a| a + (x - a) / KICK_WEIGHT));
    }

    /// A sample of the party's own work per message [ps].
    #[allow(clippy::cast_precision_loss)]
    pub(super) fn own_work(&mut self, work: u64) {
        let w = work as f64;
        self.w_own = Some(self.w_own.map_or(w, |a| a + (w - a) / OWN_WEIGHT));
    }

    /// A producer's pause, if it should take one now; `reached`: it is
    /// known to have reached its pause mark (the ring may have drained
    /// since); `kick`: it may pause until the consumer's kick (where naps
    /// cost it more than that).
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    pub(super) fn pause_action(&mut self, v: &View, reached: bool, kick: bool) -> Option<Action> {
        if self.party == Party::C {
            return None;
        }
        // A producer ahead of its consumer stops once the ring holds what
        // the latency bound allows, and sleeps while it drains.
        let high = self.pause_mark(v)?;
        if !reached && v.occupancy() < high {
            return None;
        }
        let (peer, own) = (self.pace()?, self.w_own.unwrap_or(0.0));
        let nap = self.drain_time(v.occupancy(), peer, own);
        let naps_dear = self.naps_dear(peer, own);
        // A nap fits where it outlasts its own wake-up; a shorter one (it
        // still ends before the ring is down to the margin) only once
        // kicked pauses have shown that naps are not dear against them
        // (they wake at most 1.5 times later): a kicked pause needs a
        // queue about as deep and also costs the peer a kick.
        let nap_fits =
            nap > self.nap_cost() || (nap > 0.0 && self.kick_wake.is_some() && !naps_dear);
        // Where naps cost clearly more, or have shown they wake too late to
        // fit at all, sleep until the consumer has drained the ring down to
        // the margin and let it kick: the wake-up starts exactly then. One
        // timed nap is enough to judge that naps do not fit: a nap that
        // does not fit is never taken, so no second one would ever be
        // timed (a KVM guest whose first nap overslept by 80 us declined
        // every pause after it).
        let for_naps = naps_dear || (!nap_fits && self.late_n >= 1);
        // Every KICK_PROBE_EVERY-th pause that naps' wake-ups send to a
        // kick is a nap instead, timed: a probe of whether naps have turned
        // cheap again. Planned as any nap (to end before the ring is down
        // to the margin, were it to wake as late as naps have), and at
        // least one of the consumer's messages long: naps that once woke
        // so late that none could be planned are timed again too.
        let probe = kick && for_naps && self.kicked + 1 >= KICK_PROBE_EVERY;
        if probe {
            self.kicked = 0;
            return Some(Action::Nap(v.now + nap.max(peer) as u64));
        }
        if kick && for_naps {
            // Only with at least k_P queued: a consumer that fell asleep
            // waiting for k_P messages must have been kicked by now, or it
            // would wait for this producer while this producer waits for it.
            // And only where it pays: the pause (until the ring is down to
            // the margin) outlasts what waking from it costs the pair.
            let margin = self.kick_margin(peer, own).ceil();
            let q = v.occupancy() as f64;
            if q >= margin + 2.0
                && (q - margin) * peer > self.block_cost
                && v.occupancy() >= self.k_peer
            {
                self.paused_margin = Some(margin);
                self.kicked += 1;
                let free = (v.len as f64 - margin).max(1.0);
                return Some(Action::BlockUntil(free.min(f64::from(u32::MAX)) as u32));
            }
        }
        nap_fits.then(|| Action::Nap(v.now + nap as u64))
    }
}

/// What a kicked pause's wake-up used of the margin `m` it left queued,
/// seen with the ring at `v` after `published` publishes since waking: the
/// consumer freed m + published - occupancy meanwhile. A ring that ran dry
/// says only that it took longer: twice the margin.
#[allow(clippy::cast_precision_loss)]
fn wake_used(m: f64, v: &View, published: f64) -> f64 {
    let occupancy = v.occupancy() as f64;
    if occupancy <= published {
        2.0 * m
    } else {
        (m + published - occupancy).max(0.0)
    }
}
