//! The pair with the guest on one side: transmit (guest produces, a host
//! thread consumes) or receive (a host thread produces, the guest
//! consumes), over a `kicklab-ring` in guest memory.
//!
//! The host side is the host party loop both backends share
//! (`crate::party`), waiting by any strategy; the guest side, our own
//! assembly, waits by `notify`, `poll` or `spin:<B>` itself and by every
//! other strategy through its VMM (`super::waits`; `coalesce` is refused:
//! the guest does not hold its kicks); its notifier is the VM's doorbell or irqfd (to the
//! guest) and kick ioeventfd (from the guest), and every wait can be
//! stopped (`Notifier::stopped`), so a guest that misbehaves is stopped
//! with an error instead of hanging the host (the session, `super::session`). The host treats
//! everything in guest memory as untrusted: the ring endpoints validate
//! each index they read; the guest's own counters are only reported.
//!
//! Timing inside runs (user mode): after a clock exchange (the pings
//! calibration uses) the host stamps each of its kicks into guest memory
//! in guest TSC and the guest each of its own; the guest times its kicks
//! and its wake-ups from the host's kicks, the host its wake-ups from the
//! guest's kicks, so a run reports N and R = V + S of both sides as it met
//! them (`docs/kvm.md`, "Timing inside runs").

use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kicklab_model::control::Controller;
use kicklab_model::{Party, WaitMode};
use kicklab_ring::{on_raw, Notifier, RawRing, WaitStrategy};
use kicklab_sim::Sampler;
use vmm_sys_util::eventfd::EventFd;

use super::guest::{
    ctrl, map, ring, GuestFlush, GuestMode, GuestRole, GuestWait, Misbehavior, PairProgram, SYNC,
};
use super::session::Session;
use super::vm::{clock_ns, GuestMemory, GuestWaits, Vm, VmOptions};
use super::waits::{DelegatedCounts, DelegatedWaits};
use super::{Direction, KvmOptions};
use crate::clock::Tsc;
use crate::pair::{
    basic_strategy, busy_waits, placement, PartyCounts, Record, RecordedSpan, RunGuard,
};
use crate::party::{DoneStamps, HostParty, KickStamps};
use crate::{Flush, PairConfig, PairResult, Setting, TestbedError};

/// The host's notifier: notify wakes a halted guest (the doorbell its vCPU
/// thread sleeps on, or the irqfd in emulated mode); wait blocks on the guest's kicks, returns an error once
/// the run is stopped, and detects a kick storm (far more kicks than
/// messages).
struct HostNotifier {
    doorbell: EventFd,
    kick: EventFd,
    stop: Arc<AtomicBool>,
    progress: Arc<AtomicU64>,
    received: AtomicU64,
    storm_limit: u64,
}

impl Notifier for HostNotifier {
    fn notify(&self) -> std::io::Result<()> {
        self.doorbell.write(1)
    }

    fn wait_timeout(&self, timeout: std::time::Duration) -> std::io::Result<bool> {
        // SAFETY: the eventfd lives as long as `self`; the borrow ends here.
        let fd = unsafe { BorrowedFd::borrow_raw(self.kick.as_raw_fd()) };
        let ready = kicklab_ring::wait_readable(fd, timeout)?;
        if !ready {
            if self.stop.load(Ordering::SeqCst) {
                return Err(std::io::Error::other("run stopped"));
            }
            return Ok(false);
        }
        self.wait().map(|()| true)
    }

    fn wait(&self) -> std::io::Result<()> {
        let n = self.kick.read()?;
        if self.stop.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("run stopped"));
        }
        let got = self.received.fetch_add(n, Ordering::Relaxed) + n;
        let done = self.progress.load(Ordering::Relaxed);
        if got > 2 * done + self.storm_limit {
            return Err(std::io::Error::other(format!(
                "guest kick storm: {got} kicks for {done} messages"
            )));
        }
        Ok(())
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// The kick stamps across the VM boundary: the host stamps its kicks into
/// guest memory in guest TSC, and reads the guest's stamps (guest TSC)
/// back in its own, with the offset measured by the clock exchange at the
/// start of the run (`guest - host` ticks; KVM runs both at one rate).
struct GuestStamps {
    mem: Arc<GuestMemory>,
    offset: i128,
}

