//! Writing files so that a reader, or an interrupted run, never sees half
//! of one: [`write_atomic`]; and checking, before the work that fills
//! one, that it can be written: [`check_writable`].

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::ReportError;

/// The temporary name `path` is written under before the rename: a hidden
/// `.NAME.PID.tmp` in the same directory (same file system).
fn tmp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(|| "out".into(), |n| n.to_string_lossy().into_owned());
    path.with_file_name(format!(".{name}.{}.tmp", std::process::id()))
}

/// Fails unless `file` can be created or appended to, leaving nothing
/// behind that was not there: checked before the work that fills it (a
/// calibration's seconds), so that a bad path is refused first. The
/// message names the path: `... is a directory`, `cannot write ...: why`.
///
/// # Errors
///
/// What is wrong, in words.
pub fn check_writable(file: &Path) -> Result<(), String> {
    let shown = kicklab_model::shown_path(file);
    if file.is_dir() {
        return Err(format!("{} is a directory", shown));
    }
    // A link whose file does not exist yet (dangling): the open makes the
    // file it names, and that file, not the link, is what is removed.
    let existed = file.exists();
    let mut open = std::fs::OpenOptions::new();
    open.append(true).create(true);
    // Not blocking: a FIFO that nobody reads would hold the open for
    // ever; refused instead (ENXIO), and one with a reader is taken.
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut open, libc::O_NONBLOCK);
    open.open(file).map_err(|e| {
        #[cfg(unix)]
        let no_reader = e.raw_os_error() == Some(libc::ENXIO);
        #[cfg(not(unix))]
        let no_reader = false;
        if no_reader {
            format!("cannot write {}: a FIFO that nothing reads", shown)
        } else {
            format!("cannot write {}: {e}", shown)
        }
    })?;
    if !existed {
        let made = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
        let _ = std::fs::remove_file(made);
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file in the same directory,
/// flushed to disk and then renamed into place: `path` holds either its old
/// content or all of the new one, never a truncated file. The temporary
/// file is removed if anything fails. A symbolic link is followed (the file
/// it names is replaced, the link stays); a path that is no regular file
/// (`/dev/stdout`, `/dev/null`, a FIFO) is written to as it is, since
/// renaming over it would replace the device or pipe with a file.
///
/// # Errors
///
/// [`ReportError::Io`] naming `path`.
pub fn write_atomic(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), ReportError> {
    match stage_file(path, bytes)? {
        Some(staged) => staged.commit(),
        None => Ok(()),
    }
}

/// A file written whole under a temporary name beside its path, waiting
/// to be renamed into place ([`Staged::commit`]); dropped uncommitted, the
/// temporary file is removed and the path keeps what it held.
#[derive(Debug)]
pub struct Staged {
    tmp: PathBuf,
    path: PathBuf,
}

impl Staged {
    /// Renames the file into place.
    ///
    /// # Errors
    ///
    /// [`ReportError::Io`] naming the path.
    pub fn commit(self) -> Result<(), ReportError> {
        let moved = std::fs::rename(&self.tmp, &self.path);
        moved.map_err(|e| ReportError::Io(self.path.display().to_string(), e))
        // Drop removes the temporary name where the rename failed.
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.tmp);
        crate::temporaries::forget_temporary(&self.tmp);
    }
}

