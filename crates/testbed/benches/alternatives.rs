//! kicklab's ring against what a user would pick instead, in one run: the
//! same sequence-numbered messages, the same busy work, two threads pinned
//! to their own CPUs, a queue of 256. Reports throughput and CPU per message
//! (both threads) and the ratios to rtrb. (`one_thread.rs` times the
//! polling rings' own instructions, in one thread.)
//!
//! Run: `cargo bench -p kicklab-testbed --bench alternatives`
//! (`KICKLAB_BENCH_MESSAGES`, default 2 000 000 per run without work and
//! about 0.4 s of work per run otherwise;
//! `KICKLAB_BENCH_REPS`, default 15; `KICKLAB_BENCH_ONLY=a|b` to run only
//! contenders whose names contain a or b, and the three rtrb rows;
//! `KICKLAB_BENCH_WORK_NS`, default `0,1000`; `KICKLAB_BENCH_TSV=FILE` to
//! append every repetition to FILE). Each repetition runs every
//! contender once, in a shuffled order, with its rings at fresh heap
//! addresses; the ratio to rtrb is taken within each repetition. Two
//! controls: an A/A row (rtrb against itself) shows the run-to-run noise,
//! and a copy of rtrb's push/pop source compiled here shows what code
//! placement alone does.
//!
//! One binary fixes where every function lies for the whole run;
//! `layouts.sh` next to this file builds the benchmark with several link
//! orders and summarizes the ratios over all of them
//! (`alternatives --summarize FILE`).

mod common;
use common::quantile;

use std::time::Instant;

use kicklab_ring::{ring, FutexNotifier, Notifier, WaitStats, WaitStrategy};
use kicklab_testbed::clock::{pin, thread_cpu_ns, Tsc};

const LEN: u32 = 256;

struct Outcome {
    ns_per_msg: f64,
    cpu_per_msg: f64,
}

/// Runs `producer` on CPU 0 and `consumer` on CPU 1; both return their CPU
/// time. The consumer checks the sequence.
#[allow(clippy::cast_precision_loss)]
fn pair<P, C>(n: u64, producer: P, consumer: C) -> Outcome
where
    P: FnOnce(u64) + Send + 'static,
    C: FnOnce(u64) + Send + 'static,
{
    let t = Instant::now();
    let p = std::thread::spawn(move || {
        pin(0);
        let c0 = thread_cpu_ns();
        producer(n);
        thread_cpu_ns() - c0
    });
    let c = std::thread::spawn(move || {
        pin(1);
        let c0 = thread_cpu_ns();
        consumer(n);
        thread_cpu_ns() - c0
    });
    let cpu = p.join().unwrap() + c.join().unwrap();
    Outcome {
        ns_per_msg: t.elapsed().as_nanos() as f64 / n as f64,
        cpu_per_msg: cpu as f64 / n as f64,
    }
}

fn work(ticks: u64) {
    if ticks > 0 {
        Tsc::get().spin_ticks(ticks);
    }
}

/// The spinning loop every polling contender runs: the producer pushes
/// until there is room, the consumer pops until there is a message. A macro,
/// not a generic function over a trait, so that each contender's loop is
/// exactly the code a user would write against its own API.
macro_rules! spin_pair {
    ($n:expr, $w:expr, $p:expr, $c:expr) => {{
        let (w, mut p, mut c) = ($w, $p, $c);
        pair(
            $n,
            move |n| {
                // A corrupt kicklab ring would spin for ever here; the
                // tests cover that, not this benchmark.
                for i in 0..n {
                    work(w);
                    while p.push(i).is_err() {
                        std::hint::spin_loop();
                    }
                }
            },
            move |n| {
                for i in 0..n {
                    let m = loop {
                        if let Ok(m) = c.pop() {
                            break m;
                        }
                        std::hint::spin_loop();
                    };
                    assert_eq!(m, i);
                    work(w);
                }
            },
        )
    }};
}

fn kicklab_poll(n: u64, w: u64) -> Outcome {
    let (p, c) = ring(LEN);
    spin_pair!(n, w, p, c)
}