impl KickStamps for GuestStamps {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    fn mine(&self, tsc: u64) {
        let g = (i128::from(tsc) + self.offset).max(0) as u64;
        self.mem.store_u64(map::CTRL + ctrl::HOST_STAMP, g);
    }

    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    fn peer(&self) -> u64 {
        // Untrusted: a nonsense stamp only gives a wake-up that is not
        // counted (0, or one from the future) or a wrong figure.
        match self.mem.load_u64(map::CTRL + ctrl::KICK_STAMP) {
            0 => 0,
            g => (i128::from(g) - self.offset).clamp(0, i128::from(u64::MAX)) as u64,
        }
    }
}

/// The guest's latency stamps, one u64 per slot of a ring of `len`.
fn guest_stamps_of(mem: &GuestMemory, len: u32) -> &[AtomicU64] {
    assert!(len <= map::MAX_LEN, "the ring's length was checked");
    // SAFETY: STAMPS + 8 L lies inside the guest mapping (the map's
    // compile-time checks, with L <= MAX_LEN), is 8-byte aligned, and the
    // slice borrows `mem`, which keeps the mapping alive; the guest writes
    // it with aligned 32-bit stores, the host only loads (a torn stamp is
    // only a wrong latency, never unsafety).
    unsafe {
        std::slice::from_raw_parts(
            mem.as_ptr().add(map::STAMPS as usize).cast::<AtomicU64>(),
            len as usize,
        )
    }
}

fn new_histogram() -> hdrhistogram::Histogram<u64> {
    hdrhistogram::Histogram::new(3).expect("3 significant digits")
}

/// The guest's wait from the run's strategy.
pub(crate) fn guest_wait(s: WaitStrategy, ticks_per_ns: f64) -> GuestWait {
    match s {
        WaitStrategy::Poll => GuestWait::Poll,
        WaitStrategy::Block => GuestWait::Halt,
        WaitStrategy::SpinThenBlock(d) if d.is_zero() => GuestWait::Halt,
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        WaitStrategy::SpinThenBlock(d) => GuestWait::SpinThenHalt(
            (d.as_secs_f64() * 1e9 * ticks_per_ns).min(f64::from(u32::MAX)) as u32,
        ),
    }
}

/// The guest's side and the host's: (guest's mode, host's mode, the
/// guest's party).
fn guest_and_host(cfg: &PairConfig, direction: Direction) -> (WaitMode, WaitMode, &'static str) {
    match direction {
        Direction::Tx => (cfg.mode_p, cfg.mode_c, "P"),
        Direction::Rx => (cfg.mode_c, cfg.mode_p, "C"),
    }
}

/// How the guest side waits.
#[derive(Debug, Clone, Copy)]
enum GuestSide {
    /// By itself, in its own code: `notify`, `poll`, `spin:<B>`.
    Fixed(WaitStrategy),
    /// Through its VMM, which runs this strategy (`super::waits`).
    Delegated(WaitMode),
}

/// The guest's strategy: `notify`, `poll` and `spin:<B>` in its own code,
/// every other through its VMM; `coalesce` is refused (the guest sends
/// every kick it owes; its kicks are not held).
fn guest_strategy(cfg: &PairConfig, direction: Direction) -> Result<GuestSide, TestbedError> {
    let (guest, _, party) = guest_and_host(cfg, direction);
    if let Some(s) = basic_strategy(guest) {
        return Ok(GuestSide::Fixed(s));
    }
    if matches!(guest, WaitMode::Coalesce { .. }) {
        return Err(TestbedError::invalid(
            Setting::Strategy,
            format!(
                "the kvm guest side ({party}, direction {}) does not hold its kicks: {guest} runs on the host side only",
                direction.name()
            ),
        ));
    }
    Ok(GuestSide::Delegated(guest))
}

