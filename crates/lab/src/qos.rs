//! Several VMs, one device (Lakshmi and Nandy): one point run in the model
//! and the simulator, the sweeps behind the paper's Figs. 2.10-2.12 with
//! its published numbers beside ours, its targets checked, and
//! the report's section. What does not live here: the system and its
//! analytic solution (`kicklab_model::qos`), the simulation
//! (`kicklab_sim::qos`), printing.

use kicklab_model::qos::{solve, Path, Police, QosSolution, QosSystem};
use kicklab_report::{Chart, Section, Series, Style};
use kicklab_sim::qos::{simulate_qos, QosResult};
use rayon::prelude::*;
use serde::Serialize;

use crate::{Input, LabError};

/// One point: the simulator's figures and the model's.
#[derive(Debug, Clone, Serialize)]
pub struct QosPoint {
    /// The system.
    pub system: QosSystem,
    /// Simulated.
    pub sim: QosResult,
    /// Analytic.
    pub model: QosSolution,
}

/// Runs `sys` in both (1 s of warm-up, then `seconds`).
///
/// # Errors
///
/// Invalid numbers, named.
pub fn point(sys: &QosSystem, seconds: f64, seed: u64) -> Result<QosPoint, LabError> {
    sys.validate()
        .map_err(|e| LabError::input(Input::Vary, e))?;
    let sim =
        simulate_qos(sys, 1.0, seconds, seed).map_err(|e| LabError::input(Input::Seconds, e))?;
    Ok(QosPoint {
        system: sys.clone(),
        sim,
        model: solve(sys),
    })
}

/// The published numbers the figures are set beside.
pub const PAPER_SHARED_PER_VM: f64 = 950.0;
/// Per VM on the proposed (direct) path.
pub const PAPER_DIRECT_PER_VM: f64 = 1500.0;

/// The paper's figures, reproduced.
#[derive(Debug, Clone, Serialize)]
pub struct QosFigures {
    /// Offered load per VM [requests/s] and, per path, the points.
    pub load: Vec<(f64, QosPoint, QosPoint)>,
    /// VM2's limit [requests/s] and, per policing point, the points (both
    /// VMs offered `qos_offered` each, shared path).
    pub limit: Vec<(f64, QosPoint, QosPoint)>,
    /// The offered load per VM in the limit sweep.
    pub qos_offered: f64,
    /// Largest offered load per VM without loss, simulated: shared, direct.
    pub lossless_sim: (f64, f64),
    /// The same from the model.
    pub lossless_model: (f64, f64),
    /// Targets missed, in words (empty: all hold).
    pub failures: Vec<String>,
}

