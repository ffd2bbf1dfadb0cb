//! `kicklab calibrate` as one library call: a [`CalibrateRequest`] (the
//! backend, the samples, the idle gaps) in; the profile, its JSON object
//! and its text out. What does not live here: the measurement
//! (`kicklab_testbed::calibrate`), the words of a profile
//! ([`crate::profile_text`]), saving it (the front end's `--save`).

use std::time::Duration;

use kicklab_testbed::{Backend, Calibration, Profile};

use crate::backend_input::BackendInput;
use crate::{LabError, Progress};

/// What `calibrate` was given.
#[derive(Clone, Debug)]
pub struct CalibrateRequest {
    /// Where the pair runs.
    pub backend: BackendInput,
    /// Notifications per direction per round.
    pub samples: usize,
    /// The idle gap before each.
    pub gap: Duration,
    /// Rounds at most, until the medians settle.
    pub rounds: usize,
    /// The other idle gaps of the idle curve.
    pub gaps: Vec<Duration>,
    /// Runs of a polling pair with no work (the ring's cost).
    pub overhead_runs: u32,
}

/// A profile and how it is shown.
#[derive(Debug)]
pub struct CalibrateOutput {
    /// The profile.
    pub profile: Profile,
    /// Its JSON object (docs/cli.md, `calibrate --json`).
    pub json: serde_json::Value,
    /// Its text, line by line.
    pub text: Vec<String>,
}

impl CalibrateRequest {
    /// The calibration, checked before anything runs.
    ///
    /// # Errors
    ///
    /// The setting at fault.
    pub fn calibration(&self) -> Result<Calibration, LabError> {
        self.backend.check()?;
        let c = Calibration {
            gaps: self.gaps.clone(),
            overhead_runs: self.overhead_runs,
            ..Calibration::new(self.samples, self.gap, self.rounds)
        };
        c.check()?;
        Ok(c)
    }

    /// Measures, saying first on `progress` what it is about to measure
    /// and then every 10 s that it still is.
    ///
    /// # Errors
    ///
    /// The setting at fault; a failed measurement.
    pub fn run(&self, progress: &dyn Progress) -> Result<CalibrateOutput, LabError> {
        let c = self.calibration()?;
        let backend = self.backend.get();
        progress.note(&format!(
            "calibrating {} ({} notifications per direction per round, {} idle before each; then {} more idle gaps, \
             one round each; then {} runs of a polling pair with no work; then {} runs of two reference pairs \
             with notifications) ...",
            backend.name(),
            c.samples,
            kicklab_model::fmt_ns(c.gap.as_secs_f64() * 1e9),
            c.gaps.iter().filter(|g| **g != c.gap).count(),
            c.overhead_runs,
            c.reference_runs
        ));
        let profile = crate::with_heartbeat(
            progress,
            &format!("calibrating {}", backend.name()),
            Duration::from_secs(10),
            || kicklab_testbed::calibrate_backend(backend, &c),
        )?;
        let guest = match backend {
            Backend::Kvm(o) => Some(o.guest),
            Backend::Threads(_) => None,
        };
        Ok(CalibrateOutput {
            json: crate::real::profile_json(&profile),
            text: crate::profile_text::lines(&profile, guest),
            profile,
        })
    }
}
