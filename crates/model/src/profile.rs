//! Calibrated costs ([`Profile`], [`Stat`], [`IdlePoint`]): what a
//! calibration of a machine's notification costs N, visibilities V and
//! start-up costs S produced, the ring's own cost per message, how S grows
//! with the time a party idled, and how the model and the simulator use
//! them. Plain data: the measurement itself lives in the testbed, so the
//! model reads a profile without linking any hardware code.

use serde::{Deserialize, Serialize};

use crate::{Cost, IdleScale, Party};

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

impl Profile {
    /// Checks what a profile file may hold before anything uses it: every
    /// statistic finite and within [`crate::MAX_DURATION_NS`] (1 h) either
    /// way; the notification costs N (a call's duration on one clock), the
    /// visibilities V (every sample held within [0, N]), the polling
    /// pair's ring cost and the naps' CPU >= 0, as calibration measures
    /// them (a start-up, an in-run wake-up, a CPU part or a pace-setter's
    /// ring cost less its kicks may come out negative, timed across two
    /// clocks or as a difference, and the model takes such as 0); spreads
    /// of at least 0; an idle curve of at most [`IdleScale::MAX_POINTS`]
    /// points at increasing gaps above 0. A V above its N (kicks timed
    /// apart from the ones that set V) is cut to N where the model takes
    /// it.
    ///
    /// # Errors
    ///
    /// The first value out of range, named as the profile's JSON names it.
    pub fn check(&self) -> Result<(), String> {
        let max = crate::MAX_DURATION_NS;
        let stat = |name: &str, st: &Stat, signed: bool| -> Result<(), String> {
            for (what, v) in [
                ("median_ns", st.median_ns),
                ("mean_ns", st.mean_ns),
                ("p10_ns", st.p10_ns),
                ("p90_ns", st.p90_ns),
            ] {
                let low = if signed { -max } else { 0.0 };
                if !(v.is_finite() && (low..=max).contains(&v)) {
                    return Err(format!(
                        "{name}.{what} = {v:e}: must be {} (calibration measures it so)",
                        if signed {
                            "finite and within 1h either way"
                        } else {
                            "from 0 to 1h"
                        }
                    ));
                }
            }
            if st.p10_ns > st.p90_ns {
                return Err(format!(
                    "{name}: p10_ns = {:e} above p90_ns = {:e} (a 10th percentile is never above the 90th)",
                    st.p10_ns, st.p90_ns
                ));
            }
            if !(st.sigma_log.is_finite() && st.sigma_log >= 0.0) {
                return Err(format!(
                    "{name}.sigma_log = {:e}: must be >= 0",
                    st.sigma_log
                ));
            }
            Ok(())
        };
        let opt = |name: &str, st: &Option<Stat>, signed: bool| {
            st.as_ref().map_or(Ok(()), |st| stat(name, st, signed))
        };
        for (name, st, signed) in [
            ("NP", &self.np, false),
            ("NC", &self.nc, false),
            ("SP", &self.sp, true),
            ("SC", &self.sc, true),
            ("NP_cpu", &self.np_cpu, true),
            ("NC_cpu", &self.nc_cpu, true),
            ("SP_cpu", &self.sp_cpu, true),
            ("SC_cpu", &self.sc_cpu, true),
        ] {
            stat(name, st, signed)?;
        }
        for (name, st, signed) in [
            ("VP", &self.vp, false),
            ("VC", &self.vc, false),
            ("SP_V", &self.sp_v, true),
            ("SC_V", &self.sc_v, true),
            ("kick_visible", &self.kick_visible, true),
            ("overhead", &self.overhead, false),
            ("overhead_p", &self.overhead_p, true),
            ("overhead_c", &self.overhead_c, true),
            ("nap_P", &self.nap_p, true),
            ("nap_C", &self.nap_c, true),
            ("nap_P_cpu", &self.nap_p_cpu, false),
            ("nap_C_cpu", &self.nap_c_cpu, false),
        ] {
            opt(name, st, signed)?;
        }
        if let Some(r) = &self.in_run {
            opt("in_run.np", &r.np, false)?;
            opt("in_run.nc", &r.nc, false)?;
            opt("in_run.rp", &r.rp, true)?;
            opt("in_run.rc", &r.rc, true)?;
            opt("in_run.sleep_P_cpu", &r.sleep_p_cpu, true)?;
            opt("in_run.sleep_C_cpu", &r.sleep_c_cpu, true)?;
        }
        if !BACKENDS.contains(&self.backend.as_str()) {
            return Err(format!(
                "backend = `{}`: one of {} (the backend the calibration ran on)",
                crate::shown(&self.backend),
                BACKENDS.join(", ")
            ));
        }
        if !(self.tsc_ghz.is_finite() && self.tsc_ghz >= 0.0) {
            return Err(format!(
                "tsc_ghz = {:e}: must be finite and >= 0 (0: not measured)",
                self.tsc_ghz
            ));
        }
        // A wall start-up may come out negative (the peer runs before the
        // notifier's call returns: a kick seen half-way through it), never
        // by more than the call itself: the peer cannot run before the
        // notification began.
        for (name, s, n, by) in [
            ("SP", &self.sp, &self.nc, "NC"),
            ("SC", &self.sc, &self.np, "NP"),
        ] {
            if s.median_ns < -n.median_ns {
                return Err(format!(
                    "{name}.median_ns = {:e}: a start-up may be negative by at most the \
                     notification it follows ({by}.median_ns = {:e}): the peer cannot run before \
                     the notification began",
                    s.median_ns, n.median_ns
                ));
            }
        }
        if let Some(o) = self.others_cpu {
            if !(o.is_finite() && (0.0..=1e4).contains(&o)) {
                return Err(format!(
                    "others_cpu = {o:e}: must be from 0 to 10000 (CPUs' worth of other processes' work)"
                ));
            }
        }
        if !(self.gap_ns.is_finite() && self.gap_ns >= 0.0 && self.gap_ns <= max) {
            return Err(format!("gap_ns = {:e}: must be from 0 to 1h", self.gap_ns));
        }
        if self.idle_curve.len() > IdleScale::MAX_POINTS {
            return Err(format!(
                "idle_curve: at most {} points (calibrate measures no more), got {}",
                IdleScale::MAX_POINTS,
                self.idle_curve.len()
            ));
        }
        let mut last = 0.0;
        for (i, q) in self.idle_curve.iter().enumerate() {
            if !(q.gap_ns.is_finite() && q.gap_ns > last && q.gap_ns <= max) {
                return Err(format!(
                    "idle_curve[{i}].gap_ns = {:e}: gaps must be > 0, at most 1h and increase",
                    q.gap_ns
                ));
            }
            last = q.gap_ns;
            let at = |n: &str| format!("idle_curve[{i}].{n}");
            stat(&at("NP"), &q.np, false)?;
            stat(&at("NC"), &q.nc, false)?;
            stat(&at("SP"), &q.sp, true)?;
            stat(&at("SC"), &q.sc, true)?;
            opt(&at("VP"), &q.vp, false)?;
            opt(&at("VC"), &q.vc, false)?;
        }
        Ok(())
    }

