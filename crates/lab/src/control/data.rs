//! The control study's data: the workloads, the anchors and fixed sleeps
//! it runs, one run's outcome, a point, the whole study. What does not
//! live here: running it (`super`), judging it (`targets`).

use kicklab_model::control::CheckStats;
use kicklab_model::{Cost, Rates, WaitMode};
use kicklab_sim::SimResult;
use serde::{Deserialize, Serialize};

use crate::{Input, LabError};

/// Messages per phase of the `phases` workload.
pub(super) const PHASE: usize = 5000;

/// A workload: how W_P and W_C are drawn at a point of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// Constant W_P (the sweep's x), W_C = 1.1 us: the paper's Fig. 4/5.
    Const,
    /// Exponential W_P and W_C with those means (Poisson-like arrivals).
    Exp,
    /// W_P alternating between 0.5 us and 3 us every 5000 messages (rate
    /// steps); one point.
    Phases,
    /// Rare long messages: W_P at the sweep's x, one in a hundred 50 times
    /// longer.
    Mix,
}

impl Workload {
    /// All, in the report's order.
    pub const ALL: [Workload; 4] = [
        Workload::Const,
        Workload::Exp,
        Workload::Phases,
        Workload::Mix,
    ];

    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Const => "const",
            Workload::Exp => "exp",
            Workload::Phases => "phases",
            Workload::Mix => "mix",
        }
    }

    /// Parses a name; spaces around it are dropped (`--workload "const,
    /// exp"` as Python's `workloads="const, exp"`).
    ///
    /// # Errors
    ///
    /// The accepted names.
    pub fn parse(s: &str) -> Result<Workload, String> {
        let name = s.trim();
        Workload::ALL
            .into_iter()
            .find(|w| w.name() == name)
            .ok_or_else(|| format!("unknown workload `{s}` (use const, exp, phases or mix)"))
    }

    /// (W_P, W_C) at a sweep point `x` [ns] (ignored by `phases`).
    ///
    /// # Errors
    ///
    /// A `mix` whose long messages (50 x) are longer than a cost may be.
    pub(super) fn costs(self, x: f64, w_c: f64) -> Result<(Cost, Cost), LabError> {
        Ok(match self {
            Workload::Const => (Cost::Const(x), Cost::Const(w_c)),
            Workload::Exp => (Cost::Exp { mean_ns: x }, Cost::Exp { mean_ns: w_c }),
            Workload::Phases => (
                Cost::parse(&format!("phases:0.5us@{PHASE}+3us@{PHASE}"))
                    .expect("a valid phases cost"),
                Cost::Const(w_c),
            ),
            Workload::Mix => (
                Cost::parse(&format!("mix:0.01:{x}ns+{}ns", 50.0 * x)).map_err(|e| {
                    LabError::input(
                        Input::Workload,
                        format!(
                            "mix at W_P = {}: its long messages (50 x W_P): {e}",
                            kicklab_model::fmt_ns(x)
                        ),
                    )
                })?,
                Cost::Const(w_c),
            ),
        })
    }

    /// The controller's targets for this workload: (T ratio, excess ratio)
    /// at most, against polling.
    pub fn targets(self) -> (f64, f64) {
        match self {
            Workload::Const => (1.05, 0.25),
            Workload::Exp | Workload::Phases | Workload::Mix => (1.10, 0.35),
        }
    }
}

/// The anchors at their shipped defaults (`control.md`), besides poll,
/// notify and the fixed sleeps.
pub fn anchors() -> Vec<WaitMode> {
    [
        "spin:50us",
        "halt-poll",
        "haltpoll",
        "hybrid",
        "hybrid:min",
        "defer",
        "coalesce:8,20us",
    ]
    .iter()
    .map(|s| WaitMode::parse(s).expect("a valid anchor"))
    .collect()
}

/// The fixed timed sleeps searched for the best one in hindsight [ns].
pub const SLEEPS_NS: [f64; 9] = [
    500.0, 1000.0, 2000.0, 5000.0, 10_000.0, 20_000.0, 50_000.0, 100_000.0, 200_000.0,
];

/// One strategy at one point.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    /// The strategy (`--strategy` form).
    pub strategy: String,
    /// T [ns].
    pub t_ns: f64,
    /// E [ns].
    pub e_ns: f64,
    /// E - W_P - W_C [ns], W as drawn in the run's window.
    pub excess_ns: f64,
    /// Latency p50, p99, max [ns].
    pub latency_ns: [f64; 3],
    /// Kicks per message (both directions).
    pub kicks_per_message: f64,
    /// Wake-ups (blocks and timed sleeps) per message.
    pub wakeups_per_message: f64,
    /// Rate steps only (`phases`): messages after a step until T over
    /// every 512-message window stays within 10% of the new phase's own
    /// (its second half's), at the slowest step.
    pub settle_messages: Option<f64>,
    /// A real run that stayed disturbed in every try (other processes'
    /// CPU, the host's steal, a busy party off its CPU): what disturbed it,
    /// in a few words. Such a run is never the measured cheapest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disturbed: Option<String>,
    /// `adaptive`'s self-check account, P's and C's, where it ran
    /// (`kicklab run --json`'s `self_check_p`, `self_check_c`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_check_p: Option<CheckStats>,
    /// See `self_check_p`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_check_c: Option<CheckStats>,
}

