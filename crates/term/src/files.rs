//! The command line's side of writing files: an `--out` folder taken
//! through [`kicklab_report::OutDir`] (refusals naming the flag) and
//! committed only once standard output took the result; a `--save` file
//! written whole; temporaries removed on SIGINT and SIGTERM. What is not
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
/// A [`Usage`] error naming `flag`.
pub fn out_dir(dir: &Path, flag: Flag, command: &str, force: bool) -> anyhow::Result<OutDir> {
    OutDir::begin(dir, command, force).map_err(|e| Usage(format!("{flag}: {e}")).into())
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

/// Fails (a [`Usage`] naming `flag`) unless `file` can be created; checked
/// before any work is done, and leaves no file behind.
///
/// # Errors
///
/// A [`Usage`] error.
pub fn check_out_file(file: &Path, flag: Flag) -> anyhow::Result<()> {
    kicklab_report::check_writable(file).map_err(|e| Usage(format!("{flag}: {e}")).into())
}

/// Writes `bytes` to `file` (the value of `flag`) whole: through a
/// temporary file renamed into place, so that a full disk or a signal
/// leaves the file that was there, never a truncated one.
///
/// # Errors
///
/// What failed, naming `flag` and the path (exit 1).
pub fn save(file: &Path, flag: Flag, bytes: &[u8]) -> anyhow::Result<()> {
    kicklab_report::write_atomic(file, bytes).map_err(|e| anyhow::anyhow!("{flag}: {e}"))
}

/// Starts a thread that, on SIGINT or SIGTERM, removes every staged folder
/// and temporary file, then ends the process by the signal itself. Without it an interrupted `map` left its 4-8 MB
/// temporary charts behind.
pub fn remove_temporaries_on_signals() {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
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
