//! With constant costs the simulator reproduces the closed forms in every
//! regime, measured over whole notification rounds: relative error of T and
//! E below 1e-6 (in practice it is a rounding error of the final division).

use kicklab_model::{predict, Cost, Params, Regime, WaitMode};
use kicklab_sim::{simulate, SimConfig, Window};
use proptest::prelude::*;

use crate::{params_ps, rel};

const TOL: f64 = 1e-6;

/// A warm-up long enough to leave the transient: the queue fills (or
/// drains) at `|W_P - W_C|` per message, so it takes `L max(W) / |W_P - W_C|`
/// messages to get there; plus a few queues. `None` if that is too long to
/// simulate in a test.
fn steady_warmup(p: &Params) -> Option<u64> {
    let (a, b) = (
        kicklab_model::to_ps(p.w_p.mean_ns()),
        kicklab_model::to_ps(p.w_c.mean_ns()),
    );
    let l = u64::from(p.len);
    let fill = if a == b {
        0
    } else {
        l * a.max(b) / a.abs_diff(b)
    };
    let w = 2 * fill + 4 * l + 100;
    (w <= 400_000).then_some(w)
}

/// Simulates long enough for many rounds, then checks T, E, and that the
/// window holds whole rounds of the predicted size.
fn check(p: &Params, mode: WaitMode, want: Regime) -> Result<(), TestCaseError> {
    let model = predict(p, mode).unwrap();
    prop_assert_eq!(
        model.regime,
        want,
        "classifier disagrees with the generator: {:?}",
        p
    );
    let round = model.round_messages.unwrap_or(1);
    prop_assume!(round <= 20_000);
    let messages = (40 * round).max(4_000);
    let mut cfg = SimConfig::new(*p, mode, messages);
    cfg.warmup = 3 * round + 4 * u64::from(p.len);
    // After the transient: with rounds or without (polling, lockstep,
    // measured per message), a faster party only meets the queue's end
    // once it has filled it, and W_P within a picosecond of W_C takes
    // millions of messages to (W_P 953.401 ns against W_C 953.402, L 24:
    // 23 million; before it the window sees P's pace, not C's).
    let Some(w) = steady_warmup(p) else {
        return Err(TestCaseError::reject("transient too long"));
    };
    cfg.warmup = cfg.warmup.max(w);
    let sim = simulate(&cfg).unwrap();
    prop_assert!(
        rel(sim.rates.t_ns, model.rates.t_ns) < TOL,
        "T: sim {} model {} ({:?}) {:?}",
        sim.rates.t_ns,
        model.rates.t_ns,
        model.regime,
        p
    );
    prop_assert!(
        rel(sim.rates.e_ns, model.rates.e_ns) < TOL,
        "E: sim {} model {} ({:?}) {:?}",
        sim.rates.e_ns,
        model.rates.e_ns,
        model.regime,
        p
    );
    if let Some(r) = model.round_messages {
        prop_assert_ne!(
            sim.window,
            Window::Messages,
            "rounds expected in {:?}",
            model.regime
        );
        prop_assert_eq!(
            sim.rates.messages % r,
            0,
            "window of {} messages is not whole rounds of {}",
            sim.rates.messages,
            r
        );
        let rounds = sim.rates.messages / r;
        let kicks = match sim.window {
            Window::RoundsPc => sim.rates.notifications_p,
            _ => sim.rates.notifications_c,
        };
        prop_assert_eq!(kicks, rounds, "one notification per round");
        // The model's per-round counts, scaled to the window's rounds.
        let per_round = |n: u64| n * rounds;
        prop_assert_eq!(
            (sim.rates.notifications_p, sim.rates.notifications_c),
            (
                per_round(model.rates.notifications_p),
                per_round(model.rates.notifications_c)
            ),
            "notifications per round ({:?})",
            model.regime
        );
        prop_assert_eq!(
            (sim.rates.sleeps_p, sim.rates.sleeps_c),
            (
                per_round(model.rates.sleeps_p),
                per_round(model.rates.sleeps_c)
            ),
            "sleeps per round ({:?})",
            model.regime
        );
    }
    // Each party's share of E, not only their sum.
    for (what, s, m) in [
        ("E_P", sim.rates.e_p_ns, model.rates.e_p_ns),
        ("E_C", sim.rates.e_c_ns, model.rates.e_c_ns),
    ] {
        prop_assert!(
            rel(s, m) < TOL,
            "{}: sim {} model {} ({:?}) {:?}",
            what,
            s,
            m,
            model.regime,
            p
        );
    }
    Ok(())
}

