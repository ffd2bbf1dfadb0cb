//! What a real run of the pair is asked ([`PairConfig`]) and what it
//! measures ([`PairResult`]), with the checks common to both backends and
//! the default stall limit ([`stall_limit`]). The runs themselves live in
//! `backend::threads` and `backend::kvm`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use kicklab_model::control::CheckStats;
use kicklab_model::{Params, WaitMode, MAX_DURATION_NS};
use kicklab_ring::WaitStrategy;
pub use kicklab_sim::Flush;
use serde::Serialize;

use crate::clock::check_duration;
use crate::{Setting, TestbedError};

/// One real run.
#[derive(Debug, Clone, Copy)]
pub struct PairConfig {
    /// L, k_P, k_C, W_P, W_C run the pair. N, V and S are the machine's
    /// own; only the strategies that plan (`adaptive`) read their means,
    /// as estimates (give them a calibration's: `Profile::apply_costs`).
    pub params: Params,
    /// How P waits for space (and, for `coalesce`, kicks): any strategy.
    /// `notify`, `poll` and `spin:<B>` run the ring's fixed
    /// [`WaitStrategy`] ([`basic_strategy`]); the others a
    /// `kicklab_model::Controller` step by step (`kicklab_ring::Driven`).
    /// An `adaptive` without its own latency bound keeps 100 us
    /// (`WaitMode::with_latency` sets one).
    pub mode_p: WaitMode,
    /// How C waits for messages (and kicks), as `mode_p`.
    pub mode_c: WaitMode,
    /// Where the parties run and how they notify each other.
    pub backend: crate::Backend,
    /// Messages measured after the warm-up.
    pub messages: u64,
    /// Messages before measuring.
    pub warmup: u64,
    /// Seed for drawing W_P and W_C when they are distributions.
    pub seed: u64,
    /// The stall limit: give up (report a hang) once no message has moved
    /// for this long. Not a limit on the whole run, which may take as long
    /// as it needs while it progresses. [`stall_limit`] gives a default.
    pub timeout: Duration,
    /// Send combining: P publishes (and kicks at most once) every `batch`
    /// messages, earlier by the `flush` rule, and always before it waits
    /// (a full ring). 1 (with `Flush::Full`): every message.
    pub batch: u32,
    /// When P publishes a partial batch as well: never (`full`), once the
    /// first held message is this old (`timer`), or when the peer's kick
    /// reaches P (`on-interrupt`).
    pub flush: Flush,
    /// Measure each message's latency, from its write to the end of its
    /// consumption (the consumer's release): a TSC read per write and per
    /// release, and a store and a load of the stamp (see [`PairResult`]'s
    /// `latency_ns`). Where the guest writes (kvm tx) it stamps with its
    /// own TSC, related to the host's by a ping exchange; a guest that
    /// consumes (kvm rx) and the emulated guest are not measured.
    pub latency: bool,
    /// Record the first this many kicks and sleeps of each party in the
    /// window, each with its start and end, for a picture of the run; 0
    /// records none. With kvm the guest records its own kicks and halts
    /// (a user-mode guest, at most a few hundred), not the pauses its VMM
    /// takes for it.
    pub record: usize,
}

/// The ring's fixed strategy for `notify`, `poll` and `spin:<B>`; `None`
/// for the strategies a controller runs step by step.
pub fn basic_strategy(mode: WaitMode) -> Option<WaitStrategy> {
    match mode {
        WaitMode::Notify => Some(WaitStrategy::Block),
        WaitMode::Poll => Some(WaitStrategy::Poll),
        WaitMode::Spin { budget_ns } => Some(WaitStrategy::SpinThenBlock(Duration::from_secs_f64(
            budget_ns.clamp(0.0, MAX_DURATION_NS) / 1e9,
        ))),
        _ => None,
    }
}

