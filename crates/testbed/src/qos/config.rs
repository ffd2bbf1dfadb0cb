//! The real multi-VM run's inputs and results: its limits, where a VM's
//! stage runs (`VmCore`), the configuration, the per-VM and per-stage
//! results, the calibrated costs, and the check made before anything runs.
//! What does not live here: the stages (`stages`), running them (`run`),
//! calibrating (`calibrate`).

use std::time::Duration;

use kicklab_model::qos::QosSystem;
use serde::Serialize;

use crate::clock::cpus;
use crate::{Setting, TestbedError};

/// The most VMs of a real run (a thread each).
pub const MAX_VMS: usize = 64;

/// The most VMs a real run takes with a KVM guest each: before the clock
/// starts, every guest relates its clock to the host's (300 pings) while
/// the others spin on the same CPUs, so the set-up grows with the square
/// of the guests. On a 2-CPU machine 18 guests took 21 s, 32 took 81 s
/// and 64 more than 5 minutes.
pub const MAX_GUEST_VMS: usize = 32;
/// The most requests a ring holds waiting.
pub const MAX_BUFFER: u32 = 1 << 14;
/// The longest service time of a stage [ns] (100 ms).
pub const MAX_SERVICE_NS: f64 = 100e6;
/// The most requests per second, all VMs together, the device makes.
pub const MAX_RATE_PER_S: f64 = 1e6;
/// The longest measured window.
pub const MAX_WINDOW: Duration = Duration::from_secs(600);
/// With a guest per VM, the most requests a run may make (the offered rate
/// times the warm-up and window): it keeps 32 bytes for each until its end,
/// where the clock exchange after the run places the guests' stamps
/// (512 MiB).
pub const MAX_GUEST_REQUESTS: f64 = 16_777_216.0;
/// The most requests the device makes in one wake-up before it reads the
/// clock again (a device that fell behind catches up in steps).
pub(crate) const MAX_BATCH: usize = 4096;
/// The device sleeps at least this long between wake-ups [ns]: requests
/// due meanwhile arrive together (a NIC's interrupt coalescing), so the
/// device does not take a CPU of its own at high rates.
pub const DEVICE_PERIOD_NS: f64 = 200_000.0;
/// Requests a timed core's ring holds at least (its thread sleeps
/// [`DEVICE_PERIOD_NS`] at a time; the core's own buffer decides drops).
pub(crate) const TIMED_RING: u32 = 4096;
/// A gap longer than this between two reads of the TSC in busy work is
/// time the thread did not run [ns].
pub(crate) const OFF_CPU_NS: f64 = 1_500.0;

/// What a VM's own processing runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum VmCore {
    /// Busy work of its thread's CPU time, on this machine's CPUs (shared
    /// with the other stages when there are fewer CPUs than stages).
    Busy,
    /// A core of its own that this machine does not have: the VM's thread
    /// serves one request at a time, each taking its service time from
    /// when it starts (when it arrived, or the previous one ended), and
    /// sleeps meanwhile; it uses this machine's CPU only to wake up.
    Timed,
    /// A real KVM guest of its own (one vCPU, `kicklab run`'s guest
    /// consuming over a ring in its memory, halting when it is empty and
    /// woken by the shared stage's kick): its work is busy work by its
    /// TSC, so a guest the host preempts still ends a request on time but
    /// sees it only when it runs again (the KVM backend's `qos.rs`).
    Guest,
}

impl std::str::FromStr for VmCore {
    type Err = String;
    fn from_str(s: &str) -> Result<VmCore, String> {
        match s {
            "busy" => Ok(VmCore::Busy),
            "timed" => Ok(VmCore::Timed),
            "guest" => Ok(VmCore::Guest),
            _ => Err(format!("unknown VM core `{s}` (use busy, timed or guest)")),
        }
    }
}

impl VmCore {
    /// `busy` where every stage can have a CPU of its own besides the
    /// device's (`vms` + 2 threads), else `timed`.
    pub fn fitting(vms: usize) -> VmCore {
        if cpus() >= vms + 2 {
            VmCore::Busy
        } else {
            VmCore::Timed
        }
    }
}

