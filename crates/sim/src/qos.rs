//! Several VMs sharing one device, as events: per-VM arrivals (evenly
//! spaced or Poisson), token-bucket limits at the device (ingress) or in
//! the shared stage after its work (post), a shared FIFO stage (the
//! backend on the shared path, the hypervisor on the direct path) and one
//! FIFO stage per VM, each with a drop-tail buffer; a hand-off to a stage
//! that sleeps (idle, nothing queued) costs the sender a kick and the
//! receiver a wake-up, the two-party model's rule. The system and its
//! analytic solution are `kicklab_model::qos`; `docs/qos.md` has both.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

use hdrhistogram::Histogram;
use kicklab_model::qos::{Arrivals, Police, QosSystem};
use rand::SeedableRng;
use rand_distr::{Distribution, Exp};
use rand_xoshiro::Xoshiro256PlusPlus;
use serde::Serialize;

/// What one run measured, over the window after the warm-up.
#[derive(Debug, Clone, Serialize)]
pub struct QosResult {
    /// Per VM.
    pub vms: Vec<VmResult>,
    /// The shared stage, then each VM: busy fraction.
    pub utilization: Vec<f64>,
    /// Simulated seconds measured.
    pub window_s: f64,
}

/// One VM's figures.
#[derive(Debug, Clone, Serialize)]
pub struct VmResult {
    /// Requests offered per second.
    pub offered_per_s: f64,
    /// Completed per second.
    pub throughput_per_s: f64,
    /// Dropped per second (limit or full buffer).
    pub dropped_per_s: f64,
    /// Latency from arrival to completion [ns]: p50, p99 (NaN without
    /// completions).
    pub latency_ns: [f64; 2],
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct Event {
    t: f64,
    seq: u64,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Arrival(usize),
    Done(usize),
}

impl Eq for Event {}
impl Ord for Event {
    fn cmp(&self, o: &Self) -> Ordering {
        // Min-heap on (t, seq).
        o.t.total_cmp(&self.t).then(o.seq.cmp(&self.seq))
    }
}
impl PartialOrd for Event {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

#[derive(Debug, Clone, Copy)]
struct Req {
    vm: usize,
    born: f64,
}

struct Stage {
    queue: VecDeque<Req>,
    serving: Option<Req>,
    /// When the server is free again (its service and any kick it owes).
    free_at: f64,
    busy_ns: f64,
}

struct Bucket {
    rate: f64,
    depth: f64,
    tokens: f64,
    last: f64,
}

impl Bucket {
    fn take(&mut self, t: f64) -> bool {
        self.tokens = (self.tokens + (t - self.last) * self.rate / 1e9).min(self.depth);
        self.last = t;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// The most requests one run simulates (minutes of simulation).
pub const MAX_ARRIVALS: f64 = 1e9;

/// Runs the system for `seconds` of simulated time after `warmup_s`.
///
/// # Errors
///
/// Invalid numbers ([`QosSystem::validate`]), or a window of 0 s.
#[allow(clippy::too_many_lines, clippy::cast_precision_loss)]
pub fn simulate_qos(
    sys: &QosSystem,
    warmup_s: f64,
    seconds: f64,
    seed: u64,
) -> Result<QosResult, String> {
    sys.validate()?;
    if !(seconds.is_finite() && seconds > 0.0 && warmup_s.is_finite() && warmup_s >= 0.0) {
        return Err("need a window > 0 s and a warm-up >= 0 s".into());
    }
    let arrivals: f64 = sys.vms.iter().map(|v| v.offered_per_s).sum::<f64>() * (warmup_s + seconds);
    if arrivals > MAX_ARRIVALS {
        return Err(format!(
            "{arrivals:.3e} requests to simulate (offered load x time); at most {MAX_ARRIVALS:e}"
        ));
    }
    let n = sys.vms.len();
    let (t0, t1) = (warmup_s * 1e9, (warmup_s + seconds) * 1e9);
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut heap = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |heap: &mut BinaryHeap<Event>, t: f64, kind: Kind| {
        seq += 1;
        heap.push(Event { t, seq, kind });
    };
    let gap: Vec<Option<f64>> = sys
        .vms
        .iter()
        .map(|vm| (vm.offered_per_s > 0.0).then(|| 1e9 / vm.offered_per_s))
        .collect();
    for (i, g) in gap.iter().enumerate() {
        if let Some(g) = g {
            // Streams interleaved: VM i starts i/n of a gap in.
            push(&mut heap, g * i as f64 / n as f64, Kind::Arrival(i));
        }
    }
    let stage = || Stage {
        queue: VecDeque::new(),
        serving: None,
        free_at: 0.0,
        busy_ns: 0.0,
    };
    // Stage 0 is the shared one, 1..=n the VMs.
    let mut stages: Vec<Stage> = (0..=n).map(|_| stage()).collect();
    let mut buckets: Vec<Option<Bucket>> = sys
        .vms
        .iter()
        .map(|vm| {
            vm.limit.map(|(rate, depth)| Bucket {
                rate,
                depth,
                tokens: depth,
                last: 0.0,
            })
        })
        .collect();
    let service = |s: usize| {
        if s == 0 {
            sys.shared_ns
        } else {
            sys.vms[s - 1].service_ns
        }
    };
    let mut offered = vec![0u64; n];
    let mut done = vec![0u64; n];
    let mut dropped = vec![0u64; n];
    let mut hists: Vec<Histogram<u64>> = (0..n)
        .map(|_| Histogram::new(3).expect("3 digits"))
        .collect();
    let in_window = |t: f64| t >= t0 && t < t1;
    // Busy time counted inside the window only.
    let busy = |st: &mut Stage, from: f64, len: f64| {
        let (a, b) = (from.max(t0), (from + len).min(t1));
        if b > a {
            st.busy_ns += b - a;
        }
    };
    // Hands `r` to stage `s` at `t`; `sender` is the stage that pays the
    // kick if `s` sleeps (None: the device). Returns whether it was taken.
    macro_rules! hand {
        ($s:expr, $r:expr, $t:expr, $sender:expr) => {{
            let (s, r, t): (usize, Req, f64) = ($s, $r, $t);
            let st = &mut stages[s];
            if st.serving.is_none() && st.queue.is_empty() {
                // Asleep: the sender kicks, the stage wakes, then serves.
                let kick = if $sender.is_some() { sys.kick_ns } else { 0.0 };
                let start = (t + kick).max(st.free_at);
                let len = sys.wake_ns + service(s);
                st.serving = Some(r);
                st.free_at = start + len;
                busy(st, start, len);
                push(&mut heap, start + len, Kind::Done(s));
                if let Some(from) = $sender {
                    let snd: &mut Stage = &mut stages[from];
                    snd.free_at = snd.free_at.max(t) + kick;
                    busy(snd, t, kick);
                }
                true
            } else if st.queue.len() < sys.buffer as usize {
                st.queue.push_back(r);
                true
            } else {
                false
            }
        }};
    }
    while let Some(ev) = heap.pop() {
        let t = ev.t;
        if t >= t1 {
            break;
        }
        match ev.kind {
            Kind::Arrival(i) => {
                let g = gap[i].expect("only VMs with load arrive");
                let next = match sys.arrivals {
                    Arrivals::Deterministic => t + g,
                    Arrivals::Poisson => t + Exp::new(1.0 / g).expect("gap > 0").sample(&mut rng),
                };
                push(&mut heap, next, Kind::Arrival(i));
                if in_window(t) {
                    offered[i] += 1;
                }
                let r = Req { vm: i, born: t };
                let pass = match (sys.police, buckets[i].as_mut()) {
                    (Police::Ingress, Some(b)) => b.take(t),
                    _ => true,
                };
                if !(pass && hand!(0, r, t, None::<usize>)) && in_window(t) {
                    dropped[i] += 1;
                }
            }
            Kind::Done(s) => {
                let r = stages[s].serving.take().expect("a stage finishing serves");
                // The kicks it paid may hold it a little longer.
                let free = stages[s].free_at.max(t);
                if s == 0 {
                    let pass = match (sys.police, buckets[r.vm].as_mut()) {
                        (Police::Post, Some(b)) => b.take(t),
                        _ => true,
                    };
                    if !(pass && hand!(r.vm + 1, r, t, Some(0usize))) && in_window(t) {
                        dropped[r.vm] += 1;
                    }
                } else if in_window(t) {
                    done[r.vm] += 1;
                    let lat = (t - r.born).max(0.0).round() as u64;
                    // `record` grows the histogram; only a count overflow
                    // fails, and then the bucket saturates.
                    if hists[r.vm].record(lat).is_err() {
                        hists[r.vm].saturating_record(lat);
                    }
                }
                // Next in line.
                let st = &mut stages[s];
                let free = free.max(st.free_at);
                if let Some(next) = st.queue.pop_front() {
                    let len = service(s);
                    st.serving = Some(next);
                    st.free_at = free + len;
                    busy(st, free, len);
                    push(&mut heap, free + len, Kind::Done(s));
                }
            }
        }
    }
    let win = t1 - t0;
    let per_s = |c: u64| c as f64 / (win / 1e9);
    Ok(QosResult {
        vms: (0..n)
            .map(|i| VmResult {
                offered_per_s: per_s(offered[i]),
                throughput_per_s: per_s(done[i]),
                dropped_per_s: per_s(dropped[i]),
                latency_ns: if hists[i].is_empty() {
                    [f64::NAN; 2]
                } else {
                    [
                        hists[i].value_at_quantile(0.5) as f64,
                        hists[i].value_at_quantile(0.99) as f64,
                    ]
                },
            })
            .collect(),
        utilization: stages.iter().map(|s| s.busy_ns / win).collect(),
        window_s: win / 1e9,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kicklab_model::qos::{solve, Path};

    #[test]
    fn below_saturation_it_carries_what_the_model_says() {
        for path in [Path::Shared, Path::Direct] {
            let sys = QosSystem::paper(path, Police::Post, 800.0);
            let sim = simulate_qos(&sys, 1.0, 20.0, 1).unwrap();
            let m = solve(&sys);
            for (v, want) in sim.vms.iter().zip(&m.throughput_per_s) {
                assert!(
                    (v.throughput_per_s - want).abs() <= 0.01 * want,
                    "{path:?}: {v:?} vs {want}"
                );
                assert!(v.dropped_per_s == 0.0);
            }
            for (u, want) in sim.utilization.iter().zip(&m.utilization) {
                assert!((u - want).abs() <= 0.01 * want, "{path:?}: {u} vs {want}");
            }
            // Latency at least the work on the way, at most a few requests'
            // worth of queueing behind the other VM's.
            for v in &sim.vms {
                let work = sys.shared_ns + sys.vms[0].service_ns;
                assert!(
                    v.latency_ns[0] >= 0.99 * work && v.latency_ns[1] <= 3.0 * work,
                    "{path:?}: {v:?}"
                );
            }
        }
    }
}
