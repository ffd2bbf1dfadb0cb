//! [`Forecast`]: what a real pair will do, as a central value with a band
//! and its operating points, from the pair's parameters and a calibrated
//! profile alone (no measurement is looked at). What lives here: the band
//! over the calibrated spread of each cost, the operating points and
//! knife-edges, and judging a forecast against measured repetitions
//! ([`Judged`]). What does not: running the pair (`validate`, `real`) or
//! reading recordings (`replay`).
//!
//! The band: the closed form evaluated at every corner of the calibrated
//! spread, each of N_P, N_C, S_P, S_C, V_P, V_C and the ring's cost per
//! message (both parties' together) at its 10th and at its 90th
//! percentile (shifted from the value the model takes by the profile's own
//! p10 - median and p90 - median, never below 0), 2^7 corners. Every operating point the closed form names at a corner
//! (the regime it classifies, and the other one where the pair is
//! bistable) is kept. A forecast whose corners name more than one
//! operating point is a **knife-edge**: the real pair may sit in either,
//! or move between them, and its band spans them all. A regime whose T
//! moves by more than [`WIDE`] across the corners (its rounds are one
//! message at some and dozens at others) is two operating points, its
//! cheapest and its dearest corner. The central value
//! is the simulator's T from an empty queue with the costs drawn from the
//! profile's spread: the pair's own mixture of its operating points; each
//! point's `share` is the fraction of the simulated messages that the
//! mixture puts there (1 for a single point).

use kicklab_model::{predict, Cost, Params, Profile, Regime, Stat, WaitMode};
use kicklab_sim::{simulate, SimConfig, Start};
use serde::Serialize;

use crate::LabError;

/// Messages the simulator runs for a forecast's central value.
pub const SIM_MESSAGES: u64 = 200_000;

/// A regime whose corners' T span more than this factor is two operating
/// points: the spread of repetitions the judge calls wide
/// ([`Verdict::wide_points`]).
pub const WIDE: f64 = 2.0;

/// One operating point of a pair: a regime and its T and E.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OperatingPoint {
    /// The regime's short name (`FP`, `FC`, `EWC`, ...).
    pub name: String,
    /// Time per message there [ns] (at the profile's typical costs).
    #[serde(rename = "T_ns")]
    pub t_ns: f64,
    /// CPU per message there [ns].
    #[serde(rename = "E_ns")]
    pub e_ns: f64,
    /// The share of messages the simulated pair spends there (0 to 1).
    pub share: f64,
    /// Messages per round there (`None` where the regime has no rounds).
    pub round_messages: Option<u64>,
}

/// A forecast of one pair; see the module doc.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Forecast {
    /// Central time per message [ns].
    #[serde(rename = "T_ns")]
    pub t_ns: f64,
    /// Central CPU per message [ns].
    #[serde(rename = "E_ns")]
    pub e_ns: f64,
    /// T's band [ns]: every corner's operating points.
    #[serde(rename = "T_band_ns")]
    pub t_band_ns: [f64; 2],
    /// E's band [ns].
    #[serde(rename = "E_band_ns")]
    pub e_band_ns: [f64; 2],
    /// The operating points the corners name, cheapest T first.
    pub operating_points: Vec<OperatingPoint>,
    /// More than one operating point within the calibrated spread.
    pub knife_edge: bool,
}

impl Forecast {
    /// The band's width over the central T.
    #[must_use]
    pub fn sharpness(&self) -> f64 {
        (self.t_band_ns[1] - self.t_band_ns[0]) / self.t_ns
    }

    /// Whether `t_ns` lies in the T band.
    #[must_use]
    pub fn covers(&self, t_ns: f64) -> bool {
        (self.t_band_ns[0]..=self.t_band_ns[1]).contains(&t_ns)
    }

    /// One line for a table: `36.1us [33.0us, 38.2us]`, with both points
    /// of a knife-edge.
    #[must_use]
    pub fn describe(&self) -> String {
        let f = kicklab_model::fmt_ns;
        let mut s = format!(
            "{} [{}, {}]",
            f(self.t_ns),
            f(self.t_band_ns[0]),
            f(self.t_band_ns[1])
        );
        if self.knife_edge {
            let pts: Vec<String> = self
                .operating_points
                .iter()
                .map(|o| {
                    let twice = self
                        .operating_points
                        .iter()
                        .filter(|p| p.name == o.name)
                        .count()
                        > 1;
                    match o.round_messages {
                        Some(1) if twice => format!("{} {} (a kick a message)", o.name, f(o.t_ns)),
                        Some(m) if twice => format!("{} {} ({m} a round)", o.name, f(o.t_ns)),
                        _ => format!("{} {}", o.name, f(o.t_ns)),
                    }
                })
                .collect();
            s.push_str(&format!(" knife-edge: {}", pts.join(" or ")));
        }
        s
    }
}

