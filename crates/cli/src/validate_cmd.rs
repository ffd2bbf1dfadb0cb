//! `kicklab validate`: parses, calls `kicklab_lab::validate`, prints.

use std::path::PathBuf;

use clap::Args;
use kicklab_lab::validate::{section, table, validate, Options};
use kicklab_model::{fmt_ns, Flag};
use kicklab_report::Page;
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
    a.be.input().check()?;
    let params = a.params.input().params()?;
    let opts = Options {
        messages: a.messages,
        seed: a.seed,
        repeat: a.repeat,
    };
    kicklab_lab::validate::check(&params, a.be.input().get(), &a.vary, &opts)?;
    let out = match (&a.out, a.json) {
        (Some(dir), _) => Some(dir.clone()),
        (None, false) => Some(PathBuf::from("validate-out")),
        (None, true) => None,
    };
    let out = match &out {
        Some(dir) => Some(kicklab_term::files::out_dir(
            dir,
            "--out",
            "kicklab validate",
            a.force,
        )?),
        None => None,
    };
    let bars = kicklab_term::progress::Bars::default();
    let profile = kicklab_lab::real::profile_for(
        a.be.input().get(),
        a.params.input().load_profile()?,
        &bars,
    )?;
    let doubtful = kicklab_lab::disturbance::check_profile(&profile);
    for w in &doubtful {
        errln!("warning: {w}: every point will be marked disturbed");
    }
    let points = validate(&params, &profile, a.be.input().get(), &a.vary, &opts, &bars)?;
    // The profile's warnings were said once above.
    for p in &points {
        if let Some(line) = p.run_disturbance() {
            errln!("warning: W_P {}: {line}", fmt_ns(p.x));
        }
    }
    let be = a.be.input().get().name();
    if let Some(dir) = &out {
        let cmd =
            a.be.input()
                .command_line("validate")
                .arg_some(
                    Flag::Profile,
                    a.params.profile.as_ref().map(|p| p.display()),
                )
                .arg(Flag::Vary, a.vary)
                .arg(Flag::Messages, a.messages)
                .arg(Flag::Repeat, a.repeat)
                .to_string();
        let page = Page {
            title: format!("kicklab validate ({be})"),
            intro_html: String::new(),
            sections: vec![section(&points, &profile, be, &cmd)?],
        };
        page.write(dir.path())?;
        kicklab_report::write_atomic(&dir.path().join("validate.csv"), table(&points).to_csv())?;
    }
    if a.json {
        crate::show::print_json(&kicklab_lab::validate::to_json(
            &points,
            &params,
            a.be.input().get(),
            &a.vary,
            &opts,
        ))?;
    } else {
        for line in kicklab_lab::validate::text_lines(&points) {
            outln!("{line}");
        }
    }
    match out {
        Some(dir) => {
            errln!("wrote {}", dir.target().join("index.html").display());
            kicklab_term::files::commit(dir)
        }
        None => Ok(()),
    }
}
