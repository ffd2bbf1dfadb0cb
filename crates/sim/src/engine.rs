//! The event loop: the model's rules (`docs/model.md`) to the letter,
//! specialised to two parties.
//!
//! Each party has exactly one pending event, so the "priority queue" is a
//! comparison of two keys. A key is `(time_ps << 2) | class`, where class 0
//! is the end of a work interval (a publish or a free), class 1 a
//! reserve/claim attempt (after a notification, after a start-up, when a
//! spinning party sees its condition come true) or a spin deadline, and
//! class 2 an attempt that yielded. Ordering by key gives the tie rule of
//! the semantics: at equal times every publish and free happens before any
//! attempt. Among equal keys P goes first.
//!
//! Work that takes no time publishes or frees at the instant of its
//! attempt, and the rule still holds: an attempt that finds nothing to take
//! while the peer has an attempt at the same instant yields to it (class 2)
//! and fails only if it finds nothing after that one has run (and
//! published or freed, if its work took no time). So whatever the order of
//! two attempts at an instant, a message published then is seen by a claim
//! then, and a slot freed then by a reserve then. (With work that takes
//! time nothing of this changes the outcome: a reserve and a claim touch
//! different counters.)
//!
//! An attempt that follows a publish or free is done inline, without a
//! second event, unless the peer has a publish/free pending at the same
//! instant (then the attempt waits for it as an event of its own): this
//! halves the events per message and changes nothing in the order. Where
//! C's claim would follow a free and P has an attempt at the same instant,
//! P's reserve is done first, inline, yielding to the claim if it fails.
//!
//! What does not live here: a run's configuration, result and limits
//! (`config.rs`), sampling (`sampler.rs`), sweeps (`sweep.rs`).

use hdrhistogram::Histogram;
use kicklab_model::{to_ps, IdleScale, Latency, Party, Rates, WaitMode};

use crate::config::{
    SimConfig, SimError, SimResult, Start, Totals, Window, MAX_LEN, MAX_MESSAGES, MAX_TIME_PS,
};
use crate::sampler::Sampler;

/// No pending event.
const NEVER: u64 = u64::MAX;

/// What a party is doing; its pending event follows from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// In W; the event is the publish (P) or free (C), class 0.
    Work,
    /// In N or S, or just saw its condition come true while spinning; the
    /// event is a reserve/claim attempt, class 1.
    Attempt,
    /// An attempt that failed while the peer had an attempt at the same
    /// instant, held until that one has run (and published or freed at
    /// that instant, if its work takes no time); class 2. If it fails
    /// again, the party waits.
    Yielded,
    /// Spinning with a deadline (spin-then-sleep); the event is the
    /// deadline, class 1.
    SpinUntil,
    /// Spinning with no deadline (poll); no event.
    Spin,
    /// Asleep; no event until the peer notifies.
    Sleep,
}

#[derive(Debug, Clone, Copy)]
struct Side {
    phase: Phase,
    /// Time of the pending event [ps], or [`NEVER`].
    t: u64,
    /// When the current spin began [ps].
    spin_since: u64,
    /// When it last went to sleep [ps].
    asleep_since: u64,
    /// Busy time so far [ps]: W, N, S added when each interval begins,
    /// spin added when it ends.
    busy: u64,
    /// Length of the busy interval booked in `busy` that ends at `t` (a W,
    /// an N, or an S after a wake-up) [ps], for [`Side::busy_at`].
    booked: u64,
    /// Notifications sent to the peer.
    notifications: u64,
    /// Times it went to sleep.
    sleeps: u64,
    /// Messages published (P) or freed (C).
    count: u64,
    /// Spin budget [ps] (for [`WaitMode::Spin`]).
    budget: u64,
    mode: WaitMode,
}

impl Side {
    fn new(mode: WaitMode) -> Side {
        let budget = match mode {
            WaitMode::Spin { budget_ns } => to_ps(budget_ns),
            _ => 0,
        };
        Side {
            phase: Phase::Attempt,
            t: 0,
            spin_since: 0,
            asleep_since: 0,
            busy: 0,
            booked: 0,
            notifications: 0,
            sleeps: 0,
            count: 0,
            budget,
            mode,
        }
    }

    #[inline(always)]
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
    #[inline(always)]
    fn attempts_at(&self, now: u64) -> bool {
        self.phase == Phase::Attempt && self.t == now
    }