    /// A profile of constant costs (N_P, N_C, S_P, S_C) [ns] and nothing
    /// else: for tests and for costs known from elsewhere.
    pub fn of_means(backend: &str, [np, nc, sp, sc]: [f64; 4]) -> Profile {
        let c = Stat::constant;
        Profile {
            backend: backend.into(),
            np: c(np),
            nc: c(nc),
            sp: c(sp),
            sc: c(sc),
            np_cpu: c(np),
            nc_cpu: c(nc),
            sp_cpu: c(sp),
            sc_cpu: c(sc),
            gap_ns: 0.0,
            rounds: 1,
            stable: true,
            tsc_ghz: 0.0,
            cpus: 0,
            direction: None,
            clock_sync_ns: None,
            clock_drift_ns: None,
            kick_visible: None,
            vp: None,
            vc: None,
            sp_v: None,
            sc_v: None,
            overhead: None,
            overhead_p: None,
            overhead_c: None,
            idle_curve: Vec::new(),
            in_run: None,
            nap_p: None,
            nap_p_cpu: None,
            nap_c_cpu: None,
            nap_c: None,
            others_cpu: None,
        }
    }

    /// V of `party`'s notification (V_P for P: when C becomes runnable),
    /// where the calibration derived one together with the matching S.
    pub fn visibility(&self, party: Party) -> Option<&Stat> {
        match party {
            Party::P => self.vp.as_ref().filter(|_| self.sc_v.is_some()),
            Party::C => self.vc.as_ref().filter(|_| self.sp_v.is_some()),
        }
    }

    /// The start-up of `party` as the model takes it: from becoming
    /// runnable to running (S_P after V_C where V was derived, else the
    /// wall S_P, from the end of the notification).
    pub fn start(&self, party: Party) -> &Stat {
        match party {
            Party::P => self
                .sp_v
                .as_ref()
                .filter(|_| self.vc.is_some())
                .unwrap_or(&self.sp),
            Party::C => self
                .sc_v
                .as_ref()
                .filter(|_| self.vp.is_some())
                .unwrap_or(&self.sc),
        }
    }

