//! `kicklab replay DIR` (also `kicklab validate --replay DIR`): parses,
//! calls `kicklab_lab::replay::replay` (or, with `--control`,
//! `kicklab_lab::control::replay::replay_control`), prints.

use std::path::PathBuf;

use clap::Args;
use kicklab_lab::control::replay::replay_control;
use kicklab_lab::replay::replay;

/// Arguments of `kicklab replay` (and of `kicklab validate --replay`).
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A folder of recorded validations: `validate-<name>.json` (what
    /// `kicklab validate --json` printed) beside `profile-<name>.json` (the
    /// profile it ran with), in it or in its subfolders (the layout of
    /// data/machines/<machine>/<set>/).
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Print one JSON list (an object per recorded backend; with
    /// --control, per recorded point) instead of the tables.
    #[arg(long)]
    json: bool,
    /// Replay the recorded control studies instead (`control-<name>.json`,
    /// what `kicklab control --backend B --json` printed, beside its
    /// profile): per point, the strategy cheapest within the bounds as
    /// measured and as the simulator finds it from the profile alone
    /// (adaptive left out; docs/control.md, "Recorded studies").
    #[arg(long)]
    control: bool,
}

pub fn run(a: &ReplayArgs) -> anyhow::Result<()> {
    let lines = if a.control {
        let picks = replay_control(&a.dir)?;
        if a.json {
            return kicklab_term::show::print_json(&serde_json::to_value(&picks)?);
        }
        kicklab_lab::control::replay::lines(&picks)
    } else {
        let sets = replay(&a.dir)?;
        if a.json {
            return kicklab_term::show::print_json(&serde_json::to_value(&sets)?);
        }
        sets.iter().flat_map(kicklab_lab::replay::lines).collect()
    };
    for line in lines {
        outln!("{line}");
    }
    Ok(())
}
