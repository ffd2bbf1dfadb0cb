//! Several VMs sharing one device, for real (Lakshmi and Nandy):
//! the system of `kicklab_model::qos` as threads over kicklab rings with
//! futex notifications.
//!
//! ```text
//!   device thread --ring--> shared stage thread --ring--> VM 1 stage thread
//!   (arrivals of every VM,   (backend or hypervisor:   \--ring--> VM 2 stage thread ...
//!    ingress policer)         busy work, post policer)
//! ```
//!
//! The device makes every VM's arrivals (evenly spaced, or Poisson) and
//! sleeps between them; a request over a VM's limit is dropped there when
//! limits are policed at ingress. The shared stage serves all VMs in
//! arrival order (FIFO), spends its service time as busy work, then polices
//! (post) and hands the request to its VM's stage, which spends the VM's
//! service time and completes it. Each ring holds `buffer` requests
//! waiting (drop-tail: a request that finds it full is dropped); a stage
//! takes a request off its ring before serving it, as the simulator's
//! stages do. A stage with nothing to do sleeps on its futex after
//! registering for a kick in the ring; a hand-off kicks it only then.
//!
//! Service times are busy work of the thread's own CPU time: a stage that
//! is preempted does not get its work done meanwhile (TSC spinning that
//! leaves out the gaps in which the thread did not run), so stages that
//! share CPUs share them as the model's CPU-bound stages would.
//!
//! Every request carries its VM and a sequence number: at the end each
//! VM's requests are accounted for (completed in order, or dropped at a
//! counted place); lost and duplicated ones are counted.
//!
//! What lives here: the run ([`run_qos`]) and a quick calibration of its
//! costs ([`calibrate_qos`]). What does not: scaling the paper's times,
//! the model, printing (`kicklab-lab`, the binary).

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use kicklab_model::qos::{Arrivals, Police, QosSystem};
use kicklab_ring::{ring, Consumer, FutexNotifier, Notifier, Producer};
use serde::Serialize;

use crate::clock::{clock_ns, cpus, own_cpu_clock, rdtsc, thread_cpu_ns, Tsc};
use crate::party::join_within;
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
const MAX_BATCH: usize = 4096;
/// The device sleeps at least this long between wake-ups [ns]: requests
/// due meanwhile arrive together (a NIC's interrupt coalescing), so the
/// device does not take a CPU of its own at high rates.
pub const DEVICE_PERIOD_NS: f64 = 200_000.0;
/// Requests a timed core's ring holds at least (its thread sleeps
/// [`DEVICE_PERIOD_NS`] at a time; the core's own buffer decides drops).
const TIMED_RING: u32 = 4096;
/// A gap longer than this between two reads of the TSC in busy work is
/// time the thread did not run [ns].
const OFF_CPU_NS: f64 = 1_500.0;

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
    /// sees it only when it runs again (`crate::backend::kvm::qos`).
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

/// Busy work of `ticks` of the calling thread's own time: TSC spinning
/// that leaves out the gaps in which the thread was not running. Stops at
/// `until` (a TSC value) or when `abort` is set; false if it stopped early.
#[inline]
fn cpu_work(ticks: u64, off_cpu: u64, until: u64, abort: &AtomicBool) -> bool {
    let mut done = 0u64;
    let mut last = rdtsc();
    let mut i = 0u32;
    while done < ticks {
        std::hint::spin_loop();
        let now = rdtsc();
        let d = now.wrapping_sub(last);
        if d < off_cpu {
            done += d;
        }
        last = now;
        i = i.wrapping_add(1);
        if i.is_multiple_of(256) && (now >= until || abort.load(Ordering::Relaxed)) {
            return false;
        }
    }
    true
}

/// A token bucket (the simulator's): `depth` requests, refilled at `rate`
/// per second, full at the start.
struct Bucket {
    per_tick: f64,
    depth: f64,
    tokens: f64,
    last: u64,
}

impl Bucket {
    fn new(rate: f64, depth: f64, tsc: Tsc, now: u64) -> Bucket {
        Bucket {
            per_tick: rate / 1e9 / tsc.ticks_per_ns,
            depth,
            tokens: depth,
            last: now,
        }
    }

