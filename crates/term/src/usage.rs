//! The libraries' errors as the command line says them: [`line`] finds,
//! for an error the input caused (a parameter, a testbed setting, a lab
//! input), the one line naming the flag that set it; [`kvm_usable`] is
//! the one refusal of `--backend kvm` where KVM cannot run kicklab's
//! guests. The libraries name parameters and inputs, never flags: this is
//! the one place that maps them to the table of flags
//! ([`kicklab_model::Flag`]). What does not live here: printing and the
//! exit code ([`crate::exit_code`]), clap's own errors ([`crate::cmdline`]).

use kicklab_lab::{Input, LabError};
use kicklab_model::{Flag, ModelError, Param, ParamError};
use kicklab_sim::SimError;
use kicklab_testbed::{Setting, TestbedError};

use crate::Usage;

/// The flag of a testbed setting; `None` for the watchdog's stall limit,
/// which no flag sets.
fn setting_flag(setting: Setting) -> Option<Flag> {
    Some(match setting {
        Setting::Len => Flag::Param(Param::Len),
        Setting::Messages | Setting::Warmup => Flag::Messages,
        Setting::Batch => Flag::Batch,
        Setting::Flush => Flag::Flush,
        Setting::Work => Flag::Work,
        Setting::Timer => Flag::Timer,
        Setting::Rounds => Flag::Rounds,
        Setting::Spin | Setting::Strategy => Flag::Strategy,
        Setting::Samples => Flag::Samples,
        Setting::Gap => Flag::Gap,
        Setting::Gaps => Flag::Gaps,
        Setting::Runs => Flag::OverheadRuns,
        Setting::Idle => Flag::Idle,
        Setting::HostHaltPoll => Flag::HaltPoll,
        Setting::Vms => Flag::Vms,
        Setting::Timeout => return None,
    })
}

/// A parameter error as the command line says it: `--kp (k_P): ...`.
fn param_line(e: &ParamError) -> String {
    format!(
        "{} ({}): {}",
        Flag::Param(e.param),
        e.param.symbol(),
        e.reason
    )
}

/// A testbed error caused by the input, naming the flag of the setting.
fn testbed_line(t: &TestbedError) -> Option<String> {
    match t {
        TestbedError::Params(p) => Some(param_line(p)),
        TestbedError::Invalid { what, reason } | TestbedError::Limit { what, reason } => {
            setting_flag(*what).map(|flag| format!("{flag}: {reason}"))
        }
        _ => None,
    }
}

/// The flags a lab input stands for, as a refusal names them.
fn input_flags(input: Input) -> String {
    match input {
        Input::Axes => format!("{}, {}", Flag::X, Flag::Y),
        Input::StageWork => format!("{}/{}", Flag::Shared, Flag::VmService),
        Input::SimMachine => format!("{} sim", Flag::Backend),
        Input::Mode => Flag::Strategy.to_string(),
        Input::Warmup => format!("{} (with {})", Flag::Warmup, Flag::Messages),
        Input::Kvm => format!("invalid value 'kvm' for '{} <BACKEND>'", Flag::Backend),
        // `kicklab replay DIR`, which `validate --replay DIR` also reaches.
        Input::Replay => "replay <DIR>".to_string(),
        Input::Trace => "trace <FILE>".to_string(),
        other => format!("--{}", other.name().replace('_', "-")),
    }
}

/// A lab error caused by the input, naming its flag.
fn lab_line(l: &LabError) -> Option<String> {
    match l {
        LabError::Testbed(t) => testbed_line(t),
        LabError::Trace(t) => Some(t.to_string()),
        LabError::Input { input, reason } => Some(format!("{}: {reason}", input_flags(*input))),
        LabError::Param(p)
        | LabError::Model(ModelError::Params(p))
        | LabError::Sim(SimError::Params(p)) => Some(param_line(p)),
        LabError::Model(m) => model_line(m),
        LabError::Sim(s) => sim_line(s),
        _ => None,
    }
}

