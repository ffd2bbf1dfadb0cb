//! The event loop for every strategy (`control.md`): spins with deadlines,
//! timed sleeps that pay S on waking and are never kicked, blocks (timed
//! ones too: kicked at their count, or woken by their deadline), pauses
//! between messages and coalesced kicks, decided step by step by each
//! party's [`Controller`]. The model's rules (`docs/model.md`) otherwise hold
//! to the letter: with `notify`, `poll` and `spin:<B>` this loop draws the
//! same costs in the same order as the fast loop (`engine.rs`) and ends with
//! the same totals, which the tests check.
//!
//! Each party has one pending event, keyed `(time << 2) | class` as in the
//! fast loop (class 0: the end of a work interval; class 1: an attempt or a
//! spin deadline; class 2: an attempt that yielded to the peer's at the
//! same instant), so every publish and free at an instant comes before any
//! attempt that could take it, even one made by work that takes no time.
//! Unlike the fast loop it never folds an attempt into the event before
//! it: one event per action, simpler and about half as fast.
//!
//! What does not live here: the decisions ([`kicklab_model::control`]), the
//! closed forms, sweeps.

use hdrhistogram::Histogram;
use kicklab_model::control::{coalescing, Action, Controller, Episode, View};
use kicklab_model::{to_ps, Party, Rates};

use crate::config::{
    SimConfig, SimError, SimResult, Start, Totals, Window, MAX_EVENTS_PER_MESSAGE, MAX_TIME_PS,
};
use crate::engine::{check_config, samplers, Costs};
use crate::engine::{N_C, N_P, S_C, S_P, V_C, V_P, W_C, W_P};
use crate::sampler::Sampler;

const NEVER: u64 = u64::MAX;

/// Time, busy, notifications, sleeps and work drawn at the free that ends
/// the warm-up.
type Mark = (u64, [u64; 2], [u64; 2], [u64; 2], u64);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// In W; the event ends it (class 0).
    Work,
    /// An attempt is due (class 1): after a kick and S, after a timed sleep
    /// and S, after a pause, or at once.
    Attempt,
    /// An attempt that found nothing while the peer had an attempt at the
    /// same instant, held until that one has run (class 2; `engine.rs`).
    Yielded,
    /// Spinning for the condition with a deadline (class 1 event).
    SpinUntil,
    /// Spinning for the condition with no deadline: no event.
    Spin,
    /// Blocked, waiting for a kick: no event, or (a timed block) its
    /// deadline (class 1).
    Blocked,
}

struct Side {
    phase: Phase,
    t: u64,
    spin_since: u64,
    /// When it blocked (for the start-up's idle scaling and `haltpoll`).
    blocked_since: u64,
    /// Busy time so far [ps]: W, N, S and pauses added when they are
    /// booked, a spin for the condition when it ends.
    busy: u64,
    /// The last two busy intervals booked `[from, to)` [ps]: those still
    /// ahead of a window's end are not charged to it (`busy_at`). Two
    /// suffice: a kick's N and the nap or pause that follows it.
    booked: [(u64, u64); 2],
    notifications: u64,
    sleeps: u64,
    count: u64,
    /// The current episode's start, if it is waiting.
    episode: Option<u64>,
    /// How long it was blocked in this episode, if it was.
    blocked_for: Option<u64>,
    /// The work of the message it is doing [ps].
    work: u64,
    /// Since when its kick has been held back (coalescing).
    pending_since: Option<u64>,
    /// Blocked in a pause until the peer brings this many (`BlockUntil`):
    /// the peer kicks at this threshold, not at its k.
    pause_k: Option<u64>,
    /// Blocked in a wait until the peer brings this many or the deadline
    /// (`TimedBlock`): the peer kicks at this threshold, not at its k.
    wait_k: Option<u64>,
    ctl: Controller,
}