/// Work costs [ps]: 0.05 us .. 3 us, or none (a message written or read
/// at the instant it starts, where the tie rule decides the order).
fn work() -> impl Strategy<Value = u64> {
    prop_oneof![1 => Just(0u64), 9 => 50_000u64..3_000_000]
}

/// Whether one party at least has work. With none on either side the
/// simulator is not symmetric: P goes first among the attempts at an
/// instant in the pair and in its mirror alike, so the mirrored pair does
/// not run the mirrored schedule (`docs/model.md`, "Work that takes no
/// time").
fn some_work(p: &Params) -> bool {
    p.w_p.mean_ns() > 0.0 || p.w_c.mean_ns() > 0.0
}

/// Notification / start-up costs [ps]: 0 .. 8 us.
fn ns_cost() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0u64), 0u64..8_000_000]
}

/// FC: W_C < W_P and S_C + W_C <= (L - k_P) W_P.
fn fc() -> impl Strategy<Value = Params> {
    (
        2u32..300,
        work(),
        1u64..2_000_000,
        ns_cost(),
        ns_cost(),
        ns_cost(),
        any::<u32>(),
        any::<u32>(),
        any::<u64>(),
    )
        .prop_filter_map(
            "FC needs room",
            |(len, w_c, d, n_p, n_c, s_p, kp, kc, sc)| {
                let w_p = w_c + d;
                let k_p = 1 + kp % len;
                let k_c = 1 + kc % len;
                let room = u64::from(len - k_p) * w_p;
                (room >= w_c).then(|| {
                    let s_c = sc % (room - w_c + 1);
                    params_ps(len, k_p, k_c, w_p, w_c, n_p, n_c, s_p, s_c)
                })
            },
        )
}

/// SCS: W_C < W_P, S_C + W_C > (L - k_P) W_P, S_P + W_P <= (L - k_C) W_C.
fn scs() -> impl Strategy<Value = Params> {
    (
        1u32..200,
        work(),
        1u64..2_000_000,
        ns_cost(),
        ns_cost(),
        ns_cost(),
        any::<u32>(),
        any::<u32>(),
        any::<u64>(),
    )
        .prop_filter_map(
            "SCS needs room for P",
            |(len, w_c, d, n_p, n_c, extra, kp, kc, sp)| {
                let w_p = w_c + d;
                let k_p = 1 + kp % len;
                let k_c = 1 + kc % len;
                let room_c = u64::from(len - k_c) * w_c;
                (room_c >= w_p).then(|| {
                    let s_p = sp % (room_c - w_p + 1);
                    let s_c = (u64::from(len - k_p) * w_p).saturating_sub(w_c) + 1 + extra;
                    params_ps(len, k_p, k_c, w_p, w_c, n_p, n_c, s_p, s_c)
                })
            },
        )
}

/// SS: both predicates true.
fn ss() -> impl Strategy<Value = Params> {
    (
        1u32..64,
        work(),
        work(),
        ns_cost(),
        ns_cost(),
        ns_cost(),
        ns_cost(),
        any::<u32>(),
        any::<u32>(),
    )
        .prop_map(|(len, w_p, w_c, n_p, n_c, ep, ec, kp, kc)| {
            let k_p = 1 + kp % len;
            let k_c = 1 + kc % len;
            let s_c = (u64::from(len - k_p) * w_p).saturating_sub(w_c) + 1 + ec;
            let s_p = (u64::from(len - k_c) * w_c).saturating_sub(w_p) + 1 + ep;
            params_ps(len, k_p, k_c, w_p, w_c, n_p, n_c, s_p, s_c)
        })
}

