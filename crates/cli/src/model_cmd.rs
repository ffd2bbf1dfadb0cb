//! `kicklab model`: the closed forms.

use clap::Args;
use kicklab_lab::unused::Unused;
use kicklab_model::{Flag, WaitMode};

use crate::args::ParamArgs;

/// Arguments of `kicklab model`.
#[derive(Debug, Args)]
pub struct ModelArgs {
    #[command(flatten)]
    params: ParamArgs,
    /// notify (sleep and be woken) or poll (spin: regime GP).
    #[arg(long, visible_alias = "mode", default_value = "notify", value_parser = WaitMode::parse, allow_hyphen_values = true)]
    strategy: WaitMode,
    /// Print one JSON object: {"regime", "T_ns", "E_ns", "m", ...}.
    #[arg(long)]
    json: bool,
}

impl ModelArgs {
    /// The flags given that the model would not use.
    pub fn unused(&self, given: &dyn Fn(Flag) -> bool) -> Vec<Unused> {
        kicklab_lab::unused::when_polling([self.strategy; 2], given)
    }
}

pub fn run(a: &ModelArgs) -> anyhow::Result<()> {
    let profile = a.params.input().load_profile()?;
    let params =
        a.params
            .input()
            .params_for(profile.as_ref(), false, a.strategy == WaitMode::Notify)?;
    let out = kicklab_lab::model_command::run(&params, a.strategy, profile.as_ref())?;
    for note in &out.notes {
        errln!("note: {note}");
    }
    kicklab_term::show::result(a.json, &out.json, &out.text)
}
