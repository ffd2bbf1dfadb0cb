//! An output folder written whole or not at all: [`OutDir`] stages a run's
//! files in a hidden folder beside the target, locked against a second
//! run, and moves it into place only when everything was written;
//! [`crate::remove_temporaries`] removes whatever is staged (a signal
//! handler's job). What is not here: what goes into the files (the callers), and a
//! single file's atomic write ([`crate::write_atomic`]).
//!
//! The rules, each a refusal before any work is done:
//! - the target must be a folder or not exist (its missing parents are
//!   made, and removed again if the run does not finish);
//! - a target that holds an earlier run's files (the marker
//!   [`MARKER`]) is replaced only when the caller says so (`--force`);
//! - a target holding files that kicklab did not write is never replaced;
//! - a second run writing the same target while the first runs is
//!   refused (an advisory `flock` on a file in the staging folder: it
//!   goes with the process, so a killed run leaves no stale lock).

use std::fs::File;
use std::os::unix::io::AsRawFd as _;
use std::path::{Path, PathBuf};

use crate::temporaries::{forget_temporary, make_registered};

/// The file in every output folder kicklab writes: says which command
/// wrote it, and marks the folder as kicklab's to replace.
pub const MARKER: &str = ".kicklab-output";

/// The lock file inside a staging folder.
const LOCK: &str = ".lock";

/// Why an output folder cannot be used; each a sentence naming the path.
#[derive(Debug, thiserror::Error)]
pub enum OutDirError {
    /// The target exists and is not a folder.
    #[error("{0} exists and is not a directory")]
    NotADirectory(String),
    /// The target holds an earlier run's files.
    #[error("{0} holds the files of an earlier run ({1}); add {force} to replace them, or choose another folder", force = kicklab_model::Flag::Force)]
    EarlierRun(String, String),
    /// The target holds files kicklab did not write.
    #[error("{0} holds files kicklab did not write; choose an empty or new folder")]
    Foreign(String),
    /// Another run is writing the same target.
    #[error("another kicklab run is writing {0} now; wait for it or choose another folder")]
    Busy(String),
    /// A file-system call failed.
    #[error("cannot write {0}: {1}")]
    Io(String, std::io::Error),
}

/// A run's output folder while it is being written; see the module doc.
/// Dropped without [`OutDir::commit`], it removes the staged files and any
/// parent folder it made.
#[derive(Debug)]
pub struct OutDir {
    target: PathBuf,
    staging: PathBuf,
    made_parents: Vec<PathBuf>,
    _lock: File,
    committed: bool,
    replace: bool,
}

impl OutDir {
    /// Prepares `target` for a run of `command` (`"kicklab sweep"`, say),
    /// `replace` saying whether an earlier run's files may be replaced.
    ///
    /// # Errors
    ///
    /// [`OutDirError`]: see the module doc.
    pub fn begin(target: &Path, command: &str, replace: bool) -> Result<OutDir, OutDirError> {
        let shown = kicklab_model::shown_path(target);
        let io = |e| OutDirError::Io(shown.clone(), e);
        // A link to a folder: the folder it names is the target (the
        // link stays as it is).
        let resolved;
        let target = if target.is_symlink() {
            resolved = std::fs::canonicalize(target).map_err(io)?;
            resolved.as_path()
        } else {
            target
        };
        if target.exists() && !target.is_dir() {
            return Err(OutDirError::NotADirectory(shown));
        }
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .filter(|n| n != ".." && n != ".")
            .ok_or_else(|| {
                OutDirError::Io(
                    shown.clone(),
                    std::io::Error::other("name a folder, not . or .."),
                )
            })?;
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let staging = parent.join(format!(".{name}.kicklab-staging"));
        // Made and registered in one step: a signal at any moment finds
        // either nothing made or everything registered for removal.
        let (made_parents, lock) = make_registered(|| {
            let mut made = Guard(make_parents(&parent).map_err(io)?);
            if target.is_dir() {
                check_placeable(target, &parent, &shown)?;
                check_replaceable(target, &shown, replace)?;
            }
            let lock = claim(&staging, &shown)?;
            let made = std::mem::take(&mut made.0);
            let mut registered = made.clone();
            registered.push(staging.clone());
            Ok::<_, OutDirError>(((made, lock), registered))
        })?;
        let out = OutDir {
            target: target.to_path_buf(),
            staging,
            made_parents,
            _lock: lock,
            committed: false,
            replace,
        };
        crate::write_atomic(&out.staging.join(MARKER), format!("{command}\n"))
            .map_err(|e| write_failed(&shown, e))?;
        Ok(out)
    }

