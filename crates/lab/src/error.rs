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
    /// VMs sharing a device.
    Vms,
    /// Requests offered per second to every VM.
    Offered,
    /// One VM's offered rate.
    Rate,
    /// A VM's rate limit.
    Limit,
    /// Requests a stage can hold waiting.
    Buffer,
    /// A VM's own work per request.
    VmService,
    /// The shared stage's work per request.
    Shared,
    /// The work per request of every stage (the shared stage's and the
    /// VMs').
    StageWork,
    /// A real run's time over the paper's.
    Scale,
    /// The simulated machine of a `scale` run (its CPUs, slice and costs).
    SimMachine,
    /// Requests outstanding in a `scale` run.
    Concurrency,
    /// A `scale` guest's timer period.
    Timer,
    /// The simulated machine's CPUs.
    Cpus,
    /// The simulated machine's scheduler slice.
    Slice,
    /// The simulated machine's cost of waking a blocked guest.
    Kick,
    /// The simulated machine's start-up of a woken guest.
    Wake,
    /// The simulated machine's cost of resuming a preempted guest.
    Switch,
    /// The simulated client's CPU per request.
    ClientCost,
    /// A real `qos` run's VM core.
    VmCore,
    /// Messages simulated before measuring.
    Warmup,
    /// Signals per flags run.
    Signals,
    /// Signalling sources of a flags run.
    Sources,
    /// The notification paths of a flags run.
    Path,
    /// The pause between a flags run's signals.
    Gap,
    /// The kvm guest's side (tx or rx).
    Direction,
    /// KVM's host halt polling.
    HaltPoll,
    /// How the kvm guest runs.
    Guest,
    /// The backend an advice is checked on.
    Check,
    /// The file a run's picture is drawn to.
    Timeline,
    /// The kvm backend, where this machine's KVM cannot run kicklab's
    /// guests.
    Kvm,
    /// The trace file read, where what it implies is out of range.
    Trace,
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
            Input::Vms => "vms",
            Input::Offered => "offered",
            Input::Rate => "rate",
            Input::Limit => "limit",
            Input::Buffer => "buffer",
            Input::VmService => "vm_service",
            Input::Shared => "shared",
            Input::StageWork => "shared and vm_service",
            Input::Scale => "scale",
            Input::SimMachine => "simulated machine",
            Input::Concurrency => "concurrency",
            Input::Timer => "timer",
            Input::Cpus => "cpus",
            Input::Slice => "slice",
            Input::Kick => "kick",
            Input::Wake => "wake",
            Input::Switch => "switch",
            Input::ClientCost => "client_cost",
            Input::VmCore => "vm_core",
            Input::Warmup => "warmup",
            Input::Signals => "signals",
            Input::Sources => "sources",
            Input::Path => "path",
            Input::Gap => "gap",
            Input::Direction => "direction",
            Input::HaltPoll => "halt_poll",
            Input::Guest => "guest",
            Input::Check => "check",
            Input::Timeline => "timeline",
            Input::Kvm => "kvm",
            Input::Trace => "trace",
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
    /// A trace gave no estimates.
    #[error(transparent)]
    Trace(#[from] kicklab_trace::TraceError),
    /// A result could not be put in JSON.
    #[error("encoding JSON: {0}")]
    Json(#[from] serde_json::Error),
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

/// A list that names an item twice is refused: each runs once.
pub(crate) fn no_repeats<T: PartialEq + std::fmt::Debug>(
    input: Input,
    items: &[T],
) -> Result<(), LabError> {
    match kicklab_model::first_repeat(items) {
        Some(x) => Err(LabError::input(
            input,
            format!(
                "{} is listed twice (each runs once)",
                format!("{x:?}").to_lowercase().replace('"', "")
            ),
        )),
        None => Ok(()),
    }
}
