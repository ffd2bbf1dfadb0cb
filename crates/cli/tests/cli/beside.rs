//! Runs beside runs: a real pair with two busy processes and another
//! kicklab run on the same CPUs finishes (flagged disturbed) or is refused
//! in one line, never stopped as a false hang.

use std::process::{Child, Command, Stdio};

use super::{kicklab, tmp};

fn busy() -> Child {
    // On the CPUs the pair pins (0 and 1), where taskset is there.
    let pinned = Command::new("taskset").arg("-V").output().is_ok();
    let mut c = if pinned {
        let mut c = Command::new("taskset");
        c.args(["-c", "0,1", "sh"]);
        c
    } else {
        Command::new("sh")
    };
    c.args(["-c", "while :; do :; done"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn a busy loop")
}

fn kvm_usable() -> bool {
    let out = kicklab(&["run", "--backend", "kvm", "--messages", "0"]);
    !String::from_utf8_lossy(&out.stderr).contains("kvm is not usable here")
}

#[test]
#[ignore = "measures: a real run beside busy processes (CI runs it after the test command)"]
fn a_run_beside_busy_processes_and_another_run_finishes_flagged() {
    let dir = tmp("beside");
    std::fs::create_dir_all(&dir).unwrap();
    let mut backends = vec![("futex", vec![])];
    if kvm_usable() {
        backends.push(("kvm", vec!["--direction", "tx"]));
    } else {
        eprintln!("kvm is not usable here: the kvm half skips");
    }
    for (be, extra) in backends {
        let profile = dir.join(format!("{be}.json"));
        let mut cal = vec!["calibrate", "--backend", be];
        cal.extend(&extra);
        cal.extend([
            "--samples",
            "50",
            "--rounds",
            "1",
            "--gaps",
            "none",
            "--overhead-runs",
            "1",
            "--save",
            profile.to_str().unwrap(),
        ]);
        let c = kicklab(&cal);
        assert!(c.status.success(), "{}", String::from_utf8_lossy(&c.stderr));
        for i in 0..3 {
            let mut args = vec!["run", "--backend", be];
            args.extend(&extra);
            args.extend([
                "--wp",
                "3000ns",
                "--wc",
                "1.1us",
                "--messages",
                "50000",
                "--profile",
                profile.to_str().unwrap(),
                "--json",
                "--strategy",
            ]);
            let mut hogs = [busy(), busy()];
            let mut other_args = args.clone();
            other_args.push("poll");
            let other = Command::new(env!("CARGO_BIN_EXE_kicklab"))
                .args(&other_args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            args.push("adaptive:latency=100us");
            let mine = kicklab(&args);
            let other = other.wait_with_output().unwrap();
            for h in &mut hogs {
                let _ = h.kill();
                let _ = h.wait();
            }
            for (who, out) in [("this run", &mine), ("the other run", &other)] {
                let err = String::from_utf8_lossy(&out.stderr);
                assert!(
                    out.status.success(),
                    "{be} round {i}, {who}: exit {:?}: {err}",
                    out.status.code()
                );
                assert!(!err.contains("hang"), "{be} round {i}, {who}: {err}");
                let v: serde_json::Value =
                    serde_json::from_slice(&out.stdout).expect("one JSON object");
                let warnings = v["warnings"].as_array().map_or(0, Vec::len);
                assert!(warnings > 0, "{be} round {i}, {who}: not flagged: {v}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
