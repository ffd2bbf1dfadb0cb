//! `kicklab map`: the regime, T and E over a grid of two parameters,
//! model beside simulator, as CSV and 2-D charts.

use std::path::PathBuf;

use clap::Args;
use kicklab_lab::map::MapSpec;
use kicklab_model::WaitMode;
use kicklab_sim::Vary;

use crate::args::ParamArgs;

/// Arguments of `kicklab map`.
#[derive(Debug, Args)]
pub struct MapArgs {
    #[command(flatten)]
    params: ParamArgs,
    /// Columns: NAME=FROM..TO:POINTS (as `sweep --vary`).
    #[arg(long, default_value = "wp=0.1us..3us:60", value_parser = kicklab_sim::Vary::parse_distinct, allow_hyphen_values = true)]
    pub(crate) x: Vary,
    /// Rows: NAME=FROM..TO:POINTS.
    #[arg(long, default_value = "wc=0.1us..3us:60", value_parser = kicklab_sim::Vary::parse_distinct, allow_hyphen_values = true)]
    pub(crate) y: Vary,
    /// How both parties wait.
    #[arg(long = "strategy", visible_alias = "mode", value_name = "STRATEGY", default_value = "notify", value_parser = WaitMode::parse, allow_hyphen_values = true)]
    mode: WaitMode,
    /// Messages simulated per point (0: the model only).
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 20_000, allow_hyphen_values = true)]
    messages: u64,
    /// Seed of the random cost streams.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 1, allow_hyphen_values = true)]
    seed: u64,
    /// Output directory: map.csv, the maps (SVG), index.html.
    #[arg(long, default_value = "map-out", allow_hyphen_values = true)]
    out: PathBuf,
    /// Replace the files an earlier kicklab run left in --out (a folder
    /// holding other files is never replaced).
    #[arg(long)]
    force: bool,
}

pub fn run(a: &MapArgs) -> anyhow::Result<()> {
    let base = a.params.input().params()?;
    let dir =
        kicklab_term::files::out_dir(&a.out, kicklab_model::Flag::Out, "kicklab map", a.force)?;
    let spec = MapSpec {
        base,
        x: a.x,
        y: a.y,
        mode: a.mode,
        sim_messages: (a.messages > 0).then_some(a.messages),
        seed: a.seed,
    };
    let out = kicklab_lab::map_command::run(&spec, &kicklab_term::progress::Bars::default())?;
    out.page.write(dir.path())?;
    kicklab_report::write_atomic(&dir.path().join("map.csv"), &out.csv)?;
    outln!("{}", out.summary);
    let note = format!(
        "wrote map.csv, the maps and index.html in {}",
        a.out.display()
    );
    kicklab_term::files::commit_noting(dir, &note)
}
