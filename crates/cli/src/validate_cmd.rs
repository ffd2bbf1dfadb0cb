//! `kicklab validate`: parses, calls `kicklab_lab::validate`, prints.

use std::path::PathBuf;

use clap::Args;
use kicklab_lab::validate::{Options, ValidateRequest};
use kicklab_sim::Vary;

use crate::args::{BackendArgs, ParamArgs};

/// Arguments of `kicklab validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    params: ParamArgs,
    #[command(flatten)]
    be: BackendArgs,
    /// The W_P sweep.
    #[arg(long, default_value = kicklab_lab::validate::FIG4_SWEEP, value_parser = kicklab_sim::Vary::parse_distinct, allow_hyphen_values = true)]
    pub(crate) vary: Vary,
    /// Messages per real run.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 60_000, allow_hyphen_values = true)]
    messages: u64,
    /// Repetitions of the notify and the polling run at each point (1 to
    /// 25): the measured values are their medians, the charts draw their
    /// range. A disturbed repetition is run again (up to 3 extra tries per
    /// point).
    #[arg(long, value_parser = kicklab_model::typed::whole::<u32>, default_value_t = kicklab_lab::validate::DEFAULT_REPEAT, allow_hyphen_values = true)]
    repeat: u32,
    /// Output directory: index.html, the charts (validate-<backend>-T.svg,
    /// validate-<backend>-E.svg) and validate.csv. [default: validate-out;
    /// with --json, no files unless given]
    #[arg(long, allow_hyphen_values = true)]
    out: Option<PathBuf>,
    /// Replace the files an earlier kicklab run left in --out (a folder
    /// holding other files is never replaced).
    #[arg(long)]
    force: bool,
    /// Seed.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 1, allow_hyphen_values = true)]
    seed: u64,
    /// Print one JSON object (every point, the summary) instead of the table.
    #[arg(long)]
    json: bool,
}

pub fn run(a: &ValidateArgs) -> anyhow::Result<()> {
    let request = ValidateRequest {
        pair: a.params.input(),
        backend: a.be.input(),
        vary: a.vary,
        options: Options {
            messages: a.messages,
            seed: a.seed,
            repeat: a.repeat,
        },
    };
    request.check()?;
    let out = match (&a.out, a.json) {
        (Some(dir), _) => Some(dir.clone()),
        (None, false) => Some(PathBuf::from("validate-out")),
        (None, true) => None,
    };
    let out = match &out {
        Some(dir) => Some(kicklab_term::files::out_dir(
            dir,
            kicklab_model::Flag::Out,
            "kicklab validate",
            a.force,
        )?),
        None => None,
    };
    let done = request.run(&kicklab_term::progress::Bars::default())?;
    for line in &done.warnings {
        errln!("{line}");
    }
    if let Some(dir) = &out {
        done.page.write(dir.path())?;
        kicklab_report::write_atomic(&dir.path().join("validate.csv"), &done.csv)?;
    }
    if a.json {
        kicklab_term::show::print_json(&done.json)?;
    } else {
        for line in &done.text {
            outln!("{line}");
        }
    }
    match out {
        Some(dir) => {
            let note = format!("wrote {}", dir.target().join("index.html").display());
            kicklab_term::files::commit_noting(dir, &note)
        }
        None => Ok(()),
    }
}