/// Lockstep: W_P == W_C and no slow consumer startup
/// (`S_C <= (L - k_P - 1) W`).
fn lockstep() -> impl Strategy<Value = Params> {
    // Work above 0: with none on either side the order of the attempts at
    // an instant puts C to sleep (`no_work_on_either_side_is_exact`).
    (
        2u32..64,
        50_000u64..3_000_000,
        ns_cost(),
        ns_cost(),
        ns_cost(),
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
    )
        .prop_map(|(len, w, n_p, n_c, s_p, sc, kp, kc)| {
            let k_p = 1 + kp % (len - 1);
            let s_c = sc % (u64::from(len - k_p - 1) * w + 1);
            params_ps(len, k_p, 1 + kc % len, w, w, n_p, n_c, s_p, s_c)
        })
}

/// Any parameters at all (for polling and for the symmetry check).
fn any_params() -> impl Strategy<Value = Params> {
    (
        1u32..64,
        work(),
        work(),
        ns_cost(),
        ns_cost(),
        ns_cost(),
        ns_cost(),
        any::<u32>(),
        any::<u32>(),
    )
        .prop_map(|(len, w_p, w_c, n_p, n_c, s_p, s_c, kp, kc)| {
            params_ps(
                len,
                1 + kp % len,
                1 + kc % len,
                w_p,
                w_c,
                n_p,
                n_c,
                s_p,
                s_c,
            )
        })
}

/// `p` with V_P, V_C at `fp`, `fc` thousandths of N_P, N_C (whole ps).
fn with_visibility(mut p: Params, fp: u64, fc: u64) -> Params {
    let share = |n: kicklab_model::Cost, f: u64| {
        let n_ps = kicklab_model::to_ps(n.mean_ns());
        #[allow(clippy::cast_precision_loss)]
        kicklab_model::Cost::Const((n_ps * f / 1000) as f64 / 1000.0)
    };
    p.v_p = Some(share(p.n_p, fp));
    p.v_c = Some(share(p.n_c, fc));
    p
}

