//! `kicklab qos`: several VMs sharing one device (Lakshmi and Nandy), one
//! point in the model and the simulator, or for real with threads
//! (`--backend futex`, or `kvm` with a guest per VM); or (`--figures`)
//! the sweeps that reproduce the paper's Figs. 2.10-2.12, and with a real
//! backend their real shapes.

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
    #[arg(long, value_parser = crate::args::whole::<usize>, default_value_t = 2, allow_hyphen_values = true)]
    vms: usize,
    /// Requests offered per second to every VM (see --rate for one VM).
    #[arg(long, default_value_t = 800.0, allow_hyphen_values = true, value_parser = crate::args::number)]
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
    /// The shared stage's work per request [default: 1/1900 s = 526.3us on the shared
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
    #[arg(long, value_parser = crate::args::whole::<u32>, default_value_t = 64, allow_hyphen_values = true)]
    buffer: u32,
    /// How requests arrive: deterministic (evenly spaced) or poisson.
    #[arg(long, default_value = "deterministic", value_parser = ["deterministic", "poisson"])]
    arrivals: String,
    /// sim (events), model (analytic), futex (threads over kicklab rings,
    /// the paper's times scaled by --scale), kvm (as futex, with a real
    /// KVM guest per VM consuming over a ring in its memory).
    #[arg(long, default_value = "sim", value_parser = ["sim", "model", "futex", "kvm"])]
    backend: String,
    /// Seconds measured, of the paper's time (after 1 s of warm-up); a
    /// real run (--backend futex or kvm) takes both times --scale, the
    /// warm-up at least 0.2 s of real time.
    #[arg(long, default_value_t = 10.0, allow_hyphen_values = true, value_parser = crate::args::number)]
    seconds: f64,
    /// --backend futex or kvm: real time over the paper's (service times times
    /// this, rates divided by it); figures are given in the paper's time
    /// and as measured.
    #[arg(long, default_value_t = kicklab_lab::qos_real::DEFAULT_SCALE, allow_hyphen_values = true, value_parser = crate::args::number)]
    scale: f64,
    /// --backend futex: what the VMs' own processing runs on: busy (busy
    /// work on this machine's CPUs), timed (a timed core of its own per
    /// VM), auto (busy if every stage and the device can have a CPU);
    /// with --backend kvm, a guest per VM.
    #[arg(long, default_value = "auto", value_parser = vm_core_name, allow_hyphen_values = true)]
    vm_core: String,
    /// Seed of Poisson arrivals.
    #[arg(long, value_parser = crate::args::whole::<u64>, default_value_t = 1, allow_hyphen_values = true)]
    seed: u64,
    /// Run the sweeps of the paper's Figs. 2.10-2.12 (offered load on both
    /// paths; VM2's limit at both policing points) into --out.
    #[arg(long)]
    figures: bool,
    /// Output directory of --figures: qos.csv (qos-real.csv with --backend
    /// futex or kvm), the charts, index.html.
    #[arg(long, default_value = "qos-out", allow_hyphen_values = true)]
    out: PathBuf,
    /// Replace the files an earlier kicklab run left in --out (a folder
    /// holding other files is never replaced).
    #[arg(long)]
    force: bool,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

