//! `kicklab qos`: several VMs sharing one device (Lakshmi and Nandy), one
//! point in the model and the simulator, or (`--figures`) the sweeps that
//! reproduce the paper's Figs. 2.10-2.12.

use std::path::PathBuf;

use clap::Args;
use kicklab_lab::qos::{figures, point};
use kicklab_model::qos::{Arrivals, Path, Police, QosSystem};
use kicklab_report::{Page, Section};
use serde_json::json;

use crate::Usage;

/// Arguments of `kicklab qos`.
#[derive(Debug, Args)]
pub struct QosArgs {
    /// VMs sharing the device.
    #[arg(long, default_value_t = 2, allow_hyphen_values = true)]
    vms: usize,
    /// Requests offered per second to every VM (see --rate for one VM).
    #[arg(long, default_value_t = 800.0, allow_hyphen_values = true)]
    offered: f64,
    /// One VM's offered rate, VM=R (VMs count from 1), e.g. --rate 2=1500;
    /// repeatable.
    #[arg(long, value_parser = vm_rate, allow_hyphen_values = true)]
    rate: Vec<(usize, f64)>,
    /// shared: every request crosses one backend (driver domain); direct:
    /// per-VM queues at the device, a small hypervisor cost per request.
    #[arg(long, default_value = "shared", value_parser = ["shared", "direct"])]
    path: String,
    /// A VM's rate limit, VM=R[,burst=N] (burst in requests, default 10);
    /// repeatable.
    #[arg(long, value_parser = vm_limit, allow_hyphen_values = true)]
    limit: Vec<(usize, f64, f64)>,
    /// Where limits are enforced: ingress (at the device, before any
    /// shared stage) or post (in the shared stage, after receive).
    #[arg(long, default_value = "ingress", value_parser = ["ingress", "post"])]
    police: String,
    /// The shared stage's work per request [default: 526us on the shared
    /// path, 20us on the direct path: docs/qos.md].
    #[arg(long, value_parser = crate::args::duration_ns, allow_hyphen_values = true)]
    shared: Option<f64>,
    /// Each VM's own work per request.
    #[arg(long, default_value = "666.667us", value_parser = crate::args::duration_ns, allow_hyphen_values = true)]
    vm_service: f64,
    /// A kick on each hand-off to a sleeping stage (paid by the sender).
    #[arg(long, default_value = "0", value_parser = crate::args::duration_ns, allow_hyphen_values = true)]
    kick: f64,
    /// The wake-up of a stage that slept (paid by it).
    #[arg(long, default_value = "0", value_parser = crate::args::duration_ns, allow_hyphen_values = true)]
    wake: f64,
    /// Requests each stage can hold waiting.
    #[arg(long, default_value_t = 64, allow_hyphen_values = true)]
    buffer: u32,
    /// How requests arrive: deterministic (evenly spaced) or poisson.
    #[arg(long, default_value = "deterministic", value_parser = ["deterministic", "poisson"])]
    arrivals: String,
    /// sim (events), model (analytic); futex and kvm are not built yet.
    #[arg(long, default_value = "sim", value_parser = ["sim", "model", "futex", "kvm"])]
    backend: String,
    /// Simulated seconds measured (after 1 s of warm-up).
    #[arg(long, default_value_t = 10.0, allow_hyphen_values = true)]
    seconds: f64,
    /// Seed of Poisson arrivals.
    #[arg(long, default_value_t = 1, allow_hyphen_values = true)]
    seed: u64,
    /// Run the sweeps of the paper's Figs. 2.10-2.12 (offered load on both
    /// paths; VM2's limit at both policing points) into --out.
    #[arg(long)]
    figures: bool,
    /// Output directory of --figures: qos.csv, the charts, index.html.
    #[arg(long, default_value = "qos-out", allow_hyphen_values = true)]
    out: PathBuf,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

fn vm_rate(s: &str) -> Result<(usize, f64), String> {
    let (vm, r) = s
        .split_once('=')
        .ok_or_else(|| format!("expected VM=RATE such as 2=1500, got `{s}`"))?;
    let vm = vm
        .trim()
        .parse::<usize>()
        .map_err(|_| format!("`{vm}` is not a VM number (1, 2, ...)"))?;
    let r = r
        .trim()
        .parse::<f64>()
        .map_err(|_| format!("`{r}` is not a rate in requests/s"))?;
    if vm == 0 || !(r.is_finite() && r >= 0.0) {
        return Err(format!("VMs count from 1 and rates are >= 0, got `{s}`"));
    }
    Ok((vm, r))
}

fn vm_limit(s: &str) -> Result<(usize, f64, f64), String> {
    let (head, burst) = match s.split_once(",burst=") {
        Some((h, b)) => (
            h,
            b.trim()
                .parse::<f64>()
                .map_err(|_| format!("`{b}` is not a burst in requests"))?,
        ),
        None => (s, 10.0),
    };
    let (vm, r) = vm_rate(head)?;
    if r <= 0.0 || burst < 1.0 {
        return Err(format!(
            "a limit needs a rate > 0 and a burst >= 1, got `{s}`"
        ));
    }
    Ok((vm, r, burst))
}

pub fn run(a: &QosArgs) -> anyhow::Result<()> {
    if a.backend == "futex" || a.backend == "kvm" {
        return Err(Usage(format!(
            "--backend: {} is not built yet (the model and the simulator are: --backend sim or model)",
            a.backend
        ))
        .into());
    }
    if !(a.seconds.is_finite() && a.seconds > 0.0 && a.seconds <= 3600.0) {
        return Err(Usage("--seconds: a window between 0 and 3600 s".into()).into());
    }
    if a.vms == 0 || a.vms > kicklab_model::qos::MAX_VMS {
        return Err(Usage(format!("--vms: 1 to {} VMs", kicklab_model::qos::MAX_VMS)).into());
    }
    if a.figures {
        crate::check_out_dir(&a.out, "--out")?;
        let f = figures(a.seconds, a.seed)?;
        let section = kicklab_lab::qos::section(&f, a.seconds, a.seed)?;
        let page = Page {
            title: "kicklab qos".into(),
            intro_html: String::new(),
            sections: vec![Section { ..section }],
        };
        page.write(&a.out)?;
        kicklab_report::write_atomic(&a.out.join("qos.csv"), kicklab_lab::qos::csv(&f))?;
        if a.json {
            return crate::print_json(&serde_json::to_value(&f)?);
        }
        println!(
            "lossless per VM: shared {:.0}/s (model {:.0}, paper 950), direct {:.0}/s (model {:.0}, paper 1500): {:.2}x (paper 1.58x)",
            f.lossless_sim.0,
            f.lossless_model.0,
            f.lossless_sim.1,
            f.lossless_model.1,
            f.lossless_sim.1 / f.lossless_sim.0
        );
        println!(
            "{:>10} {:>14} {:>14} {:>14} {:>14}",
            "VM2 limit", "VM1 ingress", "VM2 ingress", "VM1 post", "VM2 post"
        );
        for (r, i, p) in &f.limit {
            println!(
                "{r:>10.0} {:>14.1} {:>14.1} {:>14.1} {:>14.1}",
                i.sim.vms[0].throughput_per_s,
                i.sim.vms[1].throughput_per_s,
                p.sim.vms[0].throughput_per_s,
                p.sim.vms[1].throughput_per_s
            );
        }
        if f.failures.is_empty() {
            println!("all targets hold");
        } else {
            println!("targets missed: {}", f.failures.join("; "));
        }
        eprintln!(
            "wrote qos.csv, the charts and index.html in {}",
            a.out.display()
        );
        return Ok(());
    }
    let path = if a.path == "direct" {
        Path::Direct
    } else {
        Path::Shared
    };
    let police = if a.police == "post" {
        Police::Post
    } else {
        Police::Ingress
    };
    let mut sys = QosSystem::paper(path, police, a.offered);
    sys.vms = vec![sys.vms[0]; a.vms];
    for vm in &mut sys.vms {
        vm.service_ns = a.vm_service;
    }
    for &(vm, r) in &a.rate {
        let v = sys
            .vms
            .get_mut(vm - 1)
            .ok_or_else(|| Usage(format!("--rate: there is no VM {vm} (--vms {})", a.vms)))?;
        v.offered_per_s = r;
    }
    for &(vm, r, b) in &a.limit {
        let v = sys
            .vms
            .get_mut(vm - 1)
            .ok_or_else(|| Usage(format!("--limit: there is no VM {vm} (--vms {})", a.vms)))?;
        v.limit = Some((r, b));
    }
    if let Some(s) = a.shared {
        sys.shared_ns = s;
    }
    sys.kick_ns = a.kick;
    sys.wake_ns = a.wake;
    sys.buffer = a.buffer;
    sys.arrivals = if a.arrivals == "poisson" {
        Arrivals::Poisson
    } else {
        Arrivals::Deterministic
    };
    sys.validate().map_err(|e| {
        // The model names what is wrong; here, the flag that set it.
        let flag = if e.starts_with("buffer") {
            "--buffer"
        } else if e.starts_with("vms") {
            "--vms"
        } else if e.contains("limit") {
            "--limit"
        } else if e.starts_with("vm") {
            "--offered"
        } else {
            "--shared"
        };
        Usage(format!("{flag}: {e}"))
    })?;
    let model = kicklab_model::qos::solve(&sys);
    let names = sys.stage_names();
    let sim = if a.backend == "sim" {
        Some(point(&sys, a.seconds, a.seed)?.sim)
    } else {
        None
    };
    if a.json {
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
        let v = json!({
            "path": a.path,
            "police": a.police,
            "backend": a.backend,
            "vms": vms,
            "stages": stages,
            "model": {
                "vms": (0..sys.vms.len()).map(|i| json!({"id": i + 1, "throughput_per_s": model.throughput_per_s[i]})).collect::<Vec<_>>(),
                "max_lossless_per_s": finite(model.max_lossless_per_s),
                "bottleneck": model.bottleneck,
            },
        });
        return crate::print_json(&v);
    }
    println!(
        "path {}, limits policed at {}, {} VMs",
        a.path,
        a.police,
        sys.vms.len()
    );
    println!(
        "{:<6} {:>12} {:>14} {:>12} {:>14} {:>12} {:>12}",
        "vm", "offered/s", "completed/s", "dropped/s", "model/s", "p50", "p99"
    );
    for i in 0..sys.vms.len() {
        let (done, drop, p50, p99) =
            sim.as_ref()
                .map_or((f64::NAN, f64::NAN, f64::NAN, f64::NAN), |s| {
                    let v = &s.vms[i];
                    (
                        v.throughput_per_s,
                        v.dropped_per_s,
                        v.latency_ns[0],
                        v.latency_ns[1],
                    )
                });
        println!(
            "{:<6} {:>12.1} {:>14.1} {:>12.1} {:>14.1} {:>12} {:>12}",
            format!("vm{}", i + 1),
            sys.vms[i].offered_per_s,
            done,
            drop,
            model.throughput_per_s[i],
            kicklab_model::fmt_ns(p50),
            kicklab_model::fmt_ns(p99)
        );
    }
    for (i, n) in names.iter().enumerate() {
        println!(
            "stage {n:<10} utilization {}model {:.3}",
            sim.as_ref()
                .map_or(String::new(), |s| format!("{:.3}  ", s.utilization[i])),
            model.utilization[i]
        );
    }
    println!(
        "model: at most {:.1} requests/s per VM without loss (equal load); bottleneck {}",
        model.max_lossless_per_s, model.bottleneck
    );
    Ok(())
}

fn finite(v: f64) -> serde_json::Value {
    if v.is_finite() {
        json!(v)
    } else {
        serde_json::Value::Null
    }
}