    /// The start-up costs the model cannot take as measured, by name: a
    /// mean that stays negative after V has absorbed what it can (the
    /// woken party ran before its notification started, or, in a profile
    /// without V, before the notifier's call returned). The model takes
    /// them as 0 (`docs/kvm.md`).
    pub fn negative_starts(&self) -> Vec<&'static str> {
        [("S_P", Party::P), ("S_C", Party::C)]
            .into_iter()
            .filter(|(_, party)| self.start(*party).mean_ns < 0.0)
            .map(|(n, _)| n)
            .collect()
    }

    /// The four costs as (N_P, N_C, S_P, S_C) for the model and simulator
    /// (S as [`Profile::start`]).
    pub fn costs(&self) -> [Cost; 4] {
        [
            self.np.as_cost(),
            self.nc.as_cost(),
            self.start(Party::P).as_cost(),
            self.start(Party::C).as_cost(),
        ]
    }

    /// The means of N_P, N_C, S_P, S_C over the paper's (Rizzo et al.'s
    /// QEMU/KVM prototype, the costs of [`crate::Params::default`]). S is
    /// the wall start-up (after the notification ends), as in the paper.
    pub fn means_over_paper(&self) -> [f64; 4] {
        let d = crate::Params::default();
        let paper = [d.n_p, d.n_c, d.s_p, d.s_c];
        let ours = [self.np, self.nc, self.sp, self.sc];
        std::array::from_fn(|i| ours[i].mean_ns / paper[i].mean_ns())
    }

    /// Puts the calibrated costs into `params` (distributions with the
    /// measured spread if `spread`, else their means): N, V and S
    /// ([`Profile::apply_costs`]), and the ring's cost per message
    /// ([`Profile::overhead`]) added to W_P and W_C: the model's W is the
    /// work a real party spins plus what the ring costs it per message.
    pub fn apply(&self, params: &mut crate::Params, spread: bool) {
        self.apply_costs(params, spread);
        let [o_p, o_c] = self.overheads(false);
        params.w_p = params.w_p.plus(o_p);
        params.w_c = params.w_c.plus(o_c);
    }

    /// As [`Profile::apply`], for a pair whose parties wait by `notify`:
    /// the ring's cost per message to each party is the one measured with
    /// its peer asleep ([`Profile::overhead_p`], [`Profile::overhead_c`]),
    /// where the profile has both; else [`Profile::overhead`].
    pub fn apply_notify(&self, params: &mut crate::Params, spread: bool) {
        self.apply_costs(params, spread);
        let [o_p, o_c] = self.overheads(true);
        params.w_p = params.w_p.plus(o_p);
        params.w_c = params.w_c.plus(o_c);
    }

    /// The ring's cost per message added to W_P and W_C: with `notify` the
    /// peer-asleep ones where the profile has both, else the polling
    /// pair's; 0 without. Their medians: a run taken off its CPU by
    /// another process only ever adds to a sample (one such run of five
    /// put a KVM polling pair's mean at 120 ns, its median at 65 ns).
    pub fn overheads(&self, notify: bool) -> [f64; 2] {
        match (notify, &self.overhead_p, &self.overhead_c, &self.overhead) {
            (true, Some(p), Some(c), _) => [p.median_ns.max(0.0), c.median_ns.max(0.0)],
            (_, _, _, Some(o)) => [o.median_ns.max(0.0); 2],
            _ => [0.0; 2],
        }
    }

    /// Puts the calibrated N, V and S into `params`, leaving W alone (a
    /// real run's parameters: its W is what the parties spin). V is cut to
    /// N where a profile has it larger (`Params::validate`'s rule).
    pub fn apply_costs(&self, params: &mut crate::Params, spread: bool) {
        let [np, nc, sp, sc] = self.costs();
        let f = |c: Cost| if spread { c } else { Cost::Const(c.mean_ns()) };
        (params.n_p, params.n_c, params.s_p, params.s_c) = (f(np), f(nc), f(sp), f(sc));
        let vis = |party: Party, n: Cost| {
            self.visibility(party).map(|v| {
                let v = f(v.as_cost());
                if v.mean_ns() > n.mean_ns() {
                    v.with_mean(n.mean_ns())
                } else {
                    v
                }
            })
        };
        params.v_p = vis(Party::P, params.n_p);
        params.v_c = vis(Party::C, params.n_c);
        if let Some(r) = &self.in_run {
            let mean = |s: &Option<Stat>| s.map(|s| s.mean_ns);
            self.apply_in_run(params, r, &mean, |s| s.mean_ns, |c, v| c.with_mean(v));
        }
    }

    /// Puts what `r` timed into `params`: N where timed; the wake-up R,
    /// where timed, split as calibration splits it (V = R - S cpu within
    /// [0, N], S = R - V). `pick` reads a statistic (mean or median) and
    /// `set` gives a cost that value.
    fn apply_in_run(
        &self,
        params: &mut crate::Params,
        r: &InRunCosts,
        pick: &dyn Fn(&Option<Stat>) -> Option<f64>,
        cpu: impl Fn(&Stat) -> f64,
        set: impl Fn(Cost, f64) -> Cost,
    ) {
        if let Some(n) = pick(&r.np) {
            params.n_p = set(params.n_p, n.max(0.0));
        }
        if let Some(n) = pick(&r.nc) {
            params.n_c = set(params.n_c, n.max(0.0));
        }
        let split = |n: f64, r: f64, s_cpu: f64| {
            let (v, s) = split_wake_up(n, r, s_cpu);
            (v, s.max(0.0))
        };
        if let Some(rc) = pick(&r.rc) {
            let (v, s) = split(params.n_p.mean_ns(), rc, cpu(&self.sc_cpu));
            params.s_c = set(params.s_c, s);
            params.v_p = Some(Cost::Const(v));
        }
        if let Some(rp) = pick(&r.rp) {
            let (v, s) = split(params.n_c.mean_ns(), rp, cpu(&self.sp_cpu));
            params.s_p = set(params.s_p, s);
            params.v_c = Some(Cost::Const(v));
        }
        // A V set before from an N that the runs replaced stays within it.
        for (v, n) in [(&mut params.v_p, params.n_p), (&mut params.v_c, params.n_c)] {
            if let Some(c) = v {
                if c.mean_ns() > n.mean_ns() {
                    *c = c.with_mean(n.mean_ns());
                }
            }
        }
    }

    /// Puts the calibrated medians into `params` as constants: the typical
    /// cost, insensitive to the rare very slow wake-ups that dominate the
    /// means here (`docs/calibration.md`), for a pair that waits by
    /// `notify`; the overheads' medians are added to W_P and W_C as in
    /// [`Profile::apply_notify`].
    pub fn apply_medians(&self, params: &mut crate::Params) {
        let c = |s: &Stat| Cost::Const(s.median_ns.max(0.0));
        (params.n_p, params.n_c, params.s_p, params.s_c) = (
            c(&self.np),
            c(&self.nc),
            c(self.start(Party::P)),
            c(self.start(Party::C)),
        );
        let vis = |party: Party, n: &Stat| {
            self.visibility(party)
                .map(|v| Cost::Const(v.median_ns.clamp(0.0, n.median_ns.max(0.0))))
        };
        params.v_p = vis(Party::P, &self.np);
        params.v_c = vis(Party::C, &self.nc);
        if let Some(r) = &self.in_run {
            // As in `apply_costs`, on the medians.
            let median = |s: &Option<Stat>| s.map(|s| s.median_ns);
            self.apply_in_run(params, r, &median, |s| s.median_ns, |_, v| Cost::Const(v));
        }
        let [o_p, o_c] = self.overheads(true);
        params.w_p = params.w_p.plus(o_p);
        params.w_c = params.w_c.plus(o_c);
    }

    /// A value of the idle curve at `idle_ns` of idling before the
    /// notification: `value` of the points, interpolated linearly in
    /// ln(gap) between the two measured gaps around `idle_ns`, and held
    /// at the first (last) point's below (above) the measured range.
    /// `None` without a curve.
    pub fn at_idle(&self, idle_ns: f64, value: impl Fn(&IdlePoint) -> f64) -> Option<f64> {
        let mut pts: Vec<&IdlePoint> = self
            .idle_curve
            .iter()
            .filter(|p| p.gap_ns > 0.0 && p.gap_ns.is_finite())
            .collect();
        pts.sort_by(|a, b| a.gap_ns.total_cmp(&b.gap_ns));
        let (first, last) = (pts.first()?, pts.last()?);
        if idle_ns.is_nan() || idle_ns <= first.gap_ns {
            return Some(value(first));
        }
        if idle_ns >= last.gap_ns {
            return Some(value(last));
        }
        let i = pts.partition_point(|p| p.gap_ns <= idle_ns);
        let (a, b) = (pts[i - 1], pts[i]);
        let f = (idle_ns.ln() - a.gap_ns.ln()) / (b.gap_ns.ln() - a.gap_ns.ln());
        Some(value(a) + f * (value(b) - value(a)))
    }

    /// The idle curve as the simulator's [`IdleScale`] of `party`'s
    /// start-up: at each point, the time from falling asleep to becoming
    /// runnable (the gap plus when the waking notification makes it
    /// runnable, [`IdlePoint::wakes_after`], means) against the factor of
    /// its S there over the profile's own S (means). Where that S was
    /// timed inside the reference pairs, the factors are over the curve's
    /// at the idle those pairs slept, so that the in-run S is what a sleep
    /// of that length pays. Points that would not make a curve (a factor
    /// <= 0, an idle time not above the previous one) are left out. `None`
    /// without a curve or with an S <= 0.
    pub fn idle_scale(&self, party: Party) -> Option<IdleScale> {
        let base = self.start(party).mean_ns;
        if base.is_nan() || base <= 0.0 {
            return None;
        }
        let mut pts: Vec<&IdlePoint> = self.idle_curve.iter().collect();
        pts.sort_by(|a, b| a.gap_ns.total_cmp(&b.gap_ns));
        let mut curve: Vec<(f64, f64)> = Vec::new();
        for q in pts {
            let idle = q.gap_ns + q.wakes_after(party).mean_ns.max(0.0);
            let factor = q.start(party).mean_ns / base;
            if factor > 0.0 && curve.last().is_none_or(|l| idle > l.0) {
                curve.push((idle, factor));
            }
        }
        curve.truncate(IdleScale::MAX_POINTS);
        let scale = IdleScale::new(&curve).ok()?;
        // An S timed inside the reference pairs was paid after their idle,
        // not the profile's gap: the curve scales it from there.
        let Some(from) = self.in_run_start_idle(party) else {
            return Some(scale);
        };
        let at = scale.factor(from.idle_ns + from.v_ns);
        if !(at.is_finite() && at > 0.0) {
            return Some(scale);
        }
        for point in &mut curve {
            point.1 /= at;
        }
        IdleScale::new(&curve).ok()
    }

    /// Where `party`'s start-up S comes from the in-run wake-ups of the
    /// reference pairs ([`InRunCosts`]): how long it idled per sleep in the
    /// one where it sleeps, as the model runs that pair with this
    /// profile's costs ([`REFERENCE_PAIR_NS`], [`crate::Prediction::sleeper_idle`]),
    /// and the V of the notification that woke it. `None` where S is the
    /// isolated one, or where the model has it not sleep in that pair.
    fn in_run_start_idle(&self, party: Party) -> Option<ReferenceSleep> {
        let in_run = self.in_run.as_ref()?;
        let timed = match party {
            Party::P => in_run.rp.is_some(),
            Party::C => in_run.rc.is_some(),
        };
        if !timed {
            return None;
        }
        let (slow, fast) = REFERENCE_PAIR_NS;
        let (w_p, w_c) = match party {
            Party::P => (fast, slow),
            Party::C => (slow, fast),
        };
        let mut params = crate::Params {
            w_p: Cost::Const(w_p),
            w_c: Cost::Const(w_c),
            ..crate::Params::default()
        };
        self.apply_notify(&mut params, false);
        let pred = crate::predict(&params, crate::WaitMode::Notify).ok()?;
        let [p, c] = pred.sleeper_idle(&params);
        let (idle_ns, v) = match party {
            Party::P => (p?, params.vis_c()),
            Party::C => (c?, params.vis_p()),
        };
        Some(ReferenceSleep {
            idle_ns,
            v_ns: v.mean_ns(),
        })
    }

    /// The simulator's per-party costs beside Params: how each party's
    /// start-up scales with idle time ([`Profile::idle_scale`]) and what
    /// its naps cost ([`Profile::nap_ns`]), P's then C's.
    pub fn sim_costs(&self) -> ([Option<IdleScale>; 2], [Option<f64>; 2]) {
        (
            [self.idle_scale(Party::P), self.idle_scale(Party::C)],
            [self.nap_ns(Party::P), self.nap_ns(Party::C)],
        )
    }

    /// What waking from a nap costs `party`, the mean of its calibrated
    /// naps [ns]; `None` in profiles from before naps were measured.
    pub fn nap_ns(&self, party: Party) -> Option<f64> {
        match party {
            Party::P => self.nap_p,
            Party::C => self.nap_c,
        }
        .map(|s| s.mean_ns)
        .filter(|ns| ns.is_finite() && *ns >= 0.0)
    }

    /// The mean start-up of `party` ([`Profile::start`]) after idling
    /// `idle_ns` before the notification, from the idle curve
    /// ([`Profile::at_idle`]); `None` without a curve.
    pub fn start_at_idle(&self, party: Party, idle_ns: f64) -> Option<f64> {
        self.at_idle(idle_ns, |p| p.start(party).mean_ns)
    }

    /// The start-up S the model takes for `party` after idling a given
    /// time before the notification, where `s` is the one this profile
    /// gives it ([`Profile::apply_notify`]): an S timed inside the
    /// reference pairs is scaled along the idle curve from the idle it was
    /// paid after; else the curve's own S ([`Profile::start_at_idle`]).
    /// The lookup returns `None` without a curve. Where that idle is
    /// looked up once, here, not at every call (a fixed point calls it
    /// dozens of times).
    pub fn start_for_idle(&self, party: Party, s: f64) -> impl Fn(f64) -> Option<f64> + '_ {
        let paid_after = self
            .in_run_start_idle(party)
            .and_then(|from| self.start_at_idle(party, from.idle_ns))
            .filter(|at| *at > 0.0 && at.is_finite());
        move |idle_ns| {
            let there = self.start_at_idle(party, idle_ns)?;
            Some(paid_after.map_or(there, |at| s * there / at))
        }
    }

    /// The FC or FP point of `params` with the batch race drawn at this
    /// profile's spread ([`crate::predict_with_start_spread`] with
    /// [`Profile::start_spread`], from an empty queue); `None` where the
    /// profile has no spread or the point is not FC or FP.
    ///
    /// # Errors
    ///
    /// As [`crate::predict`].
    pub fn race_at(
        &self,
        params: &crate::Params,
        mode: crate::WaitMode,
    ) -> Result<Option<crate::RaceExpectation>, crate::ModelError> {
        let spread = self.start_spread();
        if spread.iter().all(|&s| s <= 0.0) {
            return Ok(None);
        }
        crate::predict_with_start_spread(params, mode, spread, false)
    }

    /// How much each party's effective start-up s (from the end of the
    /// peer's notification to the party's first attempt: R - N, what
    /// calibration prints as S) varies from one notification to the next,
    /// P's then C's [ns]: a normal's standard deviation with the spread
    /// of the calibrated samples between p10 and p90 (2.563 of them). Each
    /// sample times one notification and its wake-up together, so this is
    /// the spread of their difference, not of each alone. 0 where a
    /// profile's quantiles are not finite or are out of order.
    pub fn start_spread(&self) -> [f64; 2] {
        // p90 - p10 of a normal, in standard deviations: 2 z(0.9).
        const P10_TO_P90: f64 = 2.563_103;
        let sd = |s: &Stat| {
            let w = (s.p90_ns - s.p10_ns) / P10_TO_P90;
            if w.is_finite() && w > 0.0 {
                w
            } else {
                0.0
            }
        };
        [sd(&self.sp), sd(&self.sc)]
    }
}

