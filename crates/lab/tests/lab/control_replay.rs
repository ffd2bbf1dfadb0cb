//! `replay --control` over every recorded control study in
//! `data/machines/`: the simulator, given the machine's profile alone,
//! must pick the strategy that measured cheapest within the bounds (or one
//! within the run-to-run spread of it) at 3 of every 4 recorded points of
//! a set. A set that misses is named below with the reason; the test fails
//! if a set misses unnamed, or if a named one has come to meet it (the
//! list stays true).

use std::collections::BTreeMap;
use std::path::PathBuf;

use kicklab_lab::control::replay::replay_control;
use kicklab_lab::control::targets::cheapest;
use kicklab_lab::control::Run;

use super::{each_edit_is_refused, Edit};

fn machines() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/machines")
}

/// Sets where the simulator's pick, as measured, left the bounds at more
/// than one point in four.
const KNOWN_MISSES: &[(&str, &str)] = &[
    (
        "xeon-2c-nested/2026-11-28a-control",
        "the fixed sleeps the simulator picks there (with the profile's nap \
         cost and idle curve: at polling's T) measured out of bounds: \
         sleep:200us at futex 0.5 us 1.93x polling's T, sleep:50us at kvm \
         3 us 1.43x; at futex 3 us polling's own run was disturbed (T 5.7 us \
         for 3 us of work) and sleep:50us held messages 1.2 ms",
    ),
    (
        "dev-xeon-2c-nested/2026-11-29d-control",
        "the development machine on a day its costs rose tenfold (futex N_P \
         12.8 us, naps 18.6 us late): the timed sleeps' p99 doubled, and \
         sleep:50us, which the simulator picks at 3 us with a p99 under the \
         100 us bound, measured 115 us (futex) and 223 us (kvm tx)",
    ),
    (
        "dev-xeon-2c-nested/2026-12-07-control",
        "the development machine on a noisy day (the futex calibration did \
         not settle in 6 rounds; the ring's cost per message 304 ns at its \
         90th percentile against 86 ns at the median): sleep:200us at futex \
         0.5 us measured 1.14x polling's T, coalesce:8,20us at 3 us 1.10x \
         with a p99 of 117 us over the 100 us bound; sleep:50us at kvm tx \
         3 us a p99 of 127 us (polling's own 101 us), and sleep:200us at \
         0.5 us, within the bounds, 5.5% dearer than haltpoll's",
    ),
    (
        "dev-xeon-2c-nested/2026-12-07c-control",
        "the same state a few minutes later (futex N_P 8.5 us, naps 27-28 us \
         late): coalesce:8,20us at futex 3 us measured 1.11x polling's T, \
         just past the 1.10x bound, and sleep:50us at kvm tx 3 us a p99 of \
         186 us (polling's own 101 us)",
    ),
    (
        "dev-epyc-2c-nested/2026-12-07a-control",
        "the development machine on its AMD EPYC host, costly (futex N_P \
         12.8 us, naps 41 us late; kvm tx N_P 41.9 us): at 3 us the \
         simulator's sleep:50us measured a p99 of 195 us (futex) and 120 us \
         (kvm tx) over the 100 us bound, where polling's own was 2-3 us",
    ),
    (
        "dev-epyc-2c-nested/2026-12-07b-control",
        "the same host a minute later (futex N_P 14.3 us, naps 34 us late; \
         kvm tx N_P 43.0 us): sleep:50us at 3 us measured a p99 of 249 us \
         (futex) and 1.85 ms (kvm tx)",
    ),
    (
        "dev-epyc-2c-nested/2026-12-07c-control",
        "the same host a minute later again (futex N_P 19.5 us, naps 43 us \
         late): at futex 3 us the simulator's coalesce:8,20us measured 1.16x \
         polling's T and a p99 of 202 us, at kvm tx 3 us sleep:50us a p99 of \
         114 us",
    ),
    (
        "dev-epyc-2c-nested/2026-12-07d-control",
        "the same host an hour and a half later, as costly (futex N_P 10.6 \
         us, naps 28-30 us late; kvm tx N_P 48.6 us): sleep:50us at 3 us \
         measured a p99 of 163 us (futex) and 200 us (kvm tx) over the \
         100 us bound, where polling's own was 23-28 us",
    ),
];

