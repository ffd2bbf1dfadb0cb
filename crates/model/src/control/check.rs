//! `adaptive`'s self-check: what its planner's decisions cost on this
//! machine, measured as it runs, against a fallback that needs no estimate
//! (deferral at its defaults), and whichever pays is what the party runs.
//!
//! The planner sizes its sleeps from costs it estimates (a nap's wake-up,
//! a kick, the peer's pace). Where a machine's exits or timers cost more
//! than those estimates say, or vary more, its pauses can overshoot and
//! starve the slower party. The check does not try to find out why. A
//! trial runs the verdict so far (at first the planner), then the other
//! one, then the verdict again, an epoch of [`EPOCH`] messages each, and
//! weighs the other against each of the verdict's two epochs on the
//! pair's T (the clock over the consumer's progress), the latency bound
//! (the ring's 99th-percentile occupancy times T, by Little's law) and
//! the party's CPU (the clock less the time it slept, so a wake-up counts
//! as CPU, as the model's S does). A candidate that slows the pair by more
//! than [`T_MARGIN`] loses; between two that keep the pace, one that keeps
//! the latency bound beats one that does not (where both miss it, the one
//! plainly nearer wins); then the one with less CPU. Only where both
//! weighings agree is there a verdict: otherwise the workload or the
//! machine moved under the trial.
//!
//! A verdict changes at once where the loser was far behind on the pace,
//! and after two trials in a row otherwise. The verdict is tried again
//! soon after it changes and ever less often while it stands; a loser
//! plainly behind is cut short. One that slowed the pair far wins back on
//! the pace only (an epoch is too short to see a slow collapse), and a
//! pair that falls far behind the pace the verdict last showed calls a
//! trial early.
//!
//! Both parties check, in epochs of their own (the producer in epochs 4,
//! 5, 8, 9, .., the consumer in 2, 3, 6, 7, ..; see [`owner`]), so that
//! one party's trial does not move under the other's. Epochs count the
//! party's own messages, which both parties see alike to within the
//! ring's length. What does not live here: the planner (`adaptive.rs`),
//! the fallback (the anchors' strategies in `mod.rs`).

use super::{Action, Episode, View};
use crate::params::Party;

/// Messages in one epoch.
pub(super) const EPOCH: u64 = 1024;
/// A candidate whose T is more than this share above the other's slows
/// the pair.
const T_MARGIN: f64 = 0.06;
/// Where both miss the latency bound, latencies within this share of
/// each other are a tie.
const LATENCY_TIE: f64 = 0.1;
/// CPU within this share of the other's is a tie: the verdict stands.
const CPU_TIE: f64 = 0.03;
/// Pairs of own epochs between two trials: the first, and the most.
const INTERVAL_FIRST: u64 = 1;
const INTERVAL_MOST: u64 = 16;
/// A loser whose T was this many times the winner's is tried again four
/// times later, not twice; a trial this far behind is cut short.
const FAR_BEHIND: f64 = 1.25;
/// Looks at the ring kept per window for its 99th percentile; past this
/// many, every other one is dropped.
const LOOKS: usize = 4096;

/// Which of the two a party runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pick {
    /// kicklab's planner.
    Planner,
    /// The fallback.
    Fallback,
}

impl Pick {
    fn other(self) -> Pick {
        match self {
            Pick::Planner => Pick::Fallback,
            Pick::Fallback => Pick::Planner,
        }
    }
}

/// How the loser of a trial lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loss {
    /// By a margin that one trial may owe to chance.
    Narrow,
    /// Far behind on the pace: [`FAR_BEHIND`] times the other's T.
    Far,
    /// Cut short for filling the ring, at no better pace: tried again
    /// only after [`INTERVAL_MOST`] pairs.
    Late,
}

