//! One `qos` system computed: the model alone, or the simulator beside it;
//! its JSON object and its text. What does not live here: the simulation
//! and the model themselves ([`crate::qos::point`], `kicklab_model::qos`).

use kicklab_model::qos::QosSystem;
use serde_json::json;

use super::{finite, lat, QosBackend, QosOutput, QosRequest};
use crate::LabError;

/// `sys` in the model, and in the simulator unless the backend is the
/// model.
pub(super) fn point(req: &QosRequest, sys: &QosSystem) -> Result<QosOutput, LabError> {
    let model = kicklab_model::qos::solve(sys);
    let names = sys.stage_names();
    let sim = match req.backend {
        QosBackend::Sim => Some(crate::qos::point(sys, req.seconds, req.seed)?.sim),
        _ => None,
    };
    let vms: Vec<serde_json::Value> = (0..sys.vms.len())
        .map(|i| match &sim {
            Some(s) => json!({
                "id": i + 1,
                "offered_per_s": s.vms[i].offered_per_s,
                "throughput_per_s": s.vms[i].throughput_per_s,
                "dropped_per_s": s.vms[i].dropped_per_s,
                "latency_ns": {"p50": finite(s.vms[i].latency_ns[0]), "p99": finite(s.vms[i].latency_ns[1])},
            }),
            None => json!({
                "id": i + 1,
                "offered_per_s": sys.vms[i].offered_per_s,
                "throughput_per_s": model.throughput_per_s[i],
                "dropped_per_s": model.dropped_per_s[i],
                "latency_ns": {"p50": null, "p99": null},
            }),
        })
        .collect();
    let util = sim.as_ref().map_or(&model.utilization, |s| &s.utilization);
    let stages: Vec<serde_json::Value> = names
        .iter()
        .zip(util)
        .map(|(n, u)| json!({"name": n, "utilization": u}))
        .collect();
    let json = json!({
        "path": req.path,
        "police": req.police,
        "backend": req.backend,
        "vms": vms,
        "stages": stages,
        "model": {
            "vms": (0..sys.vms.len()).map(|i| json!({"id": i + 1, "throughput_per_s": model.throughput_per_s[i]})).collect::<Vec<_>>(),
            "max_lossless_per_s": finite(model.max_lossless_per_s),
            "bottleneck": model.bottleneck,
        },
    });
    let mut text = vec![format!(
        "path {}, limits policed at {}, {} VMs",
        json["path"].as_str().unwrap_or_default(),
        json["police"].as_str().unwrap_or_default(),
        sys.vms.len()
    )];
    if let Some(sim) = &sim {
        text.push(format!(
            "{:<6} {:>12} {:>14} {:>12} {:>14} {:>12} {:>12}",
            "vm", "offered/s", "completed/s", "dropped/s", "model/s", "p50", "p99"
        ));
        for (i, v) in sim.vms.iter().enumerate() {
            text.push(format!(
                "{:<6} {:>12.1} {:>14.1} {:>12.1} {:>14.1} {:>12} {:>12}",
                format!("vm{}", i + 1),
                sys.vms[i].offered_per_s,
                v.throughput_per_s,
                v.dropped_per_s,
                model.throughput_per_s[i],
                lat(v.latency_ns[0]),
                lat(v.latency_ns[1])
            ));
        }
        for (i, n) in names.iter().enumerate() {
            text.push(format!(
                "stage {n:<10} utilization {:.3}  model {:.3}",
                sim.utilization[i], model.utilization[i]
            ));
        }
    } else {
        // The model alone: its rates, no latency (it has no queueing delay).
        text.push(format!(
            "{:<6} {:>12} {:>14} {:>12}   (the model's rates; it gives no latency)",
            "vm", "offered/s", "completed/s", "dropped/s"
        ));
        for (i, vm) in sys.vms.iter().enumerate() {
            text.push(format!(
                "{:<6} {:>12.1} {:>14.1} {:>12.1}",
                format!("vm{}", i + 1),
                vm.offered_per_s,
                model.throughput_per_s[i],
                model.dropped_per_s[i]
            ));
        }
        for (n, u) in names.iter().zip(&model.utilization) {
            text.push(format!("stage {n:<10} utilization {u:.3}"));
        }
    }
    text.push(if model.max_lossless_per_s.is_finite() {
        format!(
            "model: at most {:.1} requests/s per VM without loss (equal load); bottleneck {}",
            model.max_lossless_per_s, model.bottleneck
        )
    } else {
        "model: no loss at any rate (no stage takes time per request)".to_string()
    });
    Ok(QosOutput {
        json,
        text,
        warnings: Vec::new(),
        files: None,
    })
}
