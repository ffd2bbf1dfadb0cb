//! The fast two-party loop against the plain priority-queue implementation
//! of the same rules. Same seeded streams, so the same draws: every total of
//! the run must be equal, exactly, for random costs, every wait mode and
//! mixed modes (P and C waiting differently).

use kicklab_model::{Cost, IdleScale, Mix, Params, Phases, SimpleCost, WaitMode, MAX_PHASES};
use kicklab_sim::reference::simulate_reference;
use kicklab_sim::{simulate, simulate_control, SimConfig, Start};
use proptest::prelude::*;

fn cost() -> impl Strategy<Value = Cost> {
    let simple = || simple_cost().prop_map(|c| c.simple().unwrap());
    prop_oneof![
        4 => simple_cost(),
        // Zero costs: a message written, a kick sent or a start-up paid at
        // the instant it began, where ties decide everything.
        1 => Just(Cost::Const(0.0)),
        1 => proptest::collection::vec((simple(), 1u64..300), 2..=MAX_PHASES)
            .prop_map(|v: Vec<(SimpleCost, u64)>| Cost::Phases(Phases::new(&v).unwrap())),
        1 => (0.0f64..=1.0, simple(), simple())
            .prop_map(|(p, first, second)| Cost::Mix(Mix { p, first, second })),
    ]
}

fn simple_cost() -> impl Strategy<Value = Cost> {
    let ns = 0.0f64..5000.0;
    prop_oneof![
        ns.clone()
            .prop_map(|v| Cost::Const((v * 1000.0).round() / 1000.0)),
        (ns.clone(), 0.0f64..2000.0).prop_map(|(a, d)| Cost::Uniform {
            lo_ns: a,
            hi_ns: a + d
        }),
        ns.clone().prop_map(|m| Cost::Exp { mean_ns: m }),
        (ns.clone(), 0.0f64..2000.0).prop_map(|(m, sd)| Cost::Normal {
            mu_ns: m,
            sd_ns: sd
        }),
        (ns, 0.0f64..1.5).prop_map(|(m, s)| Cost::LogNormal {
            mean_ns: m,
            sigma: s
        }),
    ]
}

fn mode() -> impl Strategy<Value = WaitMode> {
    prop_oneof![
        Just(WaitMode::Notify),
        Just(WaitMode::Poll),
        (0.0f64..10_000.0).prop_map(|b| WaitMode::Spin { budget_ns: b }),
    ]
}

fn params() -> impl Strategy<Value = Params> {
    (
        1u32..40,
        any::<u32>(),
        any::<u32>(),
        [cost(), cost(), cost(), cost(), cost(), cost()],
        [visibility(), visibility()],
    )
        .prop_map(|(len, kp, kc, c, v)| Params {
            len,
            k_p: 1 + kp % len,
            k_c: 1 + kc % len,
            w_p: c[0],
            w_c: c[1],
            n_p: c[2],
            n_c: c[3],
            s_p: c[4],
            s_c: c[5],
            v_p: v[0].map(|f| f.of(c[2])),
            v_c: v[1].map(|f| f.of(c[3])),
        })
}

/// V as a share of N's mean, constant or exponential; `None` is V = N.
#[derive(Debug, Clone, Copy)]
enum Share {
    Const(f64),
    Exp(f64),
}

impl Share {
    fn of(self, n: Cost) -> Cost {
        match self {
            Share::Const(f) => Cost::Const((f * n.mean_ns() * 1000.0).floor() / 1000.0),
            Share::Exp(f) => Cost::Exp {
                mean_ns: (f * n.mean_ns() * 1000.0).floor() / 1000.0,
            },
        }
    }
}

fn idle_scale() -> impl Strategy<Value = Option<IdleScale>> {
    prop_oneof![
        Just(None),
        (1.0f64..20_000.0, 0.1f64..10.0, 0.1f64..10.0)
            .prop_map(|(x, a, b)| Some(IdleScale::new(&[(x, a), (x * 10.0, b)]).unwrap())),
    ]
}