    /// Where the run writes its files (the staging folder).
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.staging
    }

    /// The folder the files will be in once committed.
    #[must_use]
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Moves the staged files into place: the target is the new run's
    /// files alone (an earlier run's folder, if any, is swapped out whole
    /// and removed).
    ///
    /// # Errors
    ///
    /// [`OutDirError::Io`] where the move failed (the staged files are
    /// then removed and the target is as it was).
    pub fn commit(mut self) -> Result<(), OutDirError> {
        let shown = self.target.display().to_string();
        // The marker lists the files, so that a later --force replaces
        // only a folder that holds nothing else.
        let mut names: Vec<String> = std::fs::read_dir(&self.staging)
            .map_err(|e| OutDirError::Io(shown.clone(), e))?
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n != LOCK && n != MARKER)
            .collect();
        names.sort();
        let marker = self.staging.join(MARKER);
        let command = std::fs::read_to_string(&marker).unwrap_or_default();
        let command = command.lines().next().unwrap_or("kicklab").to_string();
        crate::write_atomic(&marker, format!("{command}\n{}\n", names.join("\n")))
            .map_err(|e| write_failed(&shown, e))?;
        let _ = std::fs::remove_file(self.staging.join(LOCK));
        let staging = self.staging.clone();
        let target = self.target.clone();
        let replace = self.replace;
        let moved = crate::temporaries::settle(&staging, || {
            if !staging.is_dir() {
                return Err(std::io::Error::other("the run was stopped"));
            }
            if target.is_dir() {
                // Checked again: files may have come since the run began.
                let empty = std::fs::read_dir(&target)?.next().is_none();
                if !empty {
                    check_replaceable(&target, &target.display().to_string(), replace)
                        .map_err(|e| std::io::Error::other(e.to_string()))?;
                }
                exchange(&staging, &target)
            } else {
                std::fs::rename(&staging, &target)
            }
        });
        moved.map_err(|e| OutDirError::Io(shown, e))?;
        // The staging path now holds the earlier run's files, if any
        // (registered until removed).
        let _ = std::fs::remove_dir_all(&self.staging);
        forget_temporary(&self.staging);
        // The parents it made now hold the run's folder: kept.
        for p in &self.made_parents {
            forget_temporary(p);
        }
        self.committed = true;
        Ok(())
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        if self.committed {
            return;
        }
        remove_staging(&self.staging);
        forget_temporary(&self.staging);
        remove_made(&self.made_parents);
        for p in &self.made_parents {
            forget_temporary(p);
        }
    }
}

/// Removes a staging folder; where that fails for want of a file
/// descriptor (`remove_dir_all` opens the folder, and a process at its
/// limit of open files cannot), the files every run puts there first,
/// by name, then the folder.
fn remove_staging(staging: &Path) {
    if std::fs::remove_dir_all(staging).is_err() {
        for name in [LOCK, MARKER] {
            let _ = std::fs::remove_file(staging.join(name));
        }
        let _ = std::fs::remove_dir(staging);
    }
}

/// Parent folders made for a target, removed (when still empty) unless
/// handed over.
struct Guard(Vec<PathBuf>);

impl Drop for Guard {
    fn drop(&mut self) {
        remove_made(&self.0);
    }
}

fn remove_made(made: &[PathBuf]) {
    // Innermost first; a folder something else wrote into stays.
    for d in made.iter().rev() {
        let _ = std::fs::remove_dir(d);
    }
}

