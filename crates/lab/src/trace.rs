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

/// A trace analysis as the user asks for it: [`TraceRequest::spec`] reads
/// the profile named and fills in the costs the trace does not give.
#[derive(Debug, Clone)]
pub struct TraceRequest {
    /// The trace.
    pub path: PathBuf,
    /// The pair, as the user named it.
    pub naming: Naming,
    /// Messages in the traced window, or
    pub messages: Option<u64>,
    /// the pair's rate [messages/s].
    pub rate_per_s: Option<f64>,
    /// The ring's length L.
    pub len: u32,
    /// k_P.
    pub k_p: u32,
    /// k_C.
    pub k_c: u32,
    /// A calibration profile for the costs the trace does not give.
    pub profile: Option<PathBuf>,
    /// The bound on p99 latency advice keeps [ns].
    pub latency_ns: f64,
    /// The mechanisms advice gives settings for (none: no advice).
    pub mechanisms: Vec<Mechanism>,
}

impl TraceRequest {
    /// What to read and how to count it: the profile read, its costs
    /// (else the paper's) where the trace gives none.
    ///
    /// # Errors
    ///
    /// [`Input::Profile`]: the profile cannot be read.
    pub fn spec(&self) -> Result<TraceSpec, LabError> {
        let base = self
            .profile
            .as_deref()
            .map(crate::pair_input::read_profile)
            .transpose()?;
        let mut params = Params {
            len: self.len,
            k_p: self.k_p,
            k_c: self.k_c,
            ..Params::default()
        };
        if let Some(p) = &base {
            p.apply_costs(&mut params, false);
        }
        Ok(TraceSpec {
            path: self.path.clone(),
            naming: self.naming.clone(),
            messages: self.messages,
            rate_per_s: self.rate_per_s,
            params,
            from_profile: base.is_some(),
            base,
            latency_ns: (!self.mechanisms.is_empty()).then_some(self.latency_ns),
            mechanisms: self.mechanisms.clone(),
        })
    }
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
    /// Advice for the pair (null with `--for none`, or where it was
    /// skipped).
    pub advice: Option<Advice>,
    /// Why there is no advice though it was asked for: the costs the trace
    /// implies are beyond what advice searches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advice_skipped: Option<String>,
    /// A few rounds of the pair as traced (what each party did, where the
    /// trace says), as the simulator's timelines are drawn; `None` where
    /// the window holds fewer than [`TIMELINE_MARKS`] timed notifications
    /// and sleeps.
    #[serde(skip)]
    pub timeline: Option<TracedTimeline>,
}

/// The traced pair's picture as SVG (one panel titled with the two
/// threads), `None` without a [`TracedTimeline`].
#[must_use]
pub fn timeline_svg(r: &TraceReport) -> Option<String> {
    let t = r.timeline.as_ref()?;
    // A party that notified but whose kicks the trace cannot time (a
    // guest's exits without kvm_entry) shows none.
    let untimed: Vec<&str> = [
        ("P", r.rates.notifications_p, r.kick_p_ns),
        ("C", r.rates.notifications_c, r.kick_c_ns),
    ]
    .into_iter()
    .filter(|(_, n, kick)| *n > 0 && kick.is_none())
    .map(|(name, _, _)| name)
    .collect();
    let mut title = format!(
        "as traced: P {} ({}), C {} ({}); blank: preempted",
        r.producer.tid, r.producer.comm, r.consumer.tid, r.consumer.comm
    );
    if !untimed.is_empty() {
        title.push_str(&format!(
            "; {}'s kicks not timed in this trace",
            untimed.join(" and ")
        ));
    }
    Some(kicklab_report::timeline_svg(&[
        kicklab_report::TimelinePanel {
            title,
            timeline: &t.timeline,
            from_ps: t.from_ps,
            to_ps: t.to_ps,
        },
    ]))
}

/// Timed notifications and sleeps (the two parties' together) a traced
/// timeline shows.
pub const TIMELINE_MARKS: usize = 12;

