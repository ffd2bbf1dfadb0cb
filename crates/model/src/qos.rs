//! Several VMs sharing one device (Lakshmi and Nandy): the system as data
//! ([`QosSystem`]) and its analytic solution ([`solve`]): per-VM
//! throughput, loss and the utilization of every stage, for the shared
//! path (every request crosses one backend, the driver domain) and the
//! direct path (per-VM queues, a small hypervisor cost), with a rate limit
//! applied at the device (ingress) or in the shared stage after receive
//! (post). `docs/qos.md` derives it. What does not live here: the event
//! simulation of the same system (`kicklab_sim::qos`).

use serde::{Deserialize, Serialize};

/// Which path requests take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Path {
    /// Every request crosses one shared backend stage (bridge + backend
    /// driver in a driver domain), then its VM.
    Shared,
    /// The device demultiplexes into per-VM queues; a shared hypervisor
    /// stage does a small constant amount of work per request, then the VM.
    Direct,
}

/// Where a VM's rate limit is enforced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Police {
    /// At the device, before any shared stage: a request over the limit
    /// costs nothing downstream.
    Ingress,
    /// In the shared stage, after receive (netfilter in the driver domain):
    /// a request over the limit has been served by the shared stage when it
    /// is dropped.
    Post,
}

/// How a VM's requests arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrivals {
    /// Evenly spaced (the paper's httperf streams, its LQN's deterministic
    /// arrivals).
    Deterministic,
    /// A Poisson process.
    Poisson,
}

/// One VM: its offered load, rate limit and own processing.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Vm {
    /// Offered requests per second.
    pub offered_per_s: f64,
    /// Rate limit [requests/s] and bucket depth [requests], if any.
    pub limit: Option<(f64, f64)>,
    /// The VM's own processing per request [ns] (one core).
    pub service_ns: f64,
}

/// The whole system.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QosSystem {
    /// The VMs.
    pub vms: Vec<Vm>,
    /// The path.
    pub path: Path,
    /// Where limits are enforced.
    pub police: Police,
    /// The shared stage's work per request [ns]: the backend's on the
    /// shared path, the hypervisor's on the direct path.
    pub shared_ns: f64,
    /// A notification (kick) on each hand-off to a stage that sleeps [ns],
    /// paid by the sender.
    pub kick_ns: f64,
    /// The wake-up of a stage that slept [ns], paid by it.
    pub wake_ns: f64,
    /// Requests each stage can hold waiting; more are dropped.
    pub buffer: u32,
    /// How requests arrive.
    pub arrivals: Arrivals,
}

impl QosSystem {
    /// Lakshmi and Nandy's two-VM server with service times derived from
    /// their published figures (`docs/qos.md`): the driver domain serves
    /// 2 x 950 requests/s when it saturates (526 us a request), a VM 1500
    /// requests/s (667 us), the hypervisor's constant work on the direct
    /// path 20 us; no kick or wake-up costs (their LQN has none); buffers
    /// of 64 requests; deterministic arrivals.
    pub fn paper(path: Path, police: Police, offered_per_s: f64) -> QosSystem {
        let vm = Vm {
            offered_per_s,
            limit: None,
            service_ns: 1e9 / 1500.0,
        };
        QosSystem {
            vms: vec![vm, vm],
            path,
            police,
            shared_ns: match path {
                Path::Shared => 1e9 / 1900.0,
                Path::Direct => 20_000.0,
            },
            kick_ns: 0.0,
            wake_ns: 0.0,
            buffer: 64,
            arrivals: Arrivals::Deterministic,
        }
    }

    /// The stages' names, in the order of [`QosSolution::utilization`]:
    /// the shared stage, then each VM.
    pub fn stage_names(&self) -> Vec<String> {
        let mut v = vec![match self.path {
            Path::Shared => "backend".to_string(),
            Path::Direct => "hypervisor".to_string(),
        }];
        v.extend((1..=self.vms.len()).map(|i| format!("vm{i}")));
        v
    }

