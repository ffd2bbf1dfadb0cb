//! The paper's Figs. 2.10-2.12 as `qos` runs them: simulated (the paper's
//! systems swept, its published numbers beside), or for real (both shapes
//! measured, the targets checked); each a page, a CSV, a JSON object and
//! text. What does not live here: the sweeps and the pages themselves
//! ([`crate::qos`], [`crate::qos_real`]).

use kicklab_report::Page;
use kicklab_testbed::qos::VmCore;

use super::{real_refusal, vm_core, QosFiles, QosOutput, QosRequest};
use crate::{qos, qos_real, LabError, Progress};

/// The simulated figures.
pub(super) fn simulated(req: &QosRequest) -> Result<QosOutput, LabError> {
    let f = qos::figures(req.seconds, req.seed)?;
    let section = qos::section(&f, req.seconds, req.seed)?;
    let files = QosFiles {
        page: Page {
            title: "kicklab qos".into(),
            intro_html: String::new(),
            sections: vec![section],
        },
        csv_name: "qos.csv",
        csv: qos::csv(&f),
    };
    let mut text = vec![
        format!(
            "lossless per VM: shared {:.0}/s (model {:.0}, paper 950), direct {:.0}/s (model {:.0}, paper 1500): {:.2}x (paper 1.58x)",
            f.lossless_sim.0,
            f.lossless_model.0,
            f.lossless_sim.1,
            f.lossless_model.1,
            f.lossless_sim.1 / f.lossless_sim.0
        ),
        format!(
            "{:>10} {:>14} {:>14} {:>14} {:>14}",
            "VM2 limit", "VM1 ingress", "VM2 ingress", "VM1 post", "VM2 post"
        ),
    ];
    for (r, i, p) in &f.limit {
        text.push(format!(
            "{r:>10.0} {:>14.1} {:>14.1} {:>14.1} {:>14.1}",
            i.sim.vms[0].throughput_per_s,
            i.sim.vms[1].throughput_per_s,
            p.sim.vms[0].throughput_per_s,
            p.sim.vms[1].throughput_per_s
        ));
    }
    text.push(if f.failures.is_empty() {
        "all targets hold".into()
    } else {
        format!("targets missed: {}", f.failures.join("; "))
    });
    Ok(QosOutput {
        json: serde_json::to_value(&f)?,
        text,
        warnings: Vec::new(),
        files: Some(files),
    })
}

/// The real figures: both shapes measured, the targets checked.
pub(super) fn real(req: &QosRequest, progress: &dyn Progress) -> Result<QosOutput, LabError> {
    let o = qos_real::RealOptions {
        scale: req.scale,
        seconds: req.seconds,
        seed: req.seed,
        core: vm_core(req, 2),
        ..qos_real::RealOptions::new()
    };
    let f = qos_real::real_figures(&o, progress).map_err(|e| real_refusal(e, req.scale))?;
    let section = qos_real::section(&f, "qos-real.csv")?;
    let files = QosFiles {
        page: Page {
            title: format!("kicklab qos on {}", req.backend.name()),
            intro_html: String::new(),
            sections: vec![section],
        },
        csv_name: "qos-real.csv",
        csv: qos_real::table(&f).to_csv(),
    };
    let mut text = Vec::new();
    let c = &f.capacity.0;
    text.push(format!(
        "backend {}, the paper's times x {} ({}); rates in the paper's time",
        req.backend.name(),
        f.scale,
        match (c.run.vm_core, c.run.oversubscribed()) {
            (VmCore::Timed, _) => format!(
                "{} CPUs: the VMs on timed cores of their own, the shared stage the busy thread",
                c.run.cpus
            ),
            (_, true) => format!(
                "{} busy threads on {} CPUs: they time-share, the model shares the CPUs",
                c.run.busy_threads(),
                c.run.cpus
            ),
            (_, false) => format!(
                "{} busy threads on {} CPUs",
                c.run.busy_threads(),
                c.run.cpus
            ),
        }
    ));
    let lossless = |x: f64| {
        if x > 0.0 {
            format!("{x:.0}/s")
        } else {
            "none found".into()
        }
    };
    text.push(format!(
        "lossless per VM: shared {}, direct {}: {} (target >= 1.5; paper 950, 1500: 1.58x)",
        lossless(f.lossless.0 .0),
        lossless(f.lossless.1 .0),
        if f.lossless.0 .0 > 0.0 && f.lossless.1 .0 > 0.0 {
            format!("{:.2}x", f.lossless.1 .0 / f.lossless.0 .0)
        } else {
            "no ratio".into()
        }
    ));
    text.push(format!(
        "{:<38} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6}",
        "run", "VM1/s", "model", "@CPU", "VM2/s", "model", "@CPU", "CPU", "others", "error"
    ));
    for (label, p) in f.runs() {
        text.push(format!(
            "{label:<38} {:>6.0} {:>6.0} {:>6.0} {:>6.0} {:>6.0} {:>6.0} {:>6.2} {:>6.2} {:>5.1}%{}",
            p.throughput(0),
            p.model_throughput(0),
            p.model_at_cpu_throughput(0),
            p.throughput(1),
            p.model_throughput(1),
            p.model_at_cpu_throughput(1),
            p.run.stages[0].cpu,
            p.run.others_cpu.unwrap_or(f64::NAN),
            p.judged_error() * 100.0,
            if p.disturbed { "  DISTURBED" } else { "" }
        ));
    }
    text.push("(model: on this machine's CPUs shared with the run's other threads and other processes; @CPU: given the CPU the shared stage had; CPU: the shared stage's; others: other processes'; error: the model's, @CPU's where DISTURBED)".to_string());
    if f.failures.is_empty() {
        text.push(format!(
            "all targets hold (worst model error {:.1}%)",
            f.worst_model_error * 100.0
        ));
    } else {
        text.push(format!("targets missed: {}", f.failures.join("; ")));
    }
    Ok(QosOutput {
        json: serde_json::to_value(&f)?,
        text,
        warnings: Vec::new(),
        files: Some(files),
    })
}