/// Whether a party waiting by `mode` keeps its CPU busy while it waits
/// (`poll`, and `hybrid`'s spin after its nap).
pub(crate) fn busy_waits(mode: WaitMode) -> bool {
    matches!(mode, WaitMode::Poll | WaitMode::Hybrid(_))
}

/// A default stall limit for `params`: the larger of 2 s and 1000 times
/// the largest configured per-message cost (mean), at most 10 minutes.
pub fn stall_limit(params: &Params) -> Duration {
    let p = params;
    let largest_ns = [p.w_p, p.w_c, p.n_p, p.n_c, p.s_p, p.s_c]
        .iter()
        .map(kicklab_model::Cost::mean_ns)
        .fold(0.0, f64::max);
    let cap = Duration::from_secs(600);
    let want = Duration::try_from_secs_f64(largest_ns * 1e3 / 1e9).unwrap_or(cap);
    want.clamp(Duration::from_secs(2), cap)
}

impl PairConfig {
    /// Checks what both backends need; returns the number of messages in
    /// all (warm-up included).
    pub(crate) fn check(&self) -> Result<u64, TestbedError> {
        self.params.validate()?;
        if self.messages == 0 {
            return Err(TestbedError::invalid(
                Setting::Messages,
                "need at least 1 message",
            ));
        }
        for (who, m) in [("P", self.mode_p), ("C", self.mode_c)] {
            m.check()
                .map_err(|e| TestbedError::limit(Setting::Strategy, format!("{who}'s {m}: {e}")))?;
            if let Some(WaitStrategy::SpinThenBlock(d)) = basic_strategy(m) {
                check_duration(d, Setting::Spin)?;
            }
            // A sleep the stall limit cannot tell from a hang.
            #[allow(clippy::cast_precision_loss)]
            if let WaitMode::Sleep { period_ns } = m {
                if period_ns >= self.timeout.as_nanos() as f64 {
                    return Err(TestbedError::limit(
                        Setting::Strategy,
                        format!(
                            "{who}'s {m}: each sleep is as long as the stall limit ({}) or longer, \
                             so the run would stop as hung; sleep for less",
                            kicklab_model::fmt_ns(self.timeout.as_nanos() as f64)
                        ),
                    ));
                }
            }
        }
        check_duration(self.timeout, Setting::Timeout)?;
        let combine = kicklab_sim::Combine {
            batch: self.batch,
            flush: self.flush,
        };
        if let Err(e) = combine.check(self.params.len) {
            // "batch: ..." or "flush: ...": the reason after the name.
            let (what, reason) = match e.split_once(": ") {
                Some(("flush", r)) => (Setting::Flush, r.to_string()),
                Some((_, r)) => (Setting::Batch, r.to_string()),
                None => (Setting::Batch, e),
            };
            return Err(TestbedError::invalid(what, reason));
        }
        self.warmup.checked_add(self.messages).ok_or_else(|| {
            TestbedError::limit(Setting::Messages, "warm-up plus messages overflow 64 bits")
        })
    }
}

