//! Recorded validations forecast again: [`replay`] reads a folder of
//! `validate --json` outputs with the profiles they were run with
//! (`validate-<name>.json` beside `profile-<name>.json`, the layout of
//! `data/machines/<machine>/<set>/`), forecasts every recorded point from
//! its profile alone ([`crate::forecast`]) and judges the forecast against
//! the recorded repetitions. Nothing runs. What is not here: the forecast
//! itself, and running a validation (`validate`).
//!
//! The recorded format is what `validate --json` prints: `backend`,
//! `direction`, `vary` (`wp=FROM..TO:POINTS`), optionally `params` (the
//! pair's other parameters as `model --json` echoes them; recordings
//! without it ran the defaults, the paper's Fig. 4 set-up), and `points`,
//! each with `wp_ns` and the measured `T_real_min_ns`, `T_real_ns`,
//! `T_real_max_ns` (with 3 repetitions, all three of them).

use std::path::{Path, PathBuf};

use kicklab_model::{Cost, Params, Profile};
use serde::Serialize;

use crate::forecast::{forecast, Forecast, Judged, Verdict};
use crate::{Input, LabError};

/// One recorded point forecast again.
#[derive(Debug, Clone, Serialize)]
pub struct ReplayPoint {
    /// W_P [ns].
    pub wp_ns: f64,
    /// The forecast (central value, bands, operating points).
    #[serde(flatten)]
    pub forecast: Forecast,
    /// The recorded repetitions' T [ns] (min, median, max).
    #[serde(rename = "T_real_ns")]
    pub t_real_ns: Vec<f64>,
    /// The recorded repetitions' E [ns] (median).
    #[serde(rename = "E_real_ns")]
    pub e_real_ns: Option<f64>,
    /// How the forecast did here.
    pub judged: Judged,
}

/// One recorded backend forecast again.
#[derive(Debug, Clone, Serialize)]
pub struct ReplaySet {
    /// The recording's file.
    pub file: String,
    /// The backend as recorded.
    pub backend: String,
    /// Its direction (kvm), as recorded.
    pub direction: Option<String>,
    /// The points, in the recorded order.
    pub points: Vec<ReplayPoint>,
    /// Coverage, sharpness, the central value's error, knife-edges.
    pub summary: Verdict,
}

/// Every `validate-*.json` under `dir` (it and its subfolders, sorted by
/// path), each forecast again from the `profile-*.json` beside it.
///
/// # Errors
///
/// [`LabError::Input`] naming `replay`'s folder: no recording found, a file
/// that is not a recorded validation, a missing or invalid profile.
pub fn replay(dir: &Path) -> Result<Vec<ReplaySet>, LabError> {
    let bad = |why: String| LabError::input(Input::Replay, why);
    let mut files = Vec::new();
    find(dir, "validate-", &mut files).map_err(|e| bad(format!("{}: {e}", dir.display())))?;
    files.sort();
    if files.is_empty() {
        return Err(bad(format!(
            "{}: no validate-*.json in it or below (recorded by `{}`)",
            dir.display(),
            kicklab_model::CommandLine::new("validate").switch(kicklab_model::Flag::Json, true)
        )));
    }
    files.iter().map(|f| replay_file(f)).collect()
}

/// Collects `<prefix>*.json` files, at most 4 folders down, each once:
/// a folder or file reached again through a link (a loop, or two links
/// to one recording) is skipped.
pub(crate) fn find(dir: &Path, prefix: &str, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut seen = std::collections::HashSet::new();
    walk(dir, prefix, out, 0, &mut seen)
}

fn walk(
    dir: &Path,
    prefix: &str,
    out: &mut Vec<PathBuf>,
    depth: u32,
    seen: &mut std::collections::HashSet<PathBuf>,
) -> std::io::Result<()> {
    if !seen.insert(std::fs::canonicalize(dir)?) {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    // Files and folders before links to them: a link is what is skipped.
    entries.sort_by_key(|p| (p.is_symlink(), p.clone()));
    for p in entries {
        if p.is_dir() {
            if depth < 4 {
                walk(&p, prefix, out, depth + 1, seen)?;
            }
        } else if p
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(prefix) && n.ends_with(".json"))
            && std::fs::canonicalize(&p).map_or(true, |c| seen.insert(c))
        {
            out.push(p);
        }
    }
    Ok(())
}

/// The most a recording's file may hold (a validation of 200 points is
/// about 400 KB).
const MAX_FILE: u64 = 16 << 20;