/// The shift of a cost from its typical value to its 10th and 90th
/// percentiles, as the profile measured it.
fn shifts(s: &Stat) -> [f64; 2] {
    [s.p10_ns - s.median_ns, s.p90_ns - s.median_ns]
}

fn shifted(c: Cost, by: f64) -> Cost {
    Cost::Const((c.mean_ns() + by).max(0.0))
}

/// Forecasts the notify pair `pair` (its work and queue; its N, S and V
/// replaced by `profile`'s) with `seed` for the simulator's draws.
///
/// # Errors
///
/// Parameters that make no pair ([`LabError::Model`], [`LabError::Sim`]).
pub fn forecast(pair: &Params, profile: &Profile, seed: u64) -> Result<Forecast, LabError> {
    let mut typical = *pair;
    profile.apply_notify(&mut typical, false);
    let zero = Stat::constant(0.0);
    let ring = [
        profile.overhead_p.as_ref().or(profile.overhead.as_ref()),
        profile.overhead_c.as_ref().or(profile.overhead.as_ref()),
    ]
    .map(|r| shifts(r.unwrap_or(&zero)));
    let dims: [[f64; 2]; 6] = [
        shifts(&profile.np),
        shifts(&profile.nc),
        shifts(profile.sp_v.as_ref().unwrap_or(&profile.sp)),
        shifts(profile.sc_v.as_ref().unwrap_or(&profile.sc)),
        shifts(profile.vp.as_ref().unwrap_or(&zero)),
        shifts(profile.vc.as_ref().unwrap_or(&zero)),
    ];
    // (regime, T, E, messages per round) of every operating point at
    // every corner.
    let mut seen: Vec<(Regime, f64, f64, Option<u64>)> = Vec::new();
    let point = |regime: Regime, round: Option<u64>, t: f64, e: f64, at: &Params| {
        (
            regime,
            t,
            crate::real::cpu_per_message(regime, round, e, at, profile),
            round,
        )
    };
    // The six costs and the ring's (one bit for both parties').
    for corner in 0u32..1 << (dims.len() + 1) {
        let bit = |i: usize| usize::from(corner & (1 << i) != 0);
        let by = |i: usize| dims[i][bit(i)];
        let mut at = typical;
        at.n_p = shifted(at.n_p, by(0));
        at.n_c = shifted(at.n_c, by(1));
        at.s_p = shifted(at.s_p, by(2));
        at.s_c = shifted(at.s_c, by(3));
        at.v_p = at.v_p.map(|v| shifted(v, by(4)));
        at.v_c = at.v_c.map(|v| shifted(v, by(5)));
        at.w_p = shifted(at.w_p, ring[0][bit(6)]);
        at.w_c = shifted(at.w_c, ring[1][bit(6)]);
        // A V past its N is cut to N, as the model takes a profile's.
        if let Some(v) = at.v_p {
            at.v_p = Some(Cost::Const(v.mean_ns().min(at.n_p.mean_ns())));
        }
        if let Some(v) = at.v_c {
            at.v_c = Some(Cost::Const(v.mean_ns().min(at.n_c.mean_ns())));
        }
        let Ok(m) = predict(&at, WaitMode::Notify) else {
            continue;
        };
        seen.push(point(
            m.regime,
            m.round_messages,
            m.rates.t_ns,
            m.rates.e_ns,
            &at,
        ));
        if let Some(o) = m.other {
            seen.push(point(o.regime, o.round_messages, o.t_ns, o.e_ns, &at));
        }
    }
    let m = predict(&typical, WaitMode::Notify)?;
    let central_point = point(
        m.regime,
        m.round_messages,
        m.rates.t_ns,
        m.rates.e_ns,
        &typical,
    );
    if seen.is_empty() {
        seen.push(central_point);
    }
    let t_band_ns = [
        seen.iter().map(|s| s.1).fold(f64::INFINITY, f64::min),
        seen.iter().map(|s| s.1).fold(0.0, f64::max),
    ];
    let e_band_ns = [
        seen.iter().map(|s| s.2).fold(f64::INFINITY, f64::min),
        seen.iter().map(|s| s.2).fold(0.0, f64::max),
    ];
    // The distinct operating points, each at its typical T (the middle
    // corner's where the closed form names it there, else the median of
    // the corners that name it).
    let mut names: Vec<Regime> = Vec::new();
    for s in &seen {
        if !names.contains(&s.0) {
            names.push(s.0);
        }
    }
    let typical_of = |r: Regime| -> (f64, f64, Option<u64>) {
        if central_point.0 == r {
            return (central_point.1, central_point.2, central_point.3);
        }
        if let Some(o) = m.other.filter(|o| o.regime == r) {
            let p = point(o.regime, o.round_messages, o.t_ns, o.e_ns, &typical);
            return (p.1, p.2, p.3);
        }
        let mut ts: Vec<(f64, f64, Option<u64>)> = seen
            .iter()
            .filter(|s| s.0 == r)
            .map(|s| (s.1, s.2, s.3))
            .collect();
        ts.sort_by(|a, b| a.0.total_cmp(&b.0));
        ts[ts.len() / 2]
    };
    let op = |r: Regime, (t_ns, e_ns, round_messages): (f64, f64, Option<u64>)| OperatingPoint {
        name: r.name().to_string(),
        t_ns,
        e_ns,
        share: 0.0,
        round_messages,
    };
    let mut points: Vec<OperatingPoint> = Vec::new();
    for &r in &names {
        // A regime whose rounds move with the costs from one message to
        // many: its cheapest and its dearest corner.
        let corners = seen.iter().filter(|s| s.0 == r);
        let lo = corners.clone().min_by(|a, b| a.1.total_cmp(&b.1));
        let hi = corners.max_by(|a, b| a.1.total_cmp(&b.1));
        match (lo, hi) {
            (Some(lo), Some(hi)) if hi.1 > WIDE * lo.1 => {
                points.push(op(r, (lo.1, lo.2, lo.3)));
                points.push(op(r, (hi.1, hi.2, hi.3)));
            }
            _ => points.push(op(r, typical_of(r))),
        }
    }
    points.sort_by(|a, b| a.t_ns.total_cmp(&b.t_ns));
    // Points with the same T (FC and EWC at one kick a message, say) are
    // one operating point for the band and the mixture.
    let knife_edge = {
        let lo = points.first().map_or(0.0, |p| p.t_ns);
        let hi = points.last().map_or(0.0, |p| p.t_ns);
        points.len() > 1 && hi > lo * 1.2
    };
    let mut spread = *pair;
    profile.apply_notify(&mut spread, true);
    let s = simulate(&SimConfig {
        seed,
        start: Start::Empty,
        idle_scale: [
            profile.idle_scale(kicklab_model::Party::P),
            profile.idle_scale(kicklab_model::Party::C),
        ],
        latency: false,
        ..SimConfig::new(spread, WaitMode::Notify, SIM_MESSAGES)
    })?;
    let t_sim = s.rates.t_ns;
    if knife_edge {
        // The simulated pair's T as a mixture of the cheapest and the
        // dearest point: the share of messages at each.
        let (lo, hi) = (points[0].t_ns, points[points.len() - 1].t_ns);
        let f = ((hi - t_sim) / (hi - lo)).clamp(0.0, 1.0);
        let last = points.len() - 1;
        points[0].share = f;
        points[last].share = 1.0 - f;
    } else if let Some(p) = points.iter_mut().find(|p| p.name == central_point.0.name()) {
        p.share = 1.0;
    } else if let Some(p) = points.first_mut() {
        p.share = 1.0;
    }
    // The central E: the points' E in the same shares.
    let share_sum: f64 = points.iter().map(|p| p.share).sum();
    let e_ns = if share_sum > 0.0 {
        points.iter().map(|p| p.share * p.e_ns).sum::<f64>() / share_sum
    } else {
        central_point.2
    };
    // The central T stays inside the band (a simulated transient could
    // fall outside the corners').
    let t_ns = t_sim.clamp(t_band_ns[0], t_band_ns[1]);
    Ok(Forecast {
        t_ns,
        e_ns,
        t_band_ns,
        e_band_ns,
        operating_points: points,
        knife_edge,
    })
}

