//! Closed forms for T (time per message) and E (busy time of both parties
//! per message) in every regime. Derivations: `docs/model.md`.
//!
//! Everything is computed on costs rounded to whole picoseconds, with the
//! batch sizes and the round lengths in exact integer arithmetic; only the
//! final division by the number of messages per round is floating point.
//! This is the same arithmetic the simulator's clock does, so with constant
//! costs the two agree to the last bit or two.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::cycle::{classify, Cycle, Ps, Round};
use crate::params::Params;
use crate::rates::Rates;
use crate::regime::{Predicates, Regime};
use crate::strategy::WaitMode;
use crate::time::PS_PER_NS;

/// What the model predicts for a parameter set.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    /// The regime.
    pub regime: Regime,
    /// T, E (split by party) and, over one round (one message without
    /// rounds), the notifications and sleeps of each party.
    #[serde(flatten)]
    pub rates: Rates,
    /// The paper's batch size m: messages per wake-up in FC/FP, and the
    /// messages beyond `L` per round in SCS/SPS (eq. 3). `None` where the
    /// paper defines none (GP, SS, lockstep).
    pub m: Option<u64>,
    /// Messages per notification round (`m` in FC/FP, `L + m` in SCS/SPS,
    /// `L` in SS); `None` without rounds (GP, lockstep).
    pub round_messages: Option<u64>,
    /// Length of one round [ns]; `None` without rounds.
    pub round_ns: Option<f64>,
    /// The two short-queue predicates.
    pub predicates: Predicates,
    /// The pair's other operating point, where it has two (V < N only):
    /// the one reached from a full queue. `None` where every start ends
    /// in the same place.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub other: Option<OperatingPoint>,
}

impl Prediction {
    /// How long each party idles per sleep before the notification that
    /// wakes it starts [ns], P's then C's: its share of the round that is
    /// not busy, divided by its sleeps, less the V of the waking
    /// notification (the sleeper is runnable V into it). `params` are the
    /// ones predicted with. `None` for a party that does not sleep, or
    /// without rounds.
    #[allow(clippy::cast_precision_loss)]
    pub fn sleeper_idle(&self, params: &crate::Params) -> [Option<f64>; 2] {
        let r = &self.rates;
        let Some(round_ns) = self.round_ns else {
            return [None, None];
        };
        let messages = r.messages.max(1) as f64;
        let idle = |sleeps: u64, busy_per_message: f64, v: crate::Cost| {
            (sleeps > 0).then(|| {
                ((round_ns - busy_per_message * messages) / sleeps as f64 - v.mean_ns()).max(0.0)
            })
        };
        [
            idle(r.sleeps_p, r.e_p_ns, params.vis_c()),
            idle(r.sleeps_c, r.e_c_ns, params.vis_p()),
        ]
    }
}

/// Why the model has no answer.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ModelError {
    /// The parameters are invalid.
    #[error(transparent)]
    Params(#[from] crate::ParamError),
    /// A strategy other than notify and poll (spins, timed sleeps, the
    /// adaptive schemes) has no closed form; simulate it.
    #[error("only notify and poll have closed forms (spins, timed sleeps and the adaptive strategies do not); simulate it")]
    NoClosedForm,
}

#[allow(clippy::cast_precision_loss)]
fn ns(ps: i128) -> f64 {
    ps as f64 / PS_PER_NS
}

/// Another operating point of the same pair: with V < N some pairs settle
/// in one of two cycles depending on history (`docs/model.md`,
/// "Bistability").
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OperatingPoint {
    /// Its regime.
    pub regime: Regime,
    /// T there [ns].
    #[serde(rename = "T_ns")]
    pub t_ns: f64,
    /// E there [ns].
    #[serde(rename = "E_ns")]
    pub e_ns: f64,
    /// Messages per round there.
    pub round_messages: Option<u64>,
}

