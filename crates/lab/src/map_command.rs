//! `kicklab map` as one library call: a [`MapSpec`] in; the page, the CSV
//! and the summary line out ([`MapOutput`]). What does not live here: the
//! grid itself and its drawing ([`crate::map`]), the output folder (the
//! front end's).

use kicklab_model::{CommandLine, Flag};
use kicklab_report::Page;

use crate::map::{check_page, csv, map, section, summary, MapSpec};
use crate::{LabError, Progress};

/// A map and how it is shown.
#[derive(Debug)]
pub struct MapOutput {
    /// The page (`index.html` and its maps).
    pub page: Page,
    /// Every cell as CSV (`map.csv`).
    pub csv: String,
    /// One line: the regimes found and where.
    pub summary: String,
}

/// Computes the grid and its page.
///
/// # Errors
///
/// The input at fault; a failed simulation.
pub fn run(spec: &MapSpec, progress: &dyn Progress) -> Result<MapOutput, LabError> {
    check_page(spec)?;
    let points = map(spec, progress)?;
    let cmd = CommandLine::new("map")
        .arg(Flag::X, spec.x)
        .arg(Flag::Y, spec.y)
        .arg(Flag::Strategy, spec.mode)
        .arg(Flag::Messages, spec.sim_messages.unwrap_or(0))
        .to_string();
    Ok(MapOutput {
        page: Page {
            title: "kicklab map".into(),
            intro_html: String::new(),
            sections: vec![section(&points, spec, &cmd)?],
        },
        csv: csv(&points, spec),
        summary: summary(&points, spec.mode),
    })
}
