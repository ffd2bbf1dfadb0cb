//! The pair run for real, checked and set against the model: the wait
//! strategy a [`WaitMode`] names on the ring, one checked run, and the
//! calibration profile a run is predicted with.

use std::time::Duration;

use kicklab_model::{predict, Params, Prediction, WaitMode};
use kicklab_testbed::{
    calibrate_backend, run_pair, Backend, Calibration, PairConfig, PairResult, Profile,
};

use crate::{Input, LabError, Progress};

/// The ring's wait strategy for the simulator's words.
pub fn strategy(mode: WaitMode) -> kicklab_ring::WaitStrategy {
    match mode {
        WaitMode::Notify => kicklab_ring::WaitStrategy::Block,
        WaitMode::Poll => kicklab_ring::WaitStrategy::Poll,
        WaitMode::Spin { budget_ns } => kicklab_ring::WaitStrategy::SpinThenBlock(
            Duration::from_secs_f64(budget_ns.clamp(0.0, kicklab_model::MAX_DURATION_NS) / 1e9),
        ),
    }
}

/// What one real run asks for.
#[derive(Debug, Clone, Copy)]
pub struct RunSpec {
    /// The pair (its N and S are what the machine has; only L, k and W
    /// are used).
    pub params: Params,
    /// Where it runs.
    pub backend: Backend,
    /// How both parties wait.
    pub mode: WaitMode,
    /// Messages measured (after a warm-up of a tenth as many).
    pub messages: u64,
    /// Seed of random W_P / W_C.
    pub seed: u64,
    /// Send combining: messages per publish.
    pub batch: u32,
}

impl RunSpec {
    /// One message per publish.
    pub fn new(
        params: Params,
        backend: Backend,
        mode: WaitMode,
        messages: u64,
        seed: u64,
    ) -> RunSpec {
        RunSpec {
            params,
            backend,
            mode,
            messages,
            seed,
            batch: 1,
        }
    }
}

/// Checks a run's inputs before anything runs, the backend's limits
/// included (a kvm guest's ring length, say).
///
/// # Errors
///
/// The first bad input.
pub fn check(spec: &RunSpec) -> Result<(), LabError> {
    if spec.messages == 0 {
        return Err(LabError::input(Input::Messages, "need at least 1 message"));
    }
    if spec.batch == 0 {
        return Err(LabError::input(
            Input::Batch,
            "at least 1 message per publish",
        ));
    }
    spec.backend.check_pair(&config(spec))?;
    Ok(())
}

/// The testbed's configuration of a run.
fn config(spec: &RunSpec) -> PairConfig {
    PairConfig {
        params: spec.params,
        strategy_p: strategy(spec.mode),
        strategy_c: strategy(spec.mode),
        backend: spec.backend,
        messages: spec.messages,
        warmup: spec.messages / 10,
        seed: spec.seed,
        timeout: kicklab_testbed::stall_limit(&spec.params),
        batch: spec.batch,
    }
}

/// Runs the pair once and checks every message arrived once, in order.
///
/// # Errors
///
/// Bad inputs ([`check`]), a failed run, or a failed message check.
#[allow(clippy::cast_precision_loss)]
pub fn run(spec: &RunSpec) -> Result<PairResult, LabError> {
    check(spec)?;
    let r = run_pair(&config(spec))?;
    if r.lost != 0 || r.duplicated_or_reordered != 0 {
        return Err(LabError::MessageCheck {
            lost: r.lost,
            bad: r.duplicated_or_reordered,
        });
    }
    Ok(r)
}

/// The model's prediction for a real run: the pair with the profile's N
/// and S (their means). `None` for a strategy with no closed form.
///
/// # Errors
///
/// Invalid parameters.
pub fn predicted(
    params: &Params,
    profile: &Profile,
    mode: WaitMode,
) -> Result<Option<Prediction>, LabError> {
    let mut p = *params;
    profile.apply(&mut p, false);
    match predict(&p, mode) {
        Ok(x) => Ok(Some(x)),
        Err(kicklab_model::ModelError::NoClosedForm) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// `given` if it calibrates `backend`, else (none given) a quick
/// calibration of `backend` now. Negative start-ups (the woken party ran
/// before the notifier's call returned) are reported through `progress`.
///
/// # Errors
///
/// A profile of another backend or direction, or a failed calibration.
pub fn profile_for(
    backend: Backend,
    given: Option<Profile>,
    progress: &dyn Progress,
) -> Result<Profile, LabError> {
    let direction = match backend {
        Backend::Kvm(o) => Some(o.direction),
        Backend::Threads(_) => None,
    };
    let p = if let Some(p) = given {
        if p.backend != backend.name() || p.direction != direction {
            let d = |d: Option<kicklab_testbed::kvm::Direction>| {
                d.map(|d| format!(" (direction {})", d.name()))
                    .unwrap_or_default()
            };
            return Err(LabError::input(
                Input::Profile,
                format!(
                    "it calibrates {}{}, not {}{}",
                    p.backend,
                    d(p.direction),
                    backend.name(),
                    d(direction)
                ),
            ));
        }
        p
    } else {
        progress.note(&format!(
            "no profile given: calibrating {} quickly (kicklab calibrate --backend {} --save FILE for a better one) ...",
            backend.name(),
            backend.name()
        ));
        calibrate_backend(
            backend,
            &Calibration::new(200, Duration::from_micros(50), 2),
        )?
    };
    for s in p.negative_starts() {
        progress.note(&format!(
            "warning: calibrated {s} is negative (the woken party ran before the notifier's call returned); \
             the model and simulator take it as 0 (docs/kvm.md)"
        ));
    }
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategies_map_one_to_one() {
        assert_eq!(
            strategy(WaitMode::Notify),
            kicklab_ring::WaitStrategy::Block
        );
        assert_eq!(strategy(WaitMode::Poll), kicklab_ring::WaitStrategy::Poll);
        assert_eq!(
            strategy(WaitMode::Spin { budget_ns: 5000.0 }),
            kicklab_ring::WaitStrategy::SpinThenBlock(Duration::from_micros(5))
        );
    }

    #[test]
    fn bad_inputs_are_refused_before_running() {
        let be = Backend::Threads(kicklab_ring::NotifierKind::Futex);
        let mut spec = RunSpec::new(Params::default(), be, WaitMode::Poll, 0, 1);
        assert!(matches!(
            run(&spec),
            Err(LabError::Input {
                input: Input::Messages,
                ..
            })
        ));
        spec.messages = 10;
        spec.batch = 0;
        assert!(matches!(
            run(&spec),
            Err(LabError::Input {
                input: Input::Batch,
                ..
            })
        ));
    }

    #[test]
    fn a_profile_of_another_backend_is_refused() {
        let futex = Backend::Threads(kicklab_ring::NotifierKind::Futex);
        let pipe = Backend::Threads(kicklab_ring::NotifierKind::Pipe);
        let p = kicklab_testbed::calibrate(
            kicklab_ring::NotifierKind::Pipe,
            20,
            Duration::from_micros(10),
            1,
        )
        .unwrap();
        assert!(profile_for(pipe, Some(p.clone()), &crate::Silent).is_ok());
        let e = profile_for(futex, Some(p), &crate::Silent).unwrap_err();
        assert!(
            matches!(
                e,
                LabError::Input {
                    input: Input::Profile,
                    ..
                }
            ),
            "{e}"
        );
    }
}
