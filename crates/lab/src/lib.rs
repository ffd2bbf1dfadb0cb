//! kicklab's experiments, as a library: what the `kicklab` binary, the
//! report and any other front end (a notebook, a script) run.
//!
//! What lives here: a real run of the pair checked against the model
//! ([`real`]) and checked for disturbances ([`disturbance`]), the paper's
//! Fig. 4 validation ([`validate`]), the ping-pong suite with van Riel's
//! reference rates ([`pingpong`]), the simulator's speed benchmark
//! ([`bench`]), the report's explorer (kicklab's model and simulator as
//! WebAssembly in the page: [`explorer`]), and the assembly of the report
//! page from all of them ([`report`]). Every function takes data and returns data (results, [`kicklab_report::Page`]s); progress goes
//! through a [`Progress`] the caller supplies. What does not live here:
//! argument parsing and printing (the binary), the model, the simulator and
//! the testbeds themselves, rendering (`kicklab-report`).

pub mod advise;
pub mod advise_check;
pub mod advise_command;
pub mod advise_text;
pub mod backend_input;
pub mod bench;
pub mod calibrate_command;
pub mod control;
pub mod disturbance;
pub mod explorer;
pub mod findings;
pub mod flags;
pub mod forecast;
pub mod knobs;
pub mod map;
pub mod map_command;
pub mod measured_timeline;
pub mod model_command;
pub mod pair_input;
pub mod pingpong;
pub mod profile_text;
pub mod qos;
pub mod qos_command;
pub mod qos_real;
pub mod rates_text;
pub mod real;
pub mod replay;
pub mod report;
pub mod run_command;
pub mod run_output;
pub mod scale;
pub mod scale_command;
pub mod self_check_text;
pub mod sim_command;
pub mod sweep_command;
pub mod trace;
pub mod trace_text;
pub mod unused;
pub mod validate;

mod error;
mod progress;

pub use error::{Input, LabError};

/// Refuses a simulated study (`what`: a map, a control study) of `runs`
/// runs of `messages`, each after a warm-up of `warmup` (L up to `len`),
/// beyond [`kicklab_sim::MAX_STUDY_MESSAGES`] in all: hours, refused
/// before anything runs, naming L where the warm-ups grew it, else the
/// messages.
pub(crate) fn study_within_budget(
    what: &str,
    runs: u64,
    messages: u64,
    warmup: u64,
    len: u32,
) -> Result<(), LabError> {
    let max = kicklab_sim::MAX_STUDY_MESSAGES;
    match kicklab_sim::over_budget(runs, messages, warmup, len, max) {
        None => Ok(()),
        Some((total, true)) => Err(LabError::Param(kicklab_model::ParamError {
            param: kicklab_model::Param::Len,
            reason: format!(
                "{runs} runs, each after a warm-up of up to 4 L = {} messages, are {total} \
                 simulated messages, hours; a {what} takes at most {max}",
                4 * u64::from(len)
            ),
        })),
        Some((total, false)) => Err(LabError::Sim(kicklab_sim::SimError::StudyTooLarge {
            runs,
            messages,
            total,
        })),
    }
}
pub use progress::{start_threads, with_heartbeat, Progress, Silent};
