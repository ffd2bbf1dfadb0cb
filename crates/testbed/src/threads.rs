//! The pair for real: two pinned threads over the kicklab ring, busy work
//! drawn per message, notifications through a real notifier.
//!
//! ```text
//!   thread P (cpu 0)                       ring (L slots)                 thread C (cpu 1)
//!   wait_for_space(k_C)  <--- kick C->P --- head / producer_wait ---  release, maybe kick P
//!   busy W_P, write seq, publish --------> tail / consumer_wait ---> wait_for_messages(k_P)
//!   maybe kick C  --------- kick P->C ---------------------------->  claim, check seq, busy W_C
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use kicklab_model::Params;
use kicklab_ring::{ring, Notifier, NotifierKind, WaitStats, WaitStrategy};
use kicklab_sim::Sampler;
use serde::Serialize;

use crate::clock::{cpus, pin, rdtsc, thread_cpu_ns, Tsc};
use crate::TestbedError;

/// One real run.
#[derive(Debug, Clone, Copy)]
pub struct PairConfig {
    /// L, k_P, k_C, W_P, W_C (N and S are the machine's own).
    pub params: Params,
    /// How P waits for space.
    pub strategy_p: WaitStrategy,
    /// How C waits for messages.
    pub strategy_c: WaitStrategy,
    /// Where the parties run and how they notify each other.
    pub backend: crate::Backend,
    /// Messages measured after the warm-up.
    pub messages: u64,
    /// Messages before measuring.
    pub warmup: u64,
    /// Seed for drawing W_P and W_C when they are distributions.
    pub seed: u64,
    /// Give up (report a hang) after this long.
    pub timeout: Duration,
    /// Send combining: P publishes (and kicks at most once) every `batch`
    /// messages, or earlier when the ring is full. 1: every message.
    pub batch: u32,
}

/// What a run measured. Times in nanoseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct PairResult {
    /// Wall time per message in the window [ns].
    #[serde(rename = "T_ns")]
    pub t_ns: f64,
    /// CPU time (user + system) of both threads per message [ns].
    #[serde(rename = "E_ns")]
    pub e_ns: f64,
    /// P's share of E [ns].
    #[serde(rename = "E_p_ns")]
    pub e_p_ns: f64,
    /// C's share of E [ns].
    #[serde(rename = "E_c_ns")]
    pub e_c_ns: f64,
    /// Messages in the window.
    pub messages: u64,
    /// Messages the consumer never saw.
    pub lost: u64,
    /// Messages seen twice or out of order.
    pub duplicated_or_reordered: u64,
    /// Kicks P sent in the window.
    pub notifications_p: u64,
    /// Kicks C sent in the window.
    pub notifications_c: u64,
    /// Times P blocked in the window.
    pub sleeps_p: u64,
    /// Times C blocked in the window.
    pub sleeps_c: u64,
    /// Wake-ups that found nothing to do (P, whole run).
    pub spurious_p: u64,
    /// Wake-ups that found nothing to do (C, whole run).
    pub spurious_c: u64,
    /// Both threads were pinned to distinct CPUs.
    pub pinned: bool,
    /// More busy threads than CPUs (both poll on a 1-CPU machine).
    pub oversubscribed: bool,
}

/// What one thread saw at the start and the end of the window.
#[derive(Debug, Default, Clone, Copy)]
struct Marks {
    t0: u64,
    t1: u64,
    cpu0: u64,
    cpu1: u64,
    kicks0: u64,
    kicks1: u64,
    sleeps0: u64,
    sleeps1: u64,
    spurious: u64,
}

struct SideResult {
    marks: Marks,
    lost: u64,
    bad: u64,
}

