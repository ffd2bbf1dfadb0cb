//! `kicklab control`'s request as given ([`ControlRequest`]) made into a
//! checked [`ControlSpec`]: the W_P range against the points, the guest's
//! side against the backend, a profile against the backend it was
//! measured on, the default workloads a kvm guest can run, the profile's
//! idle curve and naps for the simulator.

use kicklab_model::Flag;
use kicklab_testbed::kvm::{Direction, KvmOptions};
use kicklab_testbed::Backend;

use super::{ControlSpec, Workload};
use crate::pair_input::PairInput;
use crate::{Input, LabError};

/// What `control` was given.
#[derive(Clone, Debug)]
pub struct ControlRequest {
    /// The pair (W_P is the study's; the rest as given).
    pub pair: PairInput,
    /// W_P from, to [ns].
    pub range: (f64, f64),
    /// Points over the range.
    pub points: u32,
    /// The workloads.
    pub workloads: Vec<Workload>,
    /// Messages per run.
    pub messages: u64,
    /// The latency bound [ns].
    pub latency_ns: f64,
    /// The simulator's seed.
    pub seed: u64,
    /// Where the study runs for real (`None`: the simulator).
    pub backend: Option<Backend>,
    /// kvm: the guest's side.
    pub direction: Option<Direction>,
}

impl ControlRequest {
    /// The study to run, with the notes to say (the workloads a kvm guest
    /// cannot run, left out).
    ///
    /// # Errors
    ///
    /// [`LabError::Input`] naming the input at fault; a profile of
    /// another backend.
    pub fn spec(&self) -> Result<(ControlSpec, Vec<String>), LabError> {
        let profile = self.pair.load_profile()?;
        let params = self.pair.params_from(profile.as_ref())?;
        let (from, to) = self.range;
        // As `sweep`: one point is one value (the study would take FROM).
        if self.points == 1 && from != to {
            return Err(LabError::input(
                Input::Range,
                format!(
                    "one point ({} 1) takes one W_P (FROM..FROM), got {}..{}",
                    Flag::Points,
                    kicklab_model::fmt_ns(from),
                    kicklab_model::fmt_ns(to)
                ),
            ));
        }
        let kvm = matches!(self.backend, Some(Backend::Kvm(_)));
        if self.direction.is_some() && !kvm {
            return Err(LabError::input(
                Input::Direction,
                format!("a kvm option; only {} kvm has a guest", Flag::Backend),
            ));
        }
        let backend = self.backend.map(|b| match b {
            Backend::Kvm(o) => Backend::Kvm(KvmOptions {
                direction: self.direction.unwrap_or(Direction::Tx),
                ..o
            }),
            other => other,
        });
        // A real study plans with the profile's costs: they must be this
        // backend's (as `run` and `validate` check).
        if let (Some(b), Some(p)) = (backend, &profile) {
            crate::real::profile_for(b, Some(p.clone()), &crate::Silent)?;
        }
        // The default workloads on kvm: phases is the one a guest cannot
        // run (its work table repeats every 2048 messages); given by
        // name, it is refused.
        let mut notes = Vec::new();
        let mut workloads = self.workloads.clone();
        if kvm && workloads == [Workload::Const, Workload::Exp, Workload::Phases] {
            workloads.retain(|w| *w != Workload::Phases);
            notes.push(
                "the default workloads without phases, which a kvm guest cannot run".to_string(),
            );
        }
        // Simulated with a profile (the study, or a real study's check of
        // the simulator's pick): each start-up scales with the sleeper's
        // idle time on the profile's idle curve, and each nap wakes as the
        // profile's did (as `sim` does).
        let (idle_scale, nap) = profile.as_ref().map_or(
            ([None, None], [None, None]),
            kicklab_model::Profile::sim_costs,
        );
        let spec = ControlSpec {
            params,
            w_p_range: self.range,
            points: self.points,
            workloads,
            messages: self.messages,
            latency_ns: self.latency_ns,
            seed: self.seed,
            backend,
            idle_scale,
            nap,
        };
        Ok((spec, notes))
    }
}
