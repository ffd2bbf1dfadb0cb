//! The profile's tests.

use crate::{Cost, Party};

use super::*;

#[test]
fn the_start_spread_is_a_normals_sd_from_p10_to_p90() {
    let mut p = Profile::of_means("kvm", [10_000.0, 700.0, 20_000.0, -1000.0]);
    p.sp = Stat {
        p10_ns: 19_000.0,
        p90_ns: 21_563.103,
        ..p.sp
    };
    p.sc = Stat {
        p10_ns: -2000.0,
        p90_ns: -1_487.379_4,
        ..p.sc
    };
    let [sp, sc] = p.start_spread();
    assert!((sp - 1000.0).abs() < 1e-6, "{sp}");
    assert!((sc - 200.0).abs() < 1e-3, "{sc}");
    // Quantiles out of order, or not numbers: no spread.
    p.sc.p90_ns = -3000.0;
    p.sp.p10_ns = f64::NAN;
    assert_eq!(p.start_spread(), [0.0, 0.0]);
}

#[test]
fn in_run_costs_replace_n_and_s_and_split_the_wake_up() {
    let mut p = Profile::of_means("futex", [10_000.0, 10_000.0, 12_000.0, 12_000.0]);
    p.sp_cpu = Stat::constant(2000.0);
    p.sc_cpu = Stat::constant(2000.0);
    let c = Stat::constant;
    p.in_run = Some(InRunCosts {
        np: Some(c(2500.0)),
        nc: Some(c(3000.0)),
        // C wakes 16 us after P's kick starts: past its end, so V = N.
        rc: Some(c(16_000.0)),
        // P wakes 2.5 us after C's starts, inside it: V = R - S cpu.
        rp: Some(c(2500.0)),
        ..InRunCosts::default()
    });
    let mut q = crate::Params::default();
    p.apply(&mut q, false);
    assert_eq!((q.n_p, q.n_c), (Cost::Const(2500.0), Cost::Const(3000.0)));
    assert_eq!(q.v_p, Some(Cost::Const(2500.0)));
    assert_eq!(q.s_c, Cost::Const(13_500.0));
    assert_eq!(q.v_c, Some(Cost::Const(500.0)));
    assert_eq!(q.s_p, Cost::Const(2000.0));
    q.validate().unwrap();
    // The medians follow the same rule.
    let mut m = crate::Params::default();
    p.apply_medians(&mut m);
    assert_eq!((m.n_p, m.s_c, m.v_c), (q.n_p, q.s_c, q.v_c));
    // Only the host's kick timed (a KVM guest on the other side): N_C
    // from the runs, the rest as calibrated.
    p.in_run = Some(InRunCosts {
        np: None,
        nc: Some(c(400.0)),
        rp: None,
        rc: None,
        ..InRunCosts::default()
    });
    let mut k = crate::Params::default();
    p.apply(&mut k, false);
    assert_eq!((k.n_p, k.n_c), (Cost::Const(10_000.0), Cost::Const(400.0)));
    assert_eq!(k.s_c, Cost::Const(12_000.0));
    k.validate().unwrap();
}

#[test]
fn the_rings_cost_is_the_median_of_its_runs() {
    // Four quiet polling runs at 64-66 ns a message and one taken off
    // its CPU: the mean is that one run's, the median the ring's.
    let mut p = Profile::of_means("kvm", [10_000.0; 4]);
    p.overhead = Some(Stat::of(vec![64.0, 65.0, 65.0, 66.0, 340.0]));
    let mut q = crate::Params::default();
    p.apply(&mut q, false);
    assert_eq!(
        q.w_p.mean_ns(),
        crate::Params::default().w_p.mean_ns() + 65.0
    );
    assert_eq!(
        q.w_c.mean_ns(),
        crate::Params::default().w_c.mean_ns() + 65.0
    );
}

#[test]
fn stat_summarizes() {
    let s = Stat::of((1..=100).map(f64::from).collect());
    assert_eq!(s.n, 100);
    assert!((s.mean_ns - 50.5).abs() < 1e-9);
    assert!((s.median_ns - 50.0).abs() <= 1.0);
    assert!(s.p10_ns < s.median_ns && s.median_ns < s.p90_ns);
    let c = Stat::of(vec![7.0; 10]);
    assert_eq!(c.as_cost(), Cost::Const(7.0));
}

