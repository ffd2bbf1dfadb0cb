//! The backends side by side, each offering the same three operations
//! (run the pair, calibrate N and S, ping-pong), and [`Backend`], the one
//! dispatch over them.
//!
//! - [`threads`]: two host threads and a notifier;
//! - [`kvm`]: a host thread and a tiny KVM guest of our own.
//!
//! What does not live here: the host party loop both use (`crate::party`)
//! and the types of what they are asked and what they measure.

pub mod kvm;
pub mod threads;

use std::time::Duration;

use kicklab_ring::NotifierKind;

use kicklab_model::{Cost, Params, Party, WaitMode};

use crate::calibrate::{Calibration, IdlePoint, Stat};
use crate::pingpong::{PingPongConfig, PingPongResult};
use crate::{PairConfig, PairResult, Profile, TestbedError};
use kicklab_model::InRunCosts;

/// Where the two parties run and how they notify each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Two host threads with this notifier.
    Threads(NotifierKind),
    /// A host thread and a KVM guest.
    Kvm(kvm::KvmOptions),
}

impl Backend {
    /// `futex`, `eventfd`, `pipe` or `kvm`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Threads(k) => k.name(),
            Backend::Kvm(_) => "kvm",
        }
    }

    /// Runs the pair once with `cfg` (its `backend` field is ignored:
    /// `self` decides).
    ///
    /// # Errors
    ///
    /// Bad parameters ([`TestbedError::Params`], [`TestbedError::Invalid`]),
    /// parameters beyond what the backend holds ([`TestbedError::Limit`]),
    /// a notifier or VM that cannot be made, a corrupt ring, a misbehaving
    /// guest, or a run in which no message moved for `cfg.timeout` (a
    /// hang).
    pub fn run_pair(self, cfg: &PairConfig) -> Result<PairResult, TestbedError> {
        self.run_pair_recorded(cfg).map(|(r, _)| r)
    }

    /// [`Backend::run_pair`], with the record of the parties' first kicks
    /// and sleeps that `cfg.record` asks for (with kvm, a user-mode
    /// guest's own kicks and halts; not the pauses its VMM takes for it).
    ///
    /// # Errors
    ///
    /// As [`Backend::run_pair`].
    pub fn run_pair_recorded(
        self,
        cfg: &PairConfig,
    ) -> Result<(PairResult, crate::pair::Record), TestbedError> {
        self.check_pair(cfg)?;
        let _cpus = crate::cpu_lock::hold()?;
        let others = crate::clock::OthersLoad::mark();
        let (mut r, record) = match self {
            Backend::Threads(kind) => threads::run_pair(cfg, kind)?,
            Backend::Kvm(opts) => kvm::run_pair_recorded(cfg, opts)?,
        };
        let load = others.and_then(|o| o.surely());
        r.others_cpu = load.map(|l| l.0);
        r.stolen_cpu = load.map(|l| l.1);
        Ok((r, record))
    }

    /// Checks a run on this backend before anything starts (what
    /// [`Backend::run_pair`] checks first).
    ///
    /// # Errors
    ///
    /// As [`Backend::run_pair`]'s input errors.
    pub fn check_pair(self, cfg: &PairConfig) -> Result<(), TestbedError> {
        match self {
            Backend::Threads(_) => threads::check_pair(cfg).map(drop),
            Backend::Kvm(o) => kvm::check_pair(cfg, o.direction).map(drop),
        }
    }

    /// Calibrates N and S: rounds of `samples` notifications each way
    /// after `gap` of idling, until the medians settle (at most
    /// `max_rounds`). For kvm, `samples` is capped at what guest memory
    /// holds.
    ///
    /// # Errors
    ///
    /// Too many samples or too long a gap ([`TestbedError::Limit`]), a
    /// notifier or VM that cannot be made, or a calibration that hangs.
    pub fn calibrate(
        self,
        samples: usize,
        gap: Duration,
        max_rounds: usize,
    ) -> Result<Profile, TestbedError> {
        match self {
            Backend::Threads(kind) => threads::calibrate(kind, samples, gap, max_rounds),
            Backend::Kvm(o) => kvm::calibrate(
                o.direction,
                o.guest,
                samples.min(kvm::guest::map::SAMPLES_MAX as usize),
                gap,
                max_rounds,
            ),
        }
    }

    /// A whole calibration: the main costs ([`Backend::calibrate`]), then
    /// one round at each gap of the idle curve, then the ring's cost per
    /// message ([`Backend::overhead`]).
    ///
    /// # Errors
    ///
    /// Bad settings (checked before anything runs), or as
    /// [`Backend::calibrate`] and [`Backend::run_pair`].
    pub fn calibrate_with(self, c: &Calibration) -> Result<Profile, TestbedError> {
        c.check()?;
        let _cpus = crate::cpu_lock::hold()?;
        let others = crate::clock::OthersLoad::mark();
        let mut p = self.calibrate(c.samples, c.gap, c.max_rounds)?;
        let mut curve = Vec::with_capacity(c.gaps.len());
        for &gap in &c.gaps {
            if gap == c.gap {
                curve.push(IdlePoint::of(&p));
            } else {
                curve.push(IdlePoint::of(&self.calibrate(c.samples, gap, 1)?));
            }
        }
        curve.sort_by(|a, b| a.gap_ns.total_cmp(&b.gap_ns));
        curve.dedup_by(|a, b| a.gap_ns == b.gap_ns);
        p.idle_curve = curve;
        if c.overhead_runs > 0 {
            p.overhead = Some(self.overhead(c.overhead_runs, c.overhead_messages)?);
        }
        let mut sleeps = SleepSamples::default();
        if c.reference_runs > 0 {
            (p.in_run, sleeps) = self.in_run(c.reference_runs)?;
        }
        if c.overhead_runs > 0 {
            // N as runs meet it where timed, else as calibrated: each
            // pace-setter's kicks are taken out of its T.
            let n =
                |run: Option<Stat>, isolated: &Stat| run.map_or(isolated.mean_ns, |s| s.mean_ns);
            let (np, nc) = (
                n(p.in_run.and_then(|r| r.np), &p.np),
                n(p.in_run.and_then(|r| r.nc), &p.nc),
            );
            [p.overhead_p, p.overhead_c] = self.overhead_alone(c.overhead_runs, [np, nc])?;
        }
        // The ring's cost as the model adds it to a notify pair's W (none
        // where calibration did not measure it).
        let [o_p, o_c] = p.overheads(true);
        if let Some(r) = &mut p.in_run {
            r.sleep_p_cpu = SleepSamples::per_sleep(&sleeps.p, o_p);
            r.sleep_c_cpu = SleepSamples::per_sleep(&sleeps.c, o_c);
        }
        let [on_p, on_c] = naps(NAPS, c.gap);
        [p.nap_p, p.nap_c] = [on_p.map(|n| n.late), on_c.map(|n| n.late)];
        [p.nap_p_cpu, p.nap_c_cpu] = [on_p.map(|n| n.cpu), on_c.map(|n| n.cpu)];
        p.others_cpu = others.and_then(|o| o.since());
        Ok(p)
    }

    /// The ring's cost per message to the party that sets the pace while
    /// its peer sleeps, P's and C's: a notify pair in which that party has
    /// 4 us of work per message and the other none, the sleeper woken once
    /// every L/2 messages (L = 256: C registers for 128 published, P for
    /// 128 free), so the pace-setter never waits; its CPU time per
    /// message (E_P, E_C) less 4 us and its kicks (N each: the run's own
    /// mean where the backend times it, else `n_ns`, the calibrated mean
    /// of P's and C's) is one sample; `runs` runs of 30 000 messages. CPU
    /// time, not T: a party that never waits is on its CPU all the time
    /// but for what something else takes from it (another process on its
    /// CPU, a host stealing the vCPU); with a short script running beside
    /// it here, T - 4 us ranged over 100-600 ns a message where the CPU
    /// part stayed at 150-250 ns (quiet, both 60-140 ns). That time is no
    /// cost of the ring, and a per-message constant measured at 4 us
    /// would add it threefold at the validation's 1.1 us. T where the run
    /// has no CPU time. This is the per-message cost
    /// that sets T in FC (P's) and FP (C's); the polling pair of
    /// [`Backend::overhead`] adds the cost of a peer spinning on the shared
    /// lines, which a sleeping peer does not have.
    ///
    /// # Errors
    ///
    /// As [`Backend::run_pair`].
    #[allow(clippy::cast_precision_loss)]
    pub fn overhead_alone(
        self,
        runs: u32,
        n_ns: [f64; 2],
    ) -> Result<[Option<Stat>; 2], TestbedError> {
        const W_NS: f64 = 4000.0;
        let pair = |w_p: f64, w_c: f64, k_p: u32, k_c: u32| {
            let params = Params {
                len: 256,
                k_p,
                k_c,
                w_p: Cost::Const(w_p),
                w_c: Cost::Const(w_c),
                ..Params::default()
            };
            self.reference(params, WaitMode::Notify, 30_000)
        };
        let (p_paces, c_paces) = (pair(W_NS, 0.0, 128, 1), pair(0.0, W_NS, 1, 128));
        let (mut o_p, mut o_c) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let on_cpu = |cpu: f64, t: f64| if cpu.is_finite() && cpu > 0.0 { cpu } else { t };
            let a = self.run_pair(&p_paces)?;
            let kicks = a.rates.notifications_p as f64 / a.rates.messages.max(1) as f64;
            let busy = on_cpu(a.rates.e_p_ns, a.rates.t_ns);
            o_p.push(busy - W_NS - kicks * a.kick_p_ns.unwrap_or(n_ns[0]));
            let b = self.run_pair(&c_paces)?;
            let kicks = b.rates.notifications_c as f64 / b.rates.messages.max(1) as f64;
            let busy = on_cpu(b.rates.e_c_ns, b.rates.t_ns);
            o_c.push(busy - W_NS - kicks * b.kick_c_ns.unwrap_or(n_ns[1]));
        }
        let stat = |v: Vec<f64>| (!v.is_empty()).then(|| Stat::of(v));
        Ok([stat(o_p), stat(o_c)])
    }

    /// A calibration's reference pair: `params` on this backend, both
    /// parties waiting by `mode`, `messages` measured after a tenth as
    /// many, seed 1, no combining, no latency.
    fn reference(self, params: Params, mode: WaitMode, messages: u64) -> PairConfig {
        PairConfig {
            params,
            mode_p: mode,
            mode_c: mode,
            backend: self,
            messages,
            warmup: messages / 10,
            seed: 1,
            timeout: crate::stall_limit(&params),
            batch: 1,
            flush: crate::Flush::Full,
            latency: false,
            record: 0,
        }
    }

    /// N and the wake-up R = V + S as a run meets them: the kicks and
    /// wake-ups timed inside reference pairs with notifications, one where
    /// C is the faster party (W_P = 2 us, W_C = 1 us: P kicks, C sleeps)
    /// and its mirror (P sleeps, C kicks), `runs` runs of 60 000 messages
    /// each. Calibration's isolated wake-ups can cost a waiter parked in a
    /// way runs do not meet (`docs/calibration.md`, "In-run costs"). A
    /// user-mode KVM guest times its own kicks and wake-ups by its TSC; an
    /// emulated one does not (only the host's kicks are timed then); `None`
    /// if nothing was.
    ///
    /// With them, what each sleeper's CPU paid beyond its work per message
    /// and its sleeps per message, run by run ([`SleepSamples`]), for the
    /// CPU per sleep once the ring's cost to it is known.
    ///
    /// # Errors
    ///
    /// As [`Backend::run_pair`].
    pub fn in_run(self, runs: u32) -> Result<(Option<InRunCosts>, SleepSamples), TestbedError> {
        let pair = |w_p: f64, w_c: f64| {
            let params = Params {
                w_p: Cost::Const(w_p),
                w_c: Cost::Const(w_c),
                ..Params::default()
            };
            PairConfig {
                // Their first kicks and sleeps, for the start-ups round by
                // round.
                record: START_ROUNDS,
                ..self.reference(params, WaitMode::Notify, 60_000)
            }
        };
        let (slow, fast) = kicklab_model::REFERENCE_PAIR_NS;
        let (fc, fp) = (pair(slow, fast), pair(fast, slow));
        let mut v: [Vec<f64>; 4] = Default::default();
        let mut starts: [Vec<f64>; 2] = Default::default();
        let mut sleeps = SleepSamples::default();
        for _ in 0..runs {
            let (a, record_a) = self.run_pair_recorded(&fc)?;
            let (b, record_b) = self.run_pair_recorded(&fp)?;
            starts[0].extend(record_b.starts_after_kicks(Party::P));
            starts[1].extend(record_a.starts_after_kicks(Party::C));
            sleeps
                .c
                .extend(SleepSamples::of(&a, Party::C, fc.params.w_c.mean_ns()));
            sleeps
                .p
                .extend(SleepSamples::of(&b, Party::P, fp.params.w_p.mean_ns()));
            for (i, x) in [a.kick_p_ns, b.kick_c_ns, b.wake_p_ns, a.wake_c_ns]
                .into_iter()
                .enumerate()
            {
                v[i].extend(x);
            }
        }
        if v.iter().all(Vec::is_empty) {
            return Ok((None, sleeps));
        }
        let stat = |x: Vec<f64>| (!x.is_empty()).then(|| Stat::of(x));
        let [np, nc, rp, rc] = v.map(stat);
        let [start_p, start_c] = starts.map(stat);
        let costs = InRunCosts {
            np,
            nc,
            rp,
            rc,
            start_p,
            start_c,
            ..InRunCosts::default()
        };
        Ok((Some(costs), sleeps))
    }

    /// The ring's own cost per message: T of a polling pair with no work
    /// (W_P = W_C = 0, L = 256, k = 1) over this backend's ring, one sample
    /// per run of `messages` (after a tenth as many to warm up).
    ///
    /// # Errors
    ///
    /// As [`Backend::run_pair`].
    pub fn overhead(self, runs: u32, messages: u64) -> Result<Stat, TestbedError> {
        let params = Params {
            w_p: Cost::Const(0.0),
            w_c: Cost::Const(0.0),
            ..Params::default()
        };
        let cfg = self.reference(params, WaitMode::Poll, messages);
        let t = (0..runs)
            .map(|_| self.run_pair(&cfg).map(|r| r.rates.t_ns))
            .collect::<Result<Vec<f64>, TestbedError>>()?;
        Ok(Stat::of(t))
    }

    /// Runs ping-pong with `cfg` (its `backend` field is ignored: `self`
    /// decides).
    ///
    /// # Errors
    ///
    /// An idle strategy the backend lacks, parameters out of range, no
    /// usable KVM, or no answer for `cfg.timeout` (a hang).
    pub fn pingpong(self, cfg: &PingPongConfig) -> Result<PingPongResult, TestbedError> {
        let _cpus = crate::cpu_lock::hold()?;
        match self {
            Backend::Threads(kind) => threads::pingpong::run(cfg, kind),
            Backend::Kvm(opts) => kvm::pingpong::run(cfg, opts),
        }
    }
}

