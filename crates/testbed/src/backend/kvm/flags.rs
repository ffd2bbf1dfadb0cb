//! Notification flags on the VM path (`kicklab flags --backend kvm`):
//! the guest is the signaller (`super::guest::FlagsProgram`),
//! a host thread the consumer watching every source. On the `bitmap` path
//! the guest sets the source's bit in its memory and kicks the one kick
//! ioeventfd only when the host asked; the host scans the vector, takes
//! the counts, and before it sleeps asks for a kick and scans again. On
//! `poll` and `epoll` every source is a port of its own with an
//! ioeventfd, and the host waits on all of them with the system call.
//!
//! Guest memory is untrusted: a bit of a source that does not exist, or
//! counts that add up to more signals than the guest was to send, stop
//! the run with an error; a guest that never kicks or stops early is
//! caught by the session's watchdog.
//!
//! What does not live here: the threads version and the result type
//! (the crate's `flags`).

use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rustix::event::{epoll, poll, PollFd, PollFlags};
use vmm_sys_util::eventfd::EventFd;

use super::guest::{ctrl, map, FlagSignal, FlagsProgram, Misbehavior};
use super::session::Session;
use super::vm::{Vm, VmOptions};
use crate::clock::{thread_cpu_ns, Tsc};
use crate::flags::epoll::epoll_over;
use crate::flags::types::{FlagPath, FlagsBackend, FlagsConfig, FlagsResult};
use crate::{Setting, TestbedError};

/// The most sources on the VM path (the guest's bit vector; KVM takes
/// about 1000 ioeventfds per bus).
pub const MAX_SOURCES: usize = map::FLAG_SOURCES as usize;

/// Words of the bit vector the host scans: twice the sources, so a guest
/// that flags a source past the last is seen.
const WORDS: u32 = 2 * map::FLAG_SOURCES / 32;

/// How long the host waits in one system call before it checks whether
/// the run was stopped.
const POLL_MS: i32 = 100;

/// Runs the guest signaller and the host consumer.
///
/// # Errors
///
/// A bad configuration, no usable KVM, a guest that misbehaves.
pub fn flags(cfg: &FlagsConfig) -> Result<FlagsResult, TestbedError> {
    flags_with(cfg, Misbehavior::None)
}

/// [`flags`] with a guest that misbehaves (`NeverKick`, `BadFlag`, or any
/// other the tests use).
///
/// # Errors
///
/// As [`flags`].
#[allow(clippy::cast_precision_loss, clippy::too_many_lines)]
pub fn flags_with(
    cfg: &FlagsConfig,
    misbehavior: Misbehavior,
) -> Result<FlagsResult, TestbedError> {
    super::available()
        .map_err(|why| TestbedError::Kvm(format!("kvm is not usable here: {why}")))?;
    if cfg.sources == 0 || cfg.sources > MAX_SOURCES {
        return Err(TestbedError::invalid(
            Setting::Vms,
            format!("1 to {MAX_SOURCES} sources with kvm"),
        ));
    }
    let signals = u32::try_from(cfg.signals)
        .ok()
        .filter(|s| (1..1 << 30).contains(s))
        .ok_or_else(|| TestbedError::invalid(Setting::Messages, "1 to 2^30 signals with kvm"))?;
    let tsc = Tsc::get();
    let gap = u32::try_from(tsc.ticks(cfg.gap.as_secs_f64() * 1e9))
        .ok()
        .filter(|g| *g < 1 << 30)
        .ok_or_else(|| {
            TestbedError::invalid(
                Setting::Work,
                "the guest times its signals in 32 bits of TSC ticks: a gap of at most 0.1 s",
            )
        })?;
    #[allow(clippy::cast_possible_truncation)] // at most MAX_SOURCES
    let n = cfg.sources as u32;
    let vm = Vm::new(VmOptions::default())?;
    let program = FlagsProgram {
        signal: if cfg.path == FlagPath::Bitmap {
            FlagSignal::Bitmap
        } else {
            FlagSignal::Port
        },
        sources: n,
        signals,
        gap,
        misbehavior,
    }
    .assemble()?;
    let sources: Vec<EventFd> = if cfg.path == FlagPath::Bitmap {
        Vec::new()
    } else {
        #[allow(clippy::cast_possible_truncation)] // < MAX_SOURCES
        (0..n)
            .map(|i| vm.port_eventfd(map::FLAG_PORT + i as u16))
            .collect::<Result<_, _>>()?
    };
    let kick = vm.kick.try_clone()?;
    let mem = Arc::clone(&vm.mem);
    let received = Arc::new(AtomicU64::new(0));
    let session = Session::start(&vm, &program, 0)?;
    let (mem_h, received_h, path, total) = (
        Arc::clone(&mem),
        Arc::clone(&received),
        cfg.path,
        u64::from(signals),
    );
    let host = move |stop: &AtomicBool| -> Result<(u64, u64), TestbedError> {
        crate::clock::pin(1);
        let cpu0 = thread_cpu_ns();
        let wakeups = match path {
            FlagPath::Bitmap => bitmap(&mem_h, n, total, &kick, stop, &received_h)?,
            FlagPath::Poll | FlagPath::Epoll => {
                ports(&sources, path == FlagPath::Epoll, total, stop, &received_h)?
            }
        };
        Ok((wakeups, thread_cpu_ns() - cpu0))
    };
    let received_w = Arc::clone(&received);
    let (wakeups, cpu) = session.run(
        "kicklab-flags",
        host,
        Duration::from_secs(2),
        move || received_w.load(Ordering::Relaxed),
        || {
            format!(
                "{} of {signals} signals received, the guest's {} exits",
                received.load(Ordering::Relaxed),
                mem.read_u32(map::CTRL + ctrl::KICKS)
            )
        },
    )?;
    let notify_ticks = mem.load_u64(map::CTRL + ctrl::KICK_TICKS);
    drop(vm);
    Ok(FlagsResult {
        backend: FlagsBackend::Kvm,
        sources: cfg.sources,
        path: cfg.path,
        notify_ns: tsc.ns(notify_ticks) / f64::from(signals),
        wake_ns: cpu as f64 / wakeups.max(1) as f64,
        wakeups,
        signals: u64::from(signals),
        received: received.load(Ordering::Relaxed),
    })
}

