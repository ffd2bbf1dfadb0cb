//! The report's sections from the paper alone: one parameter set per
//! regime (model against simulator), the paper's figures as sweeps, and
//! the closed forms. What does not live here: the sweeps and the model
//! (`kicklab_sim`, `kicklab_model`), the page's assembly (`report`).

use kicklab_model::{predict, CommandLine, Cost, Flag, Param, Params, Regime, WaitMode};
use kicklab_report::{Column, Section, Table};
use kicklab_sim::{simulate, SimConfig};

use crate::LabError;

/// One representative parameter set per regime, from the Fig. 4 set-up.
fn regime_examples() -> Vec<(Regime, Params)> {
    let d = Params::default();
    let c = Cost::Const;
    vec![
        (
            Regime::FC,
            Params {
                w_p: c(2000.0),
                ..d
            },
        ),
        (Regime::FP, d),
        (
            Regime::SCS,
            Params {
                len: 8,
                w_p: c(2000.0),
                w_c: c(1000.0),
                s_c: c(20_000.0),
                s_p: c(500.0),
                ..d
            },
        ),
        (
            Regime::SPS,
            Params {
                len: 4,
                w_p: c(500.0),
                ..d
            },
        ),
        (
            Regime::SS,
            Params {
                len: 2,
                s_c: c(5000.0),
                ..d
            },
        ),
        (
            Regime::EWC,
            Params {
                v_p: Some(c(1000.0)),
                ..d
            },
        ),
        (
            Regime::EWP,
            Params {
                len: 4,
                w_p: c(1200.0),
                s_c: c(20_000.0),
                n_c: c(8000.0),
                v_c: Some(c(1000.0)),
                s_p: c(200.0),
                ..d
            },
        ),
        (
            Regime::Lockstep,
            Params {
                w_p: c(1100.0),
                ..d
            },
        ),
    ]
}

