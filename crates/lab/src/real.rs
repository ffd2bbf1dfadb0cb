//! The pair run for real, checked and set against the model: one checked
//! run of any strategies (every [`WaitMode`] runs on the real backends:
//! `notify`, `poll` and `spin:<B>` by the ring's fixed strategies, the
//! others by `kicklab_model::Controller` step by step; a kvm guest side
//! by the fixed ones itself and the others through its VMM, all but
//! `coalesce`), the calibration profile a run is predicted
//! with, and the prediction: the closed form where there is one, else the
//! simulator ([`simulated`]).

use std::time::Duration;

use kicklab_model::{predict, Cost, Params, Party, Prediction, Rates, WaitMode};
use kicklab_sim::{simulate, SimConfig};
use kicklab_testbed::{
    calibrate_backend, Backend, Calibration, PairConfig, PairResult, Profile, Record,
};

use crate::{Input, LabError, Progress};

/// The ring's fixed wait strategy for `notify`, `poll` and `spin:<B>`;
/// `None` for the strategies a controller runs step by step (which the
/// real backends run too, see [`run`]).
pub fn strategy(mode: WaitMode) -> Option<kicklab_ring::WaitStrategy> {
    kicklab_testbed::basic_strategy(mode)
}

/// What one real run asks for.
#[derive(Debug, Clone, Copy)]
pub struct RunSpec {
    /// The pair. L, k and W run it; N, V and S are what the machine has,
    /// and only `adaptive` reads their means, as estimates (put a
    /// calibration's in: `Profile::apply_costs`).
    pub params: Params,
    /// Where it runs.
    pub backend: Backend,
    /// How P waits (and, for `coalesce`, kicks).
    pub mode_p: WaitMode,
    /// How C waits (and kicks).
    pub mode_c: WaitMode,
    /// The latency bound of an `adaptive` without its own [ns]; `None`:
    /// 100 us.
    pub latency_bound_ns: Option<f64>,
    /// Measure each message's latency (threads backends).
    pub latency: bool,
    /// Messages measured (after a warm-up of a tenth as many).
    pub messages: u64,
    /// Seed of random W_P / W_C.
    pub seed: u64,
    /// Send combining: messages per publish.
    pub batch: u32,
    /// Send combining: when a partial batch goes out as well.
    pub flush: kicklab_testbed::Flush,
    /// Kicks and sleeps to record per party for a picture of the run
    /// ([`run_recorded`]); 0 records none.
    pub record: usize,
}

impl RunSpec {
    /// Both parties waiting by `mode`, one message per publish, latency
    /// not measured.
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
            mode_p: mode,
            mode_c: mode,
            latency_bound_ns: None,
            latency: false,
            messages,
            seed,
            batch: 1,
            flush: kicklab_testbed::Flush::Full,
            record: 0,
        }
    }

    /// Its send combining, as the simulator takes it.
    pub fn combine(&self) -> kicklab_sim::Combine {
        kicklab_sim::Combine {
            batch: self.batch,
            flush: self.flush,
        }
    }

    /// P's and C's modes with the run's latency bound in `adaptive`.
    pub fn modes(&self) -> [WaitMode; 2] {
        [self.mode_p, self.mode_c].map(|m| m.with_latency(self.latency_bound_ns))
    }
}

