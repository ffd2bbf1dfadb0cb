//! `kicklab report`: parses, calls `kicklab_lab::report::build`, writes the
//! page.

use std::path::PathBuf;

use clap::Args;
use kicklab_lab::report::{build, ReportOptions};

/// Arguments of `kicklab report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Output directory (index.html, one SVG per figure, CSV data).
    #[arg(long, default_value = "report", allow_hyphen_values = true)]
    out: PathBuf,
    /// Replace the files an earlier kicklab run left in --out (a folder
    /// holding other files is never replaced).
    #[arg(long)]
    force: bool,
    /// Points per swept curve (2 to 100000).
    #[arg(long, value_parser = crate::args::whole::<u32>, default_value_t = 120, allow_hyphen_values = true)]
    points: u32,
    /// Messages simulated per point.
    #[arg(long, value_parser = crate::args::whole::<u64>, default_value_t = 50_000, allow_hyphen_values = true)]
    messages: u64,
    /// Seed of the random cost streams.
    #[arg(long, value_parser = crate::args::whole::<u64>, default_value_t = 1, allow_hyphen_values = true)]
    seed: u64,
    /// Skip the real runs (calibration and validation on this machine).
    #[arg(long)]
    no_testbed: bool,
    /// Messages per real run in the validation.
    #[arg(
        long,
        value_parser = crate::args::whole::<u64>,
        default_value_t = 60_000,
        allow_hyphen_values = true,
        conflicts_with = "no_testbed"
    )]
    real_messages: u64,
    /// Repetitions of each real run in the validation (1 to 25); medians
    /// are reported, the range drawn as error bars.
    #[arg(long, value_parser = crate::args::whole::<u32>, default_value_t = kicklab_lab::validate::DEFAULT_REPEAT, allow_hyphen_values = true, conflicts_with = "no_testbed")]
    repeat: u32,
}

pub fn run(a: &ReportArgs) -> anyhow::Result<()> {
    let opts = ReportOptions {
        points: a.points,
        messages: a.messages,
        seed: a.seed,
        testbed: !a.no_testbed,
        real_messages: a.real_messages,
        repeat: a.repeat,
    };
    // Bad options and a bad --out fail before anything runs.
    opts.check()?;
    let dir = crate::files::out_dir(&a.out, "--out", "kicklab report", a.force)?;
    let report = build(&opts, &crate::show::Bars::default())?;
    report.write(dir.path())?;
    outln!("{}", a.out.join("index.html").display());
    crate::files::commit(dir)
}