/// The party that may hold a trial in epoch `e`: pairs of epochs in
/// turn, the producer's from 4 on (0 and 1 are the start), the
/// consumer's from 2.
pub(super) fn owner(e: u64) -> Option<Party> {
    match e {
        0 | 1 => None,
        e if (e / 2) % 2 == 0 => Some(Party::P),
        _ => Some(Party::C),
    }
}

/// One epoch's outcome [ps]: the pair's time per message (the consumer's
/// progress, which a producer's filling or draining the ring does not
/// move), the party's CPU per message, and the latency of a message that
/// finds the ring as full as it was at the 99th percentile of the party's
/// looks at it (Little: occupancy x T).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Sample {
    pub t: f64,
    pub cpu: f64,
    pub latency: f64,
}

/// What one party's self-check did over a run: the epochs each of the
/// two ran in (counted at each epoch's start, warm-up included), and how
/// its trials ended. A trial that ends without a verdict (its two
/// weighings disagreed) changes nothing; one whose window started too late
/// in its epoch, or that saw too few messages, is dropped unjudged.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CheckStats {
    /// Epochs the planner ran in.
    pub epochs_planner: u64,
    /// Epochs the fallback ([`super::FALLBACK`]) ran in.
    pub epochs_fallback: u64,
    /// Trials that reached a verdict the same as the one before.
    pub kept: u64,
    /// Trials that reached a verdict against the one before (a narrow
    /// loss first sets a doubt; the second in a row changes the verdict).
    pub against: u64,
    /// Times the verdict changed.
    pub switched: u64,
    /// Trials whose two weighings disagreed.
    pub undecided: u64,
    /// Of the trials kept, those whose loser was cut short (far behind,
    /// or filling the ring past the bound).
    pub cut_short: u64,
    /// Trials dropped unjudged.
    pub dropped: u64,
    /// Of the trials with a verdict (kept or against), those the pace
    /// decided (one slowed the pair by more than 6%), those the latency
    /// bound decided, and those the CPU decided (or a tie, which keeps
    /// the verdict).
    pub on_pace: u64,
    /// See `on_pace`.
    pub on_latency: u64,
    /// See `on_pace`.
    pub on_cpu: u64,
}

/// What decided one weighing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Basis {
    Pace,
    Latency,
    Cpu,
}

/// The latency [ps] past which a loser whose verdict showed `kept`
/// loses on latency (unless it wins on the pace): the bound where the
/// verdict kept it, else the verdict's latency and its tie.
fn latency_limit(kept: &Sample, bound: f64) -> f64 {
    if kept.latency <= bound {
        bound
    } else {
        kept.latency / (1.0 - LATENCY_TIE)
    }
}

/// The window being measured: from a consult near an epoch's start.
#[derive(Debug, Clone, Copy)]
struct Window {
    now: u64,
    count: u64,
    consumed: u64,
    slept: u64,
    /// Looks at the ring, and those that found it past the latency a
    /// trial's loser may reach.
    looked: u64,
    past: u64,
}

/// A trial: the verdict in the first epoch of one own pair, the loser in
/// the second, the verdict again in the first of the next own pair. The
/// loser is weighed against each of the verdict's two samples, and only
/// where both say the same is there a verdict (the workload and the
/// machine held still, or moved less than the gap between the two).
#[derive(Debug, Clone, Copy)]
struct Trial {
    /// The verdict's samples before and after the loser's, and the
    /// loser's.
    before: Option<Sample>,
    loser: Option<Sample>,
}

