//! Whether a real run measured the pair and nothing else: the checks every
//! real run makes of itself ([`check_run`]) and of the calibration it is
//! compared with ([`check_profile`]), as typed [`Warning`]s. A run with
//! any warning is *disturbed*: its numbers are reported, flagged, and
//! `validate` runs a disturbed point again before it reports it.
//!
//! The rule (`docs/cli.md`, "Disturbed runs"), with one relative margin
//! [`MARGIN`] so that it holds on any machine and at any W:
//!
//! - slow polling: a polling run took more than `(1 + MARGIN)` times its
//!   floor, the model's polling T (`max(W_P, W_C)`: neither party ever
//!   waits for a notification, so nothing but the slower party's work
//!   sets the pace);
//! - off CPU: a party that did not sleep in the window (at most once per
//!   1000 messages: `Rates::sleeper`'s "a stray sleep is not a regime")
//!   was on its CPU for less than `1 / (1 + MARGIN)` of the window:
//!   something else ran there (a preemption, the host stealing the vCPU),
//!   since a party that does not sleep is busy all the time;
//! - busy: other processes surely took more than `MARGIN` of a CPU on
//!   the pair's CPUs during the run (from `/proc/stat`, less this
//!   process's CPU time and a clock tick per CPU), which the checks above
//!   cannot see where both parties sleep;
//! - oversubscribed: more busy threads than CPUs (polling runs of this
//!   process overlapped, or one CPU);
//! - an unstable calibration (`Profile::stable`) or a negative calibrated
//!   start-up cost (`Profile::negative_starts`): the model's inputs are in
//!   doubt, and running again does not help ([`Warning::retry_may_help`]).
//!
//! What does not live here: running (`real`), repeating (`validate`).

use kicklab_model::{fmt_ns_short, Params, Party, Profile, WaitMode};
use kicklab_testbed::PairResult;
use serde::ser::SerializeMap as _;
use serde::{Serialize, Serializer};

use crate::LabError;

/// The relative margin of the rule: a run is disturbed once something
/// other than the pair took more than this share of its time (polling T
/// above `(1 + MARGIN)` times its floor, a never-sleeping party on its CPU
/// for less than `1 / (1 + MARGIN)` of the window).
///
/// Relative, so that it scales with W and with the machine's speed. 20%:
/// above what the ring itself adds to polling at the validation's
/// microsecond work (a few cache-line transfers per message, a few per
/// cent) and the run-to-run spread of quiet runs; below a preemption of a
/// fifth of a run, which is what one other busy thread on the same CPU
/// does. Work of a few hundred ns or less makes the ring's own cost a
/// large part of polling T, and such runs may be flagged (`docs/cli.md`).
pub const MARGIN: f64 = 0.2;

/// Why a real run's numbers may not be the pair's alone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Warning {
    /// A polling run was slower than its floor by more than [`MARGIN`].
    SlowPolling {
        /// Measured T [ns].
        t_ns: f64,
        /// The model's polling T [ns].
        floor_ns: f64,
    },
    /// A party that did not sleep (at most once per 1000 messages, as
    /// `Rates::sleeper` counts) ran for less than `1 / (1 + MARGIN)` of
    /// the window.
    OffCpu {
        /// Which.
        party: Party,
        /// Its CPU time over the window's wall time.
        share: f64,
        /// Times it slept in the window.
        sleeps: u64,
    },
    /// More busy threads than CPUs.
    Oversubscribed,
    /// Other processes surely took more than [`MARGIN`] of a CPU on the
    /// pair's CPUs during the run (`PairResult::others_cpu`): a sleeping
    /// party's wake-up may have waited for them.
    BusyRun {
        /// Their CPU, in CPUs.
        cpus: f64,
    },
    /// The machine's own host surely took more than [`MARGIN`] of a CPU
    /// from the pair's CPUs during the run (steal time,
    /// `PairResult::stolen_cpu`): on a virtual machine, both parties and
    /// every wake-up waited while its hypervisor ran something else.
    Stolen {
        /// The CPU taken, in CPUs.
        cpus: f64,
    },
    /// The calibration's medians did not settle.
    UnstableProfile {
        /// Rounds it took.
        rounds: usize,
    },
    /// The ring's cost per message varied across calibration's polling
    /// runs far more than a quiet machine lets it: something else ran
    /// while calibrating.
    UnsteadyRingCost {
        /// Its median [ns].
        median_ns: f64,
        /// Its 90th percentile [ns].
        p90_ns: f64,
    },
    /// Other processes took more than [`MARGIN`] of a CPU on the pair's
    /// CPUs while the calibration ran ([`Profile::others_cpu`]).
    BusyCalibration {
        /// Their CPU, in CPUs.
        cpus: f64,
    },
    /// Calibrated with fewer CPUs than the pair has threads: each
    /// notification switched threads on one CPU rather than woke a thread
    /// on another.
    SharedCpu {
        /// The CPUs the calibration had.
        cpus: usize,
    },
    /// A calibrated start-up cost came out negative (the woken party ran
    /// before the notifier's call returned); the model takes it as 0.
    NegativeStart {
        /// `S_P` or `S_C`.
        cost: &'static str,
        /// Its mean [ns].
        mean_ns: f64,
    },
}

