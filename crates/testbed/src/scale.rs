//! Idle-with-timeout at scale (Denali, section "Idle-with-timeout
//! instruction"): N "guests" time-share fewer CPUs than there are guests,
//! each with a pending periodic timer and a share of one closed request
//! load. A guest that cannot tell the host when it next needs to run must
//! idle by spinning until its timer ("no timeout"), and so holds its CPU
//! while others have work; with idle-with-timeout it sleeps until the next
//! request or timer. This is the threads version (a thread per guest, the
//! OS scheduler as the hypervisor); it needs no KVM. The KVM version (a
//! tiny VM per guest, the same configuration and result) is
//! `crate::kvm::scale`.
//!
//! What lives here: the run ([`scale`]) and its configuration and result.
//! What does not: printing, sweeps over N (the binary and `kicklab-lab`).

use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::{Setting, TestbedError};

pub use kicklab_model::ScaleIdle;

/// One run.
#[derive(Debug, Clone, Copy)]
pub struct ScaleConfig {
    /// Guests (threads).
    pub vms: usize,
    /// How they idle.
    pub idle: ScaleIdle,
    /// Requests outstanding in all (the client's concurrency), spread
    /// evenly over the guests.
    pub concurrency: usize,
    /// Work per request.
    pub work: Duration,
    /// Each guest's timer period.
    pub timer: Duration,
    /// Work when the timer fires.
    pub timer_work: Duration,
    /// Measured time (after a warm-up of a fifth as long).
    pub duration: Duration,
}

impl ScaleConfig {
    /// Checks what both backends need.
    ///
    /// # Errors
    ///
    /// No guests or more than 256, no requests outstanding, a zero timer
    /// or duration.
    pub fn check(&self) -> Result<(), TestbedError> {
        if self.vms == 0 || self.vms > 256 {
            return Err(TestbedError::invalid(Setting::Vms, "1 to 256 guests"));
        }
        if self.concurrency == 0 {
            return Err(TestbedError::invalid(
                Setting::Vms,
                "at least 1 request outstanding",
            ));
        }
        if self.timer.is_zero() || self.duration.is_zero() {
            return Err(TestbedError::invalid(
                Setting::Timeout,
                "the timer and the duration must be > 0",
            ));
        }
        self.check_work()
    }

    /// Checks that a request's work fits the window (what the simulated
    /// machine needs too).
    ///
    /// # Errors
    ///
    /// A request longer than a tenth of the window.
    pub fn check_work(&self) -> Result<(), TestbedError> {
        // A window that holds no request measures nothing (and a request
        // of seconds outlasts the run's end).
        if self.work.saturating_mul(10) > self.duration {
            return Err(TestbedError::invalid(
                Setting::Work,
                format!(
                    "{:?} a request against a window of {:?}: at most a tenth of the window",
                    self.work, self.duration
                ),
            ));
        }
        Ok(())
    }

    /// Denali's set-up scaled to threads: 32 requests outstanding, 20 us
    /// of work each, a 1 ms timer with 2 us of work, 1 s measured.
    pub fn new(vms: usize, idle: ScaleIdle) -> ScaleConfig {
        ScaleConfig {
            vms,
            idle,
            concurrency: 32,
            work: Duration::from_micros(20),
            timer: Duration::from_millis(1),
            timer_work: Duration::from_micros(2),
            duration: Duration::from_secs(1),
        }
    }
}

/// What a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct ScaleResult {
    /// Guests.
    pub vms: usize,
    /// CPUs of the machine.
    pub cpus: usize,
    /// How they idled.
    pub idle: ScaleIdle,
    /// Requests completed per second, all guests together.
    pub throughput_per_s: f64,
    /// CPU used by the process over the window, as a share of all CPUs.
    pub cpu_util: f64,
    /// Runnable-when-busy threads (the guests and the client) above the
    /// CPUs: the run time-shares, as intended.
    pub oversubscribed: bool,
}

fn spin_for(d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        std::hint::spin_loop();
    }
}

/// CPU time of the whole process [ns] (every thread: vCPU threads too).
pub(crate) fn process_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

