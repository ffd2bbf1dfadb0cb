//! The flags run on two threads: a producer signalling the sources, a
//! consumer finding them by `poll`, `epoll` or the shared bitmap.

use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kicklab_ring::{FutexNotifier, Notifier};
use rustix::event::{epoll, eventfd, poll, EventfdFlags, PollFd, PollFlags};

use crate::clock::thread_cpu_ns;
use crate::{Setting, TestbedError};

use super::epoll::epoll_over;
use super::types::{FlagPath, FlagsBackend, FlagsConfig, FlagsResult};

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

/// Runs the producer and the consumer as two threads.
///
/// # Errors
///
/// A bad configuration, or a system call that fails.
#[allow(clippy::cast_precision_loss, clippy::too_many_lines)]
pub(super) fn flags(cfg: &FlagsConfig) -> Result<FlagsResult, TestbedError> {
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
