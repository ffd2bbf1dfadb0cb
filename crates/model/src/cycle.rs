//! The pair's exact cycle under notifications: its costs in whole
//! picoseconds ([`Ps`]), the stretch from one notification to the next
//! ([`Half`]), the operating point it settles in ([`Cycle`]) and one
//! periodic round of it ([`Round`]); and from them the one regime
//! classifier ([`classify`], paper Table 1), used by the model, the
//! simulator's reports and the testbeds alike. What does not live here:
//! the regimes' types (`regime`), T and E from a round (`closed_form`).

use crate::params::Params;
use crate::regime::{Predicates, Regime};
use crate::strategy::WaitMode;
use crate::time::to_ps;

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

    pub(crate) fn all_ns(&self) -> i128 {
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
            notifier_first: true,
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
            notifier_first: false,
        }
    }
}

/// The stretch from one notification to the next, seen from the notifier
/// (P after its kick, or C after its interrupt) and the woken party. The
/// state at a notification is always the same (`docs/model.md`, "Two
/// states"), so the pair is an automaton with two states and these
/// stretches are its edges.
pub(crate) struct Half {
    pub(crate) l: i128,
    /// The notifier's work per item (P: messages, C: free slots).
    pub(crate) w_n: i128,
    /// The woken party's work per item.
    pub(crate) w_w: i128,
    /// The notifier's threshold (k_P when P notifies).
    pub(crate) k_n: i128,
    /// The woken party's threshold.
    pub(crate) k_w: i128,
    /// The notifier's cost N.
    pub(crate) n: i128,
    /// The woken party's effective start-up: when it first acts, counted
    /// from the end of the notifier's N: `S + V - N` (may be negative).
    pub(crate) s: i128,
    /// Whether the notifier's attempts go before the woken party's at an
    /// instant (P's do: it is P that notifies here).
    pub(crate) notifier_first: bool,
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
            if self.w_n == 0 {
                // No work on either side, and both attempt at the end of
                // N (s = 0). P goes first: it fills the queue and yields
                // to C, which drains it and sleeps (the yielded attempt
                // does not hold it back); then P publishes k_P and
                // notifies. After P's kick that is a round of L
                // messages, after C's a cross to P's kick with C's k_C
                // freed slots refilled on the way.
                return if self.notifier_first {
                    Next::Again { m: self.l }
                } else {
                    Next::Cross { j: self.k_n }
                };
            }
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
    /// The operating point a start with an empty queue reaches (both
    /// parties attempting at t = 0). Where P's work takes no time, P fills
    /// the queue at t = 0 before C's first claim (P goes first among the
    /// attempts at an instant, and each of its messages is published at
    /// the instant it is reserved, before any claim), then sleeps: the
    /// start with a full queue. Unless C's work takes no time either: then
    /// P's failed reserve yields to C's claim, C drains the queue at t = 0
    /// and sleeps, and P notifies it after k_P messages (the state after
    /// P's notification, as with work).
    pub(crate) fn from_empty(q: &Ps) -> Cycle {
        Cycle::reached(q, q.w_p == 0 && q.w_c > 0)
    }

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
    pub(crate) fn round(self, q: &Ps) -> Option<Round> {
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
pub(crate) struct Round {
    pub(crate) m: Option<i128>,
    pub(crate) len_ps: i128,
    pub(crate) messages: i128,
    pub(crate) busy_ps: [i128; 2],
    pub(crate) notifications: [u64; 2],
}

impl Predicates {
    /// Evaluates both predicates on the means of the costs.
    pub fn of(p: &Params) -> Predicates {
        let q = Ps::of(p);
        Predicates {
            slow_consumer_startup: q.after_p_kick().slow_start(),
            slow_producer_startup: q.after_c_kick().slow_start(),
        }
    }
}

/// The regime the pair settles in from an empty queue (the simulator's
/// start), from the means of its costs. With kick visibility (V < N) some
/// pairs have a second operating point, reached from a full queue
/// ([`crate::Prediction::other`]).
///
/// Returns `None` for [`WaitMode::Spin`] with a budget > 0 and for the
/// strategies beyond notify, poll and spin, which have no closed-form
/// regime (the simulator measures them). `Spin` with budget 0 is
/// `Notify`. `params` must be valid ([`Params::validate`]).
///
/// # Examples
///
/// ```
/// use kicklab_model::{classify, Cost, Params, Regime, WaitMode};
/// let p = Params { len: 4, w_p: Cost::Const(500.0), ..Params::default() };
/// assert_eq!(classify(&p, WaitMode::Notify), Some(Regime::SPS));
/// assert_eq!(classify(&p, WaitMode::Poll), Some(Regime::GP));
/// ```
pub fn classify(params: &Params, mode: WaitMode) -> Option<Regime> {
    match mode {
        WaitMode::Poll => return Some(Regime::GP),
        WaitMode::Spin { budget_ns } if to_ps(budget_ns) > 0 => return None,
        WaitMode::Notify | WaitMode::Spin { .. } => {}
        _ => return None,
    }
    let q = Ps::of(params);
    Some(Cycle::from_empty(&q).regime(&q))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Cost;

    fn p(len: u32, w_p: f64, w_c: f64, s_p: f64, s_c: f64) -> Params {
        Params {
            len,
            w_p: Cost::Const(w_p),
            w_c: Cost::Const(w_c),
            s_p: Cost::Const(s_p),
            s_c: Cost::Const(s_c),
            ..Params::default()
        }
    }

    #[test]
    fn table_one() {
        let n = WaitMode::Notify;
        assert_eq!(
            classify(&p(256, 2000.0, 1100.0, 3900.0, 200.0), n),
            Some(Regime::FC)
        );
        assert_eq!(
            classify(&p(256, 500.0, 1100.0, 3900.0, 200.0), n),
            Some(Regime::FP)
        );
        assert_eq!(
            classify(&p(4, 2000.0, 1100.0, 100.0, 9000.0), n),
            Some(Regime::SCS)
        );
        assert_eq!(
            classify(&p(4, 500.0, 1100.0, 3900.0, 200.0), n),
            Some(Regime::SPS)
        );
        assert_eq!(
            classify(&p(2, 1000.0, 1100.0, 3900.0, 3900.0), n),
            Some(Regime::SS)
        );
        assert_eq!(
            classify(&p(256, 1100.0, 1100.0, 3900.0, 200.0), n),
            Some(Regime::Lockstep)
        );
        assert_eq!(
            classify(&p(1, 1100.0, 1100.0, 0.0, 0.0), n),
            Some(Regime::SS)
        );
    }

    #[test]
    fn boundary_is_exact() {
        // S_C + W_C == (L - k_P) W_P exactly: not slow (the free at the
        // instant of P's reserve attempt is seen first).
        let q = p(3, 1100.0, 1000.0, 0.0, 1200.0);
        assert!(!Predicates::of(&q).slow_consumer_startup);
        let q = p(3, 1100.0, 1000.0, 0.0, 1200.001);
        assert!(Predicates::of(&q).slow_consumer_startup);
    }

    #[test]
    fn spin_has_no_closed_form_regime_unless_zero_budget() {
        let q = Params::default();
        assert_eq!(classify(&q, WaitMode::Spin { budget_ns: 10.0 }), None);
        assert_eq!(
            classify(&q, WaitMode::Spin { budget_ns: 0.0 }),
            classify(&q, WaitMode::Notify)
        );
    }
}
