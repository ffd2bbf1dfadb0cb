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
use crate::regime::{classify, Predicates, Regime};
use crate::strategy::WaitMode;
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

/// Costs in picoseconds, as wide signed integers (effective start-ups can
/// be negative).
pub(crate) struct Ps {
    pub(crate) l: i128,
    pub(crate) k_p: i128,
    pub(crate) k_c: i128,
    pub(crate) w_p: i128,
    pub(crate) w_c: i128,
    pub(crate) n_p: i128,
    pub(crate) n_c: i128,
    pub(crate) s_p: i128,
    pub(crate) s_c: i128,
    pub(crate) v_p: i128,
    pub(crate) v_c: i128,
}

impl Ps {
    pub(crate) fn of(p: &Params) -> Ps {
        let ps = |c: crate::Cost| i128::from(to_ps(c.mean_ns()));
        let (n_p, n_c) = (ps(p.n_p), ps(p.n_c));
        Ps {
            l: i128::from(p.len),
            k_p: i128::from(p.k_p),
            k_c: i128::from(p.k_c),
            w_p: ps(p.w_p),
            w_c: ps(p.w_c),
            n_p,
            n_c,
            s_p: ps(p.s_p),
            s_c: ps(p.s_c),
            // V <= N is checked by `Params::validate` on the means; a drawn
            // V above the drawn N is cut to it.
            v_p: ps(p.vis_p()).min(n_p),
            v_c: ps(p.vis_c()).min(n_c),
        }
    }

    fn all_ns(&self) -> i128 {
        self.n_p + self.n_c + self.s_p + self.s_c
    }

    /// What follows P's notification: P notifies, C is woken.
    pub(crate) fn after_p_kick(&self) -> Half {
        Half {
            l: self.l,
            w_n: self.w_p,
            w_w: self.w_c,
            k_n: self.k_p,
            k_w: self.k_c,
            n: self.n_p,
            s: self.s_c + self.v_p - self.n_p,
        }
    }

    /// What follows C's notification: C notifies, P is woken.
    pub(crate) fn after_c_kick(&self) -> Half {
        Half {
            l: self.l,
            w_n: self.w_c,
            w_w: self.w_p,
            k_n: self.k_c,
            k_w: self.k_p,
            n: self.n_c,
            s: self.s_p + self.v_c - self.n_c,
        }
    }
}

/// The stretch from one notification to the next, seen from the notifier
/// (P after its kick, or C after its interrupt) and the woken party. The
/// state at a notification is always the same (`docs/model.md`, "Two
/// states"), so the pair is an automaton with two states and these
/// stretches are its edges.
pub(crate) struct Half {
    l: i128,
    /// The notifier's work per item (P: messages, C: free slots).
    w_n: i128,
    /// The woken party's work per item.
    w_w: i128,
    /// The notifier's threshold (k_P when P notifies).
    k_n: i128,
    /// The woken party's threshold.
    k_w: i128,
    /// The notifier's cost N.
    n: i128,
    /// The woken party's effective start-up: when it first acts, counted
    /// from the end of the notifier's N: `S + V - N` (may be negative).
    s: i128,
}

/// Where a [`Half`] leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Next {
    /// The woken party catches up and sleeps again; the notifier notifies
    /// again after `m` more items of its own. FC (FP) and, where the woken
    /// party is not the faster one but was woken early enough, EWC (EWP).
    Again { m: i128 },
    /// The notifier runs out of room (of messages) and sleeps; the woken
    /// party notifies it after `k_w + j` items. `j = 0` exactly when the
    /// woken party's start-up is slow (the paper's predicate).
    Cross { j: i128 },
    /// Nobody sleeps again: equal work and no catching up.
    Lockstep,
}

impl Half {
    /// The paper's short-queue predicate with the effective start-up:
    /// `s + W_w > (L - k_n) W_n`: the notifier fills (empties) the queue
    /// before the woken party's first item ends.
    pub(crate) fn slow_start(&self) -> bool {
        self.s + self.w_w > (self.l - self.k_n) * self.w_n
    }

    /// The woken party catches up with the notifier: it is faster, or it
    /// finishes the `k_n` waiting items before the notifier's next one
    /// (possible only if it started inside the notifier's N).
    fn catches_up(&self) -> bool {
        self.w_w < self.w_n || self.s + self.k_n * self.w_w < self.w_n
    }