/// Makes `dir` and its missing parents; returns those it made, outermost
/// first. A failure removes what it made.
fn make_parents(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut missing = Vec::new();
    let mut d = Some(dir);
    while let Some(p) = d {
        if p.as_os_str().is_empty() || p.exists() {
            break;
        }
        missing.push(p.to_path_buf());
        d = p.parent();
    }
    missing.reverse();
    let mut made = Vec::new();
    for p in missing {
        if let Err(e) = std::fs::create_dir(&p) {
            remove_made(&made);
            return Err(e);
        }
        made.push(p);
    }
    Ok(made)
}

/// Fails unless the existing folder `target` is empty, or holds an earlier
/// run's files and `replace` is set.
fn check_replaceable(target: &Path, shown: &str, replace: bool) -> Result<(), OutDirError> {
    let io = |e| OutDirError::Io(shown.to_string(), e);
    let mut entries = std::fs::read_dir(target).map_err(io)?;
    if entries.next().is_none() {
        return Ok(());
    }
    let Ok(by) = std::fs::read_to_string(target.join(MARKER)) else {
        return Err(OutDirError::Foreign(shown.to_string()));
    };
    // A marker kicklab did not write (its first line names the command
    // that wrote it) marks nothing.
    if !by.lines().next().is_some_and(|l| l.starts_with("kicklab")) {
        return Err(OutDirError::Foreign(shown.to_string()));
    }
    // The files the earlier run wrote (listed in its marker): anything
    // else in the folder is someone else's, and keeps it (a marker that
    // lists nothing claims nothing but itself).
    let listed: Vec<&str> = by.lines().skip(1).filter(|l| !l.is_empty()).collect();
    for e in std::fs::read_dir(target)
        .map_err(io)?
        .filter_map(Result::ok)
    {
        let n = e.file_name().to_string_lossy().into_owned();
        if n != MARKER && !listed.contains(&n.as_str()) {
            return Err(OutDirError::Foreign(shown.to_string()));
        }
    }
    if replace {
        Ok(())
    } else {
        let by = by.lines().next().unwrap_or("kicklab").trim().to_string();
        Err(OutDirError::EarlierRun(shown.to_string(), by))
    }
}

/// Fails where the staging folder beside `target` could not be moved onto
/// it: `target` a mount point (another file system than its parent's), or
/// a parent that cannot be written. Both known before any work.
fn check_placeable(target: &Path, parent: &Path, shown: &str) -> Result<(), OutDirError> {
    use std::os::unix::fs::MetadataExt as _;
    let io = |e| OutDirError::Io(shown.to_string(), e);
    let (t, p) = (
        std::fs::metadata(target).map_err(io)?,
        std::fs::metadata(parent).map_err(io)?,
    );
    if t.dev() != p.dev() {
        return Err(OutDirError::Io(
            shown.to_string(),
            std::io::Error::other(format!(
                "a mount point: kicklab writes a folder beside {} and moves it into place; \
                 name a folder inside it (e.g. OUT/run1)",
                kicklab_model::Flag::Out
            )),
        ));
    }
    let probe = parent.join(format!(".kicklab-probe-{}", std::process::id()));
    match std::fs::create_dir(&probe) {
        Ok(()) => {
            let _ = std::fs::remove_dir(&probe);
            Ok(())
        }
        Err(e) => Err(OutDirError::Io(
            shown.to_string(),
            std::io::Error::other(format!(
                "its parent folder cannot be written ({e}): kicklab writes a folder beside {} \
                 and moves it into place; name a folder inside it (e.g. OUT/run1)",
                kicklab_model::Flag::Out
            )),
        )),
    }
}

