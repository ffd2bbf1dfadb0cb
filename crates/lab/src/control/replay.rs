//! Recorded control studies predicted again: [`replay_control`] reads
//! `control-<name>.json` (what `kicklab control --backend B --json`
//! printed) beside the `profile-<name>.json` it ran with, simulates each
//! recorded point of the constant workload from the profile alone, and
//! asks whether the strategy the simulator finds cheapest within the
//! bounds is, as measured, within them too and within [`E_SPREAD`] of the
//! measured cheapest's E. Nothing real runs.
//!
//! The bounds: T within [`REAL_T_RATIO`] of polling's, p99 within the
//! study's latency bound where any strategy kept it (else T alone).
//! `adaptive` takes part in neither pick: what it does is judged by the
//! study's own targets (`targets`), and a recording made by an
//! earlier controller would judge the simulator on a strategy it no longer
//! runs. What is not here: running a study (`control`), replaying
//! validations (`replay`).

use std::path::Path;

use kicklab_model::{Cost, Params, Profile};
use serde::Serialize;

use super::data::PickCheck;
use super::data::{Run, Workload};
use super::targets::check_pick;
use super::{control_study, ControlSpec};
use crate::replay::{find, read_json, recorded_duration};
use crate::{Input, LabError, Silent};

/// One recorded point: the cheapest within the bounds, measured and
/// simulated.
#[derive(Debug, Clone, Serialize)]
pub struct PickReplay {
    /// The recording.
    pub file: String,
    /// Its backend as recorded (`futex`, `kvm tx`).
    pub backend: String,
    /// W_P [ns].
    pub w_p_ns: f64,
    /// The simulator's pick against the measured cheapest.
    #[serde(flatten)]
    pub pick: PickCheck,
}

/// Every recorded control study under `dir`, point by point.
///
/// # Errors
///
/// [`LabError::Input`] naming `replay`'s folder: no recording found, a
/// file that is not a recorded study, a missing or invalid profile; what
/// the simulator refuses.
pub fn replay_control(dir: &Path) -> Result<Vec<PickReplay>, LabError> {
    let bad = |why: String| LabError::input(Input::Replay, why);
    let mut files = Vec::new();
    find(dir, "control-", &mut files).map_err(|e| bad(format!("{}: {e}", dir.display())))?;
    files.sort();
    if files.is_empty() {
        return Err(bad(format!(
            "{}: no control-*.json in it or below (recorded by `{}`)",
            dir.display(),
            kicklab_model::CommandLine::new("control")
                .arg(kicklab_model::Flag::Backend, "B")
                .switch(kicklab_model::Flag::Json, true)
        )));
    }
    let mut out = Vec::new();
    for f in &files {
        out.extend(replay_file(f)?);
    }
    Ok(out)
}

