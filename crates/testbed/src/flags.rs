//! One consumer watching many notification sources (VMware's hosted VMM:
//! a shared-memory bit vector set by the host driver and checked on every
//! IRQ, instead of a `select()` over all devices). A producer thread
//! signals the sources one at a time, spaced so the consumer sleeps between
//! signals; the consumer finds which source fired either with a system
//! call over one eventfd per source (`poll`, the `select()` family, or
//! `epoll`) or from a shared bit vector and per-source counters, woken
//! through one futex for all. Each signal carries a count, so lost and
//! duplicated signals are caught. What it reports: the producer's CPU per
//! notification and the consumer's CPU per wake-up (waiting, finding the
//! source, consuming its count), calibrated costs the model takes as N
//! and S.
//!
//! What does not live here: sweeps over the number of sources and the
//! report (`kicklab-lab`).

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kicklab_ring::{FutexNotifier, Notifier};
use rustix::event::{epoll, eventfd, poll, EventfdFlags, PollFd, PollFlags};
use serde::Serialize;

use crate::clock::thread_cpu_ns;
use crate::{Setting, TestbedError};

/// How the consumer learns which source fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlagPath {
    /// `poll()` over one eventfd per source, then a `read` of each ready
    /// one: the `select()` family, whose cost grows with the sources.
    Poll,
    /// `epoll_wait` over one eventfd per source, then a `read`.
    Epoll,
    /// A shared bit vector and per-source counters, one futex for all.
    Bitmap,
}

impl std::str::FromStr for FlagPath {
    type Err = String;
    fn from_str(s: &str) -> Result<FlagPath, String> {
        match s {
            "poll" | "select" => Ok(FlagPath::Poll),
            "epoll" => Ok(FlagPath::Epoll),
            "bitmap" | "shared" => Ok(FlagPath::Bitmap),
            _ => Err(format!("unknown path `{s}` (use poll, epoll or bitmap)")),
        }
    }
}

/// Who signals and who watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlagsBackend {
    /// A producer thread and a consumer thread.
    #[default]
    Threads,
    /// A KVM guest signals (its bit vector and one kick ioeventfd, or a
    /// port and an ioeventfd per source), a host thread watches
    /// (`crate::backend::kvm::flags`).
    Kvm,
}

impl std::str::FromStr for FlagsBackend {
    type Err = String;
    fn from_str(s: &str) -> Result<FlagsBackend, String> {
        match s {
            "threads" => Ok(FlagsBackend::Threads),
            "kvm" => Ok(FlagsBackend::Kvm),
            _ => Err(format!("unknown backend `{s}` (use threads or kvm)")),
        }
    }
}

/// One run.
#[derive(Debug, Clone, Copy)]
pub struct FlagsConfig {
    /// Who signals and who watches.
    pub backend: FlagsBackend,
    /// Sources watched (1 to 1024).
    pub sources: usize,
    /// How.
    pub path: FlagPath,
    /// Signals sent (spread over the sources).
    pub signals: u64,
    /// Time between two signals: long enough for the consumer to sleep.
    pub gap: Duration,
}

/// What a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct FlagsResult {
    /// Who signalled and who watched.
    pub backend: FlagsBackend,
    /// Sources watched.
    pub sources: usize,
    /// How.
    pub path: FlagPath,
    /// The producer's CPU per notification [ns] (setting the flag and
    /// waking the consumer, or writing the source's eventfd).
    pub notify_ns: f64,
    /// The consumer's CPU per wake-up [ns] (the wait, finding the source,
    /// consuming its count).
    pub wake_ns: f64,
    /// Wake-ups.
    pub wakeups: u64,
    /// Signals sent.
    pub signals: u64,
    /// Signals the consumer counted (equal to `signals` unless lost or
    /// duplicated).
    pub received: u64,
}

/// An epoll instance watching each of `fds` for input, its index as the
/// event's data.
///
/// # Errors
///
/// The system calls failed.
pub(crate) fn epoll_over<F: std::os::fd::AsFd>(
    fds: impl Iterator<Item = F>,
) -> Result<OwnedFd, TestbedError> {
    let ep = epoll::create(epoll::CreateFlags::CLOEXEC).map_err(std::io::Error::from)?;
    for (i, fd) in fds.enumerate() {
        epoll::add(
            &ep,
            fd,
            epoll::EventData::new_u64(i as u64),
            epoll::EventFlags::IN,
        )
        .map_err(std::io::Error::from)?;
    }
    Ok(ep)
}

fn spin_until(t: Instant) {
    while Instant::now() < t {
        std::hint::spin_loop();
    }
}

/// The shared memory of the bitmap path.
struct Shared {
    bits: Vec<AtomicU64>,
    counts: Vec<AtomicU64>,
    wake: FutexNotifier,
}