impl QosArgs {
    /// The flags given (`given(id)`) that this run would not use, each
    /// with the reason: the systems' flags beside `--figures` (which runs
    /// the paper's own), `--kick`/`--wake` on a real backend (its stages
    /// pay their own), `--scale`/`--vm-core` without one, the window and
    /// the seed beside the model, a seed with even arrivals, `--police`
    /// without a limit, `--out` without `--figures`.
    pub fn unused(&self, given: &dyn Fn(&str) -> bool) -> Vec<String> {
        let real = matches!(self.backend.as_str(), "futex" | "kvm");
        let model = self.backend == "model" && !self.figures;
        let flag = |id: &str| format!("--{}", id.replace('_', "-"));
        let mut notes: Vec<String> = Vec::new();
        let mut say = |ids: &[&str], why: &str| {
            for id in ids.iter().filter(|id| given(id)) {
                notes.push(format!("{} was ignored: {why}", flag(id)));
            }
        };
        if self.figures {
            say(
                &[
                    "vms",
                    "offered",
                    "rate",
                    "path",
                    "limit",
                    "police",
                    "shared",
                    "vm_service",
                    "buffer",
                    "arrivals",
                ],
                "--figures runs the paper's own systems (its Figs. 2.10-2.12)",
            );
        }
        if real {
            say(
                &["kick", "wake"],
                "the real stages pay their own kicks and wake-ups",
            );
        } else {
            say(
                &["scale", "vm_core"],
                "only a real run (--backend futex or kvm) has one",
            );
            if self.figures {
                say(&["kick", "wake"], "--figures runs the paper's own systems");
            }
        }
        if model {
            say(&["seconds"], "the model measures no window");
            say(&["seed"], "the model draws nothing");
            say(
                &["arrivals", "buffer"],
                "the model is of rates alone (no arrival process, no queues)",
            );
        } else if self.figures {
            say(&["seed"], "the figures' arrivals are evenly spaced");
        } else if self.arrivals != "poisson" {
            say(
                &["seed"],
                "arrivals are evenly spaced (--arrivals poisson draws them)",
            );
        }
        if !self.figures {
            if self.limit.is_empty() {
                say(&["police"], "no VM has a --limit to police");
            }
            say(&["out"], "only --figures writes files");
        }
        notes
    }
}

/// The shortest window measured [s].
const MIN_SECONDS: f64 = 0.01;

/// The fewest requests a VM offered a load must be offered in the window.
const MIN_REQUESTS: f64 = 10.0;

fn vm_rate(s: &str) -> Result<(usize, f64), String> {
    let (vm, r) = s.split_once('=').ok_or_else(|| {
        format!(
            "expected VM=RATE such as 2=1500, got `{}`",
            kicklab_model::shown(s)
        )
    })?;
    let vm = vm.trim().parse::<usize>().map_err(|_| {
        format!(
            "`{}` is not a VM number (1, 2, ...)",
            kicklab_model::shown(vm)
        )
    })?;
    let r = crate::args::number(r).map_err(|e| format!("rate: {e}"))?;
    if vm == 0 {
        return Err(format!(
            "VMs count from 1, got `{}`",
            kicklab_model::shown(s)
        ));
    }
    Ok((vm, r))
}

fn vm_limit(s: &str) -> Result<(usize, f64, f64), String> {
    let (head, burst) = match s.split_once(",burst=") {
        Some((h, b)) => (
            h,
            b.trim()
                .parse::<f64>()
                .map_err(|_| format!("`{}` is not a burst in requests", kicklab_model::shown(b)))?,
        ),
        None => (s, 10.0),
    };
    let (vm, r) = vm_rate(head)?;
    let max = kicklab_model::qos::MAX_BURST;
    if r <= 0.0 || !(1.0..=max).contains(&burst) || burst.fract() != 0.0 {
        return Err(format!(
            "a limit needs a rate > 0 and a burst of whole requests from 1 to {max:e}, got `{}`",
            kicklab_model::shown(s)
        ));
    }
    Ok((vm, r, burst))
}