    /// Checks the numbers.
    ///
    /// # Errors
    ///
    /// What is wrong, naming it.
    pub fn validate(&self) -> Result<(), String> {
        if self.vms.is_empty() || self.vms.len() > MAX_VMS {
            return Err(format!("vms: 1 to {MAX_VMS} VMs"));
        }
        let ok = |v: f64| v.is_finite() && v >= 0.0;
        for (i, vm) in self.vms.iter().enumerate() {
            let rate =
                |r: f64| ok(r) && (r == 0.0 || (MIN_RATE_PER_S..=MAX_RATE_PER_S).contains(&r));
            if !rate(vm.offered_per_s) {
                return Err(format!(
                    "vm{}: the offered load must be 0 or {MIN_RATE_PER_S:e} to {MAX_RATE_PER_S:e} requests/s",
                    i + 1
                ));
            }
            if !ok(vm.service_ns) {
                return Err(format!(
                    "vm{}: the service time must be finite and >= 0",
                    i + 1
                ));
            }
            if let Some((r, b)) = vm.limit {
                if !(rate(r) && r > 0.0) {
                    return Err(format!(
                        "vm{}: a limit needs a rate of {MIN_RATE_PER_S:e} to {MAX_RATE_PER_S:e} requests/s",
                        i + 1
                    ));
                }
                if !(ok(b) && (1.0..=MAX_BURST).contains(&b) && b.fract() == 0.0) {
                    return Err(format!(
                        "vm{}: a limit's burst is a whole number of requests from 1 to {MAX_BURST:e}, got {b}",
                        i + 1
                    ));
                }
            }
        }
        if !ok(self.shared_ns) || !ok(self.kick_ns) || !ok(self.wake_ns) {
            return Err("shared, kick and wake costs must be finite and >= 0".into());
        }
        if self.buffer == 0 {
            return Err("buffer: need at least 1 request".into());
        }
        Ok(())
    }
}

/// The largest burst of a rate limit [requests]: a bucket that never
/// empties within a run is no limit, and the model (long-run rates) and
/// the simulator (the run's window) would disagree about it.
pub const MAX_BURST: f64 = 1e6;

/// The most VMs a system takes.
pub const MAX_VMS: usize = 1024;
/// The largest offered load per VM [requests/s].
pub const MAX_RATE_PER_S: f64 = 1e9;
/// The smallest offered load per VM other than 0 [requests/s]: one
/// request in 30 years (below it the time between requests overflows).
pub const MIN_RATE_PER_S: f64 = 1e-9;

/// The analytic solution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QosSolution {
    /// Per VM: completed requests per second.
    pub throughput_per_s: Vec<f64>,
    /// Per VM: dropped requests per second (policer and full buffers).
    pub dropped_per_s: Vec<f64>,
    /// The shared stage, then each VM: busy fraction.
    pub utilization: Vec<f64>,
    /// The largest equal offered load per VM the system carries without
    /// loss [requests/s] (with these limits and costs).
    pub max_lossless_per_s: f64,
    /// The stage that saturates first as the load grows.
    pub bottleneck: String,
}

