//! `kicklab run` as one library call: a [`RunRequest`] (the pair, where it
//! runs, how each party waits) in; the run, its prediction with this
//! machine's costs, its disturbance warnings, its JSON object and its text
//! out ([`RunOutput`]). What does not live here: running the pair and
//! predicting it ([`crate::real`]), the words of its output
//! ([`crate::run_output`]), the latency bound's verdict
//! ([`crate::disturbance::latency_bound_missed`]).

use kicklab_model::{Profile, WaitMode};
use kicklab_testbed::kvm::guest::GuestMode;
use kicklab_testbed::PairResult;

use crate::backend_input::BackendInput;
use crate::disturbance::Warning;
use crate::pair_input::PairInput;
use crate::real::{Expected, RunSpec};
use crate::{Input, LabError, Progress};

/// What `run` was given.
#[derive(Clone, Debug)]
pub struct RunRequest {
    /// The pair as given.
    pub pair: PairInput,
    /// Where it runs.
    pub backend: BackendInput,
    /// How both parties wait.
    pub strategy: WaitMode,
    /// How P waits, where it differs.
    pub strategy_p: Option<WaitMode>,
    /// How C waits, where it differs.
    pub strategy_c: Option<WaitMode>,
    /// The p99 bound `adaptive` keeps where its mode gives none [ns].
    pub latency_ns: Option<f64>,
    /// Messages measured.
    pub messages: u64,
    /// The seed of random work.
    pub seed: u64,
    /// Send combining: messages per publish.
    pub batch: u32,
    /// When a partial batch goes out.
    pub flush: kicklab_sim::Flush,
    /// Record the window's first kicks and sleeps and draw them
    /// ([`RunOutput::timeline_svg`]).
    pub timeline: bool,
}

/// A real run and all that is said of it.
#[derive(Debug)]
pub struct RunOutput {
    /// The run as it ran (its parameters with this machine's costs).
    pub spec: RunSpec,
    /// The measurement.
    pub result: PairResult,
    /// The costs it was predicted with.
    pub profile: Profile,
    /// The prediction.
    pub expected: Expected,
    /// Why its numbers may not be the pair's alone.
    pub warnings: Vec<Warning>,
    /// The JSON object of the contract (docs/cli.md, `run --json`).
    pub json: serde_json::Value,
    /// The text output, line by line.
    pub text: Vec<String>,
    /// The run's first kicks and sleeps drawn, where asked and recorded.
    pub timeline_svg: Option<String>,
}

impl RunRequest {
    /// Checks what can be checked before anything runs.
    ///
    /// # Errors
    ///
    /// The input at fault.
    pub fn check(&self) -> Result<(), LabError> {
        self.backend.check()?;
        if self.timeline && self.backend.guest == Some(GuestMode::Emulated) {
            return Err(LabError::input(
                Input::Timeline,
                "the emulated guest keeps no record of its kicks and halts (the user-mode guest, the default, does)",
            ));
        }
        Ok(())
    }

    /// Checks the request, finds this machine's costs (the profile named,
    /// or a quick calibration, said on `progress`), runs the pair and
    /// predicts it.
    ///
    /// # Errors
    ///
    /// The input at fault; a run that failed.
    pub fn run(&self, progress: &dyn Progress) -> Result<RunOutput, LabError> {
        self.check()?;
        let named = self.pair.load_profile()?;
        let params = self.pair.params_from(named.as_ref())?;
        let backend = self.backend.get();
        let mut spec = RunSpec {
            batch: self.batch,
            flush: self.flush,
            mode_p: self.strategy_p.unwrap_or(self.strategy),
            mode_c: self.strategy_c.unwrap_or(self.strategy),
            // Explicit, so that the JSON names the bound adaptive kept.
            latency_bound_ns: Some(self.latency_ns.unwrap_or(kicklab_model::DEFAULT_LATENCY_NS)),
            latency: true,
            record: if self.timeline {
                crate::measured_timeline::RECORD
            } else {
                0
            },
            ..RunSpec::new(params, backend, self.strategy, self.messages, self.seed)
        };
        crate::real::check(&spec)?;
        let profile = crate::real::profile_for(backend, named, progress)?;
        // A planning strategy (adaptive) estimates with this machine's costs.
        spec.params = self.pair.params_from(Some(&profile))?;
        let (result, record) = crate::real::run_recorded(&spec)?;
        // The prediction: the model (or, where it has no closed form, the
        // simulator) with this machine's N and S.
        let expected = crate::real::expected(&spec, &profile)?;
        let warnings = crate::disturbance::check_modes(
            &result,
            &params,
            [spec.mode_p, spec.mode_c],
            &profile,
        )?;
        let given = (self.strategy, self.strategy_p, self.strategy_c);
        let json = crate::run_output::json(&spec, &result, &profile, &expected, &warnings, given)?;
        let text = crate::run_output::lines(&spec, &result, &profile, &expected);
        let timeline_svg = if self.timeline {
            let title = format!(
                "measured {} pair, {} {}, {} {} (work includes polling and spinning)",
                backend.name(),
                kicklab_model::Param::Wp.symbol(),
                kicklab_model::fmt_ns_short(spec.params.w_p.mean_ns()),
                kicklab_model::Param::Wc.symbol(),
                kicklab_model::fmt_ns_short(spec.params.w_c.mean_ns()),
            );
            crate::measured_timeline::svg(&[(&record, title)])
        } else {
            None
        };
        Ok(RunOutput {
            timeline_svg,
            spec,
            result,
            profile,
            expected,
            warnings,
            json,
            text,
        })
    }
}