    /// An attempt at `now` found nothing to take: yield to the peer's
    /// attempt at the same instant if `peer_attempts` and this one has not
    /// yielded yet, else wait according to the mode.
    #[inline(always)]
    fn fail(&mut self, now: u64, peer_attempts: bool) {
        if peer_attempts && self.phase != Phase::Yielded {
            self.phase = Phase::Yielded;
            self.t = now;
        } else {
            self.wait(now);
        }
    }

    #[inline(always)]
    fn spinning(&self) -> bool {
        matches!(self.phase, Phase::Spin | Phase::SpinUntil)
    }

    /// Busy time spent up to `at` (<= its pending event): `busy` less the
    /// part of the booked interval still ahead, plus a spin in progress.
    /// What a window that ends at `at` charges it.
    #[inline(always)]
    fn busy_at(&self, at: u64) -> u64 {
        match self.phase {
            Phase::Work | Phase::Attempt | Phase::Yielded => {
                self.busy - self.t.saturating_sub(at).min(self.booked)
            }
            Phase::Spin | Phase::SpinUntil => self.busy + (at - self.spin_since),
            Phase::Sleep => self.busy,
        }
    }

    /// Books a busy interval of `len` that ends at its next event, `t`.
    #[inline(always)]
    fn book(&mut self, len: u64) {
        self.busy += len;
        self.booked = len;
    }

    /// Cannot start at `now`: wait according to the mode.
    #[inline(always)]
    fn wait(&mut self, now: u64) {
        match self.mode {
            WaitMode::Notify => self.sleep(now),
            WaitMode::Poll => {
                self.phase = Phase::Spin;
                self.spin_since = now;
                self.t = NEVER;
            }
            WaitMode::Spin { .. } => {
                self.phase = Phase::SpinUntil;
                self.spin_since = now;
                self.t = now + self.budget;
            }
            _ => unreachable!("the other strategies run in control.rs"),
        }
    }

    #[inline(always)]
    fn sleep(&mut self, now: u64) {
        self.phase = Phase::Sleep;
        self.t = NEVER;
        self.sleeps += 1;
        self.asleep_since = now;
    }

    /// The condition came true at `now` while spinning: attempt at once.
    #[inline(always)]
    fn stop_spinning(&mut self, now: u64) {
        self.busy += now - self.spin_since;
        self.phase = Phase::Attempt;
        self.t = now;
    }
}

/// A point of the run where the measurement window may begin or end.
#[derive(Debug, Clone, Copy, Default)]
struct Snapshot {
    t: u64,
    published: u64,
    busy_p: u64,
    busy_c: u64,
    notif_p: u64,
    notif_c: u64,
    sleeps_p: u64,
    sleeps_c: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Span {
    first: Option<Snapshot>,
    last: Option<Snapshot>,
}

impl Span {
    #[inline(never)]
    fn mark(&mut self, s: Snapshot) {
        if self.first.is_none() {
            self.first = Some(s);
        }
        self.last = Some(s);
    }
    fn messages(&self) -> u64 {
        match (self.first, self.last) {
            (Some(a), Some(b)) => b.published - a.published,
            _ => 0,
        }
    }
}

/// Records `n` latencies of `v` ns. The histogram auto-resizes to any value;
/// counts saturate at `u32::MAX` per bucket rather than fail.
#[inline(never)]
fn record(hist: &mut Histogram<u32>, v: u64, n: u32) {
    if n > 0 && hist.record_n(v, n).is_err() {
        // Only a bucket count overflow gets here: saturate it.
        hist.saturating_record_n(v, n);
    }
}

/// The latency summary of a run: p50 and p99 from `hist` (whole ns, 3
/// significant digits: a bucket's highest value, held to the largest
/// latency, so that a run whose latencies are all equal reports that
/// value), the largest `max_ps` and the mean from the sum `sum_ps`, both
/// exact.
#[allow(clippy::cast_precision_loss)]
pub(crate) fn latency_of(hist: &Histogram<u32>, max_ps: u64, sum_ps: u128) -> Latency {
    let max = max_ps as f64 / 1000.0;
    Latency {
        p50: (hist.value_at_quantile(0.5) as f64).min(max),
        p99: (hist.value_at_quantile(0.99) as f64).min(max),
        max,
        mean: sum_ps as f64 / 1000.0 / hist.len().max(1) as f64,
    }
}

/// Indices of the cost streams (V_P and V_C are drawn only when set).
pub(crate) const W_P: usize = 0;
pub(crate) const W_C: usize = 1;
pub(crate) const N_P: usize = 2;
pub(crate) const N_C: usize = 3;
pub(crate) const S_P: usize = 4;
pub(crate) const S_C: usize = 5;
pub(crate) const V_P: usize = 6;
pub(crate) const V_C: usize = 7;

pub(crate) struct Costs {
    pub(crate) samplers: [Sampler; 8],
    pub(crate) consts: [u64; 8],
    /// Whether V_P, V_C are set (else they equal the drawn N).
    pub(crate) vis: [bool; 2],
    /// How S_P, S_C scale with the sleeper's idle time, where set.
    pub(crate) idle_scale: [Option<IdleScale>; 2],
    /// What P's and C's naps cost, where set (`SimConfig::nap`; only the
    /// controllers' loop naps).
    pub(crate) nap: [Option<Sampler>; 2],
}

impl Costs {
    #[inline(always)]
    pub(crate) fn draw<const CONST: bool>(&mut self, i: usize) -> u64 {
        if CONST {
            self.consts[i]
        } else {
            self.samplers[i].draw_ps()
        }
    }

