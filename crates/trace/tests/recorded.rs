//! `kicklab trace`'s estimates against the runs whose truth is known:
//! kicklab's own futex and KVM runs recorded under `perf record -a`
//! (`data/record.sh`), each beside the run's own `--json` (its kicks and
//! wake-ups timed from inside: host clocks, the guest's TSC stamps).
//!
//! On the committed recordings every estimate the trace gives from 20
//! samples or more is held to within 15% of the run's own, except the
//! known misses below, each with its cause; an estimate the trace declares
//! a lower bound must be below the run's. On a fresh recording
//! (`KICKLAB_TRACE_DATA`, CI's live check) T, the counts (against the
//! run's own with its warm-up, `whole_run`, which the trace's window
//! spans) and who slept are held, the costs printed.

use std::path::PathBuf;

use kicklab_trace::{read, Naming, Trace, Who};
use serde_json::Value;

/// How far an estimate may be from the run's own measurement.
const WITHIN: f64 = 0.15;

/// Fewer samples than this (kicks or wake-ups in the trace) compare
/// nothing: a mean of a handful is the run's noise. So is a count of a
/// handful (a pair that kicks 15 times in 20 000 messages): its
/// sampling spread (about one over its square root, 26% at 15) is wider
/// than [`WITHIN`], and the trace's window holds the warm-up too.
const MIN_SAMPLES: usize = 20;

/// Estimates known to miss on the committed recordings, and why: (case,
/// estimate, cause). They are printed, not held to [`WITHIN`].
const KNOWN_MISSES: [(&str, &str, &str); 1] = [(
    "futex",
    "kick_p_ns",
    "the trace's mean covers the run's warm-up too, the run's only its measured window, and the tracepoints time the call without its user-kernel transitions; in recordings here the two differed by -17.5%, -8.5% and +16.3%, while the run's own kick moved between 2.2 and 3.4 us from run to run",
)];

/// The recorded cases: `tests/data`, or the folder `KICKLAB_TRACE_DATA`
/// names (where CI records them again on its own machine).
fn data(name: &str) -> PathBuf {
    match std::env::var_os("KICKLAB_TRACE_DATA") {
        Some(dir) => PathBuf::from(dir).join(name),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name),
    }
}

/// Whether a case was recorded (a fresh recording without /dev/kvm has
/// no KVM cases; the committed data has all three).
fn recorded(name: &str) -> bool {
    let there = data(&format!("{name}.txt.gz")).exists();
    if !there {
        assert!(
            std::env::var_os("KICKLAB_TRACE_DATA").is_some(),
            "{name}: committed test data missing"
        );
        println!("{name}: not recorded here (no /dev/kvm when it was recorded): skipped");
    }
    there
}

fn case(name: &str, naming: &Naming) -> (Trace, Value) {
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(data(&format!("{name}.run.json"))).unwrap())
            .unwrap();
    let trace = read(&data(&format!("{name}.txt.gz")), naming).unwrap();
    (trace, run)
}

/// The run's messages with its warm-up (a tenth): the trace's window
/// spans both.
fn messages(run: &Value) -> f64 {
    run["messages"].as_f64().unwrap() * 1.1
}