    #[allow(clippy::cast_precision_loss)]
    fn take(&mut self, now: u64) -> bool {
        let dt = now.saturating_sub(self.last) as f64;
        self.tokens = (self.tokens + dt * self.per_tick).min(self.depth);
        self.last = now.max(self.last);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Slots a request takes in a ring: its header, when the device made it,
/// when it was handed to this ring's stage (TSC).
const SLOTS: u32 = 3;

/// A request's first slot: its VM and sequence number.
fn header(vm: usize, seq: u64) -> u64 {
    (vm as u64) << 48 | (seq & SEQ_MASK)
}
const SEQ_MASK: u64 = (1 << 48) - 1;

/// What every thread shares.
pub(crate) struct Ctx {
    pub(crate) tsc: Tsc,
    /// The window, in TSC ticks; set before `go`.
    t0: AtomicU64,
    t1: AtomicU64,
    /// When the device starts (0: not yet).
    go: AtomicU64,
    /// The window's CPU clocks have been read: the device may exit (a
    /// thread's CPU clock reads 0 once it has).
    measured: AtomicBool,
    pub(crate) abort: AtomicBool,
    /// Each thread's CPU clock id (device, shared, vm1, ...).
    pub(crate) clocks: Vec<AtomicI64>,
    pub(crate) ready: AtomicUsize,
    /// Steps of the threads' set-up so far (a guest's clock related, a
    /// thread ready): the start waits while they move.
    pub(crate) set_up: AtomicUsize,
    off_cpu: u64,
}

impl Ctx {
    /// Before the run: no window yet, `vms` VM stages.
    pub(crate) fn new(tsc: Tsc, vms: usize) -> Ctx {
        Ctx {
            tsc,
            t0: AtomicU64::new(u64::MAX),
            t1: AtomicU64::new(u64::MAX),
            go: AtomicU64::new(0),
            measured: AtomicBool::new(false),
            abort: AtomicBool::new(false),
            clocks: (0..vms + 2).map(|_| AtomicI64::new(i64::MIN)).collect(),
            ready: AtomicUsize::new(0),
            set_up: AtomicUsize::new(0),
            off_cpu: tsc.ticks(OFF_CPU_NS),
        }
    }

    pub(crate) fn window(&self) -> (u64, u64) {
        (
            self.t0.load(Ordering::Relaxed),
            self.t1.load(Ordering::Relaxed),
        )
    }

    fn enter(&self, slot: usize) {
        let own = own_cpu_clock();
        let id = if own == libc::CLOCK_THREAD_CPUTIME_ID {
            i64::MIN
        } else {
            i64::from(own)
        };
        self.clocks[slot].store(id, Ordering::Relaxed);
        self.ready.fetch_add(1, Ordering::Release);
    }
}

/// What a thread says when another one's failure stopped the run.
const STOPPED: &str = "the run was stopped";

pub(crate) fn aborted() -> TestbedError {
    TestbedError::Hang(STOPPED.into())
}

/// A thread's counts over the window.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Counts {
    pub(crate) requests: u64,
    pub(crate) sleeps: u64,
    pub(crate) kicks: u64,
}

/// Space for one request.
fn room(p: &mut Producer) -> Result<bool, TestbedError> {
    Ok(p.free()? >= SLOTS || p.free_now()? >= SLOTS)
}

/// Pushes a request and publishes it; true if the peer asked for a kick.
fn send(p: &mut Producer, req: [u64; 3]) -> Result<bool, TestbedError> {
    for w in req {
        let ok = p.write(w)?;
        debug_assert!(ok, "room was checked");
    }
    let published = p.publish();
    Ok(p.peer_wants_kick(published))
}

/// Takes the next request off `input`, if a whole one is there.
fn take(input: &mut Consumer) -> Result<Option<[u64; 3]>, TestbedError> {
    if input.available()? < SLOTS {
        return Ok(None);
    }
    let mut r = [0u64; 3];
    for w in &mut r {
        *w = input
            .claim()?
            .ok_or_else(|| TestbedError::Hang("a request cut short".into()))?;
    }
    // Nobody waits for space (a full ring drops): no kick back.
    let _ = input.release();
    Ok(Some(r))
}

/// Sleeps on `note` until kicked, after registering in `input` for a
/// whole request; returns at once if one came meanwhile, or the upstream
/// is done, or the run aborted.
fn sleep_on(
    ctx: &Ctx,
    input: &mut Consumer,
    note: &FutexNotifier,
    upstream_done: &AtomicBool,
    counts: &mut Counts,
) -> Result<(), TestbedError> {
    if input.prepare_sleep(SLOTS)? {
        if upstream_done.load(Ordering::Acquire) || ctx.abort.load(Ordering::Relaxed) {
            input.finish_sleep();
            return Ok(());
        }
        let (t0, t1) = ctx.window();
        let now = rdtsc();
        if now >= t0 && now < t1 {
            counts.sleeps += 1;
        }
        note.wait()?;
        input.finish_sleep();
    }
    Ok(())
}

/// A stage's loop: takes requests off `input` while there are any, sleeps
/// on `note` when there are none, until `upstream_done` and the ring is
/// empty.
fn serve(
    ctx: &Ctx,
    input: &mut Consumer,
    note: &FutexNotifier,
    upstream_done: &AtomicBool,
    counts: &mut Counts,
    mut handle: impl FnMut([u64; 3], &mut Counts) -> Result<(), TestbedError>,
) -> Result<(), TestbedError> {
    loop {
        if ctx.abort.load(Ordering::Relaxed) {
            return Err(aborted());
        }
        if let Some(req) = take(input)? {
            handle(req, counts)?;
            continue;
        }
        if upstream_done.load(Ordering::Acquire) {
            if input.available_now()? >= SLOTS {
                continue;
            }
            return Ok(());
        }
        sleep_on(ctx, input, note, upstream_done, counts)?;
    }
}

/// The device's counts per VM.
#[derive(Debug, Default, Clone)]
struct DeviceOut {
    generated: Vec<u64>,
    generated_w: Vec<u64>,
    dropped: Vec<u64>,
    dropped_w: Vec<u64>,
    policed_w: Vec<u64>,
    counts: Counts,
}

/// A small generator for Poisson gaps (splitmix64).
struct Rng(u64);

impl Rng {
    #[allow(clippy::cast_precision_loss)]
    fn unit(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // (0, 1]
        ((z >> 11) + 1) as f64 / (1u64 << 53) as f64
    }
}

#[allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::too_many_lines
)]
fn device(
    ctx: &Ctx,
    sys: &QosSystem,
    out: &mut Producer,
    note: &FutexNotifier,
    seed: u64,
) -> Result<DeviceOut, TestbedError> {
    // Sleep to the microsecond, not the default 50 us of timer slack.
    // SAFETY: prctl with PR_SET_TIMERSLACK takes an integer and touches no
    // memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
    ctx.enter(0);
    let n = sys.vms.len();
    let mut o = DeviceOut {
        generated: vec![0; n],
        generated_w: vec![0; n],
        dropped: vec![0; n],
        dropped_w: vec![0; n],
        policed_w: vec![0; n],
        counts: Counts::default(),
    };
    let start = loop {
        let g = ctx.go.load(Ordering::Acquire);
        if g != 0 {
            break g;
        }
        if ctx.abort.load(Ordering::Relaxed) {
            return Err(aborted());
        }
        std::thread::sleep(Duration::from_micros(200));
    };
    let (t0, t1) = ctx.window();
    let tsc = ctx.tsc;
    let mut rng = Rng(seed ^ 0x5EED);
    // Mean gap per VM [ticks]; None: no load.
    let gap: Vec<Option<f64>> = sys
        .vms
        .iter()
        .map(|v| (v.offered_per_s > 0.0).then(|| 1e9 / v.offered_per_s * tsc.ticks_per_ns))
        .collect();
    let next_gap = |g: f64, rng: &mut Rng| match sys.arrivals {
        Arrivals::Deterministic => g,
        Arrivals::Poisson => -rng.unit().ln() * g,
    };
    // Streams interleaved as in the simulator: VM i starts i/n of a gap in.
    let mut due: Vec<f64> = gap
        .iter()
        .enumerate()
        .map(|(i, g)| g.map_or(f64::INFINITY, |g| start as f64 + g * i as f64 / n as f64))
        .collect();
    let mut buckets: Vec<Option<Bucket>> = sys
        .vms
        .iter()
        .map(|v| match (sys.police, v.limit) {
            (Police::Ingress, Some((r, b))) => Some(Bucket::new(r, b, tsc, start)),
            _ => None,
        })
        .collect();
    let mut seq = vec![0u64; n];
    let period = tsc.ticks(DEVICE_PERIOD_NS);
    loop {
        if ctx.abort.load(Ordering::Relaxed) {
            return Err(aborted());
        }
        let now = rdtsc();
        if now >= t1 {
            break;
        }
        let mut kick = false;
        let mut published = false;
        for _ in 0..MAX_BATCH {
            // The earliest due arrival, if it is due.
            let (i, d) =
                due.iter().enumerate().fold(
                    (0, f64::INFINITY),
                    |b, (i, d)| if *d < b.1 { (i, *d) } else { b },
                );
            if d > now as f64 {
                break;
            }
            due[i] += next_gap(gap[i].unwrap_or(f64::INFINITY), &mut rng);
            // It arrived at `at`; the device hands it on now (coalesced).
            // The policer sees it arrive, the buffer when it is handed on.
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let at = (d as u64).min(now);
            let in_w = at >= t0 && at < t1;
            let s = seq[i];
            seq[i] += 1;
            o.generated[i] += 1;
            if in_w {
                o.generated_w[i] += 1;
                o.counts.requests += 1;
            }
            let pass = buckets[i].as_mut().is_none_or(|b| b.take(at));
            if pass && room(out)? {
                kick |= send(out, [header(i, s), at, now])?;
                published = true;
            } else {
                o.dropped[i] += 1;
                if in_w {
                    o.dropped_w[i] += 1;
                    if !pass {
                        o.policed_w[i] += 1;
                    }
                }
            }
        }
        let in_w = now >= t0;
        if published && kick {
            note.notify()?;
            if in_w {
                o.counts.kicks += 1;
            }
        }
        let next = due.iter().copied().fold(f64::INFINITY, f64::min);
        let wake = (next as u64).max(now + period).min(t1);
        let now = rdtsc();
        if wake > now {
            if in_w {
                o.counts.sleeps += 1;
            }
            std::thread::sleep(Duration::from_nanos(tsc.ns(wake - now) as u64));
        }
    }
    // Stay until the window's clocks are read (the stages stay until the
    // device is done).
    while !ctx.measured.load(Ordering::Acquire) && !ctx.abort.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(o)
}