/// The guest producer's flush rule: its hold timer in TSC ticks (the
/// host's rate: the run checks the guest's is the same), which must fit
/// the guest's 32-bit compare.
fn guest_flush(flush: Flush, ticks_per_ns: f64) -> Result<GuestFlush, TestbedError> {
    Ok(match flush {
        Flush::Full => GuestFlush::Full,
        Flush::OnInterrupt => GuestFlush::OnInterrupt,
        Flush::Timer { ns } => {
            let ticks = (ns * ticks_per_ns).round().max(1.0);
            if ticks > f64::from(u32::MAX) {
                return Err(TestbedError::limit(
                    Setting::Flush,
                    format!(
                        "the kvm guest's hold timer counts 32 bits of TSC ticks: at most {} here",
                        kicklab_model::fmt_ns((f64::from(u32::MAX) / ticks_per_ns).floor())
                    ),
                ));
            }
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            GuestFlush::Timer(ticks as u32)
        }
    })
}

/// Checks what the guest on `direction`'s side can hold before anything
/// runs; returns the messages in all (warm-up included).
///
/// # Errors
///
/// Bad parameters, a strategy the guest side does not run (it takes
/// `notify`, `poll` and `spin:<B>`; the host side takes any), or a limit
/// of the guest (its ring's length, a hold timer of at most 2^32 TSC
/// ticks, fewer than 2^31 messages).
pub fn check_pair(cfg: &PairConfig, direction: Direction) -> Result<u32, TestbedError> {
    let total = cfg.check()?;
    guest_strategy(cfg, direction)?;
    if cfg.params.len > map::MAX_LEN {
        return Err(TestbedError::limit(
            Setting::Len,
            format!("the guest's ring holds at most {} slots", map::MAX_LEN),
        ));
    }
    if direction == Direction::Tx {
        guest_flush(cfg.flush, Tsc::get().ticks_per_ns)?;
    }
    u32::try_from(total)
        .ok()
        .filter(|t| *t < 1 << 31)
        .ok_or_else(|| {
            TestbedError::limit(Setting::Messages, "at most 2^31 with kvm, warm-up included")
        })
}

/// Runs the pair with the guest on one side.
///
/// # Errors
///
/// Bad parameters, no usable KVM, a guest that breaks the protocol
/// ([`TestbedError::Guest`], [`TestbedError::Ring`]) or stops making
/// progress ([`TestbedError::Hang`]).
pub fn run_pair(cfg: &PairConfig, opts: KvmOptions) -> Result<PairResult, TestbedError> {
    run_pair_with(cfg, opts, Misbehavior::None)
}

/// [`run_pair`] with the record of the parties' first kicks and sleeps
/// that `cfg.record` asks for: the host's, and a user-mode guest's own
/// kicks and halts (its TSC stamps placed on the host's clock), not the
/// pauses its VMM takes for it.
///
/// # Errors
///
/// As [`run_pair`].
pub fn run_pair_recorded(
    cfg: &PairConfig,
    opts: KvmOptions,
) -> Result<(PairResult, Record), TestbedError> {
    run(cfg, opts, Misbehavior::None)
}

/// [`run_pair`] with a deliberately broken guest (for tests).
///
/// # Errors
///
/// As [`run_pair`].
pub fn run_pair_with(
    cfg: &PairConfig,
    opts: KvmOptions,
    misbehavior: Misbehavior,
) -> Result<PairResult, TestbedError> {
    run(cfg, opts, misbehavior).map(|(r, _)| r)
}

