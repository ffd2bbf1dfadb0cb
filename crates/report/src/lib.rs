//! Charts (SVG, drawn with plotters), CSV tables and the one HTML page of
//! `kicklab report`.
//!
//! What lives here: turning results into files ([`Chart`], [`sweep_csv`],
//! [`sweep_charts`], [`Page`]). What does not: computing them (model, sim,
//! testbeds) or deciding what the report contains (the `kicklab` binary).

mod chart;
mod page;
mod sweep;
mod table;
mod write;

pub use chart::{Chart, Mark, Series, Style};
pub use page::{html_escape, Page, Section};
pub use sweep::{regime_marks, sweep_charts, sweep_csv};
pub use table::{Cell, Column, Kind, Table};
pub use write::write_atomic;

/// A chart or a page could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// plotters failed while drawing.
    #[error("drawing {0}: {1}")]
    Draw(String, String),
    /// Writing a file failed.
    #[error("writing {0}: {1}")]
    Io(String, std::io::Error),
}