impl Side {
    fn key(&self) -> u64 {
        if self.t == NEVER {
            NEVER
        } else {
            (self.t << 2)
                | match self.phase {
                    Phase::Work => 0,
                    Phase::Yielded => 2,
                    _ => 1,
                }
        }
    }
    /// Whether its pending event is an attempt (not yet yielded) at `now`.
    fn attempts_at(&self, now: u64) -> bool {
        self.phase == Phase::Attempt && self.t == now
    }
    fn spinning(&self) -> bool {
        matches!(self.phase, Phase::Spin | Phase::SpinUntil)
    }
    fn block(&mut self, now: u64) {
        self.phase = Phase::Blocked;
        self.t = NEVER;
        self.sleeps += 1;
        self.blocked_since = now;
    }
    fn stop_spinning(&mut self, now: u64) {
        self.busy += now - self.spin_since;
        self.phase = Phase::Attempt;
        self.t = now;
    }
    /// Books busy time `[from, to)` (`from` >= now).
    fn book(&mut self, from: u64, to: u64) {
        self.busy += to - from;
        self.booked = [(from, to), self.booked[0]];
    }
    /// Busy time spent up to `at` (now): `busy` less what is booked ahead
    /// of it, plus a spin in progress.
    fn busy_at(&self, at: u64) -> u64 {
        let ahead: u64 = self
            .booked
            .iter()
            .map(|&(from, to)| to.saturating_sub(from.max(at)))
            .sum();
        let spin = if self.spinning() {
            at - self.spin_since
        } else {
            0
        };
        self.busy - ahead + spin
    }
}

/// Runs one simulation of any strategies (`notify`, `poll` and `spin` as
/// well, where [`crate::simulate`] takes the fast loop).
///
/// Adaptive strategies without their own latency bound use 100 us; give
/// the bound in the mode (`adaptive:latency=50us`).
///
/// # Errors
///
/// As [`crate::simulate`].
pub fn simulate_control(cfg: &SimConfig) -> Result<SimResult, SimError> {
    check_config(cfg)?;
    run(cfg, &mut costs_of(cfg), None)
}

/// What waking from a nap of `idle` [ps] costs party `me` [ps]: the
/// calibrated nap wake-up where there is one, else its S.
fn nap_start(costs: &mut Costs, me: usize, idle: u64) -> u64 {
    match &mut costs.nap[me] {
        Some(nap) => nap.draw_ps(),
        None => costs.start_up::<false>([S_P, S_C][me], idle),
    }
}

/// The run's cost streams.
fn costs_of(cfg: &SimConfig) -> Costs {
    let (samplers, consts, _) = samplers(cfg);
    Costs {
        samplers,
        consts,
        vis: [cfg.params.v_p.is_some(), cfg.params.v_c.is_some()],
        idle_scale: cfg.idle_scale,
        // Streams 8 and 9, after the eight of `samplers`.
        nap: [0, 1].map(|i| cfg.nap[i].map(|c| Sampler::new(c, cfg.seed, 8 + i as u64))),
    }
}

/// As [`simulate_control`], and the time [ps] each message was freed, in
/// order, warm-up included: how fast a strategy follows a rate step.
///
/// # Errors
///
/// As [`crate::simulate`].
pub fn simulate_trace(cfg: &SimConfig) -> Result<(SimResult, Vec<u64>), SimError> {
    check_config(cfg)?;
    let mut costs = costs_of(cfg);
    let mut trace = Vec::with_capacity(usize::try_from(cfg.messages + cfg.warmup).unwrap_or(0));
    let r = run(cfg, &mut costs, Some(&mut trace))?;
    Ok((r, trace))
}

