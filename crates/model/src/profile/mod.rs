//! Calibrated costs ([`Profile`], [`Stat`], [`IdlePoint`]): what a
//! calibration of a machine's notification costs N, visibilities V and
//! start-up costs S produced, the ring's own cost per message, how S grows
//! with the time a party idled, and how the model and the simulator use
//! them. Plain data: the measurement itself lives in the testbed, so the
//! model reads a profile without linking any hardware code.

use serde::{Deserialize, Serialize};

use crate::{Cost, Party};

mod apply;
mod check;
mod idle;
#[cfg(test)]
mod tests;

pub use idle::REFERENCE_PAIR_NS;

/// Which side a guest is, where one party runs in a VM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Transmit: the guest produces, the host consumes (the paper's set-up).
    #[default]
    Tx,
    /// Receive: the host produces, the guest consumes.
    Rx,
}

impl Direction {
    /// `tx` or `rx`.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Tx => "tx",
            Direction::Rx => "rx",
        }
    }
}

impl std::str::FromStr for Direction {
    type Err = String;
    fn from_str(s: &str) -> Result<Direction, String> {
        match s {
            "tx" => Ok(Direction::Tx),
            "rx" => Ok(Direction::Rx),
            other => Err(format!(
                "unknown direction `{other}` (tx: the guest produces; rx: the guest consumes)"
            )),
        }
    }
}

/// Summary of one measured cost [ns].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Stat {
    /// Median.
    pub median_ns: f64,
    /// Mean.
    pub mean_ns: f64,
    /// 10th percentile.
    pub p10_ns: f64,
    /// 90th percentile.
    pub p90_ns: f64,
    /// Standard deviation of ln(x): the lognormal sigma of the spread.
    pub sigma_log: f64,
    /// Samples.
    pub n: usize,
}

impl Stat {
    /// A cost measured as one value: every statistic `ns`, no spread.
    pub fn constant(ns: f64) -> Stat {
        Stat {
            median_ns: ns,
            mean_ns: ns,
            p10_ns: ns,
            p90_ns: ns,
            sigma_log: 0.0,
            n: 1,
        }
    }

    /// Summarizes samples [ns].
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    pub fn of(mut v: Vec<f64>) -> Stat {
        v.sort_by(f64::total_cmp);
        let n = v.len().max(1);
        let q = |f: f64| {
            v.get(((n - 1) as f64 * f).round() as usize)
                .copied()
                .unwrap_or(0.0)
        };
        let mean = v.iter().sum::<f64>() / n as f64;
        let logs: Vec<f64> = v.iter().map(|x| x.max(1.0).ln()).collect();
        let lm = logs.iter().sum::<f64>() / n as f64;
        let sigma_log = (logs.iter().map(|l| (l - lm).powi(2)).sum::<f64>() / n as f64).sqrt();
        Stat {
            median_ns: q(0.5),
            mean_ns: mean,
            p10_ns: q(0.1),
            p90_ns: q(0.9),
            sigma_log,
            n: v.len(),
        }
    }

    /// As a cost for the model (its mean) and the simulator (a lognormal
    /// with the measured mean and log-spread).
    ///
    /// A negative mean (a start-up measured to end before the notifier's
    /// call returned, possible across the VM boundary) becomes 0: the model
    /// has no way to start a party before its notification ends.
    pub fn as_cost(&self) -> Cost {
        if self.mean_ns <= 0.0 {
            return Cost::Const(0.0);
        }
        if self.sigma_log > 1e-9 {
            Cost::LogNormal {
                mean_ns: self.mean_ns,
                sigma: self.sigma_log.min(crate::cost::MAX_LOG_SIGMA),
            }
        } else {
            Cost::Const(self.mean_ns)
        }
    }
}

/// The backends a calibration runs on: a profile names one of them.
pub const BACKENDS: [&str; 4] = ["futex", "eventfd", "pipe", "kvm"];

