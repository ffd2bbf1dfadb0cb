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

use crate::params::Params;
use crate::rates::Rates;
use crate::regime::{classify, Predicates, Regime, WaitMode};
use crate::time::{to_ps, PS_PER_NS};

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
}

/// Why the model has no answer.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ModelError {
    /// The parameters are invalid.
    #[error(transparent)]
    Params(#[from] crate::ParamError),
    /// Spin-then-sleep with a budget > 0 has no closed form; simulate it.
    #[error("spin-then-sleep has no closed form (the model covers notify and poll); simulate it")]
    NoClosedForm,
}

/// Costs in picoseconds, as wide integers.
struct Ps {
    l: u128,
    k_p: u128,
    k_c: u128,
    w_p: u128,
    w_c: u128,
    n_p: u128,
    n_c: u128,
    s_p: u128,
    s_c: u128,
}

impl Ps {
    fn of(p: &Params) -> Ps {
        let ps = |c: crate::Cost| u128::from(to_ps(c.mean_ns()));
        Ps {
            l: u128::from(p.len),
            k_p: u128::from(p.k_p),
            k_c: u128::from(p.k_c),
            w_p: ps(p.w_p),
            w_c: ps(p.w_c),
            n_p: ps(p.n_p),
            n_c: ps(p.n_c),
            s_p: ps(p.s_p),
            s_c: ps(p.s_c),
        }
    }
    fn all_ns(&self) -> u128 {
        self.n_p + self.n_c + self.s_p + self.s_c
    }
}

/// A periodic round: its length, its messages, the busy time of P and C in
/// it, and the notifications each party sends in it (each wakes the peer
/// once, so they are also the peer's sleeps).
struct Round {
    m: Option<u128>,
    len_ps: u128,
    messages: u128,
    busy_ps: [u128; 2],
    notifications: [u64; 2],
}

impl Round {
    /// The same round with P and C swapped (FP from FC, SPS from SCS).
    fn mirrored(self) -> Round {
        let [p, c] = self.busy_ps;
        let [np, nc] = self.notifications;
        Round {
            busy_ps: [c, p],
            notifications: [nc, np],
            ..self
        }
    }
}

#[allow(clippy::cast_precision_loss)]
fn ns(ps: u128) -> f64 {
    ps as f64 / PS_PER_NS
}

/// Predicts regime, T, E and the batch size for `params` under `mode`.
///
/// The costs' means are used (for constant costs, the costs themselves).
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
#[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
pub fn predict(params: &Params, mode: WaitMode) -> Result<Prediction, ModelError> {
    params.validate()?;
    let regime = classify(params, mode).ok_or(ModelError::NoClosedForm)?;
    let predicates = Predicates::of(params);
    let q = Ps::of(params);
    let finish = |t_ps: f64, e_ps: [f64; 2], round: Option<&Round>| Prediction {
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
    };
    let from_round = |r: Round| {
        let per = |ps: u128| ps as f64 / r.messages as f64;
        finish(
            per(r.len_ps),
            [per(r.busy_ps[0]), per(r.busy_ps[1])],
            Some(&r),
        )
    };
    Ok(match regime {
        Regime::GP => {
            // With one slot there is no pipelining: the slot is held from
            // P's reserve (start of W_P) to C's free (end of W_C). Both
            // parties are busy (working or spinning) all the time.
            let t = if q.l == 1 {
                q.w_p + q.w_c
            } else {
                q.w_p.max(q.w_c)
            };
            finish(t as f64, [t as f64, t as f64], None)
        }
        Regime::Lockstep => finish(q.w_p as f64, [q.w_p as f64, q.w_c as f64], None),
        Regime::FC => from_round(fast_round(q.w_p, q.w_c, q.k_p, q.n_p, q.s_c)),
        Regime::FP => from_round(fast_round(q.w_c, q.w_p, q.k_c, q.n_c, q.s_p).mirrored()),
        Regime::SCS => from_round(slow_startup_round(&q, q.w_p, q.w_c, q.k_p, q.k_c, q.s_p)),
        Regime::SPS => from_round(slow_startup_round(&q, q.w_c, q.w_p, q.k_c, q.k_p, q.s_c)),
        Regime::SS => from_round(Round {
            m: None,
            len_ps: q.k_p * q.w_p + q.k_c * q.w_c + q.all_ns(),
            messages: q.l,
            busy_ps: [q.l * q.w_p + q.n_p + q.s_p, q.l * q.w_c + q.n_c + q.s_c],
            notifications: [1, 1],
        }),
    })
}

/// FC, and FP by symmetry. `slow`/`fast` are the work of the slow and the
/// fast party, `k` the slow party's threshold, `n` its notification cost and
/// `s` the fast party's start-up cost. Paper eq. (2):
/// `m = floor((s + (k - 1) W_fast) / (W_slow - W_fast)) + k`.
///
/// The round is returned as FC's (P slow, C fast); FP mirrors it.
fn fast_round(slow: u128, fast: u128, k: u128, n: u128, s: u128) -> Round {
    let m = (s + (k - 1) * fast) / (slow - fast) + k;
    Round {
        m: Some(m),
        len_ps: m * slow + n,
        messages: m,
        busy_ps: [m * slow + n, m * fast + s],
        notifications: [1, 0],
    }
}

/// SCS, and SPS by symmetry. `slow`/`fast` as in [`fast_round`]; `k_slow`
/// is the slow party's threshold, `k_fast` the fast party's, `s_slow` the
/// slow party's start-up cost. Paper eq. (3):
/// `m = floor(((L - k_fast) W_fast - (s_slow + W_slow)) / (W_slow - W_fast)) + 1`;
/// a round holds `L + m` messages and lasts
/// `N_P + N_C + S_P + S_C + k_fast W_fast + (m + k_slow) W_slow`.
fn slow_startup_round(
    q: &Ps,
    slow: u128,
    fast: u128,
    k_slow: u128,
    k_fast: u128,
    s_slow: u128,
) -> Round {
    // Not slow-startup on the slow side (the regime guarantees it), so the
    // numerator is >= 0 and m >= 1.
    let m = ((q.l - k_fast) * fast - (s_slow + slow)) / (slow - fast) + 1;
    let messages = q.l + m;
    Round {
        m: Some(m),
        len_ps: q.all_ns() + k_fast * fast + (m + k_slow) * slow,
        messages,
        busy_ps: [
            messages * q.w_p + q.n_p + q.s_p,
            messages * q.w_c + q.n_c + q.s_c,
        ],
        notifications: [1, 1],
    }
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
    let s_c = ((q.l - q.k_p) * q.w_p).saturating_sub(q.w_c);
    let s_p = ((q.l - q.k_c) * q.w_c).saturating_sub(q.w_p);
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
}
