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
    #[arg(long, value_parser = kicklab_model::typed::whole::<u32>, default_value_t = 120, allow_hyphen_values = true)]
    points: u32,
    /// Messages simulated per point.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 50_000, allow_hyphen_values = true)]
    messages: u64,
    /// Seed of the random cost streams.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 1, allow_hyphen_values = true)]
    seed: u64,
    /// Skip the real runs (calibration and validation on this machine).
    #[arg(long)]
    no_testbed: bool,
    /// Messages per real run in the validation [default: 40000, 60000
    /// with --full].
    #[arg(
        long,
        value_parser = kicklab_model::typed::whole::<u64>,
        allow_hyphen_values = true,
        conflicts_with = "no_testbed"
    )]
    real_messages: Option<u64>,
    /// Repetitions of each real run in the validation (1 to 25); medians
    /// are reported, the range drawn as error bars [default: 2, 3 with
    /// --full].
    #[arg(long, value_parser = kicklab_model::typed::whole::<u32>, allow_hyphen_values = true, conflicts_with = "no_testbed")]
    repeat: Option<u32>,
    /// The real runs at full depth (about twice as long): three
    /// repetitions per validation point and 60000 messages each, the
    /// flags sweep's median of three runs per point, scale and qos runs
    /// twice as long. Without it they run at the quick depth, and the
    /// page says which.
    #[arg(long, conflicts_with = "no_testbed")]
    full: bool,
}

pub fn run(a: &ReportArgs) -> anyhow::Result<()> {
    let opts = ReportOptions {
        points: a.points,
        messages: a.messages,
        seed: a.seed,
        testbed: !a.no_testbed,
        real_messages: a.real_messages.unwrap_or(if a.full {
            kicklab_lab::report::FULL_REAL_MESSAGES
        } else {
            kicklab_lab::report::QUICK_REAL_MESSAGES
        }),
        repeat: a.repeat.unwrap_or(if a.full {
            kicklab_lab::report::FULL_REPEAT
        } else {
            kicklab_lab::report::QUICK_REPEAT
        }),
        full: a.full,
    };
    // Bad options and a bad --out fail before anything runs.
    opts.check()?;
    let dir =
        kicklab_term::files::out_dir(&a.out, kicklab_model::Flag::Out, "kicklab report", a.force)?;
    let report = build(&opts, &kicklab_term::progress::Bars::default())?;
    report.write(dir.path())?;
    outln!("{}", a.out.join("index.html").display());
    kicklab_term::files::commit(dir)
}