/// The self-check of one party.
#[derive(Debug, Clone)]
pub(super) struct Check {
    party: Party,
    /// The latency bound [ps]: a candidate that keeps it beats one that
    /// does not, where both keep the pace.
    bound: f64,
    /// The epoch the party is in, as of its last consult.
    epoch: u64,
    /// What runs now.
    running: Pick,
    /// The window being measured (`None`: this epoch measures nothing).
    window: Option<Window>,
    /// Time asleep since the start [ps]: naps as planned, blocks as long
    /// as they blocked, kicked pauses less their wake-up.
    slept: u64,
    /// A timed block's start, until its end says how it ended.
    timed_from: Option<u64>,
    /// A kicked pause's start, until the party's next consult.
    pause_from: Option<u64>,
    /// The verdict.
    chosen: Pick,
    /// The trial under way, if any.
    trial: Option<Trial>,
    /// The own pair of epochs at which the next trial is due, and the
    /// interval in pairs.
    next_trial: u64,
    interval: u64,
    /// Whether the last trial went against the verdict, narrowly.
    doubt: bool,
    /// The one that last lost a trial far behind on the pace: it wins
    /// back on the pace only.
    barred: Option<Pick>,
    /// The pair's time per message [ps] when the verdict was last
    /// confirmed, and where the current epoch began (clock, consumed):
    /// a pair far slower than that calls a trial early.
    pace: Option<f64>,
    epoch_start: Option<(u64, u64)>,
    /// The ring's occupancy at the window's looks so far.
    looks: Vec<u32>,
    /// What the check did so far.
    stats: CheckStats,
    /// Whether the party has consulted yet (its first epoch is counted
    /// then).
    consulted: bool,
}

impl Check {
    pub(super) fn new(party: Party, bound: f64) -> Check {
        Check {
            party,
            bound,
            epoch: 0,
            running: Pick::Planner,
            window: None,
            slept: 0,
            timed_from: None,
            pause_from: None,
            chosen: Pick::Planner,
            trial: None,
            next_trial: 0,
            interval: INTERVAL_FIRST,
            doubt: false,
            barred: None,
            pace: None,
            epoch_start: None,
            looks: Vec::new(),
            stats: CheckStats::default(),
            consulted: false,
        }
    }

    /// What runs now.
    pub(super) fn running(&self) -> Pick {
        self.running
    }

    /// What the check did so far.
    pub(super) fn stats(&self) -> CheckStats {
        self.stats
    }

    /// The verdict so far (the planner until a trial says otherwise).
    #[cfg(test)]
    pub(super) fn chosen(&self) -> Pick {
        self.chosen
    }

    /// The party's own messages at `v`.
    fn count(&self, v: &View) -> u64 {
        match self.party {
            Party::P => v.published,
            Party::C => v.consumed,
        }
    }

    /// Whether the party should consult with a fresh view: its own count
    /// has reached another epoch.
    pub(super) fn due(&self, cached: &View) -> bool {
        self.count(cached) / EPOCH != self.epoch
    }

    /// A consult where the party may change what it runs (not inside a
    /// wait): a look at the ring; once an epoch has ended, its sample,
    /// and what runs in the next. `wake` is the planner's estimate of a
    /// wake-up [ps], for a kicked pause that ends here.
    pub(super) fn consult(&mut self, v: &View, wake: f64) -> Pick {
        self.settle_pause(v, wake);
        let count = self.count(v);
        let epoch = count / EPOCH;
        if !self.consulted {
            self.consulted = true;
            if epoch == self.epoch {
                self.stats.epochs_planner += 1;
            }
        }
        if epoch == self.epoch {
            if self.window.is_some() {
                self.look(v);
                self.cut_short(v);
            }
            return self.running;
        }
        if let Some(w) = self.window.take() {
            self.close(w, v);
        }
        self.watch(v);
        self.epoch = epoch;
        self.running = self.chosen;
        let own = owner(epoch) == Some(self.party);
        let second = epoch % 2 == 1;
        // Where a trial stands: the loser's epoch is the pair's second, the
        // verdict's the first of a pair; anything else (a consult too late
        // for a window) drops it.
        self.trial = match self.trial {
            Some(
                t @ Trial {
                    before: Some(_),
                    loser: None,
                },
            ) if own && second => {
                self.running = self.chosen.other();
                Some(t)
            }
            Some(t @ Trial { loser: Some(_), .. }) if !own || !second => Some(t),
            _ if own && !second && epoch / 4 >= self.next_trial => Some(Trial {
                before: None,
                loser: None,
            }),
            _ => None,
        };
        match self.running {
            Pick::Planner => self.stats.epochs_planner += 1,
            Pick::Fallback => self.stats.epochs_fallback += 1,
        }
        if own {
            // A window that starts late would mix in the epoch before.
            if self.trial.is_some() && count - epoch * EPOCH <= EPOCH / 4 {
                self.window = Some(Window {
                    now: v.now,
                    count,
                    consumed: v.consumed,
                    slept: self.slept,
                    looked: 0,
                    past: 0,
                });
                self.looks.clear();
                self.look(v);
            } else {
                if self.trial.is_some() {
                    self.stats.dropped += 1;
                }
                self.trial = None;
            }
        }
        self.running
    }