/// A profile written before V, the overhead and the idle curve.
const OLD: &str = r#"{"backend":"futex",
    "NP":{"median_ns":1,"mean_ns":2000,"p10_ns":1,"p90_ns":1,"sigma_log":0,"n":1},
    "NC":{"median_ns":1,"mean_ns":2000,"p10_ns":1,"p90_ns":1,"sigma_log":0,"n":1},
    "SP":{"median_ns":1,"mean_ns":3000,"p10_ns":1,"p90_ns":1,"sigma_log":0,"n":1},
    "SC":{"median_ns":1,"mean_ns":-100,"p10_ns":1,"p90_ns":1,"sigma_log":0,"n":1},
    "NP_cpu":{"median_ns":1,"mean_ns":1,"p10_ns":1,"p90_ns":1,"sigma_log":0,"n":1},
    "NC_cpu":{"median_ns":1,"mean_ns":1,"p10_ns":1,"p90_ns":1,"sigma_log":0,"n":1},
    "SP_cpu":{"median_ns":1,"mean_ns":1,"p10_ns":1,"p90_ns":1,"sigma_log":0,"n":1},
    "SC_cpu":{"median_ns":1,"mean_ns":1,"p10_ns":1,"p90_ns":1,"sigma_log":0,"n":1},
    "gap_ns":50000,"rounds":2,"stable":true,"tsc_ghz":2.4,"cpus":2}"#;

#[test]
fn old_profiles_load_and_keep_their_meaning() {
    let p: Profile = serde_json::from_str(OLD).unwrap();
    assert!(p.vp.is_none() && p.overhead.is_none() && p.idle_curve.is_empty());
    let mut params = crate::Params::default();
    p.apply(&mut params, false);
    assert_eq!(params.w_p, Cost::Const(1000.0), "no overhead, W as given");
    assert_eq!(params.s_p, Cost::Const(3000.0));
    assert_eq!(params.s_c, Cost::Const(0.0), "negative S without V: 0");
    assert_eq!((params.v_p, params.v_c), (None, None), "V = N");
    assert_eq!(p.negative_starts(), vec!["S_C"]);
    assert_eq!(p.start_at_idle(Party::P, 1e3), None);
    // And a new profile round-trips with everything.
    let mut q = p.clone();
    q.vp = Some(Stat::constant(500.0));
    q.sc_v = Some(Stat::constant(1400.0));
    q.overhead = Some(Stat::constant(50.0));
    q.idle_curve = vec![IdlePoint::of(&q)];
    let back: Profile = serde_json::from_str(&serde_json::to_string(&q).unwrap()).unwrap();
    assert_eq!(back.vp, q.vp);
    assert_eq!(back.sc_v, q.sc_v);
    assert_eq!(back.idle_curve, q.idle_curve);
    assert_eq!(back.overhead, q.overhead);
}

#[test]
fn check_refuses_what_no_calibration_writes() {
    // A negative wall start-up (the peer ran before the kick
    // returned), a V above N and a pace-setter's ring cost less its
    // kicks below 0 all come out of real calibrations: taken.
    let mut good = Profile::of_means("kvm", [10e3, 2e3, 15e3, -1e3]);
    good.vp = Some(Stat::constant(12e3));
    good.overhead_p = Some(Stat::constant(-20.0));
    good.check().unwrap();
    let bad = |f: &dyn Fn(&mut Profile), want: &str| {
        let mut p = good.clone();
        f(&mut p);
        let e = p.check().unwrap_err();
        assert!(e.contains(want), "{want}: {e}");
    };
    bad(&|p| p.np = Stat::constant(-1.0), "NP.median_ns");
    bad(&|p| p.vc = Some(Stat::constant(-1e6)), "VC.median_ns");
    bad(&|p| p.sc = Stat::constant(1e300), "SC.median_ns");
    bad(&|p| p.nc.sigma_log = f64::INFINITY, "NC.sigma_log");
    bad(
        &|p| p.nap_c_cpu = Some(Stat::constant(f64::NAN)),
        "nap_C_cpu",
    );
    bad(&|p| p.others_cpu = Some(f64::NAN), "others_cpu");
    bad(&|p| p.others_cpu = Some(-0.5), "others_cpu");
    bad(
        &|p| p.overhead = Some(Stat::constant(-1.0)),
        "overhead.median_ns",
    );
    let point = |gap_ns: f64| IdlePoint {
        gap_ns,
        ..IdlePoint::of(&good)
    };
    bad(
        &|p| p.idle_curve = (1..=17).map(|i| point(1e3 * f64::from(i))).collect(),
        "at most 16 points",
    );
    bad(
        &|p| p.idle_curve = vec![point(5e3), point(5e3)],
        "idle_curve[1].gap_ns",
    );
    bad(&|p| p.idle_curve = vec![point(0.0)], "idle_curve[0].gap_ns");
    bad(
        &|p| {
            p.sp.p10_ns = 2e4;
            p.sp.p90_ns = 1e4;
        },
        "SP: p10_ns",
    );
    bad(
        &|p| p.backend = "bogus name".into(),
        "backend = `bogus name`: one of futex, eventfd, pipe, kvm",
    );
    bad(&|p| p.backend = "x".repeat(5000), "(5000 characters)");
    bad(&|p| p.backend = String::new(), "backend = ``");
    bad(&|p| p.backend = "bogus".into(), "backend = `bogus`");
    bad(
        &|p| p.sc = Stat::constant(-2.0 * p.np.median_ns),
        "SC.median_ns = -2e4: a start-up may be negative by at most",
    );
    bad(&|p| p.tsc_ghz = -1.0, "tsc_ghz");
}