    /// A start-up cost (stream `s_i`, S_P or S_C) after `idle_ps` asleep
    /// (from falling asleep to becoming runnable).
    #[inline(always)]
    pub(crate) fn start_up<const CONST: bool>(&mut self, s_i: usize, idle_ps: u64) -> u64 {
        let s = self.draw::<CONST>(s_i);
        match &self.idle_scale[s_i - S_P] {
            None => s,
            #[allow(
                clippy::cast_precision_loss,
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss
            )]
            Some(scale) => (s as f64 * scale.factor(idle_ps as f64 / 1000.0)).round() as u64,
        }
    }

    /// A notification: its cost `n` (stream `n_i`) and when the peer sees
    /// it, `v <= n` (stream `v_i`, or `n` itself where V is unset).
    #[inline(always)]
    pub(crate) fn notification<const CONST: bool>(&mut self, n_i: usize, v_i: usize) -> (u64, u64) {
        let n = self.draw::<CONST>(n_i);
        let v = if self.vis[v_i - V_P] {
            self.draw::<CONST>(v_i).min(n)
        } else {
            n
        };
        (n, v)
    }
}

/// Checks a run's configuration: parameters, the queue's length, the
/// message count and the strategies.
pub(crate) fn check_config(cfg: &SimConfig) -> Result<(), SimError> {
    cfg.params.validate()?;
    if cfg.params.len > MAX_LEN {
        return Err(SimError::Params(kicklab_model::ParamError {
            param: kicklab_model::Param::Len,
            reason: format!(
                "the simulator holds at most {MAX_LEN} slots (it keeps each slot's publish time)"
            ),
        }));
    }
    if cfg.messages == 0 {
        return Err(SimError::NoMessages);
    }
    let total = u128::from(cfg.messages) + u128::from(cfg.warmup);
    if total > u128::from(MAX_MESSAGES) {
        return Err(SimError::TooManyMessages(total));
    }
    // Each party works its messages one after another, so the run lasts
    // at least every message's mean work on the slower side: past the
    // clock, refused before it runs rather than when the clock runs out.
    let slower = cfg.params.w_p.mean_ns().max(cfg.params.w_c.mean_ns());
    #[allow(clippy::cast_precision_loss)]
    if total as f64 * slower * kicklab_model::PS_PER_NS > MAX_TIME_PS as f64 {
        return Err(SimError::TimeOverflow);
    }
    for (party, mode) in [(Party::P, cfg.mode_p), (Party::C, cfg.mode_c)] {
        mode.check()
            .map_err(|reason| SimError::Mode { party, reason })?;
    }
    cfg.combine
        .check(cfg.params.len)
        .map_err(SimError::Combine)?;
    for (party, nap) in [(Party::P, cfg.nap[0]), (Party::C, cfg.nap[1])] {
        if let Some(cost) = nap {
            let ns = cost.mean_ns();
            if cost.check().is_err() || !(ns.is_finite() && (0.0..=1e9).contains(&ns)) {
                return Err(SimError::Nap {
                    party,
                    ns: format!("{cost}"),
                });
            }
        }
    }
    Ok(())
}