/// The work of calibration's reference pairs [ns]: W_P and W_C of the one
/// in which C, the faster party, sleeps and P kicks it; its mirror swaps
/// them. Their kicks and wake-ups are a profile's [`InRunCosts`].
pub const REFERENCE_PAIR_NS: (f64, f64) = (2000.0, 1000.0);

/// How a party slept in the reference pair where it sleeps, in the model:
/// per sleep, its idle before the waking notification starts, and that
/// notification's V [ns].
struct ReferenceSleep {
    idle_ns: f64,
    v_ns: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_spread_is_a_normals_sd_from_p10_to_p90() {
        let mut p = Profile::of_means("kvm", [10_000.0, 700.0, 20_000.0, -1000.0]);
        p.sp = Stat {
            p10_ns: 19_000.0,
            p90_ns: 21_563.103,
            ..p.sp
        };
        p.sc = Stat {
            p10_ns: -2000.0,
            p90_ns: -1_487.379_4,
            ..p.sc
        };
        let [sp, sc] = p.start_spread();
        assert!((sp - 1000.0).abs() < 1e-6, "{sp}");
        assert!((sc - 200.0).abs() < 1e-3, "{sc}");
        // Quantiles out of order, or not numbers: no spread.
        p.sc.p90_ns = -3000.0;
        p.sp.p10_ns = f64::NAN;
        assert_eq!(p.start_spread(), [0.0, 0.0]);
    }

