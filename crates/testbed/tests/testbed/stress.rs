//! Stress: randomized queue lengths, thresholds, work, wait strategies
//! (every family of `WaitMode`, P and C each their own) and backends, real
//! threads; and every strategy family on the futex backend in turn. Every
//! message carries its sequence number; the consumer counts lost,
//! duplicated and reordered ones, and a watchdog turns a lost wake-up into
//! a failure instead of a hang.
//!
//! - `cargo test -p kicklab-testbed --test testbed --release stress::`: about 20 s
//!   (`KICKLAB_STRESS_SECS`, 10 by default, for the randomized part).
//! - `cargo test -p kicklab-testbed --test testbed --release stress:: -- --ignored`:
//!   10^8 messages (`KICKLAB_STRESS_MESSAGES` to change).

use std::time::{Duration, Instant};

use kicklab_model::{Cost, Params, WaitMode};
use kicklab_ring::NotifierKind;
use kicklab_testbed::{run_pair, Backend, Flush, PairConfig, PairResult};

/// SplitMix64: a tiny deterministic generator for the parameters.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn random_config(rng: &mut Rng, messages: u64) -> PairConfig {
    let len = 1 + u32::try_from(rng.below(64)).unwrap();
    let len = if rng.below(4) == 0 { 1 + len % 4 } else { len }; // short queues often
    let work = |rng: &mut Rng| {
        #[allow(clippy::cast_precision_loss)]
        let ns = rng.below(3000) as f64;
        match rng.below(3) {
            0 => Cost::Const(0.0),
            1 => Cost::Const(ns),
            _ => Cost::Exp {
                mean_ns: ns.max(1.0),
            },
        }
    };
    let strategy = |rng: &mut Rng| random_mode(rng);
    let params = Params {
        len,
        k_p: 1 + u32::try_from(rng.below(u64::from(len))).unwrap(),
        k_c: 1 + u32::try_from(rng.below(u64::from(len))).unwrap(),
        w_p: work(rng),
        w_c: work(rng),
        ..Params::default()
    };
    PairConfig {
        params,
        mode_p: strategy(rng),
        mode_c: strategy(rng),
        backend: kicklab_testbed::Backend::Threads(
            NotifierKind::ALL[usize::try_from(rng.below(3)).unwrap()],
        ),
        messages,
        warmup: messages / 10,
        seed: rng.next(),
        timeout: Duration::from_secs(60),
        batch: if rng.below(2) == 0 {
            1
        } else {
            1 + u32::try_from(rng.below(8)).unwrap().min(len - 1)
        },
        flush: match rng.below(3) {
            0 => Flush::Full,
            #[allow(clippy::cast_precision_loss)]
            1 => Flush::Timer {
                ns: (1 + rng.below(50_000)) as f64,
            },
            _ => Flush::OnInterrupt,
        },
        latency: rng.below(2) == 0,
        record: 0,
    }
}