impl std::str::FromStr for Backend {
    type Err = String;
    fn from_str(s: &str) -> Result<Backend, String> {
        if s == "kvm" {
            return Ok(Backend::Kvm(kvm::KvmOptions::default()));
        }
        s.parse::<NotifierKind>()
            .map(Backend::Threads)
            .map_err(|_| format!("unknown backend `{s}` (use futex, eventfd, pipe or kvm)"))
    }
}

/// What a sleeper paid in a reference pair, one sample per run: its thread
/// CPU per message beyond its work and its own kicks, and its sleeps per
/// message ([`Backend::in_run`]).
#[derive(Debug, Clone, Default)]
pub struct SleepSamples {
    /// P's, from the pair where P sleeps.
    pub p: Vec<(f64, f64)>,
    /// C's, from the pair where C sleeps.
    pub c: Vec<(f64, f64)>,
}

impl SleepSamples {
    /// Sleeps a run must have had to give a sample: fewer, and one slow
    /// wake-up is the whole figure.
    const MIN_SLEEPS: u64 = 100;

    /// `party`'s sample from `run`, where it slept at least
    /// [`SleepSamples::MIN_SLEEPS`] times, its CPU is timed and its
    /// kicks (if any) too; `work_ns` is its work per message.
    #[allow(clippy::cast_precision_loss)]
    fn of(run: &PairResult, party: Party, work_ns: f64) -> Option<(f64, f64)> {
        let r = &run.rates;
        let (e, sleeps, kicks, kick) = match party {
            Party::P => (r.e_p_ns, r.sleeps_p, r.notifications_p, run.kick_p_ns),
            Party::C => (r.e_c_ns, r.sleeps_c, r.notifications_c, run.kick_c_ns),
        };
        let messages = r.messages.max(1) as f64;
        let kicks_cpu = match (kicks, kick) {
            (0, _) => 0.0,
            (n, Some(k)) => n as f64 / messages * k,
            (_, None) => return None,
        };
        let extra = e - work_ns - kicks_cpu;
        (sleeps >= Self::MIN_SLEEPS && extra.is_finite()).then(|| (extra, sleeps as f64 / messages))
    }

