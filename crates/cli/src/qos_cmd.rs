//! `kicklab qos`: several VMs sharing one device (Lakshmi and Nandy), one
//! point in the model and the simulator, or for real with threads
//! (`--backend futex`, or `kvm` with a guest per VM); or (`--figures`)
//! the sweeps that reproduce the paper's Figs. 2.10-2.12, and with a real
//! backend their real shapes.

use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser as _};
use clap::Args;
use kicklab_lab::qos_command::{QosBackend, QosRequest, VmCoreChoice};
use kicklab_lab::unused::Unused;
use kicklab_model::qos::{Arrivals, Path, Police};
use kicklab_model::Flag;

/// Arguments of `kicklab qos`.
#[derive(Debug, Args)]
pub struct QosArgs {
    /// VMs sharing the device.
    #[arg(long, value_parser = kicklab_model::typed::whole::<usize>, default_value_t = 2, allow_hyphen_values = true)]
    vms: usize,
    /// Requests offered per second to every VM (see --rate for one VM).
    #[arg(long, default_value_t = 800.0, allow_hyphen_values = true, value_parser = kicklab_model::typed::number)]
    offered: f64,
    /// One VM's offered rate, VM=R (VMs count from 1), e.g. --rate 2=1500;
    /// repeatable.
    #[arg(long, value_parser = kicklab_model::qos::parse_vm_rate, allow_hyphen_values = true)]
    rate: Vec<(usize, f64)>,
    /// shared: every request crosses one backend (driver domain); direct:
    /// per-VM queues at the device, a small hypervisor cost per request.
    #[arg(long, default_value = "shared", value_parser = PossibleValuesParser::new(["shared", "direct"])
        .map(|s| if s == "direct" { Path::Direct } else { Path::Shared }))]
    path: Path,
    /// A VM's rate limit, VM=R[,burst=N] (burst in requests, default 10);
    /// repeatable.
    #[arg(long, value_parser = kicklab_model::qos::parse_vm_limit, allow_hyphen_values = true)]
    limit: Vec<(usize, f64, f64)>,
    /// Where limits are enforced: ingress (at the device, before any
    /// shared stage) or post (in the shared stage, after receive).
    #[arg(long, default_value = "ingress", value_parser = PossibleValuesParser::new(["ingress", "post"])
        .map(|s| if s == "post" { Police::Post } else { Police::Ingress }))]
    police: Police,
    /// The shared stage's work per request [default: 1/1900 s = 526.3us on the shared
    /// path, 20us on the direct path: docs/qos.md].
    #[arg(long, value_parser = kicklab_model::typed::duration_ns, allow_hyphen_values = true)]
    shared: Option<f64>,
    /// Each VM's own work per request.
    #[arg(long, default_value = "666.667us", value_parser = kicklab_model::typed::duration_ns, allow_hyphen_values = true)]
    vm_service: f64,
    /// A kick on each hand-off to a sleeping stage (paid by the sender).
    #[arg(long, default_value = "0", value_parser = kicklab_model::typed::duration_ns, allow_hyphen_values = true)]
    kick: f64,
    /// The wake-up of a stage that slept (paid by it).
    #[arg(long, default_value = "0", value_parser = kicklab_model::typed::duration_ns, allow_hyphen_values = true)]
    wake: f64,
    /// Requests each stage can hold waiting.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u32>, default_value_t = 64, allow_hyphen_values = true)]
    buffer: u32,
    /// How requests arrive: deterministic (evenly spaced) or poisson.
    #[arg(long, default_value = "deterministic", value_parser = PossibleValuesParser::new(["deterministic", "poisson"])
        .map(|s| if s == "poisson" { Arrivals::Poisson } else { Arrivals::Deterministic }))]
    arrivals: Arrivals,
    /// sim (events), model (analytic), futex (threads over kicklab rings,
    /// the paper's times scaled by --scale), kvm (as futex, with a real
    /// KVM guest per VM consuming over a ring in its memory).
    #[arg(long, default_value = "sim", value_parser = kicklab_term::cmdline::choice(&QosBackend::ALL, QosBackend::name))]
    backend: QosBackend,
    /// Seconds measured, of the paper's time (after 1 s of warm-up); a
    /// real run (--backend futex or kvm) takes both times --scale, the
    /// warm-up at least 0.2 s of real time.
    #[arg(long, default_value_t = 10.0, allow_hyphen_values = true, value_parser = kicklab_model::typed::number)]
    seconds: f64,
    /// --backend futex or kvm: real time over the paper's (service times times
    /// this, rates divided by it); figures are given in the paper's time
    /// and as measured.
    #[arg(long, default_value_t = kicklab_lab::qos_real::DEFAULT_SCALE, allow_hyphen_values = true, value_parser = kicklab_model::typed::number)]
    scale: f64,
    /// --backend futex: what the VMs' own processing runs on: busy (busy
    /// work on this machine's CPUs), timed (a timed core of its own per
    /// VM), auto (busy if every stage and the device can have a CPU);
    /// with --backend kvm, a guest per VM.
    #[arg(long, default_value = "auto", value_parser = VmCoreChoice::parse, allow_hyphen_values = true)]
    vm_core: VmCoreChoice,
    /// Seed of Poisson arrivals.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 1, allow_hyphen_values = true)]
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
    /// The request the flags make.
    fn request(&self) -> QosRequest {
        QosRequest {
            vms: self.vms,
            offered: self.offered,
            rates: self.rate.clone(),
            path: self.path,
            limits: self.limit.clone(),
            police: self.police,
            shared_ns: self.shared,
            vm_service_ns: self.vm_service,
            kick_ns: self.kick,
            wake_ns: self.wake,
            buffer: self.buffer,
            arrivals: self.arrivals,
            backend: self.backend,
            seconds: self.seconds,
            scale: self.scale,
            vm_core: self.vm_core,
            seed: self.seed,
            figures: self.figures,
        }
    }

    /// The flags given that this run would not use ([`QosRequest::unused`]).
    pub fn unused(&self, given: &dyn Fn(Flag) -> bool) -> Vec<Unused> {
        self.request().unused(given)
    }
}

pub fn run(a: &QosArgs) -> anyhow::Result<()> {
    let req = a.request();
    req.check()?;
    if a.backend == QosBackend::Kvm {
        kicklab_lab::backend_input::kvm_usable()?;
    }
    let dir = if a.figures {
        Some(kicklab_term::files::out_dir(
            &a.out,
            kicklab_model::Flag::Out,
            "kicklab qos",
            a.force,
        )?)
    } else {
        None
    };
    let output = kicklab_lab::qos_command::run(&req, &kicklab_term::progress::Bars::default())?;
    if let (Some(dir), Some(files)) = (&dir, &output.files) {
        files.page.write(dir.path())?;
        kicklab_report::write_atomic(&dir.path().join(files.csv_name), &files.csv)?;
    }
    if a.json {
        kicklab_term::show::print_json(&output.json)?;
    } else {
        for line in &output.text {
            outln!("{line}");
        }
        for line in &output.warnings {
            errln!("{line}");
        }
    }
    let note = output.files.as_ref().filter(|_| !a.json).map(|files| {
        format!(
            "wrote {}, the charts and index.html in {}",
            files.csv_name,
            a.out.display()
        )
    });
    match (dir, note) {
        (Some(dir), Some(note)) => kicklab_term::files::commit_noting(dir, &note),
        (Some(dir), None) => kicklab_term::files::commit(dir),
        (None, _) => Ok(()),
    }
}