/// Solves the system as a fluid network: each stage passes what it is
/// offered up to its capacity, and a saturated FIFO stage with drop-tail
/// buffers shares its capacity among the VMs in proportion to what each
/// offers it. Exact for deterministic costs below saturation; above it,
/// the proportional share is the long-run split of a drop-tail FIFO fed by
/// steady streams (`docs/qos.md`). Kicks and wake-ups are charged on every
/// hand-off: an upper bound, exact when every request finds the next stage
/// idle (light deterministic load) or when they are 0.
pub fn solve(sys: &QosSystem) -> QosSolution {
    let s_shared = (sys.shared_ns + sys.kick_ns + sys.wake_ns) / 1e9;
    let n = sys.vms.len();
    // Admitted to the shared stage.
    let admitted: Vec<f64> = sys
        .vms
        .iter()
        .map(|vm| match (sys.police, vm.limit) {
            (Police::Ingress, Some((r, _))) => vm.offered_per_s.min(r),
            _ => vm.offered_per_s,
        })
        .collect();
    let load: f64 = admitted.iter().sum::<f64>() * s_shared;
    let share = if load > 1.0 { 1.0 / load } else { 1.0 };
    let through_shared: Vec<f64> = admitted.iter().map(|a| a * share).collect();
    let mut throughput = Vec::with_capacity(n);
    let mut utilization = vec![load.min(1.0)];
    for (vm, t) in sys.vms.iter().zip(&through_shared) {
        let forwarded = match (sys.police, vm.limit) {
            (Police::Post, Some((r, _))) => t.min(r),
            _ => *t,
        };
        let s_vm = (vm.service_ns + sys.wake_ns) / 1e9;
        let cap = if s_vm > 0.0 {
            1.0 / s_vm
        } else {
            f64::INFINITY
        };
        let done = forwarded.min(cap);
        utilization.push(done * s_vm);
        throughput.push(done);
    }
    let dropped = sys
        .vms
        .iter()
        .zip(&throughput)
        .map(|(vm, t)| (vm.offered_per_s - t).max(0.0))
        .collect();
    // Equal offered load x per VM: the shared stage carries
    // sum(min(x, r_i)) s (ingress) or n x s; each VM min(x, r_i) or x.
    let shared_cap = if s_shared > 0.0 {
        1.0 / s_shared
    } else {
        f64::INFINITY
    };
    let lossless_shared = match sys.police {
        Police::Ingress => {
            // Find x with sum(min(x, r_i)) = capacity, by bisection.
            let carried = |x: f64| -> f64 {
                sys.vms
                    .iter()
                    .map(|vm| vm.limit.map_or(x, |(r, _)| x.min(r)))
                    .sum()
            };
            if carried(1e12) <= shared_cap {
                f64::INFINITY
            } else {
                let (mut lo, mut hi) = (0.0, 1e12);
                for _ in 0..200 {
                    let mid = 0.5 * (lo + hi);
                    if carried(mid) <= shared_cap {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                lo
            }
        }
        #[allow(clippy::cast_precision_loss)]
        Police::Post => shared_cap / n as f64,
    };
    let mut best = (lossless_shared, sys.stage_names()[0].clone());
    for (i, vm) in sys.vms.iter().enumerate() {
        let s_vm = (vm.service_ns + sys.wake_ns) / 1e9;
        // A limited VM drops above its limit: "without loss" is about the
        // unlimited ones; a limit caps what reaches its own core.
        let cap = if s_vm > 0.0 {
            1.0 / s_vm
        } else {
            f64::INFINITY
        };
        if vm.limit.is_none() && cap < best.0 {
            best = (cap, format!("vm{}", i + 1));
        }
    }
    QosSolution {
        throughput_per_s: throughput,
        dropped_per_s: dropped,
        utilization,
        max_lossless_per_s: best.0,
        bottleneck: best.1,
    }
}

/// The solution on a host whose stages are threads sharing `cpus` CPUs
/// ([`solve_on_cpus`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuSolution {
    /// Throughput, drops, utilization (each stage's busy fraction of one
    /// CPU), the largest lossless equal load and the bottleneck, on these
    /// CPUs.
    pub solution: QosSolution,
    /// The CPU each stage's thread gets (the shared stage, then each VM),
    /// in CPUs.
    pub cpu: Vec<f64>,
    /// The CPUs the stages shared.
    pub cpus: f64,
    /// Whether the stages would have used more than `cpus` CPUs: they
    /// time-share.
    pub cpu_bound: bool,
}

/// One stage's figures on a fixed allocation of CPU.
struct Flows {
    throughput: Vec<f64>,
    /// CPU each stage would use given enough (at most 1, a thread).
    demand: Vec<f64>,
    /// CPU each stage uses of what it got.
    used: Vec<f64>,
    /// CPU each stage would need for all it is offered (uncapped).
    need: Vec<f64>,
}

/// Max-min fair shares of `supply` among `demand`s (the scheduler's fair
/// share: a thread that wants less than an equal share gets what it wants,
/// the rest is split evenly among the others).
fn max_min(demand: &[f64], supply: f64) -> Vec<f64> {
    let mut order: Vec<usize> = (0..demand.len()).collect();
    order.sort_by(|a, b| demand[*a].total_cmp(&demand[*b]));
    let mut left = supply.max(0.0);
    let mut out = vec![0.0; demand.len()];
    for (k, &i) in order.iter().enumerate() {
        #[allow(clippy::cast_precision_loss)]
        let fair = left / (demand.len() - k) as f64;
        out[i] = demand[i].min(fair);
        left -= out[i];
    }
    out
}

/// Flows through the system when each stage's thread gets `alloc` CPUs;
/// `sat` says which stages are saturated (never sleep: hand-offs to them
/// cost no kick, they pay no wake-up).
fn flows(
    sys: &QosSystem,
    host: &Host,
    admitted: &[f64],
    alloc: &[f64],
    sat: &[bool],
) -> (Flows, Vec<bool>) {
    let n = sys.vms.len();
    let per_s = |ns: f64| ns / 1e9;
    let (vm_kick, vm_wake) = host.vm_hand_off.unwrap_or((sys.kick_ns, sys.wake_ns));
    let vm_wake = if host.vms_own_cores { 0.0 } else { vm_wake };
    let vm_cost = |i: usize| per_s(sys.vms[i].service_ns + if sat[i + 1] { 0.0 } else { vm_wake });
    // Kicks per request served by the shared stage: the share of its
    // requests handed to a VM stage that sleeps (from the admitted mix; a
    // post-policed drop is no hand-off).
    let fwd: Vec<f64> = sys
        .vms
        .iter()
        .zip(admitted)
        .map(|(vm, a)| match (sys.police, vm.limit) {
            (Police::Post, Some((r, _))) => a.min(r),
            _ => *a,
        })
        .collect();
    let total: f64 = admitted.iter().sum();
    // VMs on timed cores of their own need no kick.
    let kicks = if total > 0.0 && !host.vms_own_cores {
        (0..n).filter(|i| !sat[i + 1]).map(|i| fwd[i]).sum::<f64>() / total
    } else {
        0.0
    };
    let base0 = per_s(sys.shared_ns + vm_kick * kicks);
    // A device that coalesces hands requests over in batches: the shared
    // stage wakes at most once per batch.
    let wakes = if total > 0.0 {
        (host.batches_per_s / total).min(1.0)
    } else {
        1.0
    };
    let c0 = base0
        + if sat[0] {
            0.0
        } else {
            per_s(sys.wake_ns) * wakes
        };
    let load0: f64 = total * c0;
    let share = if load0 > alloc[0] && load0 > 0.0 {
        alloc[0] / load0
    } else {
        1.0
    };
    let mut need = vec![load0];
    let mut demand = vec![load0.min(1.0)];
    let mut used = vec![load0.min(alloc[0])];
    let mut now_sat = vec![total * base0 >= alloc[0] * (1.0 - 1e-12) && total > 0.0];
    let mut throughput = Vec::with_capacity(n);
    for i in 0..n {
        let t = admitted[i] * share;
        let f = match (sys.police, sys.vms[i].limit) {
            (Police::Post, Some((r, _))) => t.min(r),
            _ => t,
        };
        let c = vm_cost(i);
        let x = if c > 0.0 { f.min(alloc[i + 1] / c) } else { f };
        need.push(f * c);
        demand.push((f * c).min(1.0));
        used.push(x * c);
        now_sat.push(f * per_s(sys.vms[i].service_ns) >= alloc[i + 1] * (1.0 - 1e-12) && f > 0.0);
        throughput.push(x);
    }
    (
        Flows {
            throughput,
            demand,
            used,
            need,
        },
        now_sat,
    )
}

/// Where the stages' threads run ([`solve_on_cpus`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Host {
    /// CPUs the stages' threads share.
    pub cpus: f64,
    /// Other threads that compete for the same CPUs, as what each wants
    /// (at most 1 CPU each): a run's own helper threads, other processes.
    pub others: Vec<f64>,
    /// The device hands requests to the shared stage at most this many
    /// times a second (it coalesces arrivals: a sleeping shared stage
    /// wakes once per batch); infinite: every request on its own.
    pub batches_per_s: f64,
    /// The VMs' stages run on cores of their own, not on `cpus` (a real
    /// run whose VMs are timed cores: a delay of their service time per
    /// request, each core keeping its own time, so it pays no wake-up and
    /// the shared stage no kick); only the shared stage draws on `cpus`.
    pub vms_own_cores: bool,
    /// The kick to a VM's stage and its wake-up [ns], where they are not
    /// the system's `kick_ns` and `wake_ns` (a KVM guest per VM: the
    /// doorbell write, and the guest's halt, exit and re-entry as its
    /// vCPU thread's CPU); `None`: the system's.
    pub vm_hand_off: Option<(f64, f64)>,
}