/// Runs the pair once.
///
/// # Errors
///
/// A notifier that cannot be created or fails, a corrupt ring (a bug), or a
/// run that does not finish within `cfg.timeout` (a hang: a lost wake-up).
#[allow(clippy::too_many_lines, clippy::cast_precision_loss)]
pub(crate) fn run_pair(
    cfg: &PairConfig,
    backend: NotifierKind,
) -> Result<PairResult, TestbedError> {
    cfg.params
        .validate()
        .map_err(|e| TestbedError::Params(e.to_string()))?;
    if cfg.messages == 0 {
        return Err(TestbedError::Params(
            "--messages: need at least 1 message".into(),
        ));
    }
    let tsc = Tsc::get();
    let total = cfg.warmup + cfg.messages;
    let (mut producer, mut consumer) = ring(cfg.params.len);
    let to_c: Arc<dyn Notifier> = Arc::from(backend.make()?);
    let to_p: Arc<dyn Notifier> = Arc::from(backend.make()?);
    let (k_p, k_c) = (cfg.params.k_p, cfg.params.k_c);
    let ticks_per_ps = tsc.ticks_per_ns / 1000.0;
    let two_cpus = cpus() >= 2;
    let stop = Arc::new(AtomicBool::new(false));

    let (tx, rx) = mpsc::channel::<Result<(char, SideResult, bool), TestbedError>>();

    let p_cfg = *cfg;
    let (to_c_p, to_p_p, tx_p, stop_p) = (
        Arc::clone(&to_c),
        Arc::clone(&to_p),
        tx.clone(),
        Arc::clone(&stop),
    );
    std::thread::Builder::new()
        .name("kicklab-P".into())
        .spawn(move || {
            let r = (|| -> Result<(char, SideResult, bool), TestbedError> {
                let pinned = pin(0);
                let mut work = Sampler::new(p_cfg.params.w_p, p_cfg.seed, 0);
                let mut st = WaitStats::default();
                let (mut kicks, mut m) = (0u64, Marks::default());
                let batch = u64::from(p_cfg.batch.max(1));
                let mut pending = 0u64;
                // Publish what is written, with at most one kick.
                let flush = |producer: &mut kicklab_ring::Producer,
                             kicks: &mut u64|
                 -> Result<(), TestbedError> {
                    let pubd = producer.publish();
                    if producer.peer_wants_kick(pubd) {
                        to_c_p.notify()?;
                        *kicks += 1;
                    }
                    Ok(())
                };
                for seq in 0..total {
                    if seq == p_cfg.warmup {
                        (m.t0, m.cpu0, m.kicks0, m.sleeps0) =
                            (rdtsc(), thread_cpu_ns(), kicks, st.sleeps);
                    }
                    // Send combining: a full ring must not hold unpublished
                    // messages while P waits, or C could never free a slot.
                    if pending > 0 && producer.free()? == 0 {
                        flush(&mut producer, &mut kicks)?;
                        pending = 0;
                    }
                    producer.wait_for_space(k_c, p_cfg.strategy_p, &*to_p_p, &mut st)?;
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    tsc.spin_ticks((work.draw_ps() as f64 * ticks_per_ps) as u64);
                    producer.write(seq)?;
                    pending += 1;
                    if pending == batch || seq + 1 == total {
                        flush(&mut producer, &mut kicks)?;
                        pending = 0;
                    }
                    if stop_p.load(Ordering::Relaxed) {
                        return Err(TestbedError::Hang(
                            "producer stopped by the watchdog".into(),
                        ));
                    }
                }
                (m.t1, m.cpu1, m.kicks1, m.sleeps1, m.spurious) =
                    (rdtsc(), thread_cpu_ns(), kicks, st.sleeps, st.spurious);
                // End of stream: fewer than k_P messages may wait for a kick.
                to_c_p.notify()?;
                Ok((
                    'P',
                    SideResult {
                        marks: m,
                        lost: 0,
                        bad: 0,
                    },
                    pinned,
                ))
            })();
            let _ = tx_p.send(r);
        })?;

    let c_cfg = *cfg;
    let (to_c_c, to_p_c, tx_c) = (Arc::clone(&to_c), Arc::clone(&to_p), tx);
    std::thread::Builder::new()
        .name("kicklab-C".into())
        .spawn(move || {
            let r = (|| -> Result<(char, SideResult, bool), TestbedError> {
                let pinned = pin(1);
                let mut work = Sampler::new(c_cfg.params.w_c, c_cfg.seed, 1);
                let mut st = WaitStats::default();
                let (mut kicks, mut m) = (0u64, Marks::default());
                let (mut next, mut lost, mut bad) = (0u64, 0u64, 0u64);
                let mut done = 0u64;
                while done < total {
                    if done == c_cfg.warmup {
                        (m.t0, m.cpu0, m.kicks0, m.sleeps0) =
                            (rdtsc(), thread_cpu_ns(), kicks, st.sleeps);
                    }
                    consumer.wait_for_messages(k_p, c_cfg.strategy_c, &*to_c_c, &mut st)?;
                    let Some(seq) = consumer.claim()? else {
                        continue;
                    };
                    match seq.cmp(&next) {
                        std::cmp::Ordering::Equal => next += 1,
                        std::cmp::Ordering::Greater => {
                            lost += seq - next;
                            next = seq + 1;
                        }
                        std::cmp::Ordering::Less => bad += 1,
                    }
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    tsc.spin_ticks((work.draw_ps() as f64 * ticks_per_ps) as u64);
                    let rel = consumer.release();
                    done += 1;
                    if consumer.peer_wants_kick(rel) {
                        to_p_c.notify()?;
                        kicks += 1;
                    }
                }
                (m.t1, m.cpu1, m.kicks1, m.sleeps1, m.spurious) =
                    (rdtsc(), thread_cpu_ns(), kicks, st.sleeps, st.spurious);
                lost += total.saturating_sub(next);
                Ok((
                    'C',
                    SideResult {
                        marks: m,
                        lost,
                        bad,
                    },
                    pinned,
                ))
            })();
            let _ = tx_c.send(r);
        })?;

    let mut sides: [Option<(SideResult, bool)>; 2] = [None, None];
    for _ in 0..2 {
        match rx.recv_timeout(cfg.timeout) {
            Ok(Ok((who, side, pinned))) => sides[usize::from(who == 'C')] = Some((side, pinned)),
            Ok(Err(e)) => {
                stop.store(true, Ordering::Relaxed);
                // Unblock a peer that may wait for a kick that will not come.
                let _ = to_c.notify();
                let _ = to_p.notify();
                return Err(e);
            }
            Err(_) => {
                stop.store(true, Ordering::Relaxed);
                return Err(TestbedError::Hang(format!(
                    "no progress for {:?}: P {}, C {} (a lost wake-up or a stuck notifier)",
                    cfg.timeout,
                    if sides[0].is_some() {
                        "finished"
                    } else {
                        "running or blocked"
                    },
                    if sides[1].is_some() {
                        "finished"
                    } else {
                        "running or blocked"
                    },
                )));
            }
        }
    }
    let (Some((p, p_pinned)), Some((c, c_pinned))) = (sides[0].take(), sides[1].take()) else {
        unreachable!("two results received")
    };
    let n = cfg.messages as f64;
    let (pm, cm) = (p.marks, c.marks);
    let e_p_ns = (pm.cpu1 - pm.cpu0) as f64 / n;
    let e_c_ns = (cm.cpu1 - cm.cpu0) as f64 / n;
    let polls = |s: WaitStrategy| s == WaitStrategy::Poll;
    Ok(PairResult {
        t_ns: tsc.ns(cm.t1 - cm.t0) / n,
        e_ns: e_p_ns + e_c_ns,
        e_p_ns,
        e_c_ns,
        messages: cfg.messages,
        lost: c.lost,
        duplicated_or_reordered: c.bad,
        notifications_p: pm.kicks1 - pm.kicks0,
        notifications_c: cm.kicks1 - cm.kicks0,
        sleeps_p: pm.sleeps1 - pm.sleeps0,
        sleeps_c: cm.sleeps1 - cm.sleeps0,
        spurious_p: pm.spurious,
        spurious_c: cm.spurious,
        pinned: p_pinned && c_pinned && two_cpus,
        oversubscribed: !two_cpus && (polls(cfg.strategy_p) || polls(cfg.strategy_c)),
    })
}