fn replay_file(path: &Path) -> Result<Vec<PickReplay>, LabError> {
    let bad = |why: String| LabError::input(Input::Replay, format!("{}: {why}", path.display()));
    let v = read_json(path).map_err(|e| LabError::input(Input::Replay, e))?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("control-"))
        .unwrap_or_default();
    let profile_path = path.with_file_name(format!("profile-{name}"));
    let profile: Profile = serde_json::from_value(
        read_json(&profile_path).map_err(|e| LabError::input(Input::Replay, e))?,
    )
    .map_err(|e| bad(format!("{}: not a profile: {e}", profile_path.display())))?;
    profile
        .check()
        .map_err(|e| bad(format!("{}: {e}", profile_path.display())))?;
    let backend = v
        .get("backend")
        .and_then(|b| b.as_str())
        .ok_or_else(|| {
            bad(format!(
                "no `backend` (not the output of `{}`)",
                kicklab_model::CommandLine::new("control").switch(kicklab_model::Flag::Json, true)
            ))
        })?
        .to_string();
    if backend.split(' ').next() != Some(profile.backend.as_str()) {
        return Err(bad(format!(
            "a {backend} study beside a {} profile",
            profile.backend
        )));
    }
    let num = |k: &str| v.get(k).and_then(serde_json::Value::as_f64);
    let latency_ns = num("latency_ns")
        .filter(|l| l.is_finite() && *l > 0.0)
        .ok_or_else(|| bad("no `latency_ns`".into()))?;
    let messages = v
        .get("messages")
        .and_then(serde_json::Value::as_u64)
        .filter(|m| *m > 0)
        .ok_or_else(|| bad("no `messages`".into()))?;
    let points = v
        .get("points")
        .and_then(|p| p.as_array())
        .ok_or_else(|| bad("`points` is not a list".into()))?;
    let mut out = Vec::new();
    for (i, p) in points.iter().enumerate() {
        // Only the constant workload replays (the others are random
        // draws); a workload that is none of the study's is refused.
        let workload = p
            .get("workload")
            .and_then(|w| w.as_str())
            .ok_or_else(|| bad(format!("point {i} has no workload")))?;
        match Workload::parse(workload) {
            Ok(Workload::Const) => {}
            Ok(_) => continue,
            Err(e) => return Err(bad(format!("point {i}: workload: {e}"))),
        }
        let field = |k: &str| {
            recorded_duration(i, k, p.get(k).and_then(serde_json::Value::as_f64)).map_err(bad)
        };
        let (w_p, w_c) = (field("w_p_ns")?, field("w_c_ns")?);
        let runs: Vec<Run> = serde_json::from_value(p.get("runs").cloned().unwrap_or_default())
            .map_err(|e| bad(format!("point {i}: runs: {e}")))?;
        let mut params = Params {
            w_c: Cost::Const(w_c),
            ..Params::default()
        };
        profile.apply_costs(&mut params, false);
        let (idle_scale, nap) = profile.sim_costs();
        let spec = ControlSpec {
            params,
            w_p_range: (w_p, w_p),
            points: 1,
            workloads: vec![Workload::Const],
            messages,
            latency_ns,
            seed: 1,
            backend: None,
            idle_scale,
            nap,
        };
        let study = control_study(&spec, &Silent)
            .map_err(|e| bad(format!("point {i}: the simulator refuses it: {e}")))?;
        let simulated = study.points.first().map_or(&[][..], |s| &s.runs[..]);
        let Some(pick) = check_pick(&runs, simulated, latency_ns) else {
            return Err(bad(format!(
                "point {i}: no `poll` run, recorded or simulated"
            )));
        };
        out.push(PickReplay {
            file: path.display().to_string(),
            backend: backend.clone(),
            w_p_ns: w_p,
            pick,
        });
    }
    Ok(out)
}

/// The replayed control picks as text: a line per point, then how many
/// held.
#[must_use]
pub fn lines(picks: &[PickReplay]) -> Vec<String> {
    let mut out = Vec::new();
    out.push(format!(
        "{:<58} {:>8}  {:<30} {:<30} {:>9}  holds",
        "recording", "W_P", "measured cheapest (E)", "simulated cheapest", "its E"
    ));
    for r in picks {
        let p = &r.pick;
        out.push(format!(
            "{:<58} {:>8}  {:<30} {:<30} {:>9}  {}",
            r.file,
            kicklab_model::fmt_ns(r.w_p_ns),
            format!(
                "{} ({})",
                short(&p.measured),
                kicklab_model::fmt_ns(p.measured_e_ns)
            ),
            short(&p.simulated),
            p.simulated_measured_e_ns
                .map_or("-".into(), kicklab_model::fmt_ns),
            match (p.holds, p.simulated_kept_bounds) {
                (true, _) => "yes",
                (false, false) => "no (out of bounds as measured)",
                (false, true) => "no (dearer)",
            }
        ));
    }
    let held = picks.iter().filter(|p| p.pick.holds).count();
    out.push(format!(
        "{held} of {} points: the simulator's pick, as measured, within the bounds and within {:.0}% of the measured cheapest's E",
        picks.len(),
        super::targets::E_SPREAD * 100.0
    ));
    out
}

/// A strategy's family with its first parameter, short enough for a column.
fn short(s: &str) -> String {
    s.split(',').next().unwrap_or(s).to_string()
}