/// A duration field `k` of recorded point `i` [ns]: present, finite, not
/// negative and at most an hour; else why not (the point and field named).
pub(crate) fn recorded_duration(i: usize, k: &str, x: Option<f64>) -> Result<f64, String> {
    match x {
        None => Err(format!("point {i} has no {k}")),
        Some(x) if !(x.is_finite() && x >= 0.0) => {
            Err(format!("point {i}: {k} is {x}, not a duration"))
        }
        Some(x) if x > kicklab_model::MAX_DURATION_NS => Err(format!(
            "point {i}: {k} {x:.3e} is longer than the longest duration kicklab handles (an hour)"
        )),
        Some(x) => Ok(x),
    }
}

/// A recording's JSON file: a regular file (a FIFO would block for ever
/// in the open, a device never end), read up to [`MAX_FILE`].
pub(crate) fn read_json(path: &Path) -> Result<serde_json::Value, String> {
    use std::io::Read as _;
    let cannot = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let meta = std::fs::metadata(path).map_err(|e| cannot(&e))?;
    if !meta.is_file() {
        return Err(cannot(&"not a regular file"));
    }
    let len = meta.len();
    if len > MAX_FILE {
        return Err(format!(
            "{}: {len} bytes, more than a recording holds",
            path.display()
        ));
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .map_err(|e| cannot(&e))?
        .take(MAX_FILE + 1)
        .read_to_string(&mut text)
        .map_err(|e| cannot(&e))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))
}

fn replay_file(path: &Path) -> Result<ReplaySet, LabError> {
    let bad = |why: String| LabError::input(Input::Replay, why);
    let v = read_json(path).map_err(bad)?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("validate-"))
        .unwrap_or_default();
    let profile_path = path.with_file_name(format!("profile-{name}"));
    let profile: Profile = serde_json::from_value(read_json(&profile_path).map_err(bad)?)
        .map_err(|e| bad(format!("{}: not a profile: {e}", profile_path.display())))?;
    profile
        .check()
        .map_err(|e| bad(format!("{}: {e}", profile_path.display())))?;
    let field = |k: &str| {
        v.get(k).ok_or_else(|| {
            bad(format!(
                "{}: no `{k}` (not the output of `{}`)",
                path.display(),
                kicklab_model::CommandLine::new("validate").switch(kicklab_model::Flag::Json, true)
            ))
        })
    };
    let backend = field("backend")?
        .as_str()
        .ok_or_else(|| bad(format!("{}: `backend` is not text", path.display())))?
        .to_string();
    if backend != profile.backend {
        return Err(bad(format!(
            "{}: a {backend} validation beside a {} profile",
            path.display(),
            profile.backend
        )));
    }
    let direction = v
        .get("direction")
        .and_then(|d| d.as_str())
        .map(ToString::to_string);
    let vary = field("vary")?.as_str().unwrap_or_default();
    if !vary.starts_with("wp=") {
        return Err(bad(format!(
            "{}: `vary` is {vary:?}; a validation sweeps wp",
            path.display()
        )));
    }
    let base = recorded_params(&v).map_err(|e| bad(format!("{}: {e}", path.display())))?;
    let points = field("points")?
        .as_array()
        .ok_or_else(|| bad(format!("{}: `points` is not a list", path.display())))?;
    if points.is_empty() {
        return Err(bad(format!(
            "{}: `points` is empty: nothing to judge",
            path.display()
        )));
    }
    let mut out = Vec::new();
    for (i, p) in points.iter().enumerate() {
        let num = |k: &str| p.get(k).and_then(serde_json::Value::as_f64);
        let wp = recorded_duration(i, "wp_ns", num("wp_ns"))
            .map_err(|why| bad(format!("{}: {why}", path.display())))?;
        let mut t_real = Vec::new();
        for k in ["T_real_min_ns", "T_real_ns", "T_real_max_ns"] {
            let Some(t) = p.get(k).filter(|t| !t.is_null()) else {
                continue;
            };
            match t.as_f64() {
                Some(t) if t > 0.0 && t <= kicklab_model::MAX_DURATION_NS => t_real.push(t),
                _ => {
                    return Err(bad(format!(
                    "{}: point {i}: {k} is {}, not a time per message (above 0, at most an hour)",
                    path.display(),
                    shown(t)
                )))
                }
            }
        }
        if t_real.is_empty() {
            return Err(bad(format!(
                "{}: point {i} has no measured T",
                path.display()
            )));
        }
        t_real.sort_by(f64::total_cmp);
        let pair = Params {
            w_p: Cost::Const(wp),
            ..base
        };
        // The recording's pair, not flags given here: an error names the
        // file and the point.
        let f = forecast(&pair, &profile, 1).map_err(|e| {
            bad(format!(
                "{}: point {i} (wp_ns {}) cannot be forecast: {}",
                path.display(),
                kicklab_model::fmt_ns(wp),
                e
            ))
        })?;
        let judged = Judged::of(&f, &t_real);
        out.push(ReplayPoint {
            wp_ns: wp,
            forecast: f,
            t_real_ns: t_real,
            e_real_ns: num("E_real_ns"),
            judged,
        });
    }
    let pairs: Vec<(Forecast, Judged)> =
        out.iter().map(|p| (p.forecast.clone(), p.judged)).collect();
    Ok(ReplaySet {
        file: path.display().to_string(),
        backend,
        direction,
        summary: Verdict::of(&pairs),
        points: out,
    })
}

