//! One simulation, whatever its strategies: the fast loop of the basic
//! ones (`engine`) or the controllers' loop (`control`). What does not
//! live here: either loop.

use crate::config::{SimConfig, SimError, SimResult};
use crate::control::simulate_control;
use crate::engine::simulate_basic;

/// Runs one simulation.
///
/// # Errors
///
/// [`SimError`] for invalid parameters, zero messages, a deadlock (a bug,
/// reported rather than hung) or clock overflow.
///
/// # Examples
///
/// ```
/// use kicklab_model::{predict, Params, WaitMode};
/// use kicklab_sim::{simulate, SimConfig};
///
/// let p = Params::default();
/// let sim = simulate(&SimConfig::new(p, WaitMode::Notify, 100_000)).unwrap();
/// let model = predict(&p, WaitMode::Notify).unwrap();
/// assert!((sim.rates.t_ns - model.rates.t_ns).abs() / model.rates.t_ns < 1e-9);
/// ```
pub fn simulate(cfg: &SimConfig) -> Result<SimResult, SimError> {
    if !(cfg.mode_p.is_basic() && cfg.mode_c.is_basic()) || cfg.combine.is_on() {
        return simulate_control(cfg);
    }
    simulate_basic(cfg)
}