fn check(name: &str, naming: &Naming) -> bool {
    if !recorded(name) {
        return false;
    }
    let (trace, run) = case(name, naming);
    let e = &trace.estimates;
    let m = messages(&run);
    let gap = |k: &str| trace.gaps.iter().any(|g| g.estimate == k);
    let mut failures = Vec::new();
    // A fresh recording (CI's, on its machine) holds its costs to nothing:
    // one run's costs there move by more than the target between runs.
    let live = std::env::var_os("KICKLAB_TRACE_DATA").is_some();
    let mut compare = |key: &str, ours: Option<kicklab_model::Stat>| {
        let theirs = run[key].as_f64();
        let (Some(stat), Some(theirs)) = (ours, theirs) else {
            return;
        };
        let ours = stat.mean_ns;
        if stat.n < MIN_SAMPLES {
            println!(
                "{name} {key}: {} samples in the trace: not compared",
                stat.n
            );
            return;
        }
        let err = ours / theirs - 1.0;
        println!(
            "{name} {key}: trace {ours:.0} ns, run {theirs:.0} ns ({:+.1}%)",
            err * 100.0
        );
        if let Some((_, _, why)) = KNOWN_MISSES
            .iter()
            .find(|(c, k, _)| *c == name && *k == key)
        {
            println!("  known miss: {why}");
        } else if gap(key) {
            println!(
                "  declared a lower bound: needs {}",
                trace.gaps.iter().find(|g| g.estimate == key).unwrap().needs
            );
            assert!(
                ours < theirs,
                "{name} {key}: declared a lower bound, yet above the run's"
            );
        } else if err.abs() > WITHIN && !(live && key != "T_ns") {
            failures.push(format!("{key} {:+.1}%", err * 100.0));
        }
    };
    let mut t = kicklab_model::Stat::constant(e.window_ns / m);
    t.n = usize::MAX;
    compare("T_ns", Some(t));
    compare("kick_p_ns", e.sides[0].kick);
    compare("kick_c_ns", e.sides[1].kick);
    compare("wake_p_ns", e.sides[0].wake);
    compare("wake_c_ns", e.sides[1].wake);
    // Counts per message.
    #[allow(clippy::cast_precision_loss)]
    for (key, ours) in [
        ("notifications_p", e.sides[0].notifications),
        ("notifications_c", e.sides[1].notifications),
        ("sleeps_p", e.sides[0].sleeps),
        ("sleeps_c", e.sides[1].sleeps),
    ] {
        // The run's counts with its warm-up, where it prints them (the
        // trace's window holds both); else its window's, whose rate the
        // warm-up need not share (a bistable pair kicks at its own rate
        // in each).
        let (counted, messages, traced) = match run["whole_run"].as_object() {
            Some(w) => {
                let all = w["messages"].as_f64().unwrap();
                (w[key].as_u64().unwrap(), all, all)
            }
            None => (
                run[key].as_u64().unwrap(),
                run["messages"].as_f64().unwrap(),
                m,
            ),
        };
        #[allow(clippy::cast_precision_loss)]
        let theirs = counted as f64 / messages;
        let few = ours < MIN_SAMPLES as u64 && counted < MIN_SAMPLES as u64;
        let ours = ours as f64 / traced;
        println!("{name} {key}: trace {ours:.4}/message, run {theirs:.4}/message");
        if few {
            println!("  fewer than {MIN_SAMPLES} in the trace and in the run: not compared");
        } else if (ours - theirs).abs() > WITHIN * theirs.max(1e-3) {
            failures.push(format!("{key}: {ours:.4} against {theirs:.4} per message"));
        }
    }
    // The regime: who slept, as the run counts it.
    let sleeper = |p: f64, c: f64| match (p > 1e-3, c > 1e-3) {
        (false, false) => "none",
        (true, false) => "P",
        (false, true) => "C",
        (true, true) => "both",
    };
    let per = |v: &Value| v.as_f64().unwrap() / run["messages"].as_f64().unwrap();
    #[allow(clippy::cast_precision_loss)]
    let ours = sleeper(e.sides[0].sleeps as f64 / m, e.sides[1].sleeps as f64 / m);
    let theirs = sleeper(per(&run["sleeps_p"]), per(&run["sleeps_c"]));
    if ours != theirs {
        failures.push(format!("who slept: the trace {ours}, the run {theirs}"));
    }
    assert!(failures.is_empty(), "{name}: {}", failures.join("; "));
    true
}

#[test]
fn futex_pair_from_its_trace() {
    assert!(check(
        "futex",
        &Naming {
            producer: Some(Who::Comm("kicklab-P".into())),
            ..Naming::default()
        },
    ));
}

#[test]
fn futex_pair_from_ftrace_text() {
    let naming = Naming {
        producer: Some(Who::Comm("kicklab-P".into())),
        ..Naming::default()
    };
    if !check("futex-ftrace", &naming) {
        return;
    }
    let (trace, _) = case("futex-ftrace", &naming);
    assert_eq!(trace.format, "trace-cmd report or ftrace");
    assert_eq!(trace.resolution_ns, 1000);
}

#[test]
fn kvm_tx_pair_from_its_trace() {
    let naming = Naming::default();
    if !check("kvm-tx", &naming) {
        return;
    }
    let (trace, _) = case("kvm-tx", &naming);
    assert_eq!(trace.pair.guest, Some(kicklab_model::Party::P));
    // kvm_pvm emits neither kvm_exit nor kvm_entry: the trace says what
    // it cannot time.
    let gaps: Vec<&str> = trace.gaps.iter().map(|g| g.estimate).collect();
    assert!(
        gaps.contains(&"kick_p_ns")
            && gaps.contains(&"visible_p_ns")
            && gaps.contains(&"wake_c_ns"),
        "{gaps:?}"
    );
}

#[test]
fn kvm_rx_pair_from_its_trace() {
    let naming = Naming {
        guest_consumes: true,
        ..Naming::default()
    };
    if !check("kvm-rx", &naming) {
        return;
    }
    let (trace, _) = case("kvm-rx", &naming);
    assert_eq!(trace.pair.guest, Some(kicklab_model::Party::C));
    let gaps: Vec<&str> = trace.gaps.iter().map(|g| g.estimate).collect();
    assert!(
        gaps.contains(&"kick_c_ns") && gaps.contains(&"wake_p_ns"),
        "{gaps:?}"
    );
}
