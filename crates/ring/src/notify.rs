//! Notifiers: futex, eventfd and pipe. Each carries one direction (P->C or
//! C->P); a pair of parties needs two.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags};
use rustix::io::Errno;
use rustix::thread::futex::Timespec;

use crate::wait::Notifier;

/// The futex word's states (crossbeam `Parker`, std's futex parker).
mod state {
    /// Nobody waits, no notification pending.
    pub const EMPTY: u32 = 0;
    /// A notification is pending; the next wait consumes it.
    pub const NOTIFIED: u32 = 1;
    /// The waiter is (about to be) blocked in `futex_wait`.
    pub const PARKED: u32 = 2;
}

/// A futex word: the wake system call is made only when the waiter is
/// parked, so a notify with nobody waiting costs one atomic swap.
#[derive(Debug, Default)]
pub struct FutexNotifier {
    word: AtomicU32,
}

impl FutexNotifier {
    /// Consumes a pending notification, if there is one.
    #[inline]
    fn take(&self) -> bool {
        // Acquire: pairs with the Release swap in `notify`.
        self.word
            .compare_exchange(
                state::NOTIFIED,
                state::EMPTY,
                Ordering::Acquire,
                Ordering::Relaxed,
            )
            .is_ok()
    }
}

impl Notifier for FutexNotifier {
    fn notify(&self) -> io::Result<()> {
        // Release: what the notifier did before (publishing messages) is
        // visible to the waiter that consumes NOTIFIED with Acquire.
        if self.word.swap(state::NOTIFIED, Ordering::Release) == state::PARKED {
            rustix::thread::futex::wake(&self.word, rustix::thread::futex::Flags::PRIVATE, 1)?;
        }
        Ok(())
    }

    fn wait(&self) -> io::Result<()> {
        self.park(None).map(drop)
    }

    fn wait_timeout(&self, timeout: Duration) -> io::Result<bool> {
        self.park(Instant::now().checked_add(timeout))
    }
}

impl FutexNotifier {
    /// Blocks until notified (consuming it: true) or until `deadline`
    /// (false; `None`: no deadline).
    fn park(&self, deadline: Option<Instant>) -> io::Result<bool> {
        if self.take() {
            return Ok(true);
        }
        if self
            .word
            .compare_exchange(
                state::EMPTY,
                state::PARKED,
                Ordering::Relaxed,
                Ordering::Relaxed,
            )
            .is_err()
        {
            // A notify slipped in between: it must be NOTIFIED now.
            self.word.store(state::EMPTY, Ordering::Relaxed);
            std::sync::atomic::fence(Ordering::Acquire);
            return Ok(true);
        }
        loop {
            let timeout = match deadline {
                None => None,
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        // Withdraw, unless a notify has made the word
                        // NOTIFIED (only this waiter ever empties it).
                        if self
                            .word
                            .compare_exchange(
                                state::PARKED,
                                state::EMPTY,
                                Ordering::Relaxed,
                                Ordering::Relaxed,
                            )
                            .is_ok()
                        {
                            return Ok(false);
                        }
                        return Ok(self.take());
                    }
                    Some(timespec(left))
                }
            };
            match rustix::thread::futex::wait(
                &self.word,
                rustix::thread::futex::Flags::PRIVATE,
                state::PARKED,
                timeout.as_ref(),
            ) {
                Ok(()) | Err(Errno::AGAIN | Errno::INTR | Errno::TIMEDOUT) => {}
                Err(e) => return Err(e.into()),
            }
            if self.take() {
                return Ok(true);
            }
        }
    }
}

/// `d` as a timespec; the longest one where it does not fit.
fn timespec(d: Duration) -> Timespec {
    Timespec::try_from(d).unwrap_or(Timespec {
        tv_sec: i64::MAX,
        tv_nsec: 0,
    })
}

/// Waits until `fd` is readable or `timeout` has passed: true if readable.
/// An interrupted wait goes on for the time left. What the eventfd and
/// pipe notifiers' timed waits poll with, and any notifier of one's own
/// over a file descriptor (a VMM's ioeventfd).
///
/// # Errors
///
/// `poll` failed other than by an interruption.
pub fn wait_readable(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<bool> {
    let deadline = Instant::now().checked_add(timeout);
    loop {
        let left = deadline.map_or(timeout, |d| d.saturating_duration_since(Instant::now()));
        let mut fds = [PollFd::new(&fd, PollFlags::IN)];
        match rustix::event::poll(&mut fds, Some(&timespec(left))) {
            Err(Errno::INTR) => {}
            r => return Ok(r? > 0),
        }
    }
}

/// An eventfd: `write(1)` to notify, a blocking `read` (which resets the
/// counter) to wait. The same object KVM's ioeventfd and irqfd use.
#[derive(Debug)]
pub struct EventFdNotifier {
    fd: OwnedFd,
}

impl EventFdNotifier {
    /// A new eventfd.
    ///
    /// # Errors
    ///
    /// `eventfd(2)` failed.
    pub fn new() -> io::Result<Self> {
        Ok(EventFdNotifier {
            fd: rustix::event::eventfd(0, rustix::event::EventfdFlags::CLOEXEC)?,
        })
    }
}

fn retry<T>(mut f: impl FnMut() -> rustix::io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(Errno::INTR) => {}
            r => return r.map_err(Into::into),
        }
    }
}

impl Notifier for EventFdNotifier {
    fn notify(&self) -> io::Result<()> {
        retry(|| rustix::io::write(&self.fd, &1u64.to_ne_bytes())).map(drop)
    }

    fn wait(&self) -> io::Result<()> {
        let mut buf = [0u8; 8];
        retry(|| rustix::io::read(&self.fd, &mut buf)).map(drop)
    }

