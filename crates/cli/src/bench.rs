//! `kicklab sim --bench`: how fast the simulator runs on this machine,
//! measured in one run: simulated messages per second on one core (constant
//! and exponential costs, latency recording on and off), and the speed-up of
//! a sweep on all cores over the same sweep on one.

use std::time::Instant;

use kicklab_model::{Params, WaitMode};
use kicklab_sim::reference::simulate_reference;
use kicklab_sim::{simulate, sweep, SimConfig, Vary};
use serde_json::json;

const REPS: usize = 5;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Simulated messages per second [M/s] of `run` on `cfg`, median of
/// [`REPS`] runs.
#[allow(clippy::cast_precision_loss)]
fn rate<T>(
    cfg: &SimConfig,
    run: impl Fn(&SimConfig) -> Result<T, kicklab_sim::SimError>,
) -> anyhow::Result<f64> {
    let mut rates = Vec::new();
    for _ in 0..REPS {
        let t = Instant::now();
        run(cfg)?;
        rates.push((cfg.messages + cfg.warmup) as f64 / t.elapsed().as_secs_f64() / 1e6);
    }
    Ok(median(rates))
}

pub fn run(as_json: bool) -> anyhow::Result<()> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let n = 4_000_000;
    eprintln!("measuring simulator speed ({REPS} runs of {n} messages each, medians; the Fig. 4 set-up, notify) ...");
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

    eprintln!("measuring sweep speed-up (48 points x 200000 messages, 1 thread vs {cores}) ...");
    let vary = Vary::parse("wp=0.2us..3us:48").expect("valid");
    let sweep_once = || -> anyhow::Result<f64> {
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
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build()?;
    sweep_once()?; // warm caches, page in the binary; discarded
    let serial = one.install(sweep_once)?;
    let parallel = sweep_once()?;
    let speedup = serial / parallel;

    if as_json {
        return crate::print_json(&json!({
            "cores": cores,
            "const_msgs_per_s": const_lat * 1e6,
            "const_no_latency_msgs_per_s": const_nolat * 1e6,
            "exp_msgs_per_s": exp_lat * 1e6,
            "exp_no_latency_msgs_per_s": exp_nolat * 1e6,
            "generic_pq_const_msgs_per_s": const_ref * 1e6,
            "generic_pq_exp_msgs_per_s": exp_ref * 1e6,
            "sweep_serial_s": serial,
            "sweep_parallel_s": parallel,
            "sweep_speedup": speedup,
        }));
    }
    println!("simulated messages per second, one core (median of {REPS}):");
    println!("  constant costs      {const_lat:7.1} M/s with latency percentiles, {const_nolat:7.1} M/s without");
    println!("  exponential costs   {exp_lat:7.1} M/s with latency percentiles, {exp_nolat:7.1} M/s without");
    println!(
        "  a generic priority-queue simulator of the same rules: {const_ref:.1} M/s constant, {exp_ref:.1} M/s exponential \
         (kicklab is {:.1}x and {:.1}x faster)",
        const_lat / const_ref,
        exp_lat / exp_ref
    );
    println!("sweep of 48 points (exponential costs, model + simulator, notify + poll):");
    println!("  1 thread {serial:.2} s, {cores} threads {parallel:.2} s: speed-up {speedup:.2} on {cores} cores");
    Ok(())
}