    /// The CPU per sleep over `samples`, the ring's cost per message to
    /// the sleeper (`ring_ns`) taken out first; `None` without samples.
    fn per_sleep(samples: &[(f64, f64)], ring_ns: f64) -> Option<Stat> {
        let v: Vec<f64> = samples
            .iter()
            .map(|&(extra, per_message)| (extra - ring_ns) / per_message)
            .collect();
        (!v.is_empty()).then(|| Stat::of(v))
    }
}

/// Kicks and sleeps recorded per party in each reference pair with
/// notifications: their start-ups round by round ([`Backend::in_run`]).
const START_ROUNDS: usize = 256;

/// Naps a calibration times on each party's CPU.
const NAPS: usize = 200;

/// What a nap costs a party here: `count` timed sleeps of `gap` as runs
/// take them (`std::thread::sleep`, timer slack 1 ns), on P's CPU and then
/// on C's, each timed from its planned end to the thread running again
/// [ns], and by the thread's own CPU clock across it (what E counts; on a
/// guest whose timers pass through a hypervisor much of a short sleep can
/// be charged to the sleeper). A host thread either way: a KVM guest's naps
/// are its VMM's. Where the wake-up is well above the kicked one,
/// `adaptive` pauses by kicks (`docs/control.md`), and the simulator's naps
/// pay it. `None` for a CPU whose timing thread failed.
#[allow(clippy::cast_precision_loss)]
pub fn naps(count: usize, gap: Duration) -> [Option<Naps>; 2] {
    let on = |cpu: usize| {
        std::thread::Builder::new()
            .spawn(move || {
                crate::clock::pin(cpu);
                let _ = rustix::thread::set_current_timer_slack(std::num::NonZeroU64::new(1));
                let (mut late, mut cpu) = (Vec::with_capacity(count), Vec::with_capacity(count));
                for _ in 0..count {
                    let c0 = crate::clock::thread_cpu_ns();
                    let end = std::time::Instant::now() + gap;
                    std::thread::sleep(gap);
                    late.push(end.elapsed().as_nanos() as f64);
                    cpu.push(crate::clock::thread_cpu_ns().saturating_sub(c0) as f64);
                }
                Naps {
                    late: Stat::of(late),
                    cpu: Stat::of(cpu),
                }
            })
            .ok()?
            .join()
            .ok()
    };
    [on(0), on(1)]
}