/// What a run's `strategy` field says: `--strategy` as given where it
/// applies to a party; where `--strategy-p` and `--strategy-c` both replace
/// it, the one they share (as given for P; the two are compared as run,
/// with the run's latency bound `latency_ns` in `adaptive`), or `None`
/// where they differ (the parties' own fields, `strategy_p` and
/// `strategy_c`, say what each ran).
pub fn strategy_both_ran(
    both: WaitMode,
    p: Option<WaitMode>,
    c: Option<WaitMode>,
    latency_ns: Option<f64>,
) -> Option<WaitMode> {
    match (p, c) {
        (Some(p), Some(c)) => {
            (p.with_latency(latency_ns) == c.with_latency(latency_ns)).then_some(p)
        }
        _ => Some(both),
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
    if let Some(l) = spec.latency_bound_ns {
        if !(l.is_finite() && l > 0.0 && l <= kicklab_model::MAX_DURATION_NS) {
            return Err(LabError::input(
                Input::Latency,
                "the bound must be a duration above 0 and at most 1h",
            ));
        }
    }
    // Refused rather than left to run for days: the slower party's work
    // alone over every message, warm-up included, is a lower bound.
    let c = config(spec);
    #[allow(clippy::cast_precision_loss)]
    let at_least =
        (c.messages + c.warmup) as f64 * spec.params.w_p.mean_ns().max(spec.params.w_c.mean_ns());
    if at_least > MAX_RUN_NS {
        return Err(LabError::input(
            Input::Messages,
            format!(
                "{} messages (and {} of warm-up) at the slower party's {} a message take at least {}; \
                 a real run takes at most {}: fewer messages or less work",
                c.messages,
                c.warmup,
                kicklab_model::fmt_ns(spec.params.w_p.mean_ns().max(spec.params.w_c.mean_ns())),
                kicklab_model::fmt_ns(at_least),
                kicklab_model::fmt_ns(MAX_RUN_NS)
            ),
        ));
    }
    // The testbed checks the strategies (ranges, what a guest side runs).
    spec.backend.check_pair(&c)?;
    Ok(())
}

/// The longest real run [ns] (its work alone): an hour.
pub const MAX_RUN_NS: f64 = 3.6e12;

/// The testbed's configuration of a run.
fn config(spec: &RunSpec) -> PairConfig {
    let [mode_p, mode_c] = spec.modes();
    PairConfig {
        params: spec.params,
        mode_p,
        mode_c,
        backend: spec.backend,
        messages: spec.messages,
        warmup: spec.messages / 10,
        seed: spec.seed,
        timeout: kicklab_testbed::stall_limit(&spec.params),
        batch: spec.batch,
        flush: spec.flush,
        latency: spec.latency,
        record: spec.record,
    }
}

/// Runs the pair once and checks every message arrived once, in order.
///
/// # Errors
///
/// Bad inputs ([`check`]), a failed run, or a failed message check.
#[allow(clippy::cast_precision_loss)]
pub fn run(spec: &RunSpec) -> Result<PairResult, LabError> {
    run_recorded(spec).map(|(r, _)| r)
}

/// [`run`], with the record of the parties' first kicks and sleeps that
/// `spec.record` asks for (a KVM guest's own kicks and halts where it runs
/// in user mode).
///
/// # Errors
///
/// As [`run`].
pub fn run_recorded(spec: &RunSpec) -> Result<(PairResult, Record), LabError> {
    check(spec)?;
    let (r, record) = spec.backend.run_pair_recorded(&config(spec))?;
    if r.lost != 0 || r.duplicated_or_reordered != 0 {
        return Err(LabError::MessageCheck {
            lost: r.lost,
            bad: r.duplicated_or_reordered,
        });
    }
    Ok((r, record))
}

/// The model's prediction for a real run: the pair with the profile's N,
/// V and S (their means) and the ring's cost per message added to W, the
/// sleepers' S looked up at how long they sleep ([`predicted_at_idle`]);
/// with notifications, E as the run's CPU clocks count it
/// ([`cpu_per_message`], as `validate` compares it). `None` for a
/// strategy with no closed form.
///
/// # Errors
///
/// Invalid parameters.
pub fn predicted(
    params: &Params,
    profile: &Profile,
    mode: WaitMode,
) -> Result<Option<Prediction>, LabError> {
    Ok(predicted_at_idle(params, profile, mode)?.map(|x| {
        let mut p = x.prediction;
        if mode == WaitMode::Notify {
            let [off_p, off_c] = busy_not_on_cpu(
                p.regime,
                p.round_messages.map(|n| n as f64),
                &x.params,
                profile,
            );
            p.rates.e_p_ns -= off_p;
            p.rates.e_c_ns -= off_c;
            p.rates.e_ns -= off_p + off_c;
            if let Some(o) = &mut p.other {
                o.e_ns = cpu_per_message(o.regime, o.round_messages, o.e_ns, &x.params, profile);
            }
        }
        p
    }))
}

/// The simulator's prediction for a real run of `spec`, for the strategies
/// with no closed form (or with P and C waiting differently, or send
/// combining): the pair
/// with the profile's N, V and S as distributions and the ring's cost per
/// message added to W ([`Profile::apply`]), start-ups scaled by the idle
/// curve, the same strategies (latency bound included), as many messages
/// as the run (at most a million), message latency recorded.
///
/// # Errors
///
/// Invalid parameters, or a failed simulation.
pub fn simulated(spec: &RunSpec, profile: &Profile) -> Result<Rates, LabError> {
    let mut p = spec.params;
    let [mode_p, mode_c] = spec.modes();
    if mode_p == WaitMode::Notify && mode_c == WaitMode::Notify {
        profile.apply_notify(&mut p, true);
    } else {
        profile.apply(&mut p, true);
    }
    let (idle_scale, nap) = profile.sim_costs();
    let s = simulate(&SimConfig {
        mode_p,
        mode_c,
        seed: spec.seed,
        idle_scale,
        nap,
        combine: spec.combine(),
        ..SimConfig::new(p, mode_p, spec.messages.min(1_000_000))
    })?;
    Ok(s.rates)
}

/// What a run is set against: the closed form where it covers the run
/// (both parties `notify` or both `poll`, no send combining), else the
/// simulator.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Expected {
    /// The model's prediction ([`predicted`]).
    Model(Prediction),
    /// The simulator's ([`simulated`]).
    Sim(Rates),
}