#[test]
fn the_simulator_picks_the_measured_cheapest_at_three_points_in_four() {
    let picks = replay_control(&machines()).expect("the recorded studies replay");
    let mut sets: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for p in &picks {
        let set = PathBuf::from(&p.file);
        let set = set.parent().unwrap();
        let name = format!(
            "{}/{}",
            set.parent().unwrap().file_name().unwrap().to_string_lossy(),
            set.file_name().unwrap().to_string_lossy()
        );
        let e = sets.entry(name).or_default();
        e.0 += usize::from(p.pick.holds);
        e.1 += 1;
        if p.pick.measured == p.pick.simulated {
            assert!(p.pick.holds, "{p:?}");
        }
        assert!(p.pick.measured_e_ns > 0.0, "{p:?}");
    }
    assert!(sets.len() >= 4, "{sets:?}");
    for (name, (held, of)) in &sets {
        let known = KNOWN_MISSES.iter().find(|(n, _)| n == name);
        let meets = 4 * held >= 3 * of;
        match known {
            None => assert!(meets, "{name}: {held} of {of} points"),
            Some((_, why)) => assert!(
                !meets,
                "{name} now meets it ({held} of {of}): drop it from KNOWN_MISSES ({why})"
            ),
        }
    }
}

fn run(strategy: &str, t_ns: f64, e_ns: f64, p99_ns: f64) -> Run {
    Run {
        strategy: strategy.into(),
        t_ns,
        e_ns,
        excess_ns: e_ns - 1600.0,
        latency_ns: [p99_ns / 2.0, p99_ns, p99_ns],
        kicks_per_message: 0.0,
        wakeups_per_message: 0.0,
        settle_messages: None,
        disturbed: None,
        self_check_p: None,
        self_check_c: None,
    }
}

#[test]
fn the_cheapest_keeps_the_pace_and_the_bound_where_any_does() {
    let runs = [
        run("poll", 1200.0, 2500.0, 300_000.0),
        run("notify", 1500.0, 2000.0, 50_000.0),
        run("sleep:200us", 1210.0, 1800.0, 280_000.0),
        run("defer:timeout=20us,count=10", 1250.0, 2200.0, 60_000.0),
        run("adaptive:latency=100us", 1200.0, 1700.0, 80_000.0),
    ];
    // notify is too slow; adaptive is left out; the sleep holds messages
    // past the bound where defer keeps it.
    assert_eq!(
        cheapest(&runs, 100_000.0).unwrap().strategy,
        "defer:timeout=20us,count=10"
    );
    // Where none keeps the bound, the pace alone.
    assert_eq!(cheapest(&runs, 10_000.0).unwrap().strategy, "sleep:200us");
    // A run disturbed in every try is never the cheapest.
    let mut runs = runs;
    runs[3].disturbed = Some("0.45 CPU of others".into());
    assert_eq!(
        cheapest(&runs, 100_000.0).unwrap().strategy,
        "sleep:200us",
        "the pace alone, defer's run set aside"
    );
}

#[test]
fn a_recorded_point_with_an_unknown_workload_or_an_impossible_w_is_refused() {
    let set = machines().join("dev-xeon-2c-nested/2026-11-29d-control");
    let cases: [(Edit, &str); 4] = [
        (
            |v| v["points"][0]["workload"] = "bogus:1".into(),
            "point 0: workload: unknown workload `bogus:1`",
        ),
        (
            |v| {
                v["points"][0].as_object_mut().unwrap().remove("workload");
            },
            "point 0 has no workload",
        ),
        (
            |v| v["points"][0]["w_p_ns"] = (-1.0).into(),
            "point 0: w_p_ns is -1, not a duration",
        ),
        (
            |v| v["points"][0]["w_c_ns"] = 1e308.into(),
            "point 0: w_c_ns 1.000e308 is longer than the longest duration",
        ),
    ];
    each_edit_is_refused(
        &set,
        "control-futex.json",
        "profile-futex.json",
        &cases,
        replay_control,
    );
}
