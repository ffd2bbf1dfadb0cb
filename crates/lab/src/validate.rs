//! The paper's Fig. 4 on this machine: W_C fixed, W_P swept; the model
//! (calibrated means and medians), the simulator (calibrated
//! distributions) and the measurement, with notifications and with
//! polling, each measured several times (medians and ranges; disturbed
//! repetitions run again, disturbed points flagged), as points, a summary
//! of the errors, charts, tables, JSON and a report section.

use std::fmt::Write as _;

use kicklab_model::{fmt_ns, predict, Params, Party, Regime, WaitMode};
use kicklab_report::{html_escape, Chart, Column, ErrorBar, Section, Series, Style, Table};
use kicklab_sim::{simulate, SimConfig, Start, Vary};
use kicklab_testbed::{PairResult, Profile};
use serde::Serialize;

use crate::disturbance::{check_profile, check_run, distinct, Warning};
use crate::real::RunSpec;
use crate::{Input, LabError, Progress};

/// The paper's Fig. 4 sweep: W_P from 0.2 to 3 us, 15 points (W_C 1.1 us
/// from the default parameters).
pub const FIG4_SWEEP: &str = "wp=0.2us..3us:15";

/// Repetitions of each real run per point, by default.
pub const DEFAULT_REPEAT: u32 = 3;

/// The most repetitions per point: a sweep of 15 points of 60 000 messages
/// runs about a second per repetition already.
pub const MAX_REPEAT: u32 = 25;

/// Extra tries a point gets for repetitions that came out disturbed
/// ([`crate::disturbance`]) before it is reported as disturbed.
pub const MAX_RETRIES: u32 = 3;

/// How the real runs of a validation are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Messages per real run (after a warm-up of a tenth as many).
    pub messages: u64,
    /// Seed of the first repetition (each further try adds 1).
    pub seed: u64,
    /// Repetitions of the notify and the polling run per point
    /// (1..=[`MAX_REPEAT`]).
    pub repeat: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            messages: 60_000,
            seed: 1,
            repeat: DEFAULT_REPEAT,
        }
    }
}

/// The median and the range of one measured quantity over the repetitions
/// of a point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Median (the mean of the middle two for an even count).
    pub median: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// Of `values` (NaN everywhere if there are none).
    pub fn of(values: impl IntoIterator<Item = f64>) -> Spread {
        let v: Vec<f64> = values.into_iter().collect();
        Spread {
            median: median(v.clone()),
            min: v.iter().copied().reduce(f64::min).unwrap_or(f64::NAN),
            max: v.iter().copied().reduce(f64::max).unwrap_or(f64::NAN),
        }
    }

    /// The range over the median: how much the repetitions disagree.
    pub fn relative(&self) -> f64 {
        (self.max - self.min) / self.median
    }
}

/// One repetition at a point: a run with notifications and one with
/// polling, back to back, and what their checks found.
#[derive(Debug, Clone, Serialize)]
pub struct Rep {
    /// Measured with notifications.
    pub notify: PairResult,
    /// Measured with polling.
    pub poll: PairResult,
    /// Their own warnings ([`crate::disturbance::check_run`]).
    pub warnings: Vec<Warning>,
}

/// One point of the validation.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    /// The swept value [ns].
    pub x: f64,
    /// Model regime (at the operating point the runs sat in, where the
    /// pair has two).
    pub regime: Regime,
    /// A bistable pair's other operating point (regime, T [ns]): the one
    /// the runs did not sit in. `None` for a pair with one.
    pub other: Option<(Regime, f64)>,
    /// Model T, E [ns] (notify), from the calibrated means.
    pub model: (f64, f64),
    /// Model T, E [ns] (notify), from the calibrated medians.
    pub model_median: (f64, f64),
    /// Model T [ns] with each sleeper's S looked up at its idle time on
    /// the profile's idle curve (a fixed point over the sleep length;
    /// [`crate::real::predicted_at_idle`]); `None` where the profile has no
    /// idle curve (then it is [`Point::model`]).
    pub model_at_idle: Option<f64>,
    /// Model T, E [ns] (notify) with the race inside an FC or FP round
    /// taken as a chance: each party's effective start-up drawn per
    /// notification with the calibrated spread
    /// ([`kicklab_model::predict_with_start_spread`],
    /// [`kicklab_model::Profile::start_spread`]); [`Point::model`] where the
    /// point is not FC or FP.
    pub model_race: (f64, f64),
    /// Simulator T, E [ns] (notify, calibrated distributions).
    pub sim: (f64, f64),
    /// Model T, E with polling (T: the floor of a polling run).
    pub model_poll: (f64, f64),
    /// The wake-ups the model takes, from the start of the peer's kick to
    /// the party running [ns]: R_P = V_C + S_P, R_C = V_P + S_C (means),
    /// to set beside the runs' own ([`Summary::wake_p_run_ns`]).
    pub model_wake: [f64; 2],
    /// The repetitions reported: the first [`Options::repeat`] that were
    /// not disturbed, or, once [`MAX_RETRIES`] extra tries are spent, the
    /// disturbed ones too.
    pub reps: Vec<Rep>,
    /// Repetitions run, the ones run again included.
    pub tries: u32,
    /// Why the point is disturbed: the reported repetitions' warnings,
    /// then the profile's; empty if it is not.
    pub warnings: Vec<Warning>,
}

impl Point {
    /// Whether anything disturbed it.
    pub fn disturbed(&self) -> bool {
        !self.warnings.is_empty()
    }

    /// Reported repetitions that were disturbed themselves (not counting
    /// the profile's warnings, which concern them all).
    pub fn disturbed_reps(&self) -> usize {
        self.reps.iter().filter(|r| !r.warnings.is_empty()).count()
    }

    /// What disturbed the reported repetitions themselves, each kind once:
    /// `disturbed in 2 of 3 repetitions, after 3 extra tries: ...`; `None`
    /// if none was (the profile's warnings are the profile's to say).
    pub fn run_disturbance(&self) -> Option<String> {
        let own: Vec<Warning> = self.reps.iter().flat_map(|r| r.warnings.clone()).collect();
        (!own.is_empty()).then(|| {
            format!(
                "disturbed in {} of {} repetitions, after {} extra tries: {}",
                self.disturbed_reps(),
                self.reps.len(),
                (self.tries as usize).saturating_sub(self.reps.len()),
                warnings_text(&distinct(&own))
            )
        })
    }

    fn spread(&self, f: impl Fn(&Rep) -> f64) -> Spread {
        Spread::of(self.reps.iter().map(f))
    }

    /// Measured T with notifications over the repetitions.
    pub fn t_real(&self) -> Spread {
        self.spread(|r| r.notify.rates.t_ns)
    }

