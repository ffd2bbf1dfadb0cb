//! A real pair read from a kernel trace ([`analyze`]): the estimates of
//! `kicklab-trace` turned into the model's parameters, a profile in the
//! format `calibrate --save` writes, the regime the trace shows beside the
//! model's, and the advice for it. Reading the trace is `kicklab-trace`'s
//! work; the lines `kicklab trace` prints are in the trace_text module.

use std::path::PathBuf;

use kicklab_model::{predict, Cost, Direction, Params, Party, Profile, Rates, Stat, WaitMode};
use kicklab_trace::{Gap, Naming, Side, Thread, Trace};
use serde::Serialize;

use crate::advise::{advise, Advice, AdviseSpec};
use crate::knobs::Mechanism;
use crate::{Input, LabError, Progress};

/// What to read and how to count it.
#[derive(Debug, Clone)]
pub struct TraceSpec {
    /// The trace (`perf script` or `trace-cmd report` text, or gzip of it).
    pub path: PathBuf,
    /// The pair, as the user named it.
    pub naming: Naming,
    /// Messages in the traced window (`--messages`), or
    pub messages: Option<u64>,
    /// the pair's rate [messages/s] (`--rate`).
    pub rate_per_s: Option<f64>,
    /// L, k_P, k_C and the costs the trace does not give (from a profile
    /// or the defaults).
    pub params: Params,
    /// Whether `params`' costs came from a profile (`--profile`).
    pub from_profile: bool,
    /// A profile to start from (`--profile`).
    pub base: Option<Profile>,
    /// The bound on p99 latency advice keeps [ns]; `None`: no advice
    /// (`--for none`).
    pub latency_ns: Option<f64>,
    /// The mechanisms advice gives settings for.
    pub mechanisms: Vec<Mechanism>,
}

/// Where each cost the model was given came from.
#[derive(Debug, Clone, Serialize)]
pub struct Sources {
    /// N_P.
    #[serde(rename = "NP")]
    pub np: &'static str,
    /// N_C.
    #[serde(rename = "NC")]
    pub nc: &'static str,
    /// S_P (from P's wake-up less V_C).
    #[serde(rename = "SP")]
    pub sp: &'static str,
    /// S_C.
    #[serde(rename = "SC")]
    pub sc: &'static str,
    /// W_P and W_C: always the trace's (busy time per message less the
    /// party's notifications).
    #[serde(rename = "W")]
    pub w: &'static str,
}

/// The pair as a trace shows it, and what the model and advice make of it.
#[derive(Debug, Clone, Serialize)]
pub struct TraceReport {
    /// P.
    pub producer: Thread,
    /// C.
    pub consumer: Thread,
    /// Which of them runs a guest: `P`, `C` or null.
    pub guest: Option<&'static str>,
    /// The rates the trace shows (the same names as `run --json`).
    #[serde(flatten)]
    pub rates: Rates,
    /// The window the rates are over [ns].
    pub window_ns: f64,
    /// Mean notification cost of each party (null where the trace cannot
    /// time it).
    pub kick_p_ns: Option<f64>,
    /// C's.
    pub kick_c_ns: Option<f64>,
    /// Mean from the start of a party's notification to its peer made
    /// runnable (V).
    pub visible_p_ns: Option<f64>,
    /// C's.
    pub visible_c_ns: Option<f64>,
    /// Mean from the start of the peer's notification to the party
    /// running after a sleep (R = V + S).
    pub wake_p_ns: Option<f64>,
    /// C's.
    pub wake_c_ns: Option<f64>,
    /// Who slept in the trace: `P`, `C`, `both` or `none`.
    pub observed: &'static str,
    /// The model's regime for the parameters the trace gives.
    pub regime: String,
    /// Who sleeps in the model's regime.
    pub regime_sleeper: &'static str,
    /// The model's prediction (`model --json`'s fields).
    pub predicted: serde_json::Value,
    /// The parameters given to the model, as `--flag value` text.
    pub params: Params,
    /// Where each cost came from: `trace`, `profile` or `default`.
    pub sources: Sources,
    /// The events read, with their counts.
    pub events_used: Vec<(String, u64)>,
    /// What the trace could not estimate, and what it would need.
    pub missing: Vec<Gap>,
    /// `perf script` or `trace-cmd report`.
    pub format: &'static str,
    /// Time stamp resolution [ns].
    pub resolution_ns: u64,
    /// The file ended in the middle of a line.
    pub truncated: bool,
    /// The costs as a profile (`--profile` takes it).
    pub profile: Profile,
    /// Advice for the pair (null with `--for none`).
    pub advice: Option<Advice>,
}