/// The shared stage's counts per VM.
#[derive(Default)]
struct SharedOut {
    dropped: Vec<u64>,
    dropped_w: Vec<u64>,
    policed_w: Vec<u64>,
    counts: Counts,
    /// The VMs' figures, where their stages are not threads of the run
    /// ([`Outlets::finish`]).
    vms: Option<Vec<VmOut>>,
}

/// Where the shared stage hands requests on: the VMs' stages.
pub(crate) trait Outlets: Send {
    /// Before the run (the shared stage's thread, before it says it is
    /// ready).
    ///
    /// # Errors
    ///
    /// A VM stage that cannot be reached.
    fn prepare(&mut self, _ctx: &Ctx) -> Result<(), TestbedError> {
        Ok(())
    }

    /// Hands request `req` (header, made, handed on) to VM `vm`'s stage:
    /// `None` if its buffer is full (the request is dropped), else
    /// whether the stage had asked for a kick and was kicked.
    ///
    /// # Errors
    ///
    /// A corrupt ring, a kick that fails.
    fn deliver(&mut self, vm: usize, req: [u64; 3]) -> Result<Option<bool>, TestbedError>;

    /// Nothing more comes. Stages that are not threads of the run finish
    /// what they hold here and give their figures.
    ///
    /// # Errors
    ///
    /// A stage that does not finish.
    fn finish(&mut self, _ctx: &Ctx) -> Result<Option<Vec<VmOut>>, TestbedError> {
        Ok(None)
    }
}

/// The VMs' stages as threads: a ring and a futex each.
struct ThreadOutlets {
    outs: Vec<Producer>,
    notes: Vec<Arc<FutexNotifier>>,
}

impl Outlets for ThreadOutlets {
    fn deliver(&mut self, vm: usize, req: [u64; 3]) -> Result<Option<bool>, TestbedError> {
        if !room(&mut self.outs[vm])? {
            return Ok(None);
        }
        let kick = send(&mut self.outs[vm], req)?;
        if kick {
            self.notes[vm].notify()?;
        }
        Ok(Some(kick))
    }
}

