//! Running a validation: its inputs checked before anything runs, the
//! repetitions of a point (disturbed ones run again), and the sweep. What
//! does not live here: judging (`judge`), rendering (`render`).

use kicklab_model::{fmt_ns, predict, Params, Party, WaitMode};
use kicklab_sim::{simulate, SimConfig, Start, Vary};
use kicklab_testbed::{PairResult, Profile};

use crate::disturbance::{check_profile, check_run, distinct, Warning};
use crate::real::RunSpec;
use crate::{Input, LabError, Progress};

use super::types::*;

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
                 the costs, and `{}` varies any parameter in the model and simulator",
                vary.param.name(),
                kicklab_model::CommandLine::new("sweep").switch(kicklab_model::Flag::Vary, true)
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