/// [`run_pair_recorded`] with a guest that misbehaves as told.
#[allow(clippy::too_many_lines, clippy::cast_precision_loss)]
fn run(
    cfg: &PairConfig,
    opts: KvmOptions,
    misbehavior: Misbehavior,
) -> Result<(PairResult, Record), TestbedError> {
    let total32 = check_pair(cfg, opts.direction)?;
    let total = u64::from(total32);
    let p = &cfg.params;
    let mut guard = RunGuard::enter();
    let tsc = Tsc::get();
    let vm = Vm::new(VmOptions {
        halt_poll: Duration::from_nanos(u64::from(opts.halt_poll_ns)),
        mode: opts.guest,
        disable_hlt_exits: false,
    })?;
    let mem = Arc::clone(&vm.mem);
    let tx_dir = opts.direction == Direction::Tx;
    // Message latency (64-bit guest only): where the guest writes, it
    // stamps each message as it writes it and the host consumer reads
    // the stamp; where it consumes, it stamps each as it is done with it
    // and the host producer reads the stamp back (`DoneStamps`).
    let guest_stamps = cfg.latency && opts.guest == GuestMode::User;
    let write_stamps = guest_stamps && tx_dir;
    let done_stamps = guest_stamps && !tx_dir;
    // The host producer's write times, for the guest's done stamps.
    let host_writes: Option<Arc<[AtomicU64]>> =
        done_stamps.then(|| (0..p.len).map(|_| AtomicU64::new(0)).collect());
    let (guest_side, host_mode) = (
        guest_strategy(cfg, opts.direction)?,
        guest_and_host(cfg, opts.direction).1,
    );
    // Guest work table: the guest party's W, drawn as the thread backend
    // draws it (stream 0 for P, 1 for C), cycled every TABLE_LEN messages.
    let guest_cost = if tx_dir { p.w_p } else { p.w_c };
    let mut draw = Sampler::new(guest_cost, cfg.seed, u64::from(!tx_dir));
    // The guest's TSC rate is only known once the vCPU exists; KVM keeps
    // it at the host's unless told otherwise, so use the host's here and
    // check below.
    let tpp = tsc.ticks_per_ns / 1000.0;
    for i in 0..map::TABLE_LEN {
        #[allow(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss
        )]
        let ticks = (draw.draw_ps() as f64 * tpp).min(f64::from(u32::MAX)) as u32;
        mem.write_u32(map::TABLE + 4 * i, ticks);
    }
    let program = PairProgram {
        role: if tx_dir {
            GuestRole::Producer
        } else {
            GuestRole::Consumer
        },
        wait: match guest_side {
            GuestSide::Fixed(s) => guest_wait(s, tsc.ticks_per_ns),
            // Only adaptive pauses, and only a producer.
            GuestSide::Delegated(mode) => GuestWait::Delegated {
                pauses: tx_dir && matches!(mode, WaitMode::Adaptive { .. }),
            },
        },
        len: p.len,
        k: if tx_dir { p.k_c } else { p.k_p },
        total: total32,
        warmup: u32::try_from(cfg.warmup).unwrap_or(0),
        misbehavior,
        mode: opts.guest,
        batch: if tx_dir { cfg.batch } else { 1 },
        flush: if tx_dir {
            guest_flush(cfg.flush, tsc.ticks_per_ns)?
        } else {
            GuestFlush::Full
        },
        stamps: guest_stamps,
        // In user mode the guest times its kicks and wake-ups (and stamps
        // its writes) by its TSC: the host relates the two clocks first.
        sync: if opts.guest == GuestMode::User {
            SYNC
        } else {
            0
        },
        until_stopped: false,
        // And relates them again at the end: the drift, reported.
        end_sync: opts.guest == GuestMode::User,
    }
    .assemble()?;
    let timed = opts.guest == GuestMode::User;
    // The spans the guest may record (its count is untrusted: read back
    // against this).
    let record_cap = if timed {
        u32::try_from(cfg.record)
            .unwrap_or(u32::MAX)
            .min(map::RECORD_MAX)
    } else {
        0
    };
    mem.write_u32(map::RECORD, record_cap);

    // The host's endpoint over the ring in guest memory.
    let owner: Box<dyn Send + Sync> = Box::new(Arc::clone(&mem));
    // SAFETY: the region lies inside the guest mapping (RING + RING_BYTES
    // <= MEM_SIZE), is 64-byte aligned (RING is), and `owner` keeps the
    // mapping alive as long as the ring; the guest accesses it only with
    // aligned 32-bit loads and stores, the layout's atomics.
    let raw = unsafe {
        RawRing::from_raw(
            mem.as_ptr().add(map::RING as usize),
            map::RING_BYTES,
            p.len,
            owner,
        )
    }
    .ok_or_else(|| TestbedError::Kvm("ring region rejected".into()))?;
    let (producer, consumer) = on_raw(raw);

    let guest_cpu = usize::from(!tx_dir);
    let delegated = Arc::new(DelegatedCounts::default());
    let waits: Option<Box<dyn GuestWaits>> = match guest_side {
        GuestSide::Fixed(_) => None,
        GuestSide::Delegated(mode) => Some(Box::new(DelegatedWaits::new(
            // The VMM sleeps on the guest's doorbell without a timeout.
            Controller::new(mode, if tx_dir { Party::P } else { Party::C }, p, None)
                .without_timed_blocks(),
            Arc::clone(&mem),
            tx_dir,
            p.len,
            (cfg.warmup, total),
            Arc::clone(&delegated),
            // User mode: the guest sleeps on its doorbell, which the VMM
            // can sleep on for it too.
            (opts.guest == GuestMode::User)
                .then(|| vm.waker())
                .transpose()?,
        ))),
    };
    let session = Session::start_with(&vm, &program, guest_cpu, waits)?;
    let progress = Arc::new(AtomicU64::new(0));
    let notifier = Arc::new(HostNotifier {
        doorbell: vm.waker()?,
        kick: vm.kick.try_clone()?,
        stop: Arc::clone(&session.stop),
        progress: Arc::clone(&progress),
        received: AtomicU64::new(0),
        storm_limit: 4 * u64::from(p.len) + 1000,
    });
    if let Some(khz) = session.vcpu.guest_khz {
        let ratio = f64::from(khz) / (tsc.ticks_per_ns * 1e6);
        if (ratio - 1.0).abs() > 0.02 {
            session.stop();
            return Err(TestbedError::Kvm(format!(
                "the guest TSC runs at {khz} kHz, the host's at {:.0} kHz: busy work would be off",
                tsc.ticks_per_ns * 1e6
            )));
        }
    }
    let guest_pinned = session.vcpu.pinned;
    let guest_cpu = guest_cpu % crate::clock::cpus();

    let host_cfg = *cfg;
    let (progress_h, notifier_h) = (Arc::clone(&progress), Arc::clone(&notifier));
    let vclock = session.vcpu.clock_id();
    let mem_h = Arc::clone(&mem);
    let host_writes_h = host_writes.clone();
    let host = move |stop: &AtomicBool| {
        let pinned = crate::clock::pin_cpu(usize::from(tx_dir));
        // The guest's clock's offset from ours (guest - host ticks).
        let before = if timed {
            Some(super::clocks::ping(&mem_h, 1, SYNC, stop, None)?)
        } else {
            None
        };
        let offset = before.map(|e| e.offset);
        let stamps = offset.map(|offset| GuestStamps {
            mem: Arc::clone(&mem_h),
            offset,
        });
        let p = host_cfg.params;
        let vcpu_ns = move || clock_ns(vclock);
        // The guest's stamps.
        let offset_ticks = offset.map_or(0, |o| i64::try_from(o).unwrap_or(0));
        let guest_times = guest_stamps_of(&mem_h, p.len);
        let stamp_times = (write_stamps && offset.is_some()).then_some(guest_times);
        let done_hist = std::cell::RefCell::new(new_histogram());
        let done = match (&host_writes_h, offset) {
            (Some(_), Some(_)) => Some(DoneStamps {
                times: guest_times,
                offset: offset_ticks,
                hist: &done_hist,
            }),
            _ => None,
        };
        let party = HostParty {
            total,
            warmup: host_cfg.warmup,
            k: if tx_dir { p.k_p } else { p.k_c },
            mode: host_mode,
            params: p,
            work: Sampler::new(
                if tx_dir { p.w_c } else { p.w_p },
                host_cfg.seed,
                u64::from(tx_dir),
            ),
            batch: if tx_dir { 1 } else { u64::from(host_cfg.batch) },
            flush: if tx_dir { Flush::Full } else { host_cfg.flush },
            wait_on: &*notifier_h,
            kick_peer: &*notifier_h,
            stop,
            progress: &progress_h,
            extra_clock: Some(&vcpu_ns),
            stamps: stamps.as_ref().map(|s| s as &dyn KickStamps),
            publish_times: stamp_times.or(host_writes_h.as_deref()),
            stamp_offset: if write_stamps { offset_ticks } else { 0 },
            done,
            record: host_cfg.record,
        };
        let m = if tx_dir {
            drop(producer);
            let mut consumer = consumer;
            party.consume(&mut consumer)?
        } else {
            drop(consumer);
            let mut producer = producer;
            party.produce(&mut producer)?
        };
        // The clocks again (the guest answers after its loop): how far its
        // clock moved against ours while the offset above was in use.
        let clocks = match before {
            Some(b) => {
                let after = super::clocks::ping(&mem_h, SYNC + 1, SYNC, stop, None)?;
                Some(super::clocks::ClockMap::new(b, after))
            }
            None => None,
        };
        Ok((pinned, m, offset_ticks, done_hist.into_inner(), clocks))
    };
    let combining_guest = tx_dir && (cfg.batch > 1 || cfg.flush != Flush::Full);
    // The run must keep moving: host messages or the guest's index.
    let guest_index = if tx_dir { ring::TAIL } else { ring::HEAD };
    let (mem_w, progress_w) = (Arc::clone(&mem), Arc::clone(&progress));
    let now = move || {
        (
            progress_w.load(Ordering::Relaxed),
            mem_w.read_u32(guest_index),
        )
    };
    let now2 = now.clone();
    let (host_pinned, m, offset_ticks, done_hist, clocks) =
        session.run("kicklab-host", host, cfg.timeout, now, || {
            let (done, index) = now2();
            format!(
                "{done} of {total} messages handled by the host, the guest's {} index at {index} \
             (a guest that never kicks or never runs{}, or a lost wake-up)",
                if tx_dir { "tail" } else { "head" },
                if combining_guest {
                    ", or holds what it writes and never publishes it (send combining)"
                } else {
                    ""
                },
            )
        })?;

    // The guest's own timing of its kicks and wake-ups (user mode; its
    // counters are untrusted, so only reported).
    let ctrl_u64 = |off: u32, off0: u32| {
        mem.load_u64(map::CTRL + off)
            .wrapping_sub(mem.load_u64(map::CTRL + off0))
    };
    let guest_wakes = u64::from(
        mem.read_u32(map::CTRL + ctrl::WAKES)
            .wrapping_sub(mem.read_u32(map::CTRL + ctrl::WAKES0)),
    );
    let naps = delegated.naps.load(Ordering::Relaxed);
    let delegated_sleeps = naps + delegated.kicked.load(Ordering::Relaxed);
    let guest = PartyCounts {
        cpu_ns: m.extra1.saturating_sub(m.extra0),
        kicks: u64::from(
            mem.read_u32(map::CTRL + ctrl::KICKS)
                .wrapping_sub(mem.read_u32(map::CTRL + ctrl::KICKS0)),
        ),
        // Its halts, and the VMM's timed sleeps and kicked pauses for it.
        sleeps: u64::from(
            mem.read_u32(map::CTRL + ctrl::SLEEPS)
                .wrapping_sub(mem.read_u32(map::CTRL + ctrl::SLEEPS0)),
        ) + delegated_sleeps,
        // The guest's counters start at zero when it boots.
        whole_run: [
            u64::from(mem.read_u32(map::CTRL + ctrl::KICKS)),
            u64::from(mem.read_u32(map::CTRL + ctrl::SLEEPS))
                + delegated.all.load(Ordering::Relaxed),
        ],
        naps,
        // Whole run, as the thread backend counts it.
        spurious: u64::from(mem.read_u32(map::CTRL + ctrl::SPURIOUS)),
        kick_ns: timed.then(|| tsc.ns(ctrl_u64(ctrl::KICK_TICKS, ctrl::KICK_TICKS0))),
        wake: (timed && guest_wakes > 0)
            .then(|| tsc.ns(ctrl_u64(ctrl::WAKE_TICKS, ctrl::WAKE_TICKS0)) / guest_wakes as f64),
        // The VMM's waits for the guest, where it ran adaptive.
        check: delegated.check.lock().ok().and_then(|c| *c),
    };
    let (lost, bad) = if tx_dir {
        (m.lost, m.bad)
    } else {
        // The guest checked the sequence; its counts are only reported.
        let next = u64::from(mem.read_u32(map::CTRL + ctrl::NEXT));
        (
            u64::from(mem.read_u32(map::CTRL + ctrl::LOST)) + total.saturating_sub(next),
            u64::from(mem.read_u32(map::CTRL + ctrl::BAD)),
        )
    };
    let sides = if tx_dir {
        [guest, m.side()]
    } else {
        [m.side(), guest]
    };
    // Latency: the host consumer's (tx), or, where the guest consumed
    // (rx), from its done stamps, the last lap's read now that it has
    // finished.
    let latency = match &host_writes {
        Some(writes) => {
            let hist = std::cell::RefCell::new(done_hist);
            DoneStamps {
                times: guest_stamps_of(&mem, p.len),
                offset: offset_ticks,
                hist: &hist,
            }
            .last_lap(writes, cfg.warmup, total)
        }
        None => m.latency,
    };
    let record = record_of(&mem, &m, clocks.as_ref(), record_cap, tx_dir);
    drop(vm);
    let mut r = PairResult::of_window(
        [cfg.messages, total],
        tsc.ns(m.t1 - m.t0),
        sides,
        (lost, bad),
        latency,
    );
    let guest_cpu = guest_pinned.then_some(guest_cpu);
    let (cpu_p, cpu_c) = if tx_dir {
        (guest_cpu, host_pinned)
    } else {
        (host_pinned, guest_cpu)
    };
    r.clock_drift_ns = clocks.as_ref().map(|c| tsc.ns(c.drift()));
    let others = guard.others();
    placement(
        &mut r,
        cpu_p,
        cpu_c,
        others,
        busy_waits(cfg.mode_p) || busy_waits(cfg.mode_c),
    );
    Ok((r, record))
}