/// One real run: the system in real time (ns, requests per second as run).
#[derive(Debug, Clone)]
pub struct QosRunConfig {
    /// The VMs, stages, limits and buffers. Kick and wake-up costs are not
    /// used (the run pays its own); arrivals deterministic or Poisson.
    pub system: QosSystem,
    /// Run before the window (queues fill, caches warm).
    pub warmup: Duration,
    /// Measured.
    pub window: Duration,
    /// Seed of Poisson arrivals.
    pub seed: u64,
    /// What the VMs' own processing runs on.
    pub vm_core: VmCore,
}

/// One VM's figures over the window, and its accounting over the run.
#[derive(Debug, Clone, Serialize)]
pub struct QosRunVm {
    /// Requests arriving per second.
    pub offered_per_s: f64,
    /// Completed per second.
    pub throughput_per_s: f64,
    /// Dropped per second, every place together.
    pub dropped_per_s: f64,
    /// Of those, by the policer (ingress or post).
    pub policed_per_s: f64,
    /// Latency from the device to completion [ns]: p50, p99 (NaN without
    /// completions).
    pub latency_ns: [f64; 2],
    /// Requests the device made over the whole run.
    pub generated: u64,
    /// Completed over the whole run (after the window, queues are flushed
    /// without work: completed, not measured).
    pub completed: u64,
    /// Dropped over the whole run, counted where they were dropped.
    pub dropped: u64,
    /// Made but neither completed nor counted as dropped.
    pub lost: u64,
    /// Completed more than once or out of order.
    pub duplicated: u64,
    /// A guest's done stamps that made no sense (before the request was
    /// made, or after its slot was seen free): those requests count as
    /// done when seen (guest cores; 0 otherwise).
    pub bad_stamps: u64,
    /// With guests: how far the guest's clock moved against the host's
    /// between the clock exchanges before and after the run [ns]; its
    /// stamps are placed by the offset interpolated between the two.
    /// `None` without guests.
    pub clock_drift_ns: Option<f64>,
}

/// One thread's figures over the window.
#[derive(Debug, Clone, Serialize)]
pub struct QosRunStage {
    /// `device`, `backend`/`hypervisor`, `vm1`, ...
    pub name: String,
    /// Its CPU time over the window, in CPUs.
    pub cpu: f64,
    /// Its busy fraction: the CPU for a stage of busy work, the share of
    /// the window its core was serving for a timed VM core.
    pub busy: f64,
    /// Requests it finished in the window (the device: made).
    pub requests: u64,
    /// CPU per request [ns] (everything: busy work, ring, kicks, sleeps).
    pub cpu_per_request_ns: f64,
    /// Times it slept on its futex in the window.
    pub sleeps: u64,
    /// Kicks it sent in the window.
    pub kicks: u64,
}

/// What a real run measured.
#[derive(Debug, Clone, Serialize)]
pub struct QosRunResult {
    /// Per VM.
    pub vms: Vec<QosRunVm>,
    /// The shared stage, then each VM's stage.
    pub stages: Vec<QosRunStage>,
    /// The device thread.
    pub device: QosRunStage,
    /// Seconds measured.
    pub window_s: f64,
    /// CPUs this process may use.
    pub cpus: usize,
    /// Threads of the run: the device and the stages.
    pub threads: usize,
    /// CPUs that other processes used during the window (from
    /// `/proc/stat`), if readable.
    pub others_cpu: Option<f64>,
    /// What the VMs' own processing ran on.
    pub vm_core: VmCore,
}

impl QosRunResult {
    /// Threads that can be busy (the shared stage, and the VMs' on busy
    /// cores).
    pub fn busy_threads(&self) -> usize {
        match self.vm_core {
            VmCore::Busy | VmCore::Guest => self.stages.len(),
            VmCore::Timed => 1,
        }
    }

    /// More threads that can be busy than CPUs: they time-share.
    pub fn oversubscribed(&self) -> bool {
        self.busy_threads() > self.cpus
    }
}