/// A forecast judged against measured repetitions of T.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Judged {
    /// Repetitions inside the band, of all.
    pub covered: usize,
    /// Repetitions measured.
    pub measured: usize,
    /// The central T's error against the repetitions' median (relative).
    pub error: f64,
    /// The largest over the smallest repetition.
    pub spread: f64,
}

impl Judged {
    /// `forecast` against the measured repetitions `t_ns` (at least one).
    #[must_use]
    pub fn of(forecast: &Forecast, t_ns: &[f64]) -> Judged {
        let mut v = t_ns.to_vec();
        v.sort_by(f64::total_cmp);
        let median = v[v.len() / 2];
        Judged {
            covered: v.iter().filter(|&&t| forecast.covers(t)).count(),
            measured: v.len(),
            error: (forecast.t_ns - median).abs() / median,
            spread: v[v.len() - 1] / v[0],
        }
    }
}

/// How a set of forecasts did: coverage, sharpness, the central value's
/// median error, and the knife-edges missed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Verdict {
    /// Measured repetitions inside their band, of all.
    pub coverage: f64,
    /// Median band width over T at the points the forecast calls stable
    /// (no knife-edge); `None` where every point is a knife-edge.
    pub sharpness: Option<f64>,
    /// Median band width over T at every point, knife-edges too: what
    /// the sharpness leaves out where the forecast calls points
    /// knife-edges.
    pub width: f64,
    /// Points the forecast calls knife-edges.
    pub knife_edges: usize,
    /// Median relative error of the central T.
    pub median_err_t: f64,
    /// Points whose repetitions differ by more than 2x, and of those, how
    /// many the forecast did not call a knife-edge.
    pub wide_points: usize,
    /// See `wide_points`.
    pub knife_edges_missed: usize,
    /// Points judged.
    pub points: usize,
}

