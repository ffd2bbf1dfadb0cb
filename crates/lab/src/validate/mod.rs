//! The paper's Fig. 4 on this machine: W_C fixed, W_P swept; the model
//! (calibrated means and medians), the simulator (calibrated
//! distributions) and the measurement, with notifications and with
//! polling, each measured several times (medians and ranges; disturbed
//! repetitions run again, disturbed points flagged), as points, a summary
//! of the errors, charts, tables, JSON and a report section.
//!
//! `types` holds the data, `run` runs the sweep, `judge` computes the
//! errors and the summary, `render` draws and prints them, `request` is
//! the command as one call.

mod judge;
mod render;
mod request;
mod run;
#[cfg(test)]
mod tests;
mod types;

pub use judge::*;
pub use render::*;
pub use request::*;
pub use run::*;
pub use types::*;