/// The run's costs, measured on this machine before it.
#[derive(Debug, Clone, Serialize)]
pub struct QosCosts {
    /// CPU of the shared stage's busy work per request [ns].
    pub shared_ns: f64,
    /// CPU of each VM's busy work per request [ns].
    pub vm_ns: Vec<f64>,
    /// A kick: the notify call that wakes a sleeping stage [ns of CPU].
    pub kick_ns: f64,
    /// A sleep and wake-up of a stage: registering, the futex wait, taking
    /// the request [ns of CPU].
    pub wake_ns: f64,
    /// A stage's own handling of a request besides its busy work: taking
    /// it off one ring, policing, handing it to the next [ns of CPU].
    pub ring_ns: f64,
    /// Kicks measured.
    pub samples: usize,
    /// With a guest per VM: the shared stage's kick of a halted guest
    /// (its doorbell write) and the guest's wake-up (its halt, exit to the
    /// VMM and re-entry, and taking the request, as its vCPU thread's CPU)
    /// [ns], which the model takes for the VMs' hand-offs.
    pub guest_hand_off: Option<(f64, f64)>,
}

/// Checks a configuration (what [`run_qos`] checks first).
///
/// # Errors
///
/// [`TestbedError::Invalid`] or [`TestbedError::Limit`], naming the
/// parameter.
pub fn check_qos(cfg: &QosRunConfig) -> Result<(), TestbedError> {
    let sys = &cfg.system;
    sys.validate()
        .map_err(|e| TestbedError::invalid(Setting::Vms, e))?;
    if sys.vms.len() > MAX_VMS {
        return Err(TestbedError::limit(
            Setting::Vms,
            format!("a real run takes at most {MAX_VMS} VMs (a thread each)"),
        ));
    }
    if cfg.vm_core == VmCore::Guest && sys.vms.len() > MAX_GUEST_VMS {
        return Err(TestbedError::limit(
            Setting::Vms,
            format!(
                "a real run takes at most {MAX_GUEST_VMS} KVM guests (their set-up grows \
                 with the square of their number: minutes past that)"
            ),
        ));
    }
    let guest_len = crate::backend::kvm::guest::map::MAX_LEN;
    if cfg.vm_core == VmCore::Guest && sys.buffer >= guest_len {
        return Err(TestbedError::limit(
            Setting::Len,
            format!(
                "a guest's ring holds its buffer and the request in service: a buffer of at most {} with guests",
                guest_len - 1
            ),
        ));
    }
    if sys.buffer > MAX_BUFFER {
        return Err(TestbedError::limit(
            Setting::Len,
            format!("a real run's buffers hold at most {MAX_BUFFER} requests"),
        ));
    }
    let longest = sys
        .vms
        .iter()
        .map(|v| v.service_ns)
        .fold(sys.shared_ns, f64::max);
    if longest > MAX_SERVICE_NS {
        return Err(TestbedError::limit(
            Setting::Work,
            format!(
                "a service time of {} is longer than a real run takes ({})",
                kicklab_model::fmt_ns(longest),
                kicklab_model::fmt_ns(MAX_SERVICE_NS)
            ),
        ));
    }
    let rate: f64 = sys.vms.iter().map(|v| v.offered_per_s).sum();
    if rate > MAX_RATE_PER_S {
        return Err(TestbedError::limit(
            Setting::Messages,
            format!(
                "{rate:.0} requests/s in all is more than the device thread makes ({MAX_RATE_PER_S:.0}/s)"
            ),
        ));
    }
    if cfg.window.is_zero() || cfg.window > MAX_WINDOW || cfg.warmup > MAX_WINDOW {
        return Err(TestbedError::invalid(
            Setting::Messages,
            format!("the window must be > 0 and at most {MAX_WINDOW:?}, the warm-up at most that"),
        ));
    }
    let requests = rate * (cfg.warmup + cfg.window).as_secs_f64();
    if cfg.vm_core == VmCore::Guest && requests > MAX_GUEST_REQUESTS {
        return Err(TestbedError::limit(
            Setting::Messages,
            format!(
                "with a guest per VM a run keeps 32 bytes a request until its end: {requests:.0} requests (the offered rate times the warm-up and window) is more than {MAX_GUEST_REQUESTS:.0}; shorten the run or lower the rate"
            ),
        ));
    }
    Ok(())
}
