//! Idle-with-timeout at scale (Denali): the sweep over the number of
//! guests, both idle strategies, and the report's section. The runs
//! themselves are `kicklab_testbed::scale`.

use kicklab_report::{Chart, Section, Series, Style};
use kicklab_testbed::scale::{scale, ScaleConfig, ScaleIdle, ScaleResult};

use crate::{LabError, Progress};

/// The guest counts of the sweep.
pub const VMS: [usize; 5] = [1, 2, 4, 8, 16];

/// Runs every count with both idle strategies, `seconds` each: guests as
/// threads, or (`kvm`) as tiny KVM guests of one vCPU each.
///
/// # Errors
///
/// A run that fails.
pub fn sweep(
    kvm: bool,
    seconds: f64,
    progress: &dyn Progress,
) -> Result<Vec<ScaleResult>, LabError> {
    let duration = std::time::Duration::from_secs_f64(seconds.clamp(0.01, 600.0));
    progress.start("scale", (VMS.len() * 2) as u64);
    let mut out = Vec::new();
    for vms in VMS {
        for idle in [ScaleIdle::Spin, ScaleIdle::Timeout] {
            let cfg = ScaleConfig {
                duration,
                ..ScaleConfig::new(vms, idle)
            };
            out.push(if kvm {
                kicklab_testbed::kvm::scale::scale(&cfg)?
            } else {
                scale(&cfg)?
            });
            progress.step();
        }
    }
    progress.finish();
    Ok(out)
}

/// The report's section: throughput and CPU over the number of guests.
///
/// # Errors
///
/// A chart that cannot be drawn.
pub fn section(runs: &[ScaleResult], seconds: f64, kvm: bool) -> Result<Section, LabError> {
    #[allow(clippy::cast_precision_loss)]
    let line = |idle: ScaleIdle, f: &dyn Fn(&ScaleResult) -> f64| -> Vec<(f64, f64)> {
        runs.iter()
            .filter(|r| r.idle == idle)
            .map(|r| (r.vms as f64, f(r)))
            .collect()
    };
    let series = |name: &str, style, points| Series {
        name: name.into(),
        points,
        style,
        error_bars: Vec::new(),
    };
    let thr = Chart {
        title: format!(
            "Throughput over guests time-sharing the CPUs ({})",
            if kvm { "KVM guests" } else { "threads" }
        ),
        x_label: "guests".into(),
        y_label: "requests/s, all guests".into(),
        series: vec![
            series(
                "idle with timeout",
                Style::Thick,
                line(ScaleIdle::Timeout, &|r| r.throughput_per_s),
            ),
            series(
                "idle by spinning",
                Style::Line,
                line(ScaleIdle::Spin, &|r| r.throughput_per_s),
            ),
        ],
        ..Chart::default()
    };
    let cpu = Chart {
        title: "CPU used, share of all CPUs".into(),
        x_label: "guests".into(),
        y_label: "CPU".into(),
        series: vec![
            series(
                "idle with timeout",
                Style::Thick,
                line(ScaleIdle::Timeout, &|r| r.cpu_util),
            ),
            series(
                "idle by spinning",
                Style::Line,
                line(ScaleIdle::Spin, &|r| r.cpu_util),
            ),
        ],
        y_range: Some((0.0, 1.05)),
        ..Chart::default()
    };
    let at = |n: usize, idle| runs.iter().find(|r| r.vms == n && r.idle == idle);
    let ratio = |n| match (at(n, ScaleIdle::Timeout), at(n, ScaleIdle::Spin)) {
        (Some(t), Some(s)) => format!("{:.1}x", t.throughput_per_s / s.throughput_per_s),
        _ => "-".into(),
    };
    let cpus = runs.first().map_or(1, |r| r.cpus);
    let (r2, r4, r8, r16) = (ratio(2), ratio(4), ratio(8), ratio(16));
    let (id, heading, html) = if kvm {
        (
            "scale-kvm",
            "Idle-with-timeout at scale with KVM guests (Denali)",
            format!(
                "<p>The same load with a tiny KVM guest of one vCPU per VM (<code>kicklab scale --backend kvm</code>, \
                 <code>docs/vm-mechanisms.md</code>): each guest serves the requests a host client thread gives it and \
                 runs its 1 ms timer; idling by spinning it holds its vCPU thread runnable until the host scheduler takes \
                 the CPU away, idling with a timeout it exits to its VMM with \"wake me on a request or at my timer\" and \
                 its vCPU thread sleeps. {cpus} CPUs; more vCPU threads than CPUs time-share them. Idle-with-timeout over \
                 spinning: {r2} at 2 guests, {r4} at 4, {r8} at 8 (target 1.5x; Denali: more than 2x), {r16} at 16 \
                 ({seconds} s per run).</p>\
                 <p>Reproduce: <code>kicklab scale --backend kvm --vms 1,2,4,8,16</code>.</p>"
            ),
        )
    } else {
        (
            "scale",
            "Idle-with-timeout at scale (Denali)",
            format!(
                "<p>Denali: a guest that idles while timers are pending must spin unless it can tell the host when it \
                 next needs to run; with idle-with-timeout web-server VMs scale, without it overall performance drops by \
                 more than a factor of two as the same load spreads over more VMs. Here each guest is a thread (the OS \
                 scheduler plays the hypervisor) on this {cpus}-CPU machine, with a 1 ms timer and a share of one closed \
                 load of 32 requests of 20 us each; more guests than CPUs time-share them. Idle-with-timeout over \
                 spinning: {r2} at 2 guests, {r4} at 4, {r8} at 8, {r16} at 16 ({seconds} s per run). The KVM version \
                 follows.</p>\
                 <p>Reproduce: <code>kicklab scale --vms 1,2,4,8,16</code>.</p>"
            ),
        )
    };
    let mut s = Section::new(id, heading);
    s.html = html;
    for (name, chart) in [("throughput", &thr), ("cpu", &cpu)] {
        s.push_chart(
            &format!("{id}-{name}"),
            chart,
            kicklab_report::FIG_W,
            kicklab_report::FIG_H,
        )?;
    }
    Ok(s)
}