proptest! {
    #![proptest_config(ProptestConfig { cases: crate::cases(300), ..ProptestConfig::default() })]

    #[test]
    fn fc_exact(p in fc()) { check(&p, WaitMode::Notify, Regime::FC)?; }

    #[test]
    fn fp_exact(p in fc()) { check(&p.mirrored(), WaitMode::Notify, Regime::FP)?; }

    #[test]
    fn scs_exact(p in scs()) { check(&p, WaitMode::Notify, Regime::SCS)?; }

    #[test]
    fn sps_exact(p in scs()) { check(&p.mirrored(), WaitMode::Notify, Regime::SPS)?; }

    #[test]
    fn ss_exact(p in ss()) { check(&p, WaitMode::Notify, Regime::SS)?; }

    #[test]
    fn lockstep_exact(p in lockstep()) { check(&p, WaitMode::Notify, Regime::Lockstep)?; }

    #[test]
    fn gp_exact(p in any_params()) { check(&p, WaitMode::Poll, Regime::GP)?; }

    /// Swapping P and C changes neither T nor E, in the simulator (the
    /// model's symmetry is by construction; this checks the event loop).
    #[test]
    fn simulator_is_symmetric(p in any_params(), poll in any::<bool>()) {
        prop_assume!(some_work(&p));
            let mode = if poll { WaitMode::Poll } else { WaitMode::Notify };
        // Rounds short enough that the window holds many of them.
        prop_assume!(predict(&p, WaitMode::Notify).unwrap().round_messages.unwrap_or(1) <= 1_000);
        let Some(warmup) = steady_warmup(&p) else { return Err(TestCaseError::reject("transient too long")) };
        let a = simulate(&SimConfig { warmup, ..SimConfig::new(p, mode, 20_000) }).unwrap();
        let b = simulate(&SimConfig { warmup, ..SimConfig::new(p.mirrored(), mode, 20_000) }).unwrap();
        prop_assert!(rel(a.rates.t_ns, b.rates.t_ns) < TOL, "T {} vs mirrored {}", a.rates.t_ns, b.rates.t_ns);
        prop_assert!(rel(a.rates.e_ns, b.rates.e_ns) < TOL, "E {} vs mirrored {}", a.rates.e_ns, b.rates.e_ns);
    }

    /// Kick visibility: any pair with V_P, V_C anywhere in [0, N] is exact in
    /// whatever regime the model puts it (the deterministic search in
    /// `visibility.rs` makes sure every regime is hit).
    #[test]
    fn any_pair_with_early_visibility_is_exact(p in any_params(), fp in 0u64..=1000, fc in 0u64..=1000) {
        let p = with_visibility(p, fp, fc);
        let want = predict(&p, WaitMode::Notify).unwrap().regime;
        check(&p, WaitMode::Notify, want)?;
    }

    /// No work on either side: every message is written and read at the
    /// instant of a notification's end or a wake-up, and the order of the
    /// attempts there (P first, a yielded attempt after the peer's) decides
    /// the round; the closed forms follow it (`docs/model.md`, "Work that
    /// takes no time").
    #[test]
    fn no_work_on_either_side_is_exact(p in any_params(), fp in 0u64..=1000, fc in 0u64..=1000, equal_start in any::<bool>()) {
        let mut p = with_visibility(Params { w_p: Cost::Const(0.0), w_c: Cost::Const(0.0), ..p }, fp, fc);
        if equal_start {
            // s = S + V - N = 0 on both sides: both parties attempt at the
            // end of each notification.
            let gap = |n: Cost, v: Cost| {
                let ps = kicklab_model::to_ps(n.mean_ns()) - kicklab_model::to_ps(v.mean_ns());
                #[allow(clippy::cast_precision_loss)]
                Cost::Const(ps as f64 / 1000.0)
            };
            p.s_c = gap(p.n_p, p.vis_p());
            p.s_p = gap(p.n_c, p.vis_c());
        }
        let want = predict(&p, WaitMode::Notify).unwrap().regime;
        check(&p, WaitMode::Notify, want)?;
    }

    /// The mirror of an empty start is a full one: with early visibility
    /// the start matters, and the mirrored pair started full runs the same
    /// schedule as the pair started empty.
    #[test]
    fn mirror_of_empty_is_full(p in any_params(), fp in 0u64..=1000, fc in 0u64..=1000) {
        // A full start has P asleep; with no work for C in the mirror, C
        // frees at once and must kick P, where the empty start has both
        // parties attempting at t = 0 and no one to kick.
        prop_assume!(p.w_p.mean_ns() > 0.0);
            let p = with_visibility(p, fp, fc);
        prop_assume!(predict(&p, WaitMode::Notify).unwrap().round_messages.unwrap_or(1) <= 1_000);
        let Some(warmup) = steady_warmup(&p) else { return Err(TestCaseError::reject("transient too long")) };
        let a = simulate(&SimConfig { warmup, ..SimConfig::new(p, WaitMode::Notify, 20_000) }).unwrap();
        let b = simulate(&SimConfig { warmup, start: kicklab_sim::Start::Full, ..SimConfig::new(p.mirrored(), WaitMode::Notify, 20_000) }).unwrap();
        prop_assert!(rel(a.rates.t_ns, b.rates.t_ns) < TOL, "T {} vs mirrored full {}", a.rates.t_ns, b.rates.t_ns);
        prop_assert!(rel(a.rates.e_ns, b.rates.e_ns) < TOL, "E {} vs mirrored full {}", a.rates.e_ns, b.rates.e_ns);
    }

    /// Whatever the mode, in steady state no pair beats the slower party.
    /// (During the transient it can: the queue absorbs the difference.)
    #[test]
    fn never_faster_than_the_slower_party(p in any_params(), b in 0u64..20_000) {
        let floor = p.w_p.mean_ns().max(p.w_c.mean_ns());
        let Some(warmup) = steady_warmup(&p) else { return Err(TestCaseError::reject("transient too long")) };
        // T is defined over whole rounds: the run must hold many of them.
        prop_assume!(predict(&p, WaitMode::Notify).unwrap().round_messages.unwrap_or(1) <= 500);
        for mode in [WaitMode::Notify, WaitMode::Poll, WaitMode::Spin { budget_ns: b as f64 }] {
            let s = simulate(&SimConfig { warmup, ..SimConfig::new(p, mode, 5_000) }).unwrap();
            prop_assert!(s.rates.t_ns >= floor * (1.0 - 1e-9), "{mode}: T = {} < max(W) = {floor}", s.rates.t_ns);
        }
    }
}

