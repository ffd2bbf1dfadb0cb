//! `kicklab trace`: the JSON contract on a recorded trace, and every bad
//! trace refused in one line naming what is missing, exit 2.

use std::io::Write;
use std::path::PathBuf;

use super::{kicklab, tmp};

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../trace/tests/data")
        .join(name)
}

fn text(name: &str) -> String {
    let bytes = std::fs::read(data(name)).unwrap();
    let mut s = String::new();
    std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut s).unwrap();
    s
}

/// Runs `trace FILE ARGS --json`, checks it succeeded, and parses its
/// output.
fn trace_json(file: &str, args: &[&str]) -> serde_json::Value {
    let path = data(file);
    let mut all = vec!["trace", path.to_str().unwrap()];
    all.extend_from_slice(args);
    all.push("--json");
    let out = kicklab(&all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Runs `trace` and checks it refused in one line (exit 2) saying `what`.
fn refused(args: &[&str], what: &str) {
    let out = kicklab(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    assert!(err.contains(what), "{args:?}: {err}");
}

#[test]
fn trace_json_contract() {
    let file = data("kvm-tx.txt.gz");
    let v = trace_json("kvm-tx.txt.gz", &["--messages", "22000"]);
    for k in [
        "producer",
        "consumer",
        "messages",
        "T_ns",
        "E_ns",
        "E_p_ns",
        "E_c_ns",
        "kick_p_ns",
        "kick_c_ns",
        "visible_p_ns",
        "visible_c_ns",
        "wake_p_ns",
        "wake_c_ns",
        "notifications_p",
        "notifications_c",
        "sleeps_p",
        "sleeps_c",
        "observed",
        "regime",
        "predicted",
        "sources",
        "events_used",
        "missing",
        "profile",
        "advice",
        "window_ns",
        "format",
        "resolution_ns",
    ] {
        assert!(v.get(k).is_some(), "no {k} in {v}");
    }
    assert_eq!(v["producer"]["comm"], "kicklab-vcpu");
    assert_eq!(v["guest"], "P");
    assert_eq!(v["observed"], "C");
    assert_eq!(v["regime"], "FC");
    assert_eq!(v["profile"]["backend"], "kvm");
    assert!(v["advice"]["knobs"]
        .as_array()
        .is_some_and(|k| !k.is_empty()));
    // The profile it saves is one --profile takes.
    let dir = tmp("trace-save");
    std::fs::create_dir_all(&dir).unwrap();
    let saved = dir.join("p.json");
    let out = kicklab(&[
        "trace",
        file.to_str().unwrap(),
        "--messages",
        "22000",
        "--for",
        "none",
        "--save",
        saved.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = kicklab(&[
        "model",
        "--profile",
        saved.to_str().unwrap(),
        "--wp",
        "2us",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_traced_pair_is_drawn_where_the_trace_times_it() {
    let dir = tmp("trace-timeline");
    std::fs::create_dir_all(&dir).unwrap();
    let svg = dir.join("pair.svg");
    let args = |file: &str| {
        vec![
            "trace".to_string(),
            data(file).to_str().unwrap().to_string(),
            "--messages".into(),
            "50000".into(),
            "--producer".into(),
            "kicklab-P".into(),
            "--for".into(),
            "none".into(),
            "--timeline".into(),
            svg.to_str().unwrap().to_string(),
        ]
    };
    let a = args("futex.txt.gz");
    let out = kicklab(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(
        drawn.starts_with("<svg") && drawn.contains("as traced: P"),
        "{drawn}"
    );
    // The futex pair's own kicks are timed: drawn; a guest's are not.
    assert!(drawn.contains("kick (N)") && !drawn.contains("not timed"));
    // Too short a trace: nothing drawn, the file not written, exit 1.
    let short: String = text("futex.txt.gz")
        .lines()
        .take(40)
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(dir.join("short.txt"), short).unwrap();
    std::fs::remove_file(&svg).unwrap();
    let out = kicklab(&[
        "trace",
        dir.join("short.txt").to_str().unwrap(),
        "--messages",
        "10",
        "--producer",
        "kicklab-P",
        "--for",
        "none",
        "--timeline",
        svg.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(!svg.exists(), "{err}");
    // A folder that is not there: refused before the trace is read.
    refused(
        &[
            "trace",
            data("futex.txt.gz").to_str().unwrap(),
            "--messages",
            "10",
            "--timeline",
            dir.join("no/such/pair.svg").to_str().unwrap(),
        ],
        "--timeline",
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_traces_are_refused_in_one_line() {
    let dir = tmp("trace-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let at = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let write = |name: &str, bytes: &[u8]| std::fs::write(dir.join(name), bytes).unwrap();
    let tx = text("kvm-tx.txt.gz");

    write("foreign.txt", b"hello\nthis is not a trace\n");
    refused(
        &["trace", &at("foreign.txt"), "--messages", "1"],
        "no line is an event",
    );
    refused(
        &["trace", &at("absent.txt"), "--messages", "1"],
        "absent.txt",
    );

    // Cut short inside the compressed stream.
    let gz = std::fs::read(data("kvm-tx.txt.gz")).unwrap();
    write("cut.txt.gz", &gz[..gz.len() / 2]);
    refused(
        &["trace", &at("cut.txt.gz"), "--messages", "1"],
        "cut.txt.gz",
    );

    // The scheduler's events left out.
    let no_sched: String = tx
        .lines()
        .filter(|l| !l.contains("sched:"))
        .map(|l| format!("{l}\n"))
        .collect();
    write("no-sched.txt", no_sched.as_bytes());
    refused(
        &["trace", &at("no-sched.txt"), "--messages", "1"],
        "sched:sched_switch",
    );

    // Two VMs in one trace.
    let mut two = tx.clone();
    two.push_str(&text("kvm-rx.txt.gz"));
    write("two.txt", two.as_bytes());
    refused(
        &["trace", &at("two.txt"), "--messages", "1"],
        "--producer and --consumer",
    );

    // No message count; a pair named twice; a name no thread has.
    write("tx.txt", tx.as_bytes());
    refused(&["trace", &at("tx.txt")], "--messages");
    refused(
        &[
            "trace",
            &at("tx.txt"),
            "--messages",
            "1",
            "--producer",
            "kicklab-host",
            "--consumer",
            "kicklab-host",
        ],
        "same thread",
    );
    refused(
        &[
            "trace",
            &at("tx.txt"),
            "--messages",
            "1",
            "--producer",
            "nobody",
        ],
        "no thread named `nobody`",
    );
    refused(&["trace", &at("tx.txt"), "--messages", "0"], "--messages");
    refused(&["trace", &at("tx.txt"), "--rate", "1e30"], "--rate");
    // Two outputs into one file: the second would replace the first.
    refused(
        &[
            "trace",
            &at("tx.txt"),
            "--messages",
            "22000",
            "--save",
            &at("both.out"),
            "--timeline",
            &at("both.out"),
        ],
        "is also the file of --save",
    );
    assert!(!dir.join("both.out").exists());
    // A rate that gives less than one message in the traced window.
    refused(
        &["trace", &at("tx.txt"), "--rate", "1e-300"],
        "--rate: 1e-300 messages a second is less than one message in the traced window",
    );

    // More messages than one a nanosecond of the traced window.
    refused(
        &["trace", &at("tx.txt"), "--messages", "18446744073709551615"],
        "--messages: 18446744073709551615 messages in the traced window",
    );
    // One time stamp moved out by hours: the cost it implies is the
    // trace's fault, named as the file, not as a flag trace lacks.
    let futex = text("futex.txt.gz");
    let mut moved = false;
    let jumped: String = futex
        .lines()
        .map(|l| {
            if !moved && l.contains("kicklab-P") && l.contains("sys_exit_futex") {
                moved = true;
                let stamp = l.split_whitespace().nth(3).unwrap();
                format!("{}\n", l.replacen(stamp, "9999999999.000000000:", 1))
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    assert!(moved);
    write("jumped.txt", jumped.as_bytes());
    refused(
        &[
            "trace",
            &at("jumped.txt"),
            "--messages",
            "55000",
            "--producer",
            "kicklab-P",
        ],
        "trace <FILE>: ",
    );

    // A line of a megabyte and bytes that are not UTF-8 are skipped, not
    // fatal.
    let mut f = std::fs::File::create(dir.join("odd.txt")).unwrap();
    f.write_all(&vec![b'x'; 1 << 20]).unwrap();
    f.write_all(b"\n\xff\xfe not text\n").unwrap();
    f.write_all(tx.as_bytes()).unwrap();
    drop(f);
    let out = kicklab(&[
        "trace",
        &at("odd.txt"),
        "--messages",
        "22000",
        "--for",
        "none",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_dir_all(dir).unwrap();
}

/// Where the trace's costs are beyond what advice searches (the ftrace
/// recording's producer wakes 0.6 ms after its kick), the trace's findings
/// and profile still come out, and the missing advice says why.
#[test]
fn costs_advice_cannot_search_leave_the_trace_standing() {
    let dir = tmp("trace-no-advice");
    std::fs::create_dir_all(&dir).unwrap();
    let saved = dir.join("p.json");
    let v = trace_json(
        "futex-ftrace.txt.gz",
        &[
            "--messages",
            "55000",
            "--producer",
            "kicklab-P",
            "--save",
            saved.to_str().unwrap(),
        ],
    );
    assert!(v["advice"].is_null(), "{v}");
    let why = v["advice_skipped"].as_str().unwrap();
    assert!(
        why.starts_with("no advice for the costs this trace implies: S_P"),
        "{why}"
    );
    assert!(v["T_ns"].as_f64().unwrap() > 0.0);
    assert!(saved.exists());
    // The text says it after the findings.
    let out = kicklab(&[
        "trace",
        data("futex-ftrace.txt.gz").to_str().unwrap(),
        "--messages",
        "55000",
        "--producer",
        "kicklab-P",
    ]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("no advice for the costs this trace implies"),
        "{text}"
    );
    // With advice not asked for, nothing is said of it.
    let v = trace_json(
        "futex.txt.gz",
        &[
            "--messages",
            "55000",
            "--producer",
            "kicklab-P",
            "--for",
            "none",
        ],
    );
    assert!(v.get("advice_skipped").is_none(), "{v}");
    std::fs::remove_dir_all(dir).unwrap();
}
