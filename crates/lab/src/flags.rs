//! Shared-memory notification flags against a system call over many
//! sources (VMware's bit vector vs `select()`): the sweep over the number
//! of sources, the check of its target, and the report's section.
//! The runs themselves are `kicklab_testbed::flags`.

use std::time::Duration;

use kicklab_report::{Chart, ErrorBar, Section, Series, Style, YScale};
use kicklab_testbed::flags::{flags, FlagPath, FlagsBackend, FlagsConfig, FlagsResult};

use crate::{Input, LabError, Progress};

/// Sources of the sweep.
pub const SOURCES: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];

/// Repetitions of each point in the full report and `kicklab flags`; the
/// run of median wake-up cost is kept (the machine is shared: one run can
/// meet a neighbour's burst).
pub const REPEAT: usize = 3;

/// W_P of the pair the measured costs are fed to: slower than the
/// consumer's 1.1 us (Fig. 4's W_C), so the consumer sleeps and is
/// notified for every message (the FC regime), where N and S count most.
pub const PAIR_WP_NS: f64 = 2000.0;

/// The measured costs fed to the model as N and S: the paper's pair
/// (Fig. 4's costs, L = 256) with W_P = [`PAIR_WP_NS`], the producer's
/// notification N_P = this run's cost per notification and the
/// consumer's wake-up S_C = its cost per wake-up. The model's (T, E) [ns],
/// or `None` if the costs make no pair.
pub fn pair_model(r: &FlagsResult) -> Option<(f64, f64)> {
    use kicklab_model::{predict, Cost, Params, WaitMode};
    let p = Params {
        w_p: Cost::Const(PAIR_WP_NS),
        n_p: Cost::Const(r.notify_ns),
        s_c: Cost::Const(r.wake_ns),
        ..Params::default()
    };
    let pr = predict(&p, WaitMode::Notify).ok()?;
    Some((pr.rates.t_ns, pr.rates.e_ns))
}

/// The time between two signals by default: long enough for the watcher
/// to sleep in between (a guest's signal through a port exits, which
/// costs tens of microseconds nested).
pub fn default_gap(backend: FlagsBackend) -> Duration {
    match backend {
        FlagsBackend::Threads => Duration::from_micros(20),
        FlagsBackend::Kvm => Duration::from_micros(100),
    }
}

/// Runs every path at every count, `signals` each, [`default_gap`] apart
/// (the consumer sleeps between two), `repeat` times (at least once),
/// keeping the median.
///
/// # Errors
///
/// A run that fails, or a signal lost or counted twice.
pub fn sweep(
    backend: FlagsBackend,
    signals: u64,
    repeat: usize,
    progress: &dyn Progress,
) -> Result<Vec<(FlagsResult, Ranges)>, LabError> {
    progress.start("flags", (SOURCES.len() * 3 * repeat.max(1)) as u64);
    let mut out = Vec::new();
    for sources in SOURCES {
        for path in [FlagPath::Poll, FlagPath::Epoll, FlagPath::Bitmap] {
            let cfg = FlagsConfig {
                backend,
                sources,
                path,
                signals,
                gap: default_gap(backend),
            };
            out.push(median_run(&cfg, repeat, &|| progress.step())?);
        }
    }
    progress.finish();
    Ok(out)
}

/// The lowest and the highest of a point's repetitions: the wake-up's and
/// the notification's cost [ns].
pub type Ranges = [(f64, f64); 2];

/// Runs `cfg` `repeat` times (at least once) and keeps the run of median
/// wake-up cost (the machine may be shared: one run can meet a
/// neighbour's burst), with the range of the repetitions; `step` is
/// called after each run.
///
/// # Errors
///
/// A run that fails, or a signal lost or counted twice.
pub fn median_run(
    cfg: &FlagsConfig,
    repeat: usize,
    step: &dyn Fn(),
) -> Result<(FlagsResult, Ranges), LabError> {
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
    let range = |f: fn(&FlagsResult) -> f64| {
        reps.iter()
            .map(f)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
    };
    let ranges = [range(|r| r.wake_ns), range(|r| r.notify_ns)];
    reps.sort_by(|a, b| a.wake_ns.total_cmp(&b.wake_ns));
    let mid = reps.len() / 2;
    Ok((reps.swap_remove(mid), ranges))
}

/// How far the bit vector's wake-up cost may spread across the number of
/// sources watched, largest over smallest (the target: a shared
/// flag word costs the same however many sources it carries).
pub const BITMAP_SPREAD_TARGET: f64 = 1.2;