fn kicklab_notify(n: u64, w: u64) -> Outcome {
    kicklab_waiting(n, w, WaitStrategy::Block)
}

/// Spin-then-block, the strategy a blocking channel uses (crossbeam's
/// `Backoff` spins, then parks): 20 us covers a wake-up here.
fn kicklab_spin_then_block(n: u64, w: u64) -> Outcome {
    kicklab_waiting(
        n,
        w,
        WaitStrategy::SpinThenBlock(std::time::Duration::from_micros(20)),
    )
}

fn kicklab_waiting(n: u64, w: u64, strategy: WaitStrategy) -> Outcome {
    let (mut p, mut c) = ring(LEN);
    let to_c = std::sync::Arc::new(FutexNotifier::default());
    let to_p = std::sync::Arc::new(FutexNotifier::default());
    let (to_c2, to_p2) = (to_c.clone(), to_p.clone());
    pair(
        n,
        move |n| {
            let mut st = WaitStats::default();
            for i in 0..n {
                p.wait_for_space(1, strategy, &*to_p2, &mut st).unwrap();
                work(w);
                p.write(i).unwrap();
                let pubd = p.publish();
                if p.peer_wants_kick(pubd) {
                    to_c2.notify().unwrap();
                }
            }
            to_c2.notify().unwrap();
        },
        move |n| {
            let mut st = WaitStats::default();
            for i in 0..n {
                c.wait_for_messages(1, strategy, &*to_c, &mut st).unwrap();
                assert_eq!(c.claim().unwrap(), Some(i));
                work(w);
                let r = c.release();
                if c.peer_wants_kick(r) {
                    to_p.notify().unwrap();
                }
            }
        },
    )
}

/// The ring's wrap of a slot position, as `kicklab_ring` writes it: a
/// branch marked cold, not a `cmov` and not a call.
#[inline(always)]
fn next_pos(pos: usize) -> usize {
    if pos + 1 == LEN as usize {
        std::hint::cold_path();
        0
    } else {
        pos + 1
    }
}

/// Not an alternative a user would pick: the same spin loop written out by
/// hand over kicklab's `RingHeader` layout, with the indices in locals. It
/// tells layout costs (it would be slow too) from endpoint code costs.
fn inline_loop(n: u64, w: u64) -> Outcome {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let hdr = Arc::new(kicklab_ring::RingHeader::default());
    let slots: Arc<[AtomicU64]> = (0..LEN).map(|_| AtomicU64::new(0)).collect();
    let (h2, s2) = (hdr.clone(), slots.clone());
    pair(
        n,
        move |n| {
            let (mut tail, mut head_cache, mut pos) = (0u32, 0u32, 0usize);
            for i in 0..n {
                work(w);
                while tail.wrapping_sub(head_cache) == LEN {
                    head_cache = h2.head.0.load(Ordering::Acquire);
                    if tail.wrapping_sub(head_cache) == LEN {
                        std::hint::spin_loop();
                    }
                }
                s2[pos].store(i, Ordering::Relaxed);
                pos = next_pos(pos);
                tail = tail.wrapping_add(1);
                h2.tail.0.store(tail, Ordering::Release);
            }
        },
        move |n| {
            let (mut head, mut tail_cache, mut pos) = (0u32, 0u32, 0usize);
            for i in 0..n {
                while tail_cache == head {
                    tail_cache = hdr.tail.0.load(Ordering::Acquire);
                    if tail_cache == head {
                        std::hint::spin_loop();
                    }
                }
                let m = slots[pos].load(Ordering::Relaxed);
                pos = next_pos(pos);
                assert_eq!(m, i);
                work(w);
                head = head.wrapping_add(1);
                hdr.head.0.store(head, Ordering::Release);
            }
        },
    )
}

fn rtrb_spin(n: u64, w: u64) -> Outcome {
    let (p, c) = rtrb::RingBuffer::<u64>::new(LEN as usize);
    spin_pair!(n, w, p, c)
}