/// The regimes section: each regime's example, closed form against the
/// simulator (constant costs, then exponential).
pub(super) fn regimes_section(messages: u64, seed: u64) -> Result<Section, LabError> {
    let mut h = String::from(
        "<p>Method: one parameter set per regime (flags on top of the Fig. 4 defaults). Model: closed forms of \
         <code>docs/model.md</code>. Simulator: the same rules as events, constant costs, measured over whole \
         notification rounds; then with every cost exponential with the same mean. EWC and EWP are kicklab's \
         additions (early-woken consumer, producer): a kick seen before it ends (V &lt; N) wakes the slower party, which \
         drains (fills) the queue and sleeps again before the notifier's next message.</p>\n",
    );
    let mut table = Table::new(
        "one parameter set per regime",
        vec![
            Column::text("regime", "regime").on_page(),
            Column::text("meaning", "what it is").on_page(),
            Column::text("flags", "flags"),
            Column::number("m", "m").on_page(),
            Column::ns("T_model", "T model").on_page(),
            Column::ns("T_sim", "T sim").on_page(),
            Column::ns("E_model", "E model").on_page(),
            Column::ns("E_sim", "E sim").on_page(),
            Column::ns("T_sim_exp", "T sim, exp costs"),
            Column::ns("E_sim_exp", "E sim, exp costs"),
            Column::ns("T_poll", "T poll").on_page(),
            Column::ns("E_poll", "E poll"),
        ],
    );
    // The largest relative gap between simulator and model, constant costs.
    let mut worst = 0.0_f64;
    for (want, p) in regime_examples() {
        let flags = match p.flags(&[]) {
            f if f.is_empty() => "(defaults)".to_string(),
            f => f,
        };
        let m = predict(&p, WaitMode::Notify)?;
        debug_assert_eq!(
            m.regime, want,
            "the example of a regime classifies as another"
        );
        let round = m.round_messages.unwrap_or(1);
        let n = messages.max(40 * round);
        let s = simulate(&SimConfig {
            seed,
            ..SimConfig::new(p, WaitMode::Notify, n)
        })?;
        let x = simulate(&SimConfig {
            seed,
            ..SimConfig::new(p.with_exponential_costs(), WaitMode::Notify, n.max(200_000))
        })?;
        let g = predict(&p, WaitMode::Poll)?;
        worst = [s.rates.t_ns / m.rates.t_ns, s.rates.e_ns / m.rates.e_ns]
            .iter()
            .fold(worst, |w, r| w.max((r - 1.0).abs()));
        table.push(vec![
            m.regime.name().into(),
            m.regime.meaning().into(),
            flags.into(),
            m.m.into(),
            m.rates.t_ns.into(),
            s.rates.t_ns.into(),
            m.rates.e_ns.into(),
            s.rates.e_ns.into(),
            x.rates.t_ns.into(),
            x.rates.e_ns.into(),
            g.rates.t_ns.into(),
            g.rates.e_ns.into(),
        ]);
    }
    h.insert_str(
        0,
        &format!(
            "<p>With constant costs the simulator gives the closed form's T and E in every regime (the largest \
             difference {}). The picture shows two rounds of each: in FP the producer fills the queue and sleeps \
             until the consumer's kick; in FC the consumer drains it and sleeps until the producer's.</p>\n",
            if worst < 1e-5 {
                "under 0.001%".to_string()
            } else {
                format!("{}%", kicklab_model::sig(100.0 * worst, kicklab_model::SHORT_DIGITS))
            }
        ),
    );
    h.push_str(&table.to_html());
    h.push_str(&format!("<p>With exponential costs the closed form of the means is no longer exact, most where the regime \
                hangs on a race: a start-up against the queue (SCS, SPS: some start-ups now fit, some do not), or a \
                bistable pair (EWC, EWP: a random cost knocks the pair off its costly point into FP or FC, and it stays \
                there).</p>\n<p>Reproduce a row: <code>kicklab model FLAGS</code> and <code>kicklab sim FLAGS</code>; \
                the exponential column: <code>{} ...</code> with each cost as <code>exp:MEAN</code>.</p>\n",
                CommandLine::new("sim").arg(Param::Wp, "exp:..").arg(Param::Wc, "exp:..")));
    Ok(Section {
        id: "regimes".into(),
        heading: "The regimes: model and simulator".into(),
        html: h,
        figures: vec![(
            "regime-timelines".into(),
            regime_timelines()?,
            "Two rounds of each regime's example, as the simulator ran them: what P and C did and the messages \
             in the queue"
                .into(),
        )],
        layout: kicklab_report::Layout::Summary,
    })
}

/// Rounds of each regime a panel shows.
const ROUNDS: u64 = 2;

/// A regime's meaning cut to its first clause where it is long: a panel's
/// title fits its width.
fn short_meaning(meaning: &str) -> &str {
    const FITS: usize = 80;
    if meaning.len() <= FITS {
        return meaning;
    }
    meaning.split("; ").next().unwrap_or(meaning)
}

/// One panel per regime example: the last [`ROUNDS`] rounds (m messages
/// each, or 8 messages where no party sleeps) of a run with constant
/// costs, from the simulator's own intervals.
fn regime_timelines() -> Result<String, LabError> {
    let mut runs = Vec::new();
    for (regime, p) in regime_examples() {
        let m = predict(&p, WaitMode::Notify)?;
        let round = m.round_messages.unwrap_or(8).max(1);
        let messages = (50 * round).clamp(400, 50_000);
        let t = kicklab_sim::timeline(&SimConfig::new(p, WaitMode::Notify, messages))?;
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let window = (ROUNDS as f64 * round as f64 * m.rates.t_ns * 1000.0) as u64;
        runs.push((regime, t, window));
    }
    let panels: Vec<kicklab_report::TimelinePanel> = runs
        .iter()
        .map(|(regime, t, window)| kicklab_report::TimelinePanel {
            title: format!("{}: {}", regime.name(), short_meaning(regime.meaning())),
            timeline: t,
            from_ps: t.end_ps.saturating_sub(*window),
            to_ps: t.end_ps,
        })
        .collect();
    Ok(kicklab_report::timeline_svg(&panels))
}

