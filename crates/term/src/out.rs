//! The binary's standard output and standard error, written so that a
//! failed write is seen: `outln!` and `errln!` never panic
//! (as `println!` does on a full disk) and remember the first failure;
//! [`check`] turns it into an error before a command puts its files in
//! place, and [`finish`] into the exit code. Closed descriptors 0-2 are
//! taken by `/dev/null` at start ([`guard_std_fds`]), so that no file the
//! command opens lands on them and a write to a closed stream counts as
//! failed (Rust's standard streams would drop it without a word).
//!
//! What is not here: the words of any output (each command's file), the
//! progress bars (`indicatif` draws only on a terminal and cannot fail a
//! command).

use std::fmt;
use std::io::{self, IsTerminal as _, Write as _};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// One of the two streams the binary writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Standard output: the command's result.
    Stdout,
    /// Standard error: notes, warnings, errors.
    Stderr,
}

impl Stream {
    fn name(self) -> &'static str {
        match self {
            Stream::Stdout => "standard output",
            Stream::Stderr => "standard error",
        }
    }
}

/// The first write that failed, with its stream.
static FAILED: Mutex<Option<(Stream, String)>> = Mutex::new(None);
/// Descriptor 1 / 2 was closed when the process started.
static CLOSED: [AtomicBool; 2] = [AtomicBool::new(false), AtomicBool::new(false)];

fn failed() -> std::sync::MutexGuard<'static, Option<(Stream, String)>> {
    FAILED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Writes `args` to `stream`; after a failure on either stream nothing more
/// is written to standard output (the result is lost already), while
/// standard error still takes the final error line.
pub fn write(stream: Stream, args: fmt::Arguments<'_>) {
    let mut first = failed();
    if first.is_some() && stream == Stream::Stdout {
        return;
    }
    let closed = CLOSED[stream as usize].load(Ordering::Relaxed);
    let result = if closed {
        Err(io::Error::other("it is closed"))
    } else {
        match stream {
            Stream::Stdout => io::stdout().lock().write_fmt(args),
            Stream::Stderr => io::stderr().lock().write_fmt(args),
        }
    };
    if let Err(e) = result {
        if first.is_none() {
            *first = Some((stream, describe(&e)));
        }
    }
}

/// Whether standard output was closed when the process started, recorded
/// as a failed write: every command's result goes there, so the binary
/// stops before the work (minutes, for some) rather than after it.
pub fn stdout_was_closed() -> bool {
    let closed = CLOSED[Stream::Stdout as usize].load(Ordering::Relaxed);
    if closed {
        write(Stream::Stdout, format_args!(""));
    }
    closed
}

/// An I/O error in words, without the `(os error N)` tail.
fn describe(e: &io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// A line on standard output; a failure is remembered, never a panic.
#[macro_export]
macro_rules! outln {
    () => { $crate::out::write($crate::out::Stream::Stdout, format_args!("\n")) };
    ($($arg:tt)*) => {
        $crate::out::write($crate::out::Stream::Stdout, format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// A line on standard error; a failure is remembered, never a panic.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::out::write($crate::out::Stream::Stderr, format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// A note on standard error kept to one line: control characters (a
/// newline in a path it names) shown escaped.
#[macro_export]
macro_rules! noteln {
    ($($arg:tt)*) => {
        $crate::errln!("{}", $crate::cmdline::one_line(&format!($($arg)*)))
    };
}

/// A write to standard output or standard error failed.
#[derive(Debug)]
pub struct WriteFailed(String);

impl fmt::Display for WriteFailed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for WriteFailed {}

/// Flushes standard output and fails if any write so far failed: called
/// before a command moves its files into place, so that a run whose
/// printed result was lost leaves no folder behind either.
///
/// # Errors
///
/// [`WriteFailed`] naming the stream and why.
pub fn check() -> Result<(), WriteFailed> {
    if !CLOSED[0].load(Ordering::Relaxed) {
        if let Err(e) = io::stdout().lock().flush() {
            let mut first = failed();
            if first.is_none() {
                *first = Some((Stream::Stdout, describe(&e)));
            }
        }
    }
    match &*failed() {
        Some((s, why)) => Err(WriteFailed(format!("cannot write to {}: {why}", s.name()))),
        None => Ok(()),
    }
}

/// Whether `e` is a failed write to a standard stream (exit 1, and no
/// second attempt to print it to standard output).
pub fn is_write_failure(e: &anyhow::Error) -> bool {
    e.downcast_ref::<WriteFailed>().is_some()
}

/// The exit code once a command is done: `code` where every write
/// succeeded; otherwise 1, after one line on standard error naming the
/// stream that failed (where standard error itself can take it).
pub fn finish(code: u8) -> u8 {
    match check() {
        Ok(()) => code,
        Err(e) => {
            let stderr_failed = matches!(&*failed(), Some((Stream::Stderr, _)));
            if !stderr_failed && !CLOSED[1].load(Ordering::Relaxed) {
                let _ = writeln!(io::stderr().lock(), "error: {e}");
            }
            1
        }
    }
}

/// Points each closed standard descriptor (0, 1, 2) at `/dev/null` and
/// remembers that 1 or 2 was closed: a file opened later must not become
/// the command's standard output, and a write to a stream the caller
/// closed is a failed write (exit 1), not a silent loss.
pub fn guard_std_fds() {
    for fd in 0..3 {
        // SAFETY: F_GETFD only reads the descriptor's flags.
        let open = unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1;
        if open {
            continue;
        }
        if fd > 0 {
            CLOSED[(fd - 1) as usize].store(true, Ordering::Relaxed);
        }
        let flags = if fd == 0 {
            libc::O_RDONLY
        } else {
            libc::O_WRONLY
        };
        // SAFETY: a constant NUL-terminated path; open returns the lowest
        // free descriptor, which is `fd` since 0..fd are open.
        let _ = unsafe { libc::open(c"/dev/null".as_ptr(), flags) };
    }
}

/// Whether standard error is a terminal (progress bars draw only there).
pub fn stderr_is_terminal() -> bool {
    !CLOSED[1].load(Ordering::Relaxed) && io::stderr().is_terminal()
}