    pub(crate) fn next(&self) -> Next {
        let slow = self.slow_start();
        if !slow && self.catches_up() {
            // Item k_n + j - 1 (the j-th after the notification) is ready
            // at N + j W_n; the woken party reaches it at
            // N + s + (k_n + j - 1) W_w. It takes it iff
            // s + (k_n - 1) W_w >= j (W_n - W_w): paper eq. (2) with s.
            let m = if self.w_n > self.w_w {
                let d = self.s + (self.k_n - 1) * self.w_w;
                self.k_n + if d > 0 { d / (self.w_n - self.w_w) } else { 0 }
            } else {
                self.k_n
            };
            return Next::Again { m };
        }
        if slow {
            return Next::Cross { j: 0 };
        }
        if self.w_n == self.w_w {
            return Next::Lockstep;
        }
        // W_n < W_w and the woken party never catches up: the notifier's
        // attempt i fails once i - frees(i W_n) = L - k_n; the first such i
        // is L - k_n + j with j the least integer above
        // ((L - k_n) W_n - s - W_w) / (W_w - W_n) (>= 0 when not slow).
        let num = (self.l - self.k_n) * self.w_n - self.s - self.w_w;
        Next::Cross {
            j: num / (self.w_w - self.w_n) + 1,
        }
    }

    /// Length of an `Again { m }` stretch: N + m W_n.
    fn again_len(&self, m: i128) -> i128 {
        self.n + m * self.w_n
    }

    /// Length of a `Cross { j }` stretch: N + s + (k_w + j) W_w.
    fn cross_len(&self, j: i128) -> i128 {
        self.n + self.s + (self.k_w + j) * self.w_w
    }
}

/// One operating point of the pair under notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cycle {
    /// P's kicks only (C sleeps): FC or EWC.
    P { m: i128 },
    /// C's notifications only (P sleeps): FP or EWP.
    C { m: i128 },
    /// Both: after P's kick P fills the queue (`j`), after C's C drains it
    /// (`j2`). SS, SCS, SPS.
    Both { j: i128, j2: i128 },
    /// No notifications in steady state.
    Lockstep,
}

impl Cycle {
    /// The operating point reached from a state just after P's
    /// notification (a start with an empty queue leads there) or, with
    /// `from_c`, just after C's (a start with a full queue).
    pub(crate) fn reached(q: &Ps, from_c: bool) -> Cycle {
        let (a, b) = (q.after_p_kick(), q.after_c_kick());
        let from_b = || match b.next() {
            Next::Again { m } => Cycle::C { m },
            Next::Lockstep => Cycle::Lockstep,
            Next::Cross { j: j2 } => match a.next() {
                Next::Again { m } => Cycle::P { m },
                Next::Lockstep => Cycle::Lockstep,
                Next::Cross { j } => Cycle::Both { j, j2 },
            },
        };
        if from_c {
            return from_b();
        }
        match a.next() {
            Next::Again { m } => Cycle::P { m },
            Next::Lockstep => Cycle::Lockstep,
            Next::Cross { .. } => from_b(),
        }
    }

    pub(crate) fn regime(self, q: &Ps) -> Regime {
        match self {
            Cycle::P { .. } if q.w_c < q.w_p => Regime::FC,
            Cycle::P { .. } => Regime::EWC,
            Cycle::C { .. } if q.w_p < q.w_c => Regime::FP,
            Cycle::C { .. } => Regime::EWP,
            Cycle::Both { j: 0, j2: 0 } => Regime::SS,
            Cycle::Both { j: 0, .. } => Regime::SCS,
            Cycle::Both { .. } => Regime::SPS,
            Cycle::Lockstep => Regime::Lockstep,
        }
    }

    /// The round of this cycle; `None` for lockstep.
    #[allow(clippy::cast_sign_loss, clippy::cast_possible_truncation)]
    fn round(self, q: &Ps) -> Option<Round> {
        let (a, b) = (q.after_p_kick(), q.after_c_kick());
        let (m, len, messages, kicks) = match self {
            Cycle::Lockstep => return None,
            Cycle::P { m } => (Some(m), a.again_len(m), m, [1, 0]),
            Cycle::C { m } => (Some(m), b.again_len(m), m, [0, 1]),
            Cycle::Both { j, j2 } => (
                // The paper's m: messages beyond L per round (eq. 3); SS has none.
                (j + j2 > 0).then_some(j + j2),
                a.cross_len(j) + b.cross_len(j2),
                q.l + j + j2,
                [1, 1],
            ),
        };
        // Busy time: every message costs W_P and W_C; every notification
        // costs its sender N and the woken party S (V only moves when S
        // starts).
        let [kp, kc] = kicks;
        Some(Round {
            m,
            len_ps: len,
            messages,
            busy_ps: [
                messages * q.w_p + kp * q.n_p + kc * q.s_p,
                messages * q.w_c + kc * q.n_c + kp * q.s_c,
            ],
            notifications: [kp as u64, kc as u64],
        })
    }
}

/// A periodic round: its length, its messages, the busy time of P and C in
/// it, and the notifications each party sends in it (each wakes the peer
/// once, so they are also the peer's sleeps).
struct Round {
    m: Option<i128>,
    len_ps: i128,
    messages: i128,
    busy_ps: [i128; 2],
    notifications: [u64; 2],
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
    let (empty, full) = (Cycle::reached(&q, false), Cycle::reached(&q, true));
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
}
