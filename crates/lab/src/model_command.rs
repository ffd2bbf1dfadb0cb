//! `kicklab model` as one library call: the pair and a wait strategy in;
//! the closed form's prediction as the contract's JSON object and as text
//! out (regime, T, E, the round, the start-up predicates, a bistable
//! pair's other point, polling beside it, and with a profile the batch
//! race's expectation). What does not live here: the closed forms
//! (`kicklab_model`), parsing the command line.

use kicklab_model::{
    fmt_ns, predict, Params, Prediction, Profile, RaceExpectation, Regime, WaitMode,
};
use serde_json::json;

use crate::{Input, LabError};

/// What a prediction gives back.
#[derive(Debug)]
pub struct ModelOutput {
    /// The JSON object (`model --json`).
    pub json: serde_json::Value,
    /// The text output, line by line.
    pub text: Vec<String>,
    /// Notes for standard error.
    pub notes: Vec<String>,
}

/// The closed form of `params` waiting by `mode`, with `profile`'s batch
/// race where one is given.
///
/// # Errors
///
/// A strategy the closed forms do not cover ([`Input::Mode`]), parameters
/// the model refuses.
pub fn run(
    params: &Params,
    mode: WaitMode,
    profile: Option<&Profile>,
) -> Result<ModelOutput, LabError> {
    if let WaitMode::Spin { .. } = mode {
        return Err(LabError::input(
            Input::Mode,
            "the model covers notify and poll; simulate spin:<budget> with `kicklab sim`",
        ));
    }
    let mut notes = Vec::new();
    if !params.all_const() {
        notes.push(
            "costs are distributions; the model uses their means (simulate to see the spread's effect)".into(),
        );
    }
    let p = predict(params, mode)?;
    // With a profile, the FC or FP point again with each wake-up's margin
    // drawn per kick with the calibrated spread (`docs/model.md`, "The
    // batch race").
    let race = match profile {
        Some(f) => f.race_at(params, mode)?,
        None => None,
    };
    let mut v = crate::rates_text::prediction_json(&p);
    v["mode"] = json!(mode.to_string());
    v["params"] = serde_json::to_value(params)?;
    if let Some(r) = &race {
        v["race"] = serde_json::to_value(r)?;
    }
    let mut text = Vec::new();
    prediction_lines(params, mode, &p, &mut text);
    if let Some(r) = &race {
        race_line(r, p.rates.t_ns, &mut text);
    }
    Ok(ModelOutput {
        json: v,
        text,
        notes,
    })
}

fn race_line(r: &RaceExpectation, t_ns: f64, out: &mut Vec<String>) {
    let (who, sd) = match r.regime {
        Regime::FP => ("s_P (R_P - N_C)", r.spread_ns[0]),
        _ => ("s_C (R_C - N_P)", r.spread_ns[1]),
    };
    out.push(format!(
        "race        T {}, E {}, {:.2} messages per wake-up on average, with {who} drawn at each \
         wake-up (the profile's spread: sd {}){}",
        fmt_ns(r.t_ns),
        fmt_ns(r.e_ns),
        r.round_messages,
        fmt_ns(sd),
        if (r.t_ns / t_ns - 1.0).abs() > 0.05 {
            "; it differs from T above: s is near a step of the batch, and a run's T depends on \
             how its own kicks and wake-ups fall"
        } else {
            ""
        }
    ));
}

fn prediction_lines(params: &Params, mode: WaitMode, p: &Prediction, out: &mut Vec<String>) {
    let l = params.len;
    out.push(format!(
        "regime      {}  ({})",
        p.regime,
        p.regime.meaning()
    ));
    out.push(format!(
        "T           {}/message  ({})",
        fmt_ns(p.rates.t_ns),
        crate::rates_text::rate_text(p.rates.t_ns)
    ));
    out.push(format!(
        "E           {} of CPU/message (P and C together)",
        fmt_ns(p.rates.e_ns)
    ));
    if let Some(m) = p.m {
        let what = match p.regime {
            Regime::FC | Regime::FP | Regime::EWC | Regime::EWP => "messages per wake-up",
            _ => "messages beyond L per round (eq. 3)",
        };
        out.push(format!("m           {m}  ({what})"));
    }
    if let (Some(n), Some(t)) = (p.round_messages, p.round_ns) {
        let messages = if n == 1 { "message" } else { "messages" };
        out.push(format!("round       {n} {messages} in {}", fmt_ns(t)));
    }
    if mode == WaitMode::Notify {
        let (wp, wc) = (params.w_p.mean_ns(), params.w_c.mean_ns());
        // The effective start-ups: when the woken party acts, counted from
        // the end of the notification (S + V - N; S where V = N).
        let sp = params.s_p.mean_ns() + params.vis_c().mean_ns() - params.n_c.mean_ns();
        let sc = params.s_c.mean_ns() + params.vis_p().mean_ns() - params.n_p.mean_ns();
        let (sp_name, sc_name) = if params.early_visibility() {
            ("S_P + V_C - N_C + W_P", "S_C + V_P - N_P + W_C")
        } else {
            ("S_P + W_P", "S_C + W_C")
        };
        let yes = |b: bool| if b { "yes" } else { "no " };
        out.push(format!(
            "predicates  slow consumer start-up {}  {sc_name} = {} vs (L - k_P) W_P = {}",
            yes(p.predicates.slow_consumer_startup),
            fmt_ns(sc + wc),
            fmt_ns(f64::from(l - params.k_p) * wp)
        ));
        out.push(format!(
            "            slow producer start-up {}  {sp_name} = {} vs (L - k_C) W_C = {}",
            yes(p.predicates.slow_producer_startup),
            fmt_ns(sp + wp),
            fmt_ns(f64::from(l - params.k_c) * wc)
        ));
        if let Some(o) = p.other {
            out.push(format!(
                "bistable    from a full queue the pair settles in {} instead: T = {}, E = {} \
                 (kick visibility: the start or a disturbance picks the operating point)",
                o.regime,
                fmt_ns(o.t_ns),
                fmt_ns(o.e_ns)
            ));
        }
        let Ok(gp) = predict(params, WaitMode::Poll) else {
            return;
        };
        if gp.rates.t_ns > 0.0 && gp.rates.e_ns > 0.0 {
            out.push(format!(
                "vs polling  T_GP = {}, E_GP = {}: notifications cost {:+.1}% time, {:+.1}% CPU",
                fmt_ns(gp.rates.t_ns),
                fmt_ns(gp.rates.e_ns),
                100.0 * (p.rates.t_ns / gp.rates.t_ns - 1.0),
                100.0 * (p.rates.e_ns / gp.rates.e_ns - 1.0)
            ));
        } else {
            out.push(format!(
                "vs polling  T_GP = {}, E_GP = {}: no work and no cost, nothing to compare",
                fmt_ns(gp.rates.t_ns),
                fmt_ns(gp.rates.e_ns)
            ));
        }
    }
}
