//! [`CpuLock`]: one kicklab process at a time runs real pairs on the CPUs
//! they pin. Two runs started at once on the same CPUs took each other's
//! CPU time, and a watchdog could not tell that from a hang; now the
//! second waits for the first (saying so) and both finish. An advisory
//! `flock` on a file in the temporary folder: it goes with the process, so
//! a killed run leaves no stale lock. Every entry point that runs real
//! pairs holds it ([`hold`]) from once its input is checked to its end. What is not here: the pinning
//! ([`crate::clock::pin`]) and the watchdogs (`party`).

use std::fs::File;
use std::io::{Read as _, Seek as _, Write as _};
use std::os::unix::io::AsRawFd as _;
use std::path::PathBuf;

/// Held while a process runs real pairs; released when dropped (or when
/// the process ends).
#[derive(Debug)]
pub struct CpuLock {
    _file: File,
}

/// The lock file: `kicklab-cpus.lock` in the temporary folder.
#[must_use]
pub fn lock_path() -> PathBuf {
    std::env::temp_dir().join("kicklab-cpus.lock")
}

impl CpuLock {
    /// Takes the lock, waiting for the process that holds it; `waiting` is
    /// told (with that process's id, where it wrote one) before the wait.
    ///
    /// # Errors
    ///
    /// The lock file could not be opened or locked.
    pub fn acquire(waiting: impl FnOnce(Option<u32>)) -> std::io::Result<CpuLock> {
        use std::os::unix::fs::OpenOptionsExt as _;
        // Never through a link; readable and writable by every user (the
        // umask would leave a second user's runs locked out).
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o666)
            .custom_flags(libc::O_NOFOLLOW)
            .open(lock_path())?;
        // SAFETY: fchmod on a descriptor this process owns.
        let _ = unsafe { libc::fchmod(file.as_raw_fd(), 0o666) };
        if !flock(&file, libc::LOCK_EX | libc::LOCK_NB)? {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            waiting(holder.trim().parse().ok());
            flock(&file, libc::LOCK_EX)?;
        }
        // Who holds it, for the next one's note: a fixed width written
        // over the last (no truncation).
        let _ = file.rewind();
        let _ = write!(file, "{:<12}", std::process::id());
        Ok(CpuLock { _file: file })
    }
}

/// The process's lock while any of its threads runs real pairs, and how
/// many do.
static HELD: std::sync::Mutex<(usize, Option<CpuLock>)> = std::sync::Mutex::new((0, None));
/// Told before a wait for another process (set by the front end).
static ON_WAIT: std::sync::OnceLock<fn(Option<u32>)> = std::sync::OnceLock::new();

/// Sets what [`hold`] says before it waits for another process (the
/// binary prints a note); once per process.
pub fn on_wait(say: fn(Option<u32>)) {
    let _ = ON_WAIT.set(say);
}

/// Told, once per process, when the lock file cannot be used and runs go
/// on unlocked (set by the front end).
static ON_UNLOCKED: std::sync::OnceLock<fn(&str)> = std::sync::OnceLock::new();

/// Sets what [`hold`] says when the lock file cannot be opened or locked
/// (a temporary folder that is missing, read-only or full): the run goes
/// on, but another kicklab process started beside it will not wait for
/// it. `say` gets the sentence that tells the user (the binary prints it
/// as a warning, the Python package raises it as one); once per process.
pub fn on_unlocked(say: fn(&str)) {
    let _ = ON_UNLOCKED.set(say);
}

fn unlocked(why: &std::io::Error) -> String {
    format!(
        "a kicklab run started beside this one will not wait for it: the lock \
         file {} cannot be used ({why}); point TMPDIR at a writable folder",
        kicklab_model::shown_path(&lock_path())
    )
}

fn held() -> std::sync::MutexGuard<'static, (usize, Option<CpuLock>)> {
    HELD.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The CPUs held for one real run of this process; dropped, the last one
/// of the process lets another process have them.
#[derive(Debug)]
#[must_use = "the CPUs are held while this lives"]
pub struct Held(());

impl Drop for Held {
    fn drop(&mut self) {
        let mut h = held();
        h.0 = h.0.saturating_sub(1);
        if h.0 == 0 {
            h.1 = None;
        }
    }
}

/// Holds the CPU lock for one real run, waiting for another process that
/// holds it. Runs of one process (its threads, a run inside a calibration)
/// share it: the lock is taken by the first and let go with the last, so
/// that a process that spawns kicklab between its own runs (a script, a
/// test) never waits on itself.
///
/// # Errors
///
/// None today: a lock file that cannot be opened or locked lets the run
/// go on unlocked. (A `Result` so that callers need not change if that
/// ever becomes an error.)
pub fn hold() -> Result<Held, crate::TestbedError> {
    let mut h = held();
    if h.0 == 0 {
        let say = ON_WAIT.get().copied();
        // A lock file that cannot be used (another user's, a link in its
        // place, a temporary folder that is not there): the run goes on
        // unlocked rather than not at all, and says so once.
        h.1 = match CpuLock::acquire(|pid| {
            if let Some(say) = say {
                say(pid);
            }
        }) {
            Ok(lock) => Some(lock),
            Err(why) => {
                static SAID: std::sync::Once = std::sync::Once::new();
                if let Some(say) = ON_UNLOCKED.get() {
                    SAID.call_once(|| say(&unlocked(&why)));
                }
                None
            }
        };
    }
    h.0 += 1;
    Ok(Held(()))
}

/// `flock(2)`: `Ok(false)` where a non-blocking lock is held elsewhere.
fn flock(f: &File, op: libc::c_int) -> std::io::Result<bool> {
    loop {
        // SAFETY: flock on a descriptor this process owns; no memory
        // is involved.
        if unsafe { libc::flock(f.as_raw_fd(), op) } == 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => {}
            Some(libc::EWOULDBLOCK) => return Ok(false),
            _ => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_one_process_share_the_lock_and_the_last_lets_it_go() {
        let a = hold().unwrap();
        let b = hold().unwrap();
        assert_eq!(held().0, 2);
        drop(a);
        assert!(held().1.is_some(), "still held by the second");
        drop(b);
        assert!(held().1.is_none(), "let go with the last");
    }

    #[test]
    fn a_second_taker_waits_for_the_first_and_learns_its_pid() {
        let first = CpuLock::acquire(|_| {}).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let h = std::thread::spawn(move || {
            let mut told = None;
            let _second = CpuLock::acquire(|pid| told = Some(pid)).unwrap();
            tx.send(told).unwrap();
        });
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(rx.try_recv().is_err(), "the second waits");
        drop(first);
        let told = rx.recv().unwrap();
        h.join().unwrap();
        assert_eq!(told, Some(Some(std::process::id())));
    }
}