/// The first half of [`write_atomic`]: `bytes` written whole and flushed
/// under a temporary name (registered, so that a signal removes it), to
/// be renamed into place by [`Staged::commit`]. A path that is no regular
/// file is written to at once (`None`: nothing to commit).
///
/// # Errors
///
/// [`ReportError::Io`] naming `path`.
pub fn stage_file(path: &Path, bytes: impl AsRef<[u8]>) -> Result<Option<Staged>, ReportError> {
    let err = |e| ReportError::Io(path.display().to_string(), e);
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() && !m.is_dir() => {
            return std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|mut f| {
                    f.write_all(bytes.as_ref())?;
                    f.flush()
                })
                .map(|()| None)
                .map_err(err);
        }
        Ok(m) if m.is_file() && path.is_symlink() => {
            let target = std::fs::canonicalize(path).map_err(err)?;
            return stage_file(&target, bytes);
        }
        // A link to a file that does not exist yet: that file is written
        // (the link stays, and now names it).
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && path.is_symlink() => {
            let to = std::fs::read_link(path).map_err(err)?;
            let target = path.parent().map_or_else(|| to.clone(), |d| d.join(&to));
            if target != path {
                return stage_file(&target, bytes);
            }
        }
        // Not there and no link: made. Anything else (a loop of links, a
        // folder that cannot be searched) is what stops the write.
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(err(e)),
        _ => {}
    }
    let staged = Staged {
        tmp: tmp_path(path),
        path: path.to_path_buf(),
    };
    crate::temporaries::register_temporary(&staged.tmp);
    let written = (|| {
        let mut f = std::fs::File::create(&staged.tmp)?;
        f.write_all(bytes.as_ref())?;
        f.sync_all()
    })();
    // On failure `staged` drops: the temporary name is removed.
    written.map(|()| Some(staged)).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("kicklab-report-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_device_is_written_to_and_a_link_is_followed_never_replaced() {
        let d = dir("devices");
        // A FIFO stands for any file that is no regular one.
        let fifo = d.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let reader = {
                let fifo = fifo.clone();
                std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
            };
            write_atomic(&fifo, "through").unwrap();
            assert_eq!(reader.join().unwrap(), "through");
            assert!(!std::fs::metadata(&fifo).unwrap().is_file(), "still a FIFO");
        }
        // A full device refuses the bytes: an error, the device kept.
        if Path::new("/dev/full").exists() {
            assert!(write_atomic(Path::new("/dev/full"), "x").is_err());
            assert!(!std::fs::metadata("/dev/full").unwrap().is_file());
        }
        let real = d.join("real.json");
        std::fs::write(&real, "old").unwrap();
        let link = d.join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        write_atomic(&link, "new").unwrap();
        assert!(link.is_symlink(), "the link stays a link");
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "new");
        // A link to a file not there yet: checking it leaves the link as it
        // was and makes nothing; writing it makes the file it names.
        let ahead = d.join("ahead.json");
        std::os::unix::fs::symlink("later.json", &ahead).unwrap();
        check_writable(&ahead).unwrap();
        assert!(ahead.is_symlink() && !d.join("later.json").exists());
        write_atomic(&ahead, "made").unwrap();
        assert!(ahead.is_symlink(), "the link stays a link");
        assert_eq!(
            std::fs::read_to_string(d.join("later.json")).unwrap(),
            "made"
        );
        // A loop of links is an error, not a recursion.
        std::os::unix::fs::symlink("loop-b", d.join("loop-a")).unwrap();
        std::os::unix::fs::symlink("loop-a", d.join("loop-b")).unwrap();
        assert!(write_atomic(&d.join("loop-a"), "x").is_err());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn writes_replaces_and_leaves_no_temporary() {
        let d = dir("atomic");
        let f = d.join("a.svg");
        write_atomic(&f, "<svg>1</svg>").unwrap();
        write_atomic(&f, b"<svg>22</svg>").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "<svg>22</svg>");
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["a.svg"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_failed_write_keeps_the_old_file_whole() {
        let d = dir("atomic-fail");
        let f = d.join("a.csv");
        write_atomic(&f, "old,complete\n").unwrap();
        // Make the temporary name unusable: the write must fail before
        // touching the target.
        std::fs::create_dir(tmp_path(&f)).unwrap();
        let e = write_atomic(&f, "new").unwrap_err();
        assert!(e.to_string().contains("a.csv"), "{e}");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "old,complete\n");
        std::fs::remove_dir_all(&d).unwrap();
        // A missing directory is an error too, naming the file.
        assert!(write_atomic(&d.join("x.svg"), "x").is_err());
    }

    #[test]
    fn a_staged_file_appears_only_when_committed() {
        let d = dir("staged");
        let f = d.join("p.json");
        std::fs::write(&f, "old").unwrap();
        let staged = stage_file(&f, "new").unwrap().unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "old");
        assert!(crate::temporaries::is_registered(&tmp_path(&f)));
        drop(staged);
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "old");
        assert!(!tmp_path(&f).exists());
        assert!(!crate::temporaries::is_registered(&tmp_path(&f)));
        stage_file(&f, "new").unwrap().unwrap().commit().unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new");
        let names: Vec<_> = std::fs::read_dir(&d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["p.json"]);
        std::fs::remove_dir_all(&d).unwrap();
    }
}
