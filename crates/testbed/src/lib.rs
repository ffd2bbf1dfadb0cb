//! Real runs of the producer/consumer pair on this machine.
//!
//! What lives here: TSC-based busy work and per-thread CPU time
//! ([`clock`]), the pair as two pinned threads over the kicklab ring
//! ([`run_pair`]), and the calibration of N and S ([`calibrate()`]). What does
//! not: the ring itself (`kicklab-ring`), the model and the simulator.

pub mod calibrate;
pub mod clock;
mod threads;

pub use calibrate::{calibrate, Profile, Stat};
pub use threads::{run_pair, PairConfig, PairResult};

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
}
