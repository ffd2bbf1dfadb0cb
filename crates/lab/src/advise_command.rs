//! `kicklab advise` as one library call: an [`AdviseRequest`] (the pair,
//! the workload's bound, the mechanisms, a backend to check the advice
//! on) in; the advice, its real checks, its JSON object and its text out
//! ([`AdviseOutput`]). What does not live here: the search
//! ([`crate::advise`]), the checks ([`crate::advise_check`]), the words
//! ([`crate::advise_text`]).

use kicklab_model::{CommandLine, Flag};
use kicklab_testbed::Backend;

use crate::advise::{advise, ring_past_search, Advice, AdviseSpec};
use crate::advise_check::{check, CheckSpec, SettingCheck};
use crate::knobs::Mechanism;
use crate::pair_input::PairInput;
use crate::{Input, LabError, Progress};

/// What `advise` was given.
#[derive(Clone, Debug)]
pub struct AdviseRequest {
    /// The pair as given.
    pub pair: PairInput,
    /// The p99 latency bound the advice keeps [ns].
    pub latency_ns: f64,
    /// Messages per simulated candidate.
    pub messages: u64,
    /// The simulator's seed.
    pub seed: u64,
    /// Every candidate, not only the likely ones.
    pub exhaustive: bool,
    /// The mechanisms whose knobs to set.
    pub mechanisms: Vec<Mechanism>,
    /// A backend to run the advice on, beside its prediction.
    pub check: Option<Backend>,
}

/// The advice and all that is said of it.
#[derive(Debug)]
pub struct AdviseOutput {
    /// The advice.
    pub advice: Advice,
    /// Its settings run for real, where asked.
    pub checks: Option<Vec<SettingCheck>>,
    /// The JSON object of the contract (docs/cli.md, `advise --json`).
    pub json: serde_json::Value,
    /// The text output, line by line.
    pub text: Vec<String>,
}

impl AdviseRequest {
    /// Searches the advice (with the profile's costs, spread, idle curve
    /// and naps where one is named) and checks it for real where asked.
    ///
    /// # Errors
    ///
    /// The input at fault (a profile whose ring cost takes W past the
    /// search, a check without a profile of its backend); a failed run.
    pub fn run(&self, progress: &dyn Progress) -> Result<AdviseOutput, LabError> {
        let profile = self.pair.load_profile()?;
        let params = self.pair.params_for(profile.as_ref(), true, false)?;
        if let Some(p) = &profile {
            if let Some(why) = ring_past_search(&self.pair.params_from(Some(p))?, &params) {
                return Err(LabError::input(Input::Profile, why));
            }
        }
        let (idle_scale, nap) = profile.as_ref().map_or(
            ([None, None], [None, None]),
            kicklab_model::Profile::sim_costs,
        );
        let spec = AdviseSpec {
            params,
            idle_scale,
            nap,
            latency_ns: self.latency_ns,
            messages: self.messages,
            seed: self.seed,
            exhaustive: self.exhaustive,
            mechanisms: self.mechanisms.clone(),
        };
        let checked = match (self.check, &profile) {
            (None, _) => None,
            (Some(backend), Some(p)) if p.backend == backend.name() => {
                Some((as_calibrated(backend, p)?, p))
            }
            (Some(backend), _) => {
                return Err(LabError::input(
                    Input::Check,
                    format!(
                        "needs {} of a calibration on {} ({}): the predictions must use the costs the runs meet",
                        Flag::Profile,
                        backend.name(),
                        CommandLine::new("calibrate")
                            .arg(Flag::Backend, backend.name())
                            .arg(Flag::Save, "FILE")
                    ),
                ))
            }
        };
        let advice = advise(&spec, progress)?;
        let checks = match checked {
            Some((backend, p)) => Some(check(
                &advice,
                &CheckSpec {
                    params: self.pair.params_from(Some(p))?,
                    backend,
                    latency_ns: self.latency_ns,
                    messages: self.messages,
                    seed: self.seed,
                },
                progress,
            )?),
            None => None,
        };
        let mut json = serde_json::to_value(&advice)?;
        if let Some(c) = &checks {
            json["checked"] = serde_json::to_value(c)?;
        }
        let text = crate::advise_text::lines(&advice, checks.as_deref());
        Ok(AdviseOutput {
            advice,
            checks,
            json,
            text,
        })
    }
}

/// `backend` as the profile was calibrated on it: a KVM guest on the
/// profile's side and run as it ran (`--guest`), so that the checked runs
/// meet the costs the predictions use.
///
/// # Errors
///
/// A guest mode in the profile that kicklab does not know.
fn as_calibrated(backend: Backend, p: &kicklab_model::Profile) -> Result<Backend, LabError> {
    let Backend::Kvm(o) = backend else {
        return Ok(backend);
    };
    let guest = match &p.guest {
        Some(g) => g
            .parse()
            .map_err(|e: String| LabError::input(Input::Profile, e))?,
        None => o.guest,
    };
    Ok(Backend::Kvm(kicklab_testbed::kvm::KvmOptions {
        direction: p.direction.unwrap_or(o.direction),
        guest,
        ..o
    }))
}