/// One of the paper's figures, drawn as a sweep.
pub(super) struct Figure {
    /// Anchor and file stem.
    pub(super) id: &'static str,
    /// Heading.
    pub(super) heading: &'static str,
    /// What it shows, in one or two sentences: the section's lead.
    pub(super) result: &'static str,
    /// How it was drawn and what else to see in it.
    pub(super) text: &'static str,
    /// The pair.
    pub(super) params: Params,
    /// The sweep (`--vary`).
    pub(super) vary: String,
}

/// The closed forms, as the model states them.
pub(super) fn closed_forms_section() -> Section {
    let rows = [
        ("GP", "-", "max(W_P, W_C) (W_P + W_C if L = 1)", "2 T"),
        (
            "FC",
            "floor((S_C + (k_P-1) W_C) / (W_P - W_C)) + k_P",
            "W_P + N_P / m",
            "W_P + W_C + (N_P + S_C) / m",
        ),
        (
            "FP",
            "floor((S_P + (k_C-1) W_P) / (W_C - W_P)) + k_C",
            "W_C + N_C / m",
            "W_P + W_C + (N_C + S_P) / m",
        ),
        (
            "SCS",
            "floor(((L-k_C) W_C - S_P - W_P) / (W_P - W_C)) + 1",
            "(ΣNS + k_C W_C + (m + k_P) W_P) / (L + m)",
            "W_P + W_C + ΣNS / (L + m)",
        ),
        (
            "SPS",
            "floor(((L-k_P) W_P - S_C - W_C) / (W_C - W_P)) + 1",
            "(ΣNS + k_P W_P + (m + k_C) W_C) / (L + m)",
            "W_P + W_C + ΣNS / (L + m)",
        ),
        (
            "SS",
            "-",
            "(ΣNS + k_P W_P + k_C W_C) / L",
            "W_P + W_C + ΣNS / L",
        ),
        (
            "EWC",
            "k_P",
            "W_P + N_P / k_P",
            "W_P + W_C + (N_P + S_C) / k_P",
        ),
        (
            "EWP",
            "k_C",
            "W_C + N_C / k_C",
            "W_P + W_C + (N_C + S_P) / k_C",
        ),
        ("lockstep", "-", "W_P (= W_C)", "2 W_P"),
    ];
    let mut h = format!(
        "<p>ΣNS = N_P + N_C + S_P + S_C. Derivations, the regime predicates and the symmetry argument are in \
         <code>docs/model.md</code>; the simulator reproduces every row to within 1e-6 (property tests over random \
         parameters). With kick visibility (the peer sees a notification V &le; N after it starts; <code>{}</code>, \
         <code>{}</code>) every S in the timing becomes the effective start-up S + V - N (E keeps S), and two regimes \
         appear: EWC and EWP, where the slower party is woken inside the faster one's notification, drains (fills) \
         the queue and sleeps again, so every k messages cost a whole notification. Such pairs can be bistable \
         (<code>kicklab model</code> prints the other operating point).</p>\n",
        Flag::Param(Param::Vp),
        Flag::Param(Param::Vc),
    );
    let mut table = Table::new(
        "closed forms",
        vec![
            Column::text("regime", "regime"),
            Column::text("m", "m"),
            Column::text("T", "T"),
            Column::text("E", "E"),
        ],
    );
    for (r, m, t, e) in rows {
        table.push(vec![r.into(), m.into(), t.into(), e.into()]);
    }
    h.push_str(&table.to_html());
    Section {
        id: "closed-forms".into(),
        heading: "Closed forms".into(),
        html: h,
        figures: vec![],
        layout: kicklab_report::Layout::Summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_regime_example_is_in_its_regime() {
        for (want, p) in regime_examples() {
            assert_eq!(
                predict(&p, WaitMode::Notify).unwrap().regime,
                want,
                "{}",
                p.flags(&[])
            );
        }
    }
}
