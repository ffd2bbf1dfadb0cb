//! What commands share for showing a run: repeated list items refused,
//! the disturbance warnings, whether a latency bound was typed without
//! its unit, JSON on standard output, a `--timeline` drawing saved. What does not live here: the write macros, their
//! failure handling and the progress bars (`kicklab_term`).

use kicklab_term::cmdline::args_text;
use kicklab_term::Usage;

/// Fails (a [`Usage`] naming `flag`) where a list flag names an item twice
/// (`--vms 1,1`): it would run the same thing again, or the last would
/// silently win.
///
/// # Errors
///
/// A [`Usage`] error naming the item.
pub fn no_repeats<T: PartialEq + std::fmt::Debug>(flag: &str, items: &[T]) -> anyhow::Result<()> {
    match kicklab_model::first_repeat(items) {
        Some(x) => Err(Usage(format!(
            "{flag}: {} is listed twice (each runs once)",
            format!("{x:?}").to_lowercase().replace('"', "")
        ))
        .into()),
        None => Ok(()),
    }
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

/// Whether a latency bound on the command line (`--latency D` or
/// `latency=D` in a strategy) was written as a bare number, without its
/// unit.
pub fn latency_written_bare() -> bool {
    let args = args_text();
    let bare = |v: &str| v.trim().ends_with(|c: char| c.is_ascii_digit() || c == '.');
    args.iter().enumerate().any(|(i, a)| {
        if a == "--latency" {
            return args.get(i + 1).is_some_and(|v| bare(v));
        }
        if let Some(v) = a.strip_prefix("--latency=") {
            return bare(v);
        }
        a.split("latency=")
            .skip(1)
            .any(|v| bare(v.split(',').next().unwrap_or_default()))
    })
}

/// Prints `value` as one JSON object on stdout.
pub fn print_json(value: &serde_json::Value) -> anyhow::Result<()> {
    outln!("{}", serde_json::to_string(value)?);
    Ok(())
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
            "--timeline: {source} fewer than {} kicks and sleeps of the pair (a polling pair has none): nothing to draw",
            kicklab_lab::trace::TIMELINE_MARKS + 1
        )
    })?;
    kicklab_term::files::save(path, "--timeline", svg.as_bytes())?;
    errln!("drew {}", path.display());
    Ok(())
}
