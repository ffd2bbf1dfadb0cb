//! `kicklab calibrate`: measure N and S of a notification backend.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use kicklab_model::{fmt_ns, parse_duration_ns};
use kicklab_testbed::{calibrate_backend, Calibration};

use crate::args::BackendArgs;

/// Arguments of `kicklab calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    #[command(flatten)]
    be: BackendArgs,
    /// Notifications per direction per round.
    #[arg(long, value_parser = kicklab_model::typed::whole::<usize>, default_value_t = 400, allow_hyphen_values = true)]
    samples: usize,
    /// How long the woken party idles before each notification (as a
    /// sleeping party does in a run; a longer idle lets its CPU halt).
    #[arg(long, default_value = "50us", value_parser = gap, allow_hyphen_values = true)]
    gap: Duration,
    /// Most rounds before giving up on stable medians (within 5%).
    #[arg(long, value_parser = kicklab_model::typed::whole::<usize>, default_value_t = 6, allow_hyphen_values = true)]
    rounds: usize,
    /// The idle gaps of the idle curve (N and S after each; one round of
    /// --samples each), comma-separated, or `none`.
    #[arg(long, default_value = "5us,10us,20us,50us,100us,200us,500us", value_parser = gaps, allow_hyphen_values = true)]
    gaps: Gaps,
    /// Runs of a polling pair with no work, for the ring's cost per
    /// message (added to W_P and W_C by the model); 0: not measured.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u32>, default_value_t = 5, allow_hyphen_values = true)]
    overhead_runs: u32,
    /// Write the profile (JSON) here, for --profile.
    #[arg(long, allow_hyphen_values = true)]
    save: Option<PathBuf>,
    /// Print one JSON object: {"backend", "NP_ns", "NC_ns", "SP_ns", "SC_ns", ...}.
    #[arg(long)]
    json: bool,
}

/// The gaps of `--gaps`.
#[derive(Debug, Clone)]
struct Gaps(Vec<Duration>);

fn gaps(s: &str) -> Result<Gaps, String> {
    if s.trim() == "none" {
        return Ok(Gaps(Vec::new()));
    }
    let v = s
        .split(',')
        .map(|g| {
            let d = gap(g)?;
            if d.is_zero() {
                return Err(format!("`{}`: every gap must be longer than 0", g.trim()));
            }
            Ok(d)
        })
        .collect::<Result<Vec<_>, String>>()?;
    if v.len() > kicklab_testbed::calibrate::MAX_GAPS {
        return Err(format!(
            "at most {} gaps",
            kicklab_testbed::calibrate::MAX_GAPS
        ));
    }
    Ok(Gaps(v))
}

fn gap(s: &str) -> Result<Duration, String> {
    parse_duration_ns(s)
        .map(|ns| Duration::from_secs_f64(ns / 1e9))
        .map_err(|e| e.to_string())
}

pub fn run(a: &CalibrateArgs) -> anyhow::Result<()> {
    a.be.input().check()?;
    if let Some(path) = &a.save {
        kicklab_term::files::check_out_file(path, "--save")?;
    }
    let c = Calibration {
        gaps: a.gaps.0.clone(),
        overhead_runs: a.overhead_runs,
        ..Calibration::new(a.samples, a.gap, a.rounds)
    };
    // Before it says what it is about to measure.
    c.check()?;
    errln!(
        "calibrating {} ({} notifications per direction per round, {} idle before each; then {} more idle gaps, \
         one round each; then {} runs of a polling pair with no work; then {} runs of two reference pairs \
         with notifications) ...",
        a.be.input().get().name(),
        a.samples,
        fmt_ns(a.gap.as_secs_f64() * 1e9),
        c.gaps.iter().filter(|g| **g != c.gap).count(),
        c.overhead_runs,
        c.reference_runs
    );
    let p = kicklab_lab::with_heartbeat(
        &kicklab_term::progress::Bars::default(),
        &format!("calibrating {}", a.be.input().get().name()),
        std::time::Duration::from_secs(10),
        || calibrate_backend(a.be.input().get(), &c),
    )?;
    if let Some(path) = &a.save {
        kicklab_term::files::save(path, "--save", serde_json::to_string_pretty(&p)?.as_bytes())?;
        errln!("saved {}", path.display());
    }
    if a.json {
        return crate::show::print_json(&kicklab_lab::real::profile_json(&p));
    }
    let guest = match a.be.input().get() {
        kicklab_testbed::Backend::Kvm(o) => Some(o.guest),
        kicklab_testbed::Backend::Threads(_) => None,
    };
    for line in kicklab_lab::profile_text::lines(&p, guest) {
        outln!("{line}");
    }
    Ok(())
}