/// A recorded value as an error shows it: at most 40 characters.
fn shown(v: &serde_json::Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        format!("{}...", s.chars().take(37).collect::<String>())
    } else {
        s
    }
}

/// The recorded pair's parameters: `params` where the recording has it
/// (each a value `--len`, `--wc`, ... take), else the defaults.
fn recorded_params(v: &serde_json::Value) -> Result<Params, String> {
    let mut p = Params::default();
    let given = match v.get("params") {
        None | Some(serde_json::Value::Null) => return Ok(p),
        Some(serde_json::Value::Object(g)) => g,
        Some(other) => {
            return Err(format!(
                "`params` is {}, not an object of the pair's parameters",
                shown(other)
            ))
        }
    };
    for (k, val) in given {
        // `model --json` and `validate --json` echo `w_p`; the flag is `wp`.
        // A name this kicklab does not know is a later one's: left out.
        let Ok(param) = k.replace('_', "").parse::<kicklab_model::Param>() else {
            continue;
        };
        let text = match val {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Number(n) => n.to_string(),
            other => return Err(format!("params.{k} is {}: not a value", shown(other))),
        };
        if let Some(n) = param.count_mut(&mut p) {
            *n = text
                .parse()
                .map_err(|_| format!("params.{k} = {text}: not a whole number"))?;
        } else if let Some(c) = param.cost_mut(&mut p) {
            *c = Cost::parse(&text).map_err(|e| format!("params.{k} = {text}: {e}"))?;
        }
    }
    p.validate().map_err(|e| e.to_string())?;
    Ok(p)
}

/// One replayed set as text: a line per point (forecast, band, measured
/// range, coverage), then its verdict.
#[must_use]
pub fn lines(s: &ReplaySet) -> Vec<String> {
    let mut out = Vec::new();
    out.push(format!(
        "{} ({}{})",
        s.file,
        s.backend,
        s.direction
            .as_ref()
            .map(|d| format!(" {d}"))
            .unwrap_or_default()
    ));
    out.push(format!(
        "{:>8}  {:<44} {:>28}  {:>7}",
        "W_P", "forecast T [band]", "measured T (min-max)", "covered"
    ));
    for p in &s.points {
        let t = &p.t_real_ns;
        out.push(format!(
            "{:>8}  {:<44} {:>28}  {:>3} of {}",
            kicklab_model::fmt_ns(p.wp_ns),
            p.forecast.describe(),
            format!(
                "{} ({}-{})",
                kicklab_model::fmt_ns(t[t.len() / 2]),
                kicklab_model::fmt_ns(t[0]),
                kicklab_model::fmt_ns(t[t.len() - 1])
            ),
            p.judged.covered,
            p.judged.measured
        ));
    }
    let v = &s.summary;
    out.push(format!(
        "coverage {:.0}%, sharpness {} (band width over T {:.1}% at the median of all {} points, {} of them knife-edges), central T median error {:.1}%, knife-edges: {} points spread over 2x, {} of them not named",
        v.coverage * 100.0,
        v.sharpness
            .map_or("-".into(), |x| format!("{:.1}%", x * 100.0)),
        v.width * 100.0,
        v.points,
        v.knife_edges,
        v.median_err_t * 100.0,
        v.wide_points,
        v.knife_edges_missed
    ));
    out.push(String::new());
    out
}