/// The eight cost streams of a run, their constant values (0 where
/// random), and whether all are constant.
pub(crate) fn samplers(cfg: &SimConfig) -> ([Sampler; 8], [u64; 8], bool) {
    let p = &cfg.params;
    let samplers = [
        p.w_p,
        p.w_c,
        p.n_p,
        p.n_c,
        p.s_p,
        p.s_c,
        p.vis_p(),
        p.vis_c(),
    ]
    .iter()
    .zip(0u64..)
    .map(|(c, i)| Sampler::new(*c, cfg.seed, i))
    .collect::<Vec<_>>();
    let samplers: [Sampler; 8] = samplers.try_into().expect("eight costs");
    let consts = std::array::from_fn(|i| samplers[i].constant_ps().unwrap_or(0));
    let all_const = samplers.iter().all(|s| s.constant_ps().is_some());
    (samplers, consts, all_const)
}

/// The fast loop: one simulation of the basic strategies (notify, poll,
/// spin) without send combining; [`crate::simulate`] sends every other
/// configuration to the controllers' loop.
pub(crate) fn simulate_basic(cfg: &SimConfig) -> Result<SimResult, SimError> {
    check_config(cfg)?;
    let (samplers, consts, all_const) = samplers(cfg);
    let p = &cfg.params;
    let mut costs = Costs {
        samplers,
        consts,
        vis: [p.v_p.is_some(), p.v_c.is_some()],
        idle_scale: cfg.idle_scale,
        nap: [None, None],
    };
    match (all_const, cfg.latency) {
        (true, true) => run::<true, true>(cfg, &mut costs),
        (true, false) => run::<true, false>(cfg, &mut costs),
        (false, true) => run::<false, true>(cfg, &mut costs),
        (false, false) => run::<false, false>(cfg, &mut costs),
    }
}

/// P's reserve attempt at `now`: a slot and the work of its message if
/// one is free, else P yields to C's attempt at this instant
/// (`c_attempts`) or waits by its mode ([`Side::fail`]).
#[inline(always)]
fn reserve<const CONST: bool>(
    pr: &mut Side,
    free: &mut u64,
    costs: &mut Costs,
    now: u64,
    c_attempts: bool,
) {
    if *free >= 1 {
        *free -= 1;
        let w = costs.draw::<CONST>(W_P);
        pr.book(w);
        pr.phase = Phase::Work;
        pr.t = now + w;
    } else {
        pr.fail(now, c_attempts);
    }
}

