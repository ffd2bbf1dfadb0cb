//! What the real multi-VM run's threads do: busy work of a thread's own
//! CPU time, the token bucket of a policer, the request's header, the
//! hand-offs over rings (room, send, take, sleep, serve), the device, the
//! shared stage and the VMs' stages, and the outlets a stage hands to (a
//! thread's ring, or a KVM guest's: `backend::kvm::qos` implements
//! [`Outlets`] from here). What does not live here: the configuration
//! (`config`), starting and joining the threads (`run`).

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hdrhistogram::Histogram;
use kicklab_model::qos::{Arrivals, Police, QosSystem};
use kicklab_ring::{Consumer, FutexNotifier, Notifier, Producer};

use crate::clock::{own_cpu_clock, rdtsc, Tsc};
use crate::TestbedError;

use super::config::*;

/// Busy work of `ticks` of the calling thread's own time: TSC spinning
/// that leaves out the gaps in which the thread was not running. Stops at
/// `until` (a TSC value) or when `abort` is set; false if it stopped early.
#[inline]
pub(crate) fn cpu_work(ticks: u64, off_cpu: u64, until: u64, abort: &AtomicBool) -> bool {
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
pub(crate) struct Bucket {
    pub(crate) per_tick: f64,
    pub(crate) depth: f64,
    pub(crate) tokens: f64,
    pub(crate) last: u64,
}

impl Bucket {
    pub(crate) fn new(rate: f64, depth: f64, tsc: Tsc, now: u64) -> Bucket {
        Bucket {
            per_tick: rate / 1e9 / tsc.ticks_per_ns,
            depth,
            tokens: depth,
            last: now,
        }
    }

    #[allow(clippy::cast_precision_loss)]
    pub(crate) fn take(&mut self, now: u64) -> bool {
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
pub(crate) const SLOTS: u32 = 3;

/// A request's first slot: its VM and sequence number.
pub(crate) fn header(vm: usize, seq: u64) -> u64 {
    (vm as u64) << 48 | (seq & SEQ_MASK)
}
const SEQ_MASK: u64 = (1 << 48) - 1;

/// What every thread shares.
pub(crate) struct Ctx {
    pub(crate) tsc: Tsc,
    /// The window, in TSC ticks; set before `go`.
    pub(crate) t0: AtomicU64,
    pub(crate) t1: AtomicU64,
    /// When the device starts (0: not yet).
    pub(crate) go: AtomicU64,
    /// The window's CPU clocks have been read: the device may exit (a
    /// thread's CPU clock reads 0 once it has).
    pub(crate) measured: AtomicBool,
    pub(crate) abort: AtomicBool,
    /// Each thread's CPU clock id (device, shared, vm1, ...).
    pub(crate) clocks: Vec<AtomicI64>,
    pub(crate) ready: AtomicUsize,
    /// Steps of the threads' set-up so far (a guest's clock related, a
    /// thread ready): the start waits while they move.
    pub(crate) set_up: AtomicUsize,
    pub(crate) off_cpu: u64,
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
pub(crate) const STOPPED: &str = "the run was stopped";

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
pub(crate) fn room(p: &mut Producer) -> Result<bool, TestbedError> {
    Ok(p.free()? >= SLOTS || p.free_now()? >= SLOTS)
}

/// Pushes a request and publishes it; true if the peer asked for a kick.
pub(crate) fn send(p: &mut Producer, req: [u64; 3]) -> Result<bool, TestbedError> {
    for w in req {
        let ok = p.write(w)?;
        debug_assert!(ok, "room was checked");
    }
    let published = p.publish();
    Ok(p.peer_wants_kick(published))
}

/// Takes the next request off `input`, if a whole one is there.
pub(crate) fn take(input: &mut Consumer) -> Result<Option<[u64; 3]>, TestbedError> {
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
pub(crate) struct DeviceOut {
    pub(crate) generated: Vec<u64>,
    pub(crate) generated_w: Vec<u64>,
    pub(crate) dropped: Vec<u64>,
    pub(crate) dropped_w: Vec<u64>,
    pub(crate) policed_w: Vec<u64>,
    pub(crate) counts: Counts,
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
pub(crate) fn device(
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
pub(crate) struct SharedOut {
    pub(crate) dropped: Vec<u64>,
    pub(crate) dropped_w: Vec<u64>,
    pub(crate) policed_w: Vec<u64>,
    pub(crate) counts: Counts,
    /// The VMs' figures, where their stages are not threads of the run
    /// ([`Outlets::finish`]).
    pub(crate) vms: Option<Vec<VmOut>>,
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
pub(crate) struct ThreadOutlets {
    pub(crate) outs: Vec<Producer>,
    pub(crate) notes: Vec<Arc<FutexNotifier>>,
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
pub(crate) fn shared_stage(
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
    pub(crate) completed: u64,
    pub(crate) duplicated: u64,
    /// Dropped by a timed core's buffer, all and in the window.
    pub(crate) dropped: u64,
    pub(crate) dropped_w: u64,
    pub(crate) latency: Histogram<u64>,
    /// Ticks its core served within the window (timed cores).
    pub(crate) busy_ticks: u64,
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
pub(crate) fn vm_stage(
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
pub(crate) fn vm_stage_timed(
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
