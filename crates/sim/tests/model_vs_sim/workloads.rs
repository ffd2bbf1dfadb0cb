//! The compound workloads (`phases:`, `mix:`) through the simulator: they
//! run, and their throughput lies where their parts put it.

use kicklab_model::{Cost, Params, WaitMode};
use kicklab_sim::{simulate, SimConfig};

fn t_ns(w_p: &str, w_c: &str, mode: WaitMode) -> f64 {
    let p = Params {
        w_p: Cost::parse(w_p).unwrap(),
        w_c: Cost::parse(w_c).unwrap(),
        ..Params::default()
    };
    // 20 whole cycles of the phases below, after the warm-up.
    simulate(&SimConfig::new(p, mode, 200_000))
        .unwrap()
        .rates
        .t_ns
}

#[test]
fn phases_lie_between_their_constant_runs() {
    let fast = t_ns("0.5us", "1.1us", WaitMode::Notify);
    let slow = t_ns("3us", "1.1us", WaitMode::Notify);
    let phases = t_ns("phases:0.5us@5000+3us@5000", "1.1us", WaitMode::Notify);
    assert!(fast < slow, "{fast} {slow}");
    assert!(
        fast < phases && phases < slow,
        "T: 0.5us {fast}, 3us {slow}, phases {phases}"
    );
    // Long phases: each runs near its own steady state, so T is close to
    // the average of the two (half the messages in each).
    let avg = 0.5 * (fast + slow);
    assert!(
        (phases - avg).abs() / avg < 0.05,
        "phases {phases}, average {avg}"
    );
}

#[test]
fn a_rare_long_message_mix_lies_between_its_parts() {
    let short = t_ns("1us", "1.1us", WaitMode::Notify);
    let long = t_ns("20us", "1.1us", WaitMode::Notify);
    let mix = t_ns("mix:0.05:1us+20us", "1.1us", WaitMode::Notify);
    assert!(short < mix && mix < long, "{short} {mix} {long}");
}