#[test]
fn apply_sets_v_with_the_matching_s_and_adds_the_overhead() {
    // P's kick: N_P 10 us, the wall S_C -1 us (C ran before the kick
    // returned): R = 9 us; V_P 6 us, so S_C = 3 us.
    let mut p = Profile::of_means("kvm", [10e3, 2e3, 15e3, -1e3]);
    p.vp = Some(Stat::constant(6e3));
    p.sc_v = Some(Stat::constant(3e3));
    p.overhead = Some(Stat::constant(100.0));
    assert!(p.negative_starts().is_empty(), "V absorbed the negative S");
    let mut params = crate::Params::default();
    p.apply(&mut params, false);
    assert_eq!(params.v_p, Some(Cost::Const(6e3)));
    assert_eq!(params.s_c, Cost::Const(3e3));
    assert_eq!(params.v_c, None, "no V_C: V_C = N_C, S_P the wall one");
    assert_eq!(params.s_p, Cost::Const(15e3));
    assert_eq!(params.w_p, Cost::Const(1100.0));
    assert_eq!(params.w_c, Cost::Const(1200.0));
    params.validate().unwrap();
    // A V above N (a profile edited by hand) is cut to N.
    p.vp = Some(Stat::constant(20e3));
    p.apply(&mut params, true);
    assert_eq!(params.v_p.unwrap().mean_ns(), 10e3);
    params.validate().unwrap();
    // The costs alone leave W alone.
    let mut costs = crate::Params::default();
    p.apply_costs(&mut costs, false);
    assert_eq!(costs.w_p, Cost::Const(1000.0));
    let mut med = crate::Params::default();
    p.apply_medians(&mut med);
    assert_eq!(med.s_c, Cost::Const(3e3));
    assert_eq!(med.v_p, Some(Cost::Const(10e3)));
    assert_eq!(med.w_c, Cost::Const(1200.0));
    // With the peer-asleep overheads, a notify pair takes those (and
    // a polling pair still the polling pair's).
    let mut n = crate::Params::default();
    p.apply_notify(&mut n, false);
    assert_eq!((n.w_p, n.w_c), (Cost::Const(1100.0), Cost::Const(1200.0)));
    p.overhead_p = Some(Stat::constant(30.0));
    p.overhead_c = Some(Stat::constant(-5.0));
    let mut n = crate::Params::default();
    p.apply_notify(&mut n, false);
    assert_eq!((n.w_p, n.w_c), (Cost::Const(1030.0), Cost::Const(1100.0)));
    let mut med = crate::Params::default();
    p.apply_medians(&mut med);
    assert_eq!(
        (med.w_p, med.w_c),
        (Cost::Const(1030.0), Cost::Const(1100.0))
    );
    let mut poll = crate::Params::default();
    p.apply(&mut poll, false);
    assert_eq!(poll.w_p, Cost::Const(1100.0));
}

