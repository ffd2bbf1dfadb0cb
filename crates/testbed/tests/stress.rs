//! Stress: randomized queue lengths, thresholds, work, wait strategies and
//! backends, real threads. Every message carries its sequence number; the
//! consumer counts lost, duplicated and reordered ones, and a watchdog turns
//! a lost wake-up into a failure instead of a hang.
//!
//! - `cargo test -p kicklab-testbed --test stress --release`: about a minute
//!   (`KICKLAB_STRESS_SECS` to change).
//! - `cargo test -p kicklab-testbed --test stress --release -- --ignored`:
//!   10^8 messages (`KICKLAB_STRESS_MESSAGES` to change).

use std::time::{Duration, Instant};

use kicklab_model::{Cost, Params};
use kicklab_ring::{NotifierKind, WaitStrategy};
use kicklab_testbed::{run_pair, PairConfig};

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
    let strategy = |rng: &mut Rng| match rng.below(3) {
        0 => WaitStrategy::Poll,
        1 => WaitStrategy::Block,
        _ => WaitStrategy::SpinThenBlock(Duration::from_nanos(rng.below(20_000))),
    };
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
        strategy_p: strategy(rng),
        strategy_c: strategy(rng),
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
            1 + u32::try_from(rng.below(8)).unwrap()
        },
    }
}

fn check(cfg: &PairConfig) -> u64 {
    let r = run_pair(cfg).unwrap_or_else(|e| panic!("{e} with {cfg:?}"));
    assert_eq!(r.lost, 0, "lost messages with {cfg:?}");
    assert_eq!(
        r.duplicated_or_reordered, 0,
        "duplicated or reordered messages with {cfg:?}"
    );
    cfg.messages + cfg.warmup
}

#[test]
fn randomized_pairs_lose_nothing_and_never_hang() {
    let secs = env("KICKLAB_STRESS_SECS", 60);
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
    assert!(runs >= 10, "only {runs} runs in {secs} s");
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
