//! Judging a validation: the model's, the simulator's and the race
//! model's errors against the measurements, and the summary of a sweep
//! (wake-ups and the ring's cost as measured beside the model's). What
//! does not live here: running (`run`), rendering (`render`).

use kicklab_model::{median, Party};
use serde::Serialize;

use super::types::*;

/// The errors of the model and the simulator against the measured medians
/// over a set of points.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Errors {
    /// Median |measured - model| / measured of T, notify.
    pub median_err_t: f64,
    /// The same for the model fed the calibrated medians.
    pub median_err_t_medians: f64,
    /// Worst of the same.
    pub worst_err_t_medians: f64,
    /// Worst of the same.
    pub worst_err_t: f64,
    /// Median error of T, polling.
    pub median_err_t_poll: f64,
    /// Median error of E, polling.
    pub median_err_e_poll: f64,
    /// Median error of E, notify.
    pub median_err_e: f64,
    /// Median error of the simulator's T against the measurement.
    pub median_err_t_sim: f64,
    /// Median error of T of the model with S looked up at the sleepers'
    /// idle time (NaN without an idle curve, where it is the model itself).
    pub median_err_t_idle: f64,
    /// Median error of T of the model with the batch race drawn
    /// ([`Point::model_race`]).
    pub median_err_t_race: f64,
    /// Worst of the same.
    pub worst_err_t_race: f64,
    /// Median error of E of the same.
    pub median_err_e_race: f64,
    /// Worst of the same.
    pub worst_err_e_race: f64,
    /// Worst error of E, notify.
    pub worst_err_e: f64,
    /// Points whose measured sleeper matches the model's regime.
    pub regimes_agree: usize,
    /// Points.
    pub points: usize,
}

/// Summary of a validation: the errors without the disturbed points and
/// with them, and how much the repetitions disagree.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Summary {
    /// Over the points that are not disturbed (the headline).
    pub undisturbed: Errors,
    /// Over every point, the disturbed included.
    pub all: Errors,
    /// Points disturbed (after the extra tries).
    pub disturbed: usize,
    /// Points.
    pub points: usize,
    /// Repetitions per point (the most any point has).
    pub repeat: usize,
    /// Median over the points of the range of measured T over its median,
    /// notify: how far apart the repetitions are.
    pub median_spread_t: f64,
    /// The same, polling.
    pub median_spread_t_poll: f64,
    /// P's notify call as the runs met it: the median over the points of
    /// the median run's mean kick [ns] (NaN where P never kicked or its
    /// kicks are not timed: an emulated guest's); to set beside
    /// calibration's N_P.
    pub kick_p_run_ns: f64,
    /// C's, the same.
    pub kick_c_run_ns: f64,
    /// P's wake-ups as the runs met them: over the points whose median run
    /// had P sleep at least [`WAKES_SEEN`] times, that run's mean wake-up
    /// (from the start of C's kick to P running) [ns]; NaN where none.
    /// Its range is the machine's: a wake-up here costs 1 or 15 us from
    /// one point to the next (`docs/calibration.md`), where the model
    /// takes one R from calibration's reference pairs.
    pub wake_p_run_ns: Spread,
    /// C's, the same.
    pub wake_c_run_ns: Spread,
    /// The wake-ups the model takes, P's then C's [ns] (the median over the
    /// points of [`Point::model_wake`]; one value where a profile set them).
    pub wake_model_ns: [f64; 2],
    /// Where polling ran under the model's floor at every point, by a
    /// median of at least [`RING_DRIFT`]: that median shortfall (model -
    /// measured over the model). The ring's cost per message came out
    /// higher in calibration than in these runs (this machine's ring has
    /// two states, `docs/calibration.md`); `None` otherwise.
    pub poll_under_floor: Option<f64>,
}

/// How far the runs' median wake-up may be from the model's, as a
/// factor either way, before the summary says the machine's wake-ups
/// changed state since calibration: above the spread of one state's
/// wake-ups between quiet rounds here (in-run R_C 3.7-5.6 us over a day's
/// calibrations), below the step between the two states (1-4 us against
/// 10-20 us, `docs/calibration.md`).
pub const WAKE_DRIFT: f64 = 2.0;

/// The fewest sleeps of a party in a point's median run for its mean
/// wake-up to count in [`Summary::wake_p_run_ns`]: a few stray sleeps
/// (a side that hardly sleeps there) say nothing about the point.
pub const WAKES_SEEN: u64 = 100;