    /// Measured E with notifications.
    pub fn e_real(&self) -> Spread {
        self.spread(|r| r.notify.rates.e_ns)
    }

    /// Measured T with polling.
    pub fn t_poll(&self) -> Spread {
        self.spread(|r| r.poll.rates.t_ns)
    }

    /// Measured E with polling.
    pub fn e_poll(&self) -> Spread {
        self.spread(|r| r.poll.rates.e_ns)
    }

    /// The notify run of median T (the lower of the middle two for an even
    /// count): whose counts (kicks, sleeps, who slept) the point shows.
    ///
    /// # Panics
    ///
    /// A point without repetitions ([`validate`] makes none).
    pub fn median_run(&self) -> &PairResult {
        let mut runs: Vec<&PairResult> = self.reps.iter().map(|r| &r.notify).collect();
        runs.sort_by(|a, b| a.rates.t_ns.total_cmp(&b.rates.t_ns));
        runs[(runs.len() - 1) / 2]
    }
}

/// Who slept in most of the repetitions' notify runs (ties: the median
/// run's).
fn majority_sleeper(reps: &[Rep]) -> &'static str {
    let mut counts: Vec<(&'static str, usize)> = Vec::new();
    for r in reps {
        let s = r.notify.rates.sleeper();
        match counts.iter_mut().find(|(k, _)| *k == s) {
            Some((_, n)) => *n += 1,
            None => counts.push((s, 1)),
        }
    }
    counts
        .iter()
        .max_by_key(|(_, n)| *n)
        .map_or("none", |(k, _)| *k)
}

/// The regime a measurement shows: who slept.
pub fn observed(r: &PairResult) -> &'static str {
    r.rates.sleeper()
}

/// Who sleeps in a regime, as [`observed`] names it.
pub fn sleeper(r: Regime) -> &'static str {
    r.sleeper()
}

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

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

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

/// The most points of a validation sweep.
pub const MAX_POINTS: u32 = 200;

/// Checks a validation's inputs before anything runs: every point of the
/// sweep must be a valid pair, and the repetitions in range.
///
/// # Errors
///
/// The first invalid point, no messages, or repetitions out of range.
pub fn check(
    base: &Params,
    be: kicklab_testbed::Backend,
    vary: &Vary,
    opts: &Options,
) -> Result<(), LabError> {
    base.validate()?;
    if opts.repeat == 0 {
        return Err(LabError::input(
            Input::Repeat,
            "need at least 1 repetition per point",
        ));
    }
    if opts.repeat > MAX_REPEAT {
        return Err(LabError::input(
            Input::Repeat,
            format!(
                "at most {MAX_REPEAT} repetitions per point ({} asked)",
                opts.repeat
            ),
        ));
    }
    if vary.param != kicklab_model::Param::Wp {
        return Err(LabError::input(
            Input::Vary,
            format!(
                "validate sweeps W_P (the paper's Fig. 4: wp=FROM..TO:POINTS), not {}: a profile sets \
                 the costs, and `kicklab sweep --vary` varies any parameter in the model and simulator",
                vary.param.name()
            ),
        ));
    }
    if vary.points > MAX_POINTS {
        return Err(LabError::input(
            Input::Vary,
            format!(
                "at most {MAX_POINTS} points ({} asked): each is {} x 2 real runs",
                vary.points, opts.repeat
            ),
        ));
    }
    for x in vary.values() {
        let p = vary.apply(base, x);
        p.validate()
            .map_err(|e| LabError::input(Input::Vary, format!("at {}: {e}", vary.show(x))))?;
        crate::real::check(&RunSpec::new(
            p,
            be,
            WaitMode::Notify,
            opts.messages,
            opts.seed,
        ))?;
    }
    Ok(())
}

/// The repetitions of one point: `run(seed)` gives a notify and a polling
/// run; each pair is checked ([`check_run`], polling against
/// `poll_floor_ns`), and a disturbed one is run again while the point has
/// extra tries left ([`MAX_RETRIES`]), which `note` is told. Returns the
/// [`Options::repeat`] repetitions kept and the tries made.
///
/// # Errors
///
/// The first run that fails.
pub fn repetitions(
    opts: &Options,
    poll_floor_ns: f64,
    mut run: impl FnMut(u64) -> Result<(PairResult, PairResult), LabError>,
    note: &dyn Fn(&str),
) -> Result<(Vec<Rep>, u32), LabError> {
    let (mut reps, mut tries) = (Vec::new(), 0u32);
    while reps.len() < opts.repeat as usize {
        let seed = opts.seed.wrapping_add(u64::from(tries));
        tries += 1;
        let (notify, poll) = run(seed)?;
        let mut warnings = check_run(&notify, WaitMode::Notify, None);
        warnings.extend(check_run(&poll, WaitMode::Poll, Some(poll_floor_ns)));
        // Tries thrown away so far.
        let retried = tries - 1 - u32::try_from(reps.len()).unwrap_or(u32::MAX);
        if !warnings.is_empty() && retried < MAX_RETRIES {
            note(&format!(
                "a repetition was disturbed ({}); running it again ({} of {MAX_RETRIES} extra tries)",
                distinct(&warnings)
                    .iter()
                    .map(Warning::short)
                    .collect::<Vec<_>>()
                    .join(", "),
                retried + 1
            ));
            continue;
        }
        reps.push(Rep {
            notify,
            poll,
            warnings,
        });
    }
    Ok((reps, tries))
}

