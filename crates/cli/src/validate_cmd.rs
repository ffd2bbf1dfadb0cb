//! `kicklab validate`: parses, calls `kicklab_lab::validate`, prints.

use std::path::PathBuf;

use clap::Args;
use kicklab_lab::validate::{observed, section, summarize, summary_text, table, validate};
use kicklab_model::fmt_ns;
use kicklab_report::Page;
use kicklab_sim::Vary;

use crate::args::{vary, BackendArgs, ParamArgs};

/// Arguments of `kicklab validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    #[command(flatten)]
    params: ParamArgs,
    #[command(flatten)]
    be: BackendArgs,
    /// The W_P sweep.
    #[arg(long, default_value = kicklab_lab::validate::FIG4_SWEEP, value_parser = vary, allow_hyphen_values = true)]
    vary: Vary,
    /// Messages per real run.
    #[arg(long, default_value_t = 60_000, allow_hyphen_values = true)]
    messages: u64,
    /// Output directory: index.html, the charts (validate-<backend>-T.svg,
    /// validate-<backend>-E.svg) and validate.csv.
    #[arg(long, default_value = "validate-out", allow_hyphen_values = true)]
    out: PathBuf,
    /// Seed.
    #[arg(long, default_value_t = 1, allow_hyphen_values = true)]
    seed: u64,
}

pub fn run(a: &ValidateArgs) -> anyhow::Result<()> {
    let params = a.params.params()?;
    kicklab_lab::validate::check(&params, a.be.get(), &a.vary, a.messages)?;
    crate::check_out_dir(&a.out, "--out")?;
    let profile = kicklab_lab::real::profile_for(
        a.be.get(),
        a.params.load_profile()?,
        &crate::Bars::default(),
    )?;
    for w in kicklab_lab::disturbance::check_profile(&profile) {
        eprintln!("warning: {w}");
    }
    let points = validate(
        &params,
        &profile,
        a.be.get(),
        &a.vary,
        a.messages,
        a.seed,
        &crate::Bars::default(),
    )?;
    let be = a.be.get().name();
    let profile_flag = a
        .params
        .profile
        .as_ref()
        .map(|p| format!(" --profile {}", p.display()))
        .unwrap_or_default();
    let cmd = format!(
        "kicklab validate --backend {be}{}{profile_flag} --vary {} --messages {}",
        a.be.flags(),
        a.vary,
        a.messages
    );
    let page = Page {
        title: format!("kicklab validate ({be})"),
        intro_html: String::new(),
        sections: vec![section(&points, &profile, be, &cmd)?],
    };
    page.write(&a.out)?;
    kicklab_report::write_atomic(&a.out.join("validate.csv"), table(&points).to_csv())?;
    println!(
        "{:>8}  {:<8} {:<6} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "W_P", "regime", "slept", "T model", "T sim", "T real", "T poll", "poll real"
    );
    for p in &points {
        println!(
            "{:>8}  {:<8} {:<6} {:>10} {:>10} {:>10} {:>10} {:>10}",
            fmt_ns(p.x),
            p.regime.name(),
            observed(&p.real),
            fmt_ns(p.model.0),
            fmt_ns(p.sim.0),
            fmt_ns(p.real.rates.t_ns),
            fmt_ns(p.model_poll.0),
            fmt_ns(p.real_poll.rates.t_ns)
        );
    }
    println!("{}", summary_text(&summarize(&points)));
    eprintln!("wrote {}", a.out.join("index.html").display());
    Ok(())
}