/// What a run measured. Times in nanoseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct PairResult {
    /// T (wall time), E (CPU time of both threads), per party, and the
    /// messages, kicks and sleeps (blocks and naps) in the window; the
    /// messages' latency from publish to release (`latency_ns`: p50, p99,
    /// max, mean) where measured ([`PairConfig::latency`], both ends host
    /// threads), else `None`.
    #[serde(flatten)]
    pub rates: kicklab_model::Rates,
    /// Messages the consumer never saw.
    pub lost: u64,
    /// Messages seen twice or out of order.
    pub duplicated_or_reordered: u64,
    /// Of P's sleeps (`sleeps_p`), the timed ones: naps that were never
    /// kicked.
    pub naps_p: u64,
    /// Of C's sleeps, the timed ones.
    pub naps_c: u64,
    /// Wake-ups that found nothing to do (P, whole run).
    pub spurious_p: u64,
    /// Wake-ups that found nothing to do (C, whole run).
    pub spurious_c: u64,
    /// Each party had a CPU of its own: both pin calls succeeded, on
    /// distinct CPUs, and no other run of this process overlapped this one
    /// (other processes are not seen: see `concurrent_runs`).
    pub pinned: bool,
    /// More busy threads than CPUs (both poll on a 1-CPU machine, or
    /// polling runs of this process overlapped).
    pub oversubscribed: bool,
    /// How much CPU other processes surely took on the pair's CPUs during
    /// the run, in CPUs: their share measured from `/proc/stat`
    /// ([`crate::clock::OthersLoad`]) less what one clock tick per CPU
    /// can add to it, at least 0; `None` where `/proc/stat` is not
    /// readable.
    pub others_cpu: Option<f64>,
    /// How much CPU the host surely took from the pair's CPUs during the
    /// run, in CPUs (a virtual machine's steal time, `/proc/stat`, less
    /// what one clock tick per CPU can add, at least 0): the machine's
    /// own hypervisor ran something else. `None` where `/proc/stat` is not
    /// readable.
    pub stolen_cpu: Option<f64>,
    /// The CPU P (thread or vCPU thread) was pinned to; `None` if the pin
    /// call failed.
    pub cpu_p: Option<usize>,
    /// The CPU C was pinned to; `None` if the pin call failed.
    pub cpu_c: Option<usize>,
    /// Other runs of the pair in this process that overlapped this one in
    /// time (their threads shared these CPUs).
    pub concurrent_runs: u32,
    /// P's notify call as this run met it: mean wall time of its kicks in
    /// the window [ns] (the N_P of the run, to set beside calibration's);
    /// `None` without kicks or where not timed (an emulated guest's).
    pub kick_p_ns: Option<f64>,
    /// C's, the same.
    pub kick_c_ns: Option<f64>,
    /// P's wake-ups as this run met them: mean time from the start of C's
    /// kick to P running again [ns] (R_P = V_C + S_P); `None` where not
    /// timed (a guest on the other side) or P never slept.
    pub wake_p_ns: Option<f64>,
    /// C's, from the start of P's kick (R_C = V_P + S_C).
    pub wake_c_ns: Option<f64>,
    /// A KVM guest in user mode: how far its clock moved against the
    /// host's during the run [ns], between the clock exchanges before and
    /// after it. The in-run timings across the boundary (`kick_*_ns`,
    /// `wake_*_ns`, a guest end's latency) use the first exchange's
    /// offset, so they are off by up to this. `None` otherwise.
    pub clock_drift_ns: Option<f64>,
    /// The run's counts with its warm-up: what a system-wide trace of the
    /// run (`kicklab trace`) sees, where the fields above hold the
    /// measured window only.
    pub whole_run: WholeRun,
    /// What `adaptive`'s self-check did over the whole run, P's and C's:
    /// the epochs each of planner and fallback ran, and how its trials
    /// ended; absent for other strategies (a KVM guest's side has it: its
    /// VMM runs its waits).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_check_p: Option<CheckStats>,
    /// See `self_check_p`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_check_c: Option<CheckStats>,
}

/// A run's messages, kicks and sleeps with its warm-up included.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct WholeRun {
    /// Messages, the warm-up's first.
    pub messages: u64,
    /// Notifications P sent to C.
    pub notifications_p: u64,
    /// Notifications C sent to P.
    pub notifications_c: u64,
    /// Times P slept.
    pub sleeps_p: u64,
    /// Times C slept.
    pub sleeps_c: u64,
}

/// A run's record of its parties' first kicks and sleeps in the window
/// ([`PairConfig::record`]): P's, then C's, each in time order. Empty where
/// none was asked for, and for an emulated guest's party.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Record {
    /// P's and C's.
    pub spans: [Vec<RecordedSpan>; 2],
}

