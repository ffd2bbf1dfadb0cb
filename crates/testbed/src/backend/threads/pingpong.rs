//! Ping-pong with a host thread as the responder (see `crate::pingpong`):
//! two pinned threads, request and response counters in shared atomics,
//! wake-ups through a notifier, a progress watchdog.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kicklab_ring::{Notifier, NotifierKind};

use crate::clock::{pin, rdtsc, thread_cpu_ns, Tsc};
use crate::party::{join_within, TICK};
use crate::pingpong::{Idle, PingPongConfig, PingPongResult};
use crate::watchdog::Stall;
use crate::{Setting, TestbedError};

/// What the two threads share.
struct Shared {
    req: AtomicU32,
    resp: AtomicU32,
    /// The responder asks for a notification before it blocks.
    want: AtomicU32,
    /// The requester asks for a notification before it blocks.
    host_want: AtomicU32,
    stop: AtomicBool,
    to_responder: Box<dyn Notifier>,
    to_requester: Box<dyn Notifier>,
    sleeps: AtomicU32,
}

fn stopped() -> TestbedError {
    TestbedError::Hang("stopped by the watchdog".into())
}

/// Runs ping-pong between two threads notifying through `kind`.
///
/// # Errors
///
/// An idle strategy only KVM has, parameters out of range, a notifier
/// that fails, or no answer for `cfg.timeout` (a hang).
#[allow(clippy::cast_precision_loss, clippy::too_many_lines)]
pub fn run(cfg: &PingPongConfig, kind: NotifierKind) -> Result<PingPongResult, TestbedError> {
    if cfg.idle.kvm_only() {
        return Err(TestbedError::invalid(
            Setting::Idle,
            format!("{} exists only with the kvm backend", cfg.idle),
        ));
    }
    let (total, warm) = cfg.check()?;
    let tsc = Tsc::get();
    let sh = Arc::new(Shared {
        req: AtomicU32::new(0),
        resp: AtomicU32::new(0),
        want: AtomicU32::new(0),
        host_want: AtomicU32::new(0),
        stop: AtomicBool::new(false),
        to_responder: kind.make()?,
        to_requester: kind.make()?,
        sleeps: AtomicU32::new(0),
    });
    let (idle, work) = (cfg.idle, tsc.ticks(cfg.work.as_secs_f64() * 1e9));
    let sh_r = Arc::clone(&sh);
    let responder = std::thread::Builder::new()
        .name("kicklab-responder".into())
        .spawn(move || -> Result<(u64, u64), TestbedError> {
            let sh = &*sh_r;
            pin(0);
            let mut marks = (0, 0);
            let spin = match idle {
                Idle::Poll => None,
                Idle::PollThenHalt(d) => Some(tsc.ticks(d.as_secs_f64() * 1e9)),
                _ => Some(0),
            };
            for i in 1..=total {
                if i == warm + 1 {
                    marks.0 = thread_cpu_ns();
                }
                let here = || sh.req.load(Ordering::SeqCst) == i;
                let t0 = rdtsc();
                while !here() {
                    if spin.is_some_and(|s| rdtsc().wrapping_sub(t0) >= s) {
                        sh.want.store(1, Ordering::SeqCst);
                        if here() {
                            sh.want.store(0, Ordering::SeqCst);
                            break;
                        }
                        sh.sleeps.fetch_add(1, Ordering::Relaxed);
                        sh.to_responder.wait()?;
                        sh.want.store(0, Ordering::SeqCst);
                    } else {
                        std::hint::spin_loop();
                    }
                    if sh.stop.load(Ordering::Relaxed) {
                        return Err(stopped());
                    }
                }
                if !tsc.spin_ticks_or_stop(work, &sh.stop) {
                    return Err(stopped());
                }
                sh.resp.store(i, Ordering::SeqCst);
                if sh.host_want.swap(0, Ordering::SeqCst) == 1 {
                    sh.to_requester.notify()?;
                }
            }
            marks.1 = thread_cpu_ns();
            Ok(marks)
        })?;
    let sh_q = Arc::clone(&sh);
    let polls = cfg.requester_polls;
    let requester = std::thread::Builder::new()
        .name("kicklab-requester".into())
        .spawn(move || -> Result<(u64, u64, u64, u64, u32), TestbedError> {
            let sh = &*sh_q;
            pin(1);
            let (mut t0, mut c0, mut s0) = (0, 0, 0);
            for i in 1..=total {
                if i == warm + 1 {
                    (t0, c0, s0) = (rdtsc(), thread_cpu_ns(), sh.sleeps.load(Ordering::Relaxed));
                }
                if !tsc.spin_ticks_or_stop(work, &sh.stop) {
                    return Err(stopped());
                }
                sh.req.store(i, Ordering::SeqCst);
                if sh.want.swap(0, Ordering::SeqCst) == 1 {
                    sh.to_responder.notify()?;
                }
                while sh.resp.load(Ordering::SeqCst) != i {
                    if polls {
                        std::hint::spin_loop();
                    } else {
                        sh.host_want.store(1, Ordering::SeqCst);
                        if sh.resp.load(Ordering::SeqCst) == i {
                            sh.host_want.store(0, Ordering::SeqCst);
                            break;
                        }
                        sh.to_requester.wait()?;
                    }
                    if sh.stop.load(Ordering::Relaxed) {
                        return Err(stopped());
                    }
                }
            }
            let s1 = sh.sleeps.load(Ordering::Relaxed);
            Ok((t0, rdtsc(), c0, thread_cpu_ns(), s1 - s0))
        })?;
    // Watchdog: a request or a response must move within the stall limit.
    let mut stall = Stall::new(cfg.timeout);
    let mut failure = None;
    while !(responder.is_finished() && requester.is_finished()) {
        std::thread::sleep(TICK);
        let now = (
            sh.req.load(Ordering::Relaxed),
            sh.resp.load(Ordering::Relaxed),
        );
        if stall.stalled(now) {
            failure = Some(TestbedError::Hang(format!(
                "no progress for {:?}: request {} answered up to {} of {total}",
                cfg.timeout, now.0, now.1
            )));
            break;
        }
    }
    if failure.is_some() {
        sh.stop.store(true, Ordering::SeqCst);
        let _ = sh.to_responder.notify();
        let _ = sh.to_requester.notify();
    }
    let grace = Duration::from_secs(2);
    let rr = join_within(responder, grace, "responder");
    if rr.is_err() {
        sh.stop.store(true, Ordering::SeqCst);
        let _ = sh.to_requester.notify();
    }
    let rq = join_within(requester, grace, "requester");
    if let Some(e) = failure {
        return Err(e);
    }
    let (rc0, rc1) = rr?;
    let (t0, t1, c0, c1, sleeps) = rq?;
    Ok(PingPongResult::from_window(
        cfg.messages,
        tsc.ns(t1 - t0),
        c1 - c0,
        rc1 - rc0,
        u64::from(sleeps),
    ))
}