/// One CPU's naps ([`naps`]).
#[derive(Debug, Clone, Copy)]
pub struct Naps {
    /// From the planned end to the thread running again [ns].
    pub late: Stat,
    /// The thread's own CPU time across the nap [ns].
    pub cpu: Stat,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleeps_cpu_is_what_the_sleeper_paid_beyond_work_ring_and_kicks_per_sleep() {
        // 600 ns a message beyond the work, 100 of them the ring's, one
        // sleep in 4 messages: 2 us a sleep.
        let s = SleepSamples::per_sleep(&[(600.0, 0.25), (700.0, 0.25)], 100.0).unwrap();
        assert_eq!((s.n, s.mean_ns), (2, 2200.0));
        assert!(SleepSamples::per_sleep(&[], 100.0).is_none());
    }

    /// A run where C slept 1000 times in 4000 messages, spent 1.8 us of
    /// CPU a message against 1 us of work, and kicked P 40 times at 5 us
    /// each (50 ns a message).
    fn run_where_c_slept() -> PairResult {
        let mut run = PairResult::default();
        run.rates.messages = 4000;
        (run.rates.e_p_ns, run.rates.e_c_ns) = (2500.0, 1800.0);
        (run.rates.sleeps_p, run.rates.sleeps_c) = (3, 1000);
        (run.rates.notifications_p, run.rates.notifications_c) = (1000, 40);
        (run.kick_p_ns, run.kick_c_ns) = (Some(2000.0), Some(5000.0));
        run
    }

    #[test]
    fn a_sleepers_sample_is_its_cpu_beyond_work_and_own_kicks_with_its_sleeps_per_message() {
        let run = run_where_c_slept();
        // 1800 - 1000 of work - 50 of kicks; a sleep every 4 messages.
        assert_eq!(
            SleepSamples::of(&run, Party::C, 1000.0),
            Some((750.0, 0.25))
        );
        // P slept 3 times: too few for a sample.
        assert_eq!(SleepSamples::of(&run, Party::P, 2000.0), None);
        // Kicks that were sent but not timed leave the sample unknown.
        let untimed = PairResult {
            kick_c_ns: None,
            ..run
        };
        assert_eq!(SleepSamples::of(&untimed, Party::C, 1000.0), None);
        // A sleeper that sent no kick needs no kick timing.
        let mut quiet = untimed;
        quiet.rates.notifications_c = 0;
        assert_eq!(
            SleepSamples::of(&quiet, Party::C, 1000.0),
            Some((800.0, 0.25))
        );
    }
}