/// Adds `got` to what was received; more than the guest was to send is
/// an error (its counts are untrusted).
fn count(received: &AtomicU64, got: u64, total: u64) -> Result<u64, TestbedError> {
    let now = received.load(Ordering::Relaxed).saturating_add(got);
    if now > total {
        return Err(TestbedError::Guest(format!(
            "its counts add up to {now} signals, but it was to send {total}"
        )));
    }
    received.store(now, Ordering::Relaxed);
    Ok(now)
}

/// The bit vector path: scan, take the counts; with nothing flagged, ask
/// for a kick, scan again, sleep on the kick. Returns the wake-ups.
fn bitmap(
    mem: &super::vm::GuestMemory,
    n: u32,
    total: u64,
    kick: &EventFd,
    stop: &AtomicBool,
    received: &AtomicU64,
) -> Result<u64, TestbedError> {
    let scan = |received: &AtomicU64| -> Result<(bool, u64), TestbedError> {
        let mut found = false;
        let mut now = received.load(Ordering::Relaxed);
        for w in 0..WORDS {
            let mut set = mem.swap_u32(map::FLAG_BITS + 4 * w, 0);
            while set != 0 {
                let source = 32 * w + set.trailing_zeros();
                set &= set - 1;
                if source >= n {
                    return Err(TestbedError::Guest(format!(
                        "it flagged source {source}, but there are {n} sources (0 to {})",
                        n - 1
                    )));
                }
                found = true;
                let got = mem.swap_u32(map::FLAG_COUNTS + 4 * source, 0);
                now = count(received, u64::from(got), total)?;
            }
        }
        Ok((found, now))
    };
    let mut wakeups = 0u64;
    loop {
        let (found, now) = scan(received)?;
        if now >= total {
            return Ok(wakeups);
        }
        if found {
            continue;
        }
        // Ask for a kick (a full fence), then look again: a flag set
        // before the guest saw the request is seen here.
        mem.swap_u32(map::CTRL + ctrl::HOST_WANT, 1);
        let (found, now) = scan(received)?;
        if found || now >= total {
            mem.swap_u32(map::CTRL + ctrl::HOST_WANT, 0);
            continue;
        }
        kick.read()?;
        wakeups += 1;
        if stop.load(Ordering::Relaxed) {
            return Err(TestbedError::Hang("the run was stopped".into()));
        }
    }
}

/// The per-source ports: `poll` (or `epoll_wait`) over all of them, then
/// a read of each ready one. Returns the wake-ups.
fn ports(
    fds: &[EventFd],
    use_epoll: bool,
    total: u64,
    stop: &AtomicBool,
    received: &AtomicU64,
) -> Result<u64, TestbedError> {
    let borrowed: Vec<_> = fds
        .iter()
        // SAFETY: each fd is open for as long as `fds` lives, which
        // outlives this function's use of the borrow.
        .map(|f| unsafe { std::os::fd::BorrowedFd::borrow_raw(f.as_raw_fd()) })
        .collect();
    let ep = if use_epoll {
        Some(epoll_over(borrowed.iter())?)
    } else {
        None
    };
    let mut events: Vec<epoll::Event> = Vec::with_capacity(fds.len());
    let timeout = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: i64::from(POLL_MS) * 1_000_000,
    };
    let mut wakeups = 0u64;
    let read = |i: usize| -> Result<u64, TestbedError> {
        match fds[i].read() {
            Ok(v) => Ok(v),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(0),
            Err(e) => Err(e.into()),
        }
    };
    while received.load(Ordering::Relaxed) < total {
        if stop.load(Ordering::Relaxed) {
            return Err(TestbedError::Hang("the run was stopped".into()));
        }
        let mut got = 0u64;
        if let Some(ep) = &ep {
            events.clear();
            let k = epoll::wait(
                ep,
                rustix::buffer::spare_capacity(&mut events),
                Some(&timeout),
            )
            .map_err(std::io::Error::from)?;
            if k == 0 {
                continue;
            }
            for e in &events {
                if let Ok(i) = usize::try_from(e.data.u64()) {
                    if i < fds.len() {
                        got += read(i)?;
                    }
                }
            }
        } else {
            let mut pfds: Vec<PollFd<'_>> = borrowed
                .iter()
                .map(|f| PollFd::new(f, PollFlags::IN))
                .collect();
            if poll(&mut pfds, Some(&timeout)).map_err(std::io::Error::from)? == 0 {
                continue;
            }
            let ready: Vec<usize> = pfds
                .iter()
                .enumerate()
                .filter(|(_, p)| p.revents().contains(PollFlags::IN))
                .map(|(i, _)| i)
                .collect();
            for i in ready {
                got += read(i)?;
            }
        }
        wakeups += 1;
        count(received, got, total)?;
    }
    Ok(wakeups)
}