/// Makes the staging folder and locks it; a folder left by a run that
/// was killed (its lock free) is cleared first, one held by a live run
/// is [`OutDirError::Busy`].
fn claim(staging: &Path, shown: &str) -> Result<File, OutDirError> {
    let io = |e| OutDirError::Io(shown.to_string(), e);
    for _ in 0..3 {
        match std::fs::create_dir(staging) {
            Ok(()) => {
                let lock = File::create(staging.join(LOCK)).map_err(|e| {
                    let _ = std::fs::remove_dir(staging);
                    io(e)
                })?;
                if !try_lock(&lock) {
                    // Another run cleared a stale folder and made its own.
                    return Err(OutDirError::Busy(shown.to_string()));
                }
                return Ok(lock);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                match File::open(staging.join(LOCK)) {
                    Ok(f) if !try_lock(&f) => return Err(OutDirError::Busy(shown.to_string())),
                    // Locked by nobody: a killed run's leftovers.
                    Ok(_) => {
                        let _ = std::fs::remove_dir_all(staging);
                    }
                    // No lock file: being committed (or made) right now.
                    Err(_) => return Err(OutDirError::Busy(shown.to_string())),
                }
            }
            Err(e) => return Err(io(e)),
        }
    }
    Err(OutDirError::Busy(shown.to_string()))
}

/// An exclusive, non-blocking `flock` on `f`.
fn try_lock(f: &File) -> bool {
    // SAFETY: flock on a descriptor this process owns; no memory involved.
    unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

/// Swaps two folders in one step (`renameat2` with `RENAME_EXCHANGE`), or,
/// where the file system cannot, moves the old one aside first.
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt as _;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|_| std::io::Error::other("a path holds a NUL byte"))
    };
    let (ca, cb) = (c(a)?, c(b)?);
    // SAFETY: two valid NUL-terminated paths relative to the working
    // directory; renameat2 reads them and touches no other memory.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if !matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) {
        return Err(e);
    }
    // Aside, in, and the old one where `a` was (the caller removes it).
    let aside = a.with_extension("old");
    std::fs::rename(b, &aside)?;
    if let Err(e) = std::fs::rename(a, b) {
        let _ = std::fs::rename(&aside, b);
        return Err(e);
    }
    std::fs::rename(&aside, a)
}

