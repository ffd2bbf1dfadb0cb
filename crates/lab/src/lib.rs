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
pub mod bench;
pub mod control;
pub mod disturbance;
pub mod explorer;
pub mod flags;
pub mod map;
pub mod pingpong;
pub mod qos;
pub mod qos_real;
pub mod real;
pub mod report;
pub mod scale;
pub mod validate;

mod error;
mod progress;

pub use error::{Input, LabError};
pub use progress::{Progress, Silent};
