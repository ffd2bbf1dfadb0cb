//! The command line's side of writing files: an `--out` folder taken
//! through [`kicklab_report::OutDir`] (refusals naming the flag) and
//! committed only once standard output took the result; a `--save` or
//! `--timeline` file written whole and put in place only when the command
//! succeeded; temporaries removed on SIGINT, SIGTERM and SIGHUP. What is not
//! here: what the files hold (the commands and the libraries).

use std::path::Path;

use kicklab_model::Flag;
use kicklab_report::{OutDir, OutDirError};

use crate::Usage;

/// Takes `dir` (the value of `flag`) for a run of `command`: refused in
/// one line, before any work, where it cannot be used (see
/// [`kicklab_report::OutDir`]); `force` lets an earlier run's files be
/// replaced.
///
/// # Errors
///
/// A [`Usage`] error naming `flag` (exit 2); where the machine ran out of
/// something (disk space, quota, a file-size limit, file descriptors,
/// memory) or the device failed, the same line as a failed write (exit
/// 1): no other folder to choose would mend it.
pub fn out_dir(dir: &Path, flag: Flag, command: &str, force: bool) -> anyhow::Result<OutDir> {
    OutDir::begin(dir, command, force).map_err(|e| {
        let exhausted = matches!(
            &e,
            OutDirError::Io(_, io) if matches!(
                io.raw_os_error(),
                Some(
                    libc::ENOSPC
                        | libc::EDQUOT
                        | libc::EFBIG
                        | libc::EMFILE
                        | libc::ENFILE
                        | libc::ENOMEM
                        | libc::EIO
                )
            )
        );
        let line = format!("{flag}: {e}");
        if exhausted {
            anyhow::anyhow!(line)
        } else {
            Usage(line).into()
        }
    })
}

/// Puts `dir`'s files in place, unless a write to standard output or
/// standard error failed (the staged files are then removed: a run whose
/// printed result was lost leaves nothing either).
///
/// # Errors
///
/// The failed write, or the move ([`OutDirError`], exit 1).
pub fn commit(dir: OutDir) -> anyhow::Result<()> {
    crate::out::check()?;
    dir.commit().map_err(|e: OutDirError| anyhow::anyhow!(e))
}

/// [`commit`], saying first on standard error what lands where (`note`)
/// only where every write so far succeeded: a run whose printed result
/// was lost says only that, and claims no files.
///
/// # Errors
///
/// As [`commit`].
pub fn commit_noting(dir: OutDir, note: &str) -> anyhow::Result<()> {
    crate::out::check()?;
    crate::noteln!("{note}");
    commit(dir)
}

/// Fails (a [`Usage`] naming `flag`) unless `file` can be created, or
/// where it is the file or pipe standard output or standard error
/// already writes (the command's result or notes would be mixed into
/// it, `--timeline /dev/stdout`); checked before any work is done, and
/// leaves no file behind.
///
/// # Errors
///
/// A [`Usage`] error.
pub fn check_out_file(file: &Path, flag: Flag) -> anyhow::Result<()> {
    use std::os::fd::AsFd;
    let streams = [
        (
            std::io::stdout().as_fd().try_clone_to_owned(),
            "standard output, which takes the command's result",
        ),
        (
            std::io::stderr().as_fd().try_clone_to_owned(),
            "standard error, which takes the command's notes",
        ),
    ];
    for (fd, what) in streams {
        if fd.is_ok_and(|fd| is_stream(file, fd)) {
            return Err(Usage(format!(
                "{flag}: {} is {what}; give a file of its own",
                file.display()
            ))
            .into());
        }
    }
    kicklab_report::check_writable(file).map_err(|e| Usage(format!("{flag}: {e}")).into())
}

/// Whether `file` exists and is the file, pipe or socket the stream `fd`
/// writes to (a terminal or `/dev/null` named twice mixes nothing that
/// matters, and is let be).
fn is_stream(file: &Path, fd: std::os::fd::OwnedFd) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let (Ok(named), Ok(stream)) = (std::fs::metadata(file), std::fs::File::from(fd).metadata())
    else {
        return false;
    };
    !stream.file_type().is_char_device()
        && (named.dev(), named.ino()) == (stream.dev(), stream.ino())
}

