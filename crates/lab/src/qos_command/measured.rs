//! One `qos` system run for real (threads over kicklab rings, or a KVM
//! guest per VM), the model fed this machine's costs beside it; its JSON
//! object (rates in the paper's time and as measured) and its text. What
//! does not live here: the run and its model ([`crate::qos_real`]).

use kicklab_model::fmt_ns;
use kicklab_model::qos::QosSystem;
use kicklab_testbed::qos::VmCore;
use serde_json::json;

use super::{finite, lat, real_refusal, vm_core, QosOutput, QosRequest};
use crate::qos_real::{check, real_point, scaled, RealPoint, TRIES};
use crate::{LabError, Progress};

/// Paper-time rate from a measured one.
fn paper(rate: f64, scale: f64) -> f64 {
    rate * scale
}

/// Runs `sys` for real and models it.
pub(super) fn point(
    req: &QosRequest,
    sys: &QosSystem,
    progress: &dyn Progress,
) -> Result<QosOutput, LabError> {
    let core = vm_core(req, sys.vms.len());
    check(sys, req.scale, req.seconds, core).map_err(|e| real_refusal(e, req.scale))?;
    let p = crate::with_heartbeat(
        progress,
        &format!("qos on {}", req.backend.name()),
        std::time::Duration::from_secs(10),
        || real_point(sys, req.scale, req.seconds, req.seed, core, TRIES, None),
    )?;
    let (json, (text, warnings)) = (json_of(req, sys, &p), text_of(req, sys, &p));
    Ok(QosOutput {
        json,
        text,
        warnings,
        files: None,
    })
}

/// The real point's JSON object: rates in the paper's time and as
/// measured, every stage, the model beside, the calibrated costs.
fn json_of(req: &QosRequest, sys: &QosSystem, p: &RealPoint) -> serde_json::Value {
    let (run, m, s) = (&p.run, &p.model, req.scale);
    let names = sys.stage_names();
    let real_sys = scaled(sys, s);
    let vms: Vec<serde_json::Value> = run
            .vms
            .iter()
            .enumerate()
            .map(|(i, v)| {
                json!({
                    "id": i + 1,
                    "offered_per_s": paper(v.offered_per_s, s),
                    "throughput_per_s": paper(v.throughput_per_s, s),
                    "dropped_per_s": paper(v.dropped_per_s, s),
                    "policed_per_s": paper(v.policed_per_s, s),
                    "latency_ns": {"p50": finite(v.latency_ns[0] / s), "p99": finite(v.latency_ns[1] / s)},
                    "measured": {
                        "offered_per_s": v.offered_per_s,
                        "throughput_per_s": v.throughput_per_s,
                        "dropped_per_s": v.dropped_per_s,
                        "latency_ns": {"p50": finite(v.latency_ns[0]), "p99": finite(v.latency_ns[1])},
                    },
                    "generated": v.generated,
                    "completed": v.completed,
                    "dropped": v.dropped,
                    "lost": v.lost,
                    "duplicated": v.duplicated,
                    "bad_stamps": v.bad_stamps,
                    "clock_drift_ns": v.clock_drift_ns.map(finite),
                })
            })
            .collect();
    let stage = |st: &kicklab_testbed::qos::QosRunStage| {
        json!({
            "name": st.name,
            "utilization": finite(st.busy),
            "cpu": finite(st.cpu),
            "cpu_per_request_ns": finite(st.cpu_per_request_ns),
            "requests": st.requests,
            "sleeps": st.sleeps,
            "kicks": st.kicks,
        })
    };
    let json = json!({
        "path": req.path,
        "police": req.police,
        "backend": req.backend,
        "scale": s,
        "vms": vms,
        "stages": run.stages.iter().map(stage).collect::<Vec<_>>(),
        "device": stage(&run.device),
        "model": {
            "vms": (0..sys.vms.len()).map(|i| json!({"id": i + 1, "throughput_per_s": p.model_throughput(i)})).collect::<Vec<_>>(),
            "stages": names.iter().zip(&m.solution.utilization).map(|(n, u)| json!({"name": n, "utilization": u})).collect::<Vec<_>>(),
            "max_lossless_per_s": finite(paper(m.solution.max_lossless_per_s, s)),
            "bottleneck": m.solution.bottleneck,
            "cpus": m.cpus,
            "stage_cpus": p.model_cpus(),
            "cpu_bound": m.cpu_bound,
            "error": p.model_error(),
            "at_cpu": {
                "vms": (0..sys.vms.len()).map(|i| json!({"id": i + 1, "throughput_per_s": p.model_at_cpu_throughput(i)})).collect::<Vec<_>>(),
                "error": p.model_at_cpu_error(),
            },
            "judged_error": p.judged_error(),
        },
        "costs": {
            "shared_ns": p.costs.shared_ns,
            "vm_ns": p.costs.vm_ns,
            "kick_ns": finite(p.costs.kick_ns),
            "wake_ns": finite(p.costs.wake_ns),
            "ring_ns": finite(p.costs.ring_ns),
            "guest_kick_ns": p.costs.guest_hand_off.map(|h| h.0),
            "guest_wake_ns": p.costs.guest_hand_off.map(|h| h.1),
            "nominal_shared_ns": real_sys.shared_ns,
            "nominal_vm_ns": real_sys.vms.iter().map(|v| v.service_ns).collect::<Vec<_>>(),
        },
        "cpus": run.cpus,
        "threads": run.threads,
        "stage_threads": run.stages.len(),
        "oversubscribed": run.oversubscribed(),
        "busy_threads": run.busy_threads(),
        "vm_core": run.vm_core,
        "others_cpu": run.others_cpu,
        "window_s": run.window_s,
        "tries": p.tries,
        "disturbed": p.disturbed,
    });
    json
}