    /// An epoch ended at `v`: where the pair has slowed to [`FAR_BEHIND`]
    /// times the pace the verdict last showed, whatever the cause, a trial
    /// comes at the party's next own pair of epochs.
    #[allow(clippy::cast_precision_loss)]
    fn watch(&mut self, v: &View) {
        if let (Some((now, consumed)), Some(pace)) = (self.epoch_start, self.pace) {
            let n = v.consumed.saturating_sub(consumed);
            let wall = v.now.saturating_sub(now) as f64;
            if n >= EPOCH / 2 && wall > FAR_BEHIND * pace * n as f64 {
                self.pace = None;
                self.next_trial = self.next_trial.min(self.epoch / 4);
            }
        }
        self.epoch_start = Some((v.now, v.consumed));
    }

    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
    fn look(&mut self, v: &View) {
        if let Some(w) = &mut self.window {
            w.looked += 1;
            if let Some(Trial {
                before: Some(first),
                loser: None,
            }) = self.trial
            {
                if v.occupancy() as f64 * first.t > latency_limit(&first, self.bound) {
                    w.past += 1;
                }
            }
        }
        if self.looks.len() == LOOKS {
            let mut i = 0;
            self.looks.retain(|_| {
                i += 1;
                i % 2 == 0
            });
        }
        self.looks
            .push(v.occupancy().min(u64::from(u32::MAX)) as u32);
    }

    /// The 99th percentile of the window's looks at the ring.
    fn p99_occupancy(&mut self) -> f64 {
        if self.looks.is_empty() {
            return 0.0;
        }
        self.looks.sort_unstable();
        let i = (self.looks.len() * 99 / 100).min(self.looks.len() - 1);
        f64::from(self.looks[i])
    }

    /// The loser's half of a trial (the second) that is plainly losing ends at once,
    /// so that it costs the pair little: one that slows the pair
    /// [`FAR_BEHIND`] times the verdict's T in the same trial (over an
    /// eighth of an epoch at least), or that has let the ring fill past
    /// the latency it loses at ([`latency_limit`]) at more looks than the
    /// 99th percentile of an epoch's allows, without a plainly faster
    /// pace. Its epoch's sample would say the same; cutting it there
    /// keeps the latency its trial costs to the few looks that decide.
    #[allow(clippy::cast_precision_loss)]
    fn cut_short(&mut self, v: &View) {
        let (Some(trial), Some(w)) = (self.trial, self.window) else {
            return;
        };
        let (Some(first), None) = (trial.before, trial.loser) else {
            return;
        };
        let consumed = v.consumed.saturating_sub(w.consumed);
        let wall = v.now.saturating_sub(w.now) as f64;
        let slow = consumed >= EPOCH / 8 && wall > FAR_BEHIND * first.t * consumed as f64;
        // A loser that fills the ring may still win on the pace, which
        // comes first: it is cut for latency only where it does not (a
        // sixteenth of an epoch tells a pace far apart, and the ring's
        // filling costs latency while it runs).
        let late = consumed >= EPOCH / 16
            && w.past * 100 > w.looked.max(EPOCH)
            && wall >= (1.0 - T_MARGIN) * first.t * consumed as f64;
        if slow || late {
            self.stats.cut_short += 1;
            if slow {
                self.stats.on_pace += 1;
            } else {
                self.stats.on_latency += 1;
            }
            self.window = None;
            self.running = self.chosen;
            self.trial = None;
            let loss = if slow { Loss::Far } else { Loss::Late };
            self.verdict(self.chosen, loss, first.t);
        }
    }