/// Predicts regime, T, E and the batch size for `params` under `mode`.
///
/// The costs' means are used (for constant costs, the costs themselves).
/// Under notifications this is the operating point reached from an empty
/// queue (the simulator's start); [`Prediction::other`] is the one reached
/// from a full queue where it differs.
///
/// # Errors
///
/// [`ModelError::Params`] for invalid parameters; [`ModelError::NoClosedForm`]
/// for [`WaitMode::Spin`] with a budget > 0.
///
/// # Examples
///
/// ```
/// use kicklab_model::{predict, Params, Regime, WaitMode};
/// let gp = predict(&Params::default(), WaitMode::Poll).unwrap();
/// assert_eq!(gp.regime, Regime::GP);
/// assert_eq!(gp.rates.t_ns, 1100.0);
/// assert_eq!(gp.rates.e_ns, 2200.0);
/// ```
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
pub fn predict(params: &Params, mode: WaitMode) -> Result<Prediction, ModelError> {
    params.validate()?;
    let regime = classify(params, mode).ok_or(ModelError::NoClosedForm)?;
    let predicates = Predicates::of(params);
    let q = Ps::of(params);
    let finish = |regime: Regime, t_ps: f64, e_ps: [f64; 2], round: Option<&Round>| Prediction {
        regime,
        rates: Rates {
            t_ns: t_ps / PS_PER_NS,
            e_ns: (e_ps[0] + e_ps[1]) / PS_PER_NS,
            e_p_ns: e_ps[0] / PS_PER_NS,
            e_c_ns: e_ps[1] / PS_PER_NS,
            messages: round.map_or(1, |r| r.messages as u64),
            notifications_p: round.map_or(0, |r| r.notifications[0]),
            notifications_c: round.map_or(0, |r| r.notifications[1]),
            // Each notification wakes the peer from one sleep.
            sleeps_p: round.map_or(0, |r| r.notifications[1]),
            sleeps_c: round.map_or(0, |r| r.notifications[0]),
            latency_ns: None,
        },
        m: round.and_then(|r| r.m).map(|m| m as u64),
        round_messages: round.map(|r| r.messages as u64),
        round_ns: round.map(|r| ns(r.len_ps)),
        predicates,
        other: None,
    };
    if regime == Regime::GP {
        // With one slot there is no pipelining: the slot is held from
        // P's reserve (start of W_P) to C's free (end of W_C). Both
        // parties are busy (working or spinning) all the time.
        let t = if q.l == 1 {
            q.w_p + q.w_c
        } else {
            q.w_p.max(q.w_c)
        };
        return Ok(finish(regime, t as f64, [t as f64, t as f64], None));
    }
    let of_cycle = |c: Cycle| match c.round(&q) {
        Some(r) => {
            let per = |ps: i128| ps as f64 / r.messages as f64;
            finish(
                c.regime(&q),
                per(r.len_ps),
                [per(r.busy_ps[0]), per(r.busy_ps[1])],
                Some(&r),
            )
        }
        // Lockstep: after at most one round P and C move together.
        None => finish(
            Regime::Lockstep,
            q.w_p as f64,
            [q.w_p as f64, q.w_c as f64],
            None,
        ),
    };
    let (empty, full) = (Cycle::from_empty(&q), Cycle::reached(&q, true));
    let mut prediction = of_cycle(empty);
    if full != empty {
        let o = of_cycle(full);
        prediction.other = Some(OperatingPoint {
            regime: o.regime,
            t_ns: o.rates.t_ns,
            e_ns: o.rates.e_ns,
            round_messages: o.round_messages,
        });
    }
    Ok(prediction)
}

/// The model's point with the race in FC and FP batches taken as a
/// chance: what [`predict_with_start_spread`] returns.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RaceExpectation {
    /// The regime (FC or FP: the cycle the means give).
    pub regime: Regime,
    /// T [ns]: the expected round over the expected messages per round.
    #[serde(rename = "T_ns")]
    pub t_ns: f64,
    /// E [ns] (busy time, S counted as busy), P's and C's.
    #[serde(rename = "E_ns")]
    pub e_ns: f64,
    /// P's share of E [ns].
    #[serde(rename = "E_p_ns")]
    pub e_p_ns: f64,
    /// C's share of E [ns].
    #[serde(rename = "E_c_ns")]
    pub e_c_ns: f64,
    /// Expected messages per notification (the batch m; at least k).
    pub round_messages: f64,
    /// The standard deviations drawn with [ns], of s_P and s_C.
    pub spread_ns: [f64; 2],
}

/// The standard normal's upper tail, P(Z > z).
fn upper_tail(z: f64) -> f64 {
    0.5 * libm::erfc(z / std::f64::consts::SQRT_2)
}