/// `party`'s wake-ups over the points where it slept often
/// ([`Summary::wake_p_run_ns`]).
fn wakes_run(points: &[Point], party: Party) -> Spread {
    Spread::of(points.iter().filter_map(|p| {
        let r = p.median_run();
        let (sleeps, wake) = match party {
            Party::P => (r.rates.sleeps_p, r.wake_p_ns),
            Party::C => (r.rates.sleeps_c, r.wake_c_ns),
        };
        wake.filter(|_| sleeps >= WAKES_SEEN)
    }))
}

/// How far under the model's floor polling must run, at every point, for
/// [`Summary::poll_under_floor`] to say so: below the polling column's
/// target of 3%, above the spread of quiet runs (0.3-1.8% here).
pub const RING_DRIFT: f64 = 0.02;

fn errors<'a>(points: impl Iterator<Item = &'a Point> + Clone) -> Errors {
    let err = |real: f64, model: f64| (real - model).abs() / real;
    let over = |f: &dyn Fn(&Point) -> f64| points.clone().map(f).collect::<Vec<f64>>();
    let t = over(&|p| err(p.t_real().median, p.model.0));
    let tm = over(&|p| err(p.t_real().median, p.model_median.0));
    let tr = over(&|p| err(p.t_real().median, p.model_race.0));
    let er = over(&|p| err(p.e_real().median, p.model_race.1));
    let worst = |v: &[f64]| v.iter().copied().reduce(f64::max).unwrap_or(f64::NAN);
    Errors {
        median_err_t: median(t.clone()),
        median_err_t_medians: median(tm.clone()),
        worst_err_t_medians: tm.iter().copied().reduce(f64::max).unwrap_or(f64::NAN),
        worst_err_t: t.iter().copied().reduce(f64::max).unwrap_or(f64::NAN),
        median_err_t_poll: median(over(&|p| err(p.t_poll().median, p.model_poll.0))),
        median_err_e_poll: median(over(&|p| err(p.e_poll().median, p.model_poll.1))),
        median_err_e: median(over(&|p| err(p.e_real().median, p.model.1))),
        median_err_t_sim: median(over(&|p| err(p.t_real().median, p.sim.0))),
        median_err_t_idle: median(
            points
                .clone()
                .filter_map(|p| p.model_at_idle.map(|m| err(p.t_real().median, m)))
                .collect(),
        ),
        median_err_t_race: median(tr.clone()),
        worst_err_t_race: worst(&tr),
        median_err_e_race: median(er.clone()),
        worst_err_e_race: worst(&er),
        worst_err_e: over(&|p| err(p.e_real().median, p.model.1))
            .into_iter()
            .reduce(f64::max)
            .unwrap_or(f64::NAN),
        regimes_agree: points
            .clone()
            .filter(|p| observed(p.median_run()) == sleeper(p.regime))
            .count(),
        points: points.count(),
    }
}

/// Summarizes points.
pub fn summarize(points: &[Point]) -> Summary {
    Summary {
        undisturbed: errors(points.iter().filter(|p| !p.disturbed())),
        all: errors(points.iter()),
        disturbed: points.iter().filter(|p| p.disturbed()).count(),
        points: points.len(),
        repeat: points.iter().map(|p| p.reps.len()).max().unwrap_or(0),
        median_spread_t: median(points.iter().map(|p| p.t_real().relative()).collect()),
        median_spread_t_poll: median(points.iter().map(|p| p.t_poll().relative()).collect()),
        kick_p_run_ns: median(
            points
                .iter()
                .filter_map(|p| p.median_run().kick_p_ns)
                .collect(),
        ),
        kick_c_run_ns: median(
            points
                .iter()
                .filter_map(|p| p.median_run().kick_c_ns)
                .collect(),
        ),
        wake_p_run_ns: wakes_run(points, Party::P),
        wake_c_run_ns: wakes_run(points, Party::C),
        wake_model_ns: [0, 1].map(|i| median(points.iter().map(|p| p.model_wake[i]).collect())),
        poll_under_floor: {
            let under: Vec<f64> = points
                .iter()
                .map(|p| (p.model_poll.0 - p.t_poll().median) / p.model_poll.0)
                .collect();
            let m = median(under.clone());
            (!under.is_empty() && under.iter().all(|&u| u > 0.0) && m >= RING_DRIFT).then_some(m)
        },
    }
}
