//! Running the real multi-VM system: the threads or KVM guests started,
//! the window measured (this process's and the machine's CPU), the
//! stages joined, every request accounted for. What does not live here:
//! the stages themselves (`stages`), calibration (`calibrate`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kicklab_model::qos::QosSystem;
use kicklab_ring::{ring, Consumer, FutexNotifier, Notifier, Producer};

use crate::clock::{clock_ns, cpus, rdtsc, Tsc};
use crate::party::join_within;
use crate::TestbedError;

use super::config::*;
use super::stages::*;

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
