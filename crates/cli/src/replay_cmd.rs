//! `kicklab replay DIR` (also `kicklab validate --replay DIR`): parses,
//! calls `kicklab_lab::replay::replay` (or, with `--control`,
//! `kicklab_lab::control::replay::replay_control`), prints.

use std::path::PathBuf;

use clap::Args;
use kicklab_lab::control::replay::{replay_control, PickReplay};
use kicklab_lab::control::targets::E_SPREAD;
use kicklab_lab::replay::{replay, ReplaySet};
use kicklab_model::fmt_ns;

/// Arguments of `kicklab validate --replay`.
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
    if a.control {
        let picks = replay_control(&a.dir)?;
        if a.json {
            return crate::show::print_json(&serde_json::to_value(&picks)?);
        }
        print_picks(&picks);
        return Ok(());
    }
    let sets = replay(&a.dir)?;
    if a.json {
        return crate::show::print_json(&serde_json::to_value(&sets)?);
    }
    for s in &sets {
        print_set(s);
    }
    Ok(())
}

fn print_set(s: &ReplaySet) {
    outln!(
        "{} ({}{})",
        s.file,
        s.backend,
        s.direction
            .as_ref()
            .map(|d| format!(" {d}"))
            .unwrap_or_default()
    );
    outln!(
        "{:>8}  {:<44} {:>28}  {:>7}",
        "W_P",
        "forecast T [band]",
        "measured T (min-max)",
        "covered"
    );
    for p in &s.points {
        let t = &p.t_real_ns;
        outln!(
            "{:>8}  {:<44} {:>28}  {:>3} of {}",
            fmt_ns(p.wp_ns),
            p.forecast.describe(),
            format!(
                "{} ({}-{})",
                fmt_ns(t[t.len() / 2]),
                fmt_ns(t[0]),
                fmt_ns(t[t.len() - 1])
            ),
            p.judged.covered,
            p.judged.measured
        );
    }
    let v = &s.summary;
    outln!(
        "coverage {:.0}%, sharpness {}, central T median error {:.1}%, knife-edges: {} points spread over 2x, {} of them not named",
        v.coverage * 100.0,
        v.sharpness
            .map_or("- (every point a knife-edge)".into(), |x| format!("{:.1}%", x * 100.0)),
        v.median_err_t * 100.0,
        v.wide_points,
        v.knife_edges_missed
    );
    outln!();
}

fn print_picks(picks: &[PickReplay]) {
    outln!(
        "{:<58} {:>8}  {:<30} {:<30} {:>9}  holds",
        "recording",
        "W_P",
        "measured cheapest (E)",
        "simulated cheapest",
        "its E"
    );
    for r in picks {
        let p = &r.pick;
        outln!(
            "{:<58} {:>8}  {:<30} {:<30} {:>9}  {}",
            r.file,
            fmt_ns(r.w_p_ns),
            format!("{} ({})", short(&p.measured), fmt_ns(p.measured_e_ns)),
            short(&p.simulated),
            p.simulated_measured_e_ns.map_or("-".into(), fmt_ns),
            match (p.holds, p.simulated_kept_bounds) {
                (true, _) => "yes",
                (false, false) => "no (out of bounds as measured)",
                (false, true) => "no (dearer)",
            }
        );
    }
    let held = picks.iter().filter(|p| p.pick.holds).count();
    outln!(
        "{held} of {} points: the simulator's pick, as measured, within the bounds and within {:.0}% of the measured cheapest's E",
        picks.len(),
        E_SPREAD * 100.0
    );
}

/// A strategy's family with its first parameter, short enough for a column.
fn short(s: &str) -> String {
    s.split(',').next().unwrap_or(s).to_string()
}
