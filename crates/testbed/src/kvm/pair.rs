//! The pair with the guest on one side: transmit (guest produces, a host
//! thread consumes) or receive (a host thread produces, the guest
//! consumes), over a `kicklab-ring` in guest memory.
//!
//! The host side is the thread backend's loop with two changes: its
//! notifier is the VM's doorbell or irqfd (to the guest) and kick ioeventfd
//! (from the guest), and every wait can be stopped (`Notifier::stopped`), so a guest that misbehaves is
//! stopped with an error instead of hanging the host. The host treats
//! everything in guest memory as untrusted: the ring endpoints validate
//! each index they read; the guest's own counters are only reported.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use kicklab_ring::{on_raw, Notifier, RawRing, WaitStats, WaitStrategy};
use kicklab_sim::Sampler;
use vmm_sys_util::eventfd::EventFd;

use super::guest::{ctrl, map, GuestRole, GuestWait, Misbehavior, PairProgram};
use super::vm::{GuestEnd, Vm, VmOptions};
use super::{Direction, KvmOptions};
use crate::clock::{pin, rdtsc, thread_cpu_ns, Tsc};
use crate::{PairConfig, PairResult, TestbedError};

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

/// What the host thread measured.
#[derive(Default, Clone, Copy)]
struct HostMarks {
    t0: u64,
    t1: u64,
    cpu0: u64,
    cpu1: u64,
    vcpu0: u64,
    vcpu1: u64,
    kicks0: u64,
    kicks1: u64,
    sleeps0: u64,
    sleeps1: u64,
    spurious: u64,
    lost: u64,
    bad: u64,
    pinned: bool,
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

/// [`run_pair`] with a deliberately broken guest (for tests).
///
/// # Errors
///
/// As [`run_pair`].
#[allow(clippy::too_many_lines, clippy::cast_precision_loss)]
pub fn run_pair_with(
    cfg: &PairConfig,
    opts: KvmOptions,
    misbehavior: Misbehavior,
) -> Result<PairResult, TestbedError> {
    cfg.params
        .validate()
        .map_err(|e| TestbedError::Params(e.to_string()))?;
    let p = &cfg.params;
    if p.len > map::MAX_LEN {
        return Err(TestbedError::Params(format!(
            "--len: the guest's ring holds at most {} slots",
            map::MAX_LEN
        )));
    }
    if cfg.batch > 1 {
        return Err(TestbedError::Params(
            "--batch: the kvm guest publishes every message (send combining is thread-only)".into(),
        ));
    }
    let total = cfg.warmup + cfg.messages;
    let total32 = u32::try_from(total)
        .ok()
        .filter(|t| *t < 1 << 31)
        .ok_or_else(|| TestbedError::Params("--messages: at most 2^31 with kvm".into()))?;
    if cfg.messages == 0 {
        return Err(TestbedError::Params(
            "--messages: need at least 1 message".into(),
        ));
    }
    let tsc = Tsc::get();
    let vm = Vm::new(VmOptions {
        halt_poll: Duration::from_nanos(u64::from(opts.halt_poll_ns)),
        mode: opts.guest,
        disable_hlt_exits: false,
    })?;
    let mem = Arc::clone(&vm.mem);
    let tx_dir = opts.direction == Direction::Tx;
    let (guest_strategy, host_strategy) = if tx_dir {
        (cfg.strategy_p, cfg.strategy_c)
    } else {
        (cfg.strategy_c, cfg.strategy_p)
    };
    // Guest work table: the guest party's W, drawn as the thread backend
    // draws it (stream 0 for P, 1 for C), cycled every TABLE_LEN messages.
    let guest_cost = if tx_dir { p.w_p } else { p.w_c };
    let mut draw = Sampler::new(guest_cost, cfg.seed, u64::from(!tx_dir));
    // The guest's TSC rate is only known once the vCPU exists; KVM keeps
    // it at the host's unless told otherwise, so use the host's here and
    // check below.
    let tpp = tsc.ticks_per_ns / 1000.0;
    for i in 0..map::TABLE_LEN {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let ticks = (draw.draw_ps() as f64 * tpp).min(f64::from(u32::MAX)) as u32;
        mem.write_u32(map::TABLE + 4 * i, ticks);
    }
    let program = PairProgram {
        role: if tx_dir {
            GuestRole::Producer
        } else {
            GuestRole::Consumer
        },
        wait: guest_wait(guest_strategy, tsc.ticks_per_ns),
        len: p.len,
        k: if tx_dir { p.k_c } else { p.k_p },
        total: total32,
        warmup: u32::try_from(cfg.warmup).unwrap_or(0),
        misbehavior,
        mode: opts.guest,
    }
    .assemble()?;

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

    let stop = Arc::new(AtomicBool::new(false));
    let progress = Arc::new(AtomicU64::new(0));
    let notifier = Arc::new(HostNotifier {
        doorbell: vm.waker()?,
        kick: vm.kick.try_clone()?,
        stop: Arc::clone(&stop),
        progress: Arc::clone(&progress),
        received: AtomicU64::new(0),
        storm_limit: 4 * u64::from(p.len) + 1000,
    });

    let mut vcpu = vm.start(&program, usize::from(!tx_dir))?;
    if let Some(khz) = vcpu.guest_khz {
        let ratio = f64::from(khz) / (tsc.ticks_per_ns * 1e6);
        if (ratio - 1.0).abs() > 0.02 {
            vcpu.stop();
            return Err(TestbedError::Kvm(format!(
                "the guest TSC runs at {khz} kHz, the host's at {:.0} kHz: busy work would be off",
                tsc.ticks_per_ns * 1e6
            )));
        }
    }

    let (res_tx, res_rx) = mpsc::channel::<Result<HostMarks, TestbedError>>();
    let host_cfg = *cfg;
    let (progress_h, notifier_h) = (Arc::clone(&progress), Arc::clone(&notifier));
    let vcpu_cpu = VcpuCpu::new(&vcpu);
    let host = std::thread::Builder::new()
        .name("kicklab-host".into())
        .spawn(move || {
            let r = (|| -> Result<HostMarks, TestbedError> {
                let mut m = HostMarks {
                    pinned: pin(usize::from(tx_dir)),
                    ..HostMarks::default()
                };
                let mut st = WaitStats::default();
                let mut kicks = 0u64;
                let p = host_cfg.params;
                let mut work = Sampler::new(
                    if tx_dir { p.w_c } else { p.w_p },
                    host_cfg.seed,
                    u64::from(tx_dir),
                );
                let mark = |m: &mut HostMarks, kicks: u64, st: &WaitStats, end: bool| {
                    let (t, c, v) = (rdtsc(), thread_cpu_ns(), vcpu_cpu.read());
                    if end {
                        (m.t1, m.cpu1, m.vcpu1, m.kicks1, m.sleeps1, m.spurious) =
                            (t, c, v, kicks, st.sleeps, st.spurious);
                    } else {
                        (m.t0, m.cpu0, m.vcpu0, m.kicks0, m.sleeps0) = (t, c, v, kicks, st.sleeps);
                    }
                };
                if tx_dir {
                    let mut consumer = consumer;
                    drop(producer);
                    let mut next = 0u64;
                    for done in 0..total {
                        if done == host_cfg.warmup {
                            mark(&mut m, kicks, &st, false);
                        }
                        consumer.wait_for_messages(p.k_p, host_strategy, &*notifier_h, &mut st)?;
                        let Some(seq) = consumer.claim()? else {
                            return Err(TestbedError::Hang("woke with nothing to read".into()));
                        };
                        match seq.cmp(&next) {
                            std::cmp::Ordering::Equal => next += 1,
                            std::cmp::Ordering::Greater => {
                                m.lost = m.lost.saturating_add(seq - next);
                                next = seq.saturating_add(1);
                            }
                            std::cmp::Ordering::Less => m.bad += 1,
                        }
                        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                        tsc.spin_ticks((work.draw_ps() as f64 * tpp) as u64);
                        let rel = consumer.release();
                        progress_h.store(done + 1, Ordering::Relaxed);
                        if consumer.peer_wants_kick(rel) {
                            notifier_h.notify()?;
                            kicks += 1;
                        }
                    }
                    mark(&mut m, kicks, &st, true);
                    m.lost = m.lost.saturating_add(total.saturating_sub(next));
                } else {
                    let mut producer = producer;
                    drop(consumer);
                    for seq in 0..total {
                        if seq == host_cfg.warmup {
                            mark(&mut m, kicks, &st, false);
                        }
                        producer.wait_for_space(p.k_c, host_strategy, &*notifier_h, &mut st)?;
                        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                        tsc.spin_ticks((work.draw_ps() as f64 * tpp) as u64);
                        producer.write(seq)?;
                        let pubd = producer.publish();
                        progress_h.store(seq + 1, Ordering::Relaxed);
                        if producer.peer_wants_kick(pubd) {
                            notifier_h.notify()?;
                            kicks += 1;
                        }
                    }
                    mark(&mut m, kicks, &st, true);
                    // End of stream: fewer than k_P messages may wait for a kick.
                    notifier_h.notify()?;
                }
                Ok(m)
            })();
            let _ = res_tx.send(r);
        })?;

    // Watchdog: the run must keep moving (host messages or guest index).
    let guest_index = if tx_dir {
        super::guest::ring::TAIL
    } else {
        super::guest::ring::HEAD
    };
    let mut last = (u64::MAX, u32::MAX);
    let mut since = Instant::now();
    let outcome: Result<HostMarks, TestbedError> = loop {
        match res_rx.recv_timeout(Duration::from_millis(20)) {
            Ok(r) => break r,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err(TestbedError::Hang("the host thread died".into()))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if vcpu.finished() {
            // The guest ended early (an error or a premature done); give
            // the host a moment to finish what was published.
            let end = vcpu.join_within(Duration::ZERO);
            let host = res_rx.recv_timeout(Duration::from_millis(200));
            match (end, host) {
                (Err(e), _) => break Err(e),
                (Ok(_), Ok(r)) => break r,
                (Ok(GuestEnd::Done), Err(_)) => {
                    break Err(TestbedError::Guest(format!(
                        "said it was done after {} of {total} messages",
                        progress.load(Ordering::Relaxed)
                    )))
                }
                (Ok(GuestEnd::Stopped), Err(_)) => {
                    break Err(TestbedError::Hang("the guest was stopped".into()))
                }
            }
        }
        let now = (progress.load(Ordering::Relaxed), mem.read_u32(guest_index));
        if now != last {
            last = now;
            since = Instant::now();
        } else if since.elapsed() > cfg.timeout {
            break Err(TestbedError::Hang(format!(
                "no progress for {:?}: the host handled {} of {total} messages, the guest's {} index is {} \
                 (a guest that never kicks or never runs, or a lost wake-up)",
                cfg.timeout,
                now.0,
                if tx_dir { "tail" } else { "head" },
                now.1,
            )));
        }
    };
    // Tear down: stop both sides whatever happened, then join.
    let failed = outcome.is_err();
    if failed {
        stop.store(true, Ordering::SeqCst);
        let _ = vm.kick.write(1); // wakes a host thread blocked on kicks
    }
    let guest_end = if failed {
        vcpu.stop();
        Ok(GuestEnd::Stopped)
    } else {
        vcpu.join_within(cfg.timeout)
    };
    if host.join().is_err() {
        return Err(TestbedError::Hang("the host thread panicked".into()));
    }
    let m = outcome?;
    guest_end?;

    let n = cfg.messages as f64;
    let e_host = (m.cpu1 - m.cpu0) as f64 / n;
    let e_guest = m.vcpu1.saturating_sub(m.vcpu0) as f64 / n;
    let guest_kicks = u64::from(
        mem.read_u32(map::CTRL + ctrl::KICKS)
            .wrapping_sub(mem.read_u32(map::CTRL + ctrl::KICKS0)),
    );
    // Whole run, as the thread backend counts it.
    let guest_spurious = u64::from(mem.read_u32(map::CTRL + ctrl::SPURIOUS));
    let guest_sleeps = u64::from(
        mem.read_u32(map::CTRL + ctrl::SLEEPS)
            .wrapping_sub(mem.read_u32(map::CTRL + ctrl::SLEEPS0)),
    );
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
    let host_kicks = m.kicks1 - m.kicks0;
    let host_sleeps = m.sleeps1 - m.sleeps0;
    let (e_p_ns, e_c_ns) = if tx_dir {
        (e_guest, e_host)
    } else {
        (e_host, e_guest)
    };
    let (np, nc, sp, sc) = if tx_dir {
        (guest_kicks, host_kicks, guest_sleeps, host_sleeps)
    } else {
        (host_kicks, guest_kicks, host_sleeps, guest_sleeps)
    };
    drop(vm);
    Ok(PairResult {
        t_ns: tsc.ns(m.t1 - m.t0) / n,
        e_ns: e_p_ns + e_c_ns,
        e_p_ns,
        e_c_ns,
        messages: cfg.messages,
        lost,
        duplicated_or_reordered: bad,
        notifications_p: np,
        notifications_c: nc,
        sleeps_p: sp,
        sleeps_c: sc,
        spurious_p: if tx_dir { guest_spurious } else { m.spurious },
        spurious_c: if tx_dir { m.spurious } else { guest_spurious },
        pinned: m.pinned && crate::clock::cpus() >= 2,
        oversubscribed: crate::clock::cpus() < 2
            && (cfg.strategy_p == WaitStrategy::Poll || cfg.strategy_c == WaitStrategy::Poll),
    })
}

/// Reads the vCPU thread's CPU clock from another thread.
#[derive(Clone, Copy)]
struct VcpuCpu(libc::clockid_t);

impl VcpuCpu {
    fn new(v: &super::vm::VcpuThread) -> VcpuCpu {
        VcpuCpu(v.clock_id())
    }

    fn read(self) -> u64 {
        super::vm::clock_ns(self.0)
    }
}