#[allow(clippy::too_many_lines, clippy::cast_precision_loss)]
fn run<const CONST: bool, const LAT: bool>(
    cfg: &SimConfig,
    costs: &mut Costs,
) -> Result<SimResult, SimError> {
    let prm = &cfg.params;
    let len = u64::from(prm.len);
    let (k_p, k_c) = (u64::from(prm.k_p), u64::from(prm.k_c));
    let warmup = cfg.warmup;
    let stop = warmup.saturating_add(cfg.messages);

    let mut pr = Side::new(cfg.mode_p);
    let mut co = Side::new(cfg.mode_c);
    // Queue state. used = L - free = reserved + avail + claimed.
    let mut free = len;
    let mut avail = 0u64;
    if cfg.start == Start::Full {
        (free, avail) = (0, len);
        pr.count = len;
        pr.sleep(0);
    }

    // Publish time of each message in flight, by message index mod L.
    let mut pub_time: Vec<u64> = if LAT {
        vec![0; prm.len as usize]
    } else {
        Vec::new()
    };
    let (mut pub_slot, mut con_slot) = (0usize, 0usize);
    let mut hist = Histogram::<u32>::new(3).expect("3 significant digits");
    let (mut run_value, mut run_len) = (0u64, 0u32);
    let mut latency_sum = 0u128;
    // The largest latency [ps] (the histogram knows only its bucket).
    let mut lat_max = 0u64;

    let (mut pc, mut cp) = (Span::default(), Span::default());
    // The per-message window: a full snapshot at the first measured publish,
    // then just (time, busy P, busy C) of the latest publish; the counters
    // are read at the end (P publishes nothing after its last publish).
    let mut msg_first: Option<Snapshot> = None;
    let mut msg_last = (0u64, 0u64, 0u64);
    let mut measuring = warmup == 0;
    // At the free that ends the warm-up (t = 0 without one).
    let mut warm_mark = Snapshot::default();
    let mut events = 0u64;

    let snapshot = |t: u64, pr: &Side, co: &Side| Snapshot {
        t,
        published: pr.count,
        busy_p: pr.busy_at(t),
        busy_c: co.busy_at(t),
        notif_p: pr.notifications,
        notif_c: co.notifications,
        sleeps_p: pr.sleeps,
        sleeps_c: co.sleeps,
    };

    let final_t;
    let mut clock = 0u64;
    loop {
        let (kp, kc) = (pr.key(), co.key());
        if kp == NEVER && kc == NEVER {
            return Err(SimError::Deadlock {
                t_ns: clock / 1000,
                free,
                avail,
            });
        }
        events += 1;
        if events.is_multiple_of(crate::stop::EVERY) && crate::stop::requested() {
            return Err(SimError::Stopped);
        }
        if kp <= kc {
            // ---------------------------------------------------------- P
            let now = pr.t;
            if now > MAX_TIME_PS {
                return Err(SimError::TimeOverflow);
            }
            clock = now;
            match pr.phase {
                Phase::Work => {
                    // Publish.
                    avail += 1;
                    pr.count += 1;
                    if LAT {
                        pub_time[pub_slot] = now;
                        pub_slot += 1;
                        if pub_slot == pub_time.len() {
                            pub_slot = 0;
                        }
                    }
                    if measuring {
                        if msg_first.is_none() {
                            msg_first = Some(snapshot(now, &pr, &co));
                        }
                        // (P's W ends now: nothing of it is ahead.)
                        msg_last = (now, pr.busy, co.busy_at(now));
                    }
                    if co.phase == Phase::Sleep {
                        if avail >= k_p {
                            if measuring {
                                pc.mark(snapshot(now, &pr, &co));
                            }
                            pr.notifications += 1;
                            let (n, v) = costs.notification::<CONST>(N_P, V_P);
                            let s = costs.start_up::<CONST>(S_C, now + v - co.asleep_since);
                            pr.book(n);
                            co.book(s);
                            pr.phase = Phase::Attempt;
                            pr.t = now + n;
                            co.phase = Phase::Attempt;
                            co.t = now + v + s;
                            continue;
                        }
                    } else if co.spinning() {
                        co.stop_spinning(now);
                    }
                    if kc == now << 2 {
                        // C frees at this same instant: reserve after it.
                        pr.phase = Phase::Attempt;
                        continue;
                    }
                }
                Phase::Attempt | Phase::Yielded => {}
                Phase::SpinUntil => {
                    // Deadline passed with the queue still full.
                    pr.busy += pr.budget;
                    pr.sleep(now);
                    continue;
                }
                Phase::Spin | Phase::Sleep => unreachable!("no event pending"),
            }
            let c_attempts = co.attempts_at(now);
            reserve::<CONST>(&mut pr, &mut free, costs, now, c_attempts);
        } else {
            // ---------------------------------------------------------- C
            let now = co.t;
            if now > MAX_TIME_PS {
                return Err(SimError::TimeOverflow);
            }
            clock = now;
            match co.phase {
                Phase::Work => {
                    // Free.
                    free += 1;
                    co.count += 1;
                    if LAT {
                        if measuring {
                            // In whole ns: 3 significant digits of a us-scale
                            // latency, and a counts array small enough to stay
                            // in cache (in ps every record was a cache miss).
                            let lat_ps = now - pub_time[con_slot];
                            latency_sum += u128::from(lat_ps);
                            lat_max = lat_max.max(lat_ps);
                            let v = (lat_ps + 500) / 1000;
                            // Runs of equal latencies (common with constant
                            // costs) are recorded once, with their count.
                            if v == run_value && run_len < u32::MAX {
                                run_len += 1;
                            } else {
                                // Auto-resizing: fails only on count overflow,
                                // which u32 runs of at most u32::MAX cannot cause
                                // in a u32 bucket that saturates.
                                record(&mut hist, run_value, run_len);
                                (run_value, run_len) = (v, 1);
                            }
                        }
                        con_slot += 1;
                        if con_slot == pub_time.len() {
                            con_slot = 0;
                        }
                    }
                    if co.count == warmup {
                        measuring = true;
                        // Counted in messages consumed, for the fallback
                        // window.
                        warm_mark = Snapshot {
                            published: co.count,
                            ..snapshot(now, &pr, &co)
                        };
                    }
                    if co.count >= stop {
                        final_t = now;
                        break;
                    }
                    if pr.phase == Phase::Sleep {
                        if free >= k_c {
                            if measuring {
                                cp.mark(snapshot(now, &pr, &co));
                            }
                            co.notifications += 1;
                            let (n, v) = costs.notification::<CONST>(N_C, V_C);
                            let s = costs.start_up::<CONST>(S_P, now + v - pr.asleep_since);
                            co.book(n);
                            pr.book(s);
                            co.phase = Phase::Attempt;
                            co.t = now + n;
                            pr.phase = Phase::Attempt;
                            pr.t = now + v + s;
                            continue;
                        }
                    } else if pr.spinning() {
                        pr.stop_spinning(now);
                    }
                    if kp == now << 2 {
                        // P publishes at this same instant: claim after it.
                        co.phase = Phase::Attempt;
                        continue;
                    }
                    if pr.attempts_at(now) {
                        // P attempts at this same instant, and P goes first
                        // among attempts: its reserve now, inline (C's claim
                        // follows at once, so a reserve that fails yields to
                        // it). A message it writes in no time is published
                        // at this instant too, before any claim (the tie
                        // rule): then claim after it.
                        events += 1;
                        reserve::<CONST>(&mut pr, &mut free, costs, now, true);
                        if pr.phase == Phase::Work && pr.t == now {
                            co.phase = Phase::Attempt;
                            continue;
                        }
                    }
                }
                Phase::Attempt | Phase::Yielded => {}
                Phase::SpinUntil => {
                    co.busy += co.budget;
                    co.sleep(now);
                    continue;
                }
                Phase::Spin | Phase::Sleep => unreachable!("no event pending"),
            }
            // Claim attempt at `now`.
            if avail >= 1 {
                avail -= 1;
                let w = costs.draw::<CONST>(W_C);
                co.book(w);
                co.phase = Phase::Work;
                co.t = now + w;
            } else {
                co.fail(now, pr.attempts_at(now));
            }
        }
    }

    let msg = Span {
        first: msg_first,
        last: msg_first.map(|_| Snapshot {
            t: msg_last.0,
            busy_p: msg_last.1,
            busy_c: msg_last.2,
            ..snapshot(final_t, &pr, &co)
        }),
    };
    // Whole rounds if there are enough of them in the window, else messages.
    let enough =
        |s: &Span| s.messages() > 0 && s.messages() * 2 >= cfg.messages.min(msg.messages().max(1));
    let (span, window) = if enough(&pc) {
        (pc, Window::RoundsPc)
    } else if enough(&cp) {
        (cp, Window::RoundsCp)
    } else {
        (msg, Window::Messages)
    };
    let (a, b, window) = match (span.first, span.last) {
        (Some(a), Some(b)) if b.published > a.published => (a, b, window),
        _ => {
            // Fewer than two publishes measured (a window of one message,
            // or P ran the queue full during the warm-up and published at
            // most once after it): from the free that ends the warm-up to
            // the last free, counted in messages consumed.
            let end = Snapshot {
                published: co.count,
                ..snapshot(final_t, &pr, &co)
            };
            (warm_mark, end, Window::Consumed)
        }
    };
    if run_len > 0 {
        record(&mut hist, run_value, run_len);
    }
    let n = (b.published - a.published) as f64;
    let per = |x: u64, y: u64| (y - x) as f64 / n / 1000.0;
    let latency_ns = (LAT && !hist.is_empty()).then(|| latency_of(&hist, lat_max, latency_sum));
    let e_p_ns = per(a.busy_p, b.busy_p);
    let e_c_ns = per(a.busy_c, b.busy_c);
    Ok(SimResult {
        rates: Rates {
            t_ns: per(a.t, b.t),
            e_ns: e_p_ns + e_c_ns,
            e_p_ns,
            e_c_ns,
            messages: b.published - a.published,
            notifications_p: b.notif_p - a.notif_p,
            notifications_c: b.notif_c - a.notif_c,
            sleeps_p: b.sleeps_p - a.sleeps_p,
            sleeps_c: b.sleeps_c - a.sleeps_c,
            latency_ns,
        },
        window,
        events,
        sim_time_ns: final_t as f64 / 1000.0,
        totals: Totals {
            time_ps: final_t,
            published: pr.count,
            consumed: co.count,
            busy_p_ps: pr.busy,
            busy_c_ps: co.busy,
            notifications_p: pr.notifications,
            notifications_c: co.notifications,
            sleeps_p: pr.sleeps,
            sleeps_c: co.sleeps,
            latency_sum_ps: latency_sum,
        },
        work_ns: None,
        self_check_p: None,
        self_check_c: None,
    })
}