impl Expected {
    /// T, E and the counts.
    pub fn rates(&self) -> &Rates {
        match self {
            Expected::Model(p) => &p.rates,
            Expected::Sim(r) => r,
        }
    }
}

/// The prediction for a real run of `spec` with `profile`'s costs: the
/// model's where it has a closed form for the run's strategies (and no
/// send combining: its closed form covers the fast consumer only), else
/// the simulator's.
///
/// # Errors
///
/// Invalid parameters, or a failed simulation.
pub fn expected(spec: &RunSpec, profile: &Profile) -> Result<Expected, LabError> {
    let [mode_p, mode_c] = spec.modes();
    if mode_p == mode_c && !spec.combine().is_on() {
        if let Some(p) = predicted(&spec.params, profile, mode_p)? {
            return Ok(Expected::Model(p));
        }
    }
    simulated(spec, profile).map(Expected::Sim)
}

/// The most predictions [`predicted_at_idle`] makes.
pub const IDLE_ITERATIONS: u32 = 30;

/// A prediction whose start-ups are the idle curve's at the sleepers' idle
/// time ([`predicted_at_idle`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdlePrediction {
    /// The prediction.
    pub prediction: Prediction,
    /// The parameters it was made with.
    pub params: Params,
    /// How long P and C idle per sleep before the notification that wakes
    /// them starts [ns], in the last prediction; `None` for a party that
    /// does not sleep (or without an idle curve).
    pub idle_ns: [Option<f64>; 2],
    /// Predictions made.
    pub iterations: u32,
    /// Whether S settled (to 0.1% or 1 ns) within [`IDLE_ITERATIONS`].
    pub settled: bool,
}

/// The model's prediction for a real run with the start-ups of the
/// sleepers at their idle time: a fixed point over the sleep length.
/// Predict with the profile's costs ([`Profile::apply`]); take each
/// sleeper's idle time per sleep from the prediction's round
/// ([`Prediction::sleeper_idle`]); look its S up there ([`Profile::start_for_idle`]:
/// an S from the reference pairs' runs scaled along the idle curve from
/// the idle those pairs slept, else the curve's own);
/// predict again; until both S move by less than 0.1% (or 1 ns), at most
/// [`IDLE_ITERATIONS`] predictions, the second half of them damped (S
/// moves half-way to the looked-up value, so that a pair that flips
/// between two regimes settles between them). A party that does not sleep
/// keeps the profile's S; without an idle curve this is one prediction.
/// `None` for a strategy with no closed form.
///
/// # Errors
///
/// Invalid parameters.
pub fn predicted_at_idle(
    params: &Params,
    profile: &Profile,
    mode: WaitMode,
) -> Result<Option<IdlePrediction>, LabError> {
    let mut p = *params;
    if mode == WaitMode::Notify {
        profile.apply_notify(&mut p, false);
    } else {
        profile.apply(&mut p, false);
    }
    let one = |p: &Params| match predict(p, mode) {
        Ok(x) => Ok(Some(x)),
        Err(kicklab_model::ModelError::NoClosedForm) => Ok(None),
        Err(e) => Err(LabError::from(e)),
    };
    let Some(mut pred) = one(&p)? else {
        return Ok(None);
    };
    let mut out = IdlePrediction {
        prediction: pred,
        params: p,
        idle_ns: [None, None],
        iterations: 1,
        settled: true,
    };
    if profile.idle_curve.is_empty() {
        return Ok(Some(out));
    }
    out.settled = false;
    // Each party's S at an idle time, from the profile's own S.
    let starts = [(Party::P, p.s_p), (Party::C, p.s_c)]
        .map(|(party, s)| profile.start_for_idle(party, s.mean_ns()));
    loop {
        let idle = pred.sleeper_idle(&p);
        let now = [p.s_p.mean_ns(), p.s_c.mean_ns()];
        let target: [f64; 2] =
            std::array::from_fn(|i| idle[i].and_then(&starts[i]).map_or(now[i], |s| s.max(0.0)));
        out.idle_ns = idle;
        if (0..2).all(|i| (target[i] - now[i]).abs() <= (1e-3 * now[i]).max(1.0)) {
            out.settled = true;
            break;
        }
        if out.iterations >= IDLE_ITERATIONS {
            break;
        }
        let damped = out.iterations > IDLE_ITERATIONS / 2;
        let next: [f64; 2] = std::array::from_fn(|i| {
            if damped {
                0.5 * (now[i] + target[i])
            } else {
                target[i]
            }
        });
        (p.s_p, p.s_c) = (Cost::Const(next[0]), Cost::Const(next[1]));
        pred = one(&p)?.expect("the same mode predicted before");
        out.iterations += 1;
    }
    out.prediction = pred;
    out.params = p;
    Ok(Some(out))
}