#[test]
fn spin_with_zero_budget_is_notify() {
    let p = Params::default();
    let a = simulate(&SimConfig::new(p, WaitMode::Notify, 50_000)).unwrap();
    let b = simulate(&SimConfig::new(
        p,
        WaitMode::Spin { budget_ns: 0.0 },
        50_000,
    ))
    .unwrap();
    assert_eq!((a.rates.t_ns, a.rates.e_ns), (b.rates.t_ns, b.rates.e_ns));
}

#[test]
fn huge_spin_budget_is_poll_in_throughput() {
    // A budget longer than any wait never sleeps: the throughput of polling.
    let p = Params {
        w_p: kicklab_model::Cost::Const(700.0),
        ..Params::default()
    };
    let poll = simulate(&SimConfig::new(p, WaitMode::Poll, 50_000)).unwrap();
    let spin = simulate(&SimConfig::new(
        p,
        WaitMode::Spin { budget_ns: 1e6 },
        50_000,
    ))
    .unwrap();
    assert_eq!(spin.rates.sleeps_p + spin.rates.sleeps_c, 0);
    assert!(
        rel(poll.rates.t_ns, spin.rates.t_ns) < 1e-9,
        "{} vs {}",
        poll.rates.t_ns,
        spin.rates.t_ns
    );
}

/// An idle curve with one point is a constant factor on every start-up:
/// the simulator then gives the model with S_P, S_C scaled by it. With two
/// points, a pair whose sleeper always sleeps the same time gets the factor
/// at that time.
#[test]
fn idle_scale_multiplies_start_ups_at_the_sleepers_idle_time() {
    use kicklab_model::{Cost, IdleScale};
    let base = Params {
        w_p: Cost::Const(2000.0),
        ..Params::default()
    };
    let scaled = Params {
        s_c: Cost::Const(base.s_c.mean_ns() * 3.0),
        s_p: Cost::Const(base.s_p.mean_ns() * 3.0),
        ..base
    };
    let three = IdleScale::new(&[(1000.0, 3.0)]).unwrap();
    let mut cfg = SimConfig::new(base, WaitMode::Notify, 50_000);
    cfg.idle_scale = [Some(three), Some(three)];
    let sim = simulate(&cfg).unwrap();
    let model = predict(&scaled, WaitMode::Notify).unwrap();
    assert!(rel(sim.rates.t_ns, model.rates.t_ns) < TOL);
    assert!(rel(sim.rates.e_ns, model.rates.e_ns) < TOL);
    // FC with m = 1: C sleeps for the round minus its own busy time,
    // which grows with S_C, so S_C is a fixed point: S = S_0 f(idle(S)).
    // Iterate it on the model, as a user of the curve would.
    let curve = IdleScale::new(&[(300.0, 1.0), (30_000.0, 5.0)]).unwrap();
    cfg.idle_scale = [None, Some(curve)];
    let sim = simulate(&cfg).unwrap();
    let mut s_c = 200.0;
    let mut at = base;
    for _ in 0..100 {
        at.s_c = Cost::Const(s_c);
        let m = predict(&at, WaitMode::Notify).unwrap();
        let busy_c = m.rates.e_c_ns * m.round_messages.unwrap() as f64;
        s_c = 200.0 * curve.factor(m.round_ns.unwrap() - busy_c);
    }
    assert!(s_c > 300.0, "the curve matters here: S_C = {s_c}");
    let model = predict(&at, WaitMode::Notify).unwrap();
    assert!(
        rel(sim.rates.t_ns, model.rates.t_ns) < 1e-6,
        "{} vs {}",
        sim.rates.t_ns,
        model.rates.t_ns
    );
    assert!(
        rel(sim.rates.e_ns, model.rates.e_ns) < 1e-6,
        "{} vs {}",
        sim.rates.e_ns,
        model.rates.e_ns
    );
}