/// A failed write of the marker, with the system's error kept as it was
/// (a front end tells a full disk from a folder it cannot use by it).
fn write_failed(shown: &str, e: crate::ReportError) -> OutDirError {
    match e {
        crate::ReportError::Io(file, io) => OutDirError::Io(format!("{shown}: writing {file}"), io),
        other => OutDirError::Io(shown.to_string(), std::io::Error::other(other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("kicklab-outdir-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn names(d: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn a_committed_run_is_in_place_and_a_dropped_one_leaves_nothing() {
        let r = root("commit");
        let target = r.join("a/b/out");
        let o = OutDir::begin(&target, "kicklab test", false).unwrap();
        std::fs::write(o.path().join("x.csv"), "1").unwrap();
        o.commit().unwrap();
        assert_eq!(names(&target), [MARKER, "x.csv"]);
        assert_eq!(names(&r.join("a/b")), ["out"], "no staging left");

        let other = r.join("c/d/out");
        let o = OutDir::begin(&other, "kicklab test", false).unwrap();
        std::fs::write(o.path().join("x.csv"), "1").unwrap();
        drop(o);
        assert_eq!(names(&r), ["a"], "the parents it made are gone too");
        let _ = std::fs::remove_dir_all(&r);
    }

    #[test]
    fn an_earlier_run_is_replaced_whole_only_when_asked() {
        let r = root("replace");
        let target = r.join("out");
        let o = OutDir::begin(&target, "kicklab first", false).unwrap();
        std::fs::write(o.path().join("old.svg"), "old").unwrap();
        o.commit().unwrap();
        let e = OutDir::begin(&target, "kicklab second", false).unwrap_err();
        assert!(e.to_string().contains("kicklab first"), "{e}");
        assert!(
            e.to_string()
                .contains(&kicklab_model::Flag::Force.to_string()),
            "{e}"
        );
        let o = OutDir::begin(&target, "kicklab second", true).unwrap();
        std::fs::write(o.path().join("new.svg"), "new").unwrap();
        o.commit().unwrap();
        assert_eq!(names(&target), [MARKER, "new.svg"], "no stale chart");
        assert_eq!(names(&r), ["out"]);
        let _ = std::fs::remove_dir_all(&r);
    }

    #[test]
    fn a_folder_of_someone_elses_files_is_never_replaced() {
        let r = root("foreign");
        std::fs::write(r.join("notes.txt"), "mine").unwrap();
        let e = OutDir::begin(&r, "kicklab test", true).unwrap_err();
        assert!(matches!(e, OutDirError::Foreign(_)), "{e}");
        assert_eq!(names(&r), ["notes.txt"]);
        let _ = std::fs::remove_dir_all(&r);
    }

    #[test]
    fn a_marker_that_lists_nothing_or_is_not_kicklabs_claims_no_file() {
        let r = root("marker");
        std::fs::write(r.join("precious.txt"), "mine").unwrap();
        for marker in ["", "kicklab sweep\n", "garbage\nprecious.txt\n"] {
            std::fs::write(r.join(MARKER), marker).unwrap();
            let e = OutDir::begin(&r, "kicklab test", true).unwrap_err();
            assert!(matches!(e, OutDirError::Foreign(_)), "{marker:?}: {e}");
            assert_eq!(names(&r), [MARKER, "precious.txt"], "{marker:?}");
        }
        // A marker alone is an earlier run's empty folder.
        std::fs::remove_file(r.join("precious.txt")).unwrap();
        std::fs::write(r.join(MARKER), "kicklab sweep\n").unwrap();
        let o = OutDir::begin(&r, "kicklab test", true).unwrap();
        o.commit().unwrap();
        let _ = std::fs::remove_dir_all(&r);
    }

    #[test]
    fn a_second_run_on_the_same_folder_is_refused_and_a_killed_ones_leftovers_cleared() {
        let r = root("busy");
        let target = r.join("out");
        let first = OutDir::begin(&target, "kicklab one", false).unwrap();
        let e = OutDir::begin(&target, "kicklab two", false).unwrap_err();
        assert!(matches!(e, OutDirError::Busy(_)), "{e}");
        drop(first);
        // A staging folder whose lock nobody holds (its run was killed).
        let stale = r.join(".out.kicklab-staging");
        std::fs::create_dir(&stale).unwrap();
        std::fs::write(stale.join(LOCK), "").unwrap();
        std::fs::write(stale.join("half.csv"), "1,").unwrap();
        let o = OutDir::begin(&target, "kicklab three", false).unwrap();
        assert_eq!(names(o.path()), [".kicklab-output", LOCK]);
        o.commit().unwrap();
        let _ = std::fs::remove_dir_all(&r);
    }

    #[test]
    fn a_file_in_the_way_is_refused() {
        let r = root("file");
        std::fs::write(r.join("out"), "x").unwrap();
        let e = OutDir::begin(&r.join("out"), "kicklab test", false).unwrap_err();
        assert!(matches!(e, OutDirError::NotADirectory(_)), "{e}");
        let _ = std::fs::remove_dir_all(&r);
    }

    #[test]
    fn a_staging_folder_is_registered_until_committed() {
        let r = root("temps");
        let o = OutDir::begin(&r.join("out"), "kicklab test", false).unwrap();
        let staged = o.path().to_path_buf();
        assert!(crate::temporaries::is_registered(&staged));
        o.commit().unwrap();
        assert!(!crate::temporaries::is_registered(&staged));
        // Replacing an earlier run: the swapped-out files are registered
        // until removed, then nothing is.
        let o = OutDir::begin(&r.join("out"), "kicklab test", true).unwrap();
        assert!(crate::temporaries::is_registered(&staged));
        o.commit().unwrap();
        assert!(!staged.exists());
        assert!(!crate::temporaries::is_registered(&staged));
        let _ = std::fs::remove_dir_all(&r);
    }
}