/// A calibrated backend: what `--profile` loads.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Profile {
    /// Backend name.
    pub backend: String,
    /// N_P: P's cost of notifying C (P on CPU 0, C on CPU 1).
    #[serde(rename = "NP")]
    pub np: Stat,
    /// N_C: C's cost of notifying P.
    #[serde(rename = "NC")]
    pub nc: Stat,
    /// S_P: notify to P running (wall).
    #[serde(rename = "SP")]
    pub sp: Stat,
    /// S_C: notify to C running (wall).
    #[serde(rename = "SC")]
    pub sc: Stat,
    /// P's thread CPU time across its notify call (compare with N_P: the
    /// call is all CPU, so the two should agree).
    #[serde(rename = "NP_cpu")]
    pub np_cpu: Stat,
    /// C's thread CPU time across its notify call.
    #[serde(rename = "NC_cpu")]
    pub nc_cpu: Stat,
    /// P's own CPU time in its wake-up: threads, from the start of C's
    /// notification to P running (P's clock read by C just before it
    /// notifies; across the whole wait in profiles from before V); kvm,
    /// the waiter's CPU across its wait (the host thread's, or the guest's
    /// vCPU thread's per wake-up).
    #[serde(rename = "SP_cpu")]
    pub sp_cpu: Stat,
    /// C's own CPU time in its wake-up (as [`Profile::sp_cpu`]).
    #[serde(rename = "SC_cpu")]
    pub sc_cpu: Stat,
    /// Idle time of the waiter before each notification [ns].
    pub gap_ns: f64,
    /// Rounds until the medians were stable.
    pub rounds: usize,
    /// Whether the medians settled within 5% before the round limit.
    pub stable: bool,
    /// TSC rate [GHz].
    pub tsc_ghz: f64,
    /// CPUs seen.
    pub cpus: usize,
    /// KVM: which side the guest is (`tx`: the guest is P).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// KVM: how the guest ran, `user` or `emulated` (`calibrate --guest`);
    /// absent in profiles from before it was recorded, which are `user`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest: Option<String>,
    /// KVM: uncertainty of the guest-to-host clock mapping [ns].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_sync_ns: Option<f64>,
    /// KVM: how far the clock offset moved during a round [ns].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock_drift_ns: Option<f64>,
    /// KVM: from the start of the guest's kick until a host thread that
    /// polls sees it [ns]. Less than N_P: the model's "the peer becomes
    /// runnable at the end of N" does not hold here (`docs/kvm.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kick_visible: Option<Stat>,
    /// V_P: from the start of P's notification until C is runnable [ns],
    /// 0 <= V_P <= N_P (`docs/calibration.md`, "Visibility"). `None` in
    /// profiles from before V: then V_P = N_P and S_C is [`Profile::sc`].
    #[serde(rename = "VP", default, skip_serializing_if = "Option::is_none")]
    pub vp: Option<Stat>,
    /// V_C: from the start of C's notification until P is runnable [ns].
    #[serde(rename = "VC", default, skip_serializing_if = "Option::is_none")]
    pub vc: Option<Stat>,
    /// S_P as the model takes it with [`Profile::vc`]: from P becoming
    /// runnable to P running, R - V_C, where R = N_C + S_P (wall) is the
    /// time from the start of C's notification to P running.
    #[serde(rename = "SP_V", default, skip_serializing_if = "Option::is_none")]
    pub sp_v: Option<Stat>,
    /// S_C as the model takes it with [`Profile::vp`]: R - V_P, R = N_P +
    /// S_C (wall).
    #[serde(rename = "SC_V", default, skip_serializing_if = "Option::is_none")]
    pub sc_v: Option<Stat>,
    /// The ring's own cost per message [ns]: T of a polling pair with no
    /// work (W_P = W_C = 0) over the backend's real ring, one sample per
    /// run. [`Profile::apply`] adds it to W_P and W_C.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead: Option<Stat>,
    /// The ring's cost per message to P when P sets the pace and C sleeps
    /// (W_P = 4 us, W_C = 0, notify, C woken every L/2 messages: P's CPU
    /// per message less W_P and its kicks), one sample per run. Without a polling peer on the
    /// shared lines it is below [`Profile::overhead`] (KVM here: the host
    /// consumer's 71-90 ns against 100-130 ns); [`Profile::apply_notify`]
    /// adds it to W_P (`docs/calibration.md`, "The ring's cost per
    /// message").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_p: Option<Stat>,
    /// The same for C: W_C = 4 us, W_P = 0, P woken every L/2 free slots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_c: Option<Stat>,
    /// N, V and S after other idle gaps, ascending by gap
    /// ([`Profile::start_at_idle`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub idle_curve: Vec<IdlePoint>,
    /// N and the wake-up as runs meet them, from reference pairs; where
    /// present, [`Profile::apply`] takes N and S from here (the isolated
    /// wake-ups above can cost a parked waiter in a way runs do not meet;
    /// `docs/calibration.md`, "In-run costs").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_run: Option<InRunCosts>,
    /// A timed sleep of the profile's gap as a party's naps take it
    /// (`std::thread::sleep`, timer slack 1 ns), on P's CPU: from its
    /// planned end to the thread running again [ns]. The simulator's naps
    /// pay this ([`Profile::nap_ns`]) where the model would charge S.
    #[serde(rename = "nap_P", default, skip_serializing_if = "Option::is_none")]
    pub nap_p: Option<Stat>,
    /// The same on C's CPU.
    #[serde(rename = "nap_C", default, skip_serializing_if = "Option::is_none")]
    pub nap_c: Option<Stat>,
    /// The thread's own CPU time across each of those naps on P's CPU
    /// [ns]: what a nap adds to E beside its wake-up (reported by
    /// `calibrate`; nothing takes it yet).
    #[serde(rename = "nap_P_cpu", default, skip_serializing_if = "Option::is_none")]
    pub nap_p_cpu: Option<Stat>,
    /// The same on C's CPU.
    #[serde(rename = "nap_C_cpu", default, skip_serializing_if = "Option::is_none")]
    pub nap_c_cpu: Option<Stat>,
    /// How much CPU other processes took on the pair's two CPUs while the
    /// calibration ran, in CPUs (0.5: half of one CPU on average), from
    /// `/proc/stat` less this process's own CPU time; `None` where not
    /// measured (no `/proc/stat`, or a profile from before it). Costs
    /// measured beside a build are that machine's under that load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub others_cpu: Option<f64>,
}

