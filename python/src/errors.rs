//! Why a call failed, as Python sees it: [`Fail`] (a `ValueError` for bad
//! input naming the keyword argument, a `RuntimeError` for a failure) and
//! the library errors mapped to it. What does not live here: parsing the
//! inputs (`inputs`).

use kicklab_lab::{Input, LabError};
use kicklab_model::{ModelError, ParamError};
use kicklab_sim::SimError;
use kicklab_testbed::{Setting, TestbedError};
use pyo3::exceptions::{PyMemoryError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;

/// Why a call failed, without the GIL (so that it can cross
/// `Python::detach`): bad input (`ValueError`), a failure
/// (`RuntimeError`), memory (`MemoryError`) or Python's own.
#[derive(Debug)]
pub(crate) enum Fail {
    Value(String),
    Runtime(String),
    /// Memory for the results could not be had (`MemoryError`).
    Memory(String),
    /// Python's own (a signal's `KeyboardInterrupt`, checked between
    /// points).
    Python(PyErr),
}

impl From<Fail> for PyErr {
    fn from(f: Fail) -> PyErr {
        match f {
            Fail::Value(m) => PyValueError::new_err(m),
            Fail::Runtime(m) => PyRuntimeError::new_err(m),
            Fail::Memory(m) => PyMemoryError::new_err(m),
            Fail::Python(e) => e,
        }
    }
}

pub(crate) type Res<T> = Result<T, Fail>;

/// A `ValueError` with this message.
pub(crate) fn bad(msg: impl Into<String>) -> Fail {
    Fail::Value(msg.into())
}

/// A parameter error as Python says it: `kp (k_P): ...` (the binary:
/// `--kp (k_P): ...`).
pub(crate) fn param_err(e: &ParamError) -> Fail {
    bad(format!(
        "{} ({}): {}",
        e.param.name(),
        e.param.symbol(),
        e.reason
    ))
}

/// `name: invalid value 'text': why`, as clap says it, the keyword for
/// the flag.
pub(crate) fn invalid(name: &str, text: &str, why: impl std::fmt::Display) -> Fail {
    bad(format!("{name}: invalid value '{text}': {why}"))
}

pub(crate) fn model_err(e: &ModelError) -> Fail {
    match e {
        ModelError::Params(p) => param_err(p),
        ModelError::NoClosedForm => bad(format!("mode: {e}: use kicklab.sim()")),
    }
}

pub(crate) fn sim_err(e: &SimError) -> Fail {
    match e {
        SimError::Params(p) => param_err(p),
        // "messages: ..." names the input; its keyword is the same word.
        SimError::NoMessages
        | SimError::TooManyMessages(_)
        | SimError::StudyTooLarge { .. }
        | SimError::Combine(_) => bad(e.to_string()),
        SimError::Mode { .. } | SimError::TooManyEvents { .. } => bad(format!("mode: {e}")),
        SimError::SweepPoint { .. } => bad(format!("vary: {e}")),
        SimError::TimeOverflow => bad(format!("messages: {e}: simulate fewer")),
        SimError::Deadlock { .. } => Fail::Runtime(e.to_string()),
        // Ctrl-C during this call, or during another thread's (every
        // simulation of the process stops): Python's own.
        SimError::Stopped => Fail::Python(pyo3::exceptions::PyKeyboardInterrupt::new_err(
            e.to_string(),
        )),
        // Only a profile sets it.
        SimError::Nap { .. } => bad(format!("profile: {e}")),
    }
}

pub(crate) fn testbed_err(e: &TestbedError) -> Fail {
    match e {
        TestbedError::Params(p) => param_err(p),
        TestbedError::Invalid { what, reason } | TestbedError::Limit { what, reason } => {
            let name = match what {
                Setting::Len => "len",
                Setting::Messages | Setting::Warmup => "messages",
                Setting::Batch => "batch",
                Setting::Flush => "flush",
                Setting::Work => "work",
                Setting::Timer => "timer",
                Setting::Rounds => "rounds",
                Setting::Spin | Setting::Strategy => "strategy",
                Setting::Vms => "vms",
                Setting::Samples => "samples",
                Setting::Gap => "gap",
                Setting::Gaps => "gaps",
                Setting::Runs => "overhead_runs",
                Setting::Idle => "idle",
                Setting::HostHaltPoll => "halt_poll",
                Setting::Timeout => return Fail::Runtime(e.to_string()),
            };
            bad(format!("{name}: {reason}"))
        }
        _ => Fail::Runtime(e.to_string()),
    }
}

pub(crate) fn lab_err(e: &LabError) -> Fail {
    match e {
        LabError::Input { input, reason } => {
            // A real run's strategy is `strategy=`, as on the command
            // line (`--strategy`).
            let name = match input {
                Input::Mode => "strategy",
                // `workloads=` takes the list.
                Input::Workload => "workloads",
                // A map's grid: `x=` and `y=` together.
                Input::Axes => "x, y",
                other => other.name(),
            };
            bad(format!("{name}: {reason}"))
        }
        LabError::Param(p) => param_err(p),
        LabError::Model(m) => model_err(m),
        LabError::Sim(s) => sim_err(s),
        LabError::Testbed(t) => testbed_err(t),
        _ => Fail::Runtime(e.to_string()),
    }
}