/// Writes `bytes` to `file` (the value of `flag`) whole, under a
/// temporary name: it is renamed into place by [`commit_saved`] once the
/// command succeeded and its standard output took the result, and removed
/// otherwise; `verb` says so then (`saved p.json`, `drew t.svg`). So a
/// full disk, a signal, a later error or a lost standard output leaves
/// the file that was there, never a truncated one, and a failed command
/// leaves no new file beside its error.
///
/// # Errors
///
/// What failed, naming `flag` and the path (exit 1).
pub fn save(file: &Path, flag: Flag, bytes: &[u8], verb: &'static str) -> anyhow::Result<()> {
    // Two flags naming one file: the second would replace the first.
    let same = |a: &Path| std::path::absolute(a).ok();
    if let Some(other) = saved()
        .iter()
        .find(|s| same(Path::new(&s.shown)) == same(file))
    {
        return Err(Usage(format!(
            "{flag}: {} is also the file of {}; give each its own file",
            file.display(),
            other.flag
        ))
        .into());
    }
    let staged =
        kicklab_report::stage_file(file, bytes).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?;
    saved().push(Saved {
        flag,
        shown: file.display().to_string(),
        verb,
        staged,
    });
    Ok(())
}

/// A file [`save`]d and not yet in place (`staged` is `None` for a
/// device or pipe, written at once).
struct Saved {
    flag: Flag,
    shown: String,
    verb: &'static str,
    staged: Option<kicklab_report::Staged>,
}

fn saved() -> std::sync::MutexGuard<'static, Vec<Saved>> {
    static SAVED: std::sync::Mutex<Vec<Saved>> = std::sync::Mutex::new(Vec::new());
    SAVED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Puts every [`save`]d file in place where `succeeded` (each said on
/// standard error first), or removes them.
///
/// # Errors
///
/// A failed write to the standard streams, or the first move that failed,
/// naming its flag and path (exit 1).
pub fn commit_saved(succeeded: bool) -> anyhow::Result<()> {
    let files = std::mem::take(&mut *saved());
    if !succeeded {
        return Ok(());
    }
    for f in &files {
        crate::noteln!("{} {}", f.verb, f.shown);
    }
    crate::out::check()?;
    for f in files {
        if let Some(staged) = f.staged {
            let flag = f.flag;
            staged
                .commit()
                .map_err(|e| anyhow::anyhow!("{flag}: {e}"))?;
        }
    }
    Ok(())
}

/// Starts a thread that, on SIGINT, SIGTERM or SIGHUP (the terminal
/// closed; left alone where the process was started ignoring it, as
/// `nohup` does), removes every staged folder and temporary file, then
/// ends the process by the signal itself. Without it an interrupted `map`
/// left its 4-8 MB temporary charts behind.
pub fn remove_temporaries_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    // SAFETY: a query only (no new action): `old` is written by the call,
    // which takes a null `act`.
    let hup_ignored = unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(SIGHUP, std::ptr::null(), &raw mut old) == 0
            && old.sa_sigaction == libc::SIG_IGN
    };
    let mut caught = vec![SIGINT, SIGTERM];
    if !hup_ignored {
        caught.push(SIGHUP);
    }
    let Ok(mut signals) = signal_hook::iterator::Signals::new(caught) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("kicklab-signals".into())
        .spawn(move || {
            if let Some(sig) = signals.forever().next() {
                // Held until the end: no write starts or ends meanwhile.
                let _held = kicklab_report::remove_temporaries();
                // Then die of the signal, as the caller (a shell loop,
                // make) expects; exit 128 + sig only if that fails.
                let _ = signal_hook::low_level::emulate_default_handler(sig);
                std::process::exit(128 + sig);
            }
        });
}