    /// The window `w` of a trial's epoch ended at `v`: its sample; after
    /// the third, the verdict.
    #[allow(clippy::cast_precision_loss)]
    fn close(&mut self, w: Window, v: &View) {
        let own = self.count(v) - w.count;
        let consumed = v.consumed.saturating_sub(w.consumed);
        let Some(trial) = self.trial.take() else {
            return;
        };
        if own < EPOCH / 2 || consumed == 0 || v.now <= w.now {
            self.stats.dropped += 1;
            return;
        }
        let wall = (v.now - w.now) as f64;
        let slept = (self.slept - w.slept) as f64;
        let t = wall / consumed as f64;
        let sample = Sample {
            t,
            cpu: (wall - slept).max(0.0) / own as f64,
            latency: self.p99_occupancy() * t,
        };
        let (before, loser) = match trial {
            Trial {
                before: Some(b),
                loser: Some(l),
            } => (b, l),
            Trial {
                before: Some(b),
                loser: None,
            } => {
                self.trial = Some(Trial {
                    before: Some(b),
                    loser: Some(sample),
                });
                return;
            }
            Trial { before: None, .. } => {
                self.trial = Some(Trial {
                    before: Some(sample),
                    loser: None,
                });
                return;
            }
        };
        let after = sample;
        // The loser against the verdict before it and after it: where the
        // two say different things, the workload or the machine moved
        // under the trial, and another comes soon.
        let (first, far_first, basis) = self.judge_against(before, loser);
        let (second, far_second, _) = self.judge_against(after, loser);
        if first == second {
            match basis {
                Basis::Pace => self.stats.on_pace += 1,
                Basis::Latency => self.stats.on_latency += 1,
                Basis::Cpu => self.stats.on_cpu += 1,
            }
            let pace = if first == self.chosen {
                before.t.max(after.t)
            } else {
                loser.t
            };
            let loss = if far_first && far_second {
                Loss::Far
            } else {
                Loss::Narrow
            };
            self.verdict(first, loss, pace);
        } else {
            self.stats.undecided += 1;
            self.next_trial = self.epoch / 4 + INTERVAL_FIRST;
        }
    }

    /// [`Check::judge`] with the verdict's sample `kept` and the loser's.
    fn judge_against(&self, kept: Sample, loser: Sample) -> (Pick, bool, Basis) {
        match self.chosen {
            Pick::Planner => self.judge(&kept, &loser),
            Pick::Fallback => self.judge(&loser, &kept),
        }
    }

    /// Which of the two did better in one trial, whether the loser was
    /// far behind in T, and what decided.
    fn judge(&self, p: &Sample, f: &Sample) -> (Pick, bool, Basis) {
        if p.t > f.t * (1.0 + T_MARGIN) {
            (Pick::Fallback, p.t > f.t * FAR_BEHIND, Basis::Pace)
        } else if f.t > p.t * (1.0 + T_MARGIN) {
            (Pick::Planner, f.t > p.t * FAR_BEHIND, Basis::Pace)
        } else {
            let (pick, basis) = if self.nearer_the_bound(p, f) {
                (Pick::Planner, Basis::Latency)
            } else if self.nearer_the_bound(f, p) {
                (Pick::Fallback, Basis::Latency)
            } else if p.cpu < f.cpu * (1.0 - CPU_TIE) {
                (Pick::Planner, Basis::Cpu)
            } else if f.cpu < p.cpu * (1.0 - CPU_TIE) {
                (Pick::Fallback, Basis::Cpu)
            } else {
                (self.chosen, Basis::Cpu)
            };
            // One that has slowed the pair does not win back on latency or
            // CPU: a trial's epoch is too short to see a slow collapse.
            if Some(pick) == self.barred {
                (self.chosen, false, Basis::Pace)
            } else {
                (pick, false, basis)
            }
        }
    }