/// Runs the producer and the consumer.
///
/// # Errors
///
/// A bad configuration, or a system call that fails.
#[allow(clippy::cast_precision_loss, clippy::too_many_lines)]
pub fn flags(cfg: &FlagsConfig) -> Result<FlagsResult, TestbedError> {
    let _cpus = crate::cpu_lock::hold()?;
    if cfg.backend == FlagsBackend::Kvm {
        return crate::backend::kvm::flags::flags(cfg);
    }
    if cfg.sources == 0 || cfg.sources > 1024 {
        return Err(TestbedError::invalid(Setting::Vms, "1 to 1024 sources"));
    }
    if cfg.signals == 0 {
        return Err(TestbedError::invalid(
            Setting::Messages,
            "at least 1 signal",
        ));
    }
    let n = cfg.sources;
    let fds: Vec<OwnedFd> = (0..n)
        .map(|_| eventfd(0, EventfdFlags::NONBLOCK | EventfdFlags::CLOEXEC))
        .collect::<Result<_, _>>()
        .map_err(std::io::Error::from)?;
    let fds = Arc::new(fds);
    let shared = Arc::new(Shared {
        bits: (0..n.div_ceil(64)).map(|_| AtomicU64::new(0)).collect(),
        counts: (0..n).map(|_| AtomicU64::new(0)).collect(),
        wake: FutexNotifier::default(),
    });
    let done = Arc::new(AtomicBool::new(false));
    let (path, total) = (cfg.path, cfg.signals);

    let consumer = {
        let (fds, shared, done) = (Arc::clone(&fds), Arc::clone(&shared), Arc::clone(&done));
        std::thread::Builder::new()
            .name("flags-consumer".into())
            .spawn(move || -> Result<(u64, u64, u64), TestbedError> {
                let (mut received, mut wakeups) = (0u64, 0u64);
                let cpu0 = thread_cpu_ns();
                let ep = if path == FlagPath::Epoll {
                    Some(epoll_over(fds.iter())?)
                } else {
                    None
                };
                let mut events: Vec<epoll::Event> = Vec::with_capacity(n);
                let mut buf = [0u8; 8];
                while received < total && !done.load(Ordering::Relaxed) {
                    match path {
                        FlagPath::Poll => {
                            let mut pfds: Vec<PollFd<'_>> =
                                fds.iter().map(|f| PollFd::new(f, PollFlags::IN)).collect();
                            let ready = poll(&mut pfds, None).map_err(std::io::Error::from)?;
                            wakeups += 1;
                            if ready == 0 {
                                continue;
                            }
                            for (i, p) in pfds.iter().enumerate() {
                                if p.revents().contains(PollFlags::IN) {
                                    if let Ok(8) = rustix::io::read(&fds[i], &mut buf) {
                                        received += u64::from_ne_bytes(buf);
                                    }
                                }
                            }
                        }
                        FlagPath::Epoll => {
                            events.clear();
                            let ep = ep.as_ref().expect("made above");
                            epoll::wait(ep, rustix::buffer::spare_capacity(&mut events), None)
                                .map_err(std::io::Error::from)?;
                            wakeups += 1;
                            for e in &events {
                                let i = usize::try_from(e.data.u64()).unwrap_or(usize::MAX);
                                if let Some(fd) = fds.get(i) {
                                    if let Ok(8) = rustix::io::read(fd, &mut buf) {
                                        received += u64::from_ne_bytes(buf);
                                    }
                                }
                            }
                        }
                        FlagPath::Bitmap => {
                            let mut found = false;
                            for (w, word) in shared.bits.iter().enumerate() {
                                let mut set = word.swap(0, Ordering::Acquire);
                                while set != 0 {
                                    let b = set.trailing_zeros() as usize;
                                    set &= set - 1;
                                    if let Some(c) = shared.counts.get(w * 64 + b) {
                                        received += c.swap(0, Ordering::AcqRel);
                                        found = true;
                                    }
                                }
                            }
                            if !found {
                                // Nothing flagged: sleep until the next
                                // notification (a pending one returns at
                                // once, so none is lost).
                                shared.wake.wait()?;
                                wakeups += 1;
                            }
                        }
                    }
                }
                Ok((received, wakeups, thread_cpu_ns() - cpu0))
            })?
    };

    // The producer: this thread.
    let mut notify_ns = 0u64;
    let mut next = Instant::now() + cfg.gap;
    for k in 0..total {
        spin_until(next);
        next += cfg.gap;
        // Spread over the sources (a stride coprime with any count).
        let i = usize::try_from(k.wrapping_mul(7919) % n as u64).unwrap_or(0);
        let c0 = thread_cpu_ns();
        match path {
            FlagPath::Poll | FlagPath::Epoll => {
                rustix::io::write(&fds[i], &1u64.to_ne_bytes()).map_err(std::io::Error::from)?;
            }
            FlagPath::Bitmap => {
                shared.counts[i].fetch_add(1, Ordering::Release);
                shared.bits[i / 64].fetch_or(1 << (i % 64), Ordering::Release);
                shared.wake.notify()?;
            }
        }
        notify_ns += thread_cpu_ns() - c0;
    }
    // Let the consumer drain, then stop it if it still waits.
    let deadline = Instant::now() + Duration::from_secs(5);
    while !consumer.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    if !consumer.is_finished() {
        done.store(true, Ordering::Relaxed);
        match path {
            FlagPath::Bitmap => shared.wake.notify()?,
            _ => {
                rustix::io::write(&fds[0], &1u64.to_ne_bytes()).ok();
            }
        }
    }
    let (received, wakeups, cpu) = consumer
        .join()
        .map_err(|_| TestbedError::Hang("the consumer thread panicked".into()))??;
    Ok(FlagsResult {
        backend: FlagsBackend::Threads,
        sources: n,
        path,
        notify_ns: notify_ns as f64 / total as f64,
        wake_ns: cpu as f64 / wakeups.max(1) as f64,
        wakeups,
        signals: total,
        received,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_path_counts_every_signal_once() {
        for path in [FlagPath::Poll, FlagPath::Epoll, FlagPath::Bitmap] {
            for sources in [1, 3, 64, 65] {
                let r = flags(&FlagsConfig {
                    backend: FlagsBackend::Threads,
                    sources,
                    path,
                    signals: 300,
                    gap: Duration::from_micros(20),
                })
                .unwrap();
                assert_eq!(r.received, 300, "{path:?} {sources}");
                // poll and epoll count every return; the bitmap counts
                // only its sleeps, and a consumer that starts after the
                // producer has flagged everything never sleeps at all.
                let least = u64::from(path != FlagPath::Bitmap);
                assert!(r.wakeups >= least && r.wakeups <= 300 + 1, "{r:?}");
            }
        }
    }
}
