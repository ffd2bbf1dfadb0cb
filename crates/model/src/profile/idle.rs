//! How a party's start-up grows with the time it idled (the idle curve),
//! the naps' costs, and the start-ups' spread for the race model. What
//! does not live here: checking (`check`), the costs the model takes
//! (`apply`).

use crate::{Cost, IdleScale, Party};

use super::*;

impl Profile {
    /// A value of the idle curve at `idle_ns` of idling before the
    /// notification: `value` of the points, interpolated linearly in
    /// ln(gap) between the two measured gaps around `idle_ns`, and held
    /// at the first (last) point's below (above) the measured range.
    /// `None` without a curve.
    pub fn at_idle(&self, idle_ns: f64, value: impl Fn(&IdlePoint) -> f64) -> Option<f64> {
        let mut pts: Vec<&IdlePoint> = self
            .idle_curve
            .iter()
            .filter(|p| p.gap_ns > 0.0 && p.gap_ns.is_finite())
            .collect();
        pts.sort_by(|a, b| a.gap_ns.total_cmp(&b.gap_ns));
        let (first, last) = (pts.first()?, pts.last()?);
        if idle_ns.is_nan() || idle_ns <= first.gap_ns {
            return Some(value(first));
        }
        if idle_ns >= last.gap_ns {
            return Some(value(last));
        }
        let i = pts.partition_point(|p| p.gap_ns <= idle_ns);
        let (a, b) = (pts[i - 1], pts[i]);
        let f = (idle_ns.ln() - a.gap_ns.ln()) / (b.gap_ns.ln() - a.gap_ns.ln());
        Some(value(a) + f * (value(b) - value(a)))
    }

    /// The idle curve as the simulator's [`IdleScale`] of `party`'s
    /// start-up: at each point, the time from falling asleep to becoming
    /// runnable (the gap plus when the waking notification makes it
    /// runnable, [`IdlePoint::wakes_after`], means) against the factor of
    /// its S there over the profile's own S (means). Where that S was
    /// timed inside the reference pairs, the factors are over the curve's
    /// at the idle those pairs slept, so that the in-run S is what a sleep
    /// of that length pays. Points that would not make a curve (a factor
    /// <= 0, an idle time not above the previous one) are left out. `None`
    /// without a curve or with an S <= 0.
    pub fn idle_scale(&self, party: Party) -> Option<IdleScale> {
        let base = self.start(party).mean_ns;
        if base.is_nan() || base <= 0.0 {
            return None;
        }
        let mut pts: Vec<&IdlePoint> = self.idle_curve.iter().collect();
        pts.sort_by(|a, b| a.gap_ns.total_cmp(&b.gap_ns));
        let mut curve: Vec<(f64, f64)> = Vec::new();
        for q in pts {
            let idle = q.gap_ns + q.wakes_after(party).mean_ns.max(0.0);
            let factor = q.start(party).mean_ns / base;
            if factor > 0.0 && curve.last().is_none_or(|l| idle > l.0) {
                curve.push((idle, factor));
            }
        }
        curve.truncate(IdleScale::MAX_POINTS);
        let scale = IdleScale::new(&curve).ok()?;
        // An S timed inside the reference pairs was paid after their idle,
        // not the profile's gap: the curve scales it from there.
        let Some(from) = self.in_run_start_idle(party) else {
            return Some(scale);
        };
        let at = scale.factor(from.idle_ns + from.v_ns);
        if !(at.is_finite() && at > 0.0) {
            return Some(scale);
        }
        for point in &mut curve {
            point.1 /= at;
        }
        IdleScale::new(&curve).ok()
    }

    /// Where `party`'s start-up S comes from the in-run wake-ups of the
    /// reference pairs ([`InRunCosts`]): how long it idled per sleep in the
    /// one where it sleeps, as the model runs that pair with this
    /// profile's costs ([`REFERENCE_PAIR_NS`], [`crate::Prediction::sleeper_idle`]),
    /// and the V of the notification that woke it. `None` where S is the
    /// isolated one, or where the model has it not sleep in that pair.
    pub(super) fn in_run_start_idle(&self, party: Party) -> Option<ReferenceSleep> {
        let in_run = self.in_run.as_ref()?;
        let timed = match party {
            Party::P => in_run.rp.is_some(),
            Party::C => in_run.rc.is_some(),
        };
        if !timed {
            return None;
        }
        let (slow, fast) = REFERENCE_PAIR_NS;
        let (w_p, w_c) = match party {
            Party::P => (fast, slow),
            Party::C => (slow, fast),
        };
        let mut params = crate::Params {
            w_p: Cost::Const(w_p),
            w_c: Cost::Const(w_c),
            ..crate::Params::default()
        };
        self.apply_notify(&mut params, false);
        let pred = crate::predict(&params, crate::WaitMode::Notify).ok()?;
        let [p, c] = pred.sleeper_idle(&params);
        let (idle_ns, v) = match party {
            Party::P => (p?, params.vis_c()),
            Party::C => (c?, params.vis_p()),
        };
        Some(ReferenceSleep {
            idle_ns,
            v_ns: v.mean_ns(),
        })
    }

