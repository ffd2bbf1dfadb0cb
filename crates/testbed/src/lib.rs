//! Real runs of the producer/consumer pair on this machine.
//!
//! What lives here: TSC-based busy work and per-thread CPU time
//! ([`clock`]), the pair as two pinned threads over the kicklab ring or a
//! thread and a KVM guest ([`run_pair`], [`kvm`]), and the calibration of
//! N and S ([`calibrate()`]). What does
//! not: the ring itself (`kicklab-ring`), the model and the simulator.

pub mod calibrate;
pub mod clock;
pub mod kvm;
pub mod pingpong;
mod threads;

pub use calibrate::{calibrate, Profile, Stat};
pub use threads::{PairConfig, PairResult};

use kicklab_ring::NotifierKind;

/// Where the two parties run and how they notify each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Two host threads with this notifier.
    Threads(NotifierKind),
    /// A host thread and a KVM guest.
    Kvm(kvm::KvmOptions),
}

impl Backend {
    /// `futex`, `eventfd`, `pipe` or `kvm`.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Threads(k) => k.name(),
            Backend::Kvm(_) => "kvm",
        }
    }
}

impl std::str::FromStr for Backend {
    type Err = String;
    fn from_str(s: &str) -> Result<Backend, String> {
        if s == "kvm" {
            return Ok(Backend::Kvm(kvm::KvmOptions::default()));
        }
        s.parse::<NotifierKind>()
            .map(Backend::Threads)
            .map_err(|_| format!("unknown backend `{s}` (use futex, eventfd, pipe or kvm)"))
    }
}

/// Calibrates N and S of `backend` (see [`calibrate()`] and
/// [`kvm::calibrate`]); for kvm, `samples` is capped at what guest memory
/// holds.
///
/// # Errors
///
/// A notifier or VM that cannot be made, or a calibration that hangs.
pub fn calibrate_backend(
    backend: Backend,
    samples: usize,
    gap: std::time::Duration,
    max_rounds: usize,
) -> Result<Profile, TestbedError> {
    match backend {
        Backend::Threads(kind) => calibrate(kind, samples, gap, max_rounds),
        Backend::Kvm(o) => kvm::calibrate(
            o.direction,
            o.guest,
            samples.min(kvm::guest::map::SAMPLES_MAX as usize),
            gap,
            max_rounds,
        ),
    }
}

/// Runs the pair once on `cfg.backend`.
///
/// # Errors
///
/// Bad parameters, a notifier or VM that cannot be made, a corrupt ring, a
/// misbehaving guest, or a run that stops making progress (a hang).
pub fn run_pair(cfg: &PairConfig) -> Result<PairResult, TestbedError> {
    match cfg.backend {
        Backend::Threads(kind) => threads::run_pair(cfg, kind),
        Backend::Kvm(opts) => kvm::run_pair(cfg, opts),
    }
}

/// A real run failed.
#[derive(Debug, thiserror::Error)]
pub enum TestbedError {
    /// Bad parameters.
    #[error("{0}")]
    Params(String),
    /// A system call failed.
    #[error("system call: {0}")]
    Io(#[from] std::io::Error),
    /// The ring's indices are corrupt.
    #[error(transparent)]
    Ring(#[from] kicklab_ring::RingError),
    /// Waiting failed.
    #[error(transparent)]
    Wait(#[from] kicklab_ring::WaitError),
    /// The run stopped making progress.
    #[error("hang: {0}")]
    Hang(String),
    /// KVM is missing or refused an ioctl.
    #[error("kvm: {0}")]
    Kvm(String),
    /// The guest broke the protocol; it was stopped.
    #[error("misbehaving guest (stopped): {0}")]
    Guest(String),
}

impl From<iced_x86::IcedError> for TestbedError {
    fn from(e: iced_x86::IcedError) -> TestbedError {
        TestbedError::Kvm(format!("assembling the guest: {e}"))
    }
}
