//! The polling rings' own instructions per message: one thread pushes 256
//! messages, then pops them, and again, so no cache line moves between CPUs
//! (the `alternatives` benchmark adds that traffic, which dominates there).
//! kicklab's ring against rtrb, with an A/A row (rtrb again) for the noise.
//!
//! Run: `cargo bench -p kicklab-testbed --bench one_thread`
//! (`KICKLAB_BENCH_MESSAGES`, default 20 000 000 per run;
//! `KICKLAB_BENCH_REPS`, default 15).
//!
//! A separate binary, not a section of `alternatives`: there, a second call
//! site of `rtrb::RingBuffer::new` made LLVM stop inlining it, which changes
//! how the two-thread loops compile (the ratio did not move measurably, but
//! the benchmark should not depend on it).

mod common;
use common::quantile;

use std::hint::black_box;
use std::time::Instant;

use kicklab_ring::ring;
use kicklab_testbed::clock::{pin, thread_cpu_ns};

const LEN: u32 = 256;

/// Pushes `LEN`, pops `LEN` and checks the sequence, for at least `n`
/// messages; returns ns per message. A macro, so that each ring's loop is
/// the code a user would write against its own API.
macro_rules! one_thread {
    ($n:expr, $pc:expr) => {{
        let (n, (mut p, mut c)) = ($n, $pc);
        let rounds = u64::div_ceil(n, u64::from(LEN));
        let t = Instant::now();
        let mut i = 0;
        for _ in 0..rounds {
            for k in 0..u64::from(LEN) {
                assert!(p.push(i + k).is_ok(), "ring full early");
            }
            for _ in 0..LEN {
                assert_eq!(c.pop().ok(), Some(i), "ring empty early");
                i += 1;
            }
        }
        #[allow(clippy::cast_precision_loss)]
        let ns = t.elapsed().as_nanos() as f64 / i as f64;
        ns
    }};
}

// The length goes through `black_box`: with a constant, LLVM folds it into
// kicklab's loops (an endpoint keeps its own copy of L) but not into rtrb's
// (which reads its capacity from the shared buffer on every push and pop),
// and measured 0.62x rtrb instead of the figure for a length known only at
// run time.
fn kicklab(n: u64) -> f64 {
    one_thread!(n, ring(black_box(LEN)))
}

fn rtrb(n: u64) -> f64 {
    one_thread!(n, rtrb::RingBuffer::<u64>::new(black_box(LEN as usize)))
}

fn main() {
    let quick = !std::env::args().any(|a| a == "--bench");
    let n: u64 = std::env::var("KICKLAB_BENCH_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 20_000 } else { 20_000_000 });
    let reps: usize = std::env::var("KICKLAB_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 1 } else { 15 });
    pin(0);
    let cpu0 = thread_cpu_ns();
    type Run = fn(u64) -> f64;
    let contenders: [(&str, Run); 3] = [
        ("kicklab ring", kicklab),
        ("rtrb", rtrb),
        ("rtrb again (A/A control)", rtrb),
    ];
    // Interleaved, each repetition in another order (a rotation), so that
    // the machine's drift hits every contender alike.
    let mut ns: Vec<Vec<f64>> = vec![Vec::new(); contenders.len()];
    for rep in 0..reps {
        for j in 0..contenders.len() {
            let i = (rep + j) % contenders.len();
            ns[i].push((contenders[i].1)(n));
        }
    }
    println!(
        "one thread pinned to CPU 0: {LEN} pushes, then {LEN} pops, and again; {n} messages per run, {reps} repetitions ({:.1} s of CPU)",
        1e-9 * (thread_cpu_ns() - cpu0) as f64
    );
    println!(
        "  {:<26} {:>10} {:>9} {:>17}",
        "", "ns/message", "vs rtrb", "p10-p90 of ratio"
    );
    for ((name, _), r) in contenders.iter().zip(&ns) {
        let mut ratios: Vec<f64> = r.iter().zip(&ns[1]).map(|(a, b)| a / b).collect();
        ratios.sort_by(f64::total_cmp);
        let mut sorted = r.clone();
        sorted.sort_by(f64::total_cmp);
        println!(
            "  {name:<26} {:>10.2} {:>8.2}x {:>8.2}-{:.2}x",
            quantile(&sorted, 0.5),
            quantile(&ratios, 0.5),
            quantile(&ratios, 0.1),
            quantile(&ratios, 0.9),
        );
    }
}