/// The bit vector's spread across the sources ([`spread`]) and whether it
/// is within [`BITMAP_SPREAD_TARGET`]; `None` where it was not measured.
pub fn bitmap_within_target(runs: &[FlagsResult]) -> Option<(f64, bool)> {
    spread(runs, FlagPath::Bitmap).map(|x| (x, x <= BITMAP_SPREAD_TARGET))
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

/// A `flags` request: every count of sources on every path, each the
/// median of `repeat` runs of `signals` signals `gap` apart.
#[derive(Debug, Clone)]
pub struct FlagsRequest {
    /// Who signals: threads or a KVM guest.
    pub backend: FlagsBackend,
    /// Counts of sources, one run (per path) each.
    pub sources: Vec<usize>,
    /// Notification paths, one run (per count) each.
    pub paths: Vec<FlagPath>,
    /// Signals per run.
    pub signals: u64,
    /// The pause between signals.
    pub gap: Duration,
    /// Runs per point, their median reported.
    pub repeat: usize,
}

impl FlagsRequest {
    /// Checks the request before anything runs.
    ///
    /// # Errors
    ///
    /// [`LabError::Input`] naming the first setting out of range.
    pub fn check(&self) -> Result<(), LabError> {
        let most_signals: u64 = match self.backend {
            FlagsBackend::Threads => 10_000_000,
            FlagsBackend::Kvm => (1 << 30) - 1,
        };
        if self.signals == 0 || self.signals > most_signals {
            return Err(LabError::input(
                Input::Signals,
                format!(
                    "1 to {most_signals} per run with {}",
                    backend_name(self.backend)
                ),
            ));
        }
        crate::error::no_repeats(Input::Sources, &self.sources)?;
        crate::error::no_repeats(Input::Path, &self.paths)?;
        if self.repeat == 0 || self.repeat > 25 {
            return Err(LabError::input(Input::Repeat, "1 to 25"));
        }
        let most = match self.backend {
            FlagsBackend::Threads => 1024,
            FlagsBackend::Kvm => kicklab_testbed::kvm::flags::MAX_SOURCES,
        };
        if self.sources.iter().any(|&n| n == 0 || n > most) {
            return Err(LabError::input(
                Input::Sources,
                format!("1 to {most} each with {}", backend_name(self.backend)),
            ));
        }
        if self.gap.is_zero() || self.gap > Duration::from_millis(100) {
            return Err(LabError::input(Input::Gap, "above 0 and at most 100ms"));
        }
        Ok(())
    }
}

impl FlagsRequest {
    /// Runs every source count over every path (each the median of the
    /// repetitions), calling `each` with each result as it comes.
    ///
    /// # Errors
    ///
    /// The request's check ([`FlagsRequest::check`]), a run that fails.
    pub fn run(&self, each: &dyn Fn(&FlagsResult)) -> Result<Vec<FlagsResult>, LabError> {
        self.check()?;
        let mut runs = Vec::new();
        for &sources in &self.sources {
            for &path in &self.paths {
                let cfg = FlagsConfig {
                    backend: self.backend,
                    sources,
                    path,
                    signals: self.signals,
                    gap: self.gap,
                };
                let (r, _) = median_run(&cfg, self.repeat, &|| {})?;
                each(&r);
                runs.push(r);
            }
        }
        Ok(runs)
    }
}

fn backend_name(b: FlagsBackend) -> String {
    format!("{b:?}").to_lowercase()
}

/// The header of [`text_line`]'s table.
#[must_use]
pub fn text_header() -> String {
    format!(
        "{:>8} {:<8} {:>16} {:>16} {:>9} {:>9} {:>22}",
        "sources",
        "path",
        "notify (CPU)",
        "wake-up (CPU)",
        "wake-ups",
        "counted",
        "pair T / E (model)"
    )
}

/// One run as a line of the table.
#[must_use]
pub fn text_line(r: &FlagsResult) -> String {
    let f = kicklab_model::fmt_ns;
    format!(
        "{:>8} {:<8} {:>16} {:>16} {:>9} {:>9} {:>22}",
        r.sources,
        format!("{:?}", r.path).to_lowercase(),
        f(r.notify_ns),
        f(r.wake_ns),
        r.wakeups,
        format!("{}/{}", r.received, r.signals),
        pair_model(r).map_or("-".into(), |(t, e)| format!("{} / {}", f(t), f(e)))
    )
}

/// The runs as `flags --json` prints them: `{"runs": [...]}`, each run
/// with the pair model beside it.
///
/// # Errors
///
/// A run that cannot be put in JSON.
pub fn runs_json(runs: &[FlagsResult]) -> Result<serde_json::Value, LabError> {
    let runs: Vec<serde_json::Value> = runs
        .iter()
        .map(|r| {
            let mut v = serde_json::to_value(r)?;
            v["pair_model"] = match pair_model(r) {
                Some((t, e)) => serde_json::json!({
                    "wp_ns": PAIR_WP_NS,
                    "T_ns": t,
                    "E_ns": e,
                }),
                None => serde_json::Value::Null,
            };
            Ok(v)
        })
        .collect::<Result<_, serde_json::Error>>()?;
    Ok(serde_json::json!({ "runs": runs }))
}

/// The report's section.
///
/// # Errors
///
/// A chart that cannot be drawn.
/// `ranges`: each run's repetitions, drawn as bars where there were
/// several.
pub fn section(
    runs: &[FlagsResult],
    ranges: &[Ranges],
    signals: u64,
    repeat: usize,
) -> Result<Section, LabError> {
    #[allow(clippy::cast_precision_loss)]
    let line = |path: FlagPath, f: &dyn Fn(&FlagsResult) -> f64| -> Vec<(f64, f64)> {
        runs.iter()
            .filter(|r| r.path == path)
            .map(|r| (r.sources as f64, f(r)))
            .collect()
    };
    let kvm = runs.first().is_some_and(|r| r.backend == FlagsBackend::Kvm);
    let (bitmap_name, fd_name) = if kvm {
        ("guest's bit vector, one kick ioeventfd", "ioeventfd")
    } else {
        ("shared bit vector, one futex", "eventfd")
    };
    let epoll_name = format!("epoll over one {fd_name} each");
    let poll_name = format!("poll over one {fd_name} each (select family)");
    // The repetitions' lowest and highest, per path, where there were
    // several: `which` 0 is the wake-up, 1 the notification.
    #[allow(clippy::cast_precision_loss)]
    let bars = |path: FlagPath, which: Option<usize>| -> Vec<ErrorBar> {
        let Some(which) = which.filter(|_| repeat > 1) else {
            return Vec::new();
        };
        runs.iter()
            .zip(ranges)
            .filter(|(r, _)| r.path == path)
            .map(|(r, range)| ErrorBar {
                x: r.sources as f64,
                lo: range[which].0 / 1e3,
                hi: range[which].1 / 1e3,
            })
            .collect()
    };
    let chart =
        |title: &str, y: &str, f: &dyn Fn(&FlagsResult) -> f64, which: Option<usize>| Chart {
            title: title.into(),
            x_label: "sources watched".into(),
            y_label: y.into(),
            series: [
                (bitmap_name, FlagPath::Bitmap, Style::Thick),
                (epoll_name.as_str(), FlagPath::Epoll, Style::Line),
                (poll_name.as_str(), FlagPath::Poll, Style::Dashed),
            ]
            .into_iter()
            .map(|(name, p, style)| Series {
                name: name.into(),
                points: line(p, f),
                style,
                error_bars: bars(p, which),
            })
            .collect(),
            y_scale: YScale::Auto,
            ..Chart::default()
        };
    let (wake_title, notify_title) = if kvm {
        (
            "Host thread's CPU per wake-up (a guest signals)",
            "Guest's time per signal (its TSC)",
        )
    } else {
        ("Consumer CPU per wake-up", "Producer CPU per notification")
    };
    let (wake_y, notify_y) = if kvm {
        ("CPU per wake-up [us]", "time per signal [us]")
    } else {
        ("CPU per wake-up [us]", "CPU per notification [us]")
    };
    let wake = chart(wake_title, wake_y, &|r| r.wake_ns / 1e3, Some(0));
    let notify = chart(notify_title, notify_y, &|r| r.notify_ns / 1e3, Some(1));
    let pair_e = chart(
        "The pair's CPU per message, the model fed these costs as N_P and S_C",
        "E [us] (W_P 2 us, W_C 1.1 us)",
        &|r| pair_model(r).map_or(f64::NAN, |(_, e)| e / 1e3),
        None,
    )
    // The paths differ by a little at a level far from 0.
    .with_fitted_y();
    let ratio = |x: f64| format!("{}x", kicklab_model::sig(x, kicklab_model::SHORT_DIGITS));
    let g = |p| growth(runs, p).map_or("-".into(), ratio);
    let sp = |p| spread(runs, p).map_or("-".into(), ratio);
    let bitmap = bitmap_within_target(runs);
    let within = bitmap.map_or("not measured", |(_, ok)| if ok { "met" } else { "missed" });
    let gap = runs
        .first()
        .map_or(20.0, |r| default_gap(r.backend).as_secs_f64() * 1e6);
    let figures = format!(
        "{signals} signals per point, every one counted once; {}. {} wake-up cost at 64 \
         sources over 1: bit vector {}, epoll {}, poll {}; largest over smallest across the sources: bit vector {} \
         (target: within {BITMAP_SPREAD_TARGET}x, {within}), poll {}. The third chart feeds each run's costs to the model \
         as the signaller's notification N_P and the watcher's wake-up S_C of Fig. 4's pair with W_P = 2 us (the \
         watcher sleeps, FC). There a dearer wake-up can make the pair cheaper per message: while the watcher wakes, \
         more messages queue, and it takes them all in one wake-up (a larger m). That is the mechanism of the paper's \
         \"a slower wakeup time improves performance\" (section 3.1, said of throughput), here applied to CPU per \
         message: the path whose wake-up grows with the sources need not cost the pair more per message.",
        if repeat > 1 {
            format!("the median of {repeat} runs, bars from the lowest to the highest")
        } else {
            format!("one run per point (the median of {REPEAT} in the full report)")
        },
        if kvm { "Host" } else { "Consumer" },
        g(FlagPath::Bitmap),
        g(FlagPath::Epoll),
        g(FlagPath::Poll),
        bitmap.map_or("-".into(), |(x, _)| {
            format!("{}x", kicklab_model::sig(x, kicklab_model::SHORT_DIGITS))
        }),
        sp(FlagPath::Poll)
    );
    let (id, heading, html) = if kvm {
        (
            "flags-kvm",
            "Notification flags in shared memory vs a system call, from a KVM guest (VMware)",
            format!(
                "<p>The same with a real guest as the signaller (<code>{kvm}</code>, \
                 <code>docs/vm-mechanisms.md</code>): every {gap:.0} us it signals one of 1 to 64 sources, either by \
                 setting the source's bit in a bit vector in its memory and kicking the one kick ioeventfd only if the \
                 host thread asked (it asks before it sleeps, then looks again), or by writing the source's own port, an \
                 ioeventfd each, which the host thread waits on with <code>poll</code> or <code>epoll</code>. The host \
                 validates the vector: a bit of a source that does not exist stops the run. {figures}</p>\
                 <p>Reproduce: <code>{kvm}</code>.</p>",
                kvm = kicklab_model::CommandLine::new("flags").arg(kicklab_model::Flag::Backend, "kvm"),
            ),
        )
    } else {
        (
            "flags",
            "Notification flags in shared memory vs a system call (VMware)",
            format!(
                "<p>VMware's hosted VMM checks a bit vector the host driver sets in shared memory on every IRQ instead of \
                 a <code>select()</code> over all devices. Here one consumer thread watches 1 to 64 sources, signalled one \
                 at a time by a producer thread {gap:.0} us apart (so the consumer sleeps in between): with one eventfd per \
                 source and <code>poll</code> (the select family) or <code>epoll</code>, or with a shared bit vector, \
                 per-source counters and one futex for all (whose wake system call is made only when the consumer sleeps). \
                 {figures}</p>\
                 <p>Reproduce: <code>kicklab flags</code>.</p>"
            ),
        )
    };
    let mut s = Section::new(id, heading);
    s.html = html;
    for (name, chart) in [("wake", &wake), ("notify", &notify), ("pair", &pair_e)] {
        s.push_chart(
            &format!("{id}-{name}"),
            chart,
            kicklab_report::FIG_W,
            kicklab_report::FIG_H,
        )?;
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(sources: usize, path: FlagPath, wake_ns: f64) -> FlagsResult {
        FlagsResult {
            backend: FlagsBackend::Threads,
            sources,
            path,
            notify_ns: 1000.0,
            wake_ns,
            wakeups: 100,
            signals: 100,
            received: 100,
        }
    }

    #[test]
    fn repeated_points_draw_their_range_and_single_ones_none() {
        let runs: Vec<FlagsResult> = SOURCES
            .iter()
            .flat_map(|&n| {
                [FlagPath::Poll, FlagPath::Epoll, FlagPath::Bitmap].map(|p| run(n, p, 2000.0))
            })
            .collect();
        let ranges: Vec<Ranges> = runs
            .iter()
            .map(|_| [(1500.0, 2600.0), (900.0, 1100.0)])
            .collect();
        let repeated = section(&runs, &ranges, 100, 3).unwrap();
        assert!(repeated
            .html
            .contains("bars from the lowest to the highest"));
        let single = section(&runs, &ranges, 100, 1).unwrap();
        assert!(!single.html.contains("bars from the lowest"));
        // The wake-up and notification charts carry a bar per point and
        // path; the model's chart and the single runs' none.
        let bars = |s: &Section| -> Vec<usize> {
            s.figures
                .iter()
                .map(|(_, svg, _)| svg.matches("class=\"errbar\"").count())
                .collect()
        };
        let points = SOURCES.len() * 3;
        assert_eq!(bars(&repeated), [points, points, 0]);
        assert_eq!(bars(&single), [0, 0, 0]);
    }
}