impl Verdict {
    /// Over `(forecast, judged)` pairs.
    #[must_use]
    pub fn of(points: &[(Forecast, Judged)]) -> Verdict {
        let median = |mut v: Vec<f64>| -> Option<f64> {
            v.sort_by(f64::total_cmp);
            (!v.is_empty()).then(|| v[v.len() / 2])
        };
        let covered: usize = points.iter().map(|(_, j)| j.covered).sum();
        let measured: usize = points.iter().map(|(_, j)| j.measured).sum();
        #[allow(clippy::cast_precision_loss)]
        let coverage = covered as f64 / measured.max(1) as f64;
        let wide: Vec<&(Forecast, Judged)> =
            points.iter().filter(|(_, j)| j.spread > 2.0).collect();
        Verdict {
            coverage,
            sharpness: median(
                points
                    .iter()
                    .filter(|(f, _)| !f.knife_edge)
                    .map(|(f, _)| f.sharpness())
                    .collect(),
            ),
            width: median(points.iter().map(|(f, _)| f.sharpness()).collect()).unwrap_or(0.0),
            knife_edges: points.iter().filter(|(f, _)| f.knife_edge).count(),
            median_err_t: median(points.iter().map(|(_, j)| j.error).collect()).unwrap_or(0.0),
            wide_points: wide.len(),
            knife_edges_missed: wide.iter().filter(|(f, _)| !f.knife_edge).count(),
            points: points.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pair_with_constant_costs_has_a_point_band() {
        // A profile whose every cost is one value: no spread, one point.
        let p = Profile::of_means("futex", [2400.0, 200.0, 3900.0, 200.0]);
        let f = forecast(&Params::default(), &p, 1).unwrap();
        assert!(!f.knife_edge, "{f:?}");
        assert!((f.t_band_ns[1] - f.t_band_ns[0]).abs() < 1e-6, "{f:?}");
        assert_eq!(f.operating_points.len(), 1);
        assert_eq!(f.operating_points[0].share, 1.0);
    }

    #[test]
    fn a_spread_across_the_fp_fc_boundary_is_a_knife_edge_spanning_both() {
        // W_P just above W_C; C's ring cost per message, 0 at its median
        // and 100 ns at its 90th percentile, takes W_C past W_P: FC at
        // some corners, FP at others.
        let mut p = Profile::of_means("futex", [2400.0, 200.0, 3900.0, 200.0]);
        p.overhead_p = Some(Stat::constant(0.0));
        p.overhead_c = Some(Stat {
            p90_ns: 100.0,
            ..Stat::constant(0.0)
        });
        let pair = Params {
            w_p: Cost::Const(1150.0),
            ..Params::default()
        };
        let f = forecast(&pair, &p, 1).unwrap();
        let names: Vec<&str> = f.operating_points.iter().map(|o| o.name.as_str()).collect();
        assert!(f.knife_edge, "{f:?}");
        assert!(names.contains(&"FP") && names.contains(&"FC"), "{names:?}");
        for o in &f.operating_points {
            assert!(f.covers(o.t_ns), "{f:?}");
        }
        let shares: f64 = f.operating_points.iter().map(|o| o.share).sum();
        assert!((shares - 1.0).abs() < 1e-9, "{f:?}");
    }

    #[test]
    fn coverage_counts_repetitions_and_wide_points_need_a_knife_edge() {
        let f = Forecast {
            t_ns: 100.0,
            e_ns: 150.0,
            t_band_ns: [90.0, 110.0],
            e_band_ns: [140.0, 160.0],
            operating_points: Vec::new(),
            knife_edge: false,
        };
        let j = Judged::of(&f, &[95.0, 105.0, 300.0]);
        assert_eq!((j.covered, j.measured), (2, 3));
        let v = Verdict::of(&[(f, j)]);
        assert!((v.coverage - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!((v.wide_points, v.knife_edges_missed), (1, 1));
        assert!((v.sharpness.unwrap() - 0.2).abs() < 1e-12);
        assert!((v.width - 0.2).abs() < 1e-12);
        assert_eq!(v.knife_edges, 0);
    }
}