/// The largest load per VM (within 1 request/s) at which the simulation
/// drops nothing, by bisection.
fn lossless(path: Path, seconds: f64, seed: u64) -> Result<f64, LabError> {
    let (mut lo, mut hi) = (1.0, 5000.0);
    while hi - lo > 1.0 {
        let mid = 0.5 * (lo + hi);
        let p = point(&QosSystem::paper(path, Police::Post, mid), seconds, seed)?;
        if p.sim.vms.iter().all(|v| v.dropped_per_s == 0.0) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}

/// Runs the sweeps: offered load 100-2500 requests/s per VM on both
/// paths, and VM2's limit 150-950 requests/s (burst 10, as the paper's
/// netfilter setting) with both VMs offered 2000 requests/s, policed at
/// ingress and post.
///
/// # Errors
///
/// As [`point`].
pub fn figures(seconds: f64, seed: u64) -> Result<QosFigures, LabError> {
    let loads: Vec<f64> = (1..=25).map(|i| 100.0 * f64::from(i)).collect();
    let load = loads
        .par_iter()
        .map(|&x| {
            Ok((
                x,
                point(
                    &QosSystem::paper(Path::Shared, Police::Post, x),
                    seconds,
                    seed,
                )?,
                point(
                    &QosSystem::paper(Path::Direct, Police::Post, x),
                    seconds,
                    seed,
                )?,
            ))
        })
        .collect::<Result<Vec<_>, LabError>>()?;
    let qos_offered = 2000.0;
    let limits: Vec<f64> = (0..=8).map(|i| 150.0 + 100.0 * f64::from(i)).collect();
    let limit = limits
        .par_iter()
        .map(|&r| {
            let sys = |police| {
                let mut s = QosSystem::paper(Path::Shared, police, qos_offered);
                s.vms[1].limit = Some((r, 10.0));
                s
            };
            Ok((
                r,
                point(&sys(Police::Ingress), seconds, seed)?,
                point(&sys(Police::Post), seconds, seed)?,
            ))
        })
        .collect::<Result<Vec<_>, LabError>>()?;
    let lossless_sim = (
        lossless(Path::Shared, seconds, seed)?,
        lossless(Path::Direct, seconds, seed)?,
    );
    let m = |path| solve(&QosSystem::paper(path, Police::Post, 1.0)).max_lossless_per_s;
    let lossless_model = (m(Path::Shared), m(Path::Direct));
    let unconstrained = point(
        &QosSystem::paper(Path::Shared, Police::Post, qos_offered),
        seconds,
        seed,
    )?;
    let mut failures = Vec::new();
    let ratio = lossless_sim.1 / lossless_sim.0;
    if ratio < 1.5 {
        failures.push(format!(
            "direct/shared lossless per VM {ratio:.3}x (target >= 1.5)"
        ));
    }
    for (r, ingress, post) in &limit {
        let vm_cap = 1e9 / ingress.system.vms[0].service_ns;
        let cap = (1e9 / ingress.system.shared_ns - r).min(vm_cap);
        let got = ingress.sim.vms[0].throughput_per_s;
        if got < 0.95 * cap {
            failures.push(format!(
                "VM2 limited to {r}/s, ingress: VM1 {got:.0}/s < 0.95 x {cap:.0}/s"
            ));
        }
        let free = unconstrained.sim.vms[0].throughput_per_s;
        if post.sim.vms[0].throughput_per_s > free * 1.01 {
            failures.push(format!(
                "VM2 limited to {r}/s, post: VM1 {:.0}/s above the unconstrained {free:.0}/s",
                post.sim.vms[0].throughput_per_s
            ));
        }
    }
    for (x, s, d) in &load {
        for p in [s, d] {
            let below = p.model.utilization.iter().all(|u| *u < 0.999);
            if !below {
                continue;
            }
            for (v, m) in p.sim.vms.iter().zip(&p.model.throughput_per_s) {
                if (v.throughput_per_s - m).abs() > 0.01 * m {
                    failures.push(format!(
                        "{:?} at {x}/s: sim {:.1}/s vs model {m:.1}/s",
                        p.system.path, v.throughput_per_s
                    ));
                }
            }
            for (u, m) in p.sim.utilization.iter().zip(&p.model.utilization) {
                if (u - m).abs() > 0.01 * m.max(1e-9) {
                    failures.push(format!(
                        "{:?} at {x}/s: utilization sim {u:.4} vs model {m:.4}",
                        p.system.path
                    ));
                }
            }
        }
    }
    Ok(QosFigures {
        load,
        limit,
        qos_offered,
        lossless_sim,
        lossless_model,
        failures,
    })
}

fn series(name: &str, style: Style, points: Vec<(f64, f64)>) -> Series {
    Series {
        name: name.into(),
        points,
        style,
        error_bars: Vec::new(),
    }
}

/// The charts: per-VM throughput and backend utilization over offered
/// load (Figs. 2.10 and 2.11), and both VMs' throughput over VM2's limit
/// (Fig. 2.12).
pub fn charts(f: &QosFigures) -> (Chart, Chart, Chart) {
    let thr = Chart {
        title: "Throughput per VM over offered load (Figs. 2.10, 2.11)".into(),
        x_label: "offered load per VM [requests/s]".into(),
        y_label: "completed per VM [requests/s]".into(),
        series: vec![
            series(
                "shared path, sim: VM1",
                Style::Points,
                f.load
                    .iter()
                    .map(|(x, s, _)| (*x, s.sim.vms[0].throughput_per_s))
                    .collect(),
            ),
            series(
                "shared path, sim: VM2",
                Style::Points,
                f.load
                    .iter()
                    .map(|(x, s, _)| (*x, s.sim.vms[1].throughput_per_s))
                    .collect(),
            ),
            series(
                "shared path, model",
                Style::Line,
                f.load
                    .iter()
                    .map(|(x, s, _)| (*x, s.model.throughput_per_s[0]))
                    .collect(),
            ),
            series(
                "direct path, sim",
                Style::Points,
                f.load
                    .iter()
                    .map(|(x, _, d)| (*x, d.sim.vms[0].throughput_per_s))
                    .collect(),
            ),
            series(
                "direct path, model",
                Style::Line,
                f.load
                    .iter()
                    .map(|(x, _, d)| (*x, d.model.throughput_per_s[0]))
                    .collect(),
            ),
            series(
                "paper: shared 950/s",
                Style::Dashed,
                vec![(100.0, PAPER_SHARED_PER_VM), (2500.0, PAPER_SHARED_PER_VM)],
            ),
            series(
                "paper: direct 1500/s",
                Style::Dashed,
                vec![(100.0, PAPER_DIRECT_PER_VM), (2500.0, PAPER_DIRECT_PER_VM)],
            ),
        ],
        ..Chart::default()
    };
    let util = Chart {
        title: "Shared stage utilization over offered load".into(),
        x_label: "offered load per VM [requests/s]".into(),
        y_label: "busy fraction".into(),
        series: vec![
            series(
                "backend (shared path), sim",
                Style::Points,
                f.load
                    .iter()
                    .map(|(x, s, _)| (*x, s.sim.utilization[0]))
                    .collect(),
            ),
            series(
                "backend (shared path), model",
                Style::Line,
                f.load
                    .iter()
                    .map(|(x, s, _)| (*x, s.model.utilization[0]))
                    .collect(),
            ),
            series(
                "hypervisor (direct path), sim",
                Style::Points,
                f.load
                    .iter()
                    .map(|(x, _, d)| (*x, d.sim.utilization[0]))
                    .collect(),
            ),
            series(
                "VM1 core (direct path), sim",
                Style::Dashed,
                f.load
                    .iter()
                    .map(|(x, _, d)| (*x, d.sim.utilization[1]))
                    .collect(),
            ),
        ],
        y_range: Some((0.0, 1.05)),
        ..Chart::default()
    };
    let lim = Chart {
        title: format!(
            "VM2 limited, both offered {:.0}/s, shared path (Fig. 2.12b's sweep of VM2's limit)",
            f.qos_offered
        ),
        x_label: "VM2's limit [requests/s]".into(),
        y_label: "completed [requests/s]".into(),
        series: vec![
            series(
                "VM1, limit at ingress",
                Style::Thick,
                f.limit
                    .iter()
                    .map(|(r, i, _)| (*r, i.sim.vms[0].throughput_per_s))
                    .collect(),
            ),
            series(
                "VM2, limit at ingress",
                Style::Line,
                f.limit
                    .iter()
                    .map(|(r, i, _)| (*r, i.sim.vms[1].throughput_per_s))
                    .collect(),
            ),
            series(
                "VM1, limit after receive",
                Style::Dashed,
                f.limit
                    .iter()
                    .map(|(r, _, p)| (*r, p.sim.vms[0].throughput_per_s))
                    .collect(),
            ),
            series(
                "VM2, limit after receive",
                Style::Points,
                f.limit
                    .iter()
                    .map(|(r, _, p)| (*r, p.sim.vms[1].throughput_per_s))
                    .collect(),
            ),
            series(
                "model: VM1, ingress",
                Style::Line,
                f.limit
                    .iter()
                    .map(|(r, i, _)| (*r, i.model.throughput_per_s[0]))
                    .collect(),
            ),
            series(
                "model: VM2, ingress",
                Style::Dashed,
                f.limit
                    .iter()
                    .map(|(r, i, _)| (*r, i.model.throughput_per_s[1]))
                    .collect(),
            ),
        ],
        ..Chart::default()
    };
    (thr, util, lim)
}

/// The report's section.
///
/// # Errors
///
/// A chart that cannot be drawn.
pub fn section(f: &QosFigures, seconds: f64, seed: u64) -> Result<Section, LabError> {
    let (thr, util, lim) = charts(f);
    let mut s = Section::new(
        "qos",
        "Several VMs, one device: shared vs direct path, and where to police (Lakshmi and Nandy)",
    );
    let first = &f.limit[0];
    let free = |vm: usize| {
        f.load
            .iter()
            .find(|(x, _, _)| (*x - f.qos_offered).abs() < 1.0)
            .map_or(f64::NAN, |(_, s, _)| s.sim.vms[vm].throughput_per_s)
    };
    // Loads at which one VM of the shared path got under half the model's
    // share: a stream locked out.
    let locked: Vec<String> = f
        .load
        .iter()
        .filter(|(_, s, _)| {
            s.sim
                .vms
                .iter()
                .zip(&s.model.throughput_per_s)
                .any(|(v, m)| v.throughput_per_s < 0.5 * m)
        })
        .map(|(x, s, _)| {
            let got: Vec<String> = s
                .sim
                .vms
                .iter()
                .map(|v| format!("{:.0}", v.throughput_per_s))
                .collect();
            format!("{x:.0}/s per VM (completed {}/s)", got.join(" and "))
        })
        .collect();
    // Limits at which VM2, policed at ingress, completed under both its
    // limit and the model's share (by more than 5%).
    let under: Vec<String> = f
        .limit
        .iter()
        .filter(|(r, i, _)| {
            let got = i.sim.vms[1].throughput_per_s;
            got < 0.95 * r.min(i.model.throughput_per_s[1])
        })
        .map(|(r, i, _)| {
            format!(
                "{r:.0}/s ({:.0}/s, model {:.0}/s)",
                i.sim.vms[1].throughput_per_s, i.model.throughput_per_s[1]
            )
        })
        .collect();
    let short = if under.is_empty() {
        String::new()
    } else {
        format!(
            " With VM2 limited at ingress, the requests its limit admits meet a shared buffer that VM1's stream keeps \
             full: at limits of {} the simulator gives VM2 less than its limit and less than the model (\"model: VM2, \
             ingress\"); with Poisson arrivals it follows the model (<code>{}</code>; <code>docs/qos.md</code>).",
            under.join(", "),
            kicklab_model::CommandLine::new("qos")
                .arg(kicklab_model::Flag::Offered, 2000)
                .arg(kicklab_model::Flag::Limit, "2=550")
                .arg(kicklab_model::Flag::Police, "ingress")
                .arg(kicklab_model::Flag::Arrivals, "poisson")
        )
    };
    let lockout = if locked.is_empty() {
        String::new()
    } else {
        format!(
            " At {} the shared stage frees a slot at the same phase of every arrival period, and the VM whose \
             request comes first after it wins every one: the other is locked out (a drop-tail effect of periodic \
             streams; Poisson arrivals do not do it).",
            locked.join(", ")
        )
    };
    s.html = format!(
        "<p>Two VMs, each on its own core, receive requests through one NIC. On the <b>shared path</b> (Xen's driver domain) \
         every request crosses one backend stage; on the <b>direct path</b> (their proposal: per-VM virtual NICs) the device \
         demultiplexes and a hypervisor does a small constant amount of work per request. Service times come from the \
         paper's own numbers (<code>docs/qos.md</code>): the driver domain saturates at 2 x 950 requests/s, so 526 us a \
         request; a VM carries 1500 requests/s, so 667 us; the hypervisor's constant work 20 us (small, not published). \
         Model: a fluid network (<code>docs/qos.md</code>); simulator: the same system as events, evenly spaced arrivals, \
         buffers of 64 requests. {seconds} s simulated per point, seed {seed}.</p>\
         <p>Largest load per VM without loss: shared {:.0}/s (simulated; model {:.0}/s; paper 950/s), direct {:.0}/s \
         (model {:.0}/s; paper 1500/s): {:.2}x (paper 1.58x). With VM2 limited to {:.0}/s and both VMs offered {:.0}/s, \
         VM1 completes {:.0}/s when the limit is applied at the device and {:.0}/s when it is applied in the driver domain \
         after receive (with no limit: VM1 {:.0}/s, VM2 {:.0}/s): the shared stage still serves what it later drops. \
         kicklab's targets (direct at least 1.5x shared, VM1 taking what a limit at ingress frees, a limit after \
         receive freeing nothing, simulator = model below saturation): {}.</p>\
         <p>Where the model and the simulator part: above saturation, evenly spaced streams and drop-tail buffers lock into \
         phase, which a fluid model does not see.{lockout}{short}</p>\
         <p>Reproduce: <code>{reproduce}</code>. Data: <a href=\"qos.csv\">qos.csv</a>.</p>",
        f.lossless_sim.0,
        f.lossless_model.0,
        f.lossless_sim.1,
        f.lossless_model.1,
        f.lossless_sim.1 / f.lossless_sim.0,
        first.0,
        f.qos_offered,
        first.1.sim.vms[0].throughput_per_s,
        first.2.sim.vms[0].throughput_per_s,
        free(0),
        free(1),
        if f.failures.is_empty() {
            "all hold".to_string()
        } else {
            kicklab_report::html_escape(&f.failures.join("; "))
        },
        reproduce = kicklab_model::CommandLine::new("qos").switch(kicklab_model::Flag::Figures, true).arg(kicklab_model::Flag::Out, "DIR"),
    );
    s.push_chart(
        "qos-throughput",
        &thr,
        kicklab_report::FIG_W,
        kicklab_report::FIG_H,
    )?;
    s.push_chart(
        "qos-utilization",
        &util,
        kicklab_report::FIG_W,
        kicklab_report::FIG_H,
    )?;
    s.push_chart(
        "qos-limit",
        &lim,
        kicklab_report::FIG_W,
        kicklab_report::FIG_H,
    )?;
    Ok(s)
}

/// The sweeps as CSV.
pub fn csv(f: &QosFigures) -> String {
    let mut out = String::from("sweep,x,path,police,vm,offered_per_s,throughput_per_s,dropped_per_s,model_throughput_per_s,shared_utilization\n");
    let mut row = |sweep: &str, x: f64, p: &QosPoint| {
        for (i, v) in p.sim.vms.iter().enumerate() {
            out.push_str(&format!(
                "{sweep},{x},{:?},{:?},{},{:.3},{:.3},{:.3},{:.3},{:.5}\n",
                p.system.path,
                p.system.police,
                i + 1,
                v.offered_per_s,
                v.throughput_per_s,
                v.dropped_per_s,
                p.model.throughput_per_s[i],
                p.sim.utilization[0]
            ));
        }
    };
    for (x, s, d) in &f.load {
        row("load", *x, s);
        row("load", *x, d);
    }
    for (r, i, p) in &f.limit {
        row("limit", *r, i);
        row("limit", *r, p);
    }
    out
}
