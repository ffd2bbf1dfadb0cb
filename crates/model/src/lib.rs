//! The closed-form model of a producer/consumer pair that synchronizes with
//! notifications, after Rizzo, Garzarella, Lettieri and Maffione, "A Study
//! of Speed Mismatches Between Communicating Virtual Machines" (ANCS 2016).
//!
//! What lives here: the one [`Params`] type shared by the model, the
//! simulator and the testbeds; cost distributions as data ([`Cost`], with
//! their means but no sampling); duration parsing ([`parse_duration_ns`]);
//! the one regime classifier ([`classify`]); and the closed forms
//! ([`predict`]); the table of the command line's flags ([`Flag`],
//! [`CommandLine`]) that every library prints commands with. What does not: sampling, simulation, measurement (see the
//! `kicklab-sim` crate and the testbeds).
//!
//! # Example
//!
//! 1. Build the parameters of the paper's Fig. 4 set-up with `W_P = 2 us`.
//! 2. Ask the model for the regime, the time per message and the cost.
//!
//! ```
//! use kicklab_model::{predict, Cost, Params, Regime, WaitMode};
//!
//! let mut p = Params::default();          // L = 256, W_C = 1.1 us, ...
//! p.w_p = Cost::Const(2000.0);            // [ns]
//! let pred = predict(&p, WaitMode::Notify).unwrap();
//! assert_eq!(pred.regime, Regime::FC);    // the consumer is faster
//! assert_eq!(pred.m, Some(1));            // one message per wake-up
//! assert!((pred.rates.t_ns - 4400.0).abs() < 1e-9); // W_P + N_P / m
//! ```
//!
//! All times are nanoseconds (`f64`). The regime predicates and the integer
//! batch sizes are computed exactly on costs rounded to whole picoseconds
//! ([`to_ps`]), the same time base the simulator uses, so that ties such as
//! "a message published at the instant the consumer looks" resolve the same
//! way in both.

mod closed_form;
pub mod control;
mod cost;
mod cycle;
mod flag;
mod idle;
mod param;
mod params;
mod profile;
pub mod qos;
mod rates;
mod regime;
mod stats;
mod strategy;
mod time;
pub mod typed;

pub use closed_form::{
    predict, predict_with_start_spread, ss_best_case, ss_formula, ModelError, OperatingPoint,
    Prediction, RaceExpectation,
};
pub use cost::{Cost, CostParseError, Mix, Phases, SimpleCost, MAX_LOG_SIGMA, MAX_PHASES};
pub use cycle::classify;
pub use flag::{CommandLine, Flag};
pub use idle::IdleScale;
pub use param::{Param, Unit, UnknownParam};
pub use params::{CostOverrides, GivenParams, ParamError, Params, Party};
pub use profile::{
    split_wake_up, Direction, IdlePoint, InRunCosts, Profile, Stat, REFERENCE_PAIR_NS,
};
pub use rates::{Latency, Rates};
pub use regime::{Predicates, Regime};
pub use stats::median;
pub use strategy::{Estimator, ScaleIdle, WaitMode, Window, DEFAULT_LATENCY_NS};
pub use time::{
    fmt_ns, fmt_ns_short, fmt_ns_sig, parse_duration_ns, parse_whole, shown, shown_path, sig,
    split_range, to_ps, DurationParseError, MAX_DURATION_NS, PS_PER_NS, SHORT_DIGITS,
};

/// The first item of `items` that an earlier one equals: a list flag or
/// keyword that names a thing twice (`--vms 1,1`, a gap, a workload),
/// which front ends refuse rather than run twice or let the last win.
///
/// ```
/// assert_eq!(kicklab_model::first_repeat(&[1, 2, 1, 2]), Some(&1));
/// assert_eq!(kicklab_model::first_repeat(&["a", "b"]), None);
/// ```
pub fn first_repeat<T: PartialEq>(items: &[T]) -> Option<&T> {
    items
        .iter()
        .enumerate()
        .find_map(|(i, x)| items[..i].contains(x).then_some(x))
}