    #[test]
    fn in_run_costs_replace_n_and_s_and_split_the_wake_up() {
        let mut p = Profile::of_means("futex", [10_000.0, 10_000.0, 12_000.0, 12_000.0]);
        p.sp_cpu = Stat::constant(2000.0);
        p.sc_cpu = Stat::constant(2000.0);
        let c = Stat::constant;
        p.in_run = Some(InRunCosts {
            np: Some(c(2500.0)),
            nc: Some(c(3000.0)),
            // C wakes 16 us after P's kick starts: past its end, so V = N.
            rc: Some(c(16_000.0)),
            // P wakes 2.5 us after C's starts, inside it: V = R - S cpu.
            rp: Some(c(2500.0)),
            ..InRunCosts::default()
        });
        let mut q = crate::Params::default();
        p.apply(&mut q, false);
        assert_eq!((q.n_p, q.n_c), (Cost::Const(2500.0), Cost::Const(3000.0)));
        assert_eq!(q.v_p, Some(Cost::Const(2500.0)));
        assert_eq!(q.s_c, Cost::Const(13_500.0));
        assert_eq!(q.v_c, Some(Cost::Const(500.0)));
        assert_eq!(q.s_p, Cost::Const(2000.0));
        q.validate().unwrap();
        // The medians follow the same rule.
        let mut m = crate::Params::default();
        p.apply_medians(&mut m);
        assert_eq!((m.n_p, m.s_c, m.v_c), (q.n_p, q.s_c, q.v_c));
        // Only the host's kick timed (a KVM guest on the other side): N_C
        // from the runs, the rest as calibrated.
        p.in_run = Some(InRunCosts {
            np: None,
            nc: Some(c(400.0)),
            rp: None,
            rc: None,
            ..InRunCosts::default()
        });
        let mut k = crate::Params::default();
        p.apply(&mut k, false);
        assert_eq!((k.n_p, k.n_c), (Cost::Const(10_000.0), Cost::Const(400.0)));
        assert_eq!(k.s_c, Cost::Const(12_000.0));
        k.validate().unwrap();
    }

