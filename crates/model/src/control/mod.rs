//! The strategies' decisions, one state machine per party: what to do when
//! the party cannot go on (spin, timed sleep, block), whether to pause
//! between two messages, and what it learns when a wait ends. Pure logic
//! over a clock in picoseconds, so the simulator runs exactly what a real
//! party would (`docs/control.md` for the rules and for kicklab's
//! `adaptive`). What does not live here:
//! carrying the actions out (the simulator's event loop, the ring's waits).

mod adaptive;
mod check;
mod tail;

use crate::params::{Params, Party};
use crate::strategy::{Estimator, WaitMode, Window, DEFAULT_LATENCY_NS};
use crate::time::to_ps;
use adaptive::Adaptive;
pub use check::CheckStats;
use check::{Check, Pick};

/// What a party can see when it decides: its clock and the ring's indices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    /// Now [ps].
    pub now: u64,
    /// Slots in the ring.
    pub len: u64,
    /// Messages published so far.
    pub published: u64,
    /// Messages consumed (freed) so far.
    pub consumed: u64,
}

impl View {
    /// Messages in the ring, published and not yet freed.
    pub fn occupancy(&self) -> u64 {
        self.published - self.consumed
    }
}

/// One step of a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Spin until the condition holds or until the deadline [ps] (`None`:
    /// no deadline). Busy all the while; never kicked.
    Spin(Option<u64>),
    /// Timed sleep until [ps]; pays S on waking, then re-checks. Never
    /// kicked.
    Nap(u64),
    /// Register for a kick and sleep; pays S when woken.
    Block,
    /// A pause between messages ([`Controller::after_work`] only): register
    /// for a kick once the peer has brought this many slots free (a
    /// producer) or messages queued (a consumer), and sleep once; pays S
    /// when woken, and goes on whatever it finds. The peer pays the kick.
    BlockUntil(u32),
    /// A wait ([`Controller::wait`] only): register for a kick once the
    /// peer has brought this many messages queued (a consumer) or slots
    /// free (a producer), and sleep until kicked or until the deadline
    /// [ps], whichever comes first. Pays S when kicked; when the deadline
    /// ends it, it is withdrawn and pays a nap's wake-up (then tell
    /// [`Controller::woke`]). Where the waiter cannot sleep on its
    /// notifier with a timeout, a nap until the deadline does the same
    /// job without the kick.
    TimedBlock(u32, u64),
}

/// How a wait ended, for the strategies that learn from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Episode {
    /// When the party first found it could not go on [ps].
    pub start: u64,
    /// When it could go on again [ps].
    pub end: u64,
    /// How long it was blocked, from registering to being woken [ps], if
    /// it blocked.
    pub blocked: Option<u64>,
}

/// One party's strategy, running.
#[derive(Debug, Clone)]
pub struct Controller {
    state: State,
}

#[derive(Debug, Clone)]
enum State {
    Notify,
    Poll,
    Spin {
        budget: u64,
    },
    Sleep {
        period: u64,
    },
    HostHaltPoll {
        w: WindowPs,
        window: u64,
    },
    GuestHaltpoll {
        w: WindowPs,
        limit: u64,
        timed_out: bool,
        block_next: bool,
    },
    Hybrid {
        est: Estimator,
        recent: [u64; HYBRID_WINDOW],
        seen: usize,
        min: u64,
    },
    Defer {
        timeout: u64,
        count: u32,
        left: u32,
    },
    Adaptive(Box<Adaptive>),
    /// `adaptive` with its self-check: the planner or the fallback, as
    /// the check says.
    Checked(Box<Checked>),
}

#[derive(Debug, Clone)]
struct Checked {
    planner: Adaptive,
    fallback: Controller,
    check: Check,
}

/// What `adaptive`'s self-check falls back to: NAPI-style deferral at
/// its defaults (`docs/control.md`).
pub const FALLBACK: &str = "defer";

/// Episodes `hybrid:mean` averages over.
const HYBRID_WINDOW: usize = 16;

#[derive(Debug, Clone, Copy)]
struct WindowPs {
    max: u64,
    grow: f64,
    start: u64,
    shrink: f64,
}

impl WindowPs {
    fn of(w: Window) -> WindowPs {
        WindowPs {
            max: to_ps(w.max_ns),
            grow: w.grow,
            start: to_ps(w.start_ns),
            shrink: w.shrink,
        }
    }
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    fn times(v: u64, f: f64) -> u64 {
        (v as f64 * f) as u64
    }
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    fn shrunk(&self, v: u64) -> u64 {
        if self.shrink == 0.0 {
            0
        } else {
            (v as f64 / self.shrink) as u64
        }
    }
}

