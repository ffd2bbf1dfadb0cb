//! Files and folders in flight (a staged output folder, a file being
//! written under a temporary name), registered so that a signal handler
//! can remove them before the process ends: [`remove_temporaries`]. What
//! is not here: writing them ([`crate::write_atomic`], `OutDir`).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Paths to remove if the process is stopped by a signal: staging folders
/// and temporary files in flight.
static TEMPORARIES: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn temporaries() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    TEMPORARIES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Registers `path` as a temporary: [`remove_temporaries`] removes it.
pub fn register_temporary(path: &Path) {
    temporaries().push(path.to_path_buf());
}

/// Runs `make` (which makes files or folders) with the registry locked
/// and registers the paths it returns: a signal's clean-up runs wholly
/// before anything is made or wholly after it is registered, never
/// between the two.
pub fn make_registered<T, E>(make: impl FnOnce() -> Result<(T, Vec<PathBuf>), E>) -> Result<T, E> {
    let mut held = temporaries();
    let (out, made) = make()?;
    held.extend(made);
    Ok(out)
}

/// Unregisters `path` (moved into place, or removed by its owner).
pub fn forget_temporary(path: &Path) {
    temporaries().retain(|p| p != path);
}

/// Runs `step` (a move into place) with the registry locked, then
/// unregisters `path` if nothing is left there: a signal's clean-up runs
/// wholly before (and the step finds nothing to move) or wholly after
/// (and finds nothing to remove, or what the move left at `path`: an
/// earlier run's files swapped out), never in the middle of the move.
pub fn settle<T>(path: &Path, step: impl FnOnce() -> T) -> T {
    let mut held = temporaries();
    let out = step();
    if !path.exists() {
        held.retain(|p| p != path);
    }
    out
}

/// Whether `path` is registered.
#[must_use]
pub fn is_registered(path: &Path) -> bool {
    temporaries().iter().any(|p| p == path)
}

/// Registrations held back while the process ends: returned by
/// [`remove_temporaries`], held until exit.
#[must_use = "hold it until the process exits: no new temporary appears meanwhile"]
pub struct TemporariesRemoved(#[allow(dead_code)] std::sync::MutexGuard<'static, Vec<PathBuf>>);

/// Removes every registered temporary (folders with what is in them):
/// called on SIGINT or SIGTERM before the process exits, so that an
/// interrupted run leaves nothing behind. Other threads may be writing
/// meanwhile: the registry stays locked (a write that starts, or one that
/// ends, waits on it), and the removal is repeated until nothing it
/// names is left (a write in flight finishes into a folder being
/// removed). The caller holds the returned guard until it exits.
pub fn remove_temporaries() -> TemporariesRemoved {
    let held = temporaries();
    for _ in 0..100 {
        for p in held.iter() {
            if p.is_dir() {
                let _ = std::fs::remove_dir_all(p);
            } else {
                let _ = std::fs::remove_file(p);
            }
        }
        if held.iter().all(|p| !p.exists()) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    TemporariesRemoved(held)
}
