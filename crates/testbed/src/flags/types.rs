//! What a flags run takes and gives: the consumer's path, the backend,
//! the configuration and the result.

use std::time::Duration;

use serde::Serialize;

/// How the consumer learns which source fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlagPath {
    /// `poll()` over one eventfd per source, then a `read` of each ready
    /// one: the `select()` family, whose cost grows with the sources.
    Poll,
    /// `epoll_wait` over one eventfd per source, then a `read`.
    Epoll,
    /// A shared bit vector and per-source counters, one futex for all.
    Bitmap,
}

impl std::str::FromStr for FlagPath {
    type Err = String;
    fn from_str(s: &str) -> Result<FlagPath, String> {
        match s {
            "poll" | "select" => Ok(FlagPath::Poll),
            "epoll" => Ok(FlagPath::Epoll),
            "bitmap" | "shared" => Ok(FlagPath::Bitmap),
            _ => Err(format!("unknown path `{s}` (use poll, epoll or bitmap)")),
        }
    }
}

/// Who signals and who watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlagsBackend {
    /// A producer thread and a consumer thread.
    #[default]
    Threads,
    /// A KVM guest signals (its bit vector and one kick ioeventfd, or a
    /// port and an ioeventfd per source), a host thread watches
    /// (`backend::kvm::flags`).
    Kvm,
}

impl std::str::FromStr for FlagsBackend {
    type Err = String;
    fn from_str(s: &str) -> Result<FlagsBackend, String> {
        match s {
            "threads" => Ok(FlagsBackend::Threads),
            "kvm" => Ok(FlagsBackend::Kvm),
            _ => Err(format!("unknown backend `{s}` (use threads or kvm)")),
        }
    }
}

/// One run.
#[derive(Debug, Clone, Copy)]
pub struct FlagsConfig {
    /// Who signals and who watches.
    pub backend: FlagsBackend,
    /// Sources watched (1 to 1024).
    pub sources: usize,
    /// How.
    pub path: FlagPath,
    /// Signals sent (spread over the sources).
    pub signals: u64,
    /// Time between two signals: long enough for the consumer to sleep.
    pub gap: Duration,
}

/// What a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct FlagsResult {
    /// Who signalled and who watched.
    pub backend: FlagsBackend,
    /// Sources watched.
    pub sources: usize,
    /// How.
    pub path: FlagPath,
    /// The producer's CPU per notification [ns] (setting the flag and
    /// waking the consumer, or writing the source's eventfd).
    pub notify_ns: f64,
    /// The consumer's CPU per wake-up [ns] (the wait, finding the source,
    /// consuming its count).
    pub wake_ns: f64,
    /// Wake-ups.
    pub wakeups: u64,
    /// Signals sent.
    pub signals: u64,
    /// Signals the consumer counted (equal to `signals` unless lost or
    /// duplicated).
    pub received: u64,
}
