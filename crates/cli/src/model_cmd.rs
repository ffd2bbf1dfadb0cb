//! `kicklab model`: the closed forms.

use clap::Args;
use kicklab_model::{fmt_ns, predict, Params, Prediction, RaceExpectation, Regime, WaitMode};
use serde_json::json;

use crate::args::{mode, ParamArgs};
use crate::errors::Usage;

/// Arguments of `kicklab model`.
#[derive(Debug, Args)]
pub struct ModelArgs {
    #[command(flatten)]
    params: ParamArgs,
    /// notify (sleep and be woken) or poll (spin: regime GP).
    #[arg(long = "strategy", visible_alias = "mode", value_name = "STRATEGY", default_value = "notify", value_parser = mode, allow_hyphen_values = true)]
    mode: WaitMode,
    /// Print one JSON object: {"regime", "T_ns", "E_ns", "m", ...}.
    #[arg(long)]
    json: bool,
}

impl ModelArgs {
    /// The flags given (`given(id)`) that the model would not use.
    pub fn unused(&self, given: &dyn Fn(&str) -> bool) -> Vec<String> {
        crate::args::unused_when_polling([self.mode; 2], given)
    }
}

pub fn run(a: &ModelArgs) -> anyhow::Result<()> {
    let profile = a.params.load_profile()?;
    let params =
        a.params
            .params_for_profile(profile.as_ref(), false, a.mode == WaitMode::Notify)?;
    if let WaitMode::Spin { .. } = a.mode {
        return Err(Usage(
            "--strategy: the model covers notify and poll; simulate spin:<budget> with `kicklab sim`"
                .into(),
        )
        .into());
    }
    if !params.all_const() {
        errln!("note: costs are distributions; the model uses their means (simulate to see the spread's effect)");
    }
    let p = predict(&params, a.mode)?;
    // With a profile, the FC or FP point again with each wake-up's margin
    // drawn per kick with the calibrated spread (`docs/model.md`, "The
    // batch race").
    let race = match &profile {
        Some(f) => f.race_at(&params, a.mode)?,
        None => None,
    };
    if a.json {
        let mut v = kicklab_lab::rates_text::prediction_json(&p);
        v["mode"] = json!(a.mode.to_string());
        v["params"] = serde_json::to_value(params)?;
        if let Some(r) = race {
            v["race"] = serde_json::to_value(r)?;
        }
        return crate::show::print_json(&v);
    }
    print_prediction(&params, a.mode, &p);
    if let Some(r) = race {
        print_race(&r, p.rates.t_ns);
    }
    Ok(())
}

fn print_race(r: &RaceExpectation, t_ns: f64) {
    let (who, sd) = match r.regime {
        Regime::FP => ("s_P (R_P - N_C)", r.spread_ns[0]),
        _ => ("s_C (R_C - N_P)", r.spread_ns[1]),
    };
    outln!(
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
    );
}

fn print_prediction(params: &Params, mode: WaitMode, p: &Prediction) {
    let l = params.len;
    outln!("regime      {}  ({})", p.regime, p.regime.meaning());
    outln!(
        "T           {}/message  ({})",
        fmt_ns(p.rates.t_ns),
        kicklab_lab::rates_text::rate_text(p.rates.t_ns)
    );
    outln!(
        "E           {} of CPU/message (P and C together)",
        fmt_ns(p.rates.e_ns)
    );
    if let Some(m) = p.m {
        let what = match p.regime {
            Regime::FC | Regime::FP | Regime::EWC | Regime::EWP => "messages per wake-up",
            _ => "messages beyond L per round (eq. 3)",
        };
        outln!("m           {m}  ({what})");
    }
    if let (Some(n), Some(t)) = (p.round_messages, p.round_ns) {
        let messages = if n == 1 { "message" } else { "messages" };
        outln!("round       {n} {messages} in {}", fmt_ns(t));
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
        outln!(
            "predicates  slow consumer start-up {}  {sc_name} = {} vs (L - k_P) W_P = {}",
            yes(p.predicates.slow_consumer_startup),
            fmt_ns(sc + wc),
            fmt_ns(f64::from(l - params.k_p) * wp)
        );
        outln!(
            "            slow producer start-up {}  {sp_name} = {} vs (L - k_C) W_C = {}",
            yes(p.predicates.slow_producer_startup),
            fmt_ns(sp + wp),
            fmt_ns(f64::from(l - params.k_c) * wc)
        );
        if let Some(o) = p.other {
            outln!(
                "bistable    from a full queue the pair settles in {} instead: T = {}, E = {} \
                 (kick visibility: the start or a disturbance picks the operating point)",
                o.regime,
                fmt_ns(o.t_ns),
                fmt_ns(o.e_ns)
            );
        }
        let gp = predict(params, WaitMode::Poll).expect("validated");
        if gp.rates.t_ns > 0.0 && gp.rates.e_ns > 0.0 {
            outln!(
                "vs polling  T_GP = {}, E_GP = {}: notifications cost {:+.1}% time, {:+.1}% CPU",
                fmt_ns(gp.rates.t_ns),
                fmt_ns(gp.rates.e_ns),
                100.0 * (p.rates.t_ns / gp.rates.t_ns - 1.0),
                100.0 * (p.rates.e_ns / gp.rates.e_ns - 1.0)
            );
        } else {
            outln!(
                "vs polling  T_GP = {}, E_GP = {}: no work and no cost, nothing to compare",
                fmt_ns(gp.rates.t_ns),
                fmt_ns(gp.rates.e_ns)
            );
        }
    }
}