impl Warning {
    /// Its kind, a stable lowercase name (`slow_polling`, `off_cpu`,
    /// `oversubscribed`, `busy_run`, `stolen`, `unstable_profile`,
    /// `unsteady_ring_cost`, `busy_calibration`, `shared_cpu`,
    /// `negative_start`).
    pub fn kind(&self) -> &'static str {
        match self {
            Warning::SlowPolling { .. } => "slow_polling",
            Warning::OffCpu { .. } => "off_cpu",
            Warning::Oversubscribed => "oversubscribed",
            Warning::BusyRun { .. } => "busy_run",
            Warning::Stolen { .. } => "stolen",
            Warning::UnstableProfile { .. } => "unstable_profile",
            Warning::UnsteadyRingCost { .. } => "unsteady_ring_cost",
            Warning::BusyCalibration { .. } => "busy_calibration",
            Warning::SharedCpu { .. } => "shared_cpu",
            Warning::NegativeStart { .. } => "negative_start",
        }
    }

    /// A few words: `polling 70% over its floor`, `P on its CPU for 51%`,
    /// `oversubscribed`, `unstable calibration`, `negative S_C`.
    pub fn short(&self) -> String {
        match *self {
            Warning::SlowPolling { t_ns, floor_ns } => {
                format!(
                    "polling {:.0}% over its floor",
                    100.0 * (t_ns / floor_ns - 1.0)
                )
            }
            Warning::OffCpu { party, share, .. } => {
                format!("{party:?} on its CPU for {:.0}%", 100.0 * share)
            }
            Warning::Oversubscribed => "oversubscribed".into(),
            Warning::BusyRun { cpus } => format!("{cpus:.2} CPU of others"),
            Warning::Stolen { cpus } => format!("{cpus:.2} CPU taken by the host"),
            Warning::UnstableProfile { .. } => "unstable calibration".into(),
            Warning::UnsteadyRingCost { .. } => "unsteady ring cost".into(),
            Warning::BusyCalibration { cpus } => {
                format!("calibrated beside {cpus:.2} CPU of others")
            }
            Warning::SharedCpu { cpus } => format!("calibrated on {cpus} CPU"),
            Warning::NegativeStart { cost, .. } => format!("negative {cost}"),
        }
    }

    /// The same kind of trouble (of the same party): what [`distinct`]
    /// keeps one of.
    fn same_kind(&self, o: &Warning) -> bool {
        match (self, o) {
            (Warning::OffCpu { party: a, .. }, Warning::OffCpu { party: b, .. }) => a == b,
            (Warning::NegativeStart { cost: a, .. }, Warning::NegativeStart { cost: b, .. }) => {
                a == b
            }
            _ => self.kind() == o.kind(),
        }
    }

    /// Whether running again may clear it: a disturbance of the run (yes)
    /// rather than of the calibration it is compared with (no).
    pub fn retry_may_help(&self) -> bool {
        matches!(
            self,
            Warning::SlowPolling { .. }
                | Warning::OffCpu { .. }
                | Warning::Oversubscribed
                | Warning::BusyRun { .. }
                | Warning::Stolen { .. }
        )
    }
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Warning::SlowPolling { t_ns, floor_ns } => write!(
                f,
                "polling took {}/message, {:.0}% above its floor max(W_P, W_C) = {} (margin {:.0}%): \
                 something else ran on these CPUs",
                fmt_ns_short(t_ns),
                100.0 * (t_ns / floor_ns - 1.0),
                fmt_ns_short(floor_ns),
                100.0 * MARGIN
            ),
            Warning::OffCpu {
                party,
                share,
                sleeps,
            } => write!(
                f,
                "{party:?} {} but was on its CPU for only {:.0}% of the run (margin {:.0}%): \
                 it was preempted",
                match sleeps {
                    0 => "never slept".to_string(),
                    1 => "hardly slept (once)".to_string(),
                    n => format!("hardly slept ({n} times)"),
                },
                100.0 * share,
                100.0 * MARGIN
            ),
            Warning::Oversubscribed => f.write_str(
                "more busy threads than CPUs: polling numbers are not meaningful here",
            ),
            Warning::BusyRun { cpus } => write!(
                f,
                "other processes took at least {cpus:.2} of a CPU on the pair's CPUs during the run \
                 (margin {:.0}%): a party may have waited for them",
                100.0 * MARGIN
            ),
            Warning::Stolen { cpus } => write!(
                f,
                "the machine's host took at least {cpus:.2} of a CPU from the pair's CPUs during the \
                 run (steal time; margin {:.0}%): both parties waited while it ran something else",
                100.0 * MARGIN
            ),
            Warning::UnstableProfile { rounds } => write!(
                f,
                "the calibration did not settle in {rounds} rounds: its N and S are in doubt \
                 ({} on a quiet machine)",
                recalibrate()
            ),
            Warning::UnsteadyRingCost { median_ns, p90_ns } => write!(
                f,
                "the ring's cost per message varied across calibration's polling runs (median {}, \
                 90th percentile {}): something else ran while calibrating, so its N and S are in \
                 doubt too ({} on a quiet machine)",
                fmt_ns_short(median_ns),
                fmt_ns_short(p90_ns),
                recalibrate()
            ),
            Warning::BusyCalibration { cpus } => write!(
                f,
                "other processes took {cpus:.2} of a CPU on the pair's CPUs while calibrating \
                 (margin {:.0}%): its costs are this machine's under that load, in doubt for a \
                 quiet one ({} on a quiet machine)",
                100.0 * MARGIN,
                recalibrate()
            ),
            Warning::SharedCpu { cpus } => write!(
                f,
                "calibrated with {cpus} CPU for the pair's two threads: each notification switched \
                 threads on one CPU instead of waking a thread on another, so these costs are not \
                 those of a pair on two CPUs (calibrate where it can have two: taskset, cgroups)"
            ),
            Warning::NegativeStart { cost, mean_ns } => write!(
                f,
                "calibrated {cost} is negative ({}: the woken party ran before the notifier's call \
                 returned); the model and simulator take it as 0 (docs/kvm.md)",
                fmt_ns_short(mean_ns)
            ),
        }
    }
}