    /// The simulator's per-party costs beside Params: how each party's
    /// start-up scales with idle time ([`Profile::idle_scale`]) and what
    /// its naps cost ([`Profile::nap_cost`]), P's then C's.
    pub fn sim_costs(&self) -> ([Option<IdleScale>; 2], [Option<Cost>; 2]) {
        (
            [self.idle_scale(Party::P), self.idle_scale(Party::C)],
            [self.nap_cost(Party::P), self.nap_cost(Party::C)],
        )
    }

    /// What waking from a nap costs `party`, as the calibrated naps spread
    /// ([`Stat::as_cost`]: a log-normal of their mean and log-spread, a
    /// constant where they did not vary): its mean sets what naps cost a
    /// run's T, its tail how late a napping party can be, which a p99
    /// latency meets. `None` where [`Profile::nap_ns`] is.
    pub fn nap_cost(&self, party: Party) -> Option<Cost> {
        self.nap_ns(party)?;
        match party {
            Party::P => self.nap_p,
            Party::C => self.nap_c,
        }
        .map(|s| s.as_cost())
    }

    /// What waking from a nap costs `party`, the mean of its calibrated
    /// naps [ns]; `None` in profiles from before naps were measured.
    pub fn nap_ns(&self, party: Party) -> Option<f64> {
        match party {
            Party::P => self.nap_p,
            Party::C => self.nap_c,
        }
        .map(|s| s.mean_ns)
        .filter(|ns| ns.is_finite() && *ns >= 0.0)
    }

    /// The mean start-up of `party` ([`Profile::start`]) after idling
    /// `idle_ns` before the notification, from the idle curve
    /// ([`Profile::at_idle`]); `None` without a curve.
    pub fn start_at_idle(&self, party: Party, idle_ns: f64) -> Option<f64> {
        self.at_idle(idle_ns, |p| p.start(party).mean_ns)
    }

    /// The start-up S the model takes for `party` after idling a given
    /// time before the notification, where `s` is the one this profile
    /// gives it ([`Profile::apply_notify`]): an S timed inside the
    /// reference pairs is scaled along the idle curve from the idle it was
    /// paid after; else the curve's own S ([`Profile::start_at_idle`]).
    /// The lookup returns `None` without a curve. Where that idle is
    /// looked up once, here, not at every call (a fixed point calls it
    /// dozens of times).
    pub fn start_for_idle(&self, party: Party, s: f64) -> impl Fn(f64) -> Option<f64> + '_ {
        let paid_after = self
            .in_run_start_idle(party)
            .and_then(|from| self.start_at_idle(party, from.idle_ns))
            .filter(|at| *at > 0.0 && at.is_finite());
        move |idle_ns| {
            let there = self.start_at_idle(party, idle_ns)?;
            Some(paid_after.map_or(there, |at| s * there / at))
        }
    }

    /// The FC or FP point of `params` with the batch race drawn at this
    /// profile's spread ([`crate::predict_with_start_spread`] with
    /// [`Profile::start_spread`], from an empty queue); `None` where the
    /// profile has no spread or the point is not FC or FP.
    ///
    /// # Errors
    ///
    /// As [`crate::predict`].
    pub fn race_at(
        &self,
        params: &crate::Params,
        mode: crate::WaitMode,
    ) -> Result<Option<crate::RaceExpectation>, crate::ModelError> {
        let spread = self.start_spread();
        if spread.iter().all(|&s| s <= 0.0) {
            return Ok(None);
        }
        crate::predict_with_start_spread(params, mode, spread, false)
    }

    /// How much each party's effective start-up s (from the end of the
    /// peer's notification to the party's first attempt: R - N, what
    /// calibration prints as S) varies from one notification to the next,
    /// P's then C's [ns]: a normal's standard deviation with the spread
    /// of the calibrated samples between p10 and p90 (2.563 of them). Each
    /// sample times one notification and its wake-up together, so this is
    /// the spread of their difference, not of each alone. 0 where a
    /// profile's quantiles are not finite or are out of order.
    pub fn start_spread(&self) -> [f64; 2] {
        // p90 - p10 of a normal, in standard deviations: 2 z(0.9).
        const P10_TO_P90: f64 = 2.563_103;
        let sd = |s: &Stat| {
            let w = (s.p90_ns - s.p10_ns) / P10_TO_P90;
            if w.is_finite() && w > 0.0 {
                w
            } else {
                0.0
            }
        };
        [sd(&self.sp), sd(&self.sc)]
    }
}

/// The work of calibration's reference pairs [ns]: W_P and W_C of the one
/// in which C, the faster party, sleeps and P kicks it; its mirror swaps
/// them. Their kicks and wake-ups are a profile's [`InRunCosts`].
pub const REFERENCE_PAIR_NS: (f64, f64) = (2000.0, 1000.0);

/// How a party slept in the reference pair where it sleeps, in the model:
/// per sleep, its idle before the waking notification starts, and that
/// notification's V [ns].
pub(super) struct ReferenceSleep {
    pub(super) idle_ns: f64,
    pub(super) v_ns: f64,
}