#[test]
fn start_at_idle_interpolates_in_log_gap_and_holds_at_the_ends() {
    let mut p = Profile::of_means("futex", [2e3, 2e3, 3e3, 3e3]);
    let point = |gap: f64, s: f64| IdlePoint {
        gap_ns: gap,
        sp: Stat::constant(s),
        sc: Stat::constant(2.0 * s),
        ..IdlePoint::of(&p)
    };
    // Out of order on purpose: the lookup sorts by gap.
    p.idle_curve = vec![point(100e3, 30e3), point(10e3, 3e3), point(1e3, 1e3)];
    let s = |idle: f64| p.start_at_idle(Party::P, idle).unwrap();
    assert_eq!(s(10e3), 3e3, "exact at a measured gap");
    assert_eq!(s(1e3), 1e3);
    assert_eq!(s(100e3), 30e3);
    assert_eq!(s(10.0), 1e3, "held below the first gap");
    assert_eq!(s(0.0), 1e3);
    assert_eq!(s(-5.0), 1e3);
    assert_eq!(s(f64::NAN), 1e3);
    assert_eq!(s(1e9), 30e3, "held above the last");
    // sqrt(10e3 * 100e3) is half-way in log gap.
    let mid = (10e3f64 * 100e3).sqrt();
    assert!((s(mid) - 16.5e3).abs() < 1e-6, "{}", s(mid));
    assert!((p.start_at_idle(Party::C, mid).unwrap() - 33e3).abs() < 1e-6);
    // A quarter of the way in log gap is a quarter of the way in S.
    let q = (10e3f64.ln() + 0.25 * (10f64).ln()).exp();
    assert!((s(q) - (3e3 + 0.25 * 27e3)).abs() < 1e-6, "{}", s(q));
    // The simulator's curve: idle from falling asleep (the gap plus
    // N of the waking notification, no V here), S over the profile's.
    let sc = p.idle_scale(Party::P).unwrap();
    assert_eq!(sc.points(), &[(3e3, 1e3 / 3e3), (12e3, 1.0), (102e3, 10.0)]);
    assert!(Profile::of_means("x", [1.0; 4])
        .idle_scale(Party::C)
        .is_none());
}

/// An S timed inside the reference pairs was paid after their short
/// idle: the idle curve scales it from there, not from the profile's
/// gap (which would shrink it again by the curve's short-idle factor,
/// as the simulator did until 2026-11-26: a pipe profile's
/// in-run S_C of 3.7 us drawn as 2.5 us, T 16% over the model's).
#[test]
fn an_in_run_start_is_scaled_along_the_idle_curve_from_the_reference_pairs_idle() {
    // Isolated wake-ups (after 50 us): S 12 us; in runs: R_C 4 us,
    // V_P 0 (the split: R - S cpu < 0), so S_C = 4 us.
    let mut p = Profile::of_means("pipe", [6e3, 6e3, 12e3, 12e3]);
    p.sc_cpu = Stat::constant(5e3);
    p.in_run = Some(InRunCosts {
        np: Some(Stat::constant(1.5e3)),
        rc: Some(Stat::constant(4e3)),
        ..InRunCosts::default()
    });
    let point = |gap: f64, s: f64| IdlePoint {
        gap_ns: gap,
        sc: Stat::constant(s),
        ..IdlePoint::of(&p)
    };
    p.idle_curve = vec![point(5e3, 8e3), point(50e3, 12e3), point(500e3, 24e3)];
    let mut params = crate::Params::default();
    p.apply_notify(&mut params, false);
    assert_eq!(params.s_c, Cost::Const(4e3));
    // The reference pair (W_P 2 us, W_C 1 us) has C idle a few us per
    // sleep: below the curve's first gap, where its factor is 8/12.
    let from = p.in_run_start_idle(Party::C).unwrap();
    assert!(from.idle_ns > 0.0 && from.idle_ns < 5e3, "{}", from.idle_ns);
    let sc = p.idle_scale(Party::C).unwrap();
    let at = |idle: f64| sc.factor(idle);
    assert!((at(from.idle_ns + from.v_ns) - 1.0).abs() < 1e-12);
    assert!(
        (at(1.0) - 1.0).abs() < 1e-12,
        "short idles pay the in-run S"
    );
    assert!((at(1e9) - 24.0 / 8.0).abs() < 1e-12, "long ones 3 times it");
    // The model's S at an idle scales the same way.
    let s = |idle: f64| p.start_for_idle(Party::C, 4e3)(idle).unwrap();
    assert!((s(from.idle_ns) - 4e3).abs() < 1e-9);
    assert!((s(500e3) - 12e3).abs() < 1e-9);
    // P's S is the isolated one (no R_P timed): the curve's own.
    assert_eq!(
        p.start_for_idle(Party::P, 1.0)(500e3),
        p.start_at_idle(Party::P, 500e3)
    );
    let sp = p.idle_scale(Party::P).unwrap();
    assert!((sp.factor(1e9) - 1.0).abs() < 1e-12, "S_P as calibrated");
    // Without the in-run wake-up, the curve is over the profile's S.
    p.in_run = None;
    let sc = p.idle_scale(Party::C).unwrap();
    assert!((sc.factor(1.0) - 8.0 / 12.0).abs() < 1e-12);
    assert_eq!(p.start_for_idle(Party::C, 4e3)(500e3), Some(24e3));
}
