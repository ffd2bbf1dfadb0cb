//! `kicklab control`: every strategy against polling over the Fig. 4 sweep
//! and the workloads of `control.md`, in the simulator (the paper's Fig. 5,
//! extended), with the controller's targets checked.

use std::path::PathBuf;

use clap::Args;
use kicklab_lab::control::request::ControlRequest;
use kicklab_lab::control::{control_study, csv, Workload};

use crate::args::ParamArgs;

/// Arguments of `kicklab control`.
#[derive(Debug, Args)]
pub struct ControlArgs {
    #[command(flatten)]
    params: ParamArgs,
    /// W_P from..to, swept (the paper's Fig. 4/5: 0.2us..3us).
    #[arg(long, default_value = "0.2us..3us", value_parser = range, allow_hyphen_values = true)]
    range: (f64, f64),
    /// Points of the sweep.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u32>, default_value_t = 15, allow_hyphen_values = true)]
    points: u32,
    /// Workloads, comma-separated: const (the paper's), exp (exponential
    /// W_P and W_C), phases (W_P 0.5us <-> 3us every 5000 messages), mix
    /// (one message in 100 takes 50x longer).
    #[arg(long, default_value = "const,exp,phases", value_delimiter = ',', value_parser = Workload::parse)]
    workload: Vec<Workload>,
    /// Messages per run (after the warm-up).
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 200_000, allow_hyphen_values = true)]
    messages: u64,
    /// Bound on the p99 message latency that `adaptive` keeps.
    #[arg(long, default_value = "100us", value_parser = kicklab_model::typed::latency_ns, allow_hyphen_values = true)]
    latency: f64,
    /// Seed of the random cost streams.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 1, allow_hyphen_values = true)]
    seed: u64,
    /// Output directory: control.csv, one SVG per chart, index.html.
    #[arg(long, default_value = "control-out", allow_hyphen_values = true)]
    out: PathBuf,
    /// Replace the files an earlier kicklab run left in --out (a folder
    /// holding other files is never replaced).
    #[arg(long)]
    force: bool,
    /// Print the whole study as one JSON object.
    #[arg(long)]
    json: bool,
    /// Where the runs happen: sim (the simulator), or for real: futex,
    /// eventfd, pipe (two threads) or kvm (a guest on one side; its
    /// strategies run by its VMM where it cannot run them itself). Real
    /// runs go one after another and take the N, S of --profile for the
    /// strategies that plan with them: calibrate first.
    #[arg(long, default_value = "sim", value_parser = sim_or_backend, allow_hyphen_values = true)]
    backend: RunsOn,
    /// kvm: which side the guest is (tx: it produces). [default: tx]
    #[arg(long, allow_hyphen_values = true)]
    direction: Option<kicklab_testbed::kvm::Direction>,
}

/// Where a control study runs: `--backend`.
#[derive(Debug, Clone, Copy)]
struct RunsOn(Option<kicklab_testbed::Backend>);

fn sim_or_backend(s: &str) -> Result<RunsOn, String> {
    if s == "sim" {
        return Ok(RunsOn(None));
    }
    crate::args::backend(s)
        .map(|b| RunsOn(Some(b)))
        .map_err(|e| e.replace("(use ", "(use sim, "))
}

fn range(s: &str) -> Result<(f64, f64), String> {
    let (a, b) = kicklab_model::split_range(s).map_err(|e| e.to_string())?;
    let d = |x: &str| kicklab_model::parse_duration_ns(x).map_err(|e| e.to_string());
    let (a, b) = (d(a)?, d(b)?);
    if a <= 0.0 || b < a {
        return Err(format!(
            "need 0 < FROM <= TO, got {}",
            kicklab_model::shown(s)
        ));
    }
    Ok((a, b))
}

pub fn run(a: &ControlArgs) -> anyhow::Result<()> {
    let request = ControlRequest {
        pair: a.params.input(),
        range: a.range,
        points: a.points,
        workloads: a.workload.clone(),
        messages: a.messages,
        latency_ns: a.latency,
        seed: a.seed,
        backend: a.backend.0,
        direction: a.direction,
    };
    let (spec, notes) = request.spec()?;
    let dir =
        kicklab_term::files::out_dir(&a.out, kicklab_model::Flag::Out, "kicklab control", a.force)?;
    for note in notes {
        errln!("note: {note}");
    }
    let study = control_study(&spec, &kicklab_term::progress::Bars::default())?;
    let page = kicklab_lab::control::render::page(&study, &spec)?;
    page.write(dir.path())?;
    kicklab_report::write_atomic(&dir.path().join("control.csv"), csv(&study))?;
    if a.json {
        kicklab_term::show::print_json(&serde_json::to_value(&study)?)?;
        return kicklab_term::files::commit(dir);
    }
    for line in kicklab_lab::control::render::lines(&study) {
        outln!("{line}");
    }
    let note = format!(
        "wrote control.csv, the charts and index.html in {}",
        a.out.display()
    );
    kicklab_term::files::commit_noting(dir, &note)
}