/// The shared stage: the backend (shared path) or the hypervisor (direct).
fn shared_stage(
    ctx: &Ctx,
    sys: &QosSystem,
    input: &mut Consumer,
    note: &FutexNotifier,
    device_done: &AtomicBool,
    outs: &mut dyn Outlets,
) -> Result<SharedOut, TestbedError> {
    outs.prepare(ctx)?;
    ctx.enter(1);
    let n = sys.vms.len();
    let mut o = SharedOut {
        dropped: vec![0; n],
        dropped_w: vec![0; n],
        policed_w: vec![0; n],
        counts: Counts::default(),
        vms: None,
    };
    let tsc = ctx.tsc;
    let work = tsc.ticks(sys.shared_ns);
    let mut buckets: Vec<Option<Bucket>> = sys
        .vms
        .iter()
        .map(|v| match (sys.police, v.limit) {
            (Police::Post, Some((r, b))) => Some(Bucket::new(r, b, tsc, rdtsc())),
            _ => None,
        })
        .collect();
    let mut counts = Counts::default();
    serve(
        ctx,
        input,
        note,
        device_done,
        &mut counts,
        |[hdr, stamp, _], c| {
            let vm = usize::try_from(hdr >> 48).unwrap_or(usize::MAX);
            if vm >= n {
                return Err(TestbedError::Hang(format!("a request of VM {vm}")));
            }
            let (t0, t1) = ctx.window();
            cpu_work(work, ctx.off_cpu, t1, &ctx.abort);
            let now = rdtsc();
            let in_w = now >= t0 && now < t1;
            if in_w {
                c.requests += 1;
            }
            let pass = buckets[vm].as_mut().is_none_or(|b| b.take(now));
            let handed = if pass {
                outs.deliver(vm, [hdr, stamp, now])?
            } else {
                None
            };
            if let Some(kicked) = handed {
                if kicked && in_w {
                    c.kicks += 1;
                }
            } else {
                o.dropped[vm] += 1;
                if in_w {
                    o.dropped_w[vm] += 1;
                    if !pass {
                        o.policed_w[vm] += 1;
                    }
                }
            }
            Ok(())
        },
    )?;
    o.counts = counts;
    o.vms = outs.finish(ctx)?;
    Ok(o)
}

/// A VM stage's counts.
pub(crate) struct VmOut {
    completed: u64,
    pub(crate) duplicated: u64,
    /// Dropped by a timed core's buffer, all and in the window.
    dropped: u64,
    dropped_w: u64,
    latency: Histogram<u64>,
    /// Ticks its core served within the window (timed cores).
    busy_ticks: u64,
    pub(crate) counts: Counts,
    /// A guest's done stamps that made no sense (guest cores).
    pub(crate) bad_stamps: u64,
    /// How far the guest's clock moved against the host's over the run
    /// (guest cores) [ns].
    pub(crate) clock_drift_ns: Option<f64>,
}

impl VmOut {
    pub(crate) fn new() -> VmOut {
        VmOut {
            completed: 0,
            duplicated: 0,
            dropped: 0,
            dropped_w: 0,
            latency: Histogram::new(3).expect("3 significant digits"),
            busy_ticks: 0,
            counts: Counts::default(),
            bad_stamps: 0,
            clock_drift_ns: None,
        }
    }

    /// Request `hdr` of VM `id`, made at `stamp`, completed at `at`.
    pub(crate) fn complete(
        &mut self,
        id: usize,
        hdr: u64,
        stamp: u64,
        at: u64,
        last: &mut Option<u64>,
        ctx: &Ctx,
    ) {
        let seq = hdr & SEQ_MASK;
        if usize::try_from(hdr >> 48).ok() != Some(id) || last.is_some_and(|l| seq <= l) {
            self.duplicated += 1;
        }
        *last = Some(last.map_or(seq, |l| l.max(seq)));
        self.completed += 1;
        let (t0, t1) = ctx.window();
        if at >= t0 && at < t1 {
            self.counts.requests += 1;
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let ns = ctx.tsc.ns(at.saturating_sub(stamp)) as u64;
            // `record` grows the histogram; only a count overflow fails.
            if self.latency.record(ns).is_err() {
                self.latency.saturating_record(ns);
            }
        }
    }
}

/// A VM's stage on a busy core: busy work, then completion.
fn vm_stage(
    ctx: &Ctx,
    id: usize,
    service_ns: f64,
    input: &mut Consumer,
    note: &FutexNotifier,
    shared_done: &AtomicBool,
) -> Result<VmOut, TestbedError> {
    ctx.enter(2 + id);
    let work = ctx.tsc.ticks(service_ns);
    let mut o = VmOut::new();
    let mut last: Option<u64> = None;
    let mut counts = Counts::default();
    serve(
        ctx,
        input,
        note,
        shared_done,
        &mut counts,
        |[hdr, stamp, _], _| {
            let (_, t1) = ctx.window();
            cpu_work(work, ctx.off_cpu, t1, &ctx.abort);
            o.complete(id, hdr, stamp, rdtsc(), &mut last, ctx);
            Ok(())
        },
    )?;
    o.counts.sleeps = counts.sleeps;
    Ok(o)
}

/// A VM's stage on a timed core of its own, kept in the core's own time:
/// a request handed over at `h` finds `waiting` requests queued (those
/// accepted that have not started by `h`); with `buffer` of them it is
/// dropped (drop-tail), else it starts when the previous one ends or at
/// `h`, whichever is later, and ends its service time after. The thread
/// only carries requests from the ring to the core: it wakes every
/// [`DEVICE_PERIOD_NS`], takes what is there, and records each
/// completion at the time it ended; it never registers for a kick, so the
/// shared stage never kicks it. Its ring holds more than `buffer`, so a
/// thread that wakes late does not change what the core drops.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn vm_stage_timed(
    ctx: &Ctx,
    id: usize,
    service_ns: f64,
    buffer: u32,
    input: &mut Consumer,
    shared_done: &AtomicBool,
) -> Result<VmOut, TestbedError> {
    // Timed sleeps to the microsecond.
    // SAFETY: as in `device`.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
    ctx.enter(2 + id);
    let tsc = ctx.tsc;
    let work = tsc.ticks(service_ns);
    let period = Duration::from_nanos(DEVICE_PERIOD_NS as u64);
    let mut o = VmOut::new();
    let mut last: Option<u64> = None;
    // When the core is free (its time), and when each accepted request
    // that may still be waiting starts.
    let mut free_at = 0u64;
    let mut starts: std::collections::VecDeque<u64> = std::collections::VecDeque::new();
    loop {
        if ctx.abort.load(Ordering::Relaxed) {
            return Err(aborted());
        }
        let done = shared_done.load(Ordering::Acquire);
        let mut took = false;
        while let Some([hdr, stamp, handed]) = take(input)? {
            took = true;
            let (t0, t1) = ctx.window();
            while starts.front().is_some_and(|s| *s <= handed) {
                starts.pop_front();
            }
            if starts.len() >= buffer as usize {
                o.dropped += 1;
                if handed >= t0 && handed < t1 {
                    o.dropped_w += 1;
                }
                continue;
            }
            let start = free_at.max(handed);
            // After the window the queue is flushed without work.
            let end = if start >= t1 { start } else { start + work };
            let (a, b) = (start.max(t0), end.min(t1));
            if b > a {
                o.busy_ticks += b - a;
            }
            starts.push_back(start);
            free_at = end;
            o.complete(id, hdr, stamp, end, &mut last, ctx);
        }
        if done && !took && input.available_now()? < SLOTS {
            break;
        }
        let (t0, t1) = ctx.window();
        let now = rdtsc();
        if now >= t0 && now < t1 {
            o.counts.sleeps += 1;
        }
        std::thread::sleep(period);
    }
    Ok(o)
}