/// The most messages a second a trace's pair is taken to pass: one a
/// nanosecond.
pub const MAX_RATE: f64 = 1e9;

impl TraceSpec {
    /// Checks the request before the trace is read.
    ///
    /// # Errors
    ///
    /// No message in the window ([`Input::Messages`]), a rate that is not
    /// a positive number up to [`MAX_RATE`] ([`Input::Rate`]), a queue the
    /// model refuses ([`LabError::Param`]).
    pub fn check(&self) -> Result<(), LabError> {
        if self.messages == Some(0) {
            return Err(LabError::input(
                Input::Messages,
                "at least 1 (the messages the pair passed in the traced window)",
            ));
        }
        if self
            .rate_per_s
            .is_some_and(|r| !(r.is_finite() && r > 0.0 && r <= MAX_RATE))
        {
            return Err(LabError::input(
                Input::Rate,
                format!("a positive number of messages per second, at most {MAX_RATE:e} (one a nanosecond)"),
            ));
        }
        self.params.validate()?;
        Ok(())
    }
}

/// Reads the trace and builds the report.
pub fn analyze(spec: &TraceSpec, progress: &dyn Progress) -> Result<TraceReport, LabError> {
    spec.check()?;
    let trace = kicklab_trace::read(&spec.path, &spec.naming)?;
    let e = &trace.estimates;
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let messages = match (spec.messages, spec.rate_per_s) {
        (Some(m), _) => m,
        (None, Some(r)) => (r * e.window_ns / 1e9).round().max(1.0) as u64,
        (None, None) => {
            return Err(LabError::input(
                Input::Messages,
                "a trace holds no message count: give the messages in the traced window or the pair's rate",
            ))
        }
    };
    let [p, c] = &e.sides;
    #[allow(clippy::cast_precision_loss)]
    let per = |x: f64| x / messages as f64;
    let rates = Rates {
        t_ns: per(e.window_ns),
        e_ns: per(p.busy_ns + c.busy_ns),
        e_p_ns: per(p.busy_ns),
        e_c_ns: per(c.busy_ns),
        messages,
        notifications_p: p.notifications,
        notifications_c: c.notifications,
        sleeps_p: p.sleeps,
        sleeps_c: c.sleeps,
        latency_ns: None,
    };
    let given = if spec.from_profile {
        "profile"
    } else {
        "default"
    };
    let mut params = spec.params;
    let mean = |s: &Option<Stat>| s.map(|s| s.mean_ns);
    let (np, np_src) = cost(mean(&p.kick), params.n_p, given);
    let (nc, nc_src) = cost(mean(&c.kick), params.n_c, given);
    params.n_p = np;
    params.n_c = nc;
    params.v_p = mean(&p.visible).map(|v| Cost::Const(v.min(np.mean_ns())));
    params.v_c = mean(&c.visible).map(|v| Cost::Const(v.min(nc.mean_ns())));
    let v_of = |v: Option<Cost>, n: Cost| v.unwrap_or(n).mean_ns();
    let (sp, sp_src) = cost(
        mean(&p.wake).map(|r| (r - v_of(params.v_c, nc)).max(0.0)),
        params.s_p,
        given,
    );
    let (sc, sc_src) = cost(
        mean(&c.wake).map(|r| (r - v_of(params.v_p, np)).max(0.0)),
        params.s_c,
        given,
    );
    params.s_p = sp;
    params.s_c = sc;
    #[allow(clippy::cast_precision_loss)]
    let work =
        |side: &Side, n: Cost| per(side.busy_ns - side.notifications as f64 * n.mean_ns()).max(0.0);
    params.w_p = Cost::Const(work(p, np));
    params.w_c = Cost::Const(work(c, nc));
    let prediction = predict(&params, WaitMode::Notify)?;
    let profile = profile_of(spec, &trace, &params);
    let advice = match spec.latency_ns {
        Some(latency_ns) => Some(advise(
            &AdviseSpec {
                params,
                idle_scale: [None, None],
                nap_ns: [None, None],
                latency_ns,
                messages: 200_000,
                seed: 1,
                exhaustive: false,
                mechanisms: spec.mechanisms.clone(),
            },
            progress,
        )?),
        None => None,
    };
    Ok(TraceReport {
        producer: trace.pair.producer.clone(),
        consumer: trace.pair.consumer.clone(),
        guest: trace.pair.guest.map(|g| match g {
            Party::P => "P",
            Party::C => "C",
        }),
        observed: rates.sleeper(),
        rates,
        window_ns: e.window_ns,
        kick_p_ns: mean(&p.kick),
        kick_c_ns: mean(&c.kick),
        visible_p_ns: mean(&p.visible),
        visible_c_ns: mean(&c.visible),
        wake_p_ns: mean(&p.wake),
        wake_c_ns: mean(&c.wake),
        regime: prediction.regime.name().to_string(),
        regime_sleeper: prediction.regime.sleeper(),
        predicted: serde_json::to_value(prediction).unwrap_or(serde_json::Value::Null),
        params,
        sources: Sources {
            np: np_src,
            nc: nc_src,
            sp: sp_src,
            sc: sc_src,
            w: "trace",
        },
        events_used: trace.events_used.clone(),
        missing: trace.gaps.clone(),
        format: trace.format,
        resolution_ns: trace.resolution_ns,
        truncated: trace.truncated,
        profile,
        advice,
    })
}

