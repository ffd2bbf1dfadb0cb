//! The testbed's one error type, and the parameters it can name. Messages
//! speak of parameters ("messages: ..."), never of command-line flags: the
//! binary maps [`Setting`] to its own flag names.

/// A parameter of a run, calibration or ping-pong, named in errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// The ring's length L.
    Len,
    /// Messages (or requests) measured.
    Messages,
    /// Messages before the window.
    Warmup,
    /// Send combining.
    Batch,
    /// Send combining's flush rule (its hold timer).
    Flush,
    /// Per-message work (W_P, W_C, ping-pong work).
    Work,
    /// A wait strategy's spin budget.
    Spin,
    /// A party's wait strategy.
    Strategy,
    /// Calibration samples per round.
    Samples,
    /// Calibration idle gap.
    Gap,
    /// The idle gaps of the calibration's idle curve.
    Gaps,
    /// Runs of the calibration's overhead measurement.
    Runs,
    /// The ping-pong responder's idle strategy.
    Idle,
    /// Host halt polling.
    HostHaltPoll,
    /// The stall limit of the watchdog.
    Timeout,
    /// Guests of a scale run, and their load.
    Vms,
    /// A scale guest's timer period.
    Timer,
    /// Rounds of a calibration.
    Rounds,
}

impl Setting {
    /// The parameter's name, as error messages say it.
    pub fn name(self) -> &'static str {
        match self {
            Setting::Len => "len",
            Setting::Messages => "messages",
            Setting::Warmup => "warmup",
            Setting::Batch => "batch",
            Setting::Flush => "flush",
            Setting::Work => "work",
            Setting::Spin => "spin",
            Setting::Strategy => "strategy",
            Setting::Samples => "samples",
            Setting::Gap => "gap",
            Setting::Gaps => "gaps",
            Setting::Runs => "runs",
            Setting::Idle => "idle",
            Setting::HostHaltPoll => "halt_poll",
            Setting::Timeout => "timeout",
            Setting::Vms => "vms",
            Setting::Timer => "timer",
            Setting::Rounds => "rounds",
        }
    }
}

impl std::fmt::Display for Setting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A real run failed.
#[derive(Debug, thiserror::Error)]
pub enum TestbedError {
    /// Bad parameters of the pair (the model's own validation).
    #[error(transparent)]
    Params(#[from] kicklab_model::ParamError),
    /// A parameter this backend cannot take (zero messages, an idle
    /// strategy it lacks).
    #[error("{what}: {reason}")]
    Invalid {
        /// Which parameter.
        what: Setting,
        /// Why, in words.
        reason: String,
    },
    /// A parameter beyond what this backend or machine holds (guest memory,
    /// a buffer cap, a duration too long to represent).
    #[error("{what}: {reason}")]
    Limit {
        /// Which parameter.
        what: Setting,
        /// The limit, in words.
        reason: String,
    },
    /// A system call failed. Not its error's `source` too: a chain
    /// printed whole (`{:#}`) would say the reason twice.
    #[error("system call: {0}")]
    Io(std::io::Error),
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

impl TestbedError {
    /// A [`TestbedError::Invalid`].
    pub(crate) fn invalid(what: Setting, reason: impl Into<String>) -> TestbedError {
        TestbedError::Invalid {
            what,
            reason: reason.into(),
        }
    }

    /// A [`TestbedError::Limit`].
    pub(crate) fn limit(what: Setting, reason: impl Into<String>) -> TestbedError {
        TestbedError::Limit {
            what,
            reason: reason.into(),
        }
    }

    /// The parameter this error names, if any (for mapping to a flag).
    pub fn param(&self) -> Option<Setting> {
        match self {
            TestbedError::Invalid { what, .. } | TestbedError::Limit { what, .. } => Some(*what),
            _ => None,
        }
    }
}

impl From<iced_x86::IcedError> for TestbedError {
    fn from(e: iced_x86::IcedError) -> TestbedError {
        TestbedError::Kvm(format!("assembling the guest: {e}"))
    }
}

impl From<std::io::Error> for TestbedError {
    fn from(e: std::io::Error) -> TestbedError {
        TestbedError::Io(e)
    }
}