/// E[floor(max(0, X) / delta)] for X ~ Normal(mean, sd), delta > 0: the
/// sum over j >= 1 of P(X >= j delta), term by term where the terms that
/// are neither 0 nor 1 are few, else by Euler-Maclaurin on its integral
/// (then delta is far below sd and the error far below a message).
#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss
)]
fn expected_steps(mean: f64, sd: f64, delta: f64) -> f64 {
    if sd <= 0.0 {
        return if mean > 0.0 {
            (mean / delta).floor()
        } else {
            0.0
        };
    }
    // Beyond 9 standard deviations a term is 0 or 1 to double precision.
    let lo = ((mean - 9.0 * sd) / delta).floor().max(1.0);
    let hi = ((mean + 9.0 * sd) / delta).ceil();
    if hi < lo {
        return 0.0;
    }
    if hi - lo > 1e5 {
        let z = mean / sd;
        let phi = (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let positive_part = mean * (1.0 - upper_tail(z)) + sd * phi;
        return (positive_part / delta - 0.5 * (1.0 - upper_tail(z))).max(0.0);
    }
    let (lo, hi) = (lo as u64, hi as u64);
    (lo - 1) as f64
        + (lo..=hi)
            .map(|j| upper_tail((j as f64 * delta - mean) / sd))
            .sum::<f64>()
}

/// The FC or FP point of `params` with the race inside each round taken as
/// a chance (`docs/model.md`, "The batch race"). In FC the consumer takes
/// the j-th message after P's kick iff its effective start-up s_C (from the
/// end of P's kick to C's first attempt: R_C - N_P) is at least
/// `j (W_P - W_C) - (k_P - 1) W_C`; where s_C is within a fraction of
/// `W_P - W_C` of a step, the means pick one batch size and a real pair,
/// whose s_C differs kick by kick, another. Here s_C is drawn afresh at
/// every kick from a normal with the calibrated mean (the model's) and
/// standard deviation `spread_ns[1]` (s_P and `spread_ns[0]` in FP), and
/// the round is the renewal one: `T = W_P + N_P / E[m]`, `E = W_P + W_C
/// + (N_P + S_C) / E[m]` (FP mirrored). With no spread this is
/// [`predict`]'s point.
///
/// `from_full` takes the point reached from a full queue (a bistable
/// pair's other one). `Ok(None)` where that point is not FC or FP (the
/// other cycles have no batch to draw: EWC/EWP take k, SS/SCS/SPS a fixed
/// crossing) or the mode is polling.
///
/// # Errors
///
/// As [`predict`].
#[allow(clippy::cast_precision_loss)]
pub fn predict_with_start_spread(
    params: &Params,
    mode: WaitMode,
    spread_ns: [f64; 2],
    from_full: bool,
) -> Result<Option<RaceExpectation>, ModelError> {
    params.validate()?;
    classify(params, mode).ok_or(ModelError::NoClosedForm)?;
    if mode != WaitMode::Notify {
        return Ok(None);
    }
    let q = Ps::of(params);
    let cycle = if from_full {
        Cycle::reached(&q, true)
    } else {
        Cycle::from_empty(&q)
    };
    let (half, sd_ns) = match cycle {
        Cycle::P { .. } if q.w_c < q.w_p => (q.after_p_kick(), spread_ns[1]),
        Cycle::C { .. } if q.w_p < q.w_c => (q.after_c_kick(), spread_ns[0]),
        _ => return Ok(None),
    };
    let f = |ps: i128| ps as f64;
    let margin = f(half.s + (half.k_n - 1) * half.w_w);
    let delta = f(half.w_n - half.w_w);
    let sd = sd_ns.max(0.0) * PS_PER_NS;
    let m = f(half.k_n) + expected_steps(margin, sd, delta);
    let per = |ps: i128| f(ps) / m / PS_PER_NS;
    let ns_of = |ps: i128| f(ps) / PS_PER_NS;
    let (e_p, e_c) = match cycle {
        Cycle::P { .. } => (ns_of(q.w_p) + per(q.n_p), ns_of(q.w_c) + per(q.s_c)),
        _ => (ns_of(q.w_p) + per(q.s_p), ns_of(q.w_c) + per(q.n_c)),
    };
    Ok(Some(RaceExpectation {
        regime: cycle.regime(&q),
        t_ns: ns_of(half.w_n) + per(half.n),
        e_ns: e_p + e_c,
        e_p_ns: e_p,
        e_c_ns: e_c,
        round_messages: m,
        spread_ns,
    }))
}

/// The paper's eq. (4) evaluated whatever the regime: the best case of SS,
/// drawn as the "T_SS" curve of Fig. 2 and "E_SS" of Fig. 3. Returns
/// `(T_ns, E_ns)`.
#[allow(clippy::cast_precision_loss)]
pub fn ss_formula(params: &Params) -> (f64, f64) {
    let q = Ps::of(params);
    let t = (q.k_p * q.w_p + q.k_c * q.w_c + q.all_ns()) as f64 / q.l as f64;
    let e = (q.l * (q.w_p + q.w_c) + q.all_ns()) as f64 / q.l as f64;
    (t / PS_PER_NS, e / PS_PER_NS)
}

/// The best case of SS (the paper's Fig. 2 "T_SS" curve): the infimum of
/// eq. (4) over all start-up costs that keep the pair in SS, `(T_ns, E_ns)`.
///
/// SS needs `S_C > (L - k_P) W_P - W_C` and `S_P > (L - k_C) W_C - W_P`;
/// putting those into eq. (4) the thresholds cancel:
/// `T > W_P + W_C + (N_P + N_C - W_P - W_C) / L` and
/// `E > W_P + W_C + (N_P + N_C + (L - k_P - 1) W_P + (L - k_C - 1) W_C) / L`.
/// The paper's text gives `W_P + W_C + (N_P + N_C) / L` for this curve,
/// which misses the `-(W_P + W_C) / L` term (`docs/model.md`). Start-up
/// costs are floored at 0, so for `L = 1` this is eq. (4) with `S = 0`.
#[allow(clippy::cast_precision_loss)]
pub fn ss_best_case(params: &Params) -> (f64, f64) {
    let q = Ps::of(params);
    let s_c = ((q.l - q.k_p) * q.w_p - q.w_c).max(0);
    let s_p = ((q.l - q.k_c) * q.w_c - q.w_p).max(0);
    let ns = q.n_p + q.n_c + s_p + s_c;
    let t = (q.k_p * q.w_p + q.k_c * q.w_c + ns) as f64 / q.l as f64;
    let e = (q.l * (q.w_p + q.w_c) + ns) as f64 / q.l as f64;
    (t / PS_PER_NS, e / PS_PER_NS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cost;

    fn c(ns: f64) -> Cost {
        Cost::Const(ns)
    }

    #[test]
    fn fc_matches_paper_eq2() {
        // W_P = 2 us, W_C = 1.1 us, S_C = 0.2 us, k_P = 1: m = floor(0.2/0.9) + 1 = 1.
        let p = Params {
            w_p: c(2000.0),
            ..Params::default()
        };
        let r = predict(&p, WaitMode::Notify).unwrap();
        assert_eq!(r.regime, Regime::FC);
        assert_eq!(r.m, Some(1));
        assert!((r.rates.t_ns - (2000.0 + 2400.0)).abs() < 1e-9);
        assert!((r.rates.e_ns - (2000.0 + 1100.0 + 2400.0 + 200.0)).abs() < 1e-9);
    }

    #[test]
    fn fp_is_fc_mirrored() {
        let p = Params {
            w_p: c(700.0),
            ..Params::default()
        };
        let fp = predict(&p, WaitMode::Notify).unwrap();
        let fc = predict(&p.mirrored(), WaitMode::Notify).unwrap();
        assert_eq!(fp.regime, Regime::FP);
        assert_eq!(fc.regime, Regime::FC);
        assert_eq!(
            (fp.rates.t_ns, fp.rates.e_ns, fp.m),
            (fc.rates.t_ns, fc.rates.e_ns, fc.m)
        );
        // m = floor((3.9 + 0) / 0.4) + 1 = 10; T = W_C + N_C / m.
        assert_eq!(fp.m, Some(10));
        assert!((fp.rates.t_ns - (1100.0 + 200.0 / 10.0)).abs() < 1e-9);
    }

    #[test]
    fn ss_matches_paper_eq4() {
        let p = Params {
            len: 2,
            s_c: c(5000.0),
            ..Params::default()
        };
        let r = predict(&p, WaitMode::Notify).unwrap();
        assert_eq!(r.regime, Regime::SS);
        let t = (1000.0 + 1100.0 + 2400.0 + 3900.0 + 200.0 + 5000.0) / 2.0;
        assert!((r.rates.t_ns - t).abs() < 1e-9);
        assert_eq!(ss_formula(&p).0, r.rates.t_ns);
    }

    #[test]
    fn scs_with_m_zero_would_be_ss() {
        // The SCS round with m = 0 is the SS round: the two forms meet at the
        // SCS/SS boundary.
        let mut p = Params {
            len: 4,
            w_p: c(2000.0),
            w_c: c(1000.0),
            s_c: c(9000.0),
            s_p: c(0.0),
            ..Params::default()
        };
        // (L - k_C) W_C - (S_P + W_P) = 3000 - 2000 = 1000; m = 1000/1000 + 1 = 2.
        let r = predict(&p, WaitMode::Notify).unwrap();
        assert_eq!(r.regime, Regime::SCS);
        assert_eq!(r.m, Some(2));
        assert_eq!(r.round_messages, Some(6));
        p.s_p = c(1000.0 + 0.001); // just past the boundary: SS
        assert_eq!(predict(&p, WaitMode::Notify).unwrap().regime, Regime::SS);
    }

    #[test]
    fn ss_best_case_bounds_every_ss_point() {
        let base = Params {
            len: 8,
            ..Params::default()
        };
        let (t_best, e_best) = ss_best_case(&base);
        let want = 1000.0 + 1100.0 + (2400.0 + 200.0 - 1000.0 - 1100.0) / 8.0;
        assert!((t_best - want).abs() < 1e-9, "{t_best} vs {want}");
        // Any S_P, S_C deep enough in SS gives a larger T and E, and just past
        // the boundary the gap is below a picosecond per message.
        for (s_p, s_c) in [(9000.0, 9000.0), (20_000.0, 7000.0)] {
            let p = Params {
                s_p: c(s_p),
                s_c: c(s_c),
                ..base
            };
            let r = predict(&p, WaitMode::Notify).unwrap();
            assert_eq!(r.regime, Regime::SS);
            assert!(r.rates.t_ns > t_best && r.rates.e_ns > e_best);
        }
        let edge = Params {
            s_c: c(7000.0 - 1100.0 + 0.001),
            s_p: c(7700.0 - 1000.0 + 0.001),
            ..base
        };
        let r = predict(&edge, WaitMode::Notify).unwrap();
        assert_eq!(r.regime, Regime::SS);
        assert!(r.rates.t_ns - t_best < 1e-3 && r.rates.t_ns > t_best);
    }

    #[test]
    fn poll_with_one_slot_does_not_pipeline() {
        let p = Params {
            len: 1,
            ..Params::default()
        };
        let r = predict(&p, WaitMode::Poll).unwrap();
        assert_eq!(r.rates.t_ns, 2100.0);
    }

    #[test]
    fn spin_is_refused() {
        assert_eq!(
            predict(&Params::default(), WaitMode::Spin { budget_ns: 5.0 }).unwrap_err(),
            ModelError::NoClosedForm
        );
    }

    /// An FC pair near a step of its batch (the KVM guest-produces shape:
    /// C woken inside P's kick, s_C = S_C + V_P - N_P = -0.1 us, W_P - W_C
    /// = 0.2 us).
    fn near_a_step() -> Params {
        Params {
            w_p: c(1300.0),
            w_c: c(1100.0),
            n_p: c(11_000.0),
            v_p: Some(c(6000.0)),
            s_c: c(4900.0),
            s_p: c(20_000.0),
            n_c: c(700.0),
            ..Params::default()
        }
    }

    #[test]
    fn with_no_spread_the_race_is_the_models_point() {
        let fc = near_a_step();
        for p in [
            fc,
            fc.mirrored(),
            Params::default(),
            Params {
                w_p: c(700.0),
                ..Params::default()
            },
        ] {
            let m = predict(&p, WaitMode::Notify).unwrap();
            let r = predict_with_start_spread(&p, WaitMode::Notify, [0.0, 0.0], false)
                .unwrap()
                .unwrap();
            assert_eq!(r.regime, m.regime);
            assert!((r.t_ns - m.rates.t_ns).abs() < 1e-9, "{r:?} vs {m:?}");
            assert!((r.e_ns - m.rates.e_ns).abs() < 1e-9);
            assert!((r.e_p_ns - m.rates.e_p_ns).abs() < 1e-9);
            #[allow(clippy::cast_precision_loss)]
            let n = m.round_messages.unwrap() as f64;
            assert_eq!(r.round_messages, n);
        }
    }

    #[test]
    fn the_race_is_drawn_only_in_fc_and_fp_batches() {
        let ss = Params {
            len: 2,
            s_c: c(5000.0),
            ..Params::default()
        };
        assert_eq!(predict(&ss, WaitMode::Notify).unwrap().regime, Regime::SS);
        // EWC: C is not faster, yet woken inside P's kick; its batch is k_P.
        let ewc = Params {
            w_p: c(600.0),
            s_c: c(3000.0),
            ..near_a_step()
        };
        assert_eq!(predict(&ewc, WaitMode::Notify).unwrap().regime, Regime::EWC);
        for p in [ss, ewc] {
            let r = predict_with_start_spread(&p, WaitMode::Notify, [500.0, 500.0], false);
            assert_eq!(r, Ok(None));
        }
        let poll = predict_with_start_spread(&near_a_step(), WaitMode::Poll, [500.0; 2], false);
        assert_eq!(poll, Ok(None));
    }

    /// A round by round draw of the same thing: s_C normal per kick, the
    /// batch the rule gives for it, T = all rounds' time over all their
    /// messages.
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    fn drawn_rounds(p: &Params, sd: f64, rounds: u32) -> (f64, f64) {
        let (n, w_p, w_c) = (p.n_p.mean_ns(), p.w_p.mean_ns(), p.w_c.mean_ns());
        let s = p.s_c.mean_ns() + p.vis_p().mean_ns() - n;
        // xorshift64* and Box-Muller: a fixed stream, no dependency.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut uniform = || {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            ((x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        };
        let (mut time, mut messages) = (0.0, 0.0);
        for _ in 0..rounds {
            let z = (-2.0 * uniform().ln()).sqrt() * (2.0 * std::f64::consts::PI * uniform()).cos();
            let drawn = s + sd * z;
            let m = 1.0
                + if drawn > 0.0 {
                    (drawn / (w_p - w_c)).floor()
                } else {
                    0.0
                };
            time += n + m * w_p;
            messages += m;
        }
        (time / messages, messages / f64::from(rounds))
    }

    #[test]
    fn the_drawn_race_is_the_mean_of_rounds_drawn_one_by_one() {
        let p = near_a_step();
        for sd in [100.0, 400.0, 1500.0] {
            let r = predict_with_start_spread(&p, WaitMode::Notify, [0.0, sd], false)
                .unwrap()
                .unwrap();
            let (t, m) = drawn_rounds(&p, sd, 400_000);
            assert!(
                (r.t_ns / t - 1.0).abs() < 0.005,
                "sd {sd}: {} vs {t}",
                r.t_ns
            );
            assert!(
                (r.round_messages / m - 1.0).abs() < 0.005,
                "sd {sd}: {r:?} vs {m}"
            );
        }
        // The means put every batch at one message (s_C < 0); drawn, a
        // share of the kicks carry more, so T falls.
        let means = predict(&p, WaitMode::Notify).unwrap();
        assert_eq!(means.m, Some(1));
        let drawn = predict_with_start_spread(&p, WaitMode::Notify, [0.0, 400.0], false)
            .unwrap()
            .unwrap();
        assert!(drawn.round_messages > 1.2 && drawn.t_ns < 0.9 * means.rates.t_ns);
    }

    #[test]
    fn the_many_step_sum_and_its_integral_agree_at_the_switch() {
        // Where more than 1e5 terms lie between 0 and 1 the sum is taken by
        // its integral; either side of the switch the two agree.
        #[allow(clippy::cast_precision_loss)]
        let summed = |mean: f64, sd: f64, delta: f64| {
            (1..2_000_000u64)
                .map(|j| upper_tail((j as f64 * delta - mean) / sd))
                .sum::<f64>()
        };
        for (mean, sd) in [(0.0, 5.6e4), (3e5, 5.6e4), (-1e5, 5.6e4)] {
            let delta = 1.0;
            let fast = expected_steps(mean, sd, delta);
            let want = summed(mean, sd, delta);
            assert!(
                (fast - want).abs() < 1e-3 * want.max(1.0),
                "{mean}: {fast} vs {want}"
            );
        }
        assert_eq!(expected_steps(350.0, 0.0, 100.0), 3.0);
        assert_eq!(expected_steps(-5.0, 0.0, 100.0), 0.0);
    }
}
