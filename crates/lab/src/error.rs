//! [`LabError`]: why an experiment could not run. Input errors name what
//! was wrong ([`Input`], a [`kicklab_model::Param`]); front ends map those
//! to their own words (the binary to a flag and exit code 2).

use kicklab_model::{ModelError, ParamError};
use kicklab_sim::SimError;
use kicklab_testbed::TestbedError;

/// An input of an experiment that is not a [`kicklab_model::Param`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input {
    /// Messages per run.
    Messages,
    /// Messages per real run, where a simulation is run too.
    RealMessages,
    /// Points per curve.
    Points,
    /// The sweep.
    Vary,
    /// A map's two axes, together (their grid).
    Axes,
    /// Messages per publish (send combining).
    Batch,
    /// The calibration profile given.
    Profile,
    /// The idle strategies of a ping-pong.
    Idle,
    /// The work per message of a ping-pong.
    Work,
    /// The workloads of a control study.
    Workload,
    /// Repetitions of each real run.
    Repeat,
    /// A wait strategy.
    Mode,
    /// A latency bound.
    Latency,
    /// Simulated seconds.
    Seconds,
    /// The W_P range of a control study.
    Range,
    /// The folder of recorded validations to replay.
    Replay,
}

impl Input {
    /// Short lowercase name (`messages`, `real_messages`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Input::Messages => "messages",
            Input::RealMessages => "real_messages",
            Input::Points => "points",
            Input::Vary => "vary",
            Input::Axes => "axes",
            Input::Batch => "batch",
            Input::Profile => "profile",
            Input::Idle => "idle",
            Input::Work => "work",
            Input::Workload => "workload",
            Input::Repeat => "repeat",
            Input::Mode => "mode",
            Input::Latency => "latency",
            Input::Seconds => "seconds",
            Input::Range => "range",
            Input::Replay => "replay",
        }
    }
}

/// Why an experiment failed.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// An input out of range.
    #[error("{}: {reason}", input.name())]
    Input {
        /// Which input.
        input: Input,
        /// What is wrong with it.
        reason: String,
    },
    /// Invalid parameters.
    #[error(transparent)]
    Param(#[from] ParamError),
    /// The model has no answer.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The simulator failed.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// A real run or calibration failed.
    #[error(transparent)]
    Testbed(#[from] TestbedError),
    /// Rendering failed.
    #[error(transparent)]
    Report(#[from] kicklab_report::ReportError),
    /// A real run lost, duplicated or reordered messages.
    #[error("message check failed: {lost} lost, {bad} duplicated or reordered")]
    MessageCheck {
        /// Messages lost.
        lost: u64,
        /// Messages duplicated or reordered.
        bad: u64,
    },
}

impl LabError {
    /// An [`LabError::Input`].
    pub fn input(input: Input, reason: impl Into<String>) -> LabError {
        LabError::Input {
            input,
            reason: reason.into(),
        }
    }
}