/// The first warning of each kind (per party, per cost) in `w`, in order:
/// what repetitions found, said once.
pub fn distinct(w: &[Warning]) -> Vec<Warning> {
    let mut out: Vec<Warning> = Vec::new();
    for x in w {
        if !out.iter().any(|y| y.same_kind(x)) {
            out.push(*x);
        }
    }
    out
}

/// `{"kind": .., "message": ..}`.
impl Serialize for Warning {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("kind", self.kind())?;
        m.serialize_entry("message", &self.to_string())?;
        m.end()
    }
}

/// What a run says about itself: `mode` is how both parties waited;
/// `poll_floor_ns`, for a polling run, the model's polling T.
pub fn check_run(r: &PairResult, mode: WaitMode, poll_floor_ns: Option<f64>) -> Vec<Warning> {
    let mut w = Vec::new();
    let t = r.rates.t_ns;
    if let (WaitMode::Poll, Some(floor)) = (mode, poll_floor_ns) {
        if floor > 0.0 && t > floor * (1.0 + MARGIN) {
            w.push(Warning::SlowPolling {
                t_ns: t,
                floor_ns: floor,
            });
        }
    }
    // Who slept, as the validation tells regimes apart: a stray sleep in a
    // long run is not sleeping.
    let sleeper = r.rates.sleeper();
    for (party, slept, sleeps, cpu) in [
        (Party::P, ["P", "both"], r.rates.sleeps_p, r.rates.e_p_ns),
        (Party::C, ["C", "both"], r.rates.sleeps_c, r.rates.e_c_ns),
    ] {
        let share = cpu / t;
        if !slept.contains(&sleeper) && t > 0.0 && share < 1.0 / (1.0 + MARGIN) {
            w.push(Warning::OffCpu {
                party,
                share,
                sleeps,
            });
        }
    }
    if r.oversubscribed {
        w.push(Warning::Oversubscribed);
    }
    // Seen from outside the pair: a notify run in which both parties sleep
    // has no off-CPU time to check, but other processes' CPU shows.
    if let Some(cpus) = r.others_cpu.filter(|c| *c > MARGIN) {
        w.push(Warning::BusyRun { cpus });
    }
    if let Some(cpus) = r.stolen_cpu.filter(|c| *c > MARGIN) {
        w.push(Warning::Stolen { cpus });
    }
    w
}