/// rtrb 0.4.1's `push`/`pop` path copied here line for line (MIT OR
/// Apache-2.0; `T = u64`, without chunks and the abandonment flag), for a
/// second control next to the A/A row: the same source as "rtrb, spin",
/// compiled into this binary at another address. How far it drifts from
/// rtrb shows how much of a ratio the placement of the code alone explains.
mod rtrb_copy {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// `crossbeam_utils::CachePadded` on x86-64.
    #[repr(align(128))]
    struct CachePadded<T>(T);

    pub struct RingBuffer {
        head: CachePadded<AtomicUsize>,
        tail: CachePadded<AtomicUsize>,
        data_ptr: *mut u64,
        capacity: usize,
    }

    // SAFETY: as in rtrb: the producer writes only slots the consumer has
    // freed (Release/Acquire on head and tail order the accesses).
    unsafe impl Sync for RingBuffer {}
    // SAFETY: as for Sync.
    unsafe impl Send for RingBuffer {}

    impl Drop for RingBuffer {
        fn drop(&mut self) {
            // SAFETY: `data_ptr` came from `Box::into_raw` of `capacity` u64s.
            drop(unsafe {
                Box::from_raw(std::ptr::slice_from_raw_parts_mut(
                    self.data_ptr,
                    self.capacity,
                ))
            });
        }
    }

    pub struct Producer {
        buffer: Arc<RingBuffer>,
        cached_head: Cell<usize>,
        cached_tail: Cell<usize>,
    }

    pub struct Consumer {
        buffer: Arc<RingBuffer>,
        cached_head: Cell<usize>,
        cached_tail: Cell<usize>,
    }

    // SAFETY: each endpoint is used by one thread at a time (it is moved,
    // not shared), as rtrb's are.
    unsafe impl Send for Producer {}
    // SAFETY: as for Producer.
    unsafe impl Send for Consumer {}

    pub fn new(capacity: usize) -> (Producer, Consumer) {
        let data = vec![0u64; capacity].into_boxed_slice();
        let buffer = Arc::new(RingBuffer {
            head: CachePadded(AtomicUsize::new(0)),
            tail: CachePadded(AtomicUsize::new(0)),
            data_ptr: Box::into_raw(data).cast::<u64>(),
            capacity,
        });
        let p = Producer {
            buffer: buffer.clone(),
            cached_head: Cell::new(0),
            cached_tail: Cell::new(0),
        };
        let c = Consumer {
            buffer,
            cached_head: Cell::new(0),
            cached_tail: Cell::new(0),
        };
        (p, c)
    }

    impl RingBuffer {
        fn collapse_position(&self, pos: usize) -> usize {
            if pos < self.capacity {
                pos
            } else {
                pos - self.capacity
            }
        }

        unsafe fn slot_ptr(&self, pos: usize) -> *mut u64 {
            let pos = self.collapse_position(pos);
            // SAFETY: pos < capacity after collapsing.
            unsafe { self.data_ptr.add(pos) }
        }

        fn increment1(&self, pos: usize) -> usize {
            if pos < 2 * self.capacity - 1 {
                pos + 1
            } else {
                0
            }
        }

        fn distance(&self, a: usize, b: usize) -> usize {
            if a <= b {
                b - a
            } else {
                2 * self.capacity - a + b
            }
        }
    }

    impl Producer {
        #[allow(clippy::result_unit_err)]
        pub fn push(&mut self, value: u64) -> Result<(), u64> {
            if let Some(tail) = self.next_tail() {
                // SAFETY: tail points to an empty slot.
                unsafe { self.buffer.slot_ptr(tail).write(value) };
                let tail = self.buffer.increment1(tail);
                self.buffer.tail.0.store(tail, Ordering::Release);
                self.cached_tail.set(tail);
                Ok(())
            } else {
                Err(value)
            }
        }

        fn next_tail(&self) -> Option<usize> {
            let tail = self.cached_tail.get();
            if self.buffer.distance(self.cached_head.get(), tail) == self.buffer.capacity {
                let head = self.buffer.head.0.load(Ordering::Acquire);
                self.cached_head.set(head);
                if self.buffer.distance(head, tail) == self.buffer.capacity {
                    return None;
                }
            }
            Some(tail)
        }
    }

