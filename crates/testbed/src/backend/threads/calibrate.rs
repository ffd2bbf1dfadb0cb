//! Calibration of N and S for two host threads and a notifier (method:
//! `docs/calibration.md`, summarized in `crate::calibrate`), with a
//! progress watchdog and bounded joins.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kicklab_ring::{Notifier, NotifierKind};

use crate::calibrate::{check_round, settled, Profile, Stat};
use crate::clock::{clock_ns, own_cpu_clock, pin, rdtsc, thread_cpu_ns, Tsc};
use crate::party::{join_within, Stoppable, TICK};
use crate::watchdog::Stall;
use crate::TestbedError;

/// The notifier's (start, end) TSC of each notify, its CPU time, and the
/// waiter's CPU clock read just before each notify (0: not readable).
type NotifierSamples = (Vec<(u64, u64)>, Vec<f64>, Vec<u64>);

/// The waiter's CPU clock before and after each wait [ns], and its TSC on
/// waking.
type WaiterSamples = (Vec<u64>, Vec<(u64, u64)>);

/// No clock of the waiter's to read.
const NO_CLOCK: i64 = i64::MIN;

/// One direction's samples.
struct Direction {
    n: Vec<f64>,
    n_cpu: Vec<f64>,
    s: Vec<f64>,
    s_cpu: Vec<f64>,
    /// V and the model's S, per sample ([`visibility`]).
    v: Vec<f64>,
    s_v: Vec<f64>,
}