fn visibility() -> impl Strategy<Value = Option<Share>> {
    prop_oneof![
        Just(None),
        (0.0f64..=1.0).prop_map(|f| Some(Share::Const(f))),
        (0.0f64..=1.0).prop_map(|f| Some(Share::Exp(f))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: crate::cases(400), ..ProptestConfig::default() })]

    #[test]
    fn fast_loop_equals_reference(p in params(), mode_p in mode(), mode_c in mode(), seed in any::<u64>(), warmup in 0u64..500, messages in 1u64..3000, full in any::<bool>(), scale in idle_scale()) {
        let idle_scale = [scale, scale.map(|s| IdleScale::new(&[(s.points()[0].0, 2.0)]).unwrap())];
        let start = if full { Start::Full } else { Start::Empty };
        let cfg = SimConfig { params: p, mode_p, mode_c, messages, warmup, seed, latency: true, start, idle_scale, nap: [None, None], combine: kicklab_sim::Combine::default() };
        let fast = simulate(&cfg).unwrap();
        let reference = simulate_reference(&cfg).unwrap();
        prop_assert_eq!(fast.totals, reference);
    }

    /// The loop that runs every strategy (`control.rs`) draws the same
    /// costs in the same order for notify, poll and spin: same totals.
    #[test]
    fn control_loop_equals_fast_loop(p in params(), mode_p in mode(), mode_c in mode(), seed in any::<u64>(), warmup in 0u64..500, messages in 1u64..3000, full in any::<bool>(), scale in idle_scale()) {
        let idle_scale = [scale, scale.map(|s| IdleScale::new(&[(s.points()[0].0, 2.0)]).unwrap())];
        let start = if full { Start::Full } else { Start::Empty };
        let cfg = SimConfig { params: p, mode_p, mode_c, messages, warmup, seed, latency: true, start, idle_scale, nap: [None, None], combine: kicklab_sim::Combine::default() };
        let fast = simulate(&cfg).unwrap();
        let control = simulate_control(&cfg).unwrap();
        prop_assert_eq!(fast.totals, control.totals);
        prop_assert_eq!(fast.rates.latency_ns.map(|l| (l.p50, l.p99, l.max)), control.rates.latency_ns.map(|l| (l.p50, l.p99, l.max)));
    }
}

#[test]
fn agrees_on_the_paper_setup_with_every_distribution() {
    for c in [
        "exp:1us",
        "uniform:0.5us,1.5us",
        "normal:1us,0.5us",
        "lognormal:1us,0.8",
        "phases:0.5us@5000+3us@5000",
        "phases:exp:1us@100+uniform:2us,3us@37+0.2us@3",
        "mix:0.01:1us+50us",
        "mix:0.3:normal:1us,0.5us+lognormal:2us,0.5",
    ] {
        let p = Params {
            w_p: Cost::parse(c).unwrap(),
            ..Params::default()
        };
        for mode in [
            WaitMode::Notify,
            WaitMode::Poll,
            WaitMode::Spin { budget_ns: 3000.0 },
        ] {
            let cfg = SimConfig::new(p, mode, 50_000);
            assert_eq!(
                simulate(&cfg).unwrap().totals,
                simulate_reference(&cfg).unwrap(),
                "{c} {mode}"
            );
        }
    }
}

/// A message written in no time is published at the instant P reserves
/// it, and a claim attempted at that instant sees it (the tie rule): a
/// polling producer with no work never lets a one-slot queue run dry, so
/// the sleeping consumer is never kicked. The fast loop claimed before
/// P's reserve at that instant and kicked C once a message (found by an
/// independent implementation of the rules).
#[test]
fn a_message_written_in_no_time_is_seen_by_a_claim_at_that_instant() {
    let p = Params {
        len: 1,
        k_p: 1,
        k_c: 1,
        w_p: Cost::Const(0.0),
        w_c: Cost::Const(1624.1),
        n_p: Cost::Const(100.0),
        n_c: Cost::Const(3706.0),
        s_p: Cost::Const(16015.0),
        s_c: Cost::Const(0.0),
        v_p: None,
        v_c: None,
    };
    let cfg = SimConfig {
        mode_p: WaitMode::Poll,
        mode_c: WaitMode::Notify,
        warmup: 1000,
        ..SimConfig::new(p, WaitMode::Notify, 20_000)
    };
    let fast = simulate(&cfg).unwrap();
    assert_eq!(fast.totals, simulate_reference(&cfg).unwrap());
    assert_eq!(fast.totals, simulate_control(&cfg).unwrap().totals);
    assert_eq!((fast.rates.notifications_p, fast.rates.sleeps_c), (0, 0));
    assert!(
        (fast.rates.t_ns - 1624.1).abs() < 1e-9,
        "{}",
        fast.rates.t_ns
    );
}