    impl Consumer {
        #[allow(clippy::result_unit_err)]
        pub fn pop(&mut self) -> Result<u64, ()> {
            if let Some(head) = self.next_head() {
                // SAFETY: head points to a written slot.
                let value = unsafe { self.buffer.slot_ptr(head).read() };
                let head = self.buffer.increment1(head);
                self.buffer.head.0.store(head, Ordering::Release);
                self.cached_head.set(head);
                Ok(value)
            } else {
                Err(())
            }
        }

        fn next_head(&self) -> Option<usize> {
            let head = self.cached_head.get();
            if head == self.cached_tail.get() {
                let tail = self.buffer.tail.0.load(Ordering::Acquire);
                self.cached_tail.set(tail);
                if head == tail {
                    return None;
                }
            }
            Some(head)
        }
    }
}

fn rtrb_copy_spin(n: u64, w: u64) -> Outcome {
    let (p, c) = rtrb_copy::new(LEN as usize);
    spin_pair!(n, w, p, c)
}

fn crossbeam_bounded(n: u64, w: u64) -> Outcome {
    let (tx, rx) = crossbeam_channel::bounded::<u64>(LEN as usize);
    pair(
        n,
        move |n| {
            for i in 0..n {
                work(w);
                tx.send(i).unwrap();
            }
        },
        move |n| {
            for i in 0..n {
                assert_eq!(rx.recv().unwrap(), i);
                work(w);
            }
        },
    )
}