/// What is doubtful in the calibration a run is compared with.
pub fn check_profile(p: &Profile) -> Vec<Warning> {
    let mut w = Vec::new();
    if !p.stable {
        w.push(Warning::UnstableProfile { rounds: p.rounds });
    }
    // Quiet, the polling runs agree within a few percent (133-145 ns for a
    // median of 135 here); disturbed, their 90th percentile was 5x the
    // median. Twice the median plus 100 ns leaves room for a slower
    // machine's jitter.
    if let Some(o) = &p.overhead {
        if o.p90_ns > 2.0 * o.median_ns + 100.0 {
            w.push(Warning::UnsteadyRingCost {
                median_ns: o.median_ns,
                p90_ns: o.p90_ns,
            });
        }
    }
    // Other processes' CPU, measured apart from the pair's own: more than
    // the margin of one CPU is a load the calibration's costs carry.
    if let Some(cpus) = p.others_cpu.filter(|c| *c > MARGIN) {
        w.push(Warning::BusyCalibration { cpus });
    }
    // 0: not recorded (a profile made from a trace, or the paper's costs).
    if p.cpus == 1 {
        w.push(Warning::SharedCpu { cpus: p.cpus });
    }
    for cost in p.negative_starts() {
        let mean_ns = if cost == "S_P" { p.sp } else { p.sc }.mean_ns;
        w.push(Warning::NegativeStart { cost, mean_ns });
    }
    w
}

/// The model's polling T of the pair `params` with `profile`'s costs: the
/// floor of a polling run.
///
/// # Errors
///
/// Invalid parameters.
pub fn poll_floor_ns(params: &Params, profile: &Profile) -> Result<f64, LabError> {
    Ok(crate::real::predicted(params, profile, WaitMode::Poll)?.map_or(f64::NAN, |p| p.rates.t_ns))
}

/// Every warning about one real run of `params` that waited by `mode`,
/// compared with `profile`: [`check_run`] (with the floor of a polling
/// run), then [`check_profile`].
///
/// # Errors
///
/// Invalid parameters.
pub fn check(
    r: &PairResult,
    params: &Params,
    mode: WaitMode,
    profile: &Profile,
) -> Result<Vec<Warning>, LabError> {
    check_modes(r, params, [mode, mode], profile)
}

