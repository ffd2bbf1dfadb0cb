//! What commands share for showing a run: its result as JSON or as lines
//! ([`result`]), the disturbance warnings, a `--timeline` drawing saved. What does not live here:
//! the words of any output (the lab's `*_text` modules), the write macros
//! and their failure handling ([`crate::out`]).

use kicklab_model::Flag;

/// Prints `value` as one JSON object on stdout.
///
/// # Errors
///
/// A value that is not JSON.
pub fn print_json(value: &serde_json::Value) -> anyhow::Result<()> {
    outln!("{}", serde_json::to_string(value)?);
    Ok(())
}

/// Prints a command's result: `json` as one object when `as_json`, else
/// each of `lines` on its own line.
///
/// # Errors
///
/// As [`print_json`].
pub fn result(as_json: bool, json: &serde_json::Value, lines: &[String]) -> anyhow::Result<()> {
    if as_json {
        return print_json(json);
    }
    for line in lines {
        outln!("{line}");
    }
    Ok(())
}

/// Prints each warning as a `warning: ` line on stderr, after `context`
/// (`"W_P 1us: "`, say), then one line saying the run is disturbed.
pub fn print_warnings(context: &str, warnings: &[kicklab_lab::disturbance::Warning]) {
    for w in warnings {
        errln!("warning: {context}{w}");
    }
    if !warnings.is_empty() {
        errln!(
            "warning: {context}this measurement is disturbed: its numbers are not the pair's alone"
        );
    }
}

/// Writes a `--timeline` drawing to `path`; where there is none, the
/// error says that `source` holds too few kicks and sleeps to draw.
///
/// # Errors
///
/// Nothing to draw, or a failed write.
pub fn save_timeline(
    path: &std::path::Path,
    svg: Option<&str>,
    source: &str,
) -> anyhow::Result<()> {
    let svg = svg.ok_or_else(|| {
        anyhow::anyhow!(
            "{}: {source} fewer than {} kicks and sleeps of the pair (a polling pair has none): nothing to draw",
            Flag::Timeline,
            kicklab_lab::trace::TIMELINE_MARKS + 1
        )
    })?;
    crate::files::save(path, Flag::Timeline, svg.as_bytes(), "drew")?;
    Ok(())
}