/// The run's record: the host party's first kicks and sleeps (its TSC)
/// and the guest's (its TSC stamps placed on the host's clock by the
/// exchanges before and after), from the earlier of the host's window
/// start and the guest's first span.
fn record_of(
    mem: &GuestMemory,
    host: &crate::party::Marks,
    clocks: Option<&super::clocks::ClockMap>,
    cap: u32,
    tx_dir: bool,
) -> Record {
    let tsc = Tsc::get();
    let len = host.t1.saturating_sub(host.t0);
    let guest = clocks.map_or_else(Vec::new, |c| {
        let within = (host.t0.saturating_sub(len), host.t1.saturating_add(len));
        guest_record(mem, cap, c, within)
    });
    // Sorted by start (below): the first is the earliest.
    let origin = guest.first().map_or(host.t0, |g| g.1.min(host.t0));
    let span = |kick: bool, from: u64, to: u64| RecordedSpan {
        kick,
        from_ns: tsc.ns(from.saturating_sub(origin)),
        to_ns: tsc.ns(to.saturating_sub(origin)),
    };
    let host_spans = host
        .recorded
        .iter()
        .map(|r| span(r.kick, r.t0, r.t1))
        .collect();
    let guest_spans = guest
        .iter()
        .map(|&(kick, from, to)| span(kick, from, to))
        .collect();
    Record {
        spans: if tx_dir {
            [guest_spans, host_spans]
        } else {
            [host_spans, guest_spans]
        },
    }
}

