//! `kicklab sweep`: one parameter varied, model and simulator at every point.

use std::path::PathBuf;

use clap::Args;
use kicklab_model::WaitMode;
use kicklab_sim::Vary;

use crate::args::ParamArgs;

/// Arguments of `kicklab sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    params: ParamArgs,
    /// What to vary: NAME=FROM..TO:POINTS, NAME one of len, kp, kc, wp, wc,
    /// np, nc, sp, sc, vp, vc (e.g. wp=0.1us..3us:100, kc=1..64:64). A distribution
    /// given for the swept cost keeps its shape and takes each point's
    /// value as its mean (--vary wp=0.1us..3us:30 --wp exp:1us).
    #[arg(long, value_parser = kicklab_sim::Vary::parse_distinct, allow_hyphen_values = true)]
    pub(crate) vary: Vary,
    /// How both parties wait (polling is always run alongside).
    #[arg(long = "strategy", visible_alias = "mode", value_name = "STRATEGY", default_value = "notify", value_parser = WaitMode::parse, allow_hyphen_values = true)]
    mode: WaitMode,
    /// Messages simulated per point (after the warm-up).
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 50_000, allow_hyphen_values = true)]
    messages: u64,
    /// Seed of the random cost streams.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 1, allow_hyphen_values = true)]
    seed: u64,
    /// Output directory: sweep.csv, T.svg, E.svg, index.html.
    #[arg(long, default_value = "sweep-out", allow_hyphen_values = true)]
    out: PathBuf,
    /// Replace the files an earlier kicklab run left in --out (a folder
    /// holding other files is never replaced).
    #[arg(long)]
    force: bool,
}

/// Runs a sweep with a progress bar.
pub fn run(a: &SweepArgs) -> anyhow::Result<()> {
    let params = a.params.input().params()?;
    let dir =
        kicklab_term::files::out_dir(&a.out, kicklab_model::Flag::Out, "kicklab sweep", a.force)?;
    let out = kicklab_lab::sweep_command::run(
        &params,
        &a.vary,
        a.mode,
        a.messages,
        a.seed,
        &kicklab_term::progress::Bars::default(),
    )?;
    // Everything computed: only now touch the file system.
    out.page.write(dir.path())?;
    kicklab_report::write_atomic(&dir.path().join("sweep.csv"), &out.csv)?;
    for line in &out.text {
        outln!("{line}");
    }
    if let Some(w) = &out.warning {
        errln!("warning: {w} (raise --messages)");
    }
    let note = format!(
        "wrote {}, T.svg, E.svg, index.html in {}",
        a.out.join("sweep.csv").display(),
        a.out.display()
    );
    kicklab_term::files::commit_noting(dir, &note)
}
