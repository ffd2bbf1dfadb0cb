//! Calibrated costs ([`Profile`], [`Stat`]): what a calibration of a
//! machine's notification costs N and start-up costs S produced, and how
//! the model and the simulator use them. Plain data: the measurement itself
//! lives in the testbed, so the model reads a profile without linking any
//! hardware code.

use serde::{Deserialize, Serialize};

use crate::Cost;

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
                sigma: self.sigma_log.min(3.0),
            }
        } else {
            Cost::Const(self.mean_ns)
        }
    }
}

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
    /// P's own CPU time across its wake-up.
    #[serde(rename = "SP_cpu")]
    pub sp_cpu: Stat,
    /// C's own CPU time across its wake-up.
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
}

impl Profile {
    /// The start-up costs whose mean came out negative (the woken party ran
    /// before the notifier's call returned), by name; the model takes them
    /// as 0 (`docs/kvm.md`).
    pub fn negative_starts(&self) -> Vec<&'static str> {
        [("S_P", &self.sp), ("S_C", &self.sc)]
            .into_iter()
            .filter(|(_, s)| s.mean_ns < 0.0)
            .map(|(n, _)| n)
            .collect()
    }

    /// The four costs as (N_P, N_C, S_P, S_C) for the model and simulator.
    pub fn costs(&self) -> [Cost; 4] {
        [
            self.np.as_cost(),
            self.nc.as_cost(),
            self.sp.as_cost(),
            self.sc.as_cost(),
        ]
    }

    /// The means of N_P, N_C, S_P, S_C over the paper's (Rizzo et al.'s
    /// QEMU/KVM prototype, the costs of [`crate::Params::default`]).
    pub fn means_over_paper(&self) -> [f64; 4] {
        let d = crate::Params::default();
        let paper = [d.n_p, d.n_c, d.s_p, d.s_c];
        let ours = [self.np, self.nc, self.sp, self.sc];
        std::array::from_fn(|i| ours[i].mean_ns / paper[i].mean_ns())
    }

    /// Puts the calibrated costs into `params` (distributions with the
    /// measured spread if `spread`, else their means).
    pub fn apply(&self, params: &mut crate::Params, spread: bool) {
        let [np, nc, sp, sc] = self.costs();
        let f = |c: Cost| if spread { c } else { Cost::Const(c.mean_ns()) };
        (params.n_p, params.n_c, params.s_p, params.s_c) = (f(np), f(nc), f(sp), f(sc));
    }

    /// Puts the calibrated medians into `params` as constants: the typical
    /// cost, insensitive to the rare very slow wake-ups that dominate the
    /// means here (`docs/calibration.md`).
    pub fn apply_medians(&self, params: &mut crate::Params) {
        let c = |s: &Stat| Cost::Const(s.median_ns.max(0.0));
        (params.n_p, params.n_c, params.s_p, params.s_c) =
            (c(&self.np), c(&self.nc), c(&self.sp), c(&self.sc));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