/// [`check`] for a run whose P and C waited by `modes` (the polling floor
/// only where both polled). A party that napped (a timed sleep) counts as
/// sleeping, as one that blocked: its sleeps include its naps.
///
/// # Errors
///
/// Invalid parameters.
pub fn check_modes(
    r: &PairResult,
    params: &Params,
    modes: [WaitMode; 2],
    profile: &Profile,
) -> Result<Vec<Warning>, LabError> {
    let both_poll = modes == [WaitMode::Poll, WaitMode::Poll];
    let floor = if both_poll {
        Some(poll_floor_ns(params, profile)?)
    } else {
        None
    };
    let mut w = check_run(r, if both_poll { WaitMode::Poll } else { modes[0] }, floor);
    w.extend(check_profile(profile));
    Ok(w)
}

/// Where a party runs `adaptive` and the run's p99 latency came out above
/// the bound it keeps (the tightest of the two), a line saying so; a
/// bound under a microsecond was most likely written without its unit (a
/// bare number is nanoseconds), and the line says that too. `None` where
/// no party adapts, latency was not measured, or the bound held.
/// `written_bare`: whether the bound was typed as a bare number.
pub fn latency_bound_missed(
    modes: [kicklab_model::WaitMode; 2],
    latency: Option<&kicklab_model::Latency>,
    written_bare: bool,
) -> Option<String> {
    let bound = kicklab_model::WaitMode::latency_bound(modes)?;
    let p99 = latency?.p99;
    (p99 > bound).then(|| {
        let fmt = kicklab_model::fmt_ns;
        let unit = if bound < 1e3 && written_bare {
            format!(" (a bare number is nanoseconds: for {bound} microseconds write {bound}us)")
        } else {
            String::new()
        };
        format!(
            "p99 latency {} is above the bound adaptive keeps, {}{unit}",
            fmt(p99),
            fmt(bound)
        )
    })
}