/// Busy CPU of the whole machine [s] (`/proc/stat`: user, nice, system,
/// irq, softirq, steal), if readable.
#[allow(clippy::cast_precision_loss)]
fn machine_busy_s() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let line = s.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if f.len() < 8 {
        return None;
    }
    // SAFETY: sysconf takes an integer and touches no memory of ours.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz <= 0 {
        return None;
    }
    let busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
    Some(busy as f64 / hz as f64)
}

fn process_cpu_s() -> f64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    #[allow(clippy::cast_precision_loss)]
    let s = t.tv_sec as f64 + t.tv_nsec as f64 / 1e9;
    s
}

fn sleep_until(tsc: Tsc, t: u64) {
    let now = rdtsc();
    if t > now {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        std::thread::sleep(Duration::from_nanos(tsc.ns(t - now) as u64));
    }
}

/// A VM stage's thread.
type VmThread = std::thread::JoinHandle<Result<VmOut, TestbedError>>;

/// Starts the VMs' stages as threads (busy or timed cores), each with a
/// ring from the shared stage and a futex; returns the rings' producer
/// ends.
fn thread_stages(
    cfg: &QosRunConfig,
    sys: &Arc<QosSystem>,
    ctx: &Arc<Ctx>,
    notes: &[Arc<FutexNotifier>],
    shared_done: &Arc<AtomicBool>,
    vm_threads: &mut Vec<VmThread>,
) -> Result<Vec<Producer>, TestbedError> {
    // A timed core keeps its buffer itself; its ring only has to hold what
    // arrives while its thread sleeps.
    let vm_slots = match cfg.vm_core {
        VmCore::Busy | VmCore::Guest => SLOTS * sys.buffer,
        VmCore::Timed => SLOTS * sys.buffer.max(TIMED_RING),
    };
    let (to_vm, vm_in): (Vec<Producer>, Vec<Consumer>) =
        (0..sys.vms.len()).map(|_| ring(vm_slots)).unzip();
    for (i, mut input) in vm_in.into_iter().enumerate() {
        let (ctx, note, done, sys, core) = (
            Arc::clone(ctx),
            Arc::clone(&notes[i]),
            Arc::clone(shared_done),
            Arc::clone(sys),
            cfg.vm_core,
        );
        vm_threads.push(
            std::thread::Builder::new()
                .name(format!("qos-vm{}", i + 1))
                .spawn(move || {
                    let r = match core {
                        VmCore::Busy | VmCore::Guest => {
                            vm_stage(&ctx, i, sys.vms[i].service_ns, &mut input, &note, &done)
                        }
                        VmCore::Timed => vm_stage_timed(
                            &ctx,
                            i,
                            sys.vms[i].service_ns,
                            sys.buffer,
                            &mut input,
                            &done,
                        ),
                    };
                    if r.is_err() {
                        ctx.abort.store(true, Ordering::Relaxed);
                    }
                    r
                })?,
        );
    }
    Ok(to_vm)
}

/// Runs the system for real: warm-up, then the window, then the queues
/// are flushed (without work) and every request accounted for.
///
/// # Errors
///
/// A bad configuration ([`check_qos`]), a thread that cannot be spawned,
/// a corrupt ring, or a run that does not stop (a hang).
pub fn run_qos(cfg: &QosRunConfig) -> Result<QosRunResult, TestbedError> {
    run_qos_with(cfg, crate::backend::kvm::guest::Misbehavior::None)
}