impl Controller {
    /// `mode` for `party` of the pair `params` (the strategies that plan
    /// use the means of its costs, as a calibration profile gives them);
    /// `latency_ns` is the bound of an `adaptive` without its own.
    pub fn new(
        mode: WaitMode,
        party: Party,
        params: &Params,
        latency_ns: Option<f64>,
    ) -> Controller {
        let state = match mode {
            WaitMode::Notify | WaitMode::Coalesce { .. } => State::Notify,
            WaitMode::Poll => State::Poll,
            WaitMode::Spin { budget_ns } => State::Spin {
                budget: to_ps(budget_ns),
            },
            WaitMode::Sleep { period_ns } => State::Sleep {
                period: to_ps(period_ns).max(1),
            },
            WaitMode::HostHaltPoll(w) => State::HostHaltPoll {
                w: WindowPs::of(w),
                window: 0,
            },
            WaitMode::GuestHaltpoll(w) => State::GuestHaltpoll {
                w: WindowPs::of(w),
                limit: 0,
                timed_out: false,
                block_next: false,
            },
            WaitMode::Hybrid(est) => State::Hybrid {
                est,
                recent: [0; HYBRID_WINDOW],
                seen: 0,
                min: u64::MAX,
            },
            WaitMode::Defer { timeout_ns, count } => State::Defer {
                timeout: to_ps(timeout_ns).max(1),
                count,
                left: count,
            },
            WaitMode::Adaptive {
                latency_ns: own,
                check,
            } => {
                let planner = Adaptive::new(
                    party,
                    params,
                    own.or(latency_ns).unwrap_or(DEFAULT_LATENCY_NS),
                );
                if check {
                    let fallback = WaitMode::parse(FALLBACK).expect("the fallback parses");
                    let bound = planner.bound();
                    State::Checked(Box::new(Checked {
                        planner,
                        fallback: Controller::new(fallback, party, params, None),
                        check: Check::new(party, bound),
                    }))
                } else {
                    State::Adaptive(Box::new(planner))
                }
            }
        };
        Controller { state }
    }

    /// For a waiter that cannot sleep on its notifier with a timeout (a
    /// guest, whose VMM would take the deadline as a nap): the strategy
    /// never asks for an [`Action::TimedBlock`].
    #[must_use]
    pub fn without_timed_blocks(mut self) -> Controller {
        match &mut self.state {
            State::Adaptive(a) => a.timed_blocks = false,
            State::Checked(c) => c.planner.timed_blocks = false,
            _ => {}
        }
        self
    }

    /// What `adaptive`'s self-check did so far; `None` for every other
    /// strategy, and for `adaptive:check=off`.
    pub fn check_stats(&self) -> Option<CheckStats> {
        match &self.state {
            State::Checked(c) => Some(c.check.stats()),
            _ => None,
        }
    }

    /// The party cannot go on at `v.now`: the next step. `first` is true
    /// when this starts an episode (at `start`), false when a spin ran out
    /// or a timed sleep ended with the condition still false.
    pub fn wait(&mut self, v: &View, start: u64, first: bool) -> Action {
        let now = v.now;
        match &mut self.state {
            State::Notify => Action::Block,
            State::Poll => Action::Spin(None),
            State::Spin { budget } => {
                if first {
                    Action::Spin(Some(start + *budget))
                } else {
                    Action::Block
                }
            }
            State::Sleep { period } => Action::Nap(now + *period),
            State::HostHaltPoll { window, .. } => {
                if first && *window > 0 {
                    Action::Spin(Some(start + *window))
                } else {
                    Action::Block
                }
            }
            State::GuestHaltpoll {
                limit,
                timed_out,
                block_next,
                ..
            } => {
                if first && !*block_next && *limit > 0 {
                    Action::Spin(Some(start + *limit))
                } else {
                    if !first {
                        // The spin ran out: this episode and the next block.
                        *timed_out = true;
                    }
                    Action::Block
                }
            }
            State::Hybrid {
                est,
                recent,
                seen,
                min,
            } => {
                if !first || *seen == 0 {
                    return Action::Spin(None);
                }
                let guess = match est {
                    Estimator::Mean => {
                        let n = (*seen).min(HYBRID_WINDOW);
                        recent[..n].iter().sum::<u64>() / n as u64
                    }
                    Estimator::Min => *min,
                };
                if guess / 2 == 0 {
                    Action::Spin(None)
                } else {
                    Action::Nap(now + guess / 2)
                }
            }
            State::Defer { timeout, left, .. } => {
                if !first {
                    *left = left.saturating_sub(1);
                }
                if *left > 0 {
                    Action::Nap(now + *timeout)
                } else {
                    Action::Block
                }
            }
            State::Adaptive(a) => a.wait(v, start, first),
            State::Checked(c) => c.wait(v, start, first),
        }
    }

