//! `kicklab sweep`: one parameter varied, model and simulator at every point.

use std::path::PathBuf;

use clap::Args;
use kicklab_model::{fmt_ns, WaitMode};
use kicklab_report::{sweep_charts, sweep_csv, Page, Section};
use kicklab_sim::{sweep, SweepPoint, Vary};

use crate::args::{mode, vary, ParamArgs};
use crate::errors::Usage;

/// Arguments of `kicklab sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    #[command(flatten)]
    params: ParamArgs,
    /// What to vary: NAME=FROM..TO:POINTS, NAME one of len, kp, kc, wp, wc,
    /// np, nc, sp, sc, vp, vc (e.g. wp=0.1us..3us:100, kc=1..64:64). A distribution
    /// given for the swept cost keeps its shape and takes each point's
    /// value as its mean (--vary wp=0.1us..3us:30 --wp exp:1us).
    #[arg(long, value_parser = vary, allow_hyphen_values = true)]
    pub(crate) vary: Vary,
    /// How both parties wait (polling is always run alongside).
    #[arg(long = "strategy", visible_alias = "mode", value_name = "STRATEGY", default_value = "notify", value_parser = mode, allow_hyphen_values = true)]
    mode: WaitMode,
    /// Messages simulated per point (after the warm-up).
    #[arg(long, value_parser = crate::args::whole::<u64>, default_value_t = 50_000, allow_hyphen_values = true)]
    messages: u64,
    /// Seed of the random cost streams.
    #[arg(long, value_parser = crate::args::whole::<u64>, default_value_t = 1, allow_hyphen_values = true)]
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
pub fn run_sweep(
    params: &kicklab_model::Params,
    vary: &Vary,
    mode: WaitMode,
    messages: u64,
    seed: u64,
    what: &str,
) -> anyhow::Result<Vec<SweepPoint>> {
    let bar = crate::show::progress(u64::from(vary.points), what);
    let points = sweep(params, vary, mode, messages, seed, &|| bar.inc(1))?;
    bar.finish_and_clear();
    Ok(points)
}

pub fn run(a: &SweepArgs) -> anyhow::Result<()> {
    let params = a.params.params()?;
    let dir = crate::files::out_dir(&a.out, "--out", "kicklab sweep", a.force)?;
    if a.messages == 0 {
        return Err(Usage("--messages: need at least 1 message per point".into()).into());
    }
    let points = run_sweep(&params, &a.vary, a.mode, a.messages, a.seed, "sweep")?;
    let (t, e) = sweep_charts(&points, &a.vary, &format!("sweep {}", a.vary));
    let page = Page {
        title: format!("kicklab sweep {}", a.vary),
        intro_html: format!(
            "<p>Model and simulator ({} messages per point, seed {}), mode {}.</p>",
            a.messages, a.seed, a.mode
        ),
        sections: vec![Section {
            id: "sweep".into(),
            heading: a.vary.to_string(),
            html: "<p>Data: <a href=\"sweep.csv\">sweep.csv</a>.</p>".into(),
            figures: vec![
                (
                    "T".into(),
                    t.to_svg(kicklab_report::FIG_W, kicklab_report::FIG_H)?,
                    "Time per message".into(),
                ),
                (
                    "E".into(),
                    e.to_svg(kicklab_report::FIG_W, kicklab_report::FIG_H)?,
                    "CPU cost per message".into(),
                ),
            ],
            layout: kicklab_report::Layout::Open,
        }],
    };
    // Everything computed: only now touch the file system.
    page.write(dir.path())?;
    let csv = dir.path().join("sweep.csv");
    kicklab_report::write_atomic(&csv, sweep_csv(&points, &a.vary))?;

    let count = a.vary.param.is_count();
    let show_x = |x: f64| if count { format!("{x}") } else { fmt_ns(x) };
    outln!(
        "{:>10}  {:<8} {:>12} {:>12} {:>12} {:>12} {:>12}",
        a.vary.param.name(),
        "regime",
        "T model",
        "T sim",
        "E model",
        "E sim",
        "T poll"
    );
    for p in &points {
        let x = show_x(p.x);
        let (r, tm, em) = p.model.map_or(("-".into(), "-".into(), "-".into()), |m| {
            (
                m.regime.name().to_string(),
                fmt_ns(m.rates.t_ns),
                fmt_ns(m.rates.e_ns),
            )
        });
        outln!(
            "{x:>10}  {r:<8} {tm:>12} {:>12} {em:>12} {:>12} {:>12}",
            fmt_ns(p.sim.rates.t_ns),
            fmt_ns(p.sim.rates.e_ns),
            fmt_ns(p.model_poll.rates.t_ns)
        );
    }
    // What `sim` warns of, once for the sweep: windows too short for
    // whole rounds, or a transient below the slower party.
    let warned: Vec<String> = points
        .iter()
        .filter_map(|p| {
            let w = p
                .sim
                .window_warnings(&p.params, p.model.and_then(|m| m.round_messages));
            (!w.is_empty()).then(|| show_x(p.x))
        })
        .collect();
    if !warned.is_empty() {
        errln!(
            "warning: at {} of {} points ({}) the simulator measured a transient or a partial \
             round, not the steady state (as `kicklab sim` would warn there): raise --messages",
            warned.len(),
            points.len(),
            warned.join(", ")
        );
    }
    errln!(
        "wrote {}, T.svg, E.svg, index.html in {}",
        a.out.join("sweep.csv").display(),
        a.out.display()
    );
    crate::files::commit(dir)
}
