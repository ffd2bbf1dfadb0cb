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
            if !ok(vm.offered_per_s) || !ok(vm.service_ns) || vm.offered_per_s > MAX_RATE_PER_S {
                return Err(format!(
                    "vm{}: the offered load must be 0 to {MAX_RATE_PER_S:e} requests/s and the service time finite and >= 0",
                    i + 1
                ));
            }
            if let Some((r, b)) = vm.limit {
                if !(ok(r) && r > 0.0 && ok(b) && b >= 1.0) {
                    return Err(format!(
                        "vm{}: a limit needs a rate > 0 and a burst >= 1",
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

/// The most VMs a system takes.
pub const MAX_VMS: usize = 1024;
/// The largest offered load per VM [requests/s].
pub const MAX_RATE_PER_S: f64 = 1e9;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
