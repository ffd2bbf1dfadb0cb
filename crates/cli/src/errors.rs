//! Errors as the command line shows them: [`usage_of`], the one place that maps a library's error (a
//! parameter, an input, a testbed setting) to the flag that set it. What
//! does not live here: bad input's type ([`Usage`]), clap's own errors
//! and printing (`kicklab_term`).

use kicklab_term::Usage;

/// A testbed error caused by the input, naming the flag of the setting.
pub fn testbed_usage(t: &kicklab_testbed::TestbedError) -> Option<String> {
    use kicklab_testbed::{Setting, TestbedError};
    match t {
        TestbedError::Params(p) => Some(param_usage(p)),
        TestbedError::Invalid { what, reason } | TestbedError::Limit { what, reason } => {
            let f = match what {
                Setting::Len => "--len",
                Setting::Messages | Setting::Warmup => "--messages",
                Setting::Batch => "--batch",
                Setting::Flush => "--flush",
                Setting::Work => "--work",
                Setting::Timer => "--timer",
                Setting::Rounds => "--rounds",
                Setting::Spin | Setting::Strategy => "--strategy",
                Setting::Samples => "--samples",
                Setting::Gap => "--gap",
                Setting::Gaps => "--gaps",
                Setting::Runs => "--overhead-runs",
                Setting::Idle => "--idle",
                Setting::HostHaltPoll => "--halt-poll",
                Setting::Vms => "--vms",
                Setting::Timeout => return None,
            };
            Some(format!("{f}: {reason}"))
        }
        _ => None,
    }
}

/// A parameter error as the command line says it: `--kp (k_P): ...`.
pub fn param_usage(e: &kicklab_model::ParamError) -> String {
    format!("--{} ({}): {}", e.param.name(), e.param.symbol(), e.reason)
}

/// A library error that was caused by the user's input, rendered as one
/// line naming the flag; `None` for everything else (exit 1).
///
/// The libraries name parameters ([`kicklab_model::Param`]) and fields,
/// never flags: this is the one place that maps them to the command line.
pub fn usage_of(e: &anyhow::Error) -> Option<String> {
    use kicklab_model::{ModelError, ParamError};
    use kicklab_sim::SimError;
    let param = param_usage;
    if let Some(u) = e.downcast_ref::<Usage>() {
        return Some(u.to_string());
    }
    if let Some(p) = e.downcast_ref::<ParamError>() {
        return Some(param(p));
    }
    if let Some(v) = e.downcast_ref::<kicklab_sim::VaryError>() {
        return Some(format!("--vary: {v}"));
    }
    if let Some(m) = e.downcast_ref::<ModelError>() {
        return Some(match m {
            ModelError::Params(p) => param(p),
            ModelError::NoClosedForm => format!("--strategy: {m}: use `kicklab sim`"),
        });
    }
    if let Some(t) = e.downcast_ref::<kicklab_testbed::TestbedError>() {
        return testbed_usage(t);
    }
    if let Some(l) = e.downcast_ref::<kicklab_lab::LabError>() {
        use kicklab_lab::LabError;
        return match l {
            LabError::Testbed(t) => testbed_usage(t),
            LabError::Trace(t) => Some(t.to_string()),
            LabError::Input {
                input: kicklab_lab::Input::Axes,
                reason,
            } => Some(format!("--x, --y: {reason}")),
            LabError::Input {
                input: kicklab_lab::Input::StageWork,
                reason,
            } => Some(format!("--shared/--vm-service: {reason}")),
            LabError::Input {
                input: kicklab_lab::Input::SimMachine,
                reason,
            } => Some(format!("--backend sim: {reason}")),
            LabError::Input {
                input: kicklab_lab::Input::Mode,
                reason,
            } => Some(format!("--strategy: {reason}")),
            LabError::Input {
                input: kicklab_lab::Input::Warmup,
                reason,
            } => Some(format!("--warmup (with --messages): {reason}")),
            LabError::Input { input, reason } => {
                Some(format!("--{}: {reason}", input.name().replace('_', "-")))
            }
            LabError::Param(p)
            | LabError::Model(ModelError::Params(p))
            | LabError::Sim(SimError::Params(p)) => Some(param(p)),
            LabError::Model(m) => usage_of(&anyhow::Error::new(m.clone())),
            LabError::Sim(s) => usage_of(&anyhow::Error::new(s.clone())),
            _ => None,
        };
    }
    if let Some(s) = e.downcast_ref::<SimError>() {
        return match s {
            SimError::Params(p) => Some(param(p)),
            // "messages: ..." names the input; its flag is the same word.
            SimError::NoMessages
            | SimError::TooManyMessages(_)
            | SimError::StudyTooLarge { .. } => Some(format!("--{s}")),
            SimError::Mode { .. } | SimError::TooManyEvents { .. } => {
                Some(format!("--strategy: {s}"))
            }
            SimError::SweepPoint { .. } => Some(format!("--vary: {s}")),
            SimError::TimeOverflow => Some(format!("--messages: {s}: simulate fewer")),
            // "batch: ..." / "flush: ..." name their flags.
            SimError::Combine(_) => Some(format!("--{s}")),
            // Only a profile sets it.
            SimError::Nap { .. } => Some(format!("--profile: {s}")),
            SimError::Deadlock { .. } => None,
        };
    }
    None
}