/// One kick (the notify call) or one sleep (a wait that blocked, from the
/// start of the wait to its return) of a party.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RecordedSpan {
    /// A kick, else a sleep.
    pub kick: bool,
    /// Its start and end, from the window's start [ns] (with a KVM guest,
    /// from the earlier of the host's window start and the guest's first
    /// span).
    pub from_ns: f64,
    /// See `from_ns`.
    pub to_ns: f64,
}

impl Record {
    /// The sleeper's start-ups after the other party's kicks: for each
    /// sleep of `sleeper` during which a kick of the other began, the time
    /// from the end of the last such kick to the sleeper running again
    /// [ns] (its R less the kick's N: the batch race's s; negative where
    /// it woke inside the kick).
    #[must_use]
    pub fn starts_after_kicks(&self, sleeper: kicklab_model::Party) -> Vec<f64> {
        let (sleeps, kicks) = match sleeper {
            kicklab_model::Party::P => (&self.spans[0], &self.spans[1]),
            kicklab_model::Party::C => (&self.spans[1], &self.spans[0]),
        };
        sleeps
            .iter()
            .filter(|s| !s.kick)
            .filter_map(|s| {
                kicks
                    .iter()
                    .rfind(|k| k.kick && k.from_ns >= s.from_ns && k.from_ns <= s.to_ns)
                    .map(|k| s.to_ns - k.to_ns)
            })
            .collect()
    }
}

/// Runs of the pair in progress in this process.
static ACTIVE_RUNS: AtomicU32 = AtomicU32::new(0);
/// Runs of the pair started in this process so far.
static STARTED_RUNS: AtomicU32 = AtomicU32::new(0);

/// Counts this run as active while it lives, to tell how many other runs
/// overlapped it: those active when it started plus those started since.
pub(crate) struct RunGuard {
    active_before: u32,
    started: u32,
}

impl RunGuard {
    pub(crate) fn enter() -> RunGuard {
        let active_before = ACTIVE_RUNS.fetch_add(1, Ordering::SeqCst);
        let started = STARTED_RUNS.fetch_add(1, Ordering::SeqCst).wrapping_add(1);
        RunGuard {
            active_before,
            started,
        }
    }

