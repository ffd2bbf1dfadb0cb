//! The `kicklab` binary end to end: the JSON contract, bad input, files.

use std::path::PathBuf;
use std::process::{Command, Output};

mod beside;
mod flag_table;
mod outputs;
mod trace;

fn kicklab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kicklab"))
        .args(args)
        .output()
        .expect("run kicklab")
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = kicklab(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.trim().lines().count(),
        1,
        "one JSON object on one line: {text}"
    );
    serde_json::from_str(&text).unwrap()
}

/// Runs `args`, which must be refused: exit code 2, one line on stderr
/// that contains `needle`, nothing on stdout. Returns that line.
fn refused(args: &[&str], needle: &str) -> String {
    let out = kicklab(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(
        err.trim_end().lines().count(),
        1,
        "{args:?}: one line, got {err}"
    );
    assert!(err.contains(needle), "{args:?}: {err} lacks {needle}");
    assert!(out.stdout.is_empty(), "{args:?}: no output on stdout");
    err
}

/// A quick calibration of `backend` (`futex`, `eventfd`, `pipe`; `kvm`
/// with its `direction`, which other backends leave out), made once per test binary and shared by the
/// long cases that run many pairs: a run given no `--profile` calibrates
/// first, seconds each time. What those cases check (every message
/// moved, the counts, what each strategy does) needs this machine's
/// costs, not precise ones; a run without a profile is still checked
/// (`outputs`' commands).
fn shared_profile(backend: &str, direction: &str) -> String {
    use std::collections::BTreeMap;
    use std::sync::{Mutex, PoisonError};
    static MADE: Mutex<BTreeMap<String, String>> = Mutex::new(BTreeMap::new());
    let key = format!("{backend}-{direction}");
    let mut made = MADE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(path) = made.get(&key) {
        return path.clone();
    }
    let dir = tmp(&format!("profile-{key}"));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("profile.json").to_str().unwrap().to_string();
    let mut args = vec!["calibrate", "--backend", backend];
    if backend == "kvm" {
        args.extend(["--direction", direction]);
    }
    args.extend(["--samples", "50", "--rounds", "1", "--save", &path]);
    let out = kicklab(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    made.insert(key, path.clone());
    path
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("kicklab-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn model_json_contract() {
    let v = json(&["model", "--wp", "2us", "--json"]);
    assert_eq!(v["regime"], "FC");
    assert_eq!(v["m"], 1);
    assert!((v["T_ns"].as_f64().unwrap() - 4400.0).abs() < 1e-9);
    assert!((v["E_ns"].as_f64().unwrap() - 5700.0).abs() < 1e-9);
    let v = json(&["model", "--mode", "poll", "--json"]);
    assert_eq!(v["regime"], "GP");
    assert_eq!(v["T_ns"], 1100.0);
    assert_eq!(v["E_ns"], 2200.0);
    assert!(v["m"].is_null());
}

#[test]
fn sim_json_contract() {
    let v = json(&["sim", "--messages", "20000", "--json"]);
    for key in [
        "T_ns",
        "E_ns",
        "messages",
        "notifications_p",
        "notifications_c",
    ] {
        assert!(v[key].is_number(), "{key} missing: {v}");
    }
    for key in ["p50", "p99", "max"] {
        assert!(
            v["latency_ns"][key].as_f64().unwrap() > 0.0,
            "latency {key}: {v}"
        );
    }
    assert_eq!(v["predicted"]["regime"], "FP");
    let ratio = v["T_ns"].as_f64().unwrap() / v["predicted"]["T_ns"].as_f64().unwrap();
    assert!((ratio - 1.0).abs() < 1e-9, "sim/model {ratio}");
    // Distributions, spin mode and per-party modes are accepted.
    let v = json(&[
        "sim",
        "--wp",
        "exp:1us",
        "--wc",
        "uniform:1us,1.2us",
        "--mode",
        "spin:2us",
        "--messages",
        "5000",
        "--json",
    ]);
    assert!(v["T_ns"].as_f64().unwrap() > 0.0);
    assert!(v["predicted"].is_null());
    let v = json(&[
        "sim",
        "--mode-p",
        "poll",
        "--mode-c",
        "notify",
        "--messages",
        "5000",
        "--json",
    ]);
    assert_eq!(v["mode_p"], "poll");
    assert_eq!(v["sleeps_p"], 0);
    // The compound workloads too.
    let v = json(&[
        "sim",
        "--wp",
        "phases:0.5us@500+exp:3us@500",
        "--wc",
        "mix:0.01:1us+50us",
        "--messages",
        "5000",
        "--json",
    ]);
    assert!(v["T_ns"].as_f64().unwrap() > 0.0);
}

#[test]
fn costs_of_a_quarter_hour_run_and_their_sums_print_whole() {
    // 2000 messages at a notification cost of 1000 s: the latencies'
    // sum passes 2^64 ps, which JSON holds as a double.
    let args = ["sim", "--messages", "2000", "--nc", "1000s", "--vc", "1s"];
    let out = kicklab(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&[&args[..], &["--json"]].concat());
    let sum = v["totals"]["latency_sum_ps"].as_f64().unwrap();
    assert!(sum > 1.8e19, "{sum}");
    assert!(v["totals"]["consumed"].as_u64().unwrap() >= 2000);
}

#[test]
fn kick_visibility_flags_reach_model_and_sim() {
    // The KVM pair of docs/model.md ("Bistability"): a kick seen half-way through it.
    let pair = [
        "--wp", "0.6us", "--np", "8.36us", "--vp", "4.22us", "--sp", "13.2us", "--nc", "1.69us",
        "--sc", "1.11us",
    ];
    let with = |extra: &[&str]| {
        let mut args = vec![extra[0]];
        args.extend_from_slice(&pair);
        args.extend_from_slice(&extra[1..]);
        json(&args)
    };
    let m = with(&["model", "--json"]);
    assert_eq!(m["regime"], "EWC");
    assert!((m["T_ns"].as_f64().unwrap() - 8960.0).abs() < 1e-6, "{m}");
    assert_eq!(m["other"]["regime"], "FP");
    for (start, want) in [("empty", &m["T_ns"]), ("full", &m["other"]["T_ns"])] {
        let s = with(&["sim", "--start", start, "--messages", "20000", "--json"]);
        let ratio = s["T_ns"].as_f64().unwrap() / want.as_f64().unwrap();
        assert!((ratio - 1.0).abs() < 1e-9, "{start}: sim/model {ratio}");
        assert!(
            (s["predicted"]["T_ns"].as_f64().unwrap() / want.as_f64().unwrap() - 1.0).abs() < 1e-12
        );
    }
    // V = N is the default: --vp equal to --np changes nothing.
    let a = json(&["model", "--json"]);
    let b = json(&["model", "--vp", "2.4us", "--vc", "0.2us", "--json"]);
    assert_eq!(a["T_ns"], b["T_ns"]);
    assert!(a.get("other").is_none() && b.get("other").is_none());
}

/// A flag the combination leaves unused is named on stderr with the
/// reason, and the command still runs; the same flag where it is used
/// gets no note.
#[test]
fn flags_a_combination_leaves_unused_are_noted_and_the_command_runs() {
    let figures = tmp("unused-figures");
    let figures = figures.to_str().unwrap();
    let cases: &[(&[&str], &[&str])] = &[
        (&["sim", "--latency", "50us"], &["--latency"]),
        (
            &[
                "sim",
                "--mode",
                "adaptive:latency=20us",
                "--latency",
                "50us",
            ],
            &["--latency"],
        ),
        (&["sim", "--mode", "adaptive", "--latency", "50us"], &[]),
        (&["sim", "--mode-p", "adaptive", "--latency", "50us"], &[]),
        (&["sim", "--flush", "timer:5us"], &["--flush"]),
        (&["sim", "--batch", "4", "--flush", "timer:5us"], &[]),
        (
            &[
                "sim", "--mode", "poll", "--mode-p", "notify", "--mode-c", "notify",
            ],
            &["--strategy "],
        ),
        (&["sim", "--mode", "poll", "--mode-p", "notify"], &[]),
        (
            &[
                "qos",
                "--backend",
                "model",
                "--seconds",
                "5",
                "--seed",
                "3",
                "--police",
                "post",
                "--out",
                "x",
            ],
            &["--seconds", "--seed", "--police", "--out"],
        ),
        (
            &[
                "qos",
                "--police",
                "post",
                "--limit",
                "2=300",
                "--seconds",
                "0.1",
            ],
            &[],
        ),
        (
            &[
                "qos",
                "--scale",
                "0.5",
                "--vm-core",
                "busy",
                "--seed",
                "2",
                "--seconds",
                "0.1",
            ],
            &["--scale", "--vm-core", "--seed"],
        ),
        (
            &[
                "qos",
                "--arrivals",
                "poisson",
                "--seed",
                "2",
                "--seconds",
                "0.1",
            ],
            &[],
        ),
        (
            &[
                "qos",
                "--figures",
                "--vms",
                "3",
                "--kick",
                "1us",
                "--seconds",
                "0.02",
                "--out",
                figures,
            ],
            &["--vms", "--kick"],
        ),
    ];
    let polling: &[(&[&str], &[&str])] = &[
        (
            &["model", "--mode", "poll", "--np", "9us", "--vp", "1us"],
            &["--np", "--vp"],
        ),
        (
            &["sim", "--mode", "poll", "--sc", "2us", "--messages", "1000"],
            &["--sc"],
        ),
        (
            &[
                "sim",
                "--mode-p",
                "poll",
                "--mode-c",
                "notify",
                "--np",
                "9us",
                "--messages",
                "1000",
            ],
            &[],
        ),
    ];
    for (args, named) in cases.iter().chain(polling) {
        let out = kicklab(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {err}");
        let notes: Vec<&str> = err.lines().filter(|l| l.starts_with("note: ")).collect();
        assert_eq!(notes.len(), named.len(), "{args:?}: {err}");
        for (note, flag) in notes.iter().zip(named.iter()) {
            assert!(
                note.starts_with(&format!("note: {flag}")) && note.contains(" was ignored: "),
                "{args:?}: {note} does not name {flag}"
            );
        }
    }
    let _ = std::fs::remove_dir_all(figures);
}

#[test]
fn bad_input_is_one_line_naming_the_flag_and_exit_2() {
    let cases: &[(&[&str], &str)] = &[
        (&["model", "--kp", "300"], "--kp"),
        (&["model", "--kc", "0"], "--kc"),
        (&["model", "--len", "0"], "--len"),
        (&["sim", "--wp", "-1us"], "--wp"),
        (&["sim", "--nc", "NaN"], "--nc"),
        (&["model", "--vp", "3us"], "--vp"),
        (&["sim", "--nc", "1us", "--vc", "2us"], "--vc"),
        (&["sim", "--start", "half"], "--start"),
        (&["sim", "--sp", "3parsec"], "--sp"),
        (&["sim", "--wc", "gamma:1us"], "--wc"),
        (&["sim", "--sc", "uniform:2us,1us"], "--sc"),
        (&["sim", "--wp", "phases:1us@1+2us@0"], "--wp"),
        (&["sim", "--wp", "phases:1us+2us@1"], "--wp"),
        (
            &["sim", "--wp", "phases:1us@1+1us@1+1us@1+1us@1+1us@1"],
            "--wp",
        ),
        (&["sim", "--wp", "phases:mix:0.5:1us+2us@1+1us@1"], "--wp"),
        (&["sim", "--wc", "mix:1.5:1us+2us"], "--wc"),
        (&["sim", "--wc", "mix:0.5:1us"], "--wc"),
        (&["sim", "--mode", "sometimes"], "--strategy"),
        (&["sim", "--messages", "0"], "--messages"),
        (&["model", "--mode", "spin:1us"], "--strategy"),
        (&["sweep", "--vary", "wp=1us..3us:0"], "--vary"),
        (&["sweep", "--vary", "zz=1us..3us:4"], "--vary"),
        (&["sweep", "--vary", "kp=1..300:3"], "--vary"),
    ];
    for (args, flag) in cases {
        refused(args, flag);
    }
}

#[test]
fn a_distribution_for_the_swept_cost_keeps_its_shape_and_takes_each_points_mean() {
    // With constant costs the simulator is the closed form exactly; with
    // W_P exponential at each point's mean it is not (the model takes the
    // mean), so the shape was kept and the mean set.
    let dir = tmp("sweep-shape");
    let d = dir.to_str().unwrap();
    let rows = |wp: &[&str]| {
        let mut args = vec![
            "sweep",
            "--vary",
            "wp=1.5us..2us:2",
            "--messages",
            "20000",
            "--force",
            "--out",
            d,
        ];
        args.extend_from_slice(wp);
        let out = kicklab(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
        csv.lines()
            .skip(1)
            .map(|l| {
                let f: Vec<f64> = l.split(',').filter_map(|v| v.parse().ok()).collect();
                // wp_ns, then (after the regime) m, T_model_ns, E_model_ns, T_sim_ns.
                (f[0], f[2], f[4])
            })
            .collect::<Vec<_>>()
    };
    let constant = rows(&[]);
    let exponential = rows(&["--wp", "exp:1us"]);
    assert_eq!(constant.len(), 2);
    for (&(x, t_model, t_sim), &(x_exp, t_model_exp, t_sim_exp)) in
        constant.iter().zip(&exponential)
    {
        assert_eq!(x, x_exp, "the sweep's means");
        assert_eq!(t_model, t_model_exp, "the model takes the mean");
        assert!(
            (t_sim - t_model).abs() <= 1e-6 * t_model,
            "constant: sim {t_sim}, model {t_model}"
        );
        assert!(
            (t_sim_exp - t_model).abs() > 0.01 * t_model,
            "exponential work at {x}: sim {t_sim_exp}, model {t_model}"
        );
    }
    // A constant would be ignored: refused.
    let out = kicklab(&[
        "sweep",
        "--vary",
        "wp=1.5us..2us:2",
        "--wp",
        "3us",
        "--out",
        d,
    ]);
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sweep_writes_csv_and_plots_and_nothing_on_bad_input() {
    let dir = tmp("sweep");
    let d = dir.to_str().unwrap();
    let out = kicklab(&[
        "sweep",
        "--vary",
        "wp=0.5us..2us:7",
        "--messages",
        "3000",
        "--out",
        d,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(dir.join("sweep.csv")).unwrap();
    assert_eq!(csv.lines().count(), 8);
    for f in ["T.svg", "E.svg", "index.html"] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    std::fs::remove_dir_all(&dir).unwrap();

    let bad = tmp("sweep-bad");
    let out = kicklab(&[
        "sweep",
        "--vary",
        "kp=1..300:3",
        "--out",
        bad.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!bad.exists(), "no partial output on bad input");
}

/// Runs `kicklab report` with `args` into a fresh folder and checks that
/// its page holds every one of `needles`.
fn report_holds(name: &str, args: &[&str], needles: &[&str]) {
    let dir = tmp(name);
    let mut all = vec!["report"];
    all.extend_from_slice(args);
    all.extend(["--out", dir.to_str().unwrap()]);
    let out = kicklab(&all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = std::fs::read_to_string(dir.join("index.html")).unwrap();
    for needle in needles {
        assert!(html.contains(needle), "report lacks {needle}");
    }
    commands_parse(&html);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every whole command the page prints (`<code>kicklab ...</code>`, each
/// of a `;`-separated list) parses: `kicklab <its arguments> --help` exits
/// 0 only where every flag before `--help` exists and takes its value.
/// Templates (FLAGS, `a|b`, `exp:..`, `...`) are left out.
fn commands_parse(html: &str) {
    let mut checked = 0;
    for code in html.split("<code>").skip(1) {
        let Some((code, _)) = code.split_once("</code>") else {
            continue;
        };
        for cmd in code.split("; ") {
            let Some(args) = cmd.trim().strip_prefix("kicklab ") else {
                continue;
            };
            if args.contains(['|', '<', '&'])
                || args.contains("...")
                || args.contains(":..")
                || args.contains("FLAGS")
            {
                continue;
            }
            let mut argv: Vec<&str> = args.split_whitespace().collect();
            argv.push("--help");
            let out = kicklab(&argv);
            assert!(
                out.status.success(),
                "the page prints `{cmd}`, which does not parse: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            checked += 1;
        }
    }
    assert!(checked > 0, "the page printed no command to check");
}

#[test]
fn report_writes_one_page() {
    report_holds(
        "report",
        &["--no-testbed", "--points", "6", "--messages", "2000"],
        &[
            "Fig. 2",
            "Fig. 3",
            "The regimes",
            "Closed forms",
            "<svg",
            "Explorer: the model and the simulator, live",
            "Idle-with-timeout at scale, simulated",
            "window.kicklabCharts",
        ],
    );
}

#[test]
#[ignore = "measures: about 3 minutes of real runs (CI runs it after the test command)"]
fn report_with_the_testbed_writes_its_measured_sections() {
    report_holds(
        "report-testbed",
        &[
            "--points",
            "6",
            "--messages",
            "2000",
            "--real-messages",
            "6000",
            "--repeat",
            "2",
        ],
        &[
            "Fig. 2",
            "Calibrated costs of this machine",
            "Model vs simulator vs measurement (futex)",
            "the median of 3 runs per point, bars from the lowest to the highest",
            "Explorer: the model and the simulator, live",
            "window.kicklabCharts",
        ],
    );
}

#[test]
fn help_teaches() {
    let out = kicklab(&["sim", "--help"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "--wp",
        "exp:1us",
        "spin:<B>",
        "adaptive[:latency=<D>,check=on|off]",
        "--latency",
        "phases:",
        "mix:",
        "--messages",
        "--bench",
    ] {
        assert!(text.contains(needle), "sim --help lacks {needle}");
    }
}

#[test]
fn calibrate_saves_a_profile_that_model_and_sim_load() {
    let dir = tmp("profile");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("futex.json");
    let v = json(&[
        "calibrate",
        "--backend",
        "futex",
        "--samples",
        "50",
        "--rounds",
        "1",
        "--save",
        file.to_str().unwrap(),
        "--json",
    ]);
    // The wall start-ups are signed (a notifier preempted inside its call
    // returns after the peer runs); what the model takes is not negative.
    for key in ["NP_ns", "NC_ns", "SP_V_ns", "SC_V_ns", "VP_ns", "VC_ns"] {
        assert!(v[key].as_f64().unwrap() >= 0.0, "{key}: {v}");
    }
    for key in ["SP_ns", "SC_ns"] {
        assert!(v[key].as_f64().unwrap().is_finite(), "{key}: {v}");
    }
    assert!(v["overhead_ns"].as_f64().unwrap() > 0.0, "{v}");
    // 200 naps timed on each party's CPU; a nap never ends before its
    // planned end.
    for (key, stat) in [("nap_p_ns", "nap_P"), ("nap_c_ns", "nap_C")] {
        assert!(v[key].as_f64().unwrap() >= 0.0, "{key}: {v}");
        assert_eq!(v["profile"][stat]["n"], 200, "{stat}: {v}");
    }
    let curve = v["idle_curve"].as_array().unwrap();
    assert_eq!(curve.len(), 7, "the default gaps: {v}");
    assert_eq!(curve[0]["gap_ns"], 5000.0);
    assert_eq!(curve[6]["gap_ns"], 500_000.0);
    assert_eq!(v["backend"], "futex");
    let m = json(&["model", "--profile", file.to_str().unwrap(), "--json"]);
    // The FC or FP point again with each wake-up's margin drawn per kick,
    // with the spread of the calibrated S between p10 and p90.
    let sd = |s: &str| {
        let q = &v["profile"][s];
        (q["p90_ns"].as_f64().unwrap() - q["p10_ns"].as_f64().unwrap()) / 2.563_103
    };
    if matches!(m["regime"].as_str(), Some("FC" | "FP")) && sd("SP") > 0.0 && sd("SC") > 0.0 {
        assert_eq!(m["race"]["regime"], m["regime"], "{m}");
        for (i, s) in ["SP", "SC"].into_iter().enumerate() {
            let got = m["race"]["spread_ns"][i].as_f64().unwrap();
            assert!(
                (got - sd(s)).abs() < 1e-6 * sd(s),
                "{s}: {got} vs {}",
                sd(s)
            );
        }
        let t = m["race"]["T_ns"].as_f64().unwrap();
        assert!(t.is_finite() && t > 0.0, "{m}");
        assert!(m["race"]["round_messages"].as_f64().unwrap() >= 1.0, "{m}");
    } else {
        assert!(m.get("race").is_none(), "{m}");
    }
    // The model adds the ring's cost per message to W: in notify mode P's
    // as measured with C asleep, polling the polling pair's.
    let w_p = |m: &serde_json::Value| {
        m["params"]["w_p"]
            .as_str()
            .unwrap()
            .trim_end_matches("ns")
            .parse::<f64>()
            .unwrap()
    };
    let alone = v["profile"]["overhead_p"]["median_ns"].as_f64().unwrap();
    assert!(
        (w_p(&m) - 1000.0 - alone.max(0.0)).abs() < 1e-6,
        "W_P {}: 1 us plus P's overhead {alone}",
        w_p(&m)
    );
    let poll = json(&[
        "model",
        "--profile",
        file.to_str().unwrap(),
        "--mode",
        "poll",
        "--json",
    ]);
    // The polling pair's, its median too (a run taken off its CPU only
    // ever adds to a sample).
    let polling = v["profile"]["overhead"]["median_ns"].as_f64().unwrap();
    assert!(
        (w_p(&poll) - 1000.0 - polling.max(0.0)).abs() < 1e-6,
        "W_P {}: 1 us plus the polling pair's overhead {polling}",
        w_p(&poll)
    );
    let np = m["params"]["n_p"]
        .as_str()
        .unwrap()
        .trim_end_matches("ns")
        .parse::<f64>()
        .unwrap();
    // N as the reference runs met it, where calibration timed them (the
    // thread backends always do).
    let want = v["in_run"]["NP_ns"]
        .as_f64()
        .expect("futex times in-run costs");
    assert!(want > 0.0, "{v}");
    assert!(
        (np - want).abs() < 1e-6,
        "model took N_P from the profile's in-run costs"
    );
    // What a sleep cost each sleeper's CPU in those pairs: with thread CPU
    // clocks on both sides, timed for both.
    for party in ["P", "C"] {
        let cpu = v["in_run"][format!("sleep_{party}_cpu_ns")]
            .as_f64()
            .unwrap_or_else(|| panic!("futex times {party}'s CPU per sleep: {v}"));
        assert!(cpu.is_finite() && cpu.abs() < 1e6, "{party}: {cpu}");
    }
    // An explicit flag beats the profile.
    let m = json(&[
        "model",
        "--profile",
        file.to_str().unwrap(),
        "--np",
        "7us",
        "--json",
    ]);
    assert_eq!(m["params"]["n_p"], "7000ns");
    // The simulator takes the measured spread.
    let s = json(&[
        "sim",
        "--profile",
        file.to_str().unwrap(),
        "--messages",
        "5000",
        "--json",
    ]);
    assert!(s["T_ns"].as_f64().unwrap() > 1000.0);
    // The same profile with one value no calibration writes is refused,
    // naming the value, before anything runs.
    let text = std::fs::read_to_string(&file).unwrap();
    let good: serde_json::Value = serde_json::from_str(&text).unwrap();
    let tampered = |what: &str, f: &dyn Fn(&mut serde_json::Value)| {
        let mut p = good.clone();
        f(&mut p);
        let bad = dir.join(format!("{what}.json"));
        std::fs::write(&bad, p.to_string()).unwrap();
        let out = kicklab(&["model", "--profile", bad.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        assert!(
            err.starts_with("error: --profile: ") && err.contains(what),
            "{what}: {err}"
        );
    };
    tampered("NP.mean_ns", &|p| p["NP"]["mean_ns"] = (-5000.0).into());
    tampered("VP.mean_ns", &|p| p["VP"]["mean_ns"] = (-1e6).into());
    tampered("overhead.median_ns", &|p| {
        p["overhead"]["median_ns"] = 1e300.into();
    });
    tampered("idle_curve: at most 16", &|p| {
        let point = p["idle_curve"][0].clone();
        p["idle_curve"] = (1..=17)
            .map(|i| {
                let mut q = point.clone();
                q["gap_ns"] = (1000.0 * f64::from(i)).into();
                q
            })
            .collect();
    });
    tampered("idle_curve[1].gap_ns", &|p| {
        p["idle_curve"][1]["gap_ns"] = p["idle_curve"][0]["gap_ns"].clone();
    });
    // A ring cost of a second a message is within what a profile may hold,
    // but past what advise searches: advise blames the profile, not --wp.
    let mut p = good.clone();
    for stat in ["mean_ns", "median_ns", "p10_ns", "p90_ns"] {
        p["overhead"][stat] = 1e9.into();
    }
    let slow = dir.join("slow-ring.json");
    std::fs::write(&slow, p.to_string()).unwrap();
    let out = kicklab(&["advise", "--profile", slow.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: --profile: its ring cost per message (1s) added to W_P (1us)"),
        "{err}"
    );
    // One of an hour takes W past what any command takes: model and sim
    // blame the profile too (they named --wp, which was not given).
    let mut p = good.clone();
    for ring in ["overhead", "overhead_p", "overhead_c"] {
        if p[ring].is_object() {
            for stat in ["mean_ns", "median_ns", "p10_ns", "p90_ns"] {
                p[ring][stat] = 3.6e12.into();
            }
        }
    }
    let hour = dir.join("hour-ring.json");
    std::fs::write(&hour, p.to_string()).unwrap();
    for cmd in ["model", "sim"] {
        let out = kicklab(&[cmd, "--profile", hour.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
        assert!(
            err.starts_with(
                "error: --profile: its ring cost per message, added to W_P (1us), takes W_P out of range"
            ),
            "{cmd}: {err}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
#[ignore = "measures: real runs on every backend (CI runs it after the test command)"]
fn run_moves_every_message_on_every_backend() {
    for backend in ["futex", "eventfd", "pipe"] {
        let profile = shared_profile(backend, "tx");
        for strategy in ["notify", "poll", "spin:2us"] {
            let v = json(&[
                "run",
                "--backend",
                backend,
                "--profile",
                &profile,
                "--strategy",
                strategy,
                "--messages",
                "5000",
                "--wp",
                "0.5us",
                "--json",
            ]);
            assert_eq!(v["lost"], 0, "{backend} {strategy}");
            // Every run says whether it was disturbed, and why.
            assert!(v["disturbed"].is_boolean(), "{v}");
            assert_eq!(
                v["disturbed"].as_bool().unwrap(),
                !v["warnings"].as_array().unwrap().is_empty(),
                "{v}"
            );
            assert_eq!(v["duplicated_or_reordered"], 0, "{backend} {strategy}");
            assert_eq!(v["messages"], 5000);
            let t = v["T_ns"].as_f64().unwrap();
            assert!(
                t >= 1000.0,
                "{backend} {strategy}: T = {t} below W_C = 1.1 us minus noise"
            );
            if strategy != "spin:2us" {
                assert!(v["predicted"]["T_ns"].as_f64().unwrap() > 0.0);
            }
        }
    }
}

#[test]
fn validate_writes_its_chart() {
    let dir = tmp("validate");
    let out = kicklab(&[
        "validate",
        "--backend",
        "pipe",
        "--vary",
        "wp=0.5us..2us:3",
        "--messages",
        "3000",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("median error"), "{text}");
    for f in ["index.html", "validate.csv", "validate-pipe-T.svg"] {
        assert!(dir.join(f).is_file(), "{f}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `validate --json`: the contract's fields at every point of the sweep,
/// medians over repetitions with their range, and no files unless --out.
#[test]
fn validate_json_has_every_point() {
    let started = std::time::Instant::now();
    let dir = tmp("validate-json");
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kicklab"))
        .args([
            "validate",
            "--backend",
            "futex",
            "--vary",
            "wp=0.5us..2us:3",
            "--messages",
            "2000",
            "--repeat",
            "2",
            "--json",
        ])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(text.trim().lines().count(), 1, "one JSON object: {text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["backend"], "futex");
    assert!(
        v.get("direction").is_some_and(serde_json::Value::is_null),
        "{v}"
    );
    assert_eq!(v["repeat"], 2);
    let points = v["points"].as_array().unwrap();
    assert_eq!(points.len(), 3, "every point of the sweep");
    for p in points {
        for key in [
            "wp_ns",
            "T_model_ns",
            "T_sim_ns",
            "T_real_ns",
            "E_model_ns",
            "E_real_ns",
            "T_poll_model_ns",
            "T_poll_real_ns",
            "T_real_min_ns",
            "T_real_max_ns",
            "T_poll_real_min_ns",
            "T_poll_real_max_ns",
        ] {
            assert!(p[key].as_f64().is_some_and(|x| x > 0.0), "{key}: {p}");
        }
        assert!(p["regime"].is_string(), "{p}");
        assert!(p["disturbed"].is_boolean(), "{p}");
        // The run's own kicks and wake-ups: null or a time, and a time
        // where a side slept often (threads time them all).
        for (kick, wake, sleeps) in [
            ("kick_p_ns", "wake_c_ns", "sleeps_c"),
            ("kick_c_ns", "wake_p_ns", "sleeps_p"),
        ] {
            let often = p[sleeps].as_u64().unwrap() >= 100;
            for key in [kick, wake] {
                let x = &p[key];
                assert!(
                    x.is_null() || x.as_f64().is_some_and(|x| x > 0.0),
                    "{key}: {p}"
                );
                assert!(!often || !x.is_null(), "{key}: {p}");
            }
        }
        assert_eq!(p["repetitions"], 2, "{p}");
        assert!(p["tries"].as_u64().unwrap() >= 2, "{p}");
        let (lo, mid, hi) = (
            p["T_real_min_ns"].as_f64().unwrap(),
            p["T_real_ns"].as_f64().unwrap(),
            p["T_real_max_ns"].as_f64().unwrap(),
        );
        assert!(lo <= mid && mid <= hi, "median within the range: {p}");
        // Disturbed exactly when it says why.
        let warnings = p["warnings"].as_array().unwrap();
        assert_eq!(
            p["disturbed"].as_bool().unwrap(),
            !warnings.is_empty(),
            "{p}"
        );
        for w in warnings {
            assert!(w["kind"].is_string() && w["message"].is_string(), "{w}");
        }
    }
    let wps: Vec<f64> = points
        .iter()
        .map(|p| p["wp_ns"].as_f64().unwrap())
        .collect();
    assert_eq!(wps, [500.0, 1250.0, 2000.0]);
    assert!(
        v["summary"]["disturbed"].as_u64().unwrap() <= 3,
        "{}",
        v["summary"]
    );
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "--json without --out writes no files"
    );
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}

#[test]
fn unknown_backends_and_directions_are_refused_in_one_line() {
    for (args, flag) in [
        (
            &["calibrate", "--backend", "carrier-pigeon"][..],
            "--backend",
        ),
        (
            &["run", "--backend", "kvm", "--direction", "sideways"][..],
            "--direction",
        ),
        (
            &["pingpong", "--backend", "futex", "--idle", "nap"][..],
            "--idle",
        ),
    ] {
        let out = kicklab(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(flag), "{err}");
    }
}

#[test]
fn a_kvm_option_beside_another_backend_is_refused_even_at_its_default() {
    for (args, flag) in [
        (
            &["calibrate", "--backend", "futex", "--direction", "tx"][..],
            "--direction",
        ),
        (
            &["run", "--backend", "pipe", "--guest", "user"][..],
            "--guest",
        ),
        (
            &["pingpong", "--backend", "eventfd", "--halt-poll", "0"][..],
            "--halt-poll",
        ),
        (
            &["validate", "--backend", "futex", "--halt-poll", "10us"][..],
            "--halt-poll",
        ),
        (
            &["control", "--backend", "futex", "--direction", "tx"][..],
            "--direction",
        ),
        (&["control", "--direction", "rx"][..], "--direction"),
    ] {
        let err = refused(args, flag);
        assert!(err.contains("kvm"), "{args:?}: {err}");
    }
}

#[test]
fn pingpong_prints_the_contract_fields() {
    let v = json(&[
        "pingpong",
        "--backend",
        "futex",
        "--idle",
        "poll",
        "--messages",
        "2000",
        "--json",
    ]);
    for key in [
        "backend",
        "idle",
        "rate_per_s",
        "cpu_ns_per_msg",
        "messages",
    ] {
        assert!(v.get(key).is_some(), "{key} in {v}");
    }
    assert_eq!(v["idle"], "poll");
    assert!(v["rate_per_s"].as_f64().unwrap() > 0.0);
    // A strategy only KVM has is refused on threads, naming the flag.
    let out = kicklab(&["pingpong", "--backend", "futex", "--idle", "halt-poll:10us"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--idle"));
}

/// A run's counts with its warm-up (a tenth more messages) hold its
/// window's.
fn whole_run_holds_the_window(v: &serde_json::Value) {
    let (w, messages) = (&v["whole_run"], v["messages"].as_u64().unwrap());
    assert_eq!(w["messages"], messages + messages / 10, "{v}");
    for k in ["notifications_p", "notifications_c", "sleeps_p", "sleeps_c"] {
        assert!(w[k].as_u64().unwrap() >= v[k].as_u64().unwrap(), "{k}: {v}");
    }
}

/// Every strategy runs for real: `adaptive` on both threads, and one per
/// party; the run says how often each party slept (naps included) and the
/// messages' latency, and sets itself against the simulator where the
/// model has no closed form.
#[test]
#[ignore = "measures: real runs on every backend (CI runs it after the test command)"]
fn run_takes_every_strategy_and_reports_sleeps_and_latency() {
    let profile = shared_profile("futex", "tx");
    let v = json(&[
        "run",
        "--backend",
        "futex",
        "--profile",
        &profile,
        "--strategy",
        "adaptive",
        "--messages",
        "20000",
        "--json",
    ]);
    assert_eq!(v["lost"], 0, "{v}");
    assert_eq!(v["duplicated_or_reordered"], 0, "{v}");
    assert_eq!(v["strategy"], "adaptive", "{v}");
    assert_eq!(v["strategy_p"], "adaptive:latency=100us", "{v}");
    for k in ["sleeps_p", "sleeps_c", "naps_p", "naps_c"] {
        assert!(v[k].is_u64(), "{k}: {v}");
    }
    let l = &v["latency_ns"];
    let (p50, p99, max) = (
        l["p50"].as_f64().unwrap(),
        l["p99"].as_f64().unwrap(),
        l["max"].as_f64().unwrap(),
    );
    // Publish to release: at least C's work (W_C = 1.1 us).
    assert!(1000.0 < p50 && p50 <= p99 && p99 <= max, "{l}");
    assert_eq!(v["predicted"]["source"], "sim", "{v}");
    assert!(v["predicted"]["T_ns"].as_f64().unwrap() > 0.0, "{v}");
    assert!(
        v["predicted"]["latency_ns"]["p99"].as_f64().unwrap() > 0.0,
        "{v}"
    );

    let v = json(&[
        "run",
        "--backend",
        "futex",
        "--profile",
        &profile,
        "--strategy-p",
        "notify",
        "--strategy-c",
        "sleep:20us",
        "--latency",
        "50us",
        "--wp",
        "3us",
        "--messages",
        "5000",
        "--json",
    ]);
    assert_eq!(v["lost"], 0, "{v}");
    assert_eq!(v["strategy_c"], "sleep:20us", "{v}");
    // Both parties' flags replace --strategy, and they differ: no one
    // strategy to name (was the unused default, "notify").
    assert!(v["strategy"].is_null(), "{v}");
    // The consumer only naps (the faster one, it waits): never kicked.
    assert!(v["naps_c"].as_u64().unwrap() > 0, "{v}");
    assert_eq!(v["naps_c"], v["sleeps_c"], "{v}");
    assert_eq!(v["notifications_p"], 0, "{v}");
    whole_run_holds_the_window(&v);
    // The closed form covers notify and poll alike: the model then.
    let v = json(&[
        "run",
        "--backend",
        "futex",
        "--profile",
        &profile,
        "--strategy",
        "notify",
        "--messages",
        "5000",
        "--json",
    ]);
    assert_eq!(v["predicted"]["source"], "model", "{v}");
    assert!(v["latency_ns"]["p99"].as_f64().is_some(), "{v}");
}

#[test]
#[ignore = "measures: real runs on every backend (CI runs it after the test command)"]
fn kvm_runs_in_both_directions_where_there_is_kvm() {
    if let Err(why) = kicklab_testbed::kvm::available() {
        eprintln!("SKIPPED: no usable KVM here: {why}");
        return;
    }
    for dir in ["tx", "rx"] {
        let profile = shared_profile("kvm", dir);
        let v = json(&[
            "run",
            "--backend",
            "kvm",
            "--direction",
            dir,
            "--profile",
            &profile,
            "--messages",
            "5000",
            "--np",
            "10us",
            "--nc",
            "3us",
            "--sp",
            "20us",
            "--sc",
            "2us",
            "--json",
        ]);
        assert_eq!(v["backend"], "kvm", "{v}");
        assert_eq!(v["lost"], 0, "{v}");
        assert!(v["T_ns"].as_f64().unwrap() >= 1000.0, "{v}");
        // The user-mode guest relates its clock to the host's before and
        // after the run.
        assert!(v["clock_drift_ns"].as_f64().unwrap() >= 0.0, "{v}");
        whole_run_holds_the_window(&v);
        // Send combining: the guest combines in tx, the host in rx; the
        // prediction is the simulator's with the same batch and rule.
        let v = json(&[
            "run",
            "--backend",
            "kvm",
            "--direction",
            dir,
            "--profile",
            &profile,
            "--messages",
            "5000",
            "--wp",
            "2us",
            "--wc",
            "0.5us",
            "--batch",
            "8",
            "--flush",
            "on-interrupt",
            "--json",
        ]);
        assert_eq!(
            (v["batch"].as_u64(), v["flush"].as_str()),
            (Some(8), Some("on-interrupt")),
            "{v}"
        );
        assert_eq!(v["lost"], 0, "{v}");
        assert!(
            v["notifications_p"].as_u64().unwrap() * 8 <= 5000 + 8,
            "{v}"
        );
        assert_eq!(v["predicted"]["source"], "sim", "{v}");
        // Latency in both directions: from the guest's write stamps (tx)
        // or its done stamps (rx).
        assert!(v["latency_ns"]["p99"].is_number(), "{v}");
    }
    // The guest records its own kicks: a guest producer slower than the
    // host kicks it awake, and the drawing shows both.
    let dir = tmp("kvm-timeline");
    std::fs::create_dir_all(&dir).unwrap();
    draws_kicks_and_sleeps(
        &dir.join("pair.svg"),
        &[
            "--backend",
            "kvm",
            "--profile",
            &shared_profile("kvm", "tx"),
        ],
        "measured kvm pair",
    );
}

/// `kicklab run ARGS --wp 3us --messages 5000 --timeline SVG` succeeds and
/// draws the pair's kicks and sleeps under `title`.
fn draws_kicks_and_sleeps(svg: &std::path::Path, args: &[&str], title: &str) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.extend_from_slice(&[
        "--wp",
        "3us",
        "--messages",
        "5000",
        "--timeline",
        svg.to_str().unwrap(),
    ]);
    let out = kicklab(&all);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(svg).unwrap();
    assert!(text.starts_with("<svg") && text.contains(title), "{text}");
    assert!(
        text.contains("kick (N): ") && text.contains("sleep: "),
        "{text}"
    );
}

/// `run --timeline` draws the window's first kicks and sleeps as the
/// testbed recorded them: the notifying pair's kicks and sleeps are in
/// the drawing; a polling pair has none to draw (exit 1, no file).
#[test]
#[ignore = "measures: real runs on every backend (CI runs it after the test command)"]
fn run_draws_its_kicks_and_sleeps() {
    let dir = tmp("run-timeline");
    std::fs::create_dir_all(&dir).unwrap();
    let profile = shared_profile("futex", "tx");
    draws_kicks_and_sleeps(
        &dir.join("pair.svg"),
        &["--backend", "futex", "--profile", &profile],
        "measured futex pair",
    );
    let polled = dir.join("poll.svg");
    let out = kicklab(&[
        "run",
        "--backend",
        "futex",
        "--profile",
        &profile,
        "--strategy",
        "poll",
        "--messages",
        "20000",
        "--timeline",
        polled.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--timeline: "));
    assert!(!polled.exists());
}

/// The emulated guest keeps no record of its kicks and halts: refused
/// before anything runs.
#[test]
fn run_timeline_refuses_the_emulated_guest() {
    let out = kicklab(&[
        "run",
        "--backend",
        "kvm",
        "--guest",
        "emulated",
        "--timeline",
        "x.svg",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("kvm is not usable here") {
        return;
    }
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: --timeline: the emulated guest keeps no record"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
#[ignore = "measures: real runs on every backend (CI runs it after the test command)"]
fn run_send_combining_on_threads() {
    let profile = shared_profile("futex", "tx");
    for flush in ["full", "timer:20us", "on-interrupt"] {
        let v = json(&[
            "run",
            "--backend",
            "futex",
            "--profile",
            &profile,
            "--messages",
            "8000",
            "--wp",
            "2us",
            "--batch",
            "8",
            "--flush",
            flush,
            "--json",
        ]);
        assert_eq!(v["flush"], flush, "{v}");
        assert_eq!(v["lost"], 0, "{v}");
        // A fast consumer sleeps between batches: at most one kick per 8.
        assert!(
            v["notifications_p"].as_u64().unwrap() * 8 <= 8000 + 8,
            "{v}"
        );
        assert_eq!(v["predicted"]["source"], "sim", "{v}");
        // Latency counts from the write: the first of a batch waits for
        // seven more (the timer holds a 2 us message up to 20 us).
        assert!(v["latency_ns"]["max"].as_f64().unwrap() >= 14_000.0, "{v}");
    }
}

/// Inputs a user or a script will send, from the hardening list: each is
/// refused at once with one line naming the flag and exit code 2, before
/// any work is done.
#[test]
fn hostile_inputs_are_refused_naming_the_flag() {
    let cases: &[(&[&str], &str)] = &[
        // Durations beyond the picosecond clock's range (1h).
        (&["model", "--wp", "1e8s"], "--wp"),
        (&["sim", "--wp", "1e30s"], "--wp"),
        (
            &[
                "run",
                "--backend",
                "futex",
                "--wc",
                "1e7s",
                "--messages",
                "100",
            ],
            "--wc",
        ),
        (
            &["run", "--backend", "futex", "--strategy", "spin:1e30s"],
            "--strategy",
        ),
        (
            &["run", "--backend", "futex", "--halt-poll", "1e30s"],
            "--halt-poll",
        ),
        (
            &["calibrate", "--backend", "futex", "--gap", "1e30s"],
            "--gap",
        ),
        (
            &[
                "map",
                "--x",
                "len=1..16777217:3",
                "--y",
                "wp=1us..2us:2",
                "--messages",
                "100",
            ],
            "--x, --y: at len=16777217",
        ),
        (
            &["calibrate", "--backend", "futex", "--gaps", "5us,1e30s"],
            "--gaps",
        ),
        (
            &["calibrate", "--backend", "futex", "--gaps", "5us,0us"],
            "--gaps",
        ),
        (
            &["calibrate", "--backend", "futex", "--gaps", "5us,-1us"],
            "--gaps",
        ),
        (
            &["calibrate", "--backend", "futex", "--overhead-runs", "1000"],
            "--overhead-runs",
        ),
        (
            &["pingpong", "--backend", "futex", "--work", "1e30s"],
            "--work",
        ),
        (
            &["pingpong", "--backend", "futex", "--idle", "haltpoll:1e30s"],
            "--idle",
        ),
        // Sizes that pass a naive check and then abort on allocation.
        (&["sim", "--len", "4294967295"], "--len"),
        (
            &["run", "--backend", "futex", "--len", "4294967295"],
            "--len",
        ),
        (&["sweep", "--vary", "wp=1us..2us:4294967295"], "--vary"),
        (&["report", "--points", "4294967295"], "--points"),
        (
            &[
                "calibrate",
                "--backend",
                "futex",
                "--samples",
                "100000000000",
            ],
            "--samples",
        ),
        // Zero and negative counts, missing arguments.
        (&["report", "--real-messages", "0"], "--real-messages"),
        (
            &["run", "--backend", "futex", "--messages", "-1"],
            "--messages",
        ),
        (&["sim", "--seed", "-3"], "--seed"),
        (&["run"], "--backend"),
        (&["run", "--backend", "futex", "--batch", "0"], "--batch"),
        // Send combining: a batch above L, absurd or unknown flush rules.
        (&["run", "--backend", "futex", "--batch", "300"], "--batch"),
        (
            &[
                "run",
                "--backend",
                "futex",
                "--batch",
                "8",
                "--flush",
                "timer:0",
            ],
            "--flush",
        ),
        (
            &["run", "--backend", "futex", "--flush", "timer:1e30s"],
            "--flush",
        ),
        (
            &["run", "--backend", "futex", "--flush", "later"],
            "--flush",
        ),
        (&["sim", "--flush", "timer:2h"], "--flush"),
        (&["sim", "--flush", "timer:-1us"], "--flush"),
        (&["sim", "--messages", "18446744073709551615"], "--messages"),
        (&["sim", "--warmup", "18446744073709551615"], "--messages"),
        (
            &["pingpong", "--backend", "futex", "--work", "-1us"],
            "--work",
        ),
        (
            &["calibrate", "--backend", "futex", "--rounds", "0"],
            "--rounds",
        ),
        // Profiles that are a directory, missing, or not a profile.
        (&["model", "--profile", "/"], "--profile"),
        (
            &["model", "--profile", "/nonexistent/kicklab.json"],
            "--profile",
        ),
        (&["model", "--profile", "/proc/self/status"], "--profile"),
        // Output paths that cannot be written.
        (
            &[
                "calibrate",
                "--backend",
                "futex",
                "--save",
                "/proc/kicklab/f.json",
            ],
            "--save",
        ),
        (
            &["sweep", "--vary", "wp=1us..2us:3", "--out", "/proc/kicklab"],
            "--out",
        ),
        (
            &["validate", "--backend", "futex", "--out", "/proc/kicklab"],
            "--out",
        ),
        // Repetitions: none, or more than the cap.
        (
            &["validate", "--backend", "futex", "--repeat", "0"],
            "--repeat",
        ),
        (
            &["validate", "--backend", "futex", "--repeat", "1000"],
            "--repeat",
        ),
        (
            &["validate", "--backend", "futex", "--repeat", "-1"],
            "--repeat",
        ),
        (&["report", "--repeat", "0"], "--repeat"),
        // Work a simulation or a search would take hours over, refused
        // up front or within a fraction of a second.
        (
            &[
                "sim",
                "--messages",
                "1000",
                "--mode",
                "sleep:1ns",
                "--wp",
                "100ms",
            ],
            "--strategy",
        ),
        (
            &[
                "sim",
                "--mode-c",
                "defer:count=4294967295",
                "--wp",
                "72s",
                "--messages",
                "10",
            ],
            "--strategy",
        ),
        (&["advise", "--wp", "100ms"], "--wp"),
        (&["advise", "--sc", "1ms"], "--sc"),
        (
            &[
                "control",
                "--points",
                "1",
                "--workload",
                "mix",
                "--range",
                "73s..73s",
            ],
            "--workload",
        ),
        (&["qos", "--offered", "1e-300"], "--offered"),
        (&["qos", "--limit", "2=1e-300"], "--limit"),
        (&["scale", "--backend", "sim", "--slice", "1ns"], "--slice"),
        (&["scale", "--backend", "sim", "--timer", "1ns"], "--timer"),
        (&["sim", "--wp", "lognormal:10us,10"], "--wp"),
        // validate sweeps W_P only, over a bounded number of points.
        (
            &["validate", "--backend", "futex", "--vary", "np=1us..50us:2"],
            "--vary",
        ),
        (
            &[
                "validate",
                "--backend",
                "futex",
                "--vary",
                "wp=1us..2us:100000",
            ],
            "--vary",
        ),
        // Profiles that never end or are not files.
        (&["model", "--profile", "/dev/zero"], "--profile"),
        // Input that would be ignored or counted twice.
        (
            &["run", "--backend", "futex", "--halt-poll", "1s"],
            "--halt-poll",
        ),
        (
            &["validate", "--backend", "pipe", "--direction", "rx"],
            "--direction",
        ),
        (
            &["pingpong", "--backend", "futex", "--guest", "emulated"],
            "--guest",
        ),
        (&["control", "--workload", "const,const"], "--workload"),
        (
            &["control", "--points", "1", "--range", "1us..2us"],
            "--range",
        ),
        (
            &["sim", "--mode", "halt-poll:max=1us,max=2us"],
            "--strategy",
        ),
        (&["qos", "--scale", "NaN"], "--scale"),
        // A parameter that the subcommand sets itself, given anyway.
        (&["sweep", "--vary", "wp=1us..2us:3", "--wp", "5us"], "--wp"),
        (&["sweep", "--vary", "kc=1..4:4", "--kc", "2"], "--kc"),
        (&["sweep", "--vary", "kc=1..4:5"], "--vary"),
        (&["map", "--y", "len=2..9:20"], "--y"),
        (&["map", "--y", "np=1us..2us:3", "--np", "3us"], "--np"),
        (&["map", "--wc", "2us"], "--wc"),
        (&["validate", "--backend", "futex", "--wp", "2us"], "--wp"),
        (&["control", "--wp", "2us"], "--wp"),
        // 200 000 messages of an hour each.
        (
            &["run", "--backend", "futex", "--wp", "3600s"],
            "--messages",
        ),
        // A third dot would read TO as `.2us`.
        (&["sweep", "--vary", "wp=1us...2us:3"], "--vary"),
        (&["control", "--range", "0.1us...3us"], "--range"),
        (
            &["control", "--range", "1us..1us", "--points", "2"],
            "--range",
        ),
        (&["model", "--wp", "1e-300ns"], "--wp"),
        // The axes named, not --vary or --points.
        (
            &["map", "--x", "vp=1us..3us:3", "--y", "wc=1us..2us:2"],
            "--x, --y",
        ),
        (
            &["map", "--x", "wp=1us..3us:1000", "--y", "wc=1us..2us:1001"],
            "--x, --y",
        ),
        (&["sim", "--bench", "--messages", "2000"], "--messages"),
        // 4 L of warm-up for each candidate: minutes of search.
        (
            &["advise", "--len", "16777216", "--messages", "2000"],
            "--len",
        ),
        (&["advise", "--messages", "2"], "--messages"),
        (
            &["pingpong", "--backend", "futex", "--work", "3599s"],
            "--work",
        ),
        (&["qos", "--seconds", "0.000001"], "--seconds"),
        (&["qos", "--rate", "2=1", "--seconds", "1"], "--seconds"),
        (&["qos", "--rate", "1=100", "--rate", "1=200"], "--rate"),
        (&["qos", "--limit", "1=100,burst=1e30"], "--limit"),
        (&["qos", "--limit", "1=100,burst=1.5"], "--limit"),
        (&["scale", "--vms", "1,1"], "--vms"),
        (&["scale", "--seconds", "0.000000001"], "--seconds"),
        (&["flags", "--path", "bitmap,bitmap"], "--path"),
        (
            &["pingpong", "--backend", "futex", "--idle", "halt,halt"],
            "--idle",
        ),
        // Studies that would simulate for hours.
        (&["control", "--len", "16777216"], "--len"),
        (&["control", "--messages", "1000000000"], "--messages"),
        (&["map", "--messages", "100000000"], "--messages"),
        (
            &[
                "sweep",
                "--vary",
                "wp=1us..2us:100",
                "--messages",
                "1000000000",
            ],
            "--messages",
        ),
        // Checked before the first run, or before calibrate says what it
        // will measure.
        (&["scale", "--vms", "1,300"], "--vms"),
        (&["scale", "--work", "10s", "--seconds", "0.1"], "--work"),
        (
            &["calibrate", "--backend", "futex", "--gap", "3600s"],
            "--gap",
        ),
        (
            &["calibrate", "--backend", "futex", "--gaps", "10us,5us,5us"],
            "--gaps",
        ),
        // Flags the run would ignore.
        (&["report", "--no-testbed", "--repeat", "25"], "--repeat"),
        (
            &["sim", "--mode", "halt-poll:grow=1e308"],
            "grow must be from 1 to 1024 (got 1e308)",
        ),
        // The sweep set the L the simulator refuses.
        (&["sweep", "--vary", "len=1..4294967295:3"], "--vary"),
        (
            &["scale", "--backend", "sim", "--slice", "3599s"],
            "1us to 1 s",
        ),
        // Found by a hostile-input pass: what each flag wants,
        // not Rust's parse error and its type's range.
        (&["model", "--kp", "-1"], "`-1` is not a whole number"),
        (&["sim", "--messages", ""], "is not a whole number"),
        (&["model", "--len", "4294967296"], "at most 4294967295"),
        (&["sim", "--seed", "1e3"], "`1e3` is not a whole number"),
        // Written above 0, read as 0 by a float: not a silent 0.
        (&["model", "--wp", "1e-400"], "below a picosecond"),
        (&["sim", "--mode", "sleep:1e-400"], "below a picosecond"),
        (&["qos", "--offered", "-0"], "--offered"),
        (&["qos", "--seconds", "1s"], "--seconds"),
        (&["qos", "--rate", "1=-0"], "--rate"),
        // Above the model's range: named as the flag given.
        (&["qos", "--rate", "1=1e308"], "--rate: vm1"),
        // A sleep the stall limit would take for a hang: refused before
        // anything is calibrated or run.
        (
            &["run", "--backend", "futex", "--strategy", "sleep:3600s"],
            "--strategy: P's sleep:3600s: each sleep is as long as the stall limit",
        ),
        (&["qos", "--offered", "1e308"], "--offered: vm1"),
        (
            &[
                "scale",
                "--backend",
                "sim",
                "--work",
                "3600s",
                "--seconds",
                "0.05",
            ],
            "at most a tenth of the window",
        ),
        // Past the simulator's clock (53 days): by the work alone, refused
        // before running (control ran 5 s first); by naps, when it runs out.
        (&["sim", "--wc", "3600s", "--messages", "1000"], "53 days"),
        (
            &[
                "control",
                "--wc",
                "3600s",
                "--messages",
                "500",
                "--points",
                "2",
            ],
            "--wc",
        ),
        // W_P past what the strategies' grids are built for: minutes a
        // point, refused before any runs.
        (
            &[
                "control",
                "--range",
                "1s..3600s",
                "--points",
                "2",
                "--messages",
                "5000",
                "--workload",
                "const",
            ],
            "--range",
        ),
        (&["sim", "--warmup", "10000000000"], "--warmup"),
        (
            &[
                "map",
                "--x",
                "wp=0.1us..3us:1000",
                "--y",
                "wc=0.1us..3us:1000",
            ],
            "--x, --y",
        ),
        (&["sim", "--mode", "sleep:3600s"], "53 days"),
        // A model-only map of a mode with no closed form is empty.
        (
            &["map", "--mode", "sleep:1us", "--messages", "0"],
            "--messages",
        ),
    ];
    for (args, flag) in cases {
        let started = std::time::Instant::now();
        let out = kicklab(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        let lines: Vec<&str> = err.trim_end().lines().collect();
        assert_eq!(lines.len(), 1, "{args:?}: one line, got {err}");
        assert!(err.contains(flag), "{args:?}: {err} does not name {flag}");
        assert!(out.stdout.is_empty(), "{args:?}: no output on stdout");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{args:?}: refused only after {:?} (work was done first)",
            started.elapsed()
        );
    }
}

/// clap's help survives the one-line rule: its tip (a similar flag or
/// subcommand), the values an enum flag takes, what `--backend` takes
/// when it is missing, and the other name of a strategy flag.
#[test]
fn a_refusal_keeps_the_hint_that_fixes_it() {
    let cases: &[(&[&str], &str)] = &[
        (&["sim", "--messsages", "1000"], "'--messages'"),
        (&["simm"], "'sim'"),
        (
            &["qos", "--path", "shard"],
            "possible values: shared, direct",
        ),
        (&["sim", "--start", "half"], "possible values: empty, full"),
        (&["run"], "futex, eventfd, pipe or kvm"),
        (
            &["model", "--strategy-p", "poll"],
            "--strategy-p is sim's and run's; here --strategy sets both parties",
        ),
        (
            &["sim", "--mode", "adaptive:latency=1,5us"],
            "a decimal point is `.`",
        ),
        (&["model", "--wp", "1us..2us"], "is a range"),
        (&["model", "-wp", "2us"], "two dashes: --wp"),
    ];
    for (args, hint) in cases {
        refused(args, hint);
    }
    // A command that names no strategy gets no hint about where they are.
    let err = refused(&["qos", "--strategy-p", "poll"], "--strategy-p");
    assert!(!err.contains("sim's and run's"), "{err}");
    // --mode is --strategy's other name, in every command that takes one.
    for cmd in ["model", "sim", "sweep", "map", "run"] {
        let out = kicklab(&[cmd, "--help"]);
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(help.contains("--strategy <STRATEGY>"), "{cmd}: {help}");
        assert!(help.contains("[alias: --mode]"), "{cmd}: {help}");
    }
}

#[test]
fn a_long_bad_value_is_not_repeated_whole_and_a_real_study_checks_its_profile() {
    let long = "9x".repeat(2500);
    let out = kicklab(&["model", "--wp", &long]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err.len() < 400 && err.contains("(5000 characters)"),
        "{err}"
    );
    // A kvm profile for a futex study: refused before any run.
    let dir = tmp("control-profile");
    std::fs::create_dir_all(&dir).unwrap();
    let stat = |ns: f64| serde_json::json!({"median_ns": ns, "mean_ns": ns, "p10_ns": ns, "p90_ns": ns, "sigma_log": 0.0, "n": 1});
    let mut p = serde_json::json!({
        "backend": "kvm", "direction": "tx", "gap_ns": 50000.0, "rounds": 1, "stable": true,
        "tsc_ghz": 0.0, "cpus": 2,
    });
    for k in [
        "NP", "NC", "SP", "SC", "NP_cpu", "NC_cpu", "SP_cpu", "SC_cpu",
    ] {
        p[k] = stat(2000.0);
    }
    let file = dir.join("kvm.json");
    std::fs::write(&file, p.to_string()).unwrap();
    let started = std::time::Instant::now();
    let out = kicklab(&[
        "control",
        "--backend",
        "futex",
        "--profile",
        file.to_str().unwrap(),
        "--workload",
        "const",
        "--out",
        dir.join("out").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--profile: it calibrates kvm"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `kicklab ARGS` exits within 10 s (it must not wait on a FIFO for a
/// writer): its status and stderr.
fn without_waiting(args: &[&str]) -> (std::process::ExitStatus, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_kicklab"))
        .args(args)
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > std::time::Duration::from_secs(10) {
            let _ = child.kill();
            panic!("{args:?}: kicklab waited on the FIFO for a writer");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    (status, err)
}

/// A FIFO where a file is read (a profile, a recording in a replay
/// folder, a trace) is refused without waiting for a writer; so is a
/// device that never ends.
#[test]
fn a_fifo_or_device_read_as_a_file_is_refused_without_waiting_for_a_writer() {
    let dir = tmp("fifo");
    std::fs::create_dir_all(&dir).unwrap();
    let fifo = |name: &str| {
        let at = dir.join(name);
        let made = Command::new("mkfifo")
            .arg(&at)
            .status()
            .expect("run mkfifo");
        assert!(made.success());
        at.to_str().unwrap().to_string()
    };
    let profile = fifo("profile.json");
    let set = dir.join("recorded/set");
    std::fs::create_dir_all(&set).unwrap();
    std::fs::copy(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../data/machines/xeon-2c-nested/2026-11-28a/profile-futex.json"),
        set.join("profile-futex.json"),
    )
    .unwrap();
    let validation = fifo("recorded/set/validate-futex.json");
    let trace = fifo("trace.txt");
    let recorded = dir.join("recorded");
    for (args, what) in [
        (vec!["sim", "--profile", &profile, "--json"], "--profile"),
        (
            vec!["replay", recorded.to_str().unwrap()],
            validation.as_str(),
        ),
        (vec!["trace", &trace, "--messages", "1"], trace.as_str()),
        (vec!["trace", "/dev/zero", "--messages", "1"], "/dev/zero"),
    ] {
        let (status, err) = without_waiting(&args);
        assert_eq!(status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains(what) && err.contains("not a regular file"),
            "{args:?}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_refused_save_leaves_no_file_and_a_refused_out_no_directory() {
    let dir = tmp("refused");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("sub-missing/f.json");
    let out = kicklab(&[
        "calibrate",
        "--backend",
        "futex",
        "--save",
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!file.exists());
    let out_dir = dir.join("never");
    let out = kicklab(&[
        "sweep",
        "--vary",
        "kp=1..300:3",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!out_dir.exists(), "bad input left {}", out_dir.display());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_closed_pipe_is_a_failed_write_and_leaves_no_folder() {
    use std::io::Read as _;
    use std::process::Stdio;
    let dir = tmp("pipe");
    let mut child = Command::new(env!("CARGO_BIN_EXE_kicklab"))
        .args([
            "sweep",
            "--vary",
            "wp=0.5us..2us:40",
            "--messages",
            "2000",
            "--out",
        ])
        .arg(&dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the pipe as `head -c 0` would, before the table comes.
    drop(child.stdout.take());
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(
        err.trim_end()
            .ends_with("error: cannot write to standard output: Broken pipe"),
        "{err}"
    );
    assert!(
        !dir.exists(),
        "the folder stays out when its table was lost"
    );
}

#[test]
fn model_prints_one_message_in_the_singular() {
    let out = kicklab(&["model", "--wp", "2us"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("round       1 message in"), "{text}");
}

#[test]
fn kvm_limits_exit_2_naming_the_flag() {
    if let Err(why) = kicklab_testbed_available() {
        println!("skipped: {why}");
        return;
    }
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "run",
                "--backend",
                "kvm",
                "--len",
                "4065",
                "--messages",
                "100",
            ],
            "--len",
        ),
        (
            &["run", "--backend", "kvm", "--messages", "2147483648"],
            "--messages",
        ),
        // Send combining runs on kvm (the guest combines in tx, the host in
        // rx); a batch above L and a hold timer beyond the guest's 32-bit
        // TSC compare are refused.
        (
            &[
                "run",
                "--backend",
                "kvm",
                "--batch",
                "300",
                "--messages",
                "100",
            ],
            "--batch",
        ),
        (
            &[
                "run",
                "--backend",
                "kvm",
                "--batch",
                "8",
                "--flush",
                "timer:60s",
                "--messages",
                "100",
            ],
            "--flush: the kvm guest's hold timer",
        ),
        // The guest side (P in tx) does not hold its kicks.
        (
            &[
                "run",
                "--backend",
                "kvm",
                "--strategy",
                "coalesce:8,20us",
                "--messages",
                "100",
            ],
            "--strategy: the kvm guest side (P, direction tx)",
        ),
    ];
    for (args, flag) in cases {
        let out = kicklab(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        let last = err.trim_end().lines().last().unwrap_or_default();
        assert!(
            last.starts_with("error: ") && last.contains(flag),
            "{args:?}: {err}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
}

/// Whether this machine can run the kvm backend (as `--backend kvm` checks).
fn kicklab_testbed_available() -> Result<(), String> {
    let out = kicklab(&["run", "--backend", "kvm", "--messages", "0"]);
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("kvm is not usable here") {
        Err(err.trim().to_string())
    } else {
        Ok(())
    }
}

#[test]
fn help_says_only_what_is_true() {
    let text = |args: &[&str]| String::from_utf8_lossy(&kicklab(args).stdout).to_string();
    let pingpong = text(&["pingpong", "--help"]);
    assert!(
        !pingpong.contains("--direction"),
        "pingpong has no direction: {pingpong}"
    );
    let validate = text(&["validate", "--help"]);
    for file in ["index.html", "validate-<backend>-T.svg", "validate.csv"] {
        assert!(validate.contains(file), "validate --help names {file}");
    }
    // Every example's comment starts in the same column.
    let top = text(&["--help"]);
    let cols: Vec<usize> = top
        .lines()
        .filter(|l| l.trim_start().starts_with("kicklab "))
        .filter_map(|l| l.find(" # "))
        .collect();
    assert!(
        cols.len() >= 5 && cols.windows(2).all(|w| w[0] == w[1]),
        "{top}"
    );
}

#[test]
fn sim_runs_every_strategy_with_the_contract_fields() {
    for mode in [
        "sleep:20us",
        "halt-poll",
        "haltpoll:max=100us",
        "hybrid:min",
        "defer",
        "coalesce:8,20us",
        "adaptive",
    ] {
        let v = json(&[
            "sim",
            "--wp",
            "0.5us",
            "--mode",
            mode,
            "--messages",
            "20000",
            "--json",
        ]);
        for key in ["T_ns", "E_ns", "sleeps_p", "sleeps_c", "notifications_p"] {
            assert!(v[key].is_number(), "{mode}: {key} missing: {v}");
        }
        for q in ["p50", "p99", "max"] {
            assert!(
                v["latency_ns"][q].is_number(),
                "{mode}: latency {q} missing: {v}"
            );
        }
        // Printed back in the form --mode takes, adaptive with its bound.
        let back = v["mode_p"].as_str().unwrap();
        if mode == "adaptive" {
            assert_eq!(back, "adaptive:latency=100us");
        }
        assert!(json(&["sim", "--mode", back, "--messages", "1000", "--json"])["T_ns"].is_number());
        // No closed form for these: no prediction.
        assert!(v["predicted"].is_null(), "{mode}");
    }
    // --latency reaches adaptive.
    let v = json(&[
        "sim",
        "--wp",
        "0.5us",
        "--mode",
        "adaptive",
        "--latency",
        "30us",
        "--messages",
        "50000",
        "--json",
    ]);
    assert_eq!(v["mode_p"], "adaptive:latency=30us");
    assert!(v["latency_ns"]["p99"].as_f64().unwrap() <= 30_000.0, "{v}");
}

#[test]
fn a_bad_strategy_is_one_line_naming_the_flag() {
    for (mode, want) in [
        ("halt-poll:grow=0.5", "grow must be from 1 to 1024"),
        ("sleep:0", "must be > 0"),
        ("busy", "unknown strategy"),
    ] {
        let out = kicklab(&["sim", "--mode", mode]);
        assert_eq!(out.status.code(), Some(2), "{mode}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(
            err.contains("--strategy") && err.contains(want),
            "{mode}: {err}"
        );
    }
}

#[test]
fn advise_json_contract() {
    let v = json(&["advise", "--wp", "3us", "--messages", "50000", "--json"]);
    let s = v["strategy"].as_str().unwrap();
    // A string --mode accepts, and what it predicts is the simulator's.
    let sim = json(&[
        "sim",
        "--wp",
        "3us",
        "--mode",
        s,
        "--messages",
        "50000",
        "--warmup",
        "20000",
        "--json",
    ]);
    for key in ["T_ns", "E_ns"] {
        let (a, b) = (
            v["predicted"][key].as_f64().unwrap(),
            sim[key].as_f64().unwrap(),
        );
        assert!((a - b).abs() <= 0.05 * b, "{key}: advise {a}, sim {b}");
    }
    assert!(v["predicted"]["latency_p99_ns"].is_number());
    let alts = v["alternatives"].as_array().unwrap();
    assert!(alts.len() > 10);
    for a in alts {
        for key in ["strategy", "T_ns", "E_ns", "latency_p99_ns"] {
            assert!(!a[key].is_null(), "{key} missing in {a}");
        }
    }
}

#[test]
fn advise_check_runs_the_settings_for_real() {
    let profile =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../trace/tests/data/futex.profile.json");
    let profile = profile.to_str().unwrap();
    let v = json(&[
        "advise",
        "--wp",
        "3us",
        "--messages",
        "20000",
        "--for",
        "napi,io-uring",
        "--profile",
        profile,
        "--check",
        "futex",
        "--json",
    ]);
    let checked = v["checked"].as_array().unwrap();
    // The pick and each mechanism's best, each strategy once.
    assert!(!checked.is_empty() && checked.len() <= 3, "{checked:?}");
    assert_eq!(checked[0]["strategy"], v["strategy"]);
    for c in checked {
        let (t, m) = (
            c["predicted_t_ns"].as_f64().unwrap(),
            c["measured_t_ns"].as_f64().unwrap(),
        );
        assert!(
            m > 0.0 && (c["t_error"].as_f64().unwrap() - (t / m - 1.0)).abs() < 1e-9,
            "{c}"
        );
        assert!(c["e_error"].is_number() && c["not_run"].is_null(), "{c}");
        // On threads every rule is kicklab's own.
        assert!(c["ran_by"] == "kicklab" && c["note"].is_null(), "{c}");
    }
    // Without a calibration of that backend the comparison is refused.
    let out = kicklab(&["advise", "--check", "futex"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--check: needs --profile"));
}

#[test]
fn advise_gives_each_mechanisms_settings_with_the_simulators_figures() {
    // A fast producer with dear kicks: deferral and coalescing can batch.
    let v = json(&[
        "advise",
        "--wp",
        "2us",
        "--for",
        "napi,kvm-host,virtio-net",
        "--messages",
        "20000",
        "--json",
    ]);
    let knobs = v["knobs"].as_array().unwrap();
    let names: Vec<&str> = knobs
        .iter()
        .map(|k| k["mechanism"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["napi", "kvm-host", "virtio-net"]);
    let alts = v["alternatives"].as_array().unwrap();
    let pick = v["strategy"].as_str().unwrap();
    for k in knobs {
        // Each setting shown is a candidate of the search, with its figures.
        for s in std::iter::once(k)
            .chain([&k["default"]])
            .chain(k["alternatives"].as_array().unwrap())
        {
            let strategy = s["strategy"].as_str().unwrap();
            let c = alts.iter().find(|a| a["strategy"] == strategy).unwrap();
            assert_eq!(c, &s["predicted"], "{strategy}");
            assert!(s["settings"].as_object().is_some_and(|o| !o.is_empty()));
        }
        assert!(!k["commands"].as_array().unwrap().is_empty());
        assert_eq!(
            k["implements_pick"].as_bool().unwrap(),
            k["strategy"] == pick
        );
        // Its best is the best of its own settings by advise's order.
        let first = alts
            .iter()
            .position(|a| a["strategy"] == k["strategy"])
            .unwrap();
        for other in k["alternatives"].as_array().unwrap() {
            let at = alts
                .iter()
                .position(|a| a["strategy"] == other["strategy"])
                .unwrap();
            assert!(
                first < at || k["strategy"] == k["default"]["strategy"],
                "{k}"
            );
        }
    }
    let napi = &knobs[0];
    assert!(
        napi["strategy"].as_str().unwrap().starts_with("defer") || napi["strategy"] == "notify"
    );
    assert_eq!(napi["default"]["settings"]["napi_defer_hard_irqs"], 0);
    let host = &knobs[1];
    assert_eq!(host["default"]["settings"]["halt_poll_ns"], 200_000);
    // Text: the settings and the commands, kicklab applying none.
    let out = kicklab(&[
        "advise",
        "--wp",
        "2us",
        "--for",
        "napi",
        "--messages",
        "20000",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(text.contains("napi_defer_hard_irqs="), "{text}");
    assert!(
        text.contains("sudo tee /sys/class/net/IFACE/gro_flush_timeout"),
        "{text}"
    );
    let none = json(&[
        "advise",
        "--wp",
        "2us",
        "--for",
        "none",
        "--messages",
        "20000",
        "--json",
    ]);
    assert_eq!(none["knobs"].as_array().unwrap().len(), 0);
}

#[test]
fn control_writes_its_study() {
    let dir = tmp("control");
    let v = json(&[
        "control",
        "--workload",
        "const",
        "--points",
        "3",
        "--messages",
        "20000",
        "--out",
        dir.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(v["points"].as_array().unwrap().len(), 3);
    let csv = std::fs::read_to_string(dir.join("control.csv")).unwrap();
    assert!(csv.lines().count() > 3 * 15, "{csv}");
    assert!(dir.join("excess-const.svg").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn qos_json_contract() {
    let v = json(&[
        "qos",
        "--path",
        "shared",
        "--limit",
        "2=300",
        "--police",
        "ingress",
        "--offered",
        "1500",
        "--seconds",
        "2",
        "--json",
    ]);
    assert_eq!(v["path"], "shared");
    assert_eq!(v["police"], "ingress");
    let vms = v["vms"].as_array().unwrap();
    assert_eq!(vms.len(), 2);
    for (i, vm) in vms.iter().enumerate() {
        assert_eq!(vm["id"], i + 1);
        for key in ["offered_per_s", "throughput_per_s", "dropped_per_s"] {
            assert!(vm[key].is_number(), "{key}: {vm}");
        }
        assert!(vm["latency_ns"]["p50"].is_number() && vm["latency_ns"]["p99"].is_number());
    }
    // VM2 is held to its limit.
    assert!(vms[1]["throughput_per_s"].as_f64().unwrap() <= 300.0 * 1.01);
    let stages = v["stages"].as_array().unwrap();
    assert_eq!(stages[0]["name"], "backend");
    assert!(stages[0]["utilization"].as_f64().unwrap() <= 1.0 + 1e-9);
    assert_eq!(v["model"]["vms"].as_array().unwrap().len(), 2);
    assert!(v["model"]["vms"][0]["throughput_per_s"].is_number());
    // The model alone, and the backends not built yet refused in one line.
    let m = json(&["qos", "--backend", "model", "--path", "direct", "--json"]);
    assert_eq!(m["stages"][0]["name"], "hypervisor");
    // Its text gives the model's rates, not a simulator's columns of NaN.
    let out = kicklab(&["qos", "--backend", "model", "--limit", "2=300"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && !text.contains("NaN"), "{text}");
    let vm2 = text.lines().find(|l| l.starts_with("vm2")).unwrap();
    let cols: Vec<&str> = vm2.split_whitespace().collect();
    assert_eq!(cols[1..], ["800.0", "300.0", "500.0"], "{text}");
    // The model measures no window: a load of one request in two seconds
    // needs none (a simulated window of 10 s holds only 5 of them).
    let slow = json(&["qos", "--backend", "model", "--rate", "2=0.5", "--json"]);
    assert!(
        slow["vms"][1]["throughput_per_s"].as_f64().unwrap() > 0.0,
        "{slow}"
    );
    let out = kicklab(&["qos", "--rate", "2=0.5"]);
    assert_eq!(out.status.code(), Some(2));
    let out = kicklab(&["qos", "--backend", "kvm", "--vm-core", "timed"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--vm-core: timed") && err.contains("guest"),
        "{err}"
    );
    let out = kicklab(&["qos", "--limit", "3=100"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no VM 3"));
}

#[test]
fn qos_kvm_json_contract() {
    // A short run with a guest per VM (0.2 s): every request accounted
    // for, the guests' figures and the model beside them; where KVM is
    // missing, one line saying why.
    let args = [
        "qos",
        "--backend",
        "kvm",
        "--offered",
        "300",
        "--seconds",
        "2",
        "--json",
    ];
    if let Err(why) = kicklab_testbed::kvm::available() {
        let out = kicklab(&args);
        assert_ne!(out.status.code(), Some(0));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("kvm is not usable here"), "{err}");
        eprintln!("SKIPPED the run: no usable KVM here: {why}");
        return;
    }
    let v = json(&args);
    assert_eq!(v["backend"], "kvm");
    assert_eq!(v["vm_core"], "guest");
    let vms = v["vms"].as_array().unwrap();
    assert_eq!(vms.len(), 2);
    for vm in vms {
        assert_eq!(vm["lost"], 0, "{vm}");
        assert_eq!(vm["duplicated"], 0, "{vm}");
        assert_eq!(vm["bad_stamps"], 0, "{vm}");
        assert!(vm["clock_drift_ns"].as_f64().unwrap() >= 0.0, "{vm}");
        let (gen, done, dropped) = (
            vm["generated"].as_u64().unwrap(),
            vm["completed"].as_u64().unwrap(),
            vm["dropped"].as_u64().unwrap(),
        );
        assert_eq!(gen, done + dropped, "{vm}");
        assert!(vm["latency_ns"]["p50"].as_f64().unwrap() > 0.0, "{vm}");
    }
    assert_eq!(v["stages"].as_array().unwrap().len(), 3);
    assert!(v["model"]["vms"][0]["throughput_per_s"].is_number());
    // A buffer the guest's ring cannot hold, named by qos's own flag.
    let out = kicklab(&["qos", "--backend", "kvm", "--buffer", "5000"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--buffer") && err.contains("guest"), "{err}");
}

#[test]
fn qos_futex_json_contract() {
    // A short real run (0.3 s): the sim's fields in the paper's time, the
    // measured ones beside them, every request accounted for.
    let v = json(&[
        "qos",
        "--backend",
        "futex",
        "--limit",
        "2=300",
        "--police",
        "post",
        "--offered",
        "1500",
        "--seconds",
        "3",
        "--json",
    ]);
    assert_eq!(v["path"], "shared");
    assert_eq!(v["police"], "post");
    assert_eq!(v["backend"], "futex");
    let scale = v["scale"].as_f64().unwrap();
    assert!((scale - 0.1).abs() < 1e-12);
    let vms = v["vms"].as_array().unwrap();
    assert_eq!(vms.len(), 2);
    for (i, vm) in vms.iter().enumerate() {
        assert_eq!(vm["id"], i + 1);
        for key in ["offered_per_s", "throughput_per_s", "dropped_per_s"] {
            assert!(vm[key].is_number(), "{key}: {vm}");
            // The paper's time: the measured rate times the scale.
            let m = vm["measured"][key].as_f64().unwrap();
            assert!(
                (vm[key].as_f64().unwrap() - m * scale).abs() < 1e-6,
                "{key}: {vm}"
            );
        }
        assert!(vm["latency_ns"]["p50"].is_number() && vm["latency_ns"]["p99"].is_number());
        assert_eq!(vm["lost"], 0, "{vm}");
        assert_eq!(vm["duplicated"], 0, "{vm}");
        let (g, c, d) = (
            vm["generated"].as_u64().unwrap(),
            vm["completed"].as_u64().unwrap(),
            vm["dropped"].as_u64().unwrap(),
        );
        assert!(g > 0 && g == c + d, "{vm}");
        // Offered 1500/s of the paper's time.
        let offered = vm["offered_per_s"].as_f64().unwrap();
        assert!((offered - 1500.0).abs() < 0.1 * 1500.0, "{vm}");
    }
    // VM2 is held to its limit after receive.
    assert!(
        vms[1]["throughput_per_s"].as_f64().unwrap() <= 300.0 * 1.2,
        "{v}"
    );
    let stages = v["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 3);
    assert_eq!(stages[0]["name"], "backend");
    for s in stages {
        let u = s["utilization"].as_f64().unwrap();
        assert!((0.0..=1.05).contains(&u), "{s}");
    }
    let model = v["model"]["vms"].as_array().unwrap();
    assert_eq!(model.len(), 2);
    assert!(model[0]["throughput_per_s"].as_f64().unwrap() > 0.0);
    assert!(v["costs"]["shared_ns"].as_f64().unwrap() > 0.0);
    assert!(v["cpus"].as_u64().unwrap() >= 1);
    assert!(v["vm_core"] == "busy" || v["vm_core"] == "timed", "{v}");
}

#[test]
fn scale_json_contract() {
    let v = json(&[
        "scale",
        "--vms",
        "3",
        "--idle",
        "timeout",
        "--seconds",
        "0.1",
        "--json",
    ]);
    assert_eq!(v["vms"], 3);
    assert_eq!(v["idle"], "timeout");
    assert!(v["cpus"].as_u64().unwrap() >= 1);
    assert!(v["throughput_per_s"].as_f64().unwrap() > 0.0, "{v}");
    let cpu = v["cpu_util"].as_f64().unwrap();
    assert!((0.0..=1.05).contains(&cpu), "{v}");
    let both = json(&[
        "scale",
        "--vms",
        "1,2",
        "--idle",
        "spin,timeout",
        "--seconds",
        "0.05",
        "--json",
    ]);
    assert_eq!(both["runs"].as_array().unwrap().len(), 4);
    // The simulator: the same fields on the CPUs asked for, and the
    // target (8 guests on 2 CPUs) as a sequence check.
    let sim = json(&[
        "scale",
        "--backend",
        "sim",
        "--vms",
        "8",
        "--cpus",
        "2",
        "--json",
    ]);
    let runs = sim["runs"].as_array().unwrap();
    let thr = |idle: &str| {
        let r = runs.iter().find(|r| r["idle"] == idle).unwrap();
        assert_eq!(r["vms"], 8);
        assert_eq!(r["cpus"], 2);
        let cpu = r["cpu_util"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&cpu), "{r}");
        r["throughput_per_s"].as_f64().unwrap()
    };
    assert!(thr("timeout") >= 1.5 * thr("spin"), "{sim}");
    for bad in [
        &["--cpus", "0"][..],
        &["--slice", "0s"],
        &["--wake", "NaN"],
        &["--profile", "/nonexistent"],
    ] {
        let mut args = vec!["scale", "--backend", "sim"];
        args.extend_from_slice(bad);
        let out = kicklab(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains(bad[0]), "{bad:?}: {err}");
    }
    let out = kicklab(&["scale", "--cpus", "4"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--backend sim"));
    let out = kicklab(&["scale", "--vms", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--vms"));
    // kvm: a VM per guest, at most 64 (refused before anything runs);
    // runs where there is KVM.
    let out = kicklab(&["scale", "--backend", "kvm", "--vms", "65"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--vms"), "{err}");
    if let Err(why) = kicklab_testbed::kvm::available() {
        eprintln!("SKIPPED the kvm scale run: no usable KVM here: {why}");
        return;
    }
    let v = json(&[
        "scale",
        "--backend",
        "kvm",
        "--vms",
        "2",
        "--idle",
        "timeout",
        "--seconds",
        "0.05",
        "--json",
    ]);
    assert_eq!(
        (v["vms"].as_u64(), v["idle"].as_str()),
        (Some(2), Some("timeout")),
        "{v}"
    );
    assert!(v["throughput_per_s"].as_f64().unwrap() > 0.0, "{v}");
}

#[test]
fn flags_json_contract() {
    let v = json(&[
        "flags",
        "--sources",
        "1,64",
        "--path",
        "poll,bitmap",
        "--signals",
        "500",
        "--repeat",
        "1",
        "--json",
    ]);
    let runs = v["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for r in runs {
        for key in [
            "sources",
            "notify_ns",
            "wake_ns",
            "wakeups",
            "signals",
            "received",
        ] {
            assert!(r[key].is_number(), "{key}: {r}");
        }
        assert_eq!(
            r["received"], r["signals"],
            "every signal counted once: {r}"
        );
        // The costs fed to the model: a pair whose consumer sleeps pays
        // for its notifications and wake-ups on top of the work, and
        // runs no faster than its producer.
        let (t, e) = (
            r["pair_model"]["T_ns"].as_f64().unwrap(),
            r["pair_model"]["E_ns"].as_f64().unwrap(),
        );
        assert!(t >= 2000.0 - 1e-6 && e > 2000.0 + 1100.0, "{r}");
    }
    assert_eq!(runs[1]["path"], "bitmap");
    assert_eq!(runs[1]["backend"], "threads");
    let out = kicklab(&["flags", "--sources", "0"]);
    assert_eq!(out.status.code(), Some(2));
    // A guest signalling: the same fields; where KVM is missing, one line
    // saying why.
    let args = [
        "flags",
        "--backend",
        "kvm",
        "--sources",
        "1,64",
        "--path",
        "epoll,bitmap",
        "--signals",
        "300",
        "--repeat",
        "1",
        "--json",
    ];
    if let Err(why) = kicklab_testbed::kvm::available() {
        let out = kicklab(&args);
        assert_ne!(out.status.code(), Some(0));
        assert!(String::from_utf8_lossy(&out.stderr).contains("kvm is not usable here"));
        eprintln!("SKIPPED the kvm runs: {why}");
    } else {
        let v = json(&args);
        let runs = v["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 4);
        for r in runs {
            assert_eq!(r["backend"], "kvm", "{r}");
            assert_eq!(r["received"], r["signals"], "{r}");
        }
    }
    for bad in [
        vec!["flags", "--backend", "kvm", "--sources", "513"],
        vec!["flags", "--backend", "xen"],
        vec!["flags", "--gap", "0s"],
        vec!["flags", "--gap", "1s"],
    ] {
        let out = kicklab(&bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
}

#[test]
fn sim_send_combining() {
    let v = json(&[
        "sim",
        "--wp",
        "2us",
        "--batch",
        "8",
        "--messages",
        "80000",
        "--json",
    ]);
    assert!((v["T_ns"].as_f64().unwrap() - 2300.0).abs() < 1e-6, "{v}");
    assert_eq!(
        v["notifications_p"].as_u64().unwrap() * 8,
        v["messages"].as_u64().unwrap()
    );
    assert!(v["predicted"].is_null());
    for (args, want) in [
        (vec!["sim", "--batch", "0"], "--batch"),
        (vec!["sim", "--batch", "300"], "--batch"),
        (vec!["sim", "--flush", "later"], "--flush"),
    ] {
        let out = kicklab(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(want),
            "{args:?}"
        );
    }
}

#[test]
fn map_writes_its_grid() {
    let dir = tmp("map");
    let out = kicklab(&[
        "map",
        "--x",
        "wp=0.5us..2us:4",
        "--y",
        "wc=0.5us..2us:3",
        "--messages",
        "2000",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(dir.join("map.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + 12);
    assert!(csv.starts_with("wp,wc,regime,T_model_ns"));
    for stem in ["map-regime", "map-T-model", "map-T-sim"] {
        let svg = std::fs::read_to_string(dir.join(format!("{stem}.svg"))).unwrap();
        assert_eq!(
            svg.matches("<title>").count(),
            12,
            "{stem}: a hover title per cell"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
    // A strategy with no closed form draws the simulator's map alone and
    // says so, not two blank maps.
    let out = kicklab(&[
        "map",
        "--mode",
        "spin:5us",
        "--x",
        "wp=0.5us..2us:2",
        "--y",
        "wc=0.5us..2us:2",
        "--messages",
        "2000",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("no closed form"));
    assert!(dir.join("map-T-sim.svg").exists());
    assert!(!dir.join("map-regime.svg").exists() && !dir.join("map-T-model.svg").exists());
    std::fs::remove_dir_all(&dir).unwrap();
    let same = kicklab(&["map", "--x", "wp=1us..2us:2", "--y", "wp=1us..2us:2"]);
    assert_eq!(same.status.code(), Some(2));
}

#[test]
fn the_new_commands_refuse_hostile_values_in_one_line() {
    let out_dir = tmp("hostile");
    let out = out_dir.to_str().unwrap();
    for (args, flag) in [
        (
            vec!["control", "--points", "99999999", "--out", out],
            "--points",
        ),
        (vec!["control", "--latency", "0", "--out", out], "--latency"),
        (
            vec!["control", "--latency", "NaN", "--out", out],
            "--latency",
        ),
        (vec!["advise", "--latency", "1e30s"], "--latency"),
        (vec!["advise", "--messages", "0"], "--messages"),
        (vec!["advise", "--profile", "/nonexistent"], "--profile"),
        (vec!["advise", "--for", "napi,nap"], "--for"),
        (vec!["advise", "--for", "-1"], "--for"),
        (vec!["advise", "--for", ""], "--for"),
        (
            vec!["sim", "--mode", "adaptive", "--latency", "0"],
            "--latency",
        ),
        (vec!["qos", "--seconds", "1e30"], "--seconds"),
        (vec!["qos", "--offered", "1e30"], "--offered"),
        (
            vec!["qos", "--offered", "1e8", "--seconds", "100"],
            "--seconds",
        ),
        (vec!["qos", "--vms", "100000"], "--vms"),
        (vec!["qos", "--backend", "futex", "--vms", "200"], "--vms"),
        (
            vec!["qos", "--backend", "futex", "--offered", "1e8"],
            "--offered",
        ),
        (vec!["qos", "--backend", "futex", "--scale", "0"], "--scale"),
        (
            vec!["qos", "--backend", "futex", "--scale", "-1"],
            "--scale",
        ),
        (
            vec!["qos", "--backend", "futex", "--scale", "1e-12"],
            "--scale",
        ),
        (
            vec![
                "qos",
                "--backend",
                "futex",
                "--scale",
                "1e-3",
                "--seconds",
                "3000",
            ],
            "--offered",
        ),
        (
            vec!["qos", "--backend", "futex", "--seconds", "0.001"],
            "--seconds",
        ),
        (
            vec!["qos", "--backend", "futex", "--buffer", "10000000"],
            "--buffer",
        ),
        (
            vec!["qos", "--backend", "futex", "--vm-service", "1h"],
            "--vm-service",
        ),
        (
            vec!["qos", "--backend", "futex", "--limit", "2=0"],
            "--limit",
        ),
        (
            vec![
                "qos",
                "--backend",
                "futex",
                "--figures",
                "--scale",
                "7",
                "--out",
                out,
            ],
            "--scale",
        ),
        (vec!["qos", "--buffer", "0"], "--buffer"),
        (
            vec!["qos", "--figures", "--seconds", "-1", "--out", out],
            "--seconds",
        ),
        (vec!["scale", "--seconds", "1e30"], "--seconds"),
        (
            vec!["scale", "--concurrency", "99999999999"],
            "--concurrency",
        ),
        (vec!["scale", "--timer", "0"], "--timer"),
        (vec!["flags", "--signals", "99999999999999"], "--signals"),
        (vec!["flags", "--gap", "1e30s"], "--gap"),
        (
            vec![
                "map",
                "--x",
                "wp=1us..2us:100000",
                "--y",
                "wc=1us..2us:100000",
                "--out",
                out,
            ],
            "--x, --y",
        ),
        (vec!["map", "--out", "/etc/passwd"], "--out"),
    ] {
        let o = kicklab(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
    assert!(!out_dir.exists(), "nothing written on bad input");
}

/// A window of one message measures that message (from the warm-up's last
/// free to the next), not the whole run: `--messages 1` reported 1128
/// messages and C's CPU below its work before.
#[test]
fn one_message_measures_one_message() {
    let v = json(&["sim", "--messages", "1", "--json"]);
    assert_eq!(v["messages"], 1, "{v}");
    assert_eq!(v["window"], "consumed", "{v}");
    let t = v["T_ns"].as_f64().unwrap();
    for party in ["E_p_ns", "E_c_ns"] {
        let e = v[party].as_f64().unwrap();
        assert!(e <= t, "{party} {e} above T {t}: {v}");
    }
    assert!(
        v["E_c_ns"].as_f64().unwrap() >= 1100.0,
        "C did W_C = 1.1us: {v}"
    );
}

/// A run whose p99 latency passes the bound `adaptive` keeps says so on
/// stderr, and a bound written without its unit (50, nanoseconds) is
/// named as such; one that holds says nothing.
#[test]
fn a_missed_latency_bound_is_said() {
    let out = kicklab(&[
        "sim",
        "--mode",
        "adaptive:latency=50",
        "--messages",
        "20000",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("above the bound adaptive keeps, 50ns"),
        "{err}"
    );
    assert!(err.contains("write 50us"), "{err}");
    let out = kicklab(&[
        "sim",
        "--mode",
        "adaptive:latency=500ns",
        "--messages",
        "20000",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("above the bound adaptive keeps, 500ns"),
        "{err}"
    );
    assert!(!err.contains("bare number"), "500ns has its unit: {err}");
    let out = kicklab(&["sim", "--mode", "adaptive", "--messages", "20000"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("bound"),
        "the default 100us bound holds: {err}"
    );
}

/// Every command that takes `--backend kvm` refuses it the same way where
/// KVM cannot run kicklab's guests: `/dev/kvm` is replaced by `/dev/null`
/// in a mount namespace of the test's own (root and `unshare` needed;
/// skipped with the reason otherwise).
#[test]
fn an_unusable_kvm_is_one_refusal_in_every_command() {
    let probe = Command::new("unshare")
        .args(["-m", "--propagation", "private", "sh", "-c"])
        .arg("mount --bind /dev/null /dev/kvm")
        .output();
    match probe {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            eprintln!(
                "skipped: cannot hide /dev/kvm here ({})",
                String::from_utf8_lossy(&o.stderr).trim()
            );
            return;
        }
        Err(e) => {
            eprintln!("skipped: no unshare here ({e})");
            return;
        }
    }
    for cmd in [
        "run",
        "calibrate",
        "validate",
        "pingpong",
        "flags",
        "scale",
        "qos",
        "control",
    ] {
        let out = Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c"])
            .arg("mount --bind /dev/null /dev/kvm && exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_kicklab"))
            .args([cmd, "--backend", "kvm", "--json"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
        let errors: Vec<&str> = err.lines().filter(|l| l.starts_with("error")).collect();
        assert_eq!(errors.len(), 1, "{cmd}: {err}");
        assert!(
            errors[0].starts_with(
                "error: invalid value 'kvm' for '--backend <BACKEND>': kvm is not usable here: "
            ),
            "{cmd}: {err}"
        );
    }
}

/// `replay --control` reads the recorded control studies: one JSON object
/// per recorded point of the constant workload, and a folder without any
/// refused in one line naming the flag, exit 2.
#[test]
fn replay_control_reads_the_recorded_studies() {
    let machines =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/machines/xeon-2c-nested");
    let v = json(&["replay", "--control", machines.to_str().unwrap(), "--json"]);
    let picks = v.as_array().unwrap();
    assert_eq!(picks.len(), 4, "{v}");
    for p in picks {
        assert!(p["measured_e_ns"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["file"].as_str().unwrap().ends_with(".json"), "{p}");
        let holds = p["holds"].as_bool().unwrap();
        assert!(
            !holds || p["simulated_kept_bounds"].as_bool().unwrap(),
            "{p}"
        );
    }
    let empty = std::env::temp_dir().join(format!("kicklab-replay-control-{}", std::process::id()));
    std::fs::create_dir_all(&empty).unwrap();
    let out = kicklab(&["replay", "--control", empty.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error: replay <DIR>: ") && err.contains("no control-*.json"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    std::fs::remove_dir_all(&empty).unwrap();
}

/// Every cost 0: the pair takes no time, and the output says so in words,
/// never `NaN` or `inf`.
#[test]
fn a_pair_or_a_device_that_takes_no_time_prints_no_nan_or_inf() {
    let zero = [
        "sim",
        "--messages",
        "2000",
        "--wp",
        "0",
        "--wc",
        "0",
        "--np",
        "0",
        "--nc",
        "0",
        "--sp",
        "0",
        "--sc",
        "0",
    ];
    let out = kicklab(&zero);
    assert!(out.status.success());
    let sim = String::from_utf8(out.stdout).unwrap();
    assert!(sim.contains("sim/model both 0"), "{sim}");
    let out = kicklab(&["qos", "--shared", "0", "--vm-service", "0"]);
    assert!(out.status.success());
    let qos = String::from_utf8(out.stdout).unwrap();
    assert!(qos.contains("no loss at any rate"), "{qos}");
    for text in [&sim, &qos] {
        assert!(!text.contains("NaN") && !text.contains(" inf "), "{text}");
    }
}