/// Runs the validation sweep: at every point the model, the simulator,
/// and [`Options::repeat`] repetitions of a real run with notifications
/// and one with polling. A repetition that is disturbed
/// ([`crate::disturbance::check_run`]) is run again, up to
/// [`MAX_RETRIES`] extra tries per point (said through `progress`); a
/// point still disturbed after them, or compared with a doubtful profile
/// ([`crate::disturbance::check_profile`]: running again does not help),
/// carries its warnings.
///
/// # Errors
///
/// Bad inputs ([`check`]), or a model, simulator or real run that fails.
pub fn validate(
    base: &Params,
    profile: &Profile,
    be: kicklab_testbed::Backend,
    vary: &Vary,
    opts: &Options,
    progress: &dyn Progress,
) -> Result<Vec<Point>, LabError> {
    check(base, be, vary, opts)?;
    let doubtful = check_profile(profile);
    progress.start("validate", u64::from(vary.points));
    let mut out = Vec::new();
    let idle_scale = [profile.idle_scale(Party::P), profile.idle_scale(Party::C)];
    for x in vary.values() {
        let p = vary.apply(base, x);
        // Notify pairs take the ring's cost per message as measured with
        // the peer asleep; the polling pair the polling pair's.
        let mut mean = p;
        profile.apply_notify(&mut mean, false);
        let mut spread = p;
        profile.apply_notify(&mut spread, true);
        let mut polling = p;
        profile.apply(&mut polling, false);
        // The headline model takes S as calibrated (at the profile's idle
        // gap). The model with each sleeper's S looked up at its idle time
        // on the idle curve (a fixed point over the sleep length) is shown
        // beside it: where S(idle) is steep (KVM here) the fixed point has
        // more than one solution and can settle on the wrong one
        // (`docs/calibration.md`).
        let m = predict(&mean, WaitMode::Notify)?;
        let mut typical = p;
        profile.apply_medians(&mut typical);
        let mm = predict(&typical, WaitMode::Notify)?;
        let g = predict(&polling, WaitMode::Poll)?;
        let what = format!("{}={}", vary.param.name(), fmt_ns(x));
        let (reps, tries) = repetitions(
            opts,
            g.rates.t_ns,
            |seed| {
                let run = |mode| crate::real::run(&RunSpec::new(p, be, mode, opts.messages, seed));
                Ok((run(WaitMode::Notify)?, run(WaitMode::Poll)?))
            },
            &|line| progress.note(&format!("{what}: {line}")),
        )?;
        // A bistable pair (kick visibility) has two operating points; the
        // runs' own counts (who slept) say which one they sat in, and the
        // model and simulator are compared at that one.
        let slept = majority_sleeper(&reps);
        let at_other = |pr: &kicklab_model::Prediction| {
            pr.other
                .filter(|o| o.regime.sleeper() == slept && pr.regime.sleeper() != slept)
        };
        // (regime, T, E, messages per round) at that point.
        let chosen = |pr: &kicklab_model::Prediction| match at_other(pr) {
            Some(o) => (o.regime, o.t_ns, o.e_ns, o.round_messages),
            None => (pr.regime, pr.rates.t_ns, pr.rates.e_ns, pr.round_messages),
        };
        let full = at_other(&m).is_some();
        let (regime, t_model, e_busy, round) = chosen(&m);
        let e_model = crate::real::cpu_per_message(regime, round, e_busy, &mean, profile);
        let (med_regime, t_med, e_med_busy, med_round) = chosen(&mm);
        let e_med =
            crate::real::cpu_per_message(med_regime, med_round, e_med_busy, &typical, profile);
        let model_race = kicklab_model::predict_with_start_spread(
            &mean,
            WaitMode::Notify,
            profile.start_spread(),
            full,
        )?
        .map_or((t_model, e_model), |r| {
            let e = crate::real::cpu_per_message_over(
                r.regime,
                r.round_messages,
                r.e_ns,
                &mean,
                profile,
            );
            (r.t_ns, e)
        });
        let model_at_idle = if profile.idle_curve.is_empty() {
            None
        } else {
            crate::real::predicted_at_idle(&p, profile, WaitMode::Notify)?
                .map(|x| chosen(&x.prediction).1)
        };
        let s = simulate(&SimConfig {
            seed: opts.seed,
            start: if full { Start::Full } else { Start::Empty },
            idle_scale,
            ..SimConfig::new(spread, WaitMode::Notify, 200_000)
        })?;
        let e_sim = {
            // The simulator's E counts S as busy too.
            let sim_round = s.rates.notifications_p.max(s.rates.notifications_c);
            let round = (sim_round > 0).then(|| s.rates.messages / sim_round);
            crate::real::cpu_per_message(regime, round, s.rates.e_ns, &mean, profile)
        };
        let mut warnings: Vec<Warning> = reps.iter().flat_map(|r| r.warnings.clone()).collect();
        warnings.extend(doubtful.iter().copied());
        out.push(Point {
            x,
            regime,
            other: m.other.map(|o| {
                if full {
                    (m.regime, m.rates.t_ns)
                } else {
                    (o.regime, o.t_ns)
                }
            }),
            model: (t_model, e_model),
            model_median: (t_med, e_med),
            model_at_idle,
            model_race,
            sim: (s.rates.t_ns, e_sim),
            model_poll: (g.rates.t_ns, g.rates.e_ns),
            model_wake: [
                mean.vis_c().mean_ns() + mean.s_p.mean_ns(),
                mean.vis_p().mean_ns() + mean.s_c.mean_ns(),
            ],
            reps,
            tries,
            warnings,
        });
        progress.step();
    }
    progress.finish();
    Ok(out)
}

/// The T and E charts: the measured series with error bars over the
/// repetitions (min to max), disturbed points ringed.
pub fn charts(points: &[Point], be: &str) -> (Chart, Chart) {
    let us = |v: f64| v / 1000.0;
    let line = |name: &str, style, f: &dyn Fn(&Point) -> f64| Series {
        name: name.into(),
        points: points.iter().map(|p| (us(p.x), us(f(p)))).collect(),
        style,
        ..Series::default()
    };
    let measured = |name: &str, style, f: &dyn Fn(&Point) -> Spread| Series {
        error_bars: points
            .iter()
            .map(|p| {
                let s = f(p);
                ErrorBar {
                    x: us(p.x),
                    lo: us(s.min),
                    hi: us(s.max),
                }
            })
            .collect(),
        ..line(name, style, &|p| f(p).median)
    };
    let disturbed = |f: &dyn Fn(&Point) -> [Spread; 2]| Series {
        name: "disturbed (after the extra tries)".into(),
        points: points
            .iter()
            .filter(|p| p.disturbed())
            .flat_map(|p| f(p).map(|s| (us(p.x), us(s.median))))
            .collect(),
        style: Style::Ring,
        ..Series::default()
    };
    let chart = |title: String, y_label: &str, mut series: Vec<Series>, ring: Series| {
        if !ring.points.is_empty() {
            series.push(ring);
        }
        Chart {
            title,
            x_label: "W_P [us]".into(),
            y_label: y_label.into(),
            series,
            ..Chart::default()
        }
    };
    (
        chart(
            format!("Fig. 4 on this machine ({be}): time per message, W_C = 1.1 us"),
            "T [us/message]",
            vec![
                line("model, notify (calibrated N, S)", Style::Thick, &|p| {
                    p.model.0
                }),
                line(
                    "simulator, notify (calibrated spread)",
                    Style::Points,
                    &|p| p.sim.0,
                ),
                measured("measured, notify (median, min-max)", Style::Dashed, &|p| {
                    p.t_real()
                }),
                line("model, poll", Style::Line, &|p| p.model_poll.0),
                measured("measured, poll (median, min-max)", Style::Points, &|p| {
                    p.t_poll()
                }),
                line("model, notify (calibrated medians)", Style::Line, &|p| {
                    p.model_median.0
                }),
            ],
            disturbed(&|p| [p.t_real(), p.t_poll()]),
        ),
        chart(
            format!("Fig. 4 on this machine ({be}): CPU per message"),
            "E [us of CPU/message]",
            vec![
                line("model, notify (calibrated N, S)", Style::Thick, &|p| {
                    p.model.1
                }),
                line(
                    "simulator, notify (calibrated spread)",
                    Style::Points,
                    &|p| p.sim.1,
                ),
                measured("measured, notify (median, min-max)", Style::Dashed, &|p| {
                    p.e_real()
                }),
                line("model, poll", Style::Line, &|p| p.model_poll.1),
                measured("measured, poll (median, min-max)", Style::Points, &|p| {
                    p.e_poll()
                }),
                line("model, notify (calibrated medians)", Style::Line, &|p| {
                    p.model_median.1
                }),
            ],
            disturbed(&|p| [p.e_real(), p.e_poll()]),
        ),
    )
}

