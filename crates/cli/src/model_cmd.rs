//! `kicklab model`: the closed forms.

use clap::Args;
use kicklab_model::WaitMode;

use crate::args::{mode, ParamArgs};

/// Arguments of `kicklab model`.
#[derive(Debug, Args)]
pub struct ModelArgs {
    #[command(flatten)]
    params: ParamArgs,
    /// notify (sleep and be woken) or poll (spin: regime GP).
    #[arg(long = "strategy", visible_alias = "mode", value_name = "STRATEGY", default_value = "notify", value_parser = mode, allow_hyphen_values = true)]
    mode: WaitMode,
    /// Print one JSON object: {"regime", "T_ns", "E_ns", "m", ...}.
    #[arg(long)]
    json: bool,
}

impl ModelArgs {
    /// The flags given (`given(id)`) that the model would not use.
    pub fn unused(&self, given: &dyn Fn(&str) -> bool) -> Vec<String> {
        crate::args::unused_when_polling([self.mode; 2], given)
    }
}

pub fn run(a: &ModelArgs) -> anyhow::Result<()> {
    let profile = a.params.load_profile()?;
    let params =
        a.params
            .params_for_profile(profile.as_ref(), false, a.mode == WaitMode::Notify)?;
    let out = kicklab_lab::model_command::run(&params, a.mode, profile.as_ref())?;
    for note in &out.notes {
        errln!("note: {note}");
    }
    if a.json {
        return crate::show::print_json(&out.json);
    }
    for line in &out.text {
        outln!("{line}");
    }
    Ok(())
}