/// E as a real run's CPU time would count it, for a model point: the
/// model counts every start-up S as busy, but on a real machine part of it
/// is the woken CPU coming out of idle (not the woken thread's CPU time),
/// and going to sleep costs CPU too. Where calibration's reference pairs
/// measured what a sleep costs the sleeper's CPU in a run
/// (`in_run.sleep_P_cpu`, `sleep_C_cpu`: going to sleep, the calls and the
/// wake-up), each sleep's S is replaced by that; else by the thread's own
/// CPU in an isolated wake-up (`S cpu`; never adding: S cpu above S is
/// taken as S). `regime` and `round_messages` say who sleeps how often
/// (one sleep per round for each sleeping side, in every cycle of the
/// model); `params` are the ones the point was predicted with.
pub fn cpu_per_message(
    regime: kicklab_model::Regime,
    round_messages: Option<u64>,
    e_ns: f64,
    params: &Params,
    profile: &Profile,
) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let [p, c] = busy_not_on_cpu(regime, round_messages.map(|n| n as f64), params, profile);
    e_ns - p - c
}

/// [`cpu_per_message`] for a round of `round_messages` messages on
/// average (the model with the batch race drawn,
/// [`kicklab_model::predict_with_start_spread`]).
pub fn cpu_per_message_over(
    regime: kicklab_model::Regime,
    round_messages: f64,
    e_ns: f64,
    params: &Params,
    profile: &Profile,
) -> f64 {
    let [p, c] = busy_not_on_cpu(regime, Some(round_messages), params, profile);
    e_ns - p - c
}

/// What [`cpu_per_message`] takes off P's and C's busy time per message
/// [ns]: for each party that sleeps, its S less what a sleep costs its CPU,
/// over the messages of a round.
fn busy_not_on_cpu(
    regime: kicklab_model::Regime,
    round_messages: Option<f64>,
    params: &Params,
    profile: &Profile,
) -> [f64; 2] {
    let Some(n) = round_messages.filter(|&n| n > 0.0) else {
        return [0.0; 2];
    };
    let sleeper = regime.sleeper();
    let in_run = profile.in_run.unwrap_or_default();
    #[allow(clippy::cast_precision_loss)]
    let per_message = |s: f64, in_run: Option<kicklab_model::Stat>, cpu: f64| {
        let idle = match in_run {
            Some(sleep) => s - sleep.mean_ns.max(0.0),
            None => (s - cpu.clamp(0.0, s.max(0.0))).max(0.0),
        };
        idle / n
    };
    let mut out = [0.0; 2];
    if matches!(sleeper, "P" | "both") {
        out[0] = per_message(
            params.s_p.mean_ns(),
            in_run.sleep_p_cpu,
            profile.sp_cpu.mean_ns,
        );
    }
    if matches!(sleeper, "C" | "both") {
        out[1] = per_message(
            params.s_c.mean_ns(),
            in_run.sleep_c_cpu,
            profile.sc_cpu.mean_ns,
        );
    }
    out
}

