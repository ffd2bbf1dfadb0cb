//! Charts (SVG), tables (HTML, CSV, JSON) and the one HTML page of
//! `kicklab report`.
//!
//! What lives here: turning results into files: charts ([`Chart`]), tables
//! ([`Table`]: HTML, CSV, JSON), the page ([`Page`]), sweep results in
//! those forms ([`sweep_table`], [`sweep_charts`]), a run's intervals as
//! lanes ([`timeline_svg`]), and writing them:
//! [`write_atomic`] for one file, [`OutDir`] for a run's folder.
//! What does not: computing results (model, sim, testbeds) or deciding what
//! a report contains (the callers).

mod chart;
mod heatmap;
#[cfg(unix)]
mod out_dir;
mod page;
mod paragraphs;
mod sweep;
mod table;
mod temporaries;
mod timeline;
mod write;

pub use chart::{Band, Chart, Clip, ErrorBar, Mark, Series, Style, YScale, FIG_H, FIG_W};
pub use heatmap::{Heatmap, MapCell};
#[cfg(unix)]
pub use out_dir::{OutDir, OutDirError, MARKER};
pub use page::{html_escape, text_html, Layout, Page, Section};
pub use sweep::{
    regime_bands, regime_bands_of, regime_marks, sweep_charts, sweep_csv, sweep_table,
};
pub use table::{Cell, Column, Kind, Table};
pub use temporaries::{
    forget_temporary, is_registered, register_temporary, remove_temporaries, TemporariesRemoved,
};
pub use timeline::{timeline_svg, TimelinePanel};
pub use write::{check_writable, stage_file, write_atomic, Staged};

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