/// The table of points: one row per point, the same value rendered as
/// the page's table, the CSV and (with [`to_json`]) the JSON. Measured
/// values are medians over the repetitions, with their range; counts are
/// the median run's ([`Point::median_run`]).
pub fn table(points: &[Point]) -> Table {
    let mut t = Table::new(
        "validation points",
        vec![
            Column::ns("wp", "W_P"),
            Column::text("regime", "model regime"),
            Column::text("observed_sleeper", "who slept"),
            Column::text("other_point", "other operating point"),
            Column::ns("T_model", "T model"),
            Column::ns("E_model", "E model"),
            Column::ns("T_model_medians", "T model (medians)"),
            Column::ns("T_model_idle", "T model (S at the sleepers' idle time)"),
            Column::ns("T_model_race", "T model (batch race drawn)"),
            Column::ns("E_model_race", "E model (batch race drawn)"),
            Column::ns("T_sim", "T sim"),
            Column::ns("E_sim", "E sim"),
            Column::ns("T_real", "T measured"),
            Column::ns("T_real_min", "min"),
            Column::ns("T_real_max", "max"),
            Column::ns("E_real", "E measured"),
            Column::ns("E_real_min", "min"),
            Column::ns("E_real_max", "max"),
            Column::ns("T_poll_model", "T poll model"),
            Column::ns("E_poll_model", "E poll model"),
            Column::ns("T_poll_real", "T poll measured"),
            Column::ns("T_poll_real_min", "min"),
            Column::ns("T_poll_real_max", "max"),
            Column::ns("E_poll_real", "E poll measured"),
            Column::number("notifications_p", "kicks P"),
            Column::number("notifications_c", "kicks C"),
            Column::number("sleeps_p", "sleeps P"),
            Column::number("sleeps_c", "sleeps C"),
            Column::ns("kick_p", "P's kick in the run"),
            Column::ns("kick_c", "C's kick in the run"),
            Column::ns("wake_p", "P's wake-up in the run"),
            Column::ns("wake_c", "C's wake-up in the run"),
            Column::number("repetitions", "repetitions"),
            Column::number("tries", "tries"),
            Column::flag("disturbed", "disturbed"),
            Column::text("warnings", "warnings"),
        ],
    );
    for p in points {
        let (tr, er, tp) = (p.t_real(), p.e_real(), p.t_poll());
        let r = p.median_run();
        t.push(vec![
            p.x.into(),
            p.regime.name().into(),
            observed(r).into(),
            p.other
                .map_or(String::new(), |(g, t)| format!("{g} at {}", fmt_ns(t)))
                .into(),
            p.model.0.into(),
            p.model.1.into(),
            p.model_median.0.into(),
            p.model_at_idle.unwrap_or(f64::NAN).into(),
            p.model_race.0.into(),
            p.model_race.1.into(),
            p.sim.0.into(),
            p.sim.1.into(),
            tr.median.into(),
            tr.min.into(),
            tr.max.into(),
            er.median.into(),
            er.min.into(),
            er.max.into(),
            p.model_poll.0.into(),
            p.model_poll.1.into(),
            tp.median.into(),
            tp.min.into(),
            tp.max.into(),
            p.e_poll().median.into(),
            r.rates.notifications_p.into(),
            r.rates.notifications_c.into(),
            r.rates.sleeps_p.into(),
            r.rates.sleeps_c.into(),
            r.kick_p_ns.unwrap_or(f64::NAN).into(),
            r.kick_c_ns.unwrap_or(f64::NAN).into(),
            r.wake_p_ns.unwrap_or(f64::NAN).into(),
            r.wake_c_ns.unwrap_or(f64::NAN).into(),
            (p.reps.len() as u64).into(),
            p.tries.into(),
            p.disturbed().into(),
            warnings_text(&p.warnings).into(),
        ]);
    }
    t
}