#[allow(clippy::too_many_lines, clippy::cast_precision_loss)]
fn run(
    cfg: &SimConfig,
    costs: &mut Costs,
    mut trace: Option<&mut Vec<u64>>,
) -> Result<SimResult, SimError> {
    let prm = &cfg.params;
    let len = u64::from(prm.len);
    let k = [u64::from(prm.k_p), u64::from(prm.k_c)];
    let coalesce = [
        coalescing(cfg.mode_p, prm.len),
        coalescing(cfg.mode_c, prm.len),
    ];
    let stop = cfg.warmup.saturating_add(cfg.messages);
    let side = |party, mode| Side {
        phase: Phase::Attempt,
        t: 0,
        spin_since: 0,
        blocked_since: 0,
        busy: 0,
        booked: [(0, 0); 2],
        notifications: 0,
        sleeps: 0,
        count: 0,
        episode: None,
        blocked_for: None,
        work: 0,
        pending_since: None,
        pause_k: None,
        wait_k: None,
        ctl: Controller::new(mode, party, prm, None),
    };
    let mut s = [side(Party::P, cfg.mode_p), side(Party::C, cfg.mode_c)];
    // have[P] = free slots, have[C] = available messages.
    let mut have = [len, 0u64];
    if cfg.start == Start::Full {
        have = [0, len];
        s[0].count = len;
        s[0].block(0);
        s[0].episode = Some(0);
    }
    let mut pub_time: Vec<u64> = vec![0; prm.len as usize];
    let (mut pub_slot, mut con_slot) = (0usize, 0usize);
    let mut hist = Histogram::<u32>::new(3).expect("3 significant digits");
    let mut latency_sum = 0u128;
    let mut lat_max = 0u64;
    // At the free that ends the warm-up: time, busy, notifications, sleeps.
    let mut mark: Option<Mark> = None;
    let mut events = 0u64;
    // Work drawn by both parties so far [ps].
    let mut work_sum = 0u64;
    let (work_i, notify_i, vis_i, start_i) = ([W_P, W_C], [N_P, N_C], [V_P, V_C], [S_P, S_C]);

    // Send combining: messages P has written but not published yet.
    let (batch, flush_ps) = (
        u64::from(cfg.combine.batch.max(1)),
        cfg.combine.timer_ns().map(to_ps),
    );
    let on_interrupt = cfg.combine.flush == crate::Flush::OnInterrupt;
    let (mut pending, mut first_pending) = (0u64, 0u64);
    // P's next attempt follows a kick from C (flush on interrupt).
    let mut p_kicked = false;
    let view = |now: u64, s: &[Side; 2], pending: u64| View {
        now,
        len,
        published: s[0].count - pending,
        consumed: s[1].count,
    };

    // `me` has just made `peer`'s resource grow at `now`: kick the peer if
    // it sleeps and enough is there (held back by coalescing), or stop its
    // spin. Returns whether it kicked (then `me` attempts after its N).
    macro_rules! notify {
        ($me:expr, $peer:expr, $now:expr) => {{
            let (me, peer, now): (usize, usize, u64) = ($me, $peer, $now);
            let mut kicked = false;
            let want = s[peer].pause_k.or(s[peer].wait_k).unwrap_or(k[me]);
            if s[peer].phase == Phase::Blocked && have[peer] >= want {
                let due = match coalesce[me] {
                    None => true,
                    Some((n, t)) => {
                        let since = *s[me].pending_since.get_or_insert(now);
                        have[peer] >= n || now - since >= t
                    }
                };
                if due {
                    s[me].pending_since = None;
                    s[me].notifications += 1;
                    let (n, v) = costs.notification::<false>(notify_i[me], vis_i[me]);
                    let idle = now + v - s[peer].blocked_since;
                    let st = costs.start_up::<false>(start_i[peer], idle);
                    s[me].book(now, now + n);
                    s[peer].book(now + v, now + v + st);
                    s[peer].wait_k = None;
                    // A pause is no episode of waiting.
                    if s[peer].pause_k.take().is_none() {
                        s[peer].blocked_for = Some(idle);
                    }
                    p_kicked |= peer == 0;
                    s[peer].phase = Phase::Attempt;
                    s[peer].t = now + v + st;
                    s[me].phase = Phase::Attempt;
                    s[me].t = now + n;
                    kicked = true;
                }
            } else if s[peer].spinning() {
                s[peer].stop_spinning(now);
            }
            kicked
        }};
    }

    let final_t;
    loop {
        let (kp, kc) = (s[0].key(), s[1].key());
        if kp == NEVER && kc == NEVER {
            return Err(SimError::Deadlock {
                t_ns: 0,
                free: have[0],
                avail: have[1],
            });
        }
        events += 1;
        // At most MAX_EVENTS_PER_MESSAGE a message consumed so far, beyond
        // a start-up allowance of as many messages' worth (checked now and
        // then: the division is not free).
        if events.is_multiple_of(crate::stop::EVERY) {
            if events
                > s[1]
                    .count
                    .saturating_add(100)
                    .saturating_mul(MAX_EVENTS_PER_MESSAGE)
            {
                return Err(SimError::TooManyEvents { events });
            }
            if crate::stop::requested() {
                return Err(SimError::Stopped);
            }
        }
        let me = usize::from(kp > kc);
        let peer = 1 - me;
        let now = s[me].t;
        if now > MAX_TIME_PS {
            return Err(SimError::TimeOverflow);
        }
        match s[me].phase {
            Phase::Work => {
                // Publish (P) or free (C): the peer gains one; with send
                // combining P publishes only when its batch is full or its
                // hold timer has run out.
                s[me].count += 1;
                let mut published = true;
                if me == 0 {
                    // Latency counts from the write.
                    pub_time[pub_slot] = now;
                    pub_slot = (pub_slot + 1) % pub_time.len();
                    pending += 1;
                    if pending == 1 {
                        first_pending = now;
                    }
                    published =
                        pending >= batch || flush_ps.is_some_and(|t| now - first_pending >= t);
                    if published {
                        have[1] += pending;
                        pending = 0;
                    }
                } else {
                    have[0] += 1;
                    if let Some(t) = trace.as_deref_mut() {
                        t.push(now);
                    }
                    let lat = now - pub_time[con_slot];
                    con_slot = (con_slot + 1) % pub_time.len();
                    if s[1].count > cfg.warmup {
                        latency_sum += u128::from(lat);
                        if cfg.latency {
                            let v = (lat + 500) / 1000;
                            lat_max = lat_max.max(lat);
                            if hist.record(v).is_err() {
                                hist.saturating_record(v);
                            }
                        }
                    }
                    if s[1].count == cfg.warmup {
                        mark = Some((
                            now,
                            [s[0].busy_at(now), s[1].busy_at(now)],
                            [s[0].notifications, s[1].notifications],
                            [s[0].sleeps, s[1].sleeps],
                            work_sum,
                        ));
                    }
                    if s[1].count >= stop {
                        final_t = now;
                        break;
                    }
                }
                let kicked = published && notify!(me, peer, now);
                if !kicked {
                    s[me].phase = Phase::Attempt;
                    s[me].t = now;
                }
                // A pause before the next message, if the strategy wants one.
                let v = view(s[me].t, &s, pending);
                let work = s[me].work;
                if let Some(a) = s[me].ctl.after_work(&v, work) {
                    if me == 0 && pending > 0 {
                        // Nothing is held over a pause.
                        let at = s[0].t;
                        have[1] += pending;
                        pending = 0;
                        notify!(0, 1, at);
                    }
                    let at = s[me].t;
                    match a {
                        Action::Nap(until) => {
                            let until = until.max(at);
                            let st = nap_start(costs, me, until - at);
                            s[me].sleeps += 1;
                            s[me].book(until, until + st);
                            s[me].t = until + st;
                            s[me].ctl.woke(until, until + st);
                        }
                        Action::Spin(Some(until)) => {
                            let until = until.max(at);
                            s[me].book(at, until);
                            s[me].t = until;
                        }
                        // Registered at once, so only when no kick of its
                        // own is still running (else the peer could wake it
                        // before it slept); if the peer has already brought
                        // the threshold, the re-check averts the sleep.
                        Action::BlockUntil(want) if at == now && have[me] < u64::from(want) => {
                            s[me].pause_k = Some(u64::from(want));
                            s[me].block(now);
                        }
                        Action::BlockUntil(_)
                        | Action::TimedBlock(..)
                        | Action::Spin(None)
                        | Action::Block => {}
                    }
                }
            }
            Phase::Attempt | Phase::Yielded | Phase::SpinUntil => {
                let first = s[me].phase != Phase::SpinUntil;
                if me == 0 && std::mem::take(&mut p_kicked) && on_interrupt && pending > 0 {
                    // Flush on interrupt: C's kick has reached P. (In a
                    // one-way pair P is kicked only after it waited, and it
                    // publishes before it waits, so this finds nothing
                    // held: `docs/model.md`, "Send combining".)
                    have[1] += pending;
                    pending = 0;
                    if notify!(0, 1, now) {
                        continue;
                    }
                }
                if first && have[me] >= 1 {
                    have[me] -= 1;
                    if let Some(start) = s[me].episode.take() {
                        let e = Episode {
                            start,
                            end: now,
                            blocked: s[me].blocked_for.take(),
                        };
                        let v = view(now, &s, pending);
                        s[me].ctl.done(&v, e);
                    }
                    let w = costs.draw::<false>(work_i[me]);
                    work_sum += w;
                    s[me].work = w;
                    s[me].book(now, now + w);
                    s[me].phase = Phase::Work;
                    s[me].t = now + w;
                    continue;
                }
                if me == 0 && pending > 0 {
                    // The ring is full of what P holds and has published:
                    // publish before waiting, or C could never free a slot.
                    have[1] += pending;
                    pending = 0;
                    if notify!(0, 1, now) {
                        continue;
                    }
                }
                if s[me].phase == Phase::Attempt && s[peer].attempts_at(now) {
                    // Nothing to take, and the peer attempts at this same
                    // instant: after it (its work may publish or free now).
                    s[me].phase = Phase::Yielded;
                    continue;
                }
                if !first {
                    // A spin deadline passed with the condition still false.
                    s[me].busy += now - s[me].spin_since;
                }
                let new_episode = s[me].episode.is_none();
                let start = *s[me].episode.get_or_insert(now);
                let v = view(now, &s, pending);
                match s[me].ctl.wait(&v, start, new_episode) {
                    // A wait takes the party's own threshold.
                    Action::Block | Action::BlockUntil(_) => s[me].block(now),
                    // Registered at its own threshold, with a deadline.
                    Action::TimedBlock(want, until) => {
                        s[me].wait_k = Some(u64::from(want).max(1));
                        s[me].block(now);
                        s[me].t = until.max(now);
                    }
                    Action::Spin(deadline) => {
                        s[me].spin_since = now;
                        match deadline {
                            Some(d) => {
                                s[me].phase = Phase::SpinUntil;
                                s[me].t = d.max(now);
                            }
                            None => {
                                s[me].phase = Phase::Spin;
                                s[me].t = NEVER;
                            }
                        }
                    }
                    Action::Nap(until) => {
                        let until = until.max(now);
                        let st = nap_start(costs, me, until - now);
                        s[me].sleeps += 1;
                        s[me].book(until, until + st);
                        s[me].phase = Phase::Attempt;
                        s[me].t = until + st;
                        s[me].ctl.woke(until, until + st);
                    }
                }
                // An attempt that follows a nap is not a new episode.
            }
            Phase::Blocked => {
                // A timed block's deadline: withdrawn, it wakes as from a
                // nap and attempts again (the same episode). A kick the peer
                // held back for it (coalescing) is moot.
                s[me].wait_k = None;
                s[peer].pending_since = None;
                let st = nap_start(costs, me, now - s[me].blocked_since);
                s[me].book(now, now + st);
                s[me].phase = Phase::Attempt;
                s[me].t = now + st;
                s[me].ctl.woke(now, now + st);
            }
            Phase::Spin => unreachable!("no event pending"),
        }
    }

    let (t0, busy0, notif0, sleeps0, work0) = mark.unwrap_or((0, [0, 0], [0, 0], [0, 0], 0));
    let n = (s[1].count - cfg.warmup.min(s[1].count)).max(1) as f64;
    let per = |a: u64, b: u64| (b - a) as f64 / n / 1000.0;
    let e_p_ns = per(busy0[0], s[0].busy_at(final_t));
    let e_c_ns = per(busy0[1], s[1].busy_at(final_t));
    let latency_ns = (cfg.latency && !hist.is_empty())
        .then(|| crate::engine::latency_of(&hist, lat_max, latency_sum));
    Ok(SimResult {
        rates: Rates {
            t_ns: per(t0, final_t),
            e_ns: e_p_ns + e_c_ns,
            e_p_ns,
            e_c_ns,
            messages: s[1].count - cfg.warmup.min(s[1].count),
            notifications_p: s[0].notifications - notif0[0],
            notifications_c: s[1].notifications - notif0[1],
            sleeps_p: s[0].sleeps - sleeps0[0],
            sleeps_c: s[1].sleeps - sleeps0[1],
            latency_ns,
        },
        window: Window::Consumed,
        events,
        sim_time_ns: final_t as f64 / 1000.0,
        totals: Totals {
            time_ps: final_t,
            published: s[0].count,
            consumed: s[1].count,
            busy_p_ps: s[0].busy,
            busy_c_ps: s[1].busy,
            notifications_p: s[0].notifications,
            notifications_c: s[1].notifications,
            sleeps_p: s[0].sleeps,
            sleeps_c: s[1].sleeps,
            latency_sum_ps: latency_sum,
        },
        work_ns: Some(per(work0, work_sum)),
        self_check_p: s[0].ctl.check_stats(),
        self_check_c: s[1].ctl.check_stats(),
    })
}