/// [`run_qos`] with every guest misbehaving as `guest` (guest cores; the
/// tests of a host that a guest must not crash or hang).
///
/// # Errors
///
/// As [`run_qos`]; a guest that misbehaves stops the run with an error.
#[allow(
    clippy::too_many_lines,
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation
)]
pub fn run_qos_with(
    cfg: &QosRunConfig,
    guest: crate::backend::kvm::guest::Misbehavior,
) -> Result<QosRunResult, TestbedError> {
    check_qos(cfg)?;
    let _cpus = crate::cpu_lock::hold()?;
    let sys = Arc::new(cfg.system.clone());
    let n = sys.vms.len();
    let tsc = Tsc::get();
    let ctx = Arc::new(Ctx::new(tsc, n));
    let slots = SLOTS * sys.buffer;
    let (mut dev_out, mut shared_in) = ring(slots);
    let note0 = Arc::new(FutexNotifier::default());
    let device_done = Arc::new(AtomicBool::new(false));
    let shared_done = Arc::new(AtomicBool::new(false));
    let mut vm_threads = Vec::with_capacity(n);
    // The VMs' stages: guests of their own, or threads with a ring and a
    // futex each.
    let (mut outlets, notes, guests): (Box<dyn Outlets>, Vec<Arc<FutexNotifier>>, _) =
        if cfg.vm_core == VmCore::Guest {
            let (guests, outlets) = crate::backend::kvm::qos::start(&sys, &ctx, guest)?;
            (Box::new(outlets), Vec::new(), Some(guests))
        } else {
            let notes: Vec<Arc<FutexNotifier>> =
                (0..n).map(|_| Arc::new(FutexNotifier::default())).collect();
            let outs = thread_stages(cfg, &sys, &ctx, &notes, &shared_done, &mut vm_threads)?;
            (
                Box::new(ThreadOutlets {
                    outs,
                    notes: notes.clone(),
                }),
                notes,
                None,
            )
        };
    let shared = {
        let (ctx, note, ddone, sdone, sys, notes) = (
            Arc::clone(&ctx),
            Arc::clone(&note0),
            Arc::clone(&device_done),
            Arc::clone(&shared_done),
            Arc::clone(&sys),
            notes.clone(),
        );
        std::thread::Builder::new()
            .name("qos-shared".into())
            .spawn(move || {
                let r = shared_stage(&ctx, &sys, &mut shared_in, &note, &ddone, &mut *outlets);
                if r.is_err() {
                    ctx.abort.store(true, Ordering::Relaxed);
                }
                sdone.store(true, Ordering::Release);
                for nt in &notes {
                    let _ = nt.notify();
                }
                r
            })?
    };

    let dev = {
        let (ctx, note, done, sys, seed) = (
            Arc::clone(&ctx),
            Arc::clone(&note0),
            Arc::clone(&device_done),
            Arc::clone(&sys),
            cfg.seed,
        );
        std::thread::Builder::new()
            .name("qos-device".into())
            .spawn(move || {
                let r = device(&ctx, &sys, &mut dev_out, &note, seed);
                if r.is_err() {
                    ctx.abort.store(true, Ordering::Relaxed);
                }
                done.store(true, Ordering::Release);
                let _ = note.notify();
                r
            })?
    };
    let wake_all = |ctx: &Ctx| {
        ctx.abort.store(true, Ordering::Relaxed);
        let _ = note0.notify();
        for nt in &notes {
            let _ = nt.notify();
        }
    };
    // Every thread up, then the clock starts. The set-up takes longer the
    // more guests share the CPUs (each relates its clock to the host's
    // while the others spin): it fails only once no step has been made
    // for the stall limit, however long the whole takes.
    let mut t = Instant::now();
    let mut last = (0, 0);
    while ctx.ready.load(Ordering::Acquire) < n + 2 {
        let now = (
            ctx.ready.load(Ordering::Acquire),
            ctx.set_up.load(Ordering::Acquire),
        );
        if now != last {
            last = now;
            t = Instant::now();
        }
        if t.elapsed() > Duration::from_secs(5) || ctx.abort.load(Ordering::Relaxed) {
            wake_all(&ctx);
            return Err(TestbedError::Hang(format!(
                "the run's threads did not start: {} of {} ready, no step for 5 s",
                now.0,
                n + 2
            )));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let start = rdtsc() + tsc.ticks(1e6);
    let t0 = start + tsc.ticks(cfg.warmup.as_nanos() as f64);
    let t1 = t0 + tsc.ticks(cfg.window.as_nanos() as f64);
    ctx.t0.store(t0, Ordering::Relaxed);
    ctx.t1.store(t1, Ordering::Relaxed);
    ctx.go.store(start, Ordering::Release);
    let clocks: Vec<Option<libc::clockid_t>> = ctx
        .clocks
        .iter()
        .map(|c| {
            let v = c.load(Ordering::Relaxed);
            (v != i64::MIN).then(|| libc::clockid_t::try_from(v).unwrap_or(0))
        })
        .collect();
    let read = |c: &Option<libc::clockid_t>| c.map_or(0, clock_ns);
    sleep_until(tsc, t0);
    let (w0, busy0, proc0) = (Instant::now(), machine_busy_s(), process_cpu_s());
    let cpu0: Vec<u64> = clocks.iter().map(read).collect();
    let guest_sleeps0 = guests
        .as_ref()
        .map(crate::backend::kvm::qos::Guests::sleeps);
    sleep_until(tsc, t1);
    let cpu1: Vec<u64> = clocks.iter().map(read).collect();
    let guest_sleeps1 = guests
        .as_ref()
        .map(crate::backend::kvm::qos::Guests::sleeps);
    let (busy1, proc1) = (machine_busy_s(), process_cpu_s());
    let window_s = w0.elapsed().as_secs_f64().max(1e-9);
    ctx.measured.store(true, Ordering::Release);
    // The device stops at t1; the stages flush their queues without work.
    let within = Duration::from_secs(10);
    // Join all; report the first error that is not a stop another
    // thread's error caused.
    let d = join_within(dev, within, "device");
    let sh = join_within(shared, within, "shared stage");
    let v: Vec<Result<VmOut, TestbedError>> = vm_threads
        .into_iter()
        .enumerate()
        .map(|(i, h)| join_within(h, within, &format!("vm{} stage", i + 1)))
        .collect();
    let (d, mut s, v) = match (d, sh, v.into_iter().collect::<Result<Vec<_>, _>>()) {
        (Ok(d), Ok(s), Ok(v)) => (d, s, v),
        (d, s, v) => {
            wake_all(&ctx);
            let errs = [d.err(), s.err(), v.err()];
            let stop = |e: &TestbedError| matches!(e, TestbedError::Hang(m) if m == STOPPED);
            let first = errs.iter().flatten().position(|e| !stop(e)).unwrap_or(0);
            return Err(errs
                .into_iter()
                .flatten()
                .nth(first)
                .unwrap_or_else(aborted));
        }
    };
    // Guests: their figures came from the shared stage, which read their
    // stamps; their sleeps are their own counts over the window.
    let mut v = s.vms.take().unwrap_or(v);
    if let (Some(a), Some(b)) = (guest_sleeps0, guest_sleeps1) {
        for (vo, (a, b)) in v.iter_mut().zip(a.iter().zip(b)) {
            vo.counts.sleeps = b.wrapping_sub(*a);
        }
    }
    drop(guests);
    let names = sys.stage_names();
    let cpu = |slot: usize| {
        if clocks[slot].is_some() {
            cpu1[slot].saturating_sub(cpu0[slot]) as f64 / 1e9 / window_s
        } else {
            f64::NAN
        }
    };
    let stage = |name: &str, slot: usize, c: Counts, busy: Option<f64>| {
        let u = cpu(slot);
        QosRunStage {
            name: name.to_string(),
            cpu: u,
            busy: busy.unwrap_or(u),
            requests: c.requests,
            cpu_per_request_ns: if c.requests > 0 {
                u * window_s * 1e9 / c.requests as f64
            } else {
                f64::NAN
            },
            sleeps: c.sleeps,
            kicks: c.kicks,
        }
    };
    let mut stages = vec![stage(&names[0], 1, s.counts, None)];
    for (i, vo) in v.iter().enumerate() {
        let busy = (cfg.vm_core == VmCore::Timed).then(|| tsc.ns(vo.busy_ticks) / 1e9 / window_s);
        stages.push(stage(&names[i + 1], 2 + i, vo.counts, busy));
    }
    let per_s = |c: u64| c as f64 / window_s;
    let vms = (0..n)
        .map(|i| {
            let dropped = d.dropped[i] + s.dropped[i] + v[i].dropped;
            let accounted = v[i].completed + dropped;
            let h = &v[i].latency;
            QosRunVm {
                offered_per_s: per_s(d.generated_w[i]),
                throughput_per_s: per_s(v[i].counts.requests),
                dropped_per_s: per_s(d.dropped_w[i] + s.dropped_w[i] + v[i].dropped_w),
                policed_per_s: per_s(d.policed_w[i] + s.policed_w[i]),
                latency_ns: if h.is_empty() {
                    [f64::NAN; 2]
                } else {
                    [
                        h.value_at_quantile(0.5) as f64,
                        h.value_at_quantile(0.99) as f64,
                    ]
                },
                generated: d.generated[i],
                completed: v[i].completed,
                dropped,
                lost: d.generated[i].saturating_sub(accounted),
                duplicated: v[i].duplicated + accounted.saturating_sub(d.generated[i]),
                bad_stamps: v[i].bad_stamps,
                clock_drift_ns: v[i].clock_drift_ns,
            }
        })
        .collect();
    let others_cpu = match (busy0, busy1) {
        (Some(a), Some(b)) => Some(((b - a) - (proc1 - proc0)).max(0.0) / window_s),
        _ => None,
    };
    Ok(QosRunResult {
        vms,
        stages,
        device: stage("device", 0, d.counts, None),
        window_s,
        cpus: cpus(),
        threads: n + 2,
        others_cpu,
        vm_core: cfg.vm_core,
    })
}

/// Measures the run's costs on this machine: the CPU of each stage's busy
/// work per request, and a kick and a sleep-and-wake-up of a stage over a
/// ring with a futex (a thread that sleeps on an empty ring, another that
/// hands it a request every 100 us and kicks it); with a guest per VM
/// (`core`), the same hand-off to a guest. About 0.1 s (0.2 s with
/// guests).
///
/// # Errors
///
/// As [`check_qos`] for the service times; a thread that cannot be
/// spawned or hangs.
#[allow(clippy::cast_precision_loss)]
pub fn calibrate_qos(sys: &QosSystem, core: VmCore) -> Result<QosCosts, TestbedError> {
    let tsc = Tsc::get();
    let off_cpu = tsc.ticks(OFF_CPU_NS);
    let never = AtomicBool::new(false);
    let busy = |ns: f64| -> Result<f64, TestbedError> {
        if !(ns.is_finite() && (0.0..=MAX_SERVICE_NS).contains(&ns)) {
            return Err(TestbedError::limit(
                Setting::Work,
                format!(
                    "a service time must be 0 to {}",
                    kicklab_model::fmt_ns(MAX_SERVICE_NS)
                ),
            ));
        }
        if ns == 0.0 {
            return Ok(0.0);
        }
        // About 20 ms of work, 20 to 500 calls, in 10 batches: the median
        // batch's CPU per call (a batch that an interrupt storm hit does
        // not count).
        let calls = (2e6 / ns).clamp(2.0, 50.0) as u64;
        let ticks = tsc.ticks(ns);
        let mut per_call: Vec<f64> = (0..10)
            .map(|_| {
                let c0 = thread_cpu_ns();
                for _ in 0..calls {
                    cpu_work(ticks, off_cpu, u64::MAX, &never);
                }
                (thread_cpu_ns() - c0) as f64 / calls as f64
            })
            .collect();
        per_call.sort_by(f64::total_cmp);
        Ok(0.5 * (per_call[4] + per_call[5]))
    };
    let shared_ns = busy(sys.shared_ns)?;
    let mut vm_ns = Vec::with_capacity(sys.vms.len());
    for vm in &sys.vms {
        let same = sys.vms.iter().position(|w| w.service_ns == vm.service_ns);
        match same {
            Some(j) if j < vm_ns.len() => vm_ns.push(vm_ns[j]),
            _ => vm_ns.push(busy(vm.service_ns)?),
        }
    }
    let (kick_ns, wake_ns, samples) = kick_and_wake(300, Duration::from_micros(100))?;
    let guest_hand_off = if core == VmCore::Guest {
        Some(crate::backend::kvm::qos::hand_off(
            300,
            Duration::from_micros(100),
        )?)
    } else {
        None
    };
    Ok(QosCosts {
        guest_hand_off,
        shared_ns,
        vm_ns,
        kick_ns,
        wake_ns,
        ring_ns: ring_cost(tsc)?,
        samples,
    })
}

/// A stage's handling of a request besides its busy work, on one thread:
/// 2000 requests taken off a full ring, policed, handed to another.
#[allow(clippy::cast_precision_loss)]
fn ring_cost(tsc: Tsc) -> Result<f64, TestbedError> {
    const N: u32 = 2000;
    let (mut p, mut c) = ring(SLOTS * N);
    let (mut out, _keep) = ring(SLOTS * N);
    for k in 0..u64::from(N) {
        let _ = send(&mut p, [header(0, k), 0, 0])?;
    }
    let mut bucket = Bucket::new(1e12, 10.0, tsc, rdtsc());
    let c0 = thread_cpu_ns();
    while let Some([hdr, stamp, _]) = take(&mut c)? {
        let now = rdtsc();
        if std::hint::black_box(bucket.take(now)) && room(&mut out)? {
            let _ = send(&mut out, [hdr, stamp, now])?;
        }
    }
    Ok((thread_cpu_ns() - c0) as f64 / f64::from(N))
}

/// A sleeper on an empty ring and a kicker that hands it a request every
/// `gap`: the kicker's CPU per kick, the sleeper's CPU per sleep.
#[allow(clippy::cast_precision_loss)]
fn kick_and_wake(samples: usize, gap: Duration) -> Result<(f64, f64, usize), TestbedError> {
    let (mut p, mut c) = ring(8);
    let note = Arc::new(FutexNotifier::default());
    let done = Arc::new(AtomicBool::new(false));
    let sleeper = {
        let (note, done) = (Arc::clone(&note), Arc::clone(&done));
        std::thread::Builder::new()
            .name("qos-cal-sleeper".into())
            .spawn(move || -> Result<(u64, u64), TestbedError> {
                let (mut sleeps, mut got) = (0u64, 0u64);
                let cpu0 = thread_cpu_ns();
                loop {
                    if take(&mut c)?.is_some() {
                        got += 1;
                        continue;
                    }
                    if done.load(Ordering::Acquire) {
                        break;
                    }
                    if c.prepare_sleep(SLOTS)? {
                        if done.load(Ordering::Acquire) {
                            c.finish_sleep();
                            continue;
                        }
                        sleeps += 1;
                        note.wait()?;
                        c.finish_sleep();
                    }
                }
                let _ = got;
                Ok((thread_cpu_ns() - cpu0, sleeps))
            })?
    };
    // The bracket's own cost, to take off each kick.
    let bracket = {
        let a = thread_cpu_ns();
        for _ in 0..100 {
            std::hint::black_box(thread_cpu_ns());
        }
        (thread_cpu_ns() - a) as f64 / 101.0
    };
    let (mut kick_cpu, mut kicks) = (0u64, 0usize);
    let mut next = Instant::now() + gap;
    for _ in 0..samples {
        while Instant::now() < next {
            std::hint::spin_loop();
        }
        next += gap;
        if p.free_now()? >= SLOTS && send(&mut p, [0; 3])? {
            let a = thread_cpu_ns();
            note.notify()?;
            kick_cpu += thread_cpu_ns() - a;
            kicks += 1;
        }
    }
    done.store(true, Ordering::Release);
    note.notify()?;
    let (sleep_cpu, sleeps) = join_within(sleeper, Duration::from_secs(5), "calibration")?;
    let kick = if kicks > 0 {
        (kick_cpu as f64 / kicks as f64 - bracket).max(0.0)
    } else {
        f64::NAN
    };
    let wake = if sleeps > 0 {
        sleep_cpu as f64 / sleeps as f64
    } else {
        f64::NAN
    };
    Ok((kick, wake, kicks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use kicklab_model::qos::Path;

    #[test]
    fn busy_work_counts_only_time_on_the_cpu() {
        let tsc = Tsc::get();
        let never = AtomicBool::new(false);
        let c0 = thread_cpu_ns();
        let w0 = Instant::now();
        cpu_work(tsc.ticks(5e6), tsc.ticks(OFF_CPU_NS), u64::MAX, &never);
        let (cpu, wall) = (thread_cpu_ns() - c0, w0.elapsed().as_nanos());
        // At least the 5 ms of CPU it was asked for (less only if the
        // thread clock misses time), and no more wall time than CPU
        // plus what others took.
        assert!(cpu >= 4_500_000, "{cpu} ns of CPU");
        assert!(wall >= u128::from(cpu) * 9 / 10, "{wall} {cpu}");
        // Stopped when asked.
        assert!(!cpu_work(u64::MAX, 1000, 0, &never));
    }

    #[test]
    fn bad_configurations_are_refused_before_anything_runs() {
        let ok = QosRunConfig {
            system: QosSystem::paper(Path::Shared, Police::Post, 100.0),
            warmup: Duration::from_millis(10),
            window: Duration::from_millis(10),
            seed: 1,
            vm_core: VmCore::Timed,
        };
        assert!(check_qos(&ok).is_ok());
        let mut bad = ok.clone();
        bad.system.vms = vec![bad.system.vms[0]; MAX_VMS + 1];
        assert!(run_qos(&bad).is_err());
        let mut bad = ok.clone();
        bad.system.shared_ns = 1e12;
        assert!(matches!(
            run_qos(&bad),
            Err(TestbedError::Limit {
                what: Setting::Work,
                ..
            })
        ));
        let mut bad = ok.clone();
        bad.system.vms[0].offered_per_s = 1e8;
        assert!(run_qos(&bad).is_err());
        let mut bad = ok.clone();
        bad.window = Duration::ZERO;
        assert!(run_qos(&bad).is_err());
        let mut bad = ok.clone();
        bad.system.buffer = MAX_BUFFER + 1;
        assert!(run_qos(&bad).is_err());
        // Guests: the requests kept until the end are bounded (checked
        // before any guest starts, so with or without KVM).
        let mut bad = ok;
        bad.vm_core = VmCore::Guest;
        bad.system.vms[0].offered_per_s = 500_000.0;
        bad.window = MAX_WINDOW;
        assert!(matches!(
            check_qos(&bad),
            Err(TestbedError::Limit {
                what: Setting::Messages,
                ..
            })
        ));
        bad.window = Duration::from_secs(1);
        assert!(check_qos(&bad).is_ok());
    }
}
