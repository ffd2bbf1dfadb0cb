//! `kicklab sim` as one library call: a simulator configuration in; the
//! run's JSON object (the contract's), its text, and its warnings out, with
//! the model's operating point beside it where a closed form exists. What
//! does not live here: the simulator (`kicklab_sim`), parsing the command
//! line, the latency bound's verdict
//! ([`crate::disturbance::latency_bound_missed`], told by the front end
//! whether the bound was typed without its unit).

use kicklab_model::{fmt_ns, predict, Regime, WaitMode};
use kicklab_sim::{simulate, SimConfig, SimError, SimResult, Start, Window};
use serde_json::json;

use crate::{Input, LabError};

/// What a simulation gives back.
#[derive(Debug)]
pub struct SimOutput {
    /// The run.
    pub result: SimResult,
    /// The JSON object of the contract (docs/cli.md, `sim --json`).
    pub json: serde_json::Value,
    /// The text output, line by line.
    pub text: Vec<String>,
    /// Lines for standard error: a measuring window the reader should
    /// know about.
    pub warnings: Vec<String>,
}

/// What `sim` was given: the pair, how each party waits, send
/// combining, the run's length and start.
#[derive(Clone, Debug)]
pub struct SimRequest {
    /// The pair as given.
    pub pair: crate::pair_input::PairInput,
    /// How both parties wait.
    pub strategy: WaitMode,
    /// How P waits, where it differs.
    pub strategy_p: Option<WaitMode>,
    /// How C waits, where it differs.
    pub strategy_c: Option<WaitMode>,
    /// The p99 bound `adaptive` keeps where its mode gives none [ns].
    pub latency_ns: Option<f64>,
    /// Send combining.
    pub combine: kicklab_sim::Combine,
    /// Messages measured.
    pub messages: u64,
    /// Messages before measuring (default: a tenth and 4 L).
    pub warmup: Option<u64>,
    /// The seed of the cost streams.
    pub seed: u64,
    /// Whether to record each message's latency.
    pub latency: bool,
    /// The state at t = 0.
    pub start: Start,
}

impl SimRequest {
    /// The simulator's configuration: each party's strategy with the
    /// bound made explicit (so that the JSON names it), the parameters
    /// with the profile's spread where one is named (and W plus the ring's
    /// cost as measured for a notifying pair, or a polling one), each
    /// start-up on the profile's idle curve and each nap as it woke.
    ///
    /// # Errors
    ///
    /// The parameter, or the profile, at fault.
    pub fn config(&self) -> Result<SimConfig, LabError> {
        let latency = self.latency_ns.unwrap_or(kicklab_model::DEFAULT_LATENCY_NS);
        let bound = |m: WaitMode| m.with_latency(Some(latency));
        let mode_p = bound(self.strategy_p.unwrap_or(self.strategy));
        let mode_c = bound(self.strategy_c.unwrap_or(self.strategy));
        let notify = mode_p == WaitMode::Notify && mode_c == WaitMode::Notify;
        let profile = self.pair.load_profile()?;
        let params = self.pair.params_for(profile.as_ref(), true, notify)?;
        let (idle_scale, nap) = profile.as_ref().map_or(
            ([None, None], [None, None]),
            kicklab_model::Profile::sim_costs,
        );
        Ok(SimConfig {
            params,
            mode_p,
            mode_c,
            messages: self.messages,
            warmup: self
                .warmup
                .unwrap_or_else(|| kicklab_sim::default_warmup(self.messages, params.len)),
            seed: self.seed,
            latency: self.latency,
            start: self.start,
            combine: self.combine,
            idle_scale,
            nap,
        })
    }
}