/// The guest's record ([`map::RECORD`]) in host TSC: (kick, start, end)
/// of each span that starts no later than it ends and lies within
/// `within` (host ticks), in order of start. Untrusted: a count past
/// `cap` (the record never opened, or a guest that wrote past what it was
/// given) reads as none.
fn guest_record(
    mem: &GuestMemory,
    cap: u32,
    clocks: &super::clocks::ClockMap,
    within: (u64, u64),
) -> Vec<(bool, u64, u64)> {
    let n = mem.read_u32(map::RECORD + 4);
    if n > cap {
        return Vec::new();
    }
    let host = |stamp: u64| u64::try_from(clocks.host(stamp)).ok();
    let mut spans = (0..n)
        .filter_map(|i| {
            let at = map::RECORD_SPANS + 16 * i;
            let (from, to) = (mem.load_u64(at), mem.load_u64(at + 8));
            let kick = from & map::RECORD_KICK != 0;
            let (from, to) = (host(from & !map::RECORD_KICK)?, host(to)?);
            (from <= to && within.0 <= from && to <= within.1).then_some((kick, from, to))
        })
        .collect::<Vec<_>>();
    spans.sort_by_key(|s| s.1);
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notifier() -> HostNotifier {
        HostNotifier {
            doorbell: EventFd::new(0).unwrap(),
            kick: EventFd::new(0).unwrap(),
            stop: Arc::new(AtomicBool::new(false)),
            progress: Arc::new(AtomicU64::new(0)),
            received: AtomicU64::new(0),
            storm_limit: 1000,
        }
    }

    /// The guest's record is untrusted: a count past what the host gave
    /// (or the record never opened) reads as none, and spans that end
    /// before they start, or lie far outside the run, are dropped; the
    /// rest come back on the host's clock, in order of start.
    #[test]
    fn a_guests_record_is_read_against_the_hosts_count_and_the_run() {
        let mem = GuestMemory::new(map::MEM_SIZE).unwrap();
        let exchange = super::super::clocks::Exchange {
            at: 1_000_000,
            offset: 500, // the guest's clock 500 ticks ahead
            uncertainty: 10,
        };
        let clocks = super::super::clocks::ClockMap::new(exchange, exchange);
        let span = |i: u32, from: u64, to: u64| {
            mem.store_u64(map::RECORD_SPANS + 16 * i, from);
            mem.store_u64(map::RECORD_SPANS + 16 * i + 8, to);
        };
        let within = (1_000_000, 2_000_000);
        span(0, 1_200_500 | map::RECORD_KICK, 1_300_500); // a kick
        span(1, 1_100_500, 1_150_500); // a halt, earlier: sorted first
        span(2, 1_500_500, 1_400_500); // ends before it starts
        span(3, !map::RECORD_KICK, u64::MAX); // far past the run
        span(4, 0, 10); // long before it
        mem.write_u32(map::RECORD + 4, 5);
        assert_eq!(
            guest_record(&mem, 8, &clocks, within),
            vec![(false, 1_100_000, 1_150_000), (true, 1_200_000, 1_300_000)]
        );
        // Past the count the host gave, or never opened: none.
        assert!(guest_record(&mem, 4, &clocks, within).is_empty());
        mem.write_u32(map::RECORD + 4, u32::MAX);
        assert!(guest_record(&mem, map::RECORD_MAX, &clocks, within).is_empty());
    }

    #[test]
    fn the_hosts_timed_wait_ends_by_a_guest_kick_or_its_timeout_or_a_stop() {
        let n = notifier();
        let t0 = std::time::Instant::now();
        assert!(!n.wait_timeout(Duration::from_millis(5)).unwrap());
        assert!(t0.elapsed() >= Duration::from_millis(5));
        // A kick already written ends it at once, and is counted.
        n.kick.write(1).unwrap();
        assert!(n.wait_timeout(Duration::from_secs(60)).unwrap());
        assert_eq!(n.received.load(Ordering::Relaxed), 1);
        // A stopped run ends it with an error, kicked or not.
        n.stop.store(true, Ordering::SeqCst);
        assert!(n.wait_timeout(Duration::from_millis(1)).is_err());
        n.kick.write(1).unwrap();
        assert!(n.wait_timeout(Duration::from_millis(1)).is_err());
    }
}
