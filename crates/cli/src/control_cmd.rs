//! `kicklab control`: every strategy against polling over the Fig. 4 sweep
//! and the workloads of `control.md`, in the simulator (the paper's Fig. 5,
//! extended), with the controller's targets checked.

use std::path::PathBuf;

use clap::Args;
use kicklab_lab::control::{control_study, csv, ControlSpec, Workload};

use crate::args::ParamArgs;
use kicklab_term::Usage;

/// Arguments of `kicklab control`.
#[derive(Debug, Args)]
pub struct ControlArgs {
    #[command(flatten)]
    params: ParamArgs,
    /// W_P from..to, swept (the paper's Fig. 4/5: 0.2us..3us).
    #[arg(long, default_value = "0.2us..3us", value_parser = range, allow_hyphen_values = true)]
    range: (f64, f64),
    /// Points of the sweep.
    #[arg(long, value_parser = crate::args::whole::<u32>, default_value_t = 15, allow_hyphen_values = true)]
    points: u32,
    /// Workloads, comma-separated: const (the paper's), exp (exponential
    /// W_P and W_C), phases (W_P 0.5us <-> 3us every 5000 messages), mix
    /// (one message in 100 takes 50x longer).
    #[arg(long, default_value = "const,exp,phases", value_delimiter = ',', value_parser = Workload::parse)]
    workload: Vec<Workload>,
    /// Messages per run (after the warm-up).
    #[arg(long, value_parser = crate::args::whole::<u64>, default_value_t = 200_000, allow_hyphen_values = true)]
    messages: u64,
    /// Bound on the p99 message latency that `adaptive` keeps.
    #[arg(long, default_value = "100us", value_parser = crate::args::latency_ns, allow_hyphen_values = true)]
    latency: f64,
    /// Seed of the random cost streams.
    #[arg(long, value_parser = crate::args::whole::<u64>, default_value_t = 1, allow_hyphen_values = true)]
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
    /// kvm: which side the guest is (tx: it produces).
    #[arg(long, default_value = "tx", allow_hyphen_values = true)]
    direction: kicklab_testbed::kvm::Direction,
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
    let params = a.params.input().params()?;
    let dir = kicklab_term::files::out_dir(&a.out, "--out", "kicklab control", a.force)?;
    // As `sweep`: one point is one value (the study would take FROM).
    if a.points == 1 && a.range.0 != a.range.1 {
        return Err(Usage(format!(
            "--range: one point (--points 1) takes one W_P (FROM..FROM), got {}..{}",
            kicklab_model::fmt_ns(a.range.0),
            kicklab_model::fmt_ns(a.range.1)
        ))
        .into());
    }
    if a.direction != kicklab_testbed::kvm::Direction::Tx
        && !matches!(a.backend.0, Some(kicklab_testbed::Backend::Kvm(_)))
    {
        return Err(
            Usage("--direction: a kvm option; only --backend kvm has a guest".into()).into(),
        );
    }
    let backend = a.backend.0.map(|b| match b {
        kicklab_testbed::Backend::Kvm(o) => {
            kicklab_testbed::Backend::Kvm(kicklab_testbed::kvm::KvmOptions {
                direction: a.direction,
                ..o
            })
        }
        other => other,
    });
    // A real study plans with the profile's costs: they must be this
    // backend's (as `run` and `validate` check).
    if let (Some(b), Some(p)) = (backend, a.params.input().load_profile()?) {
        kicklab_lab::real::profile_for(b, Some(p), &kicklab_lab::Silent)?;
    }
    // The default workloads on kvm: phases is the one a guest cannot run
    // (its work table repeats every 2048 messages); given by name, it is
    // refused.
    let mut workloads = a.workload.clone();
    if matches!(backend, Some(kicklab_testbed::Backend::Kvm(_)))
        && workloads == [Workload::Const, Workload::Exp, Workload::Phases]
    {
        workloads.retain(|w| *w != Workload::Phases);
        errln!("note: the default workloads without phases, which a kvm guest cannot run");
    }
    // Simulated with a profile (the study, or a real study's check of
    // the simulator's pick): each start-up scales with the sleeper's idle
    // time on the profile's idle curve, and each nap wakes as the
    // profile's did (as `sim` does).
    let (idle_scale, nap_ns) = a
        .params
        .input()
        .load_profile()?
        .map_or(([None, None], [None, None]), |p| p.sim_costs());
    let spec = ControlSpec {
        params,
        w_p_range: a.range,
        points: a.points,
        workloads,
        messages: a.messages,
        latency_ns: a.latency,
        seed: a.seed,
        backend,
        idle_scale,
        nap_ns,
    };
    let study = control_study(&spec, &kicklab_term::progress::Bars::default())?;
    let page = kicklab_lab::control::render::page(&study, &spec)?;
    page.write(dir.path())?;
    kicklab_report::write_atomic(&dir.path().join("control.csv"), csv(&study))?;
    if a.json {
        crate::show::print_json(&serde_json::to_value(&study)?)?;
        return kicklab_term::files::commit(dir);
    }
    for line in kicklab_lab::control::render::lines(&study) {
        outln!("{line}");
    }
    errln!(
        "wrote control.csv, the charts and index.html in {}",
        a.out.display()
    );
    kicklab_term::files::commit(dir)
}