/// V and the model's S of one notification, from its duration `n`, the
/// wall start-up `s` (from the end of the notification to the waiter
/// running, signed) and the waiter's own CPU time `s_cpu`: the model's
/// [`kicklab_model::split_wake_up`] of R = n + s.
pub(crate) fn visibility(n: f64, s: f64, s_cpu: f64) -> (f64, f64) {
    kicklab_model::split_wake_up(n, n + s, s_cpu)
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
    // The waiter's CPU clock, for the notifier to read just before it
    // notifies: the waiter's CPU from then on is its wake-up alone (not
    // its going to sleep, done during the gap).
    let waiter_clock = Arc::new(AtomicI64::new(NO_CLOCK));
    let (w_notifier, w_ready, w_stop, w_clock) = (
        Arc::clone(&notifier),
        Arc::clone(&ready),
        Arc::clone(&stop),
        Arc::clone(&waiter_clock),
    );
    // Threads that cannot be had (a limit on processes, on memory) are
    // an error, not a panic: a waiter without its notifier is stopped.
    let waiter =
        std::thread::Builder::new().spawn(move || -> Result<WaiterSamples, TestbedError> {
            pin(waiter_cpu);
            let own = own_cpu_clock();
            if own != libc::CLOCK_THREAD_CPUTIME_ID {
                w_clock.store(i64::from(own), Ordering::Relaxed);
            }
            let w_notifier = Stoppable {
                inner: &*w_notifier,
                stop: &w_stop,
            };
            let (mut woke, mut cpu) = (Vec::with_capacity(samples), Vec::with_capacity(samples));
            for i in 0..samples as u64 {
                // Release: pairs with the notifier's Acquire spin on `ready`
                // (and publishes the clock id).
                w_ready.store(i + 1, Ordering::Release);
                let c0 = thread_cpu_ns();
                w_notifier.wait()?;
                woke.push(rdtsc());
                cpu.push((c0, thread_cpu_ns()));
            }
            Ok((woke, cpu))
        })?;
    let (n_notifier, n_ready, n_stop, n_clock) = (
        Arc::clone(&notifier),
        Arc::clone(&ready),
        Arc::clone(&stop),
        Arc::clone(&waiter_clock),
    );
    let notifier_side =
        std::thread::Builder::new().spawn(move || -> Result<NotifierSamples, TestbedError> {
            let (notifier, ready) = (n_notifier, n_ready);
            pin(notifier_cpu);
            let (mut times, mut cpu) = (Vec::with_capacity(samples), Vec::with_capacity(samples));
            let mut waiter_cpu = Vec::with_capacity(samples);
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
                let clock = n_clock.load(Ordering::Relaxed);
                waiter_cpu.push(
                    libc::clockid_t::try_from(clock)
                        .ok()
                        .filter(|_| clock != NO_CLOCK)
                        .map_or(0, clock_ns),
                );
                let c0 = thread_cpu_ns();
                let t0 = rdtsc();
                notifier.notify()?;
                let t1 = rdtsc();
                cpu.push((thread_cpu_ns() - c0) as f64);
                times.push((t0, t1));
            }
            Ok((times, cpu, waiter_cpu))
        });
    let notifier_side = match notifier_side {
        Ok(h) => h,
        Err(e) => {
            stop.store(true, Ordering::SeqCst);
            let _ = notifier.notify();
            let _ = join_within(waiter, Duration::from_secs(2), "calibration waiter");
            return Err(TestbedError::Io(e));
        }
    };
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
    let ((woke, waits), (times, n_cpu, at_notify)) = (w?, ns?);
    // The waiter's own CPU from the start of the notification to running
    // (across the whole wait where its clock could not be read).
    let s_cpu: Vec<f64> = waits
        .iter()
        .zip(&at_notify)
        .map(|((c0, c1), at)| {
            let from = if *at >= *c0 && *at <= *c1 { *at } else { *c0 };
            (c1 - from) as f64
        })
        .collect();
    let n: Vec<f64> = times.iter().map(|(a, b)| tsc.ns(b - a)).collect();
    // Signed: the waiter may run before the notify call returns (both TSCs
    // are the same invariant clock).
    #[allow(clippy::cast_possible_wrap)]
    let s: Vec<f64> = times
        .iter()
        .zip(&woke)
        .map(|((_, t1), t2)| t2.wrapping_sub(*t1) as i64 as f64 / tsc.ticks_per_ns)
        .collect();
    let (v, s_v) = n
        .iter()
        .zip(&s)
        .zip(&s_cpu)
        .map(|((n, s), c)| visibility(*n, *s, *c))
        .unzip();
    Ok(Direction {
        n,
        n_cpu,
        s,
        s_cpu,
        v,
        s_v,
    })
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
    let mut all: [Vec<f64>; 12] = Default::default();
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
        all[8].extend(pc.v);
        all[9].extend(cp.v);
        all[10].extend(cp.s_v);
        all[11].extend(pc.s_v);
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
        guest: None,
        clock_sync_ns: None,
        clock_drift_ns: None,
        kick_visible: None,
        vp: Some(st(8)),
        vc: Some(st(9)),
        sp_v: Some(st(10)),
        sc_v: Some(st(11)),
        overhead: None,
        overhead_p: None,
        overhead_c: None,
        idle_curve: Vec::new(),
        in_run: None,
        nap_p: None,
        nap_c: None,
        nap_p_cpu: None,
        nap_c_cpu: None,
        others_cpu: None,
    })
}

#[cfg(test)]
mod tests {
    use super::visibility;

    #[test]
    fn visibility_takes_the_waiters_cpu_as_its_start_up() {
        // Resumed 3 us after a 2 us notify, 1 us of its own CPU: V = N.
        assert_eq!(visibility(2000.0, 3000.0, 1000.0), (2000.0, 3000.0));
        // Resumed 0.5 us after it, 1.5 us of its own CPU: it was runnable
        // 1 us into the notify.
        assert_eq!(visibility(2000.0, 500.0, 1500.0), (1000.0, 1500.0));
        // Ran 1 us before the notify returned: S_wall < 0 is absorbed.
        assert_eq!(visibility(2000.0, -1000.0, 400.0), (600.0, 400.0));
        // More CPU than R: runnable at the start, S = R.
        assert_eq!(visibility(2000.0, 1000.0, 5000.0), (0.0, 3000.0));
    }
}
