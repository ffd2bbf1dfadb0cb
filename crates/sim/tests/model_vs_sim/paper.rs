//! The paper's own statements (Rizzo et al., Sections 2-4), checked on the
//! model and on the simulator.

use kicklab_model::{predict, Cost, Params, Regime, WaitMode};
use kicklab_sim::{simulate, SimConfig};

use crate::rel;

fn both(p: &Params) -> (f64, f64) {
    let model = predict(p, WaitMode::Notify).unwrap();
    let sim = simulate(&SimConfig::new(*p, WaitMode::Notify, 200_000)).unwrap();
    assert!(
        rel(model.rates.t_ns, sim.rates.t_ns) < 1e-9,
        "model {} sim {}",
        model.rates.t_ns,
        sim.rates.t_ns
    );
    (model.rates.t_ns, sim.rates.t_ns)
}

#[test]
fn polling_cost_is_twice_the_slower_party() {
    // Eq. (1): T_GP = max(W_P, W_C), E_GP = 2 T_GP.
    for w_p in [300.0, 1100.0, 2500.0] {
        let p = Params {
            w_p: Cost::Const(w_p),
            ..Params::default()
        };
        let model = predict(&p, WaitMode::Poll).unwrap();
        let sim = simulate(&SimConfig::new(p, WaitMode::Poll, 100_000)).unwrap();
        let slower = w_p.max(1100.0);
        assert_eq!(model.regime, Regime::GP);
        assert!(
            rel(model.rates.t_ns, slower) < 1e-12 && rel(sim.rates.t_ns, slower) < 1e-9,
            "{w_p}: {}",
            sim.rates.t_ns
        );
        assert!(
            rel(model.rates.e_ns, 2.0 * slower) < 1e-12 && rel(sim.rates.e_ns, 2.0 * slower) < 1e-9,
            "{w_p}: {}",
            sim.rates.e_ns
        );
    }
}

#[test]
fn in_fc_a_slower_wakeup_can_raise_throughput() {
    // Section 3.1: "a slower wakeup time improves performance". W_P = 2 us,
    // W_C = 1 us: S_C = 0.2 us gives m = 1, S_C = 1 us gives m = 2.
    let fast_wake = Params {
        w_p: Cost::Const(2000.0),
        w_c: Cost::Const(1000.0),
        ..Params::default()
    };
    let slow_wake = Params {
        s_c: Cost::Const(1000.0),
        ..fast_wake
    };
    assert_eq!(
        predict(&fast_wake, WaitMode::Notify).unwrap().regime,
        Regime::FC
    );
    assert_eq!(
        predict(&slow_wake, WaitMode::Notify).unwrap().regime,
        Regime::FC
    );
    let (t_fast_model, t_fast_sim) = both(&fast_wake);
    let (t_slow_model, t_slow_sim) = both(&slow_wake);
    assert!(
        t_slow_model < t_fast_model && t_slow_sim < t_fast_sim,
        "{t_slow_sim} !< {t_fast_sim}"
    );
    assert!(rel(t_fast_model, 4400.0) < 1e-12 && rel(t_slow_model, 3200.0) < 1e-12);
}

#[test]
fn in_fc_slowing_the_fast_consumer_raises_throughput() {
    // Section 3.1: "increasing the processing costs (W_C in FC) increases
    // throughput": C is fast; making it slower batches more per wake-up.
    let fast_c = Params {
        w_p: Cost::Const(2000.0),
        w_c: Cost::Const(1000.0),
        ..Params::default()
    };
    let slower_c = Params {
        w_c: Cost::Const(1900.0),
        ..fast_c
    };
    assert_eq!(
        predict(&slower_c, WaitMode::Notify).unwrap().regime,
        Regime::FC
    );
    let (m0, s0) = both(&fast_c);
    let (m1, s1) = both(&slower_c);
    assert!(m1 < m0 && s1 < s0, "T went {s0} -> {s1}");
}

