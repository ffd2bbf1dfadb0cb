//! A quick calibration of the real multi-VM system's costs: the ring's
//! cost per request, a kick and a wake-up, on threads or with a KVM
//! guest. What does not live here: the run (`run`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kicklab_model::qos::QosSystem;
use kicklab_ring::{ring, FutexNotifier, Notifier};

use crate::clock::{rdtsc, thread_cpu_ns, Tsc};
use crate::party::join_within;
use crate::{Setting, TestbedError};

use super::config::*;
use super::stages::*;

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