/// The advice a doubtful calibration's warning gives: calibrate again.
fn recalibrate() -> kicklab_model::CommandLine {
    kicklab_model::CommandLine::new("calibrate").arg(kicklab_model::Flag::Save, "FILE")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A run of 1000 messages at `t_ns` per message; P and C each busy
    /// `e_ns` of it and sleeping as given.
    pub(crate) fn run(t_ns: f64, e_ns: [f64; 2], sleeps: [u64; 2]) -> PairResult {
        PairResult {
            rates: kicklab_model::Rates {
                t_ns,
                e_ns: e_ns[0] + e_ns[1],
                e_p_ns: e_ns[0],
                e_c_ns: e_ns[1],
                messages: 1000,
                sleeps_p: sleeps[0],
                sleeps_c: sleeps[1],
                ..kicklab_model::Rates::default()
            },
            pinned: true,
            ..PairResult::default()
        }
    }

    pub(crate) fn profile() -> Profile {
        let s = kicklab_model::Stat::of(vec![500.0; 3]);
        Profile {
            np: s,
            nc: s,
            sp: s,
            sc: s,
            np_cpu: s,
            nc_cpu: s,
            sp_cpu: s,
            sc_cpu: s,
            gap_ns: 50_000.0,
            rounds: 2,
            tsc_ghz: 2.0,
            cpus: 2,
            ..Profile::of_means("futex", [500.0; 4])
        }
    }

    #[test]
    fn polling_within_the_margin_of_its_floor_is_quiet() {
        let floor = 1100.0;
        let quiet = run(floor * (1.0 + MARGIN) * 0.99, [1300.0, 1300.0], [0, 0]);
        assert_eq!(check_run(&quiet, WaitMode::Poll, Some(floor)), []);
        let slow = run(floor * (1.0 + MARGIN) * 1.01, [1340.0, 1340.0], [0, 0]);
        let w = check_run(&slow, WaitMode::Poll, Some(floor));
        assert!(
            matches!(w[..], [Warning::SlowPolling { floor_ns, .. }] if floor_ns == floor),
            "{w:?}"
        );
        assert!(w[0].retry_may_help());
        assert!(w[0].to_string().contains("above its floor"), "{}", w[0]);
        // The floor applies to polling runs only.
        assert_eq!(check_run(&slow, WaitMode::Notify, None), []);
    }

    #[test]
    fn other_processes_on_the_pairs_cpus_disturb_a_run_where_both_sleep() {
        // Both parties sleep: no off-CPU check applies, the load shows.
        let mut r = run(2000.0, [800.0, 600.0], [40, 50]);
        r.others_cpu = Some(0.45);
        let w = check_run(&r, WaitMode::Notify, None);
        assert_eq!(w, [Warning::BusyRun { cpus: 0.45 }]);
        assert!(w[0].retry_may_help());
        assert!(w[0].to_string().contains("0.45 of a CPU"), "{}", w[0]);
        r.others_cpu = Some(MARGIN * 0.9);
        assert_eq!(check_run(&r, WaitMode::Notify, None), []);
        r.others_cpu = None;
        assert_eq!(check_run(&r, WaitMode::Notify, None), []);
    }

    #[test]
    fn a_host_that_steals_the_pairs_cpus_disturbs_a_run() {
        let mut r = run(2000.0, [800.0, 600.0], [40, 50]);
        r.stolen_cpu = Some(0.3);
        let w = check_run(&r, WaitMode::Notify, None);
        assert_eq!(w, [Warning::Stolen { cpus: 0.3 }]);
        assert!(w[0].retry_may_help());
        assert_eq!(w[0].kind(), "stolen");
        assert!(w[0].to_string().contains("steal time"), "{}", w[0]);
        r.stolen_cpu = Some(MARGIN * 0.9);
        assert_eq!(check_run(&r, WaitMode::Notify, None), []);
    }

    #[test]
    fn a_party_that_never_slept_must_have_been_on_its_cpu() {
        // FC: C sleeps (its CPU share says nothing), P never does and was
        // on its CPU for half the run.
        let r = run(2000.0, [1000.0, 300.0], [0, 50]);
        let w = check_run(&r, WaitMode::Notify, None);
        assert_eq!(
            w,
            [Warning::OffCpu {
                party: Party::P,
                share: 0.5,
                sleeps: 0
            }]
        );
        assert!(w[0].to_string().contains("never slept"), "{}", w[0]);
        assert!(w[0].to_string().contains("preempted"), "{}", w[0]);
        // A stray sleep (1 in 1000 messages) does not make a sleeper; 2 do.
        let r = run(2000.0, [1000.0, 300.0], [1, 50]);
        let w = check_run(&r, WaitMode::Notify, None);
        assert!(
            matches!(w[..], [Warning::OffCpu { sleeps: 1, .. }]),
            "{w:?}"
        );
        assert!(w[0].to_string().contains("hardly slept (once)"), "{}", w[0]);
        let r = run(2000.0, [1000.0, 300.0], [2, 50]);
        assert_eq!(check_run(&r, WaitMode::Notify, None), []);
        // On its CPU all the time (within the margin): quiet.
        let r = run(2000.0, [2000.0 / (1.0 + MARGIN) + 1.0, 300.0], [0, 50]);
        assert_eq!(check_run(&r, WaitMode::Notify, None), []);
        // Polling: both are checked.
        let r = run(1100.0, [1100.0, 500.0], [0, 0]);
        let w = check_run(&r, WaitMode::Poll, Some(1100.0));
        assert!(
            matches!(
                w[..],
                [Warning::OffCpu {
                    party: Party::C,
                    ..
                }]
            ),
            "{w:?}"
        );
    }

    #[test]
    fn oversubscription_disturbs() {
        let mut r = run(1100.0, [1100.0, 1100.0], [0, 0]);
        r.oversubscribed = true;
        assert_eq!(
            check_run(&r, WaitMode::Poll, Some(1100.0)),
            [Warning::Oversubscribed]
        );
    }

    #[test]
    fn doubtful_calibrations_disturb_and_retrying_does_not_help() {
        let mut p = profile();
        assert_eq!(check_profile(&p), []);
        p.stable = false;
        p.sc.mean_ns = -40.0;
        let w = check_profile(&p);
        assert_eq!(
            w,
            [
                Warning::UnstableProfile { rounds: 2 },
                Warning::NegativeStart {
                    cost: "S_C",
                    mean_ns: -40.0
                }
            ]
        );
        assert!(w.iter().all(|w| !w.retry_may_help()));
        // A ring cost measured while something else ran (numbers from a
        // disturbed calibration here) is doubtful; a steady one is not.
        let mut q = profile();
        q.overhead = Some(kicklab_model::Stat {
            median_ns: 500.0,
            mean_ns: 1094.0,
            p10_ns: 246.0,
            p90_ns: 2676.0,
            sigma_log: 0.98,
            n: 5,
        });
        assert_eq!(
            check_profile(&q),
            [Warning::UnsteadyRingCost {
                median_ns: 500.0,
                p90_ns: 2676.0
            }]
        );
        assert!(!check_profile(&q)[0].retry_may_help());
        q.overhead = Some(kicklab_model::Stat {
            median_ns: 135.0,
            mean_ns: 137.0,
            p10_ns: 134.0,
            p90_ns: 145.0,
            sigma_log: 0.03,
            n: 5,
        });
        assert_eq!(check_profile(&q), []);
        // Beside a build (one CPU's worth of other work) the calibration
        // is the loaded machine's; a few ticks of the kernel's are not.
        q.others_cpu = Some(0.93);
        assert_eq!(check_profile(&q), [Warning::BusyCalibration { cpus: 0.93 }]);
        // Calibrated on one CPU: every cost is a switch on it.
        let one = Profile {
            cpus: 1,
            ..profile()
        };
        assert_eq!(check_profile(&one), [Warning::SharedCpu { cpus: 1 }]);
        assert!(!check_profile(&one)[0].retry_may_help());
        assert!(!check_profile(&q)[0].retry_may_help());
        q.others_cpu = Some(0.01);
        assert_eq!(check_profile(&q), []);
        // `check` adds them to the run's own.
        let r = run(1100.0, [1100.0, 1100.0], [0, 0]);
        let all = check(&r, &Params::default(), WaitMode::Poll, &p).unwrap();
        assert_eq!(all, w);
    }

    #[test]
    fn the_floor_of_a_polling_run_is_the_slower_work() {
        let p = Params::default();
        assert!((poll_floor_ns(&p, &profile()).unwrap() - 1100.0).abs() < 1e-9);
        let slow = run(2000.0, [2000.0, 2000.0], [0, 0]);
        let w = check(&slow, &p, WaitMode::Poll, &profile()).unwrap();
        assert!(matches!(w[..], [Warning::SlowPolling { .. }]), "{w:?}");
    }

    #[test]
    fn distinct_keeps_the_first_of_each_kind_and_party() {
        let off = |party, share| Warning::OffCpu {
            party,
            share,
            sleeps: 0,
        };
        let slow = |t_ns| Warning::SlowPolling {
            t_ns,
            floor_ns: 1000.0,
        };
        let w = [
            slow(1500.0),
            off(Party::P, 0.5),
            slow(1700.0),
            off(Party::C, 0.6),
            off(Party::P, 0.4),
        ];
        assert_eq!(
            distinct(&w),
            [slow(1500.0), off(Party::P, 0.5), off(Party::C, 0.6)]
        );
        assert_eq!(slow(1500.0).short(), "polling 50% over its floor");
        assert_eq!(off(Party::C, 0.6).short(), "C on its CPU for 60%");
    }

    #[test]
    fn warnings_serialize_as_kind_and_message() {
        let v = serde_json::to_value(Warning::Oversubscribed).unwrap();
        assert_eq!(v["kind"], "oversubscribed");
        assert!(v["message"].as_str().unwrap().contains("CPUs"));
    }
}