fn std_sync_channel(n: u64, w: u64) -> Outcome {
    let (tx, rx) = std::sync::mpsc::sync_channel::<u64>(LEN as usize);
    pair(
        n,
        move |n| {
            for i in 0..n {
                work(w);
                tx.send(i).unwrap();
            }
        },
        move |n| {
            for i in 0..n {
                assert_eq!(rx.recv().unwrap(), i);
                work(w);
            }
        },
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    quantile(&v, 0.5)
}

/// A heap allocation of a pseudo-random size, alive across one run, so
/// that each run's rings land at other addresses: without it every
/// repetition of a contender reuses the same freed blocks, and whatever
/// luck that placement has (the same rtrb code measured 7.9 ns/message in
/// one binary and 12.5 in another, minutes apart) becomes a fixed bias.
fn spacer(state: &mut u64) -> Vec<u8> {
    let r = next_random(state);
    #[allow(clippy::cast_possible_truncation)]
    let size = 64 + (r % 64) as usize * 1024 + (r >> 32) as usize % 64 * 64;
    vec![1u8; size]
}

/// Next xorshift64 state.
fn next_random(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// Fisher-Yates.
fn shuffle(order: &mut [usize], state: &mut u64) {
    for i in (1..order.len()).rev() {
        #[allow(clippy::cast_possible_truncation)]
        let j = (next_random(state) % (i as u64 + 1)) as usize;
        order.swap(i, j);
    }
}

/// Runs every contender `reps` times, interleaved, and prints a row each:
/// the median time and CPU per message and the ratio to the first contender
/// whose name starts with "rtrb", taken within each repetition.
///
/// Interleaved so that the machine's drift (it is shared, and moves between
/// a fast and a 4x slower state) hits all contenders alike; the order is
/// shuffled each time, so that no contender always runs right after the same
/// other one (measured here: no effect on the ratios either way).
///
/// With `KICKLAB_BENCH_TSV=FILE`, also appends one tab-separated line per
/// contender and repetition to FILE: layout, section, repetition,
/// contender, ns/message, rtrb's ns/message in that repetition (`layout`
/// from `KICKLAB_BENCH_LAYOUT`; `layouts.sh` sets both).
fn compare(section: &str, contenders: &[(&str, Run)], n: u64, w: u64, reps: usize, rng: &mut u64) {
    println!(
        "  {:<36} {:>10} {:>15} {:>9} {:>17}",
        "", "ns/message", "CPU ns/message", "vs rtrb", "p10-p90 of ratio"
    );
    let mut runs: Vec<Vec<Outcome>> = contenders.iter().map(|_| Vec::new()).collect();
    let mut order: Vec<usize> = (0..contenders.len()).collect();
    for _ in 0..reps {
        shuffle(&mut order, rng);
        for &i in &order {
            let _placement = spacer(rng);
            runs[i].push((contenders[i].1)(n, w));
        }
    }
    let rtrb_runs = contenders
        .iter()
        .position(|c| c.0.starts_with("rtrb"))
        .map(|i| runs[i].iter().map(|o| o.ns_per_msg).collect::<Vec<_>>())
        .expect("rtrb always runs");
    if let Ok(path) = std::env::var("KICKLAB_BENCH_TSV") {
        use std::io::Write;
        let layout = std::env::var("KICKLAB_BENCH_LAYOUT").unwrap_or_else(|_| "default".into());
        let mut lines = String::new();
        for ((name, _), r) in contenders.iter().zip(&runs) {
            for (rep, (o, base)) in r.iter().zip(&rtrb_runs).enumerate() {
                lines += &format!(
                    "{layout}\t{section}\t{rep}\t{name}\t{}\t{base}\n",
                    o.ns_per_msg
                );
            }
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(lines.as_bytes()))
            .unwrap_or_else(|e| panic!("KICKLAB_BENCH_TSV={path}: {e}"));
    }
    for ((name, _), r) in contenders.iter().zip(&runs) {
        let mut ratios: Vec<f64> = r
            .iter()
            .zip(&rtrb_runs)
            .map(|(o, base)| o.ns_per_msg / base)
            .collect();
        ratios.sort_by(f64::total_cmp);
        println!(
            "  {name:<36} {:>10.1} {:>15.1} {:>8.2}x {:>8.2}-{:.2}x",
            median(r.iter().map(|o| o.ns_per_msg).collect()),
            median(r.iter().map(|o| o.cpu_per_msg).collect()),
            quantile(&ratios, 0.5),
            quantile(&ratios, 0.1),
            quantile(&ratios, 0.9),
        );
    }
}

type Run = fn(u64, u64) -> Outcome;

/// Reads the lines `KICKLAB_BENCH_TSV` wrote (from several layouts, see
/// `layouts.sh`) and prints, per section, machine state and contender: the
/// median and p10-p90 of the per-repetition ratios to rtrb over all
/// layouts, the share at or below 1.00x, and the lowest and highest of the
/// per-layout medians. The state is read from rtrb's time per message in
/// the same repetition: fast below 3 ns, slow 5-14 ns, other otherwise.
fn summarize(path: &str) {
    use std::collections::BTreeMap;
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    // (section, state, contender) -> layout -> ratios
    let mut groups: BTreeMap<(String, &str, String), BTreeMap<String, Vec<f64>>> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split('\t').collect();
        let parsed = (f.len() == 6)
            .then(|| Some((f[4].parse::<f64>().ok()?, f[5].parse::<f64>().ok()?)))
            .flatten();
        let Some((ns, rtrb_ns)) = parsed else {
            panic!("{path}:{}: not a KICKLAB_BENCH_TSV line: {line:?}", i + 1);
        };
        let state = match rtrb_ns {
            x if x < 3.0 => "fast",
            x if (5.0..14.0).contains(&x) => "slow",
            _ => "other",
        };
        groups
            .entry((f[1].to_string(), state, f[3].to_string()))
            .or_default()
            .entry(f[0].to_string())
            .or_default()
            .push(ns / rtrb_ns);
    }
    let layouts: std::collections::BTreeSet<&String> =
        groups.values().flat_map(BTreeMap::keys).collect();
    println!("{path}: {} layouts", layouts.len());
    let mut section = String::new();
    for ((sec, state, name), by_layout) in &groups {
        if *sec != section {
            section.clone_from(sec);
            println!("\n{section}");
            println!(
                "  {:<6} {:<36} {:>6} {:>8} {:>13} {:>9} {:>19}",
                "state", "", "reps", "vs rtrb", "p10-p90", "<= 1.00x", "per-layout medians"
            );
        }
        let mut all: Vec<f64> = by_layout.values().flatten().copied().collect();
        all.sort_by(f64::total_cmp);
        let medians: Vec<f64> = by_layout.values().map(|r| median(r.clone())).collect();
        let (lo, hi) = medians
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &m| {
                (lo.min(m), hi.max(m))
            });
        #[allow(clippy::cast_precision_loss)]
        let at_or_below = all.iter().filter(|&&r| r <= 1.0).count() as f64 / all.len() as f64;
        println!(
            "  {state:<6} {name:<36} {:>6} {:>7.2}x {:>6.2}-{:.2}x {:>8.0}% {:>7.2}-{:.2}x ({})",
            all.len(),
            quantile(&all, 0.5),
            quantile(&all, 0.1),
            quantile(&all, 0.9),
            100.0 * at_or_below,
            lo,
            hi,
            by_layout.len(),
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--summarize") {
        summarize(args.get(i + 1).expect("--summarize FILE"));
        return;
    }
    // `cargo bench` passes --bench; `cargo test --benches` runs this with
    // no argument: keep that quick.
    let quick = !args.iter().any(|a| a == "--bench");
    let messages: Option<u64> = std::env::var("KICKLAB_BENCH_MESSAGES")
        .ok()
        .and_then(|v| v.parse().ok());
    let reps: usize = std::env::var("KICKLAB_BENCH_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if quick { 1 } else { 15 });
    let tsc = Tsc::get();
    println!("{} CPUs; {reps} repetitions (each runs every contender once, in a shuffled order, at fresh heap addresses); queue of {LEN}; threads pinned to CPUs 0 and 1", kicklab_testbed::clock::cpus());
    let contenders: [(&str, Run); 9] = [
        ("(diagnostic) hand loop, same layout", inline_loop),
        ("kicklab ring, poll", kicklab_poll),
        ("rtrb, spin", rtrb_spin),
        ("rtrb again (A/A control)", rtrb_spin),
        ("rtrb's code copied here (control)", rtrb_copy_spin),
        ("kicklab ring, notify (futex)", kicklab_notify),
        (
            "kicklab ring, spin 20us then futex",
            kicklab_spin_then_block,
        ),
        ("crossbeam-channel bounded", crossbeam_bounded),
        ("std sync_channel", std_sync_channel),
    ];
    let only = std::env::var("KICKLAB_BENCH_ONLY").ok();
    let contenders: Vec<(&str, Run)> = contenders
        .into_iter()
        .filter(|(n, _)| {
            n.starts_with("rtrb")
                || only
                    .as_deref()
                    .is_none_or(|o| o.split('|').any(|o| n.contains(o)))
        })
        .collect();
    let work_levels: Vec<f64> = match std::env::var("KICKLAB_BENCH_WORK_NS") {
        Ok(v) => v.split(',').filter_map(|x| x.parse().ok()).collect(),
        Err(_) => vec![0.0, 1000.0],
    };
    let mut rng = 0x9E37_79B9_7F4A_7C15_u64;
    for w_ns in work_levels {
        let label = if w_ns == 0.0 {
            "no work: raw per-message overhead".to_string()
        } else {
            format!("W_P = W_C = {w_ns} ns of busy work")
        };
        let w = tsc.ticks(w_ns);
        // About 0.4 s per run with work (2 000 000 messages without), so
        // that a full run stays within a few minutes.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let n = messages.unwrap_or(if quick {
            20_000
        } else if w_ns > 0.0 {
            (4e8 / w_ns).clamp(10_000.0, 2e6) as u64
        } else {
            2_000_000
        });
        println!("\n{label} ({n} messages per run)");
        compare(
            &format!("work {w_ns} ns"),
            &contenders,
            n,
            w,
            reps,
            &mut rng,
        );
    }
    println!("\n\"vs rtrb\" is the median over repetitions of (contender / rtrb in the same repetition); the A/A row runs rtrb's code again and shows how far two identical contenders drift apart here; the copy row runs the same source at another address in this binary.");
}