/// A stretch of the traced pair: its intervals and the window [ps].
#[derive(Debug, Clone)]
pub struct TracedTimeline {
    /// P's and C's intervals: notifying, asleep, off the CPU, and the rest
    /// running (drawn as work).
    pub timeline: kicklab_sim::Timeline,
    /// The window, from and to [ps].
    pub from_ps: u64,
    /// See `from_ps`.
    pub to_ps: u64,
}

/// The stretch from the second timed notification or sleep of the window
/// to the end of the [`TIMELINE_MARKS`]-th after it: each party's spans clipped
/// to it, the time between them (it ran) as work, and the time it was
/// preempted blank.
#[must_use]
pub fn traced_timeline(spans: &[Vec<kicklab_trace::Span>; 2]) -> Option<TracedTimeline> {
    use kicklab_sim::{Activity, Interval};
    use kicklab_trace::SpanKind;
    // Anchored on the notifications and sleeps both parties' spans show
    // (a guest's kicks are not timed without kvm_entry; its host peer's
    // sleeps still keep the rhythm).
    let mut marks: Vec<&kicklab_trace::Span> = spans
        .iter()
        .flatten()
        .filter(|s| s.kind != SpanKind::Off)
        .collect();
    marks.sort_by_key(|s| s.from_ns);
    let first = marks.get(1)?;
    let last = marks.get(TIMELINE_MARKS)?;
    let (from, to) = (first.from_ns, last.to_ns.max(first.from_ns + 1));
    let mut intervals = Vec::new();
    for (party, own) in [Party::P, Party::C].into_iter().zip(spans) {
        let mut at = from;
        let mut own: Vec<&kicklab_trace::Span> = own
            .iter()
            .filter(|s| s.to_ns > from && s.from_ns < to)
            .collect();
        own.sort_by_key(|s| s.from_ns);
        let mut push = |activity, a: u64, b: u64| {
            if b > a {
                intervals.push(Interval {
                    party,
                    activity,
                    from_ps: a.saturating_mul(1000),
                    to_ps: b.saturating_mul(1000),
                });
            }
        };
        for s in own {
            let (a, b) = (s.from_ns.max(at), s.to_ns.min(to));
            push(Activity::Work, at, a);
            // Preempted time is neither work nor sleep: left blank.
            match s.kind {
                SpanKind::Kick => push(Activity::Kick, a, b),
                SpanKind::Sleep => push(Activity::Sleep, a, b),
                SpanKind::Off => {}
            }
            at = at.max(b);
        }
        push(Activity::Work, at, to);
    }
    intervals.sort_by_key(|i| i.from_ps);
    Some(TracedTimeline {
        timeline: kicklab_sim::Timeline {
            intervals,
            fill: Vec::new(),
            end_ps: to.saturating_mul(1000),
        },
        from_ps: from.saturating_mul(1000),
        to_ps: to.saturating_mul(1000),
    })
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
        (None, Some(r)) => {
            let m = (r * e.window_ns / 1e9).round();
            if m < 1.0 {
                return Err(LabError::input(
                    Input::Rate,
                    format!(
                        "{r:e} messages a second is less than one message in the traced window of {}; \
                         give at least {} a second, or the message count",
                        kicklab_model::fmt_ns_short(e.window_ns),
                        kicklab_model::sig(0.5e9 / e.window_ns, 3)
                    ),
                ));
            }
            m as u64
        }
        (None, None) => {
            return Err(LabError::input(
                Input::Messages,
                "a trace holds no message count: give the messages in the traced window or the pair's rate",
            ))
        }
    };
    // At most one a nanosecond, rounded as a count from --rate is, so that
    // the fastest rate passes.
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let most = (MAX_RATE * e.window_ns / 1e9).round().max(1.0) as u64;
    if messages > most {
        return Err(LabError::input(
            Input::Messages,
            format!(
                "{messages} messages in the traced window of {} is more than one a nanosecond; at most {most}",
                kicklab_model::fmt_ns_short(e.window_ns)
            ),
        ));
    }
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
    // The costs come from the file, not from flags: one the model does not
    // take is the trace's.
    params.validate().map_err(|e| {
        LabError::input(
            Input::Trace,
            format!(
                "{}: the trace implies {} out of the model's range: {}",
                spec.path.display(),
                e.param.symbol(),
                e.reason
            ),
        )
    })?;
    let prediction = predict(&params, WaitMode::Notify)?;
    let profile = profile_of(spec, &trace, &params);
    let (advice, advice_skipped) = match spec.latency_ns {
        Some(latency_ns) => {
            let asked = AdviseSpec {
                params,
                idle_scale: [None, None],
                nap: [None, None],
                latency_ns,
                messages: 200_000,
                seed: 1,
                exhaustive: false,
                mechanisms: spec.mechanisms.clone(),
            };
            match advise(&asked, progress) {
                Ok(a) => (Some(a), None),
                // Advice refuses costs it cannot search in time (a wake-up
                // of milliseconds): the trace's findings still stand.
                Err(LabError::Param(e)) => (
                    None,
                    Some(format!(
                        "no advice for the costs this trace implies: {}: {}",
                        e.param.symbol(),
                        e.reason
                    )),
                ),
                Err(other) => return Err(other),
            }
        }
        None => (None, None),
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
        timeline: traced_timeline(&e.spans),
        profile,
        advice,
        advice_skipped,
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

#[cfg(test)]
mod tests {
    use super::*;
    use kicklab_sim::Activity;
    use kicklab_trace::{Span, SpanKind};

    fn span(kind: SpanKind, from_ns: u64, to_ns: u64) -> Span {
        Span {
            kind,
            from_ns,
            to_ns,
        }
    }

    #[test]
    fn a_traced_timeline_shows_the_spans_and_the_time_between_as_work() {
        // P kicks every 10 us for 1 us; C sleeps from 2 us after each kick
        // until the next, and was preempted once.
        let p: Vec<Span> = (0..20)
            .map(|k| span(SpanKind::Kick, k * 10_000, k * 10_000 + 1_000))
            .collect();
        let mut c: Vec<Span> = (0..20)
            .map(|k| span(SpanKind::Sleep, k * 10_000 + 3_000, (k + 1) * 10_000))
            .collect();
        c.push(span(SpanKind::Off, 12_000, 12_500));
        let t = traced_timeline(&[p, c]).expect("enough to draw");
        // From the second mark (C's first sleep at 3 us) to the end of the
        // twelfth after it.
        assert_eq!(t.from_ps, 3_000_000);
        assert!(t.to_ps > t.from_ps && t.timeline.end_ps == t.to_ps);
        let of = |party: Party, a: Activity| {
            t.timeline
                .intervals
                .iter()
                .filter(|i| i.party == party && i.activity == a)
                .map(|i| i.to_ps - i.from_ps)
                .sum::<u64>()
        };
        // P: a kick of 1 us per 10 us, work between.
        assert!(of(Party::P, Activity::Kick) > 0);
        assert_eq!(
            of(Party::P, Activity::Kick) + of(Party::P, Activity::Work),
            t.to_ps - t.from_ps
        );
        // C: sleeps and work, the preempted half microsecond left blank.
        assert_eq!(
            of(Party::C, Activity::Sleep) + of(Party::C, Activity::Work) + 500_000,
            t.to_ps - t.from_ps
        );
        // Intervals in order and inside the window.
        assert!(t
            .timeline
            .intervals
            .iter()
            .all(|i| i.from_ps >= t.from_ps && i.to_ps <= t.to_ps && i.from_ps < i.to_ps));
        // Too few marks: nothing to draw.
        let few = [vec![span(SpanKind::Kick, 0, 1)], Vec::new()];
        assert!(traced_timeline(&few).is_none());
    }
}