#[test]
fn in_fp_slowing_the_fast_producer_raises_throughput() {
    // The negative slope of T_FP in Fig. 2: W_P from 0.5 us to 1 us with
    // W_C = 1.1 us; m grows from 7 to 40.
    let fast_p = Params {
        w_p: Cost::Const(500.0),
        ..Params::default()
    };
    let slower_p = Params {
        w_p: Cost::Const(1000.0),
        ..Params::default()
    };
    assert_eq!(
        predict(&fast_p, WaitMode::Notify).unwrap().regime,
        Regime::FP
    );
    assert_eq!(
        predict(&slower_p, WaitMode::Notify).unwrap().regime,
        Regime::FP
    );
    let (m0, s0) = both(&fast_p);
    let (m1, s1) = both(&slower_p);
    assert!(m1 < m0 && s1 < s0, "T went {s0} -> {s1}");
}

#[test]
fn k_c_helps_in_fp_and_hurts_in_scs() {
    // Section 2.2.3: "in FP, a large k_C improves performance, whereas in SCS
    // we should use a small k_C".
    let fp = Params {
        w_p: Cost::Const(500.0),
        ..Params::default()
    };
    let fp_big_k = Params { k_c: 64, ..fp };
    assert_eq!(
        predict(&fp_big_k, WaitMode::Notify).unwrap().regime,
        Regime::FP
    );
    assert!(both(&fp_big_k).1 < both(&fp).1);

    let scs = Params {
        len: 8,
        w_p: Cost::Const(2000.0),
        w_c: Cost::Const(1000.0),
        s_c: Cost::Const(20_000.0),
        s_p: Cost::Const(500.0),
        ..Params::default()
    };
    let scs_big_k = Params { k_c: 3, ..scs };
    assert_eq!(predict(&scs, WaitMode::Notify).unwrap().regime, Regime::SCS);
    assert_eq!(
        predict(&scs_big_k, WaitMode::Notify).unwrap().regime,
        Regime::SCS
    );
    assert!(both(&scs_big_k).1 > both(&scs).1);
}

#[test]
fn short_queue_regimes_are_slower_than_fc_fp() {
    // Section 3.1: SCS, SPS and SS all have a larger inter-message time than
    // FC/FP with the same costs and a long queue.
    let long = Params {
        w_p: Cost::Const(700.0),
        ..Params::default()
    };
    let short = Params { len: 2, ..long };
    assert_eq!(predict(&long, WaitMode::Notify).unwrap().regime, Regime::FP);
    assert!(matches!(
        predict(&short, WaitMode::Notify).unwrap().regime,
        Regime::SPS | Regime::SS
    ));
    assert!(both(&short).1 > 2.0 * both(&long).1);
}

#[test]
fn latency_follows_the_rules() {
    // FC with m = 1: every message waits for the kick, the wake-up and its
    // own processing: N_P + S_C + W_C.
    let fc = Params {
        w_p: Cost::Const(2000.0),
        ..Params::default()
    };
    let l = simulate(&SimConfig::new(fc, WaitMode::Notify, 50_000))
        .unwrap()
        .rates
        .latency_ns
        .unwrap();
    let want = 2400.0 + 200.0 + 1100.0;
    // Every latency is the same: the summary gives it exactly (the
    // histogram's buckets keep 3 significant digits; the percentiles are
    // held to the largest latency recorded, the mean is the exact sum's).
    assert_eq!((l.p50, l.p99, l.max, l.mean), (want, want, want, want));
    // Polling, slow producer: a message is claimed the instant it is
    // published, so its latency is W_C.
    let l = simulate(&SimConfig::new(fc, WaitMode::Poll, 50_000))
        .unwrap()
        .rates
        .latency_ns
        .unwrap();
    assert_eq!(
        (l.p50, l.p99, l.max, l.mean),
        (1100.0, 1100.0, 1100.0, 1100.0)
    );
    // Polling, fast producer: the queue stays full, so a message waits for
    // the L - 1 messages ahead of it and then its own W_C: between
    // (L - 1) W_C - W_P and L W_C.
    let fp = Params {
        w_p: Cost::Const(500.0),
        ..Params::default()
    };
    let l = simulate(&SimConfig::new(fp, WaitMode::Poll, 50_000))
        .unwrap()
        .rates
        .latency_ns
        .unwrap();
    let bound = 256.0 * 1100.0;
    assert!(
        l.p50 <= bound * 1.001 && l.p50 >= bound - 1100.0 - 500.0,
        "{l:?}"
    );
}
