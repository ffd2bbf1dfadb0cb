//! `kicklab calibrate`: measure N and S of a notification backend.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use kicklab_lab::calibrate_command::CalibrateRequest;
use kicklab_testbed::calibrate::Gaps;

use crate::args::BackendArgs;

/// Arguments of `kicklab calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    #[command(flatten)]
    be: BackendArgs,
    /// Notifications per direction per round.
    #[arg(long, value_parser = kicklab_model::typed::whole::<usize>, default_value_t = 400, allow_hyphen_values = true)]
    samples: usize,
    /// How long the woken party idles before each notification (as a
    /// sleeping party does in a run; a longer idle lets its CPU halt).
    #[arg(long, default_value = "50us", value_parser = kicklab_model::typed::duration, allow_hyphen_values = true)]
    gap: Duration,
    /// Most rounds before giving up on stable medians (within 5%).
    #[arg(long, value_parser = kicklab_model::typed::whole::<usize>, default_value_t = 6, allow_hyphen_values = true)]
    rounds: usize,
    /// The idle gaps of the idle curve (N and S after each; one round of
    /// --samples each), comma-separated, or `none`.
    #[arg(long, default_value = "5us,10us,20us,50us,100us,200us,500us", value_parser = <Gaps as std::str::FromStr>::from_str, allow_hyphen_values = true)]
    gaps: Gaps,
    /// Runs of a polling pair with no work, for the ring's cost per
    /// message (added to W_P and W_C by the model); 0: not measured.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u32>, default_value_t = 5, allow_hyphen_values = true)]
    overhead_runs: u32,
    /// Write the profile (JSON) here, for --profile.
    #[arg(long, allow_hyphen_values = true)]
    save: Option<PathBuf>,
    /// Print one JSON object: {"backend", "NP_ns", "NC_ns", "SP_ns", "SC_ns", ...}.
    #[arg(long)]
    json: bool,
}

/// The gaps of `--gaps`.
pub fn run(a: &CalibrateArgs) -> anyhow::Result<()> {
    let request = CalibrateRequest {
        backend: a.be.input(),
        samples: a.samples,
        gap: a.gap,
        rounds: a.rounds,
        gaps: a.gaps.0.clone(),
        overhead_runs: a.overhead_runs,
    };
    request.calibration()?;
    if let Some(path) = &a.save {
        kicklab_term::files::check_out_file(path, kicklab_model::Flag::Save)?;
    }
    let out = request.run(&kicklab_term::progress::Bars::default())?;
    if let Some(path) = &a.save {
        let json = serde_json::to_string_pretty(&out.profile)?;
        kicklab_term::files::save(path, kicklab_model::Flag::Save, json.as_bytes(), "saved")?;
    }
    kicklab_term::show::result(a.json, &out.json, &out.text)
}