    /// The episode `e` ended: learn from it.
    pub fn done(&mut self, v: &View, e: Episode) {
        let t = e.end - e.start;
        match &mut self.state {
            State::HostHaltPoll { w, window } => {
                if t <= *window {
                } else if t > w.max {
                    *window = w.shrunk(*window);
                } else if *window < w.max && t < w.max {
                    *window = w.max.min(WindowPs::times(*window, w.grow).max(w.start));
                }
            }
            State::GuestHaltpoll {
                w,
                limit,
                timed_out,
                block_next,
            } => {
                *block_next = std::mem::take(timed_out);
                if let Some(b) = e.blocked {
                    if *limit < b && b <= w.max {
                        *limit = w.max.min(w.start.max(WindowPs::times(*limit, w.grow)));
                    } else if b > w.max {
                        *limit = w.shrunk(*limit);
                    }
                }
            }
            State::Hybrid {
                recent, seen, min, ..
            } => {
                recent[*seen % HYBRID_WINDOW] = t;
                *seen += 1;
                *min = (*min).min(t);
            }
            State::Defer { count, left, .. } => *left = *count,
            State::Adaptive(a) => a.done(v, e),
            State::Checked(c) => c.done(v, e),
            State::Notify | State::Poll | State::Spin { .. } | State::Sleep { .. } => {}
        }
    }

    /// The party finished a message whose work took `work` [ps], and `cached`
    /// is the ring as its own index and its last reading of the peer's
    /// show it: whether [`Controller::after_work`] needs a fresh view (the
    /// peer's index re-read), or [`Controller::own_work`] will do.
    ///
    /// Reading the peer's index pulls the cache line the peer writes after
    /// every message, which slows the peer, the slower party. A stale
    /// view overstates a producer's occupancy (the consumer only moves
    /// on), so `adaptive`'s producer re-reads only once the stale view
    /// reaches its pause mark, right after a kicked pause (to learn what
    /// its wake-up used), and at least every 16 messages to follow the
    /// peer's pace; its consumer decides nothing after a message and
    /// re-reads every 16. Every other strategy decides nothing here.
    pub fn needs_fresh(&mut self, cached: &View) -> bool {
        match &mut self.state {
            State::Adaptive(a) => a.needs_fresh(cached),
            State::Checked(c) => c.needs_fresh(cached),
            _ => false,
        }
    }

    /// The party finished a message whose work took `work` [ps], and
    /// [`Controller::needs_fresh`] said no: its own pace is all there is to
    /// learn.
    pub fn own_work(&mut self, work: u64) {
        match &mut self.state {
            State::Adaptive(a) => a.own_work(work),
            State::Checked(c) => c.planner.own_work(work),
            _ => {}
        }
    }

    /// The party finished a message (published or freed) whose work took
    /// `work` [ps]: a pause before the next one, if any (`Spin` with a
    /// deadline, `Nap`, or `BlockUntil`).
    pub fn after_work(&mut self, v: &View, work: u64) -> Option<Action> {
        match &mut self.state {
            State::Adaptive(a) => a.after_work(v, Some(work)),
            State::Checked(c) => c.after_work(v, Some(work)),
            _ => None,
        }
    }

    /// [`Controller::after_work`] for a message whose work was not timed
    /// (a party that times one in several): the estimate of its own work
    /// stays as it is.
    pub fn after_untimed(&mut self, v: &View) -> Option<Action> {
        match &mut self.state {
            State::Adaptive(a) => a.after_work(v, None),
            State::Checked(c) => c.after_work(v, None),
            _ => None,
        }
    }

    /// A nap that was to end at `planned` [ps] ended with the party running
    /// again at `now` (or a [`Action::TimedBlock`] that its deadline ended):
    /// what a timed sleep really costs it (the model's S of a nap), which
    /// `adaptive` learns.
    pub fn woke(&mut self, planned: u64, now: u64) {
        match &mut self.state {
            State::Adaptive(a) => a.woke(planned, now),
            State::Checked(c) => c.woke(planned, now),
            _ => {}
        }
    }

    /// For a party that consults its controller only at its pause mark (a
    /// guest, whose every consultation is an exit): it published with the
    /// ring at or above [`Controller::pause_mark`], and `v` is the ring
    /// now, which may have drained while it exited. `work` is its own work
    /// per message since its last consultation where it ran long enough to
    /// time it (`None`: the estimate stays as it is); `kick`: whoever
    /// carries out the pause can also block until the peer's kick
    /// ([`Action::BlockUntil`]; then tell [`Controller::resumed`] what it
    /// found on waking). Decides as [`Controller::after_work`] with the
    /// mark taken as reached.
    pub fn at_pause_mark(&mut self, v: &View, work: Option<u64>, kick: bool) -> Option<Action> {
        match &mut self.state {
            State::Adaptive(a) => {
                if let Some(w) = work {
                    a.own_work(w);
                }
                a.observe(v);
                a.pause_action(v, true, kick)
            }
            State::Checked(c) => c.at_pause_mark(v, work, kick),
            _ => None,
        }
    }