    fn wait_timeout(&self, timeout: Duration) -> io::Result<bool> {
        if !wait_readable(self.fd.as_fd(), timeout)? {
            return Ok(false);
        }
        self.wait().map(|()| true)
    }
}

/// A pipe: one byte to notify, a blocking read (draining what is there) to
/// wait. The write end is non-blocking: a full pipe already holds
/// notifications enough.
#[derive(Debug)]
pub struct PipeNotifier {
    read: OwnedFd,
    write: OwnedFd,
}

impl PipeNotifier {
    /// A new pipe.
    ///
    /// # Errors
    ///
    /// `pipe2(2)` or `ioctl(FIONBIO)` failed.
    pub fn new() -> io::Result<Self> {
        let (read, write) = rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC)?;
        rustix::io::ioctl_fionbio(&write, true)?;
        Ok(PipeNotifier { read, write })
    }
}

impl Notifier for PipeNotifier {
    fn notify(&self) -> io::Result<()> {
        match retry(|| rustix::io::write(&self.write, &[1u8])) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(()),
            r => r.map(drop),
        }
    }

    fn wait(&self) -> io::Result<()> {
        let mut buf = [0u8; 64];
        retry(|| rustix::io::read(&self.read, &mut buf)).map(drop)
    }

    fn wait_timeout(&self, timeout: Duration) -> io::Result<bool> {
        if !wait_readable(self.read.as_fd(), timeout)? {
            return Ok(false);
        }
        self.wait().map(|()| true)
    }
}

/// Which notifier to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NotifierKind {
    /// [`FutexNotifier`].
    Futex,
    /// [`EventFdNotifier`].
    EventFd,
    /// [`PipeNotifier`].
    Pipe,
}

impl NotifierKind {
    /// Every kind.
    pub const ALL: [NotifierKind; 3] = [
        NotifierKind::Futex,
        NotifierKind::EventFd,
        NotifierKind::Pipe,
    ];

    /// Makes one notifier of this kind.
    ///
    /// # Errors
    ///
    /// The system call that creates it failed.
    pub fn make(self) -> io::Result<Box<dyn Notifier>> {
        Ok(match self {
            NotifierKind::Futex => Box::new(FutexNotifier::default()),
            NotifierKind::EventFd => Box::new(EventFdNotifier::new()?),
            NotifierKind::Pipe => Box::new(PipeNotifier::new()?),
        })
    }

    /// Its name (`futex`, `eventfd`, `pipe`).
    pub fn name(self) -> &'static str {
        match self {
            NotifierKind::Futex => "futex",
            NotifierKind::EventFd => "eventfd",
            NotifierKind::Pipe => "pipe",
        }
    }
}

impl FromStr for NotifierKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "futex" => Ok(NotifierKind::Futex),
            "eventfd" => Ok(NotifierKind::EventFd),
            "pipe" => Ok(NotifierKind::Pipe),
            other => Err(format!(
                "unknown backend `{other}` (use futex, eventfd or pipe)"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    #[cfg_attr(miri, ignore = "system calls")]
    fn a_notification_before_the_wait_is_kept() {
        for kind in NotifierKind::ALL {
            let n = kind.make().unwrap();
            n.notify().unwrap();
            n.wait().unwrap(); // returns at once
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "system calls")]
    fn wakes_a_blocked_waiter() {
        for kind in NotifierKind::ALL {
            let n: Arc<dyn Notifier> = Arc::from(kind.make().unwrap());
            let w = Arc::clone(&n);
            let t = std::thread::spawn(move || w.wait().unwrap());
            std::thread::sleep(Duration::from_millis(20));
            n.notify().unwrap();
            t.join().unwrap();
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "system calls")]
    fn many_notifies_make_one_pending_wakeup_at_least() {
        for kind in NotifierKind::ALL {
            let n = kind.make().unwrap();
            for _ in 0..100_000 {
                n.notify().unwrap(); // a pipe fills up: must not block or fail
            }
            n.wait().unwrap();
        }
    }

    #[test]
    #[cfg_attr(miri, ignore = "system calls")]
    fn a_timed_wait_ends_by_its_notification_or_its_timeout_and_loses_none() {
        for kind in NotifierKind::ALL {
            let n: Arc<dyn Notifier> = Arc::from(kind.make().unwrap());
            // Nothing sent: the timeout ends it.
            let t0 = std::time::Instant::now();
            assert!(
                !n.wait_timeout(Duration::from_millis(5)).unwrap(),
                "{kind:?}"
            );
            assert!(t0.elapsed() >= Duration::from_millis(5), "{kind:?}");
            // Sent before: it returns at once, consuming it.
            n.notify().unwrap();
            assert!(n.wait_timeout(Duration::from_secs(60)).unwrap(), "{kind:?}");
            assert!(
                !n.wait_timeout(Duration::from_millis(1)).unwrap(),
                "{kind:?}"
            );
            // Sent while it sleeps: it wakes long before its timeout.
            let w = Arc::clone(&n);
            let t0 = std::time::Instant::now();
            let t = std::thread::spawn(move || w.wait_timeout(Duration::from_secs(60)).unwrap());
            std::thread::sleep(Duration::from_millis(20));
            n.notify().unwrap();
            assert!(t.join().unwrap(), "{kind:?}");
            assert!(t0.elapsed() < Duration::from_secs(30), "{kind:?}");
            // Sent after a timeout: kept for the next wait.
            assert!(
                !n.wait_timeout(Duration::from_micros(50)).unwrap(),
                "{kind:?}"
            );
            n.notify().unwrap();
            n.wait().unwrap();
        }
    }
}