/// The real point as text, and the warnings for standard error.
#[allow(clippy::too_many_lines)]
fn text_of(req: &QosRequest, sys: &QosSystem, p: &RealPoint) -> (Vec<String>, Vec<String>) {
    let (run, m, s) = (&p.run, &p.model, req.scale);
    let names = sys.stage_names();
    let real_sys = scaled(sys, s);
    let mut text = Vec::new();
    let mut warnings = Vec::new();
    text.push(format!(
        "backend {}: {}, the paper's times x {s} ({} {}, {} per VM), rates x {}; rates in the paper's time, [measured]",
        req.backend.name(),
        if run.vm_core == VmCore::Guest {
            "threads over kicklab rings to a KVM guest per VM"
        } else {
            "threads over kicklab rings"
        },
        fmt_ns(real_sys.shared_ns),
        names[0],
        fmt_ns(real_sys.vms[0].service_ns),
        1.0 / s
    ));
    let others = run.others_cpu.unwrap_or(0.0);
    let vm_threads: f64 = run.stages[1..].iter().map(|st| st.cpu).sum();
    text.push(match run.vm_core {
        VmCore::Timed => format!(
            "threads     device, {}: {} CPUs, fewer than a thread per stage needs: the VMs run on timed cores of their own (sleeping while they serve; {:.2} CPUs to wake up), {} is the busy thread; the model gives it {:.2} CPUs, sharing them with the device ({:.2}), the VMs' threads and other processes ({:.2})",
            names.join(", "),
            run.cpus,
            vm_threads,
            names[0],
            p.model_cpus(),
            run.device.cpu,
            others
        ),
        VmCore::Busy | VmCore::Guest => format!(
            "threads     device, {}{}: {} busy stage threads on {} CPUs{}; the model gives them {:.2} CPUs, sharing them max-min fair with the device ({:.2}) and other processes ({:.2})",
            names.join(", "),
            if run.vm_core == VmCore::Guest {
                " (each VM a guest's vCPU thread)"
            } else {
                ""
            },
            run.busy_threads(),
            run.cpus,
            if run.oversubscribed() {
                ": MORE BUSY THREADS THAN CPUS, they time-share"
            } else {
                ""
            },
            p.model_cpus(),
            run.device.cpu,
            others
        ),
    });
    let vm_cost = match run.vm_core {
        VmCore::Busy => format!(
            "vm {} of CPU per request (nominal {})",
            fmt_ns(p.costs.vm_ns[0]),
            fmt_ns(real_sys.vms[0].service_ns)
        ),
        VmCore::Timed => {
            format!("vm {} (timed)", fmt_ns(real_sys.vms[0].service_ns))
        }
        VmCore::Guest => format!(
            "vm {} of busy work by the guest's TSC",
            fmt_ns(real_sys.vms[0].service_ns)
        ),
    };
    text.push(format!(
        "calibrated  {} {} of CPU per request (nominal {}), {vm_cost}; rings {} a request; kick {}, sleep and wake-up {}{}",
        names[0],
        fmt_ns(p.costs.shared_ns),
        fmt_ns(real_sys.shared_ns),
        fmt_ns(p.costs.ring_ns),
        fmt_ns(p.costs.kick_ns),
        fmt_ns(p.costs.wake_ns),
        p.costs.guest_hand_off.map_or(String::new(), |(k, w)| format!(
            "; a guest's kick {}, its halt and wake-up {} (its vCPU thread's CPU)",
            fmt_ns(k),
            fmt_ns(w)
        ))
    ));
    text.push(format!(
        "{:<6} {:>10} {:>12} {:>10} {:>10} {:>10} {:>10}   [measured: completed/s, p50]",
        "vm", "offered/s", "completed/s", "dropped/s", "model/s", "p50", "p99"
    ));
    for (i, v) in run.vms.iter().enumerate() {
        text.push(format!(
            "{:<6} {:>10.1} {:>12.1} {:>10.1} {:>10.1} {:>10} {:>10}   [{:.0}/s, {}]",
            format!("vm{}", i + 1),
            paper(v.offered_per_s, s),
            paper(v.throughput_per_s, s),
            paper(v.dropped_per_s, s),
            p.model_throughput(i),
            lat(v.latency_ns[0] / s),
            lat(v.latency_ns[1] / s),
            v.throughput_per_s,
            lat(v.latency_ns[0])
        ));
    }
    for (i, st) in run.stages.iter().enumerate() {
        text.push(format!(
            "stage {:<10} busy {:.3}, CPU {:.3} ({}/request in the run, {} sleeps, {} kicks sent), model busy {:.3}",
            st.name,
            st.busy,
            st.cpu,
            fmt_ns(st.cpu_per_request_ns),
            st.sleeps,
            st.kicks,
            m.solution.utilization[i]
        ));
    }
    text.push(format!(
        "device       CPU {:.3} ({} requests, {} kicks sent)",
        run.device.cpu, run.device.requests, run.device.kicks
    ));
    let (gen, lost, dup, drop): (u64, u64, u64, u64) = run.vms.iter().fold((0, 0, 0, 0), |t, v| {
        (
            t.0 + v.generated,
            t.1 + v.lost,
            t.2 + v.duplicated,
            t.3 + v.dropped,
        )
    });
    text.push(format!("checked     {gen} requests: {lost} lost, {dup} duplicated or reordered ({drop} dropped, each counted where it was)"));
    let drift = run
        .vms
        .iter()
        .filter_map(|v| v.clock_drift_ns)
        .reduce(f64::max);
    if let Some(drift) = drift {
        let bad: u64 = run.vms.iter().map(|v| v.bad_stamps).sum();
        text.push(format!(
            "clocks      the guests' clocks moved up to {} against the host's over the run (their stamps placed between the clock exchanges before and after it); {bad} stamps made no sense",
            fmt_ns(drift)
        ));
    }
    text.push(format!(
        "model       {:.1}% off the measured throughput (worst VM); at most {:.1} requests/s per VM without loss (equal load, these CPUs); bottleneck {}",
        p.model_error() * 100.0,
        paper(m.solution.max_lossless_per_s, s),
        m.solution.bottleneck
    ));
    text.push(format!(
        "at CPU      {:.1}% off given the CPU the stages had: {} requests/s per VM",
        p.model_at_cpu_error() * 100.0,
        (0..sys.vms.len())
            .map(|i| format!("{:.1}", p.model_at_cpu_throughput(i)))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    // The device hands requests over in batches: a buffer that holds less
    // than a batch drops what the fluid model does not see.
    let batch: f64 = real_sys.vms.iter().map(|v| v.offered_per_s).sum::<f64>()
        * kicklab_testbed::qos::DEVICE_PERIOD_NS
        / 1e9;
    if f64::from(sys.buffer) < 2.0 * batch {
        text.push(format!(
            "note        the device hands requests over every {} ({batch:.1} at this load): a buffer of {} drops bursts the model does not see",
            fmt_ns(kicklab_testbed::qos::DEVICE_PERIOD_NS),
            sys.buffer
        ));
    }
    if p.disturbed {
        warnings.push(format!(
            "warning: other processes used {others:.2} CPUs during the run (after {} tries): it is disturbed",
            p.tries
        ));
    }
    (text, warnings)
}