/// N and the wake-up R = V + S timed inside runs of reference pairs (means
/// over their kicks and wake-ups, one sample per run) [ns], and what a
/// sleep cost the sleeper's CPU there. A part is `None` where the runs
/// could not time it (a guest's kick or wake-up) or the profile predates
/// it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct InRunCosts {
    /// P's notify call (C asleep), in a pair where C is the faster party.
    #[serde(default)]
    pub np: Option<Stat>,
    /// C's notify call (P asleep), in the mirror pair.
    #[serde(default)]
    pub nc: Option<Stat>,
    /// From the start of C's notify to P running after a sleep.
    #[serde(default)]
    pub rp: Option<Stat>,
    /// From the start of P's notify to C running after a sleep.
    #[serde(default)]
    pub rc: Option<Stat>,
    /// P's CPU time per sleep in the pair where it sleeps (the mirror):
    /// its thread CPU per message less its work, the ring's cost to it
    /// ([`Profile::overhead_p`]) and its kicks, times messages per sleep.
    /// Going to sleep, the futex or poll calls and the wake-up: what E
    /// pays per sleep, where the isolated `SP_cpu` times the wake-up
    /// alone, after a long idle.
    #[serde(
        rename = "sleep_P_cpu",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub sleep_p_cpu: Option<Stat>,
    /// C's, the same, in the pair where C sleeps.
    #[serde(
        rename = "sleep_C_cpu",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub sleep_c_cpu: Option<Stat>,
    /// P's start-up round by round in the mirror pair: from the end of
    /// C's notify to P running again (R_P - N_C, the s_P of the batch
    /// race, `docs/model.md`), from the runs' records of their first
    /// kicks and sleeps; negative where P woke inside the notify.
    #[serde(rename = "start_P", default, skip_serializing_if = "Option::is_none")]
    pub start_p: Option<Stat>,
    /// C's, the same (R_C - N_P), in the pair where C sleeps.
    #[serde(rename = "start_C", default, skip_serializing_if = "Option::is_none")]
    pub start_c: Option<Stat>,
}

/// N, V and S measured after one idle gap: a point of
/// [`Profile::idle_curve`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IdlePoint {
    /// How long the woken party idled before each notification [ns].
    pub gap_ns: f64,
    /// N_P.
    #[serde(rename = "NP")]
    pub np: Stat,
    /// N_C.
    #[serde(rename = "NC")]
    pub nc: Stat,
    /// S_P as the model takes it ([`Profile::start`]: after V_C where V was
    /// derived, else the wall S_P).
    #[serde(rename = "SP")]
    pub sp: Stat,
    /// S_C as the model takes it.
    #[serde(rename = "SC")]
    pub sc: Stat,
    /// V_P, where derived.
    #[serde(rename = "VP", default, skip_serializing_if = "Option::is_none")]
    pub vp: Option<Stat>,
    /// V_C, where derived.
    #[serde(rename = "VC", default, skip_serializing_if = "Option::is_none")]
    pub vc: Option<Stat>,
}

impl IdlePoint {
    /// The point a calibration at one gap makes.
    pub fn of(p: &Profile) -> IdlePoint {
        IdlePoint {
            gap_ns: p.gap_ns,
            np: p.np,
            nc: p.nc,
            sp: *p.start(Party::P),
            sc: *p.start(Party::C),
            vp: p.visibility(Party::P).copied(),
            vc: p.visibility(Party::C).copied(),
        }
    }

    /// The model's start-up of `party` at this gap.
    pub fn start(&self, party: Party) -> &Stat {
        match party {
            Party::P => &self.sp,
            Party::C => &self.sc,
        }
    }

    /// When the notification that wakes `party` makes it runnable, from
    /// the notification's start: its V where derived, else its N.
    pub fn wakes_after(&self, party: Party) -> &Stat {
        match party {
            Party::P => self.vc.as_ref().unwrap_or(&self.nc),
            Party::C => self.vp.as_ref().unwrap_or(&self.np),
        }
    }
}

/// Splits a wake-up into V and the model's S: `n` is the notification's
/// duration, `r` the time from its start to the woken party running, and
/// `s_cpu` the woken party's own CPU time in it. The start-up is the
/// party's own CPU time and the rest of R is when it became runnable:
/// V = R - S cpu within [0, N], S = R - V. A party that resumes after the
/// notification ends with less CPU than that gap gets V = N and S = R - N
/// (the paper's rule). Returns `(V, S)` [ns]; used for every sample of a
/// calibration and for the in-run costs.
pub fn split_wake_up(n: f64, r: f64, s_cpu: f64) -> (f64, f64) {
    let v = (r - s_cpu).clamp(0.0, n.max(0.0));
    (v, r - v)
}