    /// Whether `a` keeps the latency bound and `b` does not, or both miss
    /// it and `a` by plainly less.
    fn nearer_the_bound(&self, a: &Sample, b: &Sample) -> bool {
        b.latency > latency_limit(a, self.bound)
    }

    /// A trial's verdict: a changed one is tried again soon, one that
    /// stands later each time. A loser far behind is dropped at once; a
    /// narrower loss must show again in the next trial before the verdict
    /// changes (one epoch's T moves by a few percent where the work per
    /// message varies, and one trial's margin can be chance).
    fn verdict(&mut self, pick: Pick, loss: Loss, pace: f64) {
        self.pace = Some(pace);
        if pick == self.chosen {
            self.stats.kept += 1;
        } else {
            self.stats.against += 1;
        }
        if loss == Loss::Far {
            // The loser slowed the pair: it wins back only on the pace.
            self.barred = Some(pick.other());
        } else if Some(pick) == self.barred {
            self.barred = None;
        }
        if pick == self.chosen {
            self.doubt = false;
            // A loser that filled the ring past the bound the verdict
            // keeps would do so again, and each try leaves a ring's worth
            // of late messages behind: it waits the longest interval.
            self.interval = match loss {
                Loss::Narrow => (self.interval * 2).min(INTERVAL_MOST),
                Loss::Far => (self.interval * 4).min(INTERVAL_MOST),
                Loss::Late => INTERVAL_MOST,
            };
        } else if loss == Loss::Far || self.doubt {
            self.doubt = false;
            self.chosen = pick;
            self.stats.switched += 1;
            self.interval = INTERVAL_FIRST;
        } else {
            self.doubt = true;
            self.interval = INTERVAL_FIRST;
        }
        self.next_trial = self.epoch / 4 + self.interval;
    }

    /// The party's action `a`, decided at `now`: what it will sleep.
    pub(super) fn issued(&mut self, now: u64, a: Option<Action>) {
        match a {
            Some(Action::Nap(until)) => self.slept += until.saturating_sub(now),
            Some(Action::TimedBlock(_, _)) => self.timed_from = Some(now),
            Some(Action::BlockUntil(_)) => self.pause_from = Some(now),
            Some(Action::Spin(_) | Action::Block) | None => {}
        }
    }

    /// A nap or a timed block planned to end at `planned` ended.
    pub(super) fn woke(&mut self, planned: u64) {
        if let Some(from) = self.timed_from.take() {
            self.slept += planned.saturating_sub(from);
        }
    }

    /// A wait ended.
    pub(super) fn done(&mut self, e: Episode) {
        self.timed_from = None;
        if let Some(b) = e.blocked {
            self.slept += b;
        }
    }

