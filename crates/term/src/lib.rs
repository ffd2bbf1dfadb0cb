//! How the kicklab binary meets its process: standard streams whose failed
//! writes are seen ([`out`], with the `outln!` and `errln!` macros), the
//! raw arguments and clap's errors cut to one line ([`cmdline`], [`parse`]),
//! the libraries' errors as the line naming the flag that caused them
//! ([`usage`]), a result shown as JSON or lines ([`show`]), output folders
//! committed only once the output was written ([`files`]), progress bars
//! ([`progress`]), and the exit code ([`exit_code`]).
//!
//! A library, as ripgrep's `grep-cli` is, so that this plumbing is tested
//! on its own and the binary keeps to parsing, one call and printing. What
//! does not live here: the flags (the binary's `clap` definitions; their
//! names are the table [`kicklab_model::Flag`]) and any of the lab's work.

#[macro_use]
pub mod out;

pub mod cmdline;
pub mod files;
pub mod progress;
pub mod show;
pub mod usage;

use cmdline::{non_utf8_argument, one_line, one_line_error, replay_alias};

/// Bad input: printed as one line on stderr, exit code 2.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

/// What the process does first: a closed pipe (`kicklab sweep ... | head
/// -1`) becomes a failed write like any other (one line, exit 1, no folder
/// left behind) rather than a death by SIGPIPE in the middle of writing
/// files; SIGINT, SIGTERM and SIGHUP remove the staged folders before the process
/// dies of them ([`files::remove_temporaries_on_signals`]).
pub fn start() {
    // SAFETY: called first thing in `main`, before any other thread
    // exists; SIG_IGN is a valid disposition for SIGPIPE and SIGXFSZ.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        // A write past the file-size limit (`ulimit -f`) fails with EFBIG
        // like any failed write, instead of killing the process with its
        // temporary files left behind.
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    files::remove_temporaries_on_signals();
}

/// Parses the process's arguments into `C` (with `validate --replay` read
/// as `replay`), with clap's matches for the checks that need them; where
/// there is nothing to run (help, the version, bad input) it is printed
/// here and the exit code returned: 0 for help and the version, 2 for
/// bad input (one line naming the flag) and for help shown because
/// nothing was given.
///
/// # Errors
///
/// The exit code, once the reason was printed.
pub fn parse<C: clap::Parser>() -> Result<(C, clap::ArgMatches), u8> {
    use clap::error::ErrorKind;
    if let Some(line) = non_utf8_argument(&C::command()) {
        errln!("error: {}", one_line(&line));
        return Err(out::finish(2));
    }
    let parsed = C::command()
        .try_get_matches_from(replay_alias(std::env::args_os().collect()))
        .and_then(|m| C::from_arg_matches(&m).map(|c| (c, m)));
    let e = match parsed {
        Ok(c) => return Ok(c),
        Err(e) => e,
    };
    let shown = matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    );
    if !shown {
        errln!("{}", one_line(&one_line_error(&e)));
        return Err(out::finish(2));
    }
    let text = if !e.use_stderr() && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        e.render().ansi().to_string()
    } else {
        e.render().to_string()
    };
    if e.use_stderr() {
        errln!("{}", text.trim_end());
    } else {
        outln!("{}", text.trim_end());
    }
    let nothing_given = e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand;
    Err(out::finish(if nothing_given { 2 } else { 0 }))
}

/// The exit code of a command that ran, once its output is written: 0
/// done (each note then said on stderr), 1 failed (an I/O error, a
/// write that failed, the machine), 2 bad input ([`usage::line`] finds
/// the line naming the flag).
pub fn exit_code(result: anyhow::Result<()>, notes: &[String]) -> u8 {
    // Saved files go in place only when the command succeeded and its
    // output was taken (`files::save`).
    let result = result.and_then(|()| {
        out::check()?;
        files::commit_saved(true)
    });
    let _ = files::commit_saved(false);
    match result {
        Ok(()) => {
            for note in notes {
                errln!("note: {}", one_line(note));
            }
            out::finish(0)
        }
        // A lost standard output or error: `finish` says which, once.
        Err(e) if out::is_write_failure(&e) => out::finish(1),
        Err(e) => match usage::line(&e) {
            Some(line) => {
                errln!("error: {}", one_line(&line));
                out::finish(2)
            }
            None => {
                errln!("error: {}", one_line(&format!("{e:#}")));
                out::finish(1)
            }
        },
    }
}
