//! Exact discrete-event simulation of the producer/consumer pair of
//! `kicklab-model`, following the model's rules (`docs/model.md`) to the letter.
//!
//! What lives here: the two-party event loop ([`simulate`]), per-event cost
//! sampling with one seeded stream per cost ([`Sampler`]), parallel
//! parameter sweeps that run model and simulator side by side ([`sweep`]),
//! and a run's intervals, party by party, for a picture ([`timeline`]).
//! What does not: the closed forms and the regime classifier (in
//! `kicklab-model`), plotting (in `kicklab-report`).
//!
//! # Example
//!
//! 1. Take the paper's Fig. 4 set-up and make P slower than C.
//! 2. Simulate 100 000 messages with notifications.
//! 3. Compare with the closed form: with constant costs they agree exactly.
//!
//! ```
//! use kicklab_model::{predict, Cost, Params, WaitMode};
//! use kicklab_sim::{simulate, SimConfig};
//!
//! let p = Params { w_p: Cost::Const(2000.0), ..Params::default() };
//! let sim = simulate(&SimConfig::new(p, WaitMode::Notify, 100_000)).unwrap();
//! let model = predict(&p, WaitMode::Notify).unwrap();
//! assert!((sim.rates.t_ns - model.rates.t_ns).abs() <= 1e-9 * model.rates.t_ns);
//! assert!((sim.rates.e_ns - model.rates.e_ns).abs() <= 1e-9 * model.rates.e_ns);
//! assert_eq!(sim.rates.notifications_p, sim.rates.messages); // m = 1: one kick a message
//! ```
//!
//! The clock counts whole picoseconds (`u64`), so the tie rule "every
//! publish and free happens before any reserve or claim attempt at the same
//! instant" is decided exactly, never by floating-point luck.

mod config;
mod control;
mod engine;
pub mod qos;
pub mod reference;
mod run;
mod sampler;
pub mod scale;
pub mod stop;
pub mod sweep;
mod timeline;

pub use config::{
    default_warmup, Combine, Flush, SimConfig, SimError, SimResult, Start, Totals, Window,
    MAX_EVENTS_PER_MESSAGE, MAX_LEN, MAX_MESSAGES,
};
pub use control::{simulate_control, simulate_trace};
pub use kicklab_model::{Latency, Rates};
pub use reference::timeline;
pub use run::simulate;
pub use sampler::Sampler;
pub use sweep::{
    check_point, check_sweep_budget, over_budget, sweep, sweep_point, sweep_points, SweepPoint,
    Vary, VaryError, MAX_STUDY_MESSAGES,
};
pub use timeline::{Activity, Interval, Timeline};