/// Solves the system as [`solve`] does, on a host where every stage is a
/// thread (at most one CPU each) and the threads share `host.cpus` CPUs
/// the way a fair scheduler shares them: max-min fair, a thread that
/// wants less than an equal share gets what it wants. A stage that is
/// saturated never sleeps: hand-offs to it cost no kick and it pays no
/// wake-up; a hand-off to one with spare capacity kicks it and it wakes
/// ([`solve`]'s rule, exact for evenly spaced arrivals below saturation).
/// With `cpus` at least the number of stages and no kick or wake-up costs
/// it is [`solve`]. `docs/qos.md`, "The real backend".
pub fn solve_on_cpus(sys: &QosSystem, host: &Host) -> CpuSolution {
    let n = sys.vms.len();
    let cpus = if host.cpus.is_finite() {
        host.cpus.max(0.0)
    } else {
        1e9
    };
    let at = |offered: &dyn Fn(usize) -> f64| -> (Flows, Vec<f64>) {
        let admitted: Vec<f64> = (0..n)
            .map(|i| match (sys.police, sys.vms[i].limit) {
                (Police::Ingress, Some((r, _))) => offered(i).min(r),
                _ => offered(i),
            })
            .collect();
        let mut alloc = vec![1f64.min(cpus); n + 1];
        if host.vms_own_cores {
            alloc[1..].fill(1.0);
        }
        let mut sat = vec![false; n + 1];
        let others = host.others.iter().map(|o| o.clamp(0.0, 1.0));
        for k in 0..400 {
            let (f, s) = flows(sys, host, &admitted, &alloc, &sat);
            let next = if host.vms_own_cores {
                let d: Vec<f64> = std::iter::once(f.demand[0]).chain(others.clone()).collect();
                let mut v = vec![1.0; n + 1];
                v[0] = max_min(&d, cpus)[0];
                v
            } else {
                let d: Vec<f64> = f.demand.iter().copied().chain(others.clone()).collect();
                max_min(&d, cpus)[..=n].to_vec()
            };
            // Damped, so the coupled shares settle instead of swinging.
            let w = if k < 200 { 0.5 } else { 0.1 };
            for (a, b) in alloc.iter_mut().zip(&next) {
                *a = (1.0 - w) * *a + w * b;
            }
            sat = s;
        }
        (flows(sys, host, &admitted, &alloc, &sat).0, alloc)
    };
    let (f, alloc) = at(&|i| sys.vms[i].offered_per_s);
    let others: f64 = host.others.iter().map(|o| o.clamp(0.0, 1.0)).sum();
    let cpu_bound = if host.vms_own_cores {
        f.demand[0] + others > cpus * (1.0 + 1e-9)
    } else {
        f.demand.iter().sum::<f64>() + others > cpus * (1.0 + 1e-9)
    };
    let dropped = sys
        .vms
        .iter()
        .zip(&f.throughput)
        .map(|(vm, t)| (vm.offered_per_s - t).max(0.0))
        .collect();
    // The largest equal load without loss (limited VMs carry their limit),
    // by bisection; the bottleneck is the stage saturated just above it.
    let lossless = |x: f64| {
        let (g, _) = at(&|_| x);
        sys.vms.iter().zip(&g.throughput).all(|(vm, t)| {
            // A limited VM carries its limit: what it drops above is the
            // policer's, not loss.
            let want = vm.limit.map_or(x, |(r, _)| x.min(r));
            *t >= want * (1.0 - 1e-6)
        })
    };
    let (mut lo, mut hi) = (0.0, 1e9);
    if lossless(hi) {
        lo = f64::INFINITY;
    } else {
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if lossless(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
    }
    let names = sys.stage_names();
    let bottleneck = if lo.is_finite() {
        let (g, a) = at(&|_| lo * 1.01 + 1e-9);
        // The fullest stage; the first of equals.
        let fill = |i: usize| g.need[i] / a[i].max(1e-12);
        let worst = (0..=n).fold(0, |w, i| if fill(i) > fill(w) + 1e-9 { i } else { w });
        if a[worst] < 0.999 {
            format!("{} (on its share of the CPUs)", names[worst])
        } else {
            names[worst].clone()
        }
    } else {
        String::new()
    };
    CpuSolution {
        solution: QosSolution {
            throughput_per_s: f.throughput,
            dropped_per_s: dropped,
            utilization: f.used,
            max_lossless_per_s: lo,
            bottleneck,
        },
        cpu: alloc,
        cpus,
        cpu_bound,
    }
}

/// One VM's rate as typed: `VM=RATE` (VMs count from 1), e.g. `2=1500`.
///
/// # Errors
///
/// The reason, as text.
pub fn parse_vm_rate(s: &str) -> Result<(usize, f64), String> {
    let (vm, r) = s
        .split_once('=')
        .ok_or_else(|| format!("expected VM=RATE such as 2=1500, got `{}`", crate::shown(s)))?;
    let vm = vm
        .trim()
        .parse::<usize>()
        .map_err(|_| format!("`{}` is not a VM number (1, 2, ...)", crate::shown(vm)))?;
    let r = crate::typed::number(r).map_err(|e| format!("rate: {e}"))?;
    if vm == 0 {
        return Err(format!("VMs count from 1, got `{}`", crate::shown(s)));
    }
    Ok((vm, r))
}

/// One VM's limit as typed: `VM=RATE[,burst=N]` (burst in requests,
/// default 10).
///
/// # Errors
///
/// The reason, as text.
pub fn parse_vm_limit(s: &str) -> Result<(usize, f64, f64), String> {
    let (head, burst) = match s.split_once(",burst=") {
        Some((h, b)) => (
            h,
            b.trim()
                .parse::<f64>()
                .map_err(|_| format!("`{}` is not a burst in requests", crate::shown(b)))?,
        ),
        None => (s, 10.0),
    };
    let (vm, r) = parse_vm_rate(head)?;
    let max = MAX_BURST;
    if r <= 0.0 || !(1.0..=max).contains(&burst) || burst.fract() != 0.0 {
        return Err(format!(
            "a limit needs a rate > 0 and a burst of whole requests from 1 to {max:e}, got `{}`",
            crate::shown(s)
        ));
    }
    Ok((vm, r, burst))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_0_or_within_range() {
        for (rate, ok) in [
            (0.0, true),
            (MIN_RATE_PER_S, true),
            (800.0, true),
            (MAX_RATE_PER_S, true),
            // The time between requests would overflow to infinity.
            (1e-300, false),
            (MAX_RATE_PER_S * 2.0, false),
            (f64::NAN, false),
            (-1.0, false),
        ] {
            let sys = QosSystem::paper(Path::Shared, Police::Post, rate);
            assert_eq!(sys.validate().is_ok(), ok, "{rate}");
            let mut limited = QosSystem::paper(Path::Shared, Police::Post, 800.0);
            limited.vms[1].limit = Some((rate, 10.0));
            assert_eq!(limited.validate().is_ok(), ok && rate > 0.0, "limit {rate}");
        }
    }

    #[test]
    fn the_papers_numbers_come_out_of_the_derived_service_times() {
        let shared = solve(&QosSystem::paper(Path::Shared, Police::Post, 800.0));
        assert!((shared.max_lossless_per_s - 950.0).abs() < 1e-6);
        assert_eq!(shared.bottleneck, "backend");
        let direct = solve(&QosSystem::paper(Path::Direct, Police::Post, 800.0));
        assert!((direct.max_lossless_per_s - 1500.0).abs() < 1e-6);
        assert_eq!(direct.bottleneck, "vm1");
        // Below saturation everything offered is carried.
        assert_eq!(shared.throughput_per_s, vec![800.0, 800.0]);
        assert!((shared.utilization[0] - 1600.0 / 1900.0).abs() < 1e-12);
    }

    #[test]
    fn ingress_policing_frees_the_shared_stage_and_post_does_not() {
        for r in [150.0, 500.0, 950.0] {
            let mut sys = QosSystem::paper(Path::Shared, Police::Ingress, 2000.0);
            sys.vms[1].limit = Some((r, 10.0));
            let ingress = solve(&sys);
            // VM2 gets at most its limit; VM1 what the backend has left,
            // shared in proportion to what each offers it, up to its core.
            assert!(ingress.throughput_per_s[1] <= r + 1e-9);
            let want = 1500f64.min(1900.0 * 2000.0 / (2000.0 + r));
            assert!((ingress.throughput_per_s[0] - want).abs() < 1e-6, "{r}");
            assert!(ingress.throughput_per_s[0] >= 0.95 * 1500f64.min(1900.0 - r));
            sys.police = Police::Post;
            let post = solve(&sys);
            assert!(
                (post.throughput_per_s[0] - 950.0).abs() < 1e-6,
                "{r}: {post:?}"
            );
        }
    }

    fn many() -> Host {
        Host {
            cpus: 64.0,
            others: Vec::new(),
            batches_per_s: f64::INFINITY,
            vms_own_cores: false,
            vm_hand_off: None,
        }
    }

    fn two() -> Host {
        Host {
            cpus: 2.0,
            others: Vec::new(),
            batches_per_s: f64::INFINITY,
            vms_own_cores: false,
            vm_hand_off: None,
        }
    }

    #[test]
    fn on_enough_cpus_it_is_the_fluid_model() {
        for (path, x) in [
            (Path::Shared, 800.0),
            (Path::Shared, 2000.0),
            (Path::Direct, 1400.0),
            (Path::Direct, 2500.0),
        ] {
            let sys = QosSystem::paper(path, Police::Post, x);
            let (a, b) = (solve(&sys), solve_on_cpus(&sys, &many()));
            assert!(!b.cpu_bound);
            for (u, v) in a.throughput_per_s.iter().zip(&b.solution.throughput_per_s) {
                assert!(
                    (u - v).abs() <= 1e-6 * u.max(1.0),
                    "{path:?} {x}: {a:?} {b:?}"
                );
            }
            for (u, v) in a.utilization.iter().zip(&b.solution.utilization) {
                assert!((u - v).abs() <= 1e-6, "{path:?} {x}: {a:?} {b:?}");
            }
            assert!(
                (a.max_lossless_per_s - b.solution.max_lossless_per_s).abs()
                    < 1e-5 * a.max_lossless_per_s,
                "{a:?} {b:?}"
            );
            assert_eq!(a.bottleneck, b.solution.bottleneck);
        }
        let mut sys = QosSystem::paper(Path::Shared, Police::Ingress, 2000.0);
        sys.vms[1].limit = Some((300.0, 10.0));
        let (a, b) = (solve(&sys), solve_on_cpus(&sys, &many()));
        for (u, v) in a.throughput_per_s.iter().zip(&b.solution.throughput_per_s) {
            assert!((u - v).abs() <= 1e-6 * u, "{a:?} {b:?}");
        }
    }

    #[test]
    fn three_busy_stages_on_two_cpus_share_them() {
        // Shared path, overloaded: the backend would take a CPU and each VM
        // 63% of one; on 2 CPUs the VMs (below an equal share) get what
        // they need and the backend the rest: b = 2 / (1 + s_vm / s_b).
        let sys = QosSystem::paper(Path::Shared, Police::Post, 2000.0);
        let h = solve_on_cpus(&sys, &two());
        assert!(h.cpu_bound);
        let b = 2.0 / (1.0 + (1e9 / 1500.0) / (1e9 / 1900.0));
        assert!((h.cpu[0] - b).abs() < 1e-3, "{h:?}");
        let per_vm = b * 950.0;
        for t in &h.solution.throughput_per_s {
            assert!((t - per_vm).abs() < 0.5, "{h:?}");
        }
        assert!(h.cpu.iter().sum::<f64>() <= 2.0 + 1e-6);
        // Direct path: each VM wants a whole CPU, the hypervisor 2 x 1500 x
        // 20 us; the VMs split what the hypervisor leaves.
        let d = solve_on_cpus(
            &QosSystem::paper(Path::Direct, Police::Post, 2000.0),
            &two(),
        );
        let hyp = d.cpu[0];
        assert!(hyp > 0.0 && hyp < 0.1, "{d:?}");
        for t in &d.solution.throughput_per_s {
            assert!((t - (2.0 - hyp) / 2.0 * 1500.0).abs() < 1.0, "{d:?}");
        }
        assert!(d.solution.bottleneck.contains("share of the CPUs"), "{d:?}");
        // VMs on cores of their own: only the backend draws on the CPUs,
        // and it has one.
        let own = solve_on_cpus(
            &sys,
            &Host {
                cpus: 1.5,
                others: vec![0.2],
                batches_per_s: f64::INFINITY,
                vms_own_cores: true,
                vm_hand_off: None,
            },
        );
        assert!(!own.cpu_bound);
        for t in &own.solution.throughput_per_s {
            assert!((t - 950.0).abs() < 0.01, "{own:?}");
        }
        // Two CPUs, and other processes' two busy threads: an equal third
        // each.
        let third = solve_on_cpus(
            &sys,
            &Host {
                cpus: 2.0,
                others: vec![1.0, 1.0],
                batches_per_s: f64::INFINITY,
                vms_own_cores: true,
                vm_hand_off: None,
            },
        );
        assert!(third.cpu_bound);
        for t in &third.solution.throughput_per_s {
            assert!((t - 950.0 * 2.0 / 3.0).abs() < 0.01, "{third:?}");
        }
        // A light thread gets what it wants however busy the others are.
        let mut light = QosSystem::paper(Path::Direct, Police::Post, 1000.0);
        light.shared_ns = 20_000.0;
        let l = solve_on_cpus(
            &light,
            &Host {
                cpus: 2.0,
                others: vec![1.0, 1.0, 1.0],
                batches_per_s: f64::INFINITY,
                vms_own_cores: true,
                vm_hand_off: None,
            },
        );
        assert_eq!(l.solution.throughput_per_s, vec![1000.0, 1000.0]);
    }

    #[test]
    fn saturated_stages_pay_no_wake_up_and_get_no_kick() {
        // Overloaded shared path with kicks: the backend never sleeps (no
        // wake-up) but kicks the VMs, which sleep between requests.
        let mut sys = QosSystem::paper(Path::Shared, Police::Post, 2000.0);
        sys.kick_ns = 10_000.0;
        sys.wake_ns = 30_000.0;
        let h = solve_on_cpus(&sys, &many());
        let want = 1e9 / (sys.shared_ns + 10_000.0) / 2.0;
        for t in &h.solution.throughput_per_s {
            assert!((t - want).abs() < 1e-6 * want, "{h:?}");
        }
        // A device that coalesces: the backend, below saturation, wakes
        // once per batch.
        let mut light = QosSystem::paper(Path::Shared, Police::Post, 400.0);
        light.wake_ns = 100_000.0;
        let per_request = solve_on_cpus(&light, &many());
        let batched = solve_on_cpus(
            &light,
            &Host {
                batches_per_s: 100.0,
                ..many()
            },
        );
        let work = 800.0 * light.shared_ns / 1e9;
        assert!((per_request.solution.utilization[0] - (work + 800.0 * 1e-4)).abs() < 1e-9);
        assert!((batched.solution.utilization[0] - (work + 100.0 * 1e-4)).abs() < 1e-9);
        // A VM hand-off of its own (a guest per VM): its kick charged to
        // the shared stage, its wake-up to the VM, the shared stage's own
        // wake-up unchanged.
        let guest = solve_on_cpus(
            &light,
            &Host {
                vm_hand_off: Some((7_000.0, 50_000.0)),
                ..many()
            },
        );
        let u = &guest.solution.utilization;
        assert!(
            (u[0] - (work + 800.0 * 7e-6 + 800.0 * 1e-4)).abs() < 1e-9,
            "{u:?}"
        );
        let vm = 400.0 * (light.vms[0].service_ns + 50_000.0) / 1e9;
        assert!((u[1] - vm).abs() < 1e-9, "{u:?}");
        // Light load: every hand-off kicks and wakes, as in solve().
        sys.vms[0].offered_per_s = 100.0;
        sys.vms[1].offered_per_s = 100.0;
        let (a, b) = (solve(&sys), solve_on_cpus(&sys, &many()));
        for (u, v) in a.utilization.iter().zip(&b.solution.utilization) {
            assert!((u - v).abs() <= 1e-9, "{a:?} {b:?}");
        }
    }
}