    /// A party that paused until its peer's kick ([`Action::BlockUntil`])
    /// is woken, finding the ring at `v` before it runs again (a guest's
    /// VMM, which sees the ring only then; one that consults
    /// [`Controller::after_work`] after every message learns there). What
    /// the wake-up used of the margin so far is a lower bound on what it
    /// will have used once the party publishes again (the guest has yet to
    /// be entered), so `adaptive` learns it only where it exceeds its
    /// estimate.
    pub fn resumed(&mut self, v: &View) {
        match &mut self.state {
            State::Adaptive(a) => {
                a.observe(v);
                a.learn_kick_wake_at_least(v);
            }
            State::Checked(c) => {
                c.check.settle_pause(v, c.planner.nap_cost());
                c.planner.observe(v);
                c.planner.learn_kick_wake_at_least(v);
            }
            _ => {}
        }
    }

    /// The occupancy below which [`Controller::after_work`] would not
    /// pause now (`None`: it would not pause at any): a party that cannot
    /// consult its controller after every message (a guest, whose every
    /// consultation is an exit) asks only once the ring holds this many.
    pub fn pause_mark(&self, v: &View) -> Option<u64> {
        match &self.state {
            State::Adaptive(a) => a.pause_mark(v),
            State::Checked(c) => match c.check.running() {
                Pick::Planner => c.planner.pause_mark(v),
                Pick::Fallback => None,
            },
            _ => None,
        }
    }

    /// Observes the ring at a point where the party is not deciding
    /// anything (adaptive estimators only).
    pub fn observe(&mut self, v: &View) {
        match &mut self.state {
            State::Adaptive(a) => a.observe(v),
            State::Checked(c) => {
                c.planner.observe(v);
                c.consult(v);
            }
            _ => {}
        }
    }
}

/// Each call routed to what the check says runs; the planner watches the
/// ring and its own pace all the while, so that a trial after the
/// fallback starts from what is true now.
impl Checked {
    fn consult(&mut self, v: &View) -> Pick {
        self.check.consult(v, self.planner.nap_cost())
    }

    fn wait(&mut self, v: &View, start: u64, first: bool) -> Action {
        // What runs changes only between waits.
        let pick = if first {
            self.consult(v)
        } else {
            self.check.running()
        };
        let a = match pick {
            Pick::Planner => self.planner.wait(v, start, first),
            Pick::Fallback => {
                self.planner.observe(v);
                self.fallback.wait(v, start, first)
            }
        };
        self.check.issued(v.now, Some(a));
        a
    }

    fn done(&mut self, v: &View, e: Episode) {
        match self.check.running() {
            Pick::Planner => self.planner.done(v, e),
            Pick::Fallback => self.fallback.done(v, e),
        }
        self.check.done(e);
        self.consult(v);
    }

    fn needs_fresh(&mut self, cached: &View) -> bool {
        if self.check.due(cached) {
            return true;
        }
        match self.check.running() {
            Pick::Planner => self.planner.needs_fresh(cached),
            Pick::Fallback => false,
        }
    }

    fn after_work(&mut self, v: &View, work: Option<u64>) -> Option<Action> {
        match self.consult(v) {
            Pick::Planner => {
                let a = self.planner.after_work(v, work);
                self.check.issued(v.now, a);
                a
            }
            Pick::Fallback => {
                if let Some(w) = work {
                    self.planner.own_work(w);
                }
                self.planner.observe(v);
                None
            }
        }
    }

    fn woke(&mut self, planned: u64, now: u64) {
        match self.check.running() {
            Pick::Planner => self.planner.woke(planned, now),
            Pick::Fallback => self.fallback.woke(planned, now),
        }
        self.check.woke(planned);
    }

    fn at_pause_mark(&mut self, v: &View, work: Option<u64>, kick: bool) -> Option<Action> {
        if let Some(w) = work {
            self.planner.own_work(w);
        }
        self.planner.observe(v);
        match self.consult(v) {
            Pick::Planner => {
                let a = self.planner.pause_action(v, true, kick);
                self.check.issued(v.now, a);
                a
            }
            Pick::Fallback => None,
        }
    }
}

/// Notifier-side coalescing of `mode` as (n, t [ps]), `None` for plain
/// notifications. A kick is due once `n` messages (or slots) are pending or
/// `t` has passed since the first pending one; `n` is capped at the ring's
/// length so that a full ring always kicks.
pub fn coalescing(mode: WaitMode, len: u32) -> Option<(u64, u64)> {
    match mode {
        WaitMode::Coalesce { n, t_ns } if n > 1 => Some((u64::from(n.min(len)), to_ps(t_ns))),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