    /// A kicked pause, if one was taken, ended by `v.now`: asleep for all
    /// of it but its wake-up (`wake` [ps]).
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    pub(super) fn settle_pause(&mut self, v: &View, wake: f64) {
        if let Some(from) = self.pause_from.take() {
            let span = v.now.saturating_sub(from);
            self.slept += span.saturating_sub(wake.max(0.0) as u64);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A producer consulting after every message for `messages`, where a
    /// message takes `t(pick)` [ps] of the pair's time, of which the party
    /// naps `nap(pick)`: what ran, message by message.
    fn run(
        c: &mut Check,
        messages: u64,
        t: impl Fn(Pick) -> u64,
        nap: impl Fn(Pick) -> u64,
    ) -> Vec<Pick> {
        let mut now = 0;
        let mut ran = Vec::new();
        for k in 0..messages {
            let v = View {
                now,
                len: 256,
                published: k,
                consumed: k.saturating_sub(8),
            };
            let pick = c.consult(&v, 0.0);
            ran.push(pick);
            c.issued(now, Some(Action::Nap(now + nap(pick))));
            now += t(pick);
        }
        ran
    }

    fn share(ran: &[Pick], p: Pick) -> f64 {
        ran.iter().filter(|&&r| r == p).count() as f64 / ran.len() as f64
    }

    #[test]
    fn a_planner_that_slows_the_pair_loses_to_the_fallback_and_is_tried_ever_less_often() {
        let mut c = Check::new(Party::P, 1e12);
        // The planner's pauses make the pair 3 times slower; it naps more.
        let ran = run(
            &mut c,
            200 * EPOCH,
            |p| {
                if p == Pick::Planner {
                    3_000_000
                } else {
                    1_000_000
                }
            },
            |p| if p == Pick::Planner { 2_500_000 } else { 0 },
        );
        assert_eq!(c.chosen(), Pick::Fallback);
        // The first trial runs the planner (the verdict so far) in epoch
        // 4, the fallback in 5 and the planner again in 8 (6 and 7 are the
        // consumer's, where the verdict runs): the planner is slower. The
        // next trial (12 and 13) cuts the planner short after an eighth of
        // an epoch; the one after that comes 4 cycles of 4 epochs later,
        // then 16 cycles: under an epoch of the planner from epoch 9 to 200.
        let at = |e: u64, k: u64| ran[(e * EPOCH + k) as usize];
        assert_eq!(
            [1, 2, 4, 5, 6, 8, 9, 12, 13].map(|e| at(e, 10)),
            [
                Pick::Planner,
                Pick::Planner,
                Pick::Planner,
                Pick::Fallback,
                Pick::Planner,
                Pick::Planner,
                Pick::Fallback,
                Pick::Fallback,
                Pick::Planner,
            ]
        );
        assert_eq!(at(13, EPOCH / 2), Pick::Fallback, "cut short");
        let late = &ran[(9 * EPOCH) as usize..];
        let planner_epochs = share(late, Pick::Planner) * late.len() as f64 / EPOCH as f64;
        assert!(
            planner_epochs <= 1.0,
            "{planner_epochs} epochs of the planner after the first verdict"
        );
        // What the stats say: every epoch counted once; one trial against
        // the planner, far behind, switched at once; the later ones cut
        // the planner short and kept the fallback.
        let s = c.stats();
        assert_eq!(s.epochs_planner + s.epochs_fallback, 200, "{s:?}");
        // The planner ran epochs 0-4 and 6-8 (5 was the fallback's
        // trial), then only the trials that cut it short.
        assert_eq!(s.epochs_planner, 8 + s.cut_short, "{s:?}");
        assert_eq!((s.against, s.switched, s.undecided), (1, 1, 0), "{s:?}");
        assert!(s.cut_short >= 2 && s.kept >= s.cut_short, "{s:?}");
        assert_eq!(s.on_pace, s.kept + s.against, "{s:?}");
    }

    #[test]
    fn between_two_that_keep_the_pace_the_one_that_sleeps_more_wins() {
        // Same T; the planner sleeps 60% of each message, the fallback 20%.
        let mut c = Check::new(Party::P, 1e12);
        let ran = run(
            &mut c,
            100 * EPOCH,
            |_| 1_000_000,
            |p| if p == Pick::Planner { 600_000 } else { 200_000 },
        );
        assert_eq!(c.chosen(), Pick::Planner);
        assert!(share(&ran[(20 * EPOCH) as usize..], Pick::Planner) > 0.9);
        // And the other way round.
        let mut c = Check::new(Party::P, 1e12);
        run(
            &mut c,
            100 * EPOCH,
            |_| 1_000_000,
            |p| if p == Pick::Planner { 100_000 } else { 500_000 },
        );
        assert_eq!(c.chosen(), Pick::Fallback);
    }

    #[test]
    fn a_verdict_is_overturned_when_the_machine_changes() {
        let mut c = Check::new(Party::C, 1e12);
        let mut now = 0;
        let mut k = 0;
        // The consumer's T: the planner cheap and as fast, until message
        // 60 epochs in, after which it slows the pair by half.
        let mut step = |c: &mut Check, until: u64| {
            while k < until {
                let v = View {
                    now,
                    len: 256,
                    published: k + 8,
                    consumed: k,
                };
                let pick = c.consult(&v, 0.0);
                let slow = k >= 60 * EPOCH && pick == Pick::Planner;
                let t = if slow { 1_500_000 } else { 1_000_000 };
                let nap = if pick == Pick::Planner {
                    500_000
                } else {
                    100_000
                };
                c.issued(now, Some(Action::Nap(now + nap)));
                now += t;
                k += 1;
            }
        };
        step(&mut c, 60 * EPOCH);
        assert_eq!(c.chosen(), Pick::Planner);
        assert!(c.interval >= 8, "the verdict stood: trials are rare");
        // The pair fell behind the pace the verdict showed: a trial at the
        // consumer's next pair of epochs (62, 63 and 66; the verdict at the
        // start of 67), not 8 cycles on.
        step(&mut c, 68 * EPOCH);
        assert_eq!(
            c.chosen(),
            Pick::Fallback,
            "a trial showed the planner slower"
        );
        let s = c.stats();
        assert_eq!(s.switched, 1, "{s:?}");
        assert_eq!(
            s.on_pace + s.on_latency + s.on_cpu,
            s.kept + s.against,
            "{s:?}"
        );
    }

    #[test]
    fn one_that_slowed_the_pair_wins_back_on_the_pace_only() {
        // The planner slows the pair threefold for 20 epochs, then keeps
        // the pace and naps more than the fallback: in a pair that had
        // never slowed, it would win on CPU.
        let mut c = Check::new(Party::P, 1e12);
        let mut now = 0;
        for k in 0..100 * EPOCH {
            let v = View {
                now,
                len: 256,
                published: k,
                consumed: k.saturating_sub(8),
            };
            let pick = c.consult(&v, 0.0);
            let slow = k < 20 * EPOCH && pick == Pick::Planner;
            let nap = if pick == Pick::Planner {
                600_000
            } else {
                200_000
            };
            c.issued(now, Some(Action::Nap(now + nap)));
            now += if slow { 3_000_000 } else { 1_000_000 };
        }
        assert_eq!(c.barred, Some(Pick::Planner));
        assert_eq!(c.chosen(), Pick::Fallback);
    }

    #[test]
    fn sleep_is_counted_as_planned_for_naps_and_as_blocked_for_blocks() {
        let mut c = Check::new(Party::P, 1e12);
        c.issued(100, Some(Action::Nap(400)));
        assert_eq!(c.slept, 300);
        c.issued(1_000, Some(Action::TimedBlock(4, 5_000)));
        c.woke(5_000);
        assert_eq!(c.slept, 4_300);
        c.done(Episode {
            start: 0,
            end: 9_000,
            blocked: Some(2_000),
        });
        assert_eq!(c.slept, 6_300);
        // A kicked pause: all but its wake-up.
        c.issued(10_000, Some(Action::BlockUntil(8)));
        let v = View {
            now: 20_000,
            len: 256,
            published: 0,
            consumed: 0,
        };
        c.settle_pause(&v, 3_000.0);
        assert_eq!(c.slept, 13_300);
        // Spinning and blocking in a wait sleep nothing by themselves.
        c.issued(30_000, Some(Action::Spin(Some(40_000))));
        c.issued(30_000, Some(Action::Block));
        assert_eq!(c.slept, 13_300);
    }

    #[test]
    fn the_parties_try_in_epochs_of_their_own() {
        let owners: Vec<_> = (0..10).map(owner).collect();
        let (p, c) = (Some(Party::P), Some(Party::C));
        assert_eq!(owners, [None, None, c, c, p, p, c, c, p, p]);
    }
}