pub fn run(a: &QosArgs) -> anyhow::Result<()> {
    let real_backend = matches!(a.backend.as_str(), "futex" | "kvm");
    if a.backend == "kvm" {
        if matches!(a.vm_core.as_str(), "busy" | "timed") {
            return Err(Usage(format!(
                "--vm-core {}: with --backend kvm every VM is a guest of its own (use --backend futex for {} cores)",
                a.vm_core, a.vm_core
            ))
            .into());
        }
        if a.vms > kicklab_testbed::qos::MAX_GUEST_VMS {
            return Err(Usage(format!(
                "--vms: 1 to {} guests with kvm (their set-up grows with the square of their \
                 number: minutes past that)",
                kicklab_testbed::qos::MAX_GUEST_VMS
            ))
            .into());
        }
        crate::args::kvm_usable()?;
    }
    // The model measures no window; a simulated or real run does.
    let windowed = a.backend != "model" || a.figures;
    if !(a.seconds.is_finite() && a.seconds > 0.0 && a.seconds <= 3600.0)
        || (windowed && a.seconds < MIN_SECONDS)
    {
        return Err(Usage(format!(
            "--seconds: a window from {MIN_SECONDS} s (a few of the paper's requests of 0.5-0.7 ms) to 3600 s"
        ))
        .into());
    }
    for (flag, vms) in [
        ("--rate", a.rate.iter().map(|r| r.0).collect::<Vec<_>>()),
        ("--limit", a.limit.iter().map(|l| l.0).collect()),
    ] {
        if let Some(vm) = kicklab_model::first_repeat(&vms) {
            return Err(Usage(format!("{flag}: VM {vm} is given twice")).into());
        }
    }
    if a.vms == 0 || a.vms > kicklab_model::qos::MAX_VMS {
        return Err(Usage(format!("--vms: 1 to {} VMs", kicklab_model::qos::MAX_VMS)).into());
    }
    if !(a.scale.is_finite() && a.scale > 0.0 && a.scale <= 1.0) {
        return Err(Usage(format!(
            "--scale: {} must be above 0 and at most 1",
            a.scale
        ))
        .into());
    }
    if a.figures && real_backend {
        let dir = crate::files::out_dir(&a.out, "--out", "kicklab qos", a.force)?;
        real_figures(a, dir.path())?;
        return crate::files::commit(dir);
    }
    if a.figures {
        let dir = crate::files::out_dir(&a.out, "--out", "kicklab qos", a.force)?;
        let f = figures(a.seconds, a.seed)?;
        let section = kicklab_lab::qos::section(&f, a.seconds, a.seed)?;
        let page = Page {
            title: "kicklab qos".into(),
            intro_html: String::new(),
            sections: vec![Section { ..section }],
        };
        page.write(dir.path())?;
        kicklab_report::write_atomic(&dir.path().join("qos.csv"), kicklab_lab::qos::csv(&f))?;
        if a.json {
            crate::print_json(&serde_json::to_value(&f)?)?;
            return crate::files::commit(dir);
        }
        outln!(
            "lossless per VM: shared {:.0}/s (model {:.0}, paper 950), direct {:.0}/s (model {:.0}, paper 1500): {:.2}x (paper 1.58x)",
            f.lossless_sim.0,
            f.lossless_model.0,
            f.lossless_sim.1,
            f.lossless_model.1,
            f.lossless_sim.1 / f.lossless_sim.0
        );
        outln!(
            "{:>10} {:>14} {:>14} {:>14} {:>14}",
            "VM2 limit",
            "VM1 ingress",
            "VM2 ingress",
            "VM1 post",
            "VM2 post"
        );
        for (r, i, p) in &f.limit {
            outln!(
                "{r:>10.0} {:>14.1} {:>14.1} {:>14.1} {:>14.1}",
                i.sim.vms[0].throughput_per_s,
                i.sim.vms[1].throughput_per_s,
                p.sim.vms[0].throughput_per_s,
                p.sim.vms[1].throughput_per_s
            );
        }
        if f.failures.is_empty() {
            outln!("all targets hold");
        } else {
            outln!("targets missed: {}", f.failures.join("; "));
        }
        errln!(
            "wrote qos.csv, the charts and index.html in {}",
            a.out.display()
        );
        return crate::files::commit(dir);
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
        } else if e.contains("service time") {
            "--vm-service"
        } else if e.starts_with("vm") {
            "--offered"
        } else {
            "--shared"
        };
        let e = e
            .strip_prefix("buffer: ")
            .or_else(|| e.strip_prefix("vms: "))
            .unwrap_or(&e);
        Usage(format!("{flag}: {e}"))
    })?;
    // Every VM offered a load has some requests in the window.
    if let Some((i, vm)) = sys.vms.iter().enumerate().find(|(_, vm)| {
        windowed && vm.offered_per_s > 0.0 && vm.offered_per_s * a.seconds < MIN_REQUESTS
    }) {
        return Err(Usage(format!(
            "--seconds: VM {} is offered {}/s: {} s holds fewer than {MIN_REQUESTS} of its requests (at least {} s)",
            i + 1,
            vm.offered_per_s,
            a.seconds,
            MIN_REQUESTS / vm.offered_per_s
        ))
        .into());
    }
    if real_backend {
        return real(a, &sys);
    }
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
    outln!(
        "path {}, limits policed at {}, {} VMs",
        a.path,
        a.police,
        sys.vms.len()
    );
    if let Some(sim) = &sim {
        outln!(
            "{:<6} {:>12} {:>14} {:>12} {:>14} {:>12} {:>12}",
            "vm",
            "offered/s",
            "completed/s",
            "dropped/s",
            "model/s",
            "p50",
            "p99"
        );
        for (i, v) in sim.vms.iter().enumerate() {
            outln!(
                "{:<6} {:>12.1} {:>14.1} {:>12.1} {:>14.1} {:>12} {:>12}",
                format!("vm{}", i + 1),
                sys.vms[i].offered_per_s,
                v.throughput_per_s,
                v.dropped_per_s,
                model.throughput_per_s[i],
                lat(v.latency_ns[0]),
                lat(v.latency_ns[1])
            );
        }
        for (i, n) in names.iter().enumerate() {
            outln!(
                "stage {n:<10} utilization {:.3}  model {:.3}",
                sim.utilization[i],
                model.utilization[i]
            );
        }
    } else {
        // The model alone: its rates, no latency (it has no queueing delay).
        outln!(
            "{:<6} {:>12} {:>14} {:>12}   (the model's rates; it gives no latency)",
            "vm",
            "offered/s",
            "completed/s",
            "dropped/s"
        );
        for (i, vm) in sys.vms.iter().enumerate() {
            outln!(
                "{:<6} {:>12.1} {:>14.1} {:>12.1}",
                format!("vm{}", i + 1),
                vm.offered_per_s,
                model.throughput_per_s[i],
                model.dropped_per_s[i]
            );
        }
        for (n, u) in names.iter().zip(&model.utilization) {
            outln!("stage {n:<10} utilization {u:.3}");
        }
    }
    outln!(
        "model: at most {:.1} requests/s per VM without loss (equal load); bottleneck {}",
        model.max_lossless_per_s,
        model.bottleneck
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

/// A testbed or lab refusal of a real run, naming qos's own flag.
fn real_usage(e: kicklab_lab::LabError, scale: f64) -> anyhow::Error {
    use kicklab_lab::LabError;
    use kicklab_testbed::{Setting, TestbedError};
    match &e {
        LabError::Testbed(
            TestbedError::Invalid { what, reason } | TestbedError::Limit { what, reason },
        ) => {
            let flag = match what {
                Setting::Work => "--shared/--vm-service",
                Setting::Len => "--buffer",
                Setting::Messages => "--offered",
                _ if reason.contains("offered load") => "--offered",
                _ => "--vms",
            };
            Usage(format!(
                "{flag}: {reason} (a real backend, at --scale {scale})"
            ))
            .into()
        }
        LabError::Input { input, reason } if input.name() == "vary" => {
            if let Some(r) = reason.strip_prefix("scale: ") {
                Usage(format!("--scale: {r}")).into()
            } else {
                Usage(format!("--offered: {reason}")).into()
            }
        }
        _ => e.into(),
    }
}

fn vm_core_name(s: &str) -> Result<String, String> {
    match s {
        "auto" | "busy" | "timed" => Ok(s.to_string()),
        _ => Err(format!("unknown VM core `{s}` (use auto, busy or timed)")),
    }
}

/// The VMs' core: as asked, or the one that fits this machine.
fn vm_core(a: &QosArgs, vms: usize) -> kicklab_testbed::qos::VmCore {
    use kicklab_testbed::qos::VmCore;
    if a.backend == "kvm" {
        return VmCore::Guest;
    }
    match a.vm_core.as_str() {
        "busy" => VmCore::Busy,
        "timed" => VmCore::Timed,
        _ => VmCore::fitting(vms),
    }
}

/// Paper-time rate from a measured one.
fn paper(rate: f64, scale: f64) -> f64 {
    rate * scale
}

/// One real point: run, model, print.
#[allow(clippy::too_many_lines)]
fn real(a: &QosArgs, sys: &QosSystem) -> anyhow::Result<()> {
    use kicklab_lab::qos_real::{self, check, real_point, scaled};
    use kicklab_model::fmt_ns;
    let core = vm_core(a, sys.vms.len());
    check(sys, a.scale, a.seconds, core).map_err(|e| real_usage(e, a.scale))?;
    let p = kicklab_lab::with_heartbeat(
        &crate::Bars::default(),
        &format!("qos --backend {}", a.backend),
        std::time::Duration::from_secs(10),
        || real_point(sys, a.scale, a.seconds, a.seed, core, qos_real::TRIES, None),
    )?;
    let (run, m, s) = (&p.run, &p.model, a.scale);
    let names = sys.stage_names();
    let real_sys = scaled(sys, s);
    if a.json {
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
        let v = json!({
            "path": a.path,
            "police": a.police,
            "backend": a.backend,
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
        return crate::print_json(&v);
    }
    outln!(
        "backend {}: {}, the paper's times x {s} ({} {}, {} per VM), rates x {}; rates in the paper's time, [measured]",
        a.backend,
        if run.vm_core == kicklab_testbed::qos::VmCore::Guest {
            "threads over kicklab rings to a KVM guest per VM"
        } else {
            "threads over kicklab rings"
        },
        fmt_ns(real_sys.shared_ns),
        names[0],
        fmt_ns(real_sys.vms[0].service_ns),
        1.0 / s
    );
    let others = run.others_cpu.unwrap_or(0.0);
    let vm_threads: f64 = run.stages[1..].iter().map(|st| st.cpu).sum();
    match run.vm_core {
        kicklab_testbed::qos::VmCore::Timed => outln!(
            "threads     device, {}: {} CPUs, fewer than a thread per stage needs: the VMs run on timed cores of their own (sleeping while they serve; {:.2} CPUs to wake up), {} is the busy thread; the model gives it {:.2} CPUs, sharing them with the device ({:.2}), the VMs' threads and other processes ({:.2})",
            names.join(", "),
            run.cpus,
            vm_threads,
            names[0],
            p.model_cpus(),
            run.device.cpu,
            others
        ),
        kicklab_testbed::qos::VmCore::Busy | kicklab_testbed::qos::VmCore::Guest => outln!(
            "threads     device, {}{}: {} busy stage threads on {} CPUs{}; the model gives them {:.2} CPUs, sharing them max-min fair with the device ({:.2}) and other processes ({:.2})",
            names.join(", "),
            if run.vm_core == kicklab_testbed::qos::VmCore::Guest {
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
    }
    let vm_cost = match run.vm_core {
        kicklab_testbed::qos::VmCore::Busy => format!(
            "vm {} of CPU per request (nominal {})",
            fmt_ns(p.costs.vm_ns[0]),
            fmt_ns(real_sys.vms[0].service_ns)
        ),
        kicklab_testbed::qos::VmCore::Timed => {
            format!("vm {} (timed)", fmt_ns(real_sys.vms[0].service_ns))
        }
        kicklab_testbed::qos::VmCore::Guest => format!(
            "vm {} of busy work by the guest's TSC",
            fmt_ns(real_sys.vms[0].service_ns)
        ),
    };
    outln!(
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
    );
    outln!(
        "{:<6} {:>10} {:>12} {:>10} {:>10} {:>10} {:>10}   [measured: completed/s, p50]",
        "vm",
        "offered/s",
        "completed/s",
        "dropped/s",
        "model/s",
        "p50",
        "p99"
    );
    for (i, v) in run.vms.iter().enumerate() {
        outln!(
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
        );
    }
    for (i, st) in run.stages.iter().enumerate() {
        outln!(
            "stage {:<10} busy {:.3}, CPU {:.3} ({}/request in the run, {} sleeps, {} kicks sent), model busy {:.3}",
            st.name,
            st.busy,
            st.cpu,
            fmt_ns(st.cpu_per_request_ns),
            st.sleeps,
            st.kicks,
            m.solution.utilization[i]
        );
    }
    outln!(
        "device       CPU {:.3} ({} requests, {} kicks sent)",
        run.device.cpu,
        run.device.requests,
        run.device.kicks
    );
    let (gen, lost, dup, drop): (u64, u64, u64, u64) = run.vms.iter().fold((0, 0, 0, 0), |t, v| {
        (
            t.0 + v.generated,
            t.1 + v.lost,
            t.2 + v.duplicated,
            t.3 + v.dropped,
        )
    });
    outln!("checked     {gen} requests: {lost} lost, {dup} duplicated or reordered ({drop} dropped, each counted where it was)");
    let drift = run
        .vms
        .iter()
        .filter_map(|v| v.clock_drift_ns)
        .reduce(f64::max);
    if let Some(drift) = drift {
        let bad: u64 = run.vms.iter().map(|v| v.bad_stamps).sum();
        outln!(
            "clocks      the guests' clocks moved up to {} against the host's over the run (their stamps placed between the clock exchanges before and after it); {bad} stamps made no sense",
            fmt_ns(drift)
        );
    }
    outln!(
        "model       {:.1}% off the measured throughput (worst VM); at most {:.1} requests/s per VM without loss (equal load, these CPUs); bottleneck {}",
        p.model_error() * 100.0,
        paper(m.solution.max_lossless_per_s, s),
        m.solution.bottleneck
    );
    outln!(
        "at CPU      {:.1}% off given the CPU the stages had: {} requests/s per VM",
        p.model_at_cpu_error() * 100.0,
        (0..sys.vms.len())
            .map(|i| format!("{:.1}", p.model_at_cpu_throughput(i)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    // The device hands requests over in batches: a buffer that holds less
    // than a batch drops what the fluid model does not see.
    let batch: f64 = real_sys.vms.iter().map(|v| v.offered_per_s).sum::<f64>()
        * kicklab_testbed::qos::DEVICE_PERIOD_NS
        / 1e9;
    if f64::from(sys.buffer) < 2.0 * batch {
        outln!(
            "note        the device hands requests over every {} ({batch:.1} at this load): a buffer of {} drops bursts the model does not see",
            fmt_ns(kicklab_testbed::qos::DEVICE_PERIOD_NS),
            sys.buffer
        );
    }
    if p.disturbed {
        errln!(
            "warning: other processes used {others:.2} CPUs during the run (after {} tries): it is disturbed",
            p.tries
        );
    }
    Ok(())
}

/// A latency, or `-` without completions.
fn lat(ns: f64) -> String {
    if ns.is_finite() {
        kicklab_model::fmt_ns(ns)
    } else {
        "-".into()
    }
}

/// The real figures: both shapes measured, the targets checked.
fn real_figures(a: &QosArgs, dir: &std::path::Path) -> anyhow::Result<()> {
    use kicklab_lab::qos_real;
    let o = qos_real::RealOptions {
        scale: a.scale,
        seconds: a.seconds,
        seed: a.seed,
        core: vm_core(a, 2),
        ..qos_real::RealOptions::new()
    };
    let f =
        qos_real::real_figures(&o, &crate::Bars::default()).map_err(|e| real_usage(e, a.scale))?;
    let section = qos_real::section(&f, "qos-real.csv")?;
    let page = Page {
        title: format!("kicklab qos --backend {}", a.backend),
        intro_html: String::new(),
        sections: vec![section],
    };
    page.write(dir)?;
    let table = qos_real::table(&f);
    kicklab_report::write_atomic(&dir.join("qos-real.csv"), table.to_csv())?;
    if a.json {
        return crate::print_json(&serde_json::to_value(&f)?);
    }
    let c = &f.capacity.0;
    outln!(
        "backend {}, the paper's times x {} ({}); rates in the paper's time",
        a.backend,
        f.scale,
        match (c.run.vm_core, c.run.oversubscribed()) {
            (kicklab_testbed::qos::VmCore::Timed, _) => format!(
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
    );
    let lossless = |x: f64| {
        if x > 0.0 {
            format!("{x:.0}/s")
        } else {
            "none found".into()
        }
    };
    outln!(
        "lossless per VM: shared {}, direct {}: {} (target >= 1.5; paper 950, 1500: 1.58x)",
        lossless(f.lossless.0 .0),
        lossless(f.lossless.1 .0),
        if f.lossless.0 .0 > 0.0 && f.lossless.1 .0 > 0.0 {
            format!("{:.2}x", f.lossless.1 .0 / f.lossless.0 .0)
        } else {
            "no ratio".into()
        }
    );
    outln!(
        "{:<38} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6} {:>6}",
        "run",
        "VM1/s",
        "model",
        "@CPU",
        "VM2/s",
        "model",
        "@CPU",
        "CPU",
        "others",
        "error"
    );
    for (label, p) in f.runs() {
        outln!(
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
        );
    }
    outln!(
        "(model: on this machine's CPUs shared with the run's other threads and other processes; @CPU: given the CPU the shared stage had; CPU: the shared stage's; others: other processes'; error: the model's, @CPU's where DISTURBED)"
    );
    if f.failures.is_empty() {
        outln!(
            "all targets hold (worst model error {:.1}%)",
            f.worst_model_error * 100.0
        );
    } else {
        outln!("targets missed: {}", f.failures.join("; "));
    }
    errln!(
        "wrote qos-real.csv, the chart and index.html in {}",
        a.out.display()
    );
    Ok(())
}