    /// Other runs that overlapped this one so far.
    pub(crate) fn others(&mut self) -> u32 {
        let since = STARTED_RUNS
            .load(Ordering::SeqCst)
            .wrapping_sub(self.started);
        self.active_before.saturating_add(since)
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        ACTIVE_RUNS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Fills the placement fields of `r` from what the pin calls returned.
pub(crate) fn placement(
    r: &mut PairResult,
    cpu_p: Option<usize>,
    cpu_c: Option<usize>,
    others: u32,
    polls: bool,
) {
    let two_cpus = crate::clock::cpus() >= 2;
    r.cpu_p = cpu_p;
    r.cpu_c = cpu_c;
    r.concurrent_runs = others;
    r.pinned = two_cpus && cpu_p.is_some() && cpu_c.is_some() && cpu_p != cpu_c && others == 0;
    r.oversubscribed = polls && (!two_cpus || others > 0);
}

/// What one party did over the measurement window.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PartyCounts {
    /// CPU time [ns].
    pub cpu_ns: u64,
    /// Notifications it sent.
    pub kicks: u64,
    /// Times it slept (blocked, or a timed sleep).
    pub sleeps: u64,
    /// Notifications and sleeps over the whole run, warm-up included.
    pub whole_run: [u64; 2],
    /// Of those, the timed sleeps.
    pub naps: u64,
    /// Wake-ups that found nothing to do (whole run).
    pub spurious: u64,
    /// Wall time inside its notify calls [ns]; `None` where not timed
    /// (an emulated guest's side).
    pub kick_ns: Option<f64>,
    /// Mean time from the start of the peer's kick to this party running
    /// after a sleep [ns] (R = V + S as the run met it); `None` where not
    /// timed or it never slept.
    pub wake: Option<f64>,
    /// What `adaptive`'s self-check did (whole run); `None` for other
    /// strategies.
    pub check: Option<CheckStats>,
}

impl PairResult {
    /// The result of a window of `messages` (of a run of
    /// `whole_run_messages`, warm-up included) that took `wall_ns`, from what
    /// each party did, the consumer's sequence check and the messages'
    /// latency where it was measured; placement is filled in by
    /// [`placement`].
    #[allow(clippy::cast_precision_loss)]
    pub(crate) fn of_window(
        [messages, whole_run_messages]: [u64; 2],
        wall_ns: f64,
        [p, c]: [PartyCounts; 2],
        (lost, bad): (u64, u64),
        latency_ns: Option<kicklab_model::Latency>,
    ) -> PairResult {
        let n = messages as f64;
        let (e_p_ns, e_c_ns) = (p.cpu_ns as f64 / n, c.cpu_ns as f64 / n);
        PairResult {
            rates: kicklab_model::Rates {
                t_ns: wall_ns / n,
                e_ns: e_p_ns + e_c_ns,
                e_p_ns,
                e_c_ns,
                messages,
                notifications_p: p.kicks,
                notifications_c: c.kicks,
                sleeps_p: p.sleeps,
                sleeps_c: c.sleeps,
                latency_ns,
            },
            lost,
            duplicated_or_reordered: bad,
            naps_p: p.naps,
            naps_c: c.naps,
            spurious_p: p.spurious,
            spurious_c: c.spurious,
            kick_p_ns: p
                .kick_ns
                .filter(|_| p.kicks > 0)
                .map(|t| t / p.kicks as f64),
            kick_c_ns: c
                .kick_ns
                .filter(|_| c.kicks > 0)
                .map(|t| t / c.kicks as f64),
            wake_p_ns: p.wake,
            wake_c_ns: c.wake,
            self_check_p: p.check,
            self_check_c: c.check,
            whole_run: WholeRun {
                messages: whole_run_messages,
                notifications_p: p.whole_run[0],
                notifications_c: c.whole_run[0],
                sleeps_p: p.whole_run[1],
                sleeps_c: c.whole_run[1],
            },
            ..PairResult::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kicklab_model::Cost;

    /// A sleep's start-up is counted from the end of the last kick that
    /// began in it; a sleep no kick began in (a spurious wake-up, a
    /// timed nap) gives none.
    #[test]
    fn start_ups_run_from_the_end_of_the_kick_that_began_in_the_sleep() {
        let span = |kick, from_ns, to_ns| RecordedSpan {
            kick,
            from_ns,
            to_ns,
        };
        let record = Record {
            spans: [
                vec![
                    span(true, 100.0, 130.0),  // wakes C's first sleep
                    span(true, 300.0, 340.0),  // the second's: ends after C runs
                    span(true, 500.0, 520.0),  // before the third began
                    span(false, 600.0, 650.0), // P's own sleep: not a kick
                ],
                vec![
                    span(false, 90.0, 150.0),
                    span(false, 290.0, 330.0),
                    span(false, 530.0, 560.0),
                ],
            ],
        };
        assert_eq!(
            record.starts_after_kicks(kicklab_model::Party::C),
            vec![20.0, -10.0]
        );
        assert!(record
            .starts_after_kicks(kicklab_model::Party::P)
            .is_empty());
    }

    #[test]
    fn the_default_stall_limit_scales_with_the_largest_cost() {
        let mut p = Params::default();
        assert_eq!(stall_limit(&p), Duration::from_secs(2));
        p.w_c = Cost::Const(10e6); // 10 ms
        assert_eq!(stall_limit(&p), Duration::from_secs(10));
        p.w_p = Cost::Const(1e30);
        assert_eq!(stall_limit(&p), Duration::from_secs(600));
    }

    #[test]
    fn overlapping_runs_are_counted() {
        let mut a = RunGuard::enter();
        let mut b = RunGuard::enter();
        assert!(a.others() >= 1 && b.others() >= 1);
        drop(b);
        assert!(a.others() >= 1, "b overlapped a, even once it ended");
    }
}