fn model_line(m: &ModelError) -> Option<String> {
    Some(match m {
        ModelError::Params(p) => param_line(p),
        ModelError::NoClosedForm => format!("{}: {m}: use `kicklab sim`", Flag::Strategy),
    })
}

fn sim_line(s: &SimError) -> Option<String> {
    Some(match s {
        SimError::Params(p) => param_line(p),
        // "messages: ..." names the input; its flag is the same word.
        SimError::NoMessages | SimError::TooManyMessages(_) | SimError::StudyTooLarge { .. } => {
            format!("--{s}")
        }
        SimError::Mode { .. } | SimError::TooManyEvents { .. } => {
            format!("{}: {s}", Flag::Strategy)
        }
        SimError::SweepPoint { .. } => format!("{}: {s}", Flag::Vary),
        SimError::TimeOverflow => format!("{}: {s}: simulate fewer", Flag::Messages),
        // "batch: ..." / "flush: ..." name their flags.
        SimError::Combine(_) => format!("--{s}"),
        // Only a profile sets it.
        SimError::Nap { .. } => format!("{}: {s}", Flag::Profile),
        SimError::Deadlock { .. } | SimError::Stopped => return None,
    })
}

/// The line naming the flag for an error the input caused; `None` for
/// everything else (the machine's, a failed write: exit 1).
#[must_use]
pub fn line(e: &anyhow::Error) -> Option<String> {
    if let Some(u) = e.downcast_ref::<Usage>() {
        return Some(u.to_string());
    }
    if let Some(p) = e.downcast_ref::<ParamError>() {
        return Some(param_line(p));
    }
    if let Some(v) = e.downcast_ref::<kicklab_sim::VaryError>() {
        return Some(format!("{}: {v}", Flag::Vary));
    }
    if let Some(m) = e.downcast_ref::<ModelError>() {
        return model_line(m);
    }
    if let Some(t) = e.downcast_ref::<TestbedError>() {
        return testbed_line(t);
    }
    if let Some(l) = e.downcast_ref::<LabError>() {
        return lab_line(l);
    }
    e.downcast_ref::<SimError>().and_then(sim_line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line_of(e: impl Into<anyhow::Error>) -> Option<String> {
        line(&e.into())
    }

    #[test]
    fn a_testbed_setting_is_named_by_its_flag() {
        let e = TestbedError::Invalid {
            what: Setting::Runs,
            reason: "at least 1".into(),
        };
        assert_eq!(line_of(e).as_deref(), Some("--overhead-runs: at least 1"));
        let e = TestbedError::Limit {
            what: Setting::Timeout,
            reason: "stalled".into(),
        };
        assert_eq!(line_of(e), None, "no flag sets the stall limit");
    }

    #[test]
    fn lab_inputs_name_their_flags_and_the_kvm_refusal_reads_as_clap_s() {
        let cases = [
            (Input::Axes, "--x, --y: same"),
            (Input::StageWork, "--shared/--vm-service: same"),
            (Input::Mode, "--strategy: same"),
            (Input::RealMessages, "--real-messages: same"),
            (Input::Warmup, "--warmup (with --messages): same"),
            (
                Input::Kvm,
                "invalid value 'kvm' for '--backend <BACKEND>': same",
            ),
        ];
        for (input, want) in cases {
            assert_eq!(
                line_of(LabError::input(input, "same")).as_deref(),
                Some(want)
            );
        }
    }

    #[test]
    fn parameters_name_flag_and_symbol_and_the_machine_s_errors_are_not_usage() {
        let e = ParamError {
            param: Param::Kp,
            reason: "must be >= 1".into(),
        };
        assert_eq!(line_of(e).as_deref(), Some("--kp (k_P): must be >= 1"));
        assert_eq!(
            line_of(SimError::NoMessages).as_deref(),
            Some("--messages: need at least 1 message to measure")
        );
        assert_eq!(
            line_of(Usage("--out: taken".into())).as_deref(),
            Some("--out: taken")
        );
        assert_eq!(line_of(std::io::Error::other("disk")), None);
    }
}