/// `given` if it calibrates `backend`, else (none given) a quick
/// calibration of `backend` now. What is doubtful in it (negative
/// start-ups, no stable medians) is `disturbance::check_profile`'s
/// to say.
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
            "no profile given: calibrating {} quickly ({} for a better one) ...",
            backend.name(),
            kicklab_model::CommandLine::new("calibrate")
                .arg(kicklab_model::Flag::Backend, backend.name())
                .arg(kicklab_model::Flag::Save, "FILE")
        ));
        crate::progress::with_heartbeat(
            progress,
            &format!("calibrating {}", backend.name()),
            Duration::from_secs(5),
            || {
                calibrate_backend(
                    backend,
                    &Calibration::new(200, Duration::from_micros(50), 2),
                )
            },
        )?
    };
    Ok(p)
}

/// The profile as `kicklab calibrate --json` prints it: the contract's
/// fields, then the full profile.
pub fn profile_json(p: &Profile) -> serde_json::Value {
    let mean = |s: Option<&kicklab_model::Stat>| s.map(|s| s.mean_ns);
    let median = |s: Option<&kicklab_model::Stat>| s.map(|s| s.median_ns);
    serde_json::json!({
        "backend": p.backend,
        "NP_ns": p.np.mean_ns,
        "NC_ns": p.nc.mean_ns,
        "SP_ns": p.sp.mean_ns,
        "SC_ns": p.sc.mean_ns,
        "VP_ns": mean(p.visibility(Party::P)),
        "VC_ns": mean(p.visibility(Party::C)),
        "SP_V_ns": p.start(Party::P).mean_ns,
        "SC_V_ns": p.start(Party::C).mean_ns,
        // The ring's costs as the model adds them: the runs' medians
        // (`Profile::overheads`).
        "overhead_ns": median(p.overhead.as_ref()),
        "overhead_p_ns": median(p.overhead_p.as_ref()),
        "overhead_c_ns": median(p.overhead_c.as_ref()),
        "nap_p_ns": p.nap_ns(Party::P),
        "nap_c_ns": p.nap_ns(Party::C),
        "in_run": p.in_run.map(|r| serde_json::json!({
            "NP_ns": mean(r.np.as_ref()),
            "NC_ns": mean(r.nc.as_ref()),
            "RP_ns": mean(r.rp.as_ref()),
            "RC_ns": mean(r.rc.as_ref()),
            "sleep_P_cpu_ns": mean(r.sleep_p_cpu.as_ref()),
            "sleep_C_cpu_ns": mean(r.sleep_c_cpu.as_ref()),
            "start_P_ns": median(r.start_p.as_ref()),
            "start_C_ns": median(r.start_c.as_ref()),
            "start_P_p10_p90_ns": r.start_p.map(|s| [s.p10_ns, s.p90_ns]),
            "start_C_p10_p90_ns": r.start_c.map(|s| [s.p10_ns, s.p90_ns]),
        })),
        "idle_curve": p.idle_curve.iter().map(|q| serde_json::json!({
            "gap_ns": q.gap_ns,
            "NP_ns": q.np.mean_ns,
            "NC_ns": q.nc.mean_ns,
            "SP_ns": q.sp.mean_ns,
            "SC_ns": q.sc.mean_ns,
            "SP_median_ns": q.sp.median_ns,
            "SC_median_ns": q.sc.median_ns,
        })).collect::<Vec<_>>(),
        "direction": p.direction.map(kicklab_model::Direction::name),
        "SP_cpu_ns": p.sp_cpu.mean_ns,
        "SC_cpu_ns": p.sc_cpu.mean_ns,
        "gap_ns": p.gap_ns,
        "rounds": p.rounds,
        "stable": p.stable,
        "profile": p,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// In-run costs with only what a sleep cost P's and C's CPU.
    fn sleeping(p: Option<f64>, c: Option<f64>) -> Option<kicklab_model::InRunCosts> {
        Some(kicklab_model::InRunCosts {
            sleep_p_cpu: p.map(kicklab_model::Stat::constant),
            sleep_c_cpu: c.map(kicklab_model::Stat::constant),
            ..kicklab_model::InRunCosts::default()
        })
    }

    #[test]
    fn the_strategy_field_names_what_both_parties_ran_or_nothing() {
        let [notify, poll, spin] = [
            WaitMode::Notify,
            WaitMode::Poll,
            WaitMode::Spin { budget_ns: 2000.0 },
        ];
        let ran = |both, p, c| strategy_both_ran(both, p, c, Some(100_000.0));
        assert_eq!(ran(notify, None, None), Some(notify));
        assert_eq!(ran(spin, Some(poll), None), Some(spin));
        assert_eq!(ran(spin, None, Some(poll)), Some(spin));
        assert_eq!(ran(notify, Some(poll), Some(poll)), Some(poll));
        assert_eq!(ran(notify, Some(poll), Some(spin)), None);
        // `adaptive` and `adaptive:latency=100us` run alike under a bound
        // of 100 us, not under another.
        let adaptive: WaitMode = "adaptive".parse().unwrap();
        let bounded: WaitMode = "adaptive:latency=100us".parse().unwrap();
        assert_eq!(ran(notify, Some(adaptive), Some(bounded)), Some(adaptive));
        assert_eq!(
            strategy_both_ran(notify, Some(adaptive), Some(bounded), Some(50_000.0)),
            None
        );
    }

    #[test]
    fn e_counts_a_sleep_at_what_it_cost_the_sleepers_cpu_in_runs_where_measured() {
        let mut profile = Profile::of_means("futex", [2000.0, 2000.0, 10_000.0, 10_000.0]);
        profile.sc_cpu = kicklab_model::Stat::constant(4000.0);
        let params = Params {
            s_c: Cost::Const(10_000.0),
            ..Params::default()
        };
        // C sleeps once per 5 messages; the model's E counts S_C = 10 us
        // busy per sleep: 2 us a message.
        let e =
            |p: &Profile| cpu_per_message(kicklab_model::Regime::FC, Some(5), 5000.0, &params, p);
        // The isolated wake-up's CPU part (4 us) in its place.
        assert!((e(&profile) - (5000.0 - 6000.0 / 5.0)).abs() < 1e-9);
        // What a sleep cost C's CPU in the reference pairs (2.5 us), going
        // to sleep included, takes its place where calibration has it.
        profile.in_run = sleeping(None, Some(2500.0));
        assert!((e(&profile) - (5000.0 - 7500.0 / 5.0)).abs() < 1e-9);
        // It may exceed the model's S (a sleep's CPU beyond its wake-up).
        profile.in_run = sleeping(None, Some(12_000.0));
        assert!((e(&profile) - (5000.0 + 2000.0 / 5.0)).abs() < 1e-9);
        // P's figure says nothing about C's sleeps.
        profile.in_run = sleeping(Some(1.0), None);
        assert!((e(&profile) - (5000.0 - 6000.0 / 5.0)).abs() < 1e-9);
        // `run`'s prediction counts E the same way with notifications, and
        // leaves polling's alone.
        profile.in_run = sleeping(None, Some(2500.0));
        let fc = Params {
            w_p: Cost::Const(2000.0),
            w_c: Cost::Const(1000.0),
            ..Params::default()
        };
        let ours = predicted(&fc, &profile, WaitMode::Notify).unwrap().unwrap();
        let raw = predicted_at_idle(&fc, &profile, WaitMode::Notify)
            .unwrap()
            .unwrap();
        let want = cpu_per_message(
            raw.prediction.regime,
            raw.prediction.round_messages,
            raw.prediction.rates.e_ns,
            &raw.params,
            &profile,
        );
        assert_eq!(ours.regime, kicklab_model::Regime::FC);
        assert!((ours.rates.e_ns - want).abs() < 1e-9);
        // C sleeps, so C's share moves and P's does not; the parts still
        // add up to E.
        assert_eq!(ours.rates.e_p_ns, raw.prediction.rates.e_p_ns);
        assert!((ours.rates.e_p_ns + ours.rates.e_c_ns - ours.rates.e_ns).abs() < 1e-6);
        assert!((ours.rates.e_ns - raw.prediction.rates.e_ns).abs() > 100.0);
        let poll = predicted(&fc, &profile, WaitMode::Poll).unwrap().unwrap();
        let raw = predicted_at_idle(&fc, &profile, WaitMode::Poll)
            .unwrap()
            .unwrap();
        assert_eq!(poll.rates.e_ns, raw.prediction.rates.e_ns);
    }

    #[test]
    fn every_strategy_runs_for_real_and_the_guest_side_is_refused_by_name() {
        let be = Backend::Threads(kicklab_ring::NotifierKind::Futex);
        for s in [
            "notify",
            "sleep:20us",
            "halt-poll",
            "haltpoll",
            "hybrid",
            "defer",
            "coalesce:8,20us",
            "adaptive",
        ] {
            let m = WaitMode::parse(s).unwrap();
            check(&RunSpec::new(Params::default(), be, m, 10, 1)).unwrap();
        }
        let kvm = Backend::Kvm(kicklab_testbed::kvm::KvmOptions::default());
        let mut spec = RunSpec::new(
            Params::default(),
            kvm,
            WaitMode::parse("coalesce:8,20us").unwrap(),
            10,
            1,
        );
        let e = check(&spec).unwrap_err().to_string();
        assert!(e.contains("guest side (P, direction tx)"), "{e}");
        // The host side (C in tx) takes any strategy.
        spec.mode_p = WaitMode::Notify;
        check(&spec).unwrap();
        spec.latency_bound_ns = Some(0.0);
        assert!(matches!(
            check(&spec),
            Err(LabError::Input {
                input: Input::Latency,
                ..
            })
        ));
    }

    #[test]
    fn the_expectation_is_the_model_where_it_can_else_the_simulator() {
        let profile = Profile::of_means("futex", [2000.0, 2000.0, 3000.0, 3000.0]);
        let be = Backend::Threads(kicklab_ring::NotifierKind::Futex);
        let spec = |m: &str| {
            RunSpec::new(
                Params::default(),
                be,
                WaitMode::parse(m).unwrap(),
                20_000,
                1,
            )
        };
        assert!(matches!(
            expected(&spec("notify"), &profile).unwrap(),
            Expected::Model(_)
        ));
        let a = expected(&spec("adaptive"), &profile).unwrap();
        let Expected::Sim(r) = a else { panic!("{a:?}") };
        assert!(r.t_ns >= 1000.0 && r.latency_ns.is_some(), "{r:?}");
        let mut mixed = spec("notify");
        mixed.mode_c = WaitMode::Poll;
        assert!(matches!(
            expected(&mixed, &profile).unwrap(),
            Expected::Sim(_)
        ));
    }

    #[test]
    fn strategies_map_one_to_one() {
        assert_eq!(
            strategy(WaitMode::Notify).unwrap(),
            kicklab_ring::WaitStrategy::Block
        );
        assert_eq!(
            strategy(WaitMode::Poll),
            Some(kicklab_ring::WaitStrategy::Poll)
        );
        assert_eq!(
            strategy(WaitMode::Spin { budget_ns: 5000.0 }).unwrap(),
            kicklab_ring::WaitStrategy::SpinThenBlock(Duration::from_micros(5))
        );
        assert_eq!(strategy(WaitMode::parse("adaptive").unwrap()), None);
    }

    /// A futex-like profile whose start-ups grow with the idle gap.
    fn curved(s_of_gap: impl Fn(f64) -> f64) -> Profile {
        let mut p = Profile::of_means("futex", [2000.0, 2000.0, 3000.0, 3000.0]);
        let base = kicklab_model::IdlePoint::of(&p);
        p.idle_curve = [1e3, 3e3, 10e3, 30e3, 100e3]
            .into_iter()
            .map(|g| kicklab_model::IdlePoint {
                gap_ns: g,
                sp: kicklab_model::Stat::constant(s_of_gap(g)),
                sc: kicklab_model::Stat::constant(s_of_gap(g)),
                ..base
            })
            .collect();
        p
    }

    #[test]
    fn without_a_curve_the_prediction_is_the_plain_model() {
        let p = Profile::of_means("futex", [2000.0, 2000.0, 3000.0, 3000.0]);
        let params = Params {
            w_p: Cost::Const(2000.0),
            ..Params::default()
        };
        let x = predicted_at_idle(&params, &p, WaitMode::Notify)
            .unwrap()
            .unwrap();
        let mut q = params;
        p.apply(&mut q, false);
        assert_eq!(x.prediction, predict(&q, WaitMode::Notify).unwrap());
        assert_eq!((x.iterations, x.settled), (1, true));
        // A flat curve at the profile's S changes nothing either.
        let flat = curved(|_| 3000.0);
        let y = predicted_at_idle(&params, &flat, WaitMode::Notify)
            .unwrap()
            .unwrap();
        assert_eq!(y.prediction, x.prediction);
        assert!(y.settled);
        assert!(
            y.idle_ns[1].is_some() && y.idle_ns[0].is_none(),
            "C sleeps in FC"
        );
        // No closed form, no prediction.
        assert!(predicted(&params, &flat, WaitMode::Spin { budget_ns: 1e3 })
            .unwrap()
            .is_none());
    }

    #[test]
    fn the_fixed_point_uses_s_at_the_predicted_idle_time() {
        // S grows with the gap: 1 us after 1 us of idling, 21 us after 100.
        let p = curved(|g| 1000.0 + 20e3 * (g.ln() - 1e3f64.ln()) / (100f64).ln());
        for (wp, wc, sleeper) in [(2000.0, 1100.0, 1), (600.0, 1100.0, 0), (3000.0, 1000.0, 1)] {
            let params = Params {
                w_p: Cost::Const(wp),
                w_c: Cost::Const(wc),
                ..Params::default()
            };
            let x = predicted_at_idle(&params, &p, WaitMode::Notify)
                .unwrap()
                .unwrap();
            assert!(x.settled, "W_P {wp}: {x:?}");
            assert!(x.iterations > 1 && x.iterations <= IDLE_ITERATIONS);
            // Fixed point: the S used is the curve's at the idle time the
            // prediction made with it says.
            let idle = x.prediction.sleeper_idle(&x.params)[sleeper].expect("sleeps");
            assert_eq!(x.idle_ns[sleeper], Some(idle));
            let party = [Party::P, Party::C][sleeper];
            let want = p.start_at_idle(party, idle).unwrap();
            let used = [x.params.s_p, x.params.s_c][sleeper].mean_ns();
            assert!(
                (used - want).abs() <= (1e-3 * want).max(1.0),
                "W_P {wp}: S {used} at idle {idle}, the curve says {want}"
            );
            // The prediction is the model's with those parameters.
            assert_eq!(x.prediction, predict(&x.params, WaitMode::Notify).unwrap());
            // The other party keeps the profile's S.
            assert_eq!(
                [x.params.s_p, x.params.s_c][1 - sleeper],
                Cost::Const(3000.0)
            );
        }
        // Polling: nobody sleeps, nothing to look up.
        let params = Params::default();
        let x = predicted_at_idle(&params, &p, WaitMode::Poll)
            .unwrap()
            .unwrap();
        assert_eq!(
            (x.iterations, x.settled, x.idle_ns),
            (1, true, [None, None])
        );
    }

    /// With an S from the reference pairs' runs, the fixed point scales
    /// that S along the curve from the idle those pairs slept, not the
    /// curve's own S (an isolated wake-up's, two to four times the in-run
    /// one on this machine's threads).
    #[test]
    fn the_fixed_point_scales_an_in_run_s_from_the_reference_pairs_idle() {
        // S from 1 us after 1 us of idling to 3 us after 100 us.
        let mut p = curved(|g| 1000.0 + 2e3 * (g.ln() - 1e3f64.ln()) / (100f64).ln());
        p.in_run = Some(kicklab_model::InRunCosts {
            np: Some(kicklab_model::Stat::constant(1500.0)),
            rc: Some(kicklab_model::Stat::constant(6000.0)),
            ..kicklab_model::InRunCosts::default()
        });
        let params = Params {
            w_p: Cost::Const(2500.0),
            w_c: Cost::Const(1000.0),
            ..Params::default()
        };
        let mut base = params;
        p.apply_notify(&mut base, false);
        let in_run_s = base.s_c.mean_ns();
        let x = predicted_at_idle(&params, &p, WaitMode::Notify)
            .unwrap()
            .unwrap();
        assert!(x.settled, "{x:?}");
        let idle = x.idle_ns[1].expect("C sleeps");
        let used = x.params.s_c.mean_ns();
        let want = p.start_for_idle(Party::C, in_run_s)(idle).unwrap();
        assert!(
            (used - want).abs() <= (1e-3 * want).max(1.0),
            "S {used}, want {want}"
        );
        // Not the curve's own S there.
        let curve = p.start_at_idle(Party::C, idle).unwrap();
        assert!(
            (used - curve).abs() > 0.1 * curve,
            "S {used}, the curve's {curve}"
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
