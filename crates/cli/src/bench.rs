//! `kicklab sim --bench`: calls `kicklab_lab::bench::measure`, prints.

use kicklab_lab::bench::{measure, text};

pub fn run(as_json: bool) -> anyhow::Result<()> {
    let s = measure(&kicklab_term::progress::Bars::default())?;
    if as_json {
        return kicklab_term::show::print_json(&serde_json::to_value(s)?);
    }
    for line in text(&s) {
        outln!("{line}");
    }
    Ok(())
}
