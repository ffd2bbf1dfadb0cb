//! How fast the simulator runs on this machine (`kicklab sim --bench`),
//! measured in one run: simulated messages per second on one core
//! (constant and exponential costs, latency recording on and off) against
//! a generic priority-queue simulator of the same rules, and the speed-up
//! of a sweep on all cores over the same sweep on one.

use std::time::Instant;

use kicklab_model::{median, Params, WaitMode};
use kicklab_sim::reference::simulate_reference;
use kicklab_sim::{simulate, sweep, SimConfig, Vary};
use serde::Serialize;

use crate::{LabError, Progress};

/// Repetitions of each rate measurement (the median is kept).
pub const REPS: usize = 5;

/// Simulated messages per second [M/s] of `run` on `cfg`, median of
/// [`REPS`] runs.
#[allow(clippy::cast_precision_loss)]
fn rate<T>(
    cfg: &SimConfig,
    run: impl Fn(&SimConfig) -> Result<T, kicklab_sim::SimError>,
) -> Result<f64, LabError> {
    let mut rates = Vec::new();
    for _ in 0..REPS {
        let t = Instant::now();
        run(cfg)?;
        rates.push((cfg.messages + cfg.warmup) as f64 / t.elapsed().as_secs_f64() / 1e6);
    }
    Ok(median(rates))
}

/// What [`measure`] found. Rates in simulated messages per second.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct SimSpeed {
    /// Cores the sweep ran on.
    pub cores: usize,
    /// Constant costs, latency recorded.
    pub const_msgs_per_s: f64,
    /// Constant costs, no latency.
    pub const_no_latency_msgs_per_s: f64,
    /// Exponential costs, latency recorded.
    pub exp_msgs_per_s: f64,
    /// Exponential costs, no latency.
    pub exp_no_latency_msgs_per_s: f64,
    /// The generic priority-queue simulator, constant costs.
    pub generic_pq_const_msgs_per_s: f64,
    /// The generic priority-queue simulator, exponential costs.
    pub generic_pq_exp_msgs_per_s: f64,
    /// The sweep on one thread [s].
    pub sweep_serial_s: f64,
    /// The sweep on every core [s].
    pub sweep_parallel_s: f64,
    /// `sweep_serial_s / sweep_parallel_s`.
    pub sweep_speedup: f64,
}

/// Measures the simulator's speed.
///
/// # Errors
///
/// A simulator error (none expected on the fixed set-ups used).
pub fn measure(progress: &dyn Progress) -> Result<SimSpeed, LabError> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let n = 4_000_000;
    progress.note(&format!("measuring simulator speed ({REPS} runs of {n} messages each, medians; the Fig. 4 set-up, notify) ..."));
    let cfg = |p: Params, latency: bool, n: u64| SimConfig {
        latency,
        ..SimConfig::new(p, WaitMode::Notify, n)
    };
    let const_lat = rate(&cfg(Params::default(), true, n), simulate)?;
    let const_nolat = rate(&cfg(Params::default(), false, n), simulate)?;
    let exp_lat = rate(
        &cfg(Params::default().with_exponential_costs(), true, n),
        simulate,
    )?;
    let exp_nolat = rate(
        &cfg(Params::default().with_exponential_costs(), false, n),
        simulate,
    )?;
    // The baseline a user would write: a generic event queue, same rules.
    let const_ref = rate(&cfg(Params::default(), true, n / 4), simulate_reference)?;
    let exp_ref = rate(
        &cfg(Params::default().with_exponential_costs(), true, n / 4),
        simulate_reference,
    )?;

    progress.note(&format!(
        "measuring sweep speed-up (48 points x 200000 messages, 1 thread vs {cores}) ..."
    ));
    let vary = Vary::parse("wp=0.2us..3us:48").expect("valid");
    let sweep_once = || -> Result<f64, LabError> {
        let t = Instant::now();
        sweep(
            &Params::default().with_exponential_costs(),
            &vary,
            WaitMode::Notify,
            200_000,
            1,
            &|| {},
        )?;
        Ok(t.elapsed().as_secs_f64())
    };
    let one = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .expect("a one-thread pool");
    sweep_once()?; // warm caches, page in the binary; discarded
    let serial = one.install(sweep_once)?;
    let parallel = sweep_once()?;
    let speedup = serial / parallel;

    Ok(SimSpeed {
        cores,
        const_msgs_per_s: const_lat * 1e6,
        const_no_latency_msgs_per_s: const_nolat * 1e6,
        exp_msgs_per_s: exp_lat * 1e6,
        exp_no_latency_msgs_per_s: exp_nolat * 1e6,
        generic_pq_const_msgs_per_s: const_ref * 1e6,
        generic_pq_exp_msgs_per_s: exp_ref * 1e6,
        sweep_serial_s: serial,
        sweep_parallel_s: parallel,
        sweep_speedup: speedup,
    })
}

/// The measurement as text, line by line.
#[must_use]
pub fn text(s: &SimSpeed) -> Vec<String> {
    let mut lines = Vec::new();
    let m = |v: f64| v / 1e6;
    let (const_lat, const_nolat) = (m(s.const_msgs_per_s), m(s.const_no_latency_msgs_per_s));
    let (exp_lat, exp_nolat) = (m(s.exp_msgs_per_s), m(s.exp_no_latency_msgs_per_s));
    let (const_ref, exp_ref) = (
        m(s.generic_pq_const_msgs_per_s),
        m(s.generic_pq_exp_msgs_per_s),
    );
    let (serial, parallel, speedup, cores) = (
        s.sweep_serial_s,
        s.sweep_parallel_s,
        s.sweep_speedup,
        s.cores,
    );
    lines.push(format!(
        "simulated messages per second, one core (median of {REPS}):"
    ));
    lines.push(format!("  constant costs      {const_lat:7.1} M/s with latency percentiles, {const_nolat:7.1} M/s without"));
    lines.push(format!("  exponential costs   {exp_lat:7.1} M/s with latency percentiles, {exp_nolat:7.1} M/s without"));
    lines.push(format!(
        "  a generic priority-queue simulator of the same rules: {const_ref:.1} M/s constant, {exp_ref:.1} M/s exponential \
         (kicklab is {:.1}x and {:.1}x faster)",
        const_lat / const_ref,
        exp_lat / exp_ref
    ));
    lines.push("sweep of 48 points (exponential costs, model + simulator, notify + poll):".into());
    lines.push(format!("  1 thread {serial:.2} s, {cores} threads {parallel:.2} s: speed-up {speedup:.2} on {cores} cores"));
    lines
}
