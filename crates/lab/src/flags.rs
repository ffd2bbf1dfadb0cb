//! Shared-memory notification flags against a system call over many
//! sources (VMware's bit vector vs `select()`): the sweep over the number
//! of sources, the check of issue 17's target, and the report's section.
//! The runs themselves are `kicklab_testbed::flags`.

use std::time::Duration;

use kicklab_report::{Chart, Section, Series, Style, YScale};
use kicklab_testbed::flags::{flags, FlagPath, FlagsConfig, FlagsResult};

use crate::{LabError, Progress};

/// Sources of the sweep.
pub const SOURCES: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Repetitions of each point; the run of median wake-up cost is kept (the
/// machine is shared: one run can meet a neighbour's burst).
pub const REPEAT: usize = 3;

/// Runs every path at every count, `signals` each, 20 us apart (the
/// consumer sleeps between two), [`REPEAT`] times, keeping the median.
///
/// # Errors
///
/// A run that fails, or a signal lost or counted twice.
pub fn sweep(signals: u64, progress: &dyn Progress) -> Result<Vec<FlagsResult>, LabError> {
    progress.start("flags", (SOURCES.len() * 3 * REPEAT) as u64);
    let mut out = Vec::new();
    for sources in SOURCES {
        for path in [FlagPath::Poll, FlagPath::Epoll, FlagPath::Bitmap] {
            let cfg = FlagsConfig {
                sources,
                path,
                signals,
                gap: Duration::from_micros(20),
            };
            out.push(median_run(&cfg, REPEAT, &|| progress.step())?);
        }
    }
    progress.finish();
    Ok(out)
}

/// Runs `cfg` `repeat` times (at least once) and keeps the run of median
/// wake-up cost (the machine may be shared: one run can meet a
/// neighbour's burst); `step` is called after each run.
///
/// # Errors
///
/// A run that fails, or a signal lost or counted twice.
pub fn median_run(
    cfg: &FlagsConfig,
    repeat: usize,
    step: &dyn Fn(),
) -> Result<FlagsResult, LabError> {
    let mut reps = Vec::with_capacity(repeat.max(1));
    for _ in 0..repeat.max(1) {
        let r = flags(cfg)?;
        if r.received != r.signals {
            return Err(LabError::Testbed(kicklab_testbed::TestbedError::Hang(
                format!(
                    "{:?} with {} sources counted {} of {} signals",
                    cfg.path, cfg.sources, r.received, r.signals
                ),
            )));
        }
        reps.push(r);
        step();
    }
    reps.sort_by(|a, b| a.wake_ns.total_cmp(&b.wake_ns));
    let mid = reps.len() / 2;
    Ok(reps.swap_remove(mid))
}

/// The largest over the smallest wake-up cost of `path` across the
/// sources.
pub fn spread(runs: &[FlagsResult], path: FlagPath) -> Option<f64> {
    let v: Vec<f64> = runs
        .iter()
        .filter(|r| r.path == path)
        .map(|r| r.wake_ns)
        .collect();
    let max = v.iter().copied().reduce(f64::max)?;
    let min = v.iter().copied().reduce(f64::min)?;
    Some(max / min)
}

/// The wake-up cost at 64 sources over that at 1, per path.
pub fn growth(runs: &[FlagsResult], path: FlagPath) -> Option<f64> {
    let at = |n| runs.iter().find(|r| r.path == path && r.sources == n);
    Some(at(64)?.wake_ns / at(1)?.wake_ns)
}

/// The report's section.
///
/// # Errors
///
/// A chart that cannot be drawn.
pub fn section(runs: &[FlagsResult], signals: u64) -> Result<Section, LabError> {
    #[allow(clippy::cast_precision_loss)]
    let line = |path: FlagPath, f: &dyn Fn(&FlagsResult) -> f64| -> Vec<(f64, f64)> {
        runs.iter()
            .filter(|r| r.path == path)
            .map(|r| (r.sources as f64, f(r)))
            .collect()
    };
    let chart = |title: &str, y: &str, f: &dyn Fn(&FlagsResult) -> f64| Chart {
        title: title.into(),
        x_label: "sources watched".into(),
        y_label: y.into(),
        series: [
            (
                "shared bit vector, one futex",
                FlagPath::Bitmap,
                Style::Thick,
            ),
            ("epoll over one eventfd each", FlagPath::Epoll, Style::Line),
            (
                "poll over one eventfd each (select family)",
                FlagPath::Poll,
                Style::Dashed,
            ),
        ]
        .into_iter()
        .map(|(name, p, style)| Series {
            name: name.into(),
            points: line(p, f),
            style,
            error_bars: Vec::new(),
        })
        .collect(),
        y_scale: YScale::Linear,
        ..Chart::default()
    };
    let wake = chart("Consumer CPU per wake-up", "us", &|r| r.wake_ns / 1e3);
    let notify = chart("Producer CPU per notification", "us", &|r| {
        r.notify_ns / 1e3
    });
    let g = |p| growth(runs, p).map_or("-".into(), |x| format!("{x:.2}x"));
    let sp = |p| spread(runs, p).map_or("-".into(), |x| format!("{x:.2}x"));
    let mut s = Section::new(
        "flags",
        "Notification flags in shared memory vs a system call (VMware)",
    );
    s.html = format!(
        "<p>VMware's hosted VMM checks a bit vector the host driver sets in shared memory on every IRQ instead of a \
         <code>select()</code> over all devices. Here one consumer thread watches 1 to 64 sources, signalled one at a time \
         by a producer thread 20 us apart (so the consumer sleeps in between): with one eventfd per source and \
         <code>poll</code> (the select family) or <code>epoll</code>, or with a shared bit vector, per-source counters and \
         one futex for all (whose wake system call is made only when the consumer sleeps). {signals} signals per point, \
         every one counted once; the median of {} runs. Wake-up cost at 64 sources over 1: bit vector {}, epoll {}, poll {}; \
         largest over smallest across the sources: bit vector {} (target: within 1.2x), poll {}.</p>\
         <p>Reproduce: <code>kicklab flags</code>.</p>",
        REPEAT,
        g(FlagPath::Bitmap),
        g(FlagPath::Epoll),
        g(FlagPath::Poll),
        sp(FlagPath::Bitmap),
        sp(FlagPath::Poll)
    );
    s.push_chart(
        "flags-wake",
        &wake,
        kicklab_report::FIG_W,
        kicklab_report::FIG_H,
    )?;
    s.push_chart(
        "flags-notify",
        &notify,
        kicklab_report::FIG_W,
        kicklab_report::FIG_H,
    )?;
    Ok(s)
}
