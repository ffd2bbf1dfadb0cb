//! Advice held to real runs ([`check`]): each setting advise gives (its
//! pick, and each mechanism's best) run for real with kicklab's own
//! implementation of that mechanism's rule, on a real backend, beside the
//! simulator's T and E for it. What advise says is in `advise`; how a run
//! is made is in `real`.

use kicklab_model::{Params, WaitMode};
use kicklab_testbed::Backend;
use serde::Serialize;

use crate::advise::{Advice, Candidate};
use crate::real::RunSpec;
use crate::{LabError, Progress};

/// One setting as advise predicted it and as it ran.
#[derive(Debug, Clone, Serialize)]
pub struct SettingCheck {
    /// Where the setting comes from: `pick`, or the mechanism's name.
    pub from: String,
    /// The strategy (`--strategy` form).
    pub strategy: String,
    /// The simulator's T [ns].
    pub predicted_t_ns: f64,
    /// The simulator's E [ns].
    pub predicted_e_ns: f64,
    /// The real run's T [ns] (null where it could not run).
    pub measured_t_ns: Option<f64>,
    /// The real run's E: both parties' CPU per message [ns].
    pub measured_e_ns: Option<f64>,
    /// (predicted - measured) / measured, T.
    pub t_error: Option<f64>,
    /// The same for E.
    pub e_error: Option<f64>,
    /// Why the backend cannot run it (a guest's side that cannot hold its
    /// kicks, say); null where it ran.
    pub not_run: Option<String>,
}

/// Runs advice's settings for real.
#[derive(Debug, Clone)]
pub struct CheckSpec {
    /// The pair as the run takes it: L, k and W (the machine supplies N
    /// and S; `adaptive` reads the profile's means as estimates).
    pub params: Params,
    /// Where it runs.
    pub backend: Backend,
    /// The latency bound of `adaptive` [ns].
    pub latency_ns: f64,
    /// Messages per run.
    pub messages: u64,
    /// Seed of random work.
    pub seed: u64,
}

/// Runs the pick and each mechanism's best setting (each strategy once)
/// and sets them beside their predictions.
///
/// # Errors
///
/// A run that fails (a setting the backend cannot run is reported, not
/// failed).
pub fn check(
    advice: &Advice,
    spec: &CheckSpec,
    progress: &dyn Progress,
) -> Result<Vec<SettingCheck>, LabError> {
    let mut settings: Vec<(String, &Candidate)> = vec![("pick".into(), &advice.predicted)];
    for k in &advice.knobs {
        if let Some((from, _)) = settings
            .iter_mut()
            .find(|(_, c)| c.strategy == k.best.predicted.strategy)
        {
            from.push_str(", ");
            from.push_str(k.mechanism);
        } else {
            settings.push((k.mechanism.to_string(), &k.best.predicted));
        }
    }
    progress.start("real runs of the advised settings", settings.len() as u64);
    let mut out = Vec::new();
    for (from, c) in settings {
        let run = RunSpec {
            latency_bound_ns: Some(spec.latency_ns),
            ..RunSpec::new(
                spec.params,
                spec.backend,
                with_latency(c.mode, spec.latency_ns),
                spec.messages,
                spec.seed,
            )
        };
        let mut check = SettingCheck {
            from,
            strategy: c.strategy.clone(),
            predicted_t_ns: c.t_ns,
            predicted_e_ns: c.e_ns,
            measured_t_ns: None,
            measured_e_ns: None,
            t_error: None,
            e_error: None,
            not_run: None,
        };
        match crate::real::check(&run) {
            Err(why) => check.not_run = Some(why.to_string()),
            Ok(()) => {
                let rates = crate::real::run(&run)?.rates;
                check.measured_t_ns = Some(rates.t_ns);
                check.measured_e_ns = Some(rates.e_ns);
                check.t_error = Some(c.t_ns / rates.t_ns - 1.0);
                check.e_error = Some(c.e_ns / rates.e_ns - 1.0);
            }
        }
        progress.step();
        out.push(check);
    }
    progress.finish();
    Ok(out)
}

fn with_latency(mode: WaitMode, latency_ns: f64) -> WaitMode {
    mode.with_latency(Some(latency_ns))
}
