//! Calibration of N and S for two host threads and a notifier (method:
//! `docs/calibration.md`, summarized in `crate::calibrate`), with a
//! progress watchdog and bounded joins.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kicklab_ring::{Notifier, NotifierKind};

use crate::calibrate::{check_round, settled, Profile, Stat};
use crate::clock::{pin, rdtsc, thread_cpu_ns, Tsc};
use crate::party::{join_within, Stall, Stoppable, TICK};
use crate::TestbedError;

/// The notifier's (start, end) TSC of each notify, and its CPU time.
type NotifierSamples = (Vec<(u64, u64)>, Vec<f64>);

/// One direction's samples.
struct Direction {
    n: Vec<f64>,
    n_cpu: Vec<f64>,
    s: Vec<f64>,
    s_cpu: Vec<f64>,
}

#[allow(clippy::cast_precision_loss)]
fn measure(
    backend: NotifierKind,
    notifier_cpu: usize,
    waiter_cpu: usize,
    samples: usize,
    gap: Duration,
) -> Result<Direction, TestbedError> {
    let tsc = Tsc::get();
    let notifier: Arc<dyn Notifier> = Arc::from(backend.make()?);
    let ready = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (w_notifier, w_ready, w_stop) =
        (Arc::clone(&notifier), Arc::clone(&ready), Arc::clone(&stop));
    let waiter = std::thread::spawn(move || -> Result<(Vec<u64>, Vec<f64>), TestbedError> {
        pin(waiter_cpu);
        let w_notifier = Stoppable {
            inner: &*w_notifier,
            stop: &w_stop,
        };
        let (mut woke, mut cpu) = (Vec::with_capacity(samples), Vec::with_capacity(samples));
        for i in 0..samples as u64 {
            // Release: pairs with the notifier's Acquire spin on `ready`.
            w_ready.store(i + 1, Ordering::Release);
            let c0 = thread_cpu_ns();
            w_notifier.wait()?;
            woke.push(rdtsc());
            cpu.push((thread_cpu_ns() - c0) as f64);
        }
        Ok((woke, cpu))
    });
    let (n_notifier, n_ready, n_stop) =
        (Arc::clone(&notifier), Arc::clone(&ready), Arc::clone(&stop));
    let notifier_side = std::thread::spawn(move || -> Result<NotifierSamples, TestbedError> {
        let (notifier, ready) = (n_notifier, n_ready);
        pin(notifier_cpu);
        let (mut times, mut cpu) = (Vec::with_capacity(samples), Vec::with_capacity(samples));
        for i in 0..samples as u64 {
            let mut spins = 0u32;
            while ready.load(Ordering::Acquire) != i + 1 {
                std::hint::spin_loop();
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(1024) && n_stop.load(Ordering::Relaxed) {
                    return Err(TestbedError::Hang("calibration stopped".into()));
                }
            }
            if gap < Duration::from_micros(200) {
                tsc.spin_ticks(tsc.ticks(gap.as_secs_f64() * 1e9));
            } else {
                std::thread::sleep(gap);
            }
            let c0 = thread_cpu_ns();
            let t0 = rdtsc();
            notifier.notify()?;
            let t1 = rdtsc();
            cpu.push((thread_cpu_ns() - c0) as f64);
            times.push((t0, t1));
        }
        Ok((times, cpu))
    });
    // Watchdog: each sample moves `ready` within a gap and a wake-up.
    let mut stall = Stall::new(Duration::from_secs(2) + 2 * gap);
    let mut failure = None;
    while !(waiter.is_finished() && notifier_side.is_finished()) {
        std::thread::sleep(TICK);
        let now = ready.load(Ordering::Relaxed);
        if stall.stalled(now) {
            failure = Some(TestbedError::Hang(format!(
                "calibration stopped moving at sample {now} of {samples}"
            )));
            break;
        }
    }
    if failure.is_some() {
        stop.store(true, Ordering::SeqCst);
        let _ = notifier.notify();
    }
    let grace = Duration::from_secs(2);
    let w = join_within(waiter, grace, "calibration waiter");
    let ns = join_within(notifier_side, grace, "calibration notifier");
    if let Some(e) = failure {
        // A notifier that failed says more than the watchdog.
        if let Err(TestbedError::Io(io)) = ns {
            return Err(TestbedError::Io(io));
        }
        drop(w);
        return Err(e);
    }
    let ((woke, s_cpu), (times, n_cpu)) = (w?, ns?);
    let n = times.iter().map(|(a, b)| tsc.ns(b - a)).collect();
    let s = times
        .iter()
        .zip(&woke)
        .map(|((_, t1), t2)| tsc.ns(t2.saturating_sub(*t1)))
        .collect();
    Ok(Direction { n, n_cpu, s, s_cpu })
}

/// Calibrates `backend`: rounds of `samples` notifications per direction
/// after `gap` of idling, until the four medians move less than 5% from one
/// round to the next (at most `max_rounds`).
///
/// # Errors
///
/// Too many samples or too long a gap ([`TestbedError::Limit`]), a
/// notifier that cannot be made or fails.
pub fn calibrate(
    backend: NotifierKind,
    samples: usize,
    gap: Duration,
    max_rounds: usize,
) -> Result<Profile, TestbedError> {
    check_round(samples, gap)?;
    let mut all: [Vec<f64>; 8] = Default::default();
    let mut prev: Option<[f64; 4]> = None;
    let (mut rounds, mut stable) = (0, false);
    while rounds < max_rounds.max(1) {
        rounds += 1;
        let pc = measure(backend, 0, 1, samples, gap)?;
        let cp = measure(backend, 1, 0, samples, gap)?;
        all[0].extend(pc.n);
        all[1].extend(cp.n);
        all[2].extend(cp.s);
        all[3].extend(pc.s);
        all[4].extend(cp.s_cpu);
        all[5].extend(pc.s_cpu);
        all[6].extend(pc.n_cpu);
        all[7].extend(cp.n_cpu);
        let med: [f64; 4] = std::array::from_fn(|i| Stat::of(all[i].clone()).median_ns);
        if settled(&mut prev, med) {
            stable = true;
            break;
        }
    }
    let st = |i: usize| Stat::of(all[i].clone());
    Ok(Profile {
        backend: backend.name().into(),
        np: st(0),
        nc: st(1),
        sp: st(2),
        sc: st(3),
        sp_cpu: st(4),
        sc_cpu: st(5),
        np_cpu: st(6),
        nc_cpu: st(7),
        gap_ns: gap.as_secs_f64() * 1e9,
        rounds,
        stable,
        tsc_ghz: Tsc::get().ticks_per_ns,
        cpus: crate::clock::cpus(),
        direction: None,
        clock_sync_ns: None,
        clock_drift_ns: None,
        kick_visible: None,
        vp: None,
        vc: None,
        sp_v: None,
        sc_v: None,
        overhead: None,
        idle_curve: Vec::new(),
    })
}
