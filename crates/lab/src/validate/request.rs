//! `kicklab validate` as one library call: a [`ValidateRequest`] in; the
//! points, the warnings to say, the page and the table to write, the JSON
//! object and the text out ([`ValidateOutput`]). What does not live here:
//! the output folder (the front end's), the sweep itself (`run`).

use kicklab_model::{fmt_ns, Flag};
use kicklab_report::Page;
use kicklab_sim::Vary;

use super::{section, table, text_lines, to_json, validate, Options, Point};
use crate::backend_input::BackendInput;
use crate::pair_input::PairInput;
use crate::{LabError, Progress};

/// What `validate` was given.
#[derive(Clone, Debug)]
pub struct ValidateRequest {
    /// The pair as given (W_P is the sweep's).
    pub pair: PairInput,
    /// Where it runs.
    pub backend: BackendInput,
    /// The sweep of W_P.
    pub vary: Vary,
    /// Messages, seed and repetitions of each run.
    pub options: Options,
}

/// A validation and all that is said of it.
#[derive(Debug)]
pub struct ValidateOutput {
    /// The points.
    pub points: Vec<Point>,
    /// Lines for standard error: the disturbed points (a doubtful
    /// profile is said on the progress as the sweep starts).
    pub warnings: Vec<String>,
    /// The page (`index.html` and its charts).
    pub page: Page,
    /// The table as CSV (`validate.csv`).
    pub csv: String,
    /// The JSON object of the contract (docs/cli.md, `validate --json`).
    pub json: serde_json::Value,
    /// The text output, line by line.
    pub text: Vec<String>,
}

impl ValidateRequest {
    /// Checks the request before anything runs or any folder is taken.
    ///
    /// # Errors
    ///
    /// The input at fault.
    pub fn check(&self) -> Result<(), LabError> {
        self.check_with(self.pair.load_profile()?.as_ref())
            .map(|_| ())
    }

    /// [`ValidateRequest::check`] with the profile read, giving the
    /// pair's parameters.
    fn check_with(
        &self,
        named: Option<&kicklab_model::Profile>,
    ) -> Result<kicklab_model::Params, LabError> {
        self.backend.check()?;
        let params = self.pair.params_from(named)?;
        super::check(&params, self.backend.get(), &self.vary, &self.options)?;
        Ok(params)
    }

    /// Finds this machine's costs (the profile named, or a calibration,
    /// said on `progress`) and runs the sweep.
    ///
    /// # Errors
    ///
    /// The input at fault; a failed run.
    pub fn run(&self, progress: &dyn Progress) -> Result<ValidateOutput, LabError> {
        let named = self.pair.load_profile()?;
        let params = self.check_with(named.as_ref())?;
        let be = self.backend.get();
        let profile = crate::real::profile_for(be, named, progress)?;
        // Said before the sweep: it takes minutes.
        for w in crate::disturbance::check_profile(&profile) {
            progress.note(&format!(
                "warning: {w}: every point will be marked disturbed"
            ));
        }
        let points = validate(&params, &profile, be, &self.vary, &self.options, progress)?;
        // The profile's warnings were said once above.
        let warnings = points
            .iter()
            .filter_map(|p| {
                p.run_disturbance()
                    .map(|line| format!("warning: W_P {}: {line}", fmt_ns(p.x)))
            })
            .collect();
        let cmd = self
            .backend
            .command_line("validate")
            .arg_some(
                Flag::Profile,
                self.pair.profile.as_ref().map(|p| p.display()),
            )
            .arg(Flag::Vary, self.vary)
            .arg(Flag::Messages, self.options.messages)
            .arg(Flag::Repeat, self.options.repeat)
            .to_string();
        let page = Page {
            title: format!("kicklab validate ({})", be.name()),
            intro_html: String::new(),
            sections: vec![section(&points, &profile, be.name(), &cmd)?],
        };
        Ok(ValidateOutput {
            csv: table(&points).to_csv(),
            json: to_json(&points, &params, be, &self.vary, &self.options),
            text: text_lines(&points),
            warnings,
            page,
            points,
        })
    }
}