/// Simulates `cfg` once.
///
/// # Errors
///
/// Parameters the simulator refuses; a run too long for the simulator,
/// named [`Input::Warmup`] where a warm-up longer than the default and
/// than the run made it so.
pub fn run(cfg: &SimConfig) -> Result<SimOutput, LabError> {
    let r = simulate(cfg).map_err(|e| match e {
        SimError::TooManyMessages(_) | SimError::TimeOverflow
            if cfg.warmup > cfg.messages
                && cfg.warmup != kicklab_sim::default_warmup(cfg.messages, cfg.params.len) =>
        {
            LabError::input(
                Input::Warmup,
                format!(
                    "{} messages of warm-up before {} measured pass what one run may simulate \
                     ({} messages in all, or the simulator's clock); warm up with fewer",
                    cfg.warmup,
                    cfg.messages,
                    kicklab_sim::MAX_MESSAGES
                ),
            )
        }
        e => e.into(),
    })?;
    let (mode_p, mode_c) = (cfg.mode_p, cfg.mode_c);
    // The closed form, where one exists for these modes (send combining
    // has its closed form in docs/model.md for the fast consumer only;
    // none is printed).
    let predicted = (mode_p == mode_c && !cfg.combine.is_on())
        .then(|| predict(&cfg.params, mode_p).ok())
        .flatten();
    let warnings = r.window_warnings(&cfg.params, predicted.and_then(|p| p.round_messages));
    let mut v = serde_json::to_value(&r)?;
    v["mode_p"] = json!(mode_p.to_string());
    v["mode_c"] = json!(mode_c.to_string());
    v["seed"] = json!(cfg.seed);
    v["start"] = json!(match cfg.start {
        Start::Empty => "empty",
        Start::Full => "full",
    });
    // The model's point for this start: from a full queue, a bistable
    // pair's other operating point.
    v["predicted"] = match predicted {
        Some(p) if cfg.start == Start::Full && p.other.is_some() => serde_json::to_value(p.other)?,
        Some(p) => crate::rates_text::prediction_json(&p),
        None => serde_json::Value::Null,
    };
    let point = predicted.map(|p| match p.other {
        Some(o) if cfg.start == Start::Full => (o.regime, o.t_ns, o.e_ns),
        _ => (p.regime, p.rates.t_ns, p.rates.e_ns),
    });
    let mut text = lines(&r, point, mode_p, mode_c);
    if cfg.combine.is_on() {
        text.push(format!(
            "combining      batch {}, flush {} (latency from the write)",
            cfg.combine.batch, cfg.combine.flush
        ));
    }
    Ok(SimOutput {
        result: r,
        json: v,
        text,
        warnings,
    })
}

/// The run's text, with the model's `predicted` point (regime, T, E).
fn lines(
    r: &SimResult,
    predicted: Option<(Regime, f64, f64)>,
    mode_p: WaitMode,
    mode_c: WaitMode,
) -> Vec<String> {
    let mut out = vec![format!("modes          P {mode_p}, C {mode_c}")];
    out.extend(crate::rates_text::RateLines::of(&r.rates).lines());
    if let Some(l) = r.rates.latency_ns {
        out.push(format!(
            "latency        p50 {}  p99 {}  max {}  mean {}",
            fmt_ns(l.p50),
            fmt_ns(l.p99),
            fmt_ns(l.max),
            fmt_ns(l.mean)
        ));
    }
    let window = match r.window {
        Window::RoundsPc => "whole rounds between P->C notifications",
        Window::RoundsCp => "whole rounds between C->P notifications",
        Window::Messages => "messages (no notification rounds)",
        Window::Consumed => "messages consumed after the warm-up",
    };
    out.extend(crate::self_check_text::line(r.self_check_p, r.self_check_c));
    let n = r.rates.messages;
    let noun = if n == 1 { "message" } else { "messages" };
    out.push(format!("measured       {n} {noun} over {window}"));
    if let Some((regime, t_ns, e_ns)) = predicted {
        out.push(format!(
            "model          {regime}: T {} (sim/model {}), E {} (sim/model {})",
            fmt_ns(t_ns),
            ratio(r.rates.t_ns, t_ns),
            fmt_ns(e_ns),
            ratio(r.rates.e_ns, e_ns)
        ));
    }
    out
}

/// `sim / model` to six places; where the model's value is 0 (every cost
/// 0) there is no ratio: both 0 agree, anything else is off by all.
fn ratio(sim: f64, model: f64) -> String {
    if model > 0.0 {
        format!("{:.6}", sim / model)
    } else if sim == 0.0 {
        "both 0".to_string()
    } else {
        "n/a: the model's is 0".to_string()
    }
}