impl Run {
    /// A simulated run: its excess over the work it drew.
    pub(super) fn of(strategy: WaitMode, r: &SimResult, w: f64) -> Run {
        let mut run = Run::of_rates(strategy, &r.rates, w);
        run.excess_ns = r.rates.e_ns - r.work_ns.unwrap_or(w);
        (run.self_check_p, run.self_check_c) = (r.self_check_p, r.self_check_c);
        run
    }

    /// A run's rates, its excess over `w` (the workload's mean W_P + W_C).
    pub(super) fn of_rates(strategy: WaitMode, r: &Rates, w: f64) -> Run {
        #[allow(clippy::cast_precision_loss)]
        let m = r.messages.max(1) as f64;
        #[allow(clippy::cast_precision_loss)]
        let per = |x: u64| x as f64 / m;
        let l = r
            .latency_ns
            .map_or([f64::NAN; 3], |l| [l.p50, l.p99, l.max]);
        Run {
            strategy: strategy.to_string(),
            t_ns: r.t_ns,
            e_ns: r.e_ns,
            excess_ns: r.e_ns - w,
            latency_ns: l,
            kicks_per_message: per(r.notifications_p + r.notifications_c),
            wakeups_per_message: per(r.sleeps_p + r.sleeps_c),
            settle_messages: None,
            disturbed: None,
            self_check_p: None,
            self_check_c: None,
        }
    }
}

/// One point of one workload: every strategy, and the verdicts.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// The workload.
    pub workload: Workload,
    /// Mean W_P [ns].
    pub w_p_ns: f64,
    /// Mean W_C [ns].
    pub w_c_ns: f64,
    /// Polling, notify, the anchors, the fixed sleeps and adaptive.
    pub runs: Vec<Run>,
    /// adaptive's T / polling's.
    pub t_ratio: f64,
    /// adaptive's excess / polling's (`None` where polling's excess is
    /// under 0.2 us, where the target does not apply).
    pub excess_ratio: Option<f64>,
    /// The fixed sleep with the least E among those within 5% of polling's
    /// T, if any.
    pub best_sleep: Option<String>,
    /// The anchor adaptive is judged against, if any ran at polling's
    /// pace: simulated, the least E (notify too) within 5% of polling's
    /// T; real, the least excess within 10% (`targets`).
    pub best_anchor: Option<String>,
    /// Targets that failed here, in words (empty: all hold).
    pub failures: Vec<String>,
    /// Real studies of the constant workload: the simulator's pick from
    /// the calibration's costs against the measured cheapest within the
    /// bounds (`None` where simulated, or for other workloads).
    pub pick: Option<PickCheck>,
}

impl Point {
    /// The run of `strategy` (its `--strategy` form).
    pub fn run(&self, strategy: &str) -> Option<&Run> {
        self.runs.iter().find(|r| r.strategy == strategy)
    }
}

/// The simulator's pick against the measured cheapest within the bounds
/// (`targets::cheapest`) at one point.
#[derive(Debug, Clone, Serialize)]
pub struct PickCheck {
    /// The measured cheapest within the bounds.
    pub measured: String,
    /// Its E [ns].
    pub measured_e_ns: f64,
    /// The simulator's cheapest within the bounds.
    pub simulated: String,
    /// The simulator's pick as measured: its E [ns] (`None`: it was not
    /// among the measured runs).
    pub simulated_measured_e_ns: Option<f64>,
    /// Whether, as measured, it kept the bounds.
    pub simulated_kept_bounds: bool,
    /// Whether the simulator's pick counts: measured within the bounds
    /// and within `targets::E_SPREAD` of the measured cheapest.
    pub holds: bool,
}

/// The whole study.
#[derive(Debug, Clone, Serialize)]
pub struct ControlStudy {
    /// `sim`, or the real backend (`futex`, `kvm tx`, ...).
    pub backend: String,
    /// Every point of every workload.
    pub points: Vec<Point>,
    /// The latency bound [ns].
    pub latency_ns: f64,
    /// Messages per run.
    pub messages: u64,
}

impl ControlStudy {
    /// The points that meet every target.
    pub fn held(&self) -> usize {
        self.points.iter().filter(|p| p.failures.is_empty()).count()
    }
}

impl ControlStudy {
    /// Whether every target held.
    pub fn passed(&self) -> bool {
        self.points.iter().all(|p| p.failures.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::Workload;

    #[test]
    fn a_name_parses_with_spaces_around_it_and_an_unknown_one_is_named() {
        assert_eq!(Workload::parse(" exp "), Ok(Workload::Exp));
        assert_eq!(Workload::parse("const"), Ok(Workload::Const));
        let e = Workload::parse("con st").unwrap_err();
        assert!(e.contains("unknown workload `con st`"), "{e}");
    }
}