/// Warnings as one line of text.
fn warnings_text(w: &[Warning]) -> String {
    w.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// The validation as one JSON object: `backend`, `direction` (kvm: `tx`
/// or `rx`; null for the thread backends, whose parties are both host
/// threads), the run options, the rule's margin, `summary`, and `points`:
/// [`table`]'s rows, whose `warnings` are the [`Warning`] objects.
pub fn to_json(
    points: &[Point],
    base: &Params,
    be: kicklab_testbed::Backend,
    vary: &Vary,
    opts: &Options,
) -> serde_json::Value {
    let mut rows = table(points).to_json();
    if let Some(rows) = rows.as_array_mut() {
        for (row, p) in rows.iter_mut().zip(points) {
            row["warnings"] = serde_json::to_value(&p.warnings).unwrap_or_default();
        }
    }
    let direction = match be {
        kicklab_testbed::Backend::Kvm(o) => serde_json::Value::from(o.direction.name()),
        kicklab_testbed::Backend::Threads(_) => serde_json::Value::Null,
    };
    serde_json::json!({
        "backend": be.name(),
        "direction": direction,
        "vary": vary.to_string(),
        "params": serde_json::to_value(base).unwrap_or_default(),
        "messages": opts.messages,
        "repeat": opts.repeat,
        "seed": opts.seed,
        "max_retries": MAX_RETRIES,
        "margin": crate::disturbance::MARGIN,
        "summary": summarize(points),
        "points": rows,
    })
}

/// The error lines of a set of points.
fn errors_text(e: &Errors) -> String {
    format!(
        "T, notify: median error {:.1}%, worst {:.1}% (model of the calibrated means vs measured)\n\
         T, notify: median error {:.1}%, worst {:.1}% (model of the calibrated medians vs measured)\n\
         T, notify: median error {:.1}% (simulator, calibrated spread and idle curve, vs measured)\n\
         T, notify: median error {:.1}% (model with S at the sleepers' idle time, from the idle curve)\n\
         T, notify: median error {:.1}%, worst {:.1}%; E {:.1}%, worst {:.1}% (model with the batch race drawn: s per kick with the calibrated spread)\n\
         T, poll:   median error {:.1}%\n\
         E, poll:   median error {:.1}%\n\
         E, notify: median error {:.1}%, worst {:.1}% (CPU: a sleep counts what one cost the sleeper's CPU in calibration's reference pairs)\n\
         regimes:   {}/{} points where the side that slept is the one the model's regime says",
        100.0 * e.median_err_t,
        100.0 * e.worst_err_t,
        100.0 * e.median_err_t_medians,
        100.0 * e.worst_err_t_medians,
        100.0 * e.median_err_t_sim,
        100.0 * e.median_err_t_idle,
        100.0 * e.median_err_t_race,
        100.0 * e.worst_err_t_race,
        100.0 * e.median_err_e_race,
        100.0 * e.worst_err_e_race,
        100.0 * e.median_err_t_poll,
        100.0 * e.median_err_e_poll,
        100.0 * e.median_err_e,
        100.0 * e.worst_err_e,
        e.regimes_agree,
        e.points
    )
}

/// One line per summary figure: the errors over the undisturbed points,
/// then, if some are disturbed, the main ones with them included; if all
/// are, the errors over all of them.
pub fn summary_text(s: &Summary) -> String {
    let mut t = format!(
        "points:    {}, {} repetition(s) each (measured values are their medians), {} disturbed",
        s.points, s.repeat, s.disturbed
    );
    if s.disturbed == 0 {
        t.push('\n');
        t.push_str(&errors_text(&s.all));
    } else if s.undisturbed.points > 0 {
        let a = &s.all;
        let _ = write!(
            t,
            " (marked; left out of the errors below)\n{}\nwith the disturbed: T, notify: median error {:.1}%, worst {:.1}%; \
             T, poll: {:.1}%; E, poll: {:.1}%; E, notify: {:.1}%; regimes {}/{}",
            errors_text(&s.undisturbed),
            100.0 * a.median_err_t,
            100.0 * a.worst_err_t,
            100.0 * a.median_err_t_poll,
            100.0 * a.median_err_e_poll,
            100.0 * a.median_err_e,
            a.regimes_agree,
            a.points
        );
    } else {
        let _ = write!(
            t,
            " (every point: the errors below are over all of them)\n{}",
            errors_text(&s.all)
        );
    }
    if !(s.kick_p_run_ns.is_nan() && s.kick_c_run_ns.is_nan()) {
        let show = |v: f64| {
            if v.is_nan() {
                "-".to_string()
            } else {
                fmt_ns(v)
            }
        };
        let _ = write!(
            t,
            "\nkicks:     a notify call in the runs took {} (P) and {} (C), median over the points (the runs' N, \
             to set beside the calibrated N)",
            show(s.kick_p_run_ns),
            show(s.kick_c_run_ns)
        );
    }
    for (who, w, model) in [
        ("P", &s.wake_p_run_ns, s.wake_model_ns[0]),
        ("C", &s.wake_c_run_ns, s.wake_model_ns[1]),
    ] {
        if w.median.is_nan() {
            continue;
        }
        let _ = write!(
            t,
            "\nwakes:     {who}'s wake-ups in the runs took {} to {} (median {}) over the points where it slept \
             {WAKES_SEEN} times or more; the model takes {}",
            fmt_ns(w.min),
            fmt_ns(w.max),
            fmt_ns(w.median),
            fmt_ns(model)
        );
        let ratio = w.median / model;
        if model > 0.0 && !(1.0 / WAKE_DRIFT..=WAKE_DRIFT).contains(&ratio) {
            let _ = write!(
                t,
                " ({ratio:.2}x, {} the model's: the machine's wake-ups were in another state than in \
                 calibration; calibrate again, and see docs/calibration.md)",
                if ratio > 1.0 { "over twice" } else { "under half" }
            );
        }
    }
    if let Some(u) = s.poll_under_floor {
        let _ = write!(
            t,
            "\nring:      polling ran under the model's floor at every point, by a median {:.1}%: calibration met \
             the ring's cost per message in a slower state than these runs did (calibrate again)",
            100.0 * u
        );
    }
    if s.repeat > 1 {
        let _ = write!(
            t,
            "\nrepeats:   measured T varies by a median {:.1}% between repetitions (notify), {:.1}% (poll) \
             (max - min over the median)",
            100.0 * s.median_spread_t,
            100.0 * s.median_spread_t_poll
        );
    }
    t
}

/// The section for a page.
///
/// # Errors
///
/// A chart that cannot be drawn.
pub fn section(
    points: &[Point],
    profile: &Profile,
    be: &str,
    cmd: &str,
) -> Result<Section, LabError> {
    let s = summarize(points);
    let (t, e) = charts(points, be);
    let table = table(points).to_html();
    let runs = || {
        points
            .iter()
            .flat_map(|p| &p.reps)
            .flat_map(|r| [&r.notify, &r.poll])
    };
    let placed = if runs().all(|r| r.pinned) {
        "each pinned to a CPU of its own"
    } else {
        "NOT every run had a CPU per party (see the run's placement fields)"
    };
    // `be` is a label: a backend's name, or `kvm tx` / `kvm rx`.
    let be_flags = be.replacen(' ', " --direction ", 1);
    let slug = be.replace(' ', "-");
    let setup = if be.starts_with("kvm") {
        format!(
            "One party inside a tiny KVM guest (its message loop in guest user mode; its kicks are `out`s to an \
             ioeventfd port; it halts by exiting to the VMM, whose vCPU thread sleeps on a doorbell eventfd), the other \
             a host thread, the kicklab ring in guest memory; {placed}."
        )
    } else {
        format!("Two threads, the kicklab ring, {be} notifications; {placed}.")
    };
    let mut disturbed = format!(
        "<p>Each point: {} repetition(s) of the run with notifications and of the one with polling; the measured \
         values are their medians, the error bars their range (min to max). A run is <em>disturbed</em> when polling \
         is more than {margin:.0}% slower than its floor (the model's polling T), when a party that did not sleep (at \
         most once per 1000 messages) was on its CPU for less than 1/(1 + {margin:.0}%) of the run, when threads \
         outnumber CPUs, or when the calibration it is compared with is unstable or has a negative start-up cost; a \
         disturbed repetition is run again, up to {MAX_RETRIES} extra tries per point (<code>docs/cli.md</code>).</p>",
        s.repeat,
        margin = 100.0 * crate::disturbance::MARGIN
    );
    let doubtful = check_profile(profile);
    if s.disturbed > 0 {
        let _ = write!(
            disturbed,
            "<p class=\"warning\"><strong>{} of {} points still disturbed</strong> (highlighted in the table, ringed \
             in the charts):</p><ul>",
            s.disturbed, s.points
        );
        if !doubtful.is_empty() {
            let _ = write!(
                disturbed,
                "<li>every point: {}</li>",
                html_escape(&warnings_text(&doubtful))
            );
        }
        for (p, line) in points
            .iter()
            .filter_map(|p| p.run_disturbance().map(|l| (p, l)))
        {
            let _ = write!(
                disturbed,
                "<li>W_P {}: {}</li>",
                fmt_ns(p.x),
                html_escape(&line)
            );
        }
        disturbed.push_str("</ul>");
    }
    let html = format!(
        "<p>{setup} N and S from \
         <code>kicklab calibrate --backend {be_flags}</code> (N_P {}, N_C {}, S_P {}, S_C {} means; V_P {}, V_C {}: when \
         the sleeping party sees the notification, from its start; the ring's own cost per message, {} (median), is added to W_P \
         and W_C). The model uses the means; the simulator draws them from lognormals with the measured spread and \
         scales each S on the idle curve at the sleeper's actual idle time; the model's E counts each sleep at what one \
         cost the sleeper's CPU in calibration's reference pairs (else the CPU part of a wake-up, S cpu). A bistable pair is compared at the operating point its runs sat in (who slept).</p>{disturbed}<pre>{}</pre>\
         <p>Reproduce: <code>{}</code>.</p>{table}",
        fmt_ns(profile.np.mean_ns),
        fmt_ns(profile.nc.mean_ns),
        fmt_ns(profile.sp.mean_ns),
        fmt_ns(profile.sc.mean_ns),
        profile
            .visibility(Party::P)
            .map_or_else(|| "= N_P".to_string(), |v| fmt_ns(v.mean_ns)),
        profile
            .visibility(Party::C)
            .map_or_else(|| "= N_C".to_string(), |v| fmt_ns(v.mean_ns)),
        profile
            .overhead
            .as_ref()
            .map_or_else(|| "not measured".to_string(), |o| fmt_ns(o.median_ns)),
        html_escape(&summary_text(&s)),
        html_escape(cmd)
    );
    Ok(Section {
        id: format!("validate-{slug}"),
        heading: format!("Model vs simulator vs measurement ({be})"),
        html,
        figures: vec![
            (
                format!("validate-{slug}-T"),
                t.to_svg(kicklab_report::FIG_W, kicklab_report::FIG_H)?,
                t.caption(),
            ),
            (
                format!("validate-{slug}-E"),
                e.to_svg(kicklab_report::FIG_W, kicklab_report::FIG_H)?,
                e.caption(),
            ),
        ],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disturbance::tests::run;
    use kicklab_model::Party;

    /// A quiet notify run of `t` per message in FC: C sleeps, P is busy
    /// all the time.
    fn notify(t: f64) -> PairResult {
        run(t, [t, 300.0], [0, 100])
    }

    /// A quiet polling run of `t` per message.
    fn poll(t: f64) -> PairResult {
        run(t, [t, t], [0, 0])
    }

    /// A point at `x` whose model says `model_t` (notify) and 1000 ns
    /// (poll), with repetitions of notify T `ts` (polling at 1000 ns) and
    /// the given warnings (those of a run in every repetition).
    fn point(x: f64, model_t: f64, ts: &[f64], warnings: Vec<Warning>) -> Point {
        Point {
            model_at_idle: None,
            model_race: (model_t, 2.0 * model_t),
            other: None,
            x,
            regime: Regime::FC,
            model: (model_t, 2.0 * model_t),
            model_median: (model_t, 2.0 * model_t),
            sim: (model_t, 2.0 * model_t),
            model_poll: (1000.0, 2000.0),
            model_wake: [4000.0, 4000.0],
            reps: ts
                .iter()
                .map(|&t| Rep {
                    notify: notify(t),
                    poll: poll(1000.0),
                    warnings: warnings
                        .iter()
                        .filter(|w| w.retry_may_help())
                        .copied()
                        .collect(),
                })
                .collect(),
            tries: u32::try_from(ts.len()).unwrap(),
            warnings,
        }
    }

    fn slow() -> Warning {
        Warning::SlowPolling {
            t_ns: 2000.0,
            floor_ns: 1000.0,
        }
    }

    #[test]
    fn spreads_are_medians_and_ranges() {
        let s = Spread::of([3.0, 1.0, 2.0]);
        assert_eq!((s.median, s.min, s.max), (2.0, 1.0, 3.0));
        assert!((s.relative() - 1.0).abs() < 1e-12);
        assert_eq!(Spread::of([1.0, 2.0, 3.0, 10.0]).median, 2.5);
        let one = Spread::of([4.0]);
        assert_eq!((one.median, one.min, one.max), (4.0, 4.0, 4.0));
        assert_eq!(one.relative(), 0.0);
        assert!(Spread::of([]).median.is_nan());
    }

    #[test]
    fn polling_under_the_floor_at_every_point_says_the_ring_moved() {
        // Polling at the model's floor: nothing to say.
        let at = point(1000.0, 1200.0, &[1200.0], vec![]);
        let s = summarize(&[at.clone(), at.clone()]);
        assert_eq!(s.poll_under_floor, None);
        assert!(!summary_text(&s).contains("ring:"));
        // 6% under it at every point: the calibration's ring cost was high.
        let mut under = at.clone();
        for r in &mut under.reps {
            r.poll = poll(940.0);
        }
        let s = summarize(&[under.clone(), under.clone()]);
        assert!((s.poll_under_floor.unwrap() - 0.06).abs() < 1e-9);
        assert!(summary_text(&s)
            .contains("polling ran under the model's floor at every point, by a median 6.0%"));
        // Under at one point only, or by less than RING_DRIFT: nothing.
        assert_eq!(summarize(&[under.clone(), at]).poll_under_floor, None);
        for r in &mut under.reps {
            r.poll = poll(990.0);
        }
        assert_eq!(summarize(&[under]).poll_under_floor, None);
    }

    #[test]
    fn the_summary_gives_the_runs_wake_ups_where_a_side_slept_often() {
        let at = |wake_c: f64, sleeps_c: u64| {
            let mut p = point(2000.0, 2400.0, &[2400.0], vec![]);
            p.reps[0].notify.wake_c_ns = Some(wake_c);
            p.reps[0].notify.rates.sleeps_c = sleeps_c;
            p
        };
        let s = summarize(&[at(4e3, 5000), at(15e3, 900), at(1e3, 100), at(60e3, 99)]);
        let w = s.wake_c_run_ns;
        assert_eq!((w.min, w.median, w.max), (1e3, 4e3, 15e3), "{w:?}");
        assert!(s.wake_p_run_ns.median.is_nan(), "P never slept");
        let text = summary_text(&s);
        assert!(
            text.contains("C's wake-ups in the runs took 1us to 15us (median 4us)")
                && text.contains("the model takes 4us"),
            "{text}"
        );
        assert!(
            !text.contains("P's wake-ups") && !text.contains("another state"),
            "{text}"
        );
        // Runs that met wake-ups 2.5 times the model's: said.
        let s = summarize(&[at(10e3, 5000)]);
        assert!(summary_text(&s).contains(
            "(2.50x, over twice the model's: the machine's wake-ups were in another state"
        ));
        let s = summarize(&[at(1.9e3, 5000)]);
        assert!(summary_text(&s).contains("(0.47x, under half the model's: the machine's"));
        let s = summarize(&[at(2.1e3, 5000), at(7.9e3, 5000)]);
        assert!(!summary_text(&s).contains("another state"));
    }

    #[test]
    fn the_summary_is_over_the_medians_of_the_repetitions() {
        // Repetitions 1000, 1100 (the median) and an outlier at 5000: the
        // model of 1100 is exact against the median.
        let p = point(500.0, 1100.0, &[1000.0, 5000.0, 1100.0], vec![]);
        assert_eq!(p.t_real().median, 1100.0);
        assert_eq!((p.t_real().min, p.t_real().max), (1000.0, 5000.0));
        assert_eq!(p.median_run().rates.t_ns, 1100.0);
        let q = point(1000.0, 1000.0, &[1250.0, 1250.0, 1250.0], vec![]);
        let s = summarize(&[p.clone(), q]);
        assert_eq!((s.points, s.disturbed, s.repeat), (2, 0, 3));
        assert_eq!(s.all.points, 2);
        assert!((s.all.median_err_t - 0.1).abs() < 1e-12, "{:?}", s.all);
        assert!((s.all.worst_err_t - 0.2).abs() < 1e-12, "{:?}", s.all);
        assert_eq!(s.all.median_err_t_poll, 0.0);
        assert_eq!(s.all.median_err_e_poll, 0.0);
        // Polling measured at 1250 ns (E 2500 ns) where the model says 1000
        // (2000): both errors over the measured value, 0.2.
        let mut slow = point(1000.0, 1000.0, &[1000.0], vec![]);
        slow.reps[0].poll = poll(1250.0);
        let e = summarize(&[slow]).all;
        assert!((e.median_err_t_poll - 0.2).abs() < 1e-12, "{e:?}");
        assert!((e.median_err_e_poll - 0.2).abs() < 1e-12, "{e:?}");
        assert_eq!(s.all.regimes_agree, 2, "C slept in both, as FC says");
        // The spread of the repetitions: (5000 - 1000) / 1100, and 0.
        assert!((s.median_spread_t - (4000.0 / 1100.0) / 2.0).abs() < 1e-12);
        assert_eq!(s.median_spread_t_poll, 0.0);
        let text = summary_text(&s);
        assert!(text.contains("2, 3 repetition(s) each"), "{text}");
        assert!(text.contains("0 disturbed"), "{text}");
        assert!(text.contains("median error 10.0%, worst 20.0%"), "{text}");
        assert!(text.contains("repeats:"), "{text}");
        // The model with the batch race drawn has its own errors: here
        // exact at the first point (1100 against the median 1100), 40% over
        // at the second (1750 against 1250); E exact at both.
        let (mut p2, mut q2) = (p.clone(), point(1000.0, 1000.0, &[1250.0; 3], vec![]));
        p2.model_race = (1100.0, p2.e_real().median);
        q2.model_race = (1750.0, q2.e_real().median);
        let r = summarize(&[p2, q2]).all;
        assert!((r.median_err_t_race - 0.2).abs() < 1e-12, "{r:?}");
        assert!((r.worst_err_t_race - 0.4).abs() < 1e-12, "{r:?}");
        assert_eq!(
            (r.median_err_e_race, r.worst_err_e_race),
            (0.0, 0.0),
            "{r:?}"
        );
        assert!(summary_text(&summarize(std::slice::from_ref(&p))).contains("batch race drawn"));
        // An even count: the median is the mean of the middle two; the
        // median run the lower one.
        let even = point(0.0, 1.0, &[1000.0, 1400.0, 1200.0, 9000.0], vec![]);
        assert_eq!(even.t_real().median, 1300.0);
        assert_eq!(even.median_run().rates.t_ns, 1200.0);
    }

    #[test]
    fn disturbed_points_are_counted_left_out_then_shown_with_the_rest() {
        let good = point(500.0, 1000.0, &[1000.0], vec![]);
        let bad = point(1000.0, 1000.0, &[4000.0], vec![slow()]);
        assert!(!good.disturbed() && bad.disturbed());
        let s = summarize(&[good.clone(), bad.clone()]);
        assert_eq!((s.points, s.disturbed), (2, 1));
        assert_eq!(s.undisturbed.points, 1);
        assert_eq!(s.undisturbed.median_err_t, 0.0);
        assert_eq!(s.undisturbed.worst_err_t, 0.0);
        // No undisturbed point: no errors (NaN, null in JSON), not zeros.
        let none = summarize(std::slice::from_ref(&bad));
        assert_eq!(none.undisturbed.points, 0);
        assert!(none.undisturbed.worst_err_t.is_nan() && none.undisturbed.median_err_t.is_nan());
        assert!((s.all.worst_err_t - 0.75).abs() < 1e-12);
        let text = summary_text(&s);
        assert!(text.contains("1 disturbed (marked; left out"), "{text}");
        assert!(text.contains("median error 0.0%, worst 0.0%"), "{text}");
        assert!(
            text.contains("with the disturbed: T, notify: median error 37.5%, worst 75.0%"),
            "{text}"
        );
        assert!(
            !text.contains("repeats:"),
            "one repetition: no spread: {text}"
        );
        // Every point disturbed: the errors over all of them, said so.
        let s = summarize(&[bad.clone(), bad]);
        let text = summary_text(&s);
        assert!(text.contains("2 disturbed (every point"), "{text}");
        assert!(text.contains("median error 75.0%"), "{text}");
    }

    #[test]
    fn disturbed_repetitions_are_run_again_within_the_bound() {
        let opts = Options {
            messages: 1000,
            seed: 7,
            repeat: 2,
        };
        let notes = std::cell::RefCell::new(Vec::new());
        let note = |l: &str| notes.borrow_mut().push(l.to_string());
        // The second try is disturbed (polling twice its floor), the
        // others are quiet: one extra try.
        let mut seeds = Vec::new();
        let (reps, tries) = repetitions(
            &opts,
            1000.0,
            |seed| {
                seeds.push(seed);
                let t = if seeds.len() == 2 { 2000.0 } else { 1000.0 };
                Ok((notify(1200.0), poll(t)))
            },
            &note,
        )
        .unwrap();
        assert_eq!((reps.len(), tries), (2, 3));
        assert_eq!(seeds, [7, 8, 9], "every try its own seed");
        assert!(reps.iter().all(|r| r.warnings.is_empty()));
        assert_eq!(notes.borrow().len(), 1);
        assert!(
            notes.borrow()[0].contains("1 of 3 extra tries"),
            "{:?}",
            notes.borrow()
        );
        // Always disturbed: MAX_RETRIES extra tries, then the disturbed
        // repetitions are kept with their warnings.
        notes.borrow_mut().clear();
        let (reps, tries) = repetitions(
            &opts,
            1000.0,
            |_| Ok((run(3000.0, [1000.0, 300.0], [0, 100]), poll(1000.0))),
            &note,
        )
        .unwrap();
        assert_eq!(tries, 2 + MAX_RETRIES);
        assert_eq!(reps.len(), 2);
        assert_eq!(notes.borrow().len(), MAX_RETRIES as usize);
        for r in &reps {
            assert!(
                matches!(
                    r.warnings[..],
                    [Warning::OffCpu {
                        party: Party::P,
                        ..
                    }]
                ),
                "{:?}",
                r.warnings
            );
        }
    }

    #[test]
    fn bad_repetition_counts_are_refused() {
        let be = kicklab_testbed::Backend::Threads(kicklab_ring::NotifierKind::Futex);
        let vary = Vary::parse("wp=1us..2us:2").unwrap();
        for repeat in [0, MAX_REPEAT + 1] {
            let opts = Options {
                repeat,
                ..Options::default()
            };
            match check(&Params::default(), be, &vary, &opts) {
                Err(LabError::Input {
                    input: Input::Repeat,
                    reason,
                }) => assert!(reason.contains("repetition"), "{reason}"),
                other => panic!("{repeat}: {other:?}"),
            }
        }
        let ok = Options {
            repeat: MAX_REPEAT,
            ..Options::default()
        };
        check(&Params::default(), be, &vary, &ok).unwrap();
    }

    #[test]
    fn the_json_has_every_point_with_the_contract_fields() {
        let points = [
            point(500.0, 1000.0, &[1000.0, 1100.0, 1200.0], vec![]),
            point(1000.0, 1000.0, &[4000.0], vec![slow()]),
        ];
        let be = kicklab_testbed::Backend::Threads(kicklab_ring::NotifierKind::Futex);
        let vary = Vary::parse("wp=0.5us..1us:2").unwrap();
        let v = to_json(&points, &Params::default(), be, &vary, &Options::default());
        assert_eq!(v["backend"], "futex");
        assert!(v["direction"].is_null());
        assert_eq!(v["repeat"], DEFAULT_REPEAT);
        assert_eq!(v["summary"]["disturbed"], 1);
        let rows = v["points"].as_array().unwrap();
        assert_eq!(rows.len(), 2);
        for row in rows {
            for key in [
                "wp_ns",
                "T_model_ns",
                "T_sim_ns",
                "T_real_ns",
                "E_model_ns",
                "E_real_ns",
                "T_poll_model_ns",
                "T_poll_real_ns",
                "T_real_min_ns",
                "T_real_max_ns",
            ] {
                assert!(row[key].is_number(), "{key}: {row}");
            }
            assert!(row["regime"].is_string());
            assert!(row["disturbed"].is_boolean());
            assert!(row["repetitions"].is_u64());
            assert!(row["warnings"].is_array());
        }
        assert_eq!(rows[0]["T_real_ns"], 1100.0);
        assert_eq!(rows[0]["T_real_min_ns"], 1000.0);
        assert_eq!(rows[0]["T_real_max_ns"], 1200.0);
        assert_eq!(rows[0]["disturbed"], false);
        assert_eq!(rows[1]["disturbed"], true);
        assert_eq!(rows[1]["warnings"][0]["kind"], "slow_polling");
    }

    #[test]
    fn charts_draw_the_range_and_ring_disturbed_points() {
        let quiet = point(500.0, 1000.0, &[1000.0, 1100.0, 1200.0], vec![]);
        let (t, _) = charts(std::slice::from_ref(&quiet), "futex");
        let measured = t
            .series
            .iter()
            .find(|s| s.name.starts_with("measured, notify"))
            .unwrap();
        assert_eq!(
            measured.error_bars,
            [ErrorBar {
                x: 0.5,
                lo: 1.0,
                hi: 1.2
            }]
        );
        assert!(
            t.series.iter().all(|s| s.style != Style::Ring),
            "nothing to ring"
        );
        let bad = point(1000.0, 1000.0, &[4000.0], vec![slow()]);
        let (t, e) = charts(&[quiet, bad], "futex");
        for c in [t, e] {
            let ring = c.series.iter().find(|s| s.style == Style::Ring).unwrap();
            assert_eq!(
                ring.points.len(),
                2,
                "notify and poll of the disturbed point"
            );
            assert!(ring.points.iter().all(|p| p.0 == 1.0));
        }
        // The page section lists it.
        let page = section(
            &[point(1000.0, 1000.0, &[4000.0], vec![slow()])],
            &crate::disturbance::tests::profile(),
            "futex",
            "kicklab validate",
        )
        .unwrap();
        assert!(
            page.html.contains("1 of 1 points still disturbed"),
            "{}",
            page.html
        );
        assert!(
            page.html.contains(
                "<li>W_P 1us: disturbed in 1 of 1 repetitions, after 0 extra tries: polling took 2us/message"
            ),
            "{}",
            page.html
        );
        assert!(page.html.contains("<td class=flag>yes</td>"));
    }
}

#[cfg(test)]
mod operating_point_tests {
    use super::*;
    use crate::disturbance::tests::run;

    #[test]
    fn the_operating_point_is_who_slept_in_most_repetitions() {
        // messages: 1000 in `run`; a side that slept 100 times slept.
        let rep = |sleeps: [u64; 2]| Rep {
            notify: run(1000.0, [1000.0, 1000.0], sleeps),
            poll: run(1000.0, [1000.0, 1000.0], [0, 0]),
            warnings: vec![],
        };
        let (p, c) = (rep([100, 0]), rep([0, 100]));
        assert_eq!(majority_sleeper(&[p.clone(), c.clone(), p.clone()]), "P");
        assert_eq!(majority_sleeper(&[c.clone(), c, p]), "C");
        assert_eq!(majority_sleeper(&[]), "none");
    }
}
