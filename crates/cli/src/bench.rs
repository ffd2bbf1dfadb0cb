//! `kicklab sim --bench`: calls `kicklab_lab::bench::measure`, prints.

use kicklab_lab::bench::{measure, REPS};

pub fn run(as_json: bool) -> anyhow::Result<()> {
    let s = measure(&kicklab_term::progress::Bars::default())?;
    if as_json {
        return crate::show::print_json(&serde_json::to_value(s)?);
    }
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
    outln!("simulated messages per second, one core (median of {REPS}):");
    outln!("  constant costs      {const_lat:7.1} M/s with latency percentiles, {const_nolat:7.1} M/s without");
    outln!("  exponential costs   {exp_lat:7.1} M/s with latency percentiles, {exp_nolat:7.1} M/s without");
    outln!(
        "  a generic priority-queue simulator of the same rules: {const_ref:.1} M/s constant, {exp_ref:.1} M/s exponential \
         (kicklab is {:.1}x and {:.1}x faster)",
        const_lat / const_ref,
        exp_lat / exp_ref
    );
    outln!("sweep of 48 points (exponential costs, model + simulator, notify + poll):");
    outln!("  1 thread {serial:.2} s, {cores} threads {parallel:.2} s: speed-up {speedup:.2} on {cores} cores");
    Ok(())
}