/// The trace's value where it has one, else the given cost.
fn cost(measured: Option<f64>, given: Cost, source: &'static str) -> (Cost, &'static str) {
    match measured {
        Some(v) => (Cost::Const(v), "trace"),
        None => (given, source),
    }
}

/// The costs as a profile: the base profile's (or constant ones) with
/// every cost the trace measured put in its place.
fn profile_of(spec: &TraceSpec, trace: &Trace, params: &Params) -> Profile {
    let [p, c] = &trace.estimates.sides;
    let means = [params.n_p, params.n_c, params.s_p, params.s_c].map(|c| c.mean_ns());
    let backend = match (&spec.base, trace.pair.guest) {
        (_, Some(_)) => "kvm".to_string(),
        (Some(b), None) => b.backend.clone(),
        (None, None) => "futex".to_string(),
    };
    let mut profile = spec
        .base
        .clone()
        .unwrap_or_else(|| Profile::of_means(&backend, means));
    profile.backend = backend;
    profile.direction = trace.pair.guest.map(|g| match g {
        Party::P => Direction::Tx,
        Party::C => Direction::Rx,
    });
    if let Some(k) = p.kick {
        profile.np = k;
    }
    if let Some(k) = c.kick {
        profile.nc = k;
    }
    profile.vp = p.visible.or(profile.vp);
    profile.vc = c.visible.or(profile.vc);
    let shifted = |r: Stat, by: f64| Stat {
        median_ns: (r.median_ns - by).max(0.0),
        mean_ns: (r.mean_ns - by).max(0.0),
        p10_ns: (r.p10_ns - by).max(0.0),
        p90_ns: (r.p90_ns - by).max(0.0),
        ..r
    };
    if let Some(r) = p.wake {
        profile.sp = shifted(r, params.n_c.mean_ns());
        profile.sp_v = Some(shifted(r, params.v_c.unwrap_or(params.n_c).mean_ns()));
    }
    if let Some(r) = c.wake {
        profile.sc = shifted(r, params.n_p.mean_ns());
        profile.sc_v = Some(shifted(r, params.v_p.unwrap_or(params.n_p).mean_ns()));
    }
    // The trace's costs are what the pair met in its run: the in-run
    // costs of a base profile would replace them.
    profile.in_run = None;
    profile.idle_curve.clear();
    profile
}