/// A strategy of any family, with random parameters.
fn random_mode(rng: &mut Rng) -> WaitMode {
    let us = |rng: &mut Rng, max: u64| format!("{}ns", rng.below(max * 1000));
    let s = match rng.below(10) {
        0 => "poll".to_string(),
        1 => "notify".to_string(),
        2 => format!("spin:{}", us(rng, 20)),
        3 => format!("sleep:{}", 1 + rng.below(50_000)),
        4 => format!("halt-poll:max={},shrink={}", us(rng, 200), rng.below(3)),
        5 => format!("haltpoll:max={}", us(rng, 200)),
        6 => ["hybrid", "hybrid:min"][usize::try_from(rng.below(2)).unwrap()].to_string(),
        7 => format!(
            "defer:timeout={},count={}",
            1 + rng.below(30_000),
            rng.below(12)
        ),
        8 => format!("coalesce:{},{}", 1 + rng.below(16), us(rng, 50)),
        _ => format!("adaptive:latency={}", 1000 + rng.below(200_000)),
    };
    WaitMode::parse(&s).unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn check(cfg: &PairConfig) -> u64 {
    checked(cfg);
    cfg.messages + cfg.warmup
}

fn checked(cfg: &PairConfig) -> PairResult {
    let r = run_pair(cfg).unwrap_or_else(|e| panic!("{e} with {cfg:?}"));
    assert_eq!(r.lost, 0, "lost messages with {cfg:?}");
    assert_eq!(
        r.duplicated_or_reordered, 0,
        "duplicated or reordered messages with {cfg:?}"
    );
    assert!(r.naps_p <= r.rates.sleeps_p && r.naps_c <= r.rates.sleeps_c);
    if let Some(l) = r.rates.latency_ns {
        assert!(l.p50 <= l.p99 && l.p99 <= l.max, "{l:?}");
    } else {
        assert!(!cfg.latency, "latency asked for, not measured: {cfg:?}");
    }
    r
}

/// Every family (the defaults, and some parameters that stress it), both
/// parties alike and each against another, with P faster, C faster and a
/// short queue with thresholds above 1: nothing lost, no hang; a party
/// that never registers (`poll`, `sleep`, `hybrid`) is never kicked.
#[test]
fn every_strategy_family_on_futex_loses_nothing() {
    let families = [
        "notify",
        "poll",
        "spin:5us",
        "sleep:20us",
        "sleep:3us",
        "halt-poll",
        "halt-poll:max=20us,shrink=0",
        "haltpoll",
        "hybrid",
        "hybrid:min",
        "defer",
        "defer:timeout=5us,count=2",
        "coalesce:8,20us",
        "coalesce:64,1ms",
        "adaptive",
        "adaptive:latency=20us",
    ];
    let modes: Vec<WaitMode> = families
        .iter()
        .map(|s| WaitMode::parse(s).unwrap())
        .collect();
    let start = Instant::now();
    let mut runs = 0;
    for (i, &mode) in modes.iter().enumerate() {
        let other = modes[(i + 5) % modes.len()];
        for (mode_p, mode_c) in [(mode, mode), (mode, other), (other, mode)] {
            for (len, k, wp, wc) in [
                (256, 1, 500.0, 1100.0),
                (256, 1, 3000.0, 1100.0),
                (4, 2, 1000.0, 1000.0),
            ] {
                let cfg = PairConfig {
                    params: Params {
                        len,
                        k_p: k,
                        k_c: k,
                        w_p: Cost::Const(wp),
                        w_c: Cost::Exp { mean_ns: wc },
                        ..Params::default()
                    },
                    mode_p,
                    mode_c,
                    backend: Backend::Threads(NotifierKind::Futex),
                    messages: 5_000,
                    warmup: 500,
                    seed: 7,
                    timeout: Duration::from_secs(10),
                    batch: 1,
                    flush: Flush::Full,
                    latency: true,
                    record: 0,
                };
                let r = checked(&cfg);
                let rates = &r.rates;
                // A message's latency includes C's work on it.
                let l = rates.latency_ns.expect("measured");
                assert!(l.max >= wc, "{l:?} with {cfg:?}");
                if !mode_p.may_block() {
                    assert_eq!(rates.notifications_c, 0, "P {mode_p} is never kicked");
                }
                if !mode_c.may_block() {
                    assert_eq!(rates.notifications_p, 0, "C {mode_c} is never kicked");
                }
                if let WaitMode::Sleep { .. } = mode_c {
                    assert_eq!(r.naps_c, rates.sleeps_c, "C {mode_c} only naps");
                }
                // The self-check's account: only adaptive's, and at most an
                // entry per epoch of 1024 of the party's 5 500 messages.
                for (mode, check) in [(mode_p, r.self_check_p), (mode_c, r.self_check_c)] {
                    let checked = matches!(mode, WaitMode::Adaptive { check: true, .. });
                    assert_eq!(check.is_some(), checked, "{mode}: {check:?}");
                    if let Some(c) = check {
                        let epochs = c.epochs_planner + c.epochs_fallback;
                        assert!((1..=6).contains(&epochs), "{mode}: {c:?}");
                    }
                }
                runs += 1;
            }
        }
    }
    println!(
        "stress: {runs} runs of every strategy family, 0 lost, 0 hangs in {:?}",
        start.elapsed()
    );
}

#[test]
fn randomized_pairs_lose_nothing_and_never_hang() {
    let secs = env("KICKLAB_STRESS_SECS", 10);
    let mut rng = Rng(env("KICKLAB_STRESS_SEED", 0x6b69_636b));
    let start = Instant::now();
    let (mut runs, mut moved) = (0u64, 0u64);
    while start.elapsed() < Duration::from_secs(secs) {
        let messages = 1_000 + rng.below(30_000);
        let cfg = random_config(&mut rng, messages);
        moved += check(&cfg);
        runs += 1;
    }
    println!("stress: {runs} randomized runs, {moved} messages, 0 lost, 0 duplicated or reordered, 0 hangs in {:?}", start.elapsed());
    assert!(runs >= 5, "only {runs} runs in {secs} s");
}

#[test]
#[ignore = "long: 10^8 messages"]
fn hundred_million_messages() {
    let total = env("KICKLAB_STRESS_MESSAGES", 100_000_000);
    let mut rng = Rng(7);
    let mut moved = 0;
    while moved < total {
        let mut cfg = random_config(&mut rng, 2_000_000);
        // Short work, so that 10^8 messages take minutes, not hours.
        cfg.params.w_p = Cost::Const(0.0);
        cfg.params.w_c = if rng.below(2) == 0 {
            Cost::Const(0.0)
        } else {
            Cost::Exp { mean_ns: 50.0 }
        };
        cfg.timeout = Duration::from_secs(600);
        moved += check(&cfg);
    }
    println!("stress: {moved} messages, 0 lost, 0 duplicated or reordered, 0 hangs");
}