    #[test]
    fn the_rings_cost_is_the_median_of_its_runs() {
        // Four quiet polling runs at 64-66 ns a message and one taken off
        // its CPU: the mean is that one run's, the median the ring's.
        let mut p = Profile::of_means("kvm", [10_000.0; 4]);
        p.overhead = Some(Stat::of(vec![64.0, 65.0, 65.0, 66.0, 340.0]));
        let mut q = crate::Params::default();
        p.apply(&mut q, false);
        assert_eq!(
            q.w_p.mean_ns(),
            crate::Params::default().w_p.mean_ns() + 65.0
        );
        assert_eq!(
            q.w_c.mean_ns(),
            crate::Params::default().w_c.mean_ns() + 65.0
        );
    }

    #[test]
    fn stat_summarizes() {
        let s = Stat::of((1..=100).map(f64::from).collect());
        assert_eq!(s.n, 100);
        assert!((s.mean_ns - 50.5).abs() < 1e-9);
        assert!((s.median_ns - 50.0).abs() <= 1.0);
        assert!(s.p10_ns < s.median_ns && s.median_ns < s.p90_ns);
        let c = Stat::of(vec![7.0; 10]);
        assert_eq!(c.as_cost(), Cost::Const(7.0));
    }

    /// A profile written before V, the overhead and the idle curve.
    const OLD: &str = r#"{"backend":"futex",
        "NP":{"median_ns":1,"mean_ns":2000,"p10_ns":1,"p90_ns":1,"sigma_log":0,"n":1},
        "NC":{"median_ns":1,"mean_ns":2000,"p10_ns":1,"p90_ns":1,"sigma_log":0,"n":1},
        "SP":{"median_ns":1,"mean_ns":3000,"p10_ns":1,"p90_ns":1,"sigma_log":0,"n":1},
        "SC":{"median_ns":1,"mean_ns":-100,"p10_ns":1,"p90_ns":1,"sigma_log":0,"n":1},
        "NP_cpu":{"median_ns":1,"mean_ns":1,"p10_ns":1,"p90_ns":1,"sigma_log":0,"n":1},
        "NC_cpu":{"median_ns":1,"mean_ns":1,"p10_ns":1,"p90_ns":1,"sigma_log":0,"n":1},
        "SP_cpu":{"median_ns":1,"mean_ns":1,"p10_ns":1,"p90_ns":1,"sigma_log":0,"n":1},
        "SC_cpu":{"median_ns":1,"mean_ns":1,"p10_ns":1,"p90_ns":1,"sigma_log":0,"n":1},
        "gap_ns":50000,"rounds":2,"stable":true,"tsc_ghz":2.4,"cpus":2}"#;

    #[test]
    fn old_profiles_load_and_keep_their_meaning() {
        let p: Profile = serde_json::from_str(OLD).unwrap();
        assert!(p.vp.is_none() && p.overhead.is_none() && p.idle_curve.is_empty());
        let mut params = crate::Params::default();
        p.apply(&mut params, false);
        assert_eq!(params.w_p, Cost::Const(1000.0), "no overhead, W as given");
        assert_eq!(params.s_p, Cost::Const(3000.0));
        assert_eq!(params.s_c, Cost::Const(0.0), "negative S without V: 0");
        assert_eq!((params.v_p, params.v_c), (None, None), "V = N");
        assert_eq!(p.negative_starts(), vec!["S_C"]);
        assert_eq!(p.start_at_idle(Party::P, 1e3), None);
        // And a new profile round-trips with everything.
        let mut q = p.clone();
        q.vp = Some(Stat::constant(500.0));
        q.sc_v = Some(Stat::constant(1400.0));
        q.overhead = Some(Stat::constant(50.0));
        q.idle_curve = vec![IdlePoint::of(&q)];
        let back: Profile = serde_json::from_str(&serde_json::to_string(&q).unwrap()).unwrap();
        assert_eq!(back.vp, q.vp);
        assert_eq!(back.sc_v, q.sc_v);
        assert_eq!(back.idle_curve, q.idle_curve);
        assert_eq!(back.overhead, q.overhead);
    }

    #[test]
    fn check_refuses_what_no_calibration_writes() {
        // A negative wall start-up (the peer ran before the kick
        // returned), a V above N and a pace-setter's ring cost less its
        // kicks below 0 all come out of real calibrations: taken.
        let mut good = Profile::of_means("kvm", [10e3, 2e3, 15e3, -1e3]);
        good.vp = Some(Stat::constant(12e3));
        good.overhead_p = Some(Stat::constant(-20.0));
        good.check().unwrap();
        let bad = |f: &dyn Fn(&mut Profile), want: &str| {
            let mut p = good.clone();
            f(&mut p);
            let e = p.check().unwrap_err();
            assert!(e.contains(want), "{want}: {e}");
        };
        bad(&|p| p.np = Stat::constant(-1.0), "NP.median_ns");
        bad(&|p| p.vc = Some(Stat::constant(-1e6)), "VC.median_ns");
        bad(&|p| p.sc = Stat::constant(1e300), "SC.median_ns");
        bad(&|p| p.nc.sigma_log = f64::INFINITY, "NC.sigma_log");
        bad(
            &|p| p.nap_c_cpu = Some(Stat::constant(f64::NAN)),
            "nap_C_cpu",
        );
        bad(&|p| p.others_cpu = Some(f64::NAN), "others_cpu");
        bad(&|p| p.others_cpu = Some(-0.5), "others_cpu");
        bad(
            &|p| p.overhead = Some(Stat::constant(-1.0)),
            "overhead.median_ns",
        );
        let point = |gap_ns: f64| IdlePoint {
            gap_ns,
            ..IdlePoint::of(&good)
        };
        bad(
            &|p| p.idle_curve = (1..=17).map(|i| point(1e3 * f64::from(i))).collect(),
            "at most 16 points",
        );
        bad(
            &|p| p.idle_curve = vec![point(5e3), point(5e3)],
            "idle_curve[1].gap_ns",
        );
        bad(&|p| p.idle_curve = vec![point(0.0)], "idle_curve[0].gap_ns");
        bad(
            &|p| {
                p.sp.p10_ns = 2e4;
                p.sp.p90_ns = 1e4;
            },
            "SP: p10_ns",
        );
        bad(
            &|p| p.backend = "bogus name".into(),
            "backend = `bogus name`: one of futex, eventfd, pipe, kvm",
        );
        bad(&|p| p.backend = "x".repeat(5000), "(5000 characters)");
        bad(&|p| p.backend = String::new(), "backend = ``");
        bad(&|p| p.backend = "bogus".into(), "backend = `bogus`");
        bad(
            &|p| p.sc = Stat::constant(-2.0 * p.np.median_ns),
            "SC.median_ns = -2e4: a start-up may be negative by at most",
        );
        bad(&|p| p.tsc_ghz = -1.0, "tsc_ghz");
    }

    #[test]
    fn apply_sets_v_with_the_matching_s_and_adds_the_overhead() {
        // P's kick: N_P 10 us, the wall S_C -1 us (C ran before the kick
        // returned): R = 9 us; V_P 6 us, so S_C = 3 us.
        let mut p = Profile::of_means("kvm", [10e3, 2e3, 15e3, -1e3]);
        p.vp = Some(Stat::constant(6e3));
        p.sc_v = Some(Stat::constant(3e3));
        p.overhead = Some(Stat::constant(100.0));
        assert!(p.negative_starts().is_empty(), "V absorbed the negative S");
        let mut params = crate::Params::default();
        p.apply(&mut params, false);
        assert_eq!(params.v_p, Some(Cost::Const(6e3)));
        assert_eq!(params.s_c, Cost::Const(3e3));
        assert_eq!(params.v_c, None, "no V_C: V_C = N_C, S_P the wall one");
        assert_eq!(params.s_p, Cost::Const(15e3));
        assert_eq!(params.w_p, Cost::Const(1100.0));
        assert_eq!(params.w_c, Cost::Const(1200.0));
        params.validate().unwrap();
        // A V above N (a profile edited by hand) is cut to N.
        p.vp = Some(Stat::constant(20e3));
        p.apply(&mut params, true);
        assert_eq!(params.v_p.unwrap().mean_ns(), 10e3);
        params.validate().unwrap();
        // The costs alone leave W alone.
        let mut costs = crate::Params::default();
        p.apply_costs(&mut costs, false);
        assert_eq!(costs.w_p, Cost::Const(1000.0));
        let mut med = crate::Params::default();
        p.apply_medians(&mut med);
        assert_eq!(med.s_c, Cost::Const(3e3));
        assert_eq!(med.v_p, Some(Cost::Const(10e3)));
        assert_eq!(med.w_c, Cost::Const(1200.0));
        // With the peer-asleep overheads, a notify pair takes those (and
        // a polling pair still the polling pair's).
        let mut n = crate::Params::default();
        p.apply_notify(&mut n, false);
        assert_eq!((n.w_p, n.w_c), (Cost::Const(1100.0), Cost::Const(1200.0)));
        p.overhead_p = Some(Stat::constant(30.0));
        p.overhead_c = Some(Stat::constant(-5.0));
        let mut n = crate::Params::default();
        p.apply_notify(&mut n, false);
        assert_eq!((n.w_p, n.w_c), (Cost::Const(1030.0), Cost::Const(1100.0)));
        let mut med = crate::Params::default();
        p.apply_medians(&mut med);
        assert_eq!(
            (med.w_p, med.w_c),
            (Cost::Const(1030.0), Cost::Const(1100.0))
        );
        let mut poll = crate::Params::default();
        p.apply(&mut poll, false);
        assert_eq!(poll.w_p, Cost::Const(1100.0));
    }

    #[test]
    fn start_at_idle_interpolates_in_log_gap_and_holds_at_the_ends() {
        let mut p = Profile::of_means("futex", [2e3, 2e3, 3e3, 3e3]);
        let point = |gap: f64, s: f64| IdlePoint {
            gap_ns: gap,
            sp: Stat::constant(s),
            sc: Stat::constant(2.0 * s),
            ..IdlePoint::of(&p)
        };
        // Out of order on purpose: the lookup sorts by gap.
        p.idle_curve = vec![point(100e3, 30e3), point(10e3, 3e3), point(1e3, 1e3)];
        let s = |idle: f64| p.start_at_idle(Party::P, idle).unwrap();
        assert_eq!(s(10e3), 3e3, "exact at a measured gap");
        assert_eq!(s(1e3), 1e3);
        assert_eq!(s(100e3), 30e3);
        assert_eq!(s(10.0), 1e3, "held below the first gap");
        assert_eq!(s(0.0), 1e3);
        assert_eq!(s(-5.0), 1e3);
        assert_eq!(s(f64::NAN), 1e3);
        assert_eq!(s(1e9), 30e3, "held above the last");
        // sqrt(10e3 * 100e3) is half-way in log gap.
        let mid = (10e3f64 * 100e3).sqrt();
        assert!((s(mid) - 16.5e3).abs() < 1e-6, "{}", s(mid));
        assert!((p.start_at_idle(Party::C, mid).unwrap() - 33e3).abs() < 1e-6);
        // A quarter of the way in log gap is a quarter of the way in S.
        let q = (10e3f64.ln() + 0.25 * (10f64).ln()).exp();
        assert!((s(q) - (3e3 + 0.25 * 27e3)).abs() < 1e-6, "{}", s(q));
        // The simulator's curve: idle from falling asleep (the gap plus
        // N of the waking notification, no V here), S over the profile's.
        let sc = p.idle_scale(Party::P).unwrap();
        assert_eq!(sc.points(), &[(3e3, 1e3 / 3e3), (12e3, 1.0), (102e3, 10.0)]);
        assert!(Profile::of_means("x", [1.0; 4])
            .idle_scale(Party::C)
            .is_none());
    }

    /// An S timed inside the reference pairs was paid after their short
    /// idle: the idle curve scales it from there, not from the profile's
    /// gap (which would shrink it again by the curve's short-idle factor,
    /// as the simulator did until 2026-11-26: a pipe profile's
    /// in-run S_C of 3.7 us drawn as 2.5 us, T 16% over the model's).
    #[test]
    fn an_in_run_start_is_scaled_along_the_idle_curve_from_the_reference_pairs_idle() {
        // Isolated wake-ups (after 50 us): S 12 us; in runs: R_C 4 us,
        // V_P 0 (the split: R - S cpu < 0), so S_C = 4 us.
        let mut p = Profile::of_means("pipe", [6e3, 6e3, 12e3, 12e3]);
        p.sc_cpu = Stat::constant(5e3);
        p.in_run = Some(InRunCosts {
            np: Some(Stat::constant(1.5e3)),
            rc: Some(Stat::constant(4e3)),
            ..InRunCosts::default()
        });
        let point = |gap: f64, s: f64| IdlePoint {
            gap_ns: gap,
            sc: Stat::constant(s),
            ..IdlePoint::of(&p)
        };
        p.idle_curve = vec![point(5e3, 8e3), point(50e3, 12e3), point(500e3, 24e3)];
        let mut params = crate::Params::default();
        p.apply_notify(&mut params, false);
        assert_eq!(params.s_c, Cost::Const(4e3));
        // The reference pair (W_P 2 us, W_C 1 us) has C idle a few us per
        // sleep: below the curve's first gap, where its factor is 8/12.
        let from = p.in_run_start_idle(Party::C).unwrap();
        assert!(from.idle_ns > 0.0 && from.idle_ns < 5e3, "{}", from.idle_ns);
        let sc = p.idle_scale(Party::C).unwrap();
        let at = |idle: f64| sc.factor(idle);
        assert!((at(from.idle_ns + from.v_ns) - 1.0).abs() < 1e-12);
        assert!(
            (at(1.0) - 1.0).abs() < 1e-12,
            "short idles pay the in-run S"
        );
        assert!((at(1e9) - 24.0 / 8.0).abs() < 1e-12, "long ones 3 times it");
        // The model's S at an idle scales the same way.
        let s = |idle: f64| p.start_for_idle(Party::C, 4e3)(idle).unwrap();
        assert!((s(from.idle_ns) - 4e3).abs() < 1e-9);
        assert!((s(500e3) - 12e3).abs() < 1e-9);
        // P's S is the isolated one (no R_P timed): the curve's own.
        assert_eq!(
            p.start_for_idle(Party::P, 1.0)(500e3),
            p.start_at_idle(Party::P, 500e3)
        );
        let sp = p.idle_scale(Party::P).unwrap();
        assert!((sp.factor(1e9) - 1.0).abs() < 1e-12, "S_P as calibrated");
        // Without the in-run wake-up, the curve is over the profile's S.
        p.in_run = None;
        let sc = p.idle_scale(Party::C).unwrap();
        assert!((sc.factor(1.0) - 8.0 / 12.0).abs() < 1e-12);
        assert_eq!(p.start_for_idle(Party::C, 4e3)(500e3), Some(24e3));
    }
}
