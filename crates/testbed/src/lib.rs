//! Real runs of the producer/consumer pair on this machine.
//!
//! What lives here: TSC-based busy work and per-thread CPU time
//! ([`clock`]); what a run is asked and what it measures ([`PairConfig`],
//! [`PairResult`]); the one host party loop both backends run
//! (`party`); the backends side by side ([`backend::threads`],
//! [`backend::kvm`], dispatched by [`Backend`]), each offering the pair
//! ([`run_pair`]), calibration of N and S ([`calibrate_backend`], data in
//! [`calibrate`]) and ping-pong ([`pingpong`]). What does not: the ring
//! itself (`kicklab-ring`), the model and the simulator.

pub mod backend;
pub mod calibrate;
pub mod clock;
pub mod cpu_lock;
mod error;
pub mod flags;
mod pair;
mod party;
pub mod pingpong;
pub mod qos;
pub mod scale;
mod watchdog;

pub use backend::kvm;
pub use backend::threads::calibrate;
pub use backend::Backend;
pub use calibrate::{Calibration, IdlePoint, Profile, Stat};
pub use error::{Setting, TestbedError};
pub use pair::{basic_strategy, stall_limit, Flush, PairConfig, PairResult, Record, RecordedSpan};

/// Calibrates `backend` as `c` says: N, V and S, the idle curve, the
/// ring's cost per message (see [`Backend::calibrate_with`]).
///
/// # Errors
///
/// As [`Backend::calibrate_with`].
pub fn calibrate_backend(backend: Backend, c: &Calibration) -> Result<Profile, TestbedError> {
    backend.calibrate_with(c)
}

/// Runs the pair once on `cfg.backend` (see [`Backend::run_pair`]).
///
/// # Errors
///
/// As [`Backend::run_pair`].
pub fn run_pair(cfg: &PairConfig) -> Result<PairResult, TestbedError> {
    cfg.backend.run_pair(cfg)
}