/// Runs the guests and the client.
///
/// # Errors
///
/// A bad configuration (no guests, no concurrency, a zero timer), or a
/// guest thread that could not be spawned or panicked.
#[allow(clippy::cast_precision_loss)]
pub fn scale(cfg: &ScaleConfig) -> Result<ScaleResult, TestbedError> {
    cfg.check()?;
    let _cpus = crate::cpu_lock::hold()?;
    let (done_tx, done_rx) = mpsc::channel::<usize>();
    let mut senders = Vec::with_capacity(cfg.vms);
    let mut handles = Vec::with_capacity(cfg.vms);
    for id in 0..cfg.vms {
        let (tx, rx) = mpsc::channel::<()>();
        senders.push(tx);
        let done = done_tx.clone();
        let c = *cfg;
        let h = std::thread::Builder::new()
            .name(format!("guest{id}"))
            .spawn(move || guest(id, &c, &rx, &done))?;
        handles.push(h);
    }
    drop(done_tx);
    // Each guest gets its share of the outstanding requests (at least 1).
    for i in 0..cfg.concurrency.max(cfg.vms) {
        let _ = senders[i % cfg.vms].send(());
    }
    let warm = cfg.duration / 5;
    let start = Instant::now();
    let (mut t0, mut cpu0, mut n0) = (None, 0u64, 0u64);
    let mut completed = 0u64;
    let end = start + warm + cfg.duration;
    loop {
        let now = Instant::now();
        if t0.is_none() && now >= start + warm {
            t0 = Some(now);
            cpu0 = process_cpu_ns();
            n0 = completed;
        }
        if now >= end {
            break;
        }
        match done_rx.recv_timeout(end - now) {
            Ok(id) => {
                completed += 1;
                // Closed loop: the guest that answered gets the next one.
                let _ = senders[id].send(());
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    let t1 = Instant::now();
    let cpu1 = process_cpu_ns();
    let t0 = t0.unwrap_or(start);
    drop(senders);
    for h in handles {
        h.join()
            .map_err(|_| TestbedError::Hang("a guest thread panicked".into()))?;
    }
    let cpus = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let wall = (t1 - t0).as_secs_f64();
    Ok(ScaleResult {
        vms: cfg.vms,
        cpus,
        idle: cfg.idle,
        throughput_per_s: (completed - n0) as f64 / wall,
        cpu_util: (cpu1.saturating_sub(cpu0)) as f64 / 1e9 / wall / cpus as f64,
        oversubscribed: cfg.vms + 1 > cpus,
    })
}

/// One guest: serve requests, run the timer, idle per `cfg.idle`.
fn guest(id: usize, cfg: &ScaleConfig, rx: &mpsc::Receiver<()>, done: &mpsc::Sender<usize>) {
    let mut next_timer = Instant::now() + cfg.timer;
    loop {
        match rx.try_recv() {
            Ok(()) => {
                spin_for(cfg.work);
                if done.send(id).is_err() {
                    return;
                }
                continue;
            }
            Err(TryRecvError::Disconnected) => return,
            Err(TryRecvError::Empty) => {}
        }
        let now = Instant::now();
        if now >= next_timer {
            spin_for(cfg.timer_work);
            next_timer += cfg.timer;
            if next_timer < now {
                next_timer = now + cfg.timer;
            }
            continue;
        }
        match cfg.idle {
            // No way to tell the host when to come back: stay runnable.
            ScaleIdle::Spin => std::hint::spin_loop(),
            // "Wake me on a request or at my timer."
            ScaleIdle::Timeout => match rx.recv_timeout(next_timer - now) {
                Ok(()) => {
                    spin_for(cfg.work);
                    if done.send(id).is_err() {
                        return;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_configurations_are_refused() {
        for c in [
            ScaleConfig::new(0, ScaleIdle::Spin),
            ScaleConfig {
                concurrency: 0,
                ..ScaleConfig::new(2, ScaleIdle::Timeout)
            },
            ScaleConfig {
                timer: Duration::ZERO,
                ..ScaleConfig::new(2, ScaleIdle::Timeout)
            },
        ] {
            assert!(scale(&c).is_err());
        }
    }
}
