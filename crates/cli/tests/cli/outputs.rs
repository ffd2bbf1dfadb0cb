//! Writes that fail and outputs shared or interrupted: standard output on
//! a full disk or closed, standard error likewise, arguments that are not
//! UTF-8, a signal while a command writes, two runs into one folder, a
//! file-size limit standing in for a full disk.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use super::{kicklab, shared_profile, tmp};

/// A cheap run of every command that needs no device (real backends where
/// they take under a few seconds); `{out}` is replaced by a fresh folder,
/// `{profile}` by the test binary's shared futex profile (`run` is left
/// without one: its quick calibration is checked here too).
const COMMANDS: &[&[&str]] = &[
    &["model"],
    &["model", "--json"],
    &["sim", "--messages", "2000"],
    &["sim", "--messages", "2000", "--json"],
    &[
        "sweep",
        "--vary",
        "wp=0.5us..1us:3",
        "--messages",
        "1000",
        "--out",
        "{out}",
    ],
    &[
        "map",
        "--x",
        "wp=0.5us..1us:3",
        "--y",
        "wc=0.5us..1us:3",
        "--messages",
        "500",
        "--out",
        "{out}",
    ],
    &["advise", "--messages", "2000"],
    &["advise", "--messages", "2000", "--json"],
    &[
        "control",
        "--range",
        "0.5us..1us",
        "--points",
        "2",
        "--workload",
        "const",
        "--messages",
        "2000",
        "--out",
        "{out}",
    ],
    &["qos"],
    &["qos", "--json"],
    &["qos", "--figures", "--seconds", "2", "--out", "{out}"],
    &["scale", "--backend", "sim"],
    &["scale", "--backend", "sim", "--json"],
    &["sim", "--bench", "--json"],
    &[
        "report",
        "--no-testbed",
        "--points",
        "6",
        "--messages",
        "1000",
        "--out",
        "{out}",
    ],
    &["run", "--backend", "futex", "--messages", "2000", "--json"],
    &["pingpong", "--backend", "futex", "--json"],
    &[
        "calibrate",
        "--backend",
        "futex",
        "--samples",
        "20",
        "--rounds",
        "1",
        "--gaps",
        "none",
        "--overhead-runs",
        "0",
        "--json",
    ],
    &[
        "validate",
        "--backend",
        "futex",
        "--vary",
        "wp=1us..2us:2",
        "--repeat",
        "1",
        "--messages",
        "2000",
        "--profile",
        "{profile}",
        "--json",
    ],
    &["flags", "--sources", "1,2", "--signals", "2000", "--json"],
    &["--help"],
    &["model", "--help"],
    &["--version"],
];

fn args_with(cmd: &[&str], out: &Path) -> Vec<String> {
    cmd.iter()
        .map(|a| match *a {
            "{out}" => out.display().to_string(),
            "{profile}" => shared_profile("futex", "tx"),
            a => a.to_string(),
        })
        .collect()
}

/// Runs kicklab through `sh -c` with `redirect` applied (`>/dev/full`,
/// `>&-`, ...).
fn with_redirect(args: &[String], redirect: &str) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!("exec \"$0\" \"$@\" {redirect}"))
        .arg(env!("CARGO_BIN_EXE_kicklab"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run sh")
}

fn assert_failed_write(cmd: &[&str], out: &Output, stream: &str, dir: &Path) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{cmd:?}: {err}");
    assert!(!err.contains("panicked"), "{cmd:?}: {err}");
    if !stream.is_empty() {
        // One error line, the last (a run's warnings may come before it).
        let errors = err.lines().filter(|l| l.starts_with("error")).count();
        assert_eq!(errors, 1, "{cmd:?}: one error line: {err}");
        // Nor a claim of files that are not there.
        assert!(!err.contains("wrote "), "{cmd:?}: {err}");
        let last = err.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("error: cannot write to ") && last.contains(stream),
            "{cmd:?}: {err}"
        );
    }
    assert!(!dir.exists(), "{cmd:?} left {}", dir.display());
    let parent = dir.parent().unwrap();
    let left: Vec<_> = std::fs::read_dir(parent)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(&*dir.file_name().unwrap().to_string_lossy()))
        .collect();
    assert!(left.is_empty(), "{cmd:?} left {left:?}");
}

#[test]
fn a_full_or_closed_standard_output_is_one_line_exit_1_and_no_folder() {
    let root = tmp("stdout");
    std::fs::create_dir_all(&root).unwrap();
    // Both redirects of a command at once (nothing here is timed); the
    // simulator's benchmark, seconds on every core, only into a full disk.
    for (i, cmd) in COMMANDS.iter().enumerate() {
        let redirects: &[&str] = if cmd.contains(&"--bench") {
            &[">/dev/full"]
        } else {
            &[">/dev/full", ">&-"]
        };
        std::thread::scope(|s| {
            for (j, redirect) in redirects.iter().enumerate() {
                let dir = root.join(format!("o{i}-{j}"));
                s.spawn(move || {
                    let out = with_redirect(&args_with(cmd, &dir), redirect);
                    assert_failed_write(cmd, &out, "standard output", &dir);
                });
            }
        });
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_full_or_closed_standard_error_fails_only_a_command_that_writes_there() {
    // Bad input: the refusal cannot be written, exit 1 (nothing partial).
    for redirect in ["2>/dev/full", "2>&-"] {
        let out = with_redirect(&["model".into(), "--len".into(), "0".into()], redirect);
        assert_eq!(out.status.code(), Some(1), "{redirect}");
        assert!(out.stdout.is_empty());
    }
    // A run that warns (a transient, not the steady state) loses its
    // warning: exit 1, its result printed.
    let sim: Vec<String> = ["sim", "--messages", "2000"]
        .iter()
        .map(ToString::to_string)
        .collect();
    let out = with_redirect(&sim, "2>/dev/full");
    assert_eq!(out.status.code(), Some(1));
    // A quiet command with standard error closed is done: nothing lost.
    let out = with_redirect(&["model".into()], "2>&-");
    assert_eq!(out.status.code(), Some(0));
    assert!(!out.stdout.is_empty());
}

#[test]
fn arguments_that_are_not_utf8_are_refused_naming_their_flag() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt as _;
    let bad = OsStr::from_bytes(b"\xff");
    let cases: Vec<(Vec<&OsStr>, &str)> = vec![
        (vec![OsStr::new("model"), bad], "not UTF-8"),
        (vec![OsStr::from_bytes(b"--\xff")], "no such flag"),
        (
            vec![
                OsStr::new("model"),
                OsStr::from_bytes(b"--w\xffp"),
                OsStr::new("1us"),
            ],
            "no such flag",
        ),
        (vec![OsStr::new("model"), OsStr::new("--wp"), bad], "--wp:"),
        (
            vec![OsStr::new("model"), OsStr::from_bytes(b"--wp=1\xffus")],
            "--wp:",
        ),
        (
            vec![OsStr::new("sweep"), OsStr::new("--out"), bad],
            "--out:",
        ),
        // After a switch, a positional argument: named as one.
        (
            vec![OsStr::new("replay"), OsStr::new("--control"), bad],
            "replay <DIR>:",
        ),
        (vec![OsStr::new("trace"), bad], "trace <FILE>:"),
    ];
    for (args, needle) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_kicklab"))
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err} lacks {needle}");
        assert!(err.contains("\\xff"), "{args:?}: the byte shown: {err}");
    }
}

#[test]
fn a_path_with_a_newline_stays_one_line() {
    let root = tmp("newline");
    std::fs::create_dir_all(&root).unwrap();
    let file = root.join("a\nb");
    std::fs::write(&file, "x").unwrap();
    let out = kicklab(&["model", "--profile", file.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("a\\nb"), "{err}");
    let _ = std::fs::remove_dir_all(&root);
    // So is the note that says where the files went.
    let out = kicklab(&[
        "map",
        "--messages",
        "0",
        "--x",
        "wp=0.5us..1us:2",
        "--y",
        "wc=0.5us..1us:2",
        "--out",
        root.join("m\nx").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.trim_end().ends_with("m\\nx"), "{err}");
    let _ = std::fs::remove_dir_all(&root);
    // A flag's value with a newline: the one line still names the flag.
    for (args, flag) in [
        (["model", "--wp", "1us\n2us"], "--wp"),
        (["sim", "--messages", "2\n0"], "--messages"),
    ] {
        let out = kicklab(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(flag) && err.contains("\\n"), "{args:?}: {err}");
    }
    // Other control characters and escape sequences are shown escaped,
    // never dropped (a value that reads `1us` in the error was not 1us).
    for (args, shown) in [
        (vec!["model", "--wp", "1\x07us"], "'1\\u{7}us' for '--wp"),
        (
            vec!["model", "--wp", "1\x1b[31mus"],
            "'1\\u{1b}[31mus' for '--wp",
        ),
        (
            vec!["run", "--backend", "fu\x01tex"],
            "'fu\\u{1}tex' for '--backend",
        ),
        (
            vec!["model", "--w\x01p", "1us"],
            "unexpected argument '--w\\u{1}p'",
        ),
    ] {
        let out = kicklab(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(shown), "{args:?}: {err} lacks {shown}");
        assert!(
            !err.chars().any(|c| c.is_control() && c != '\n'),
            "{args:?}: {err:?}"
        );
    }
}

/// A run with kicks and sleeps enough to draw (`--timeline`).
const DRAWN_RUN: [&str; 7] = [
    "run",
    "--backend",
    "futex",
    "--wp",
    "3us",
    "--messages",
    "20000",
];

/// A file a command writes beside its printed result (`--save`,
/// `--timeline`) appears only when the command succeeded: a lost
/// standard output leaves none, and an earlier file stays as it was.
#[test]
fn a_saved_file_appears_only_when_the_output_was_taken() {
    let root = tmp("side-files");
    std::fs::create_dir_all(&root).unwrap();
    let svg = root.join("t.svg");
    let profile = shared_profile("futex", "tx");
    let args = [
        &DRAWN_RUN[..],
        &["--profile", &profile],
        &["--json", "--timeline", svg.to_str().unwrap()],
    ]
    .concat();
    let full = Command::new(env!("CARGO_BIN_EXE_kicklab"))
        .args(&args)
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(
        full.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&full.stderr)
    );
    assert!(leftovers(&root).is_empty(), "{:?}", leftovers(&root));
    std::fs::write(&svg, "earlier").unwrap();
    let full = Command::new(env!("CARGO_BIN_EXE_kicklab"))
        .args(&args)
        .stdout(std::fs::File::create("/dev/full").unwrap())
        .output()
        .unwrap();
    assert_eq!(full.status.code(), Some(1));
    assert_eq!(std::fs::read_to_string(&svg).unwrap(), "earlier");
    assert_eq!(leftovers(&root), ["t.svg"]);
    let ok = kicklab(&args);
    let err = String::from_utf8_lossy(&ok.stderr);
    assert!(ok.status.success(), "{err}");
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    assert!(
        err.trim_end().ends_with(&format!("drew {}", svg.display())),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&root);
}

/// A side file that is standard output or standard error itself (a pipe,
/// a file it is redirected to) would mix the picture or the profile into
/// the printed result or the notes: refused before any work, naming the
/// flag; a terminal or `/dev/null` named again is let be.
#[test]
fn a_side_file_that_is_a_standard_stream_is_refused() {
    let root = tmp("side-stdout");
    std::fs::create_dir_all(&root).unwrap();
    let out = root.join("out.json");
    let cases: [&[&str]; 2] = [
        &[
            "run",
            "--backend",
            "futex",
            "--messages",
            "2000",
            "--json",
            "--timeline",
            "/dev/stdout",
        ],
        &["calibrate", "--backend", "futex", "--save", "/dev/stdout"],
    ];
    for args in cases {
        let flag = args[args.len() - 2];
        // Into a pipe (the test's), and into a file.
        let piped = kicklab(args);
        let to_file = Command::new(env!("CARGO_BIN_EXE_kicklab"))
            .args(args)
            .stdout(std::fs::File::create(&out).unwrap())
            .output()
            .unwrap();
        for o in [piped, to_file] {
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.starts_with(&format!("error: {flag}: /dev/stdout is standard output")),
                "{err}"
            );
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        }
        assert_eq!(std::fs::read(&out).unwrap(), b"", "{args:?}");
    }
    // The same for standard error, which takes the notes.
    let err = kicklab(&["calibrate", "--backend", "futex", "--save", "/dev/stderr"]);
    let text = String::from_utf8_lossy(&err.stderr);
    assert_eq!(err.status.code(), Some(2), "{text}");
    assert!(
        text.starts_with("error: --save: /dev/stderr is standard error"),
        "{text}"
    );
    let null = Command::new(env!("CARGO_BIN_EXE_kicklab"))
        .args(DRAWN_RUN)
        .args(["--profile", &shared_profile("futex", "tx")])
        .args(["--timeline", "/dev/null"])
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(
        null.status.success(),
        "{}",
        String::from_utf8_lossy(&null.stderr)
    );
    let _ = std::fs::remove_dir_all(&root);
}

fn spawn(args: &[String]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_kicklab"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn leftovers(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            found.push(p.strip_prefix(root).unwrap().display().to_string());
        }
    }
    found
}

#[test]
fn a_signal_at_any_moment_leaves_a_whole_folder_or_none() {
    let root = tmp("signal");
    std::fs::create_dir_all(&root).unwrap();
    // A map large enough to be caught computing, drawing and writing.
    let map = |out: &Path| {
        args_with(
            &[
                "map",
                "--x",
                "wp=0.1us..3us:300",
                "--y",
                "wc=0.1us..3us:300",
                "--messages",
                "0",
                "--out",
                "{out}",
            ],
            out,
        )
    };
    for (i, delay_ms) in [20u64, 60, 120, 200, 300, 400, 550, 700, 900]
        .iter()
        .enumerate()
    {
        // SIGHUP (a closed terminal) at every third moment; a test run
        // that ignores it (nohup) sees the map finish, which counts too.
        let hup: &[i32] = if i % 3 == 1 { &[libc::SIGHUP] } else { &[] };
        for &sig in [libc::SIGINT, libc::SIGTERM].iter().chain(hup) {
            let out = root.join(format!("m{i}-{sig}"));
            let mut child = spawn(&map(&out));
            std::thread::sleep(Duration::from_millis(*delay_ms));
            // SAFETY: kill on a child we spawned and have not reaped.
            unsafe {
                libc::kill(child.id() as libc::pid_t, sig);
            }
            let status = child.wait().unwrap();
            let left = leftovers(&root);
            if status.code() == Some(0) {
                // Done before the signal: the whole folder.
                for f in ["map.csv", "index.html", ".kicklab-output"] {
                    assert!(out.join(f).is_file(), "{f} in {}", out.display());
                }
                std::fs::remove_dir_all(&out).unwrap();
            } else {
                // Ended by the signal itself, after its clean-up: no
                // folder, or (the signal came after the folder was
                // committed, before the exit) the whole folder and nothing
                // beside it.
                use std::os::unix::process::ExitStatusExt as _;
                assert_eq!(status.signal(), Some(sig), "{delay_ms} ms: {status:?}");
                if !left.is_empty() {
                    let name = out.file_name().unwrap().to_string_lossy().to_string();
                    assert!(
                        left.iter()
                            .all(|f| f == &name || f.starts_with(&format!("{name}/"))),
                        "{delay_ms} ms, signal {sig}: {left:?}"
                    );
                    for f in ["map.csv", "index.html", ".kicklab-output"] {
                        assert!(
                            out.join(f).is_file(),
                            "{delay_ms} ms, signal {sig}: {f} missing: {left:?}"
                        );
                    }
                    std::fs::remove_dir_all(&out).unwrap();
                }
            }
            assert!(leftovers(&root).is_empty());
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn two_runs_into_one_folder_one_is_refused_and_an_earlier_run_is_replaced_only_with_force() {
    let root = tmp("shared");
    std::fs::create_dir_all(&root).unwrap();
    let out = root.join("o");
    let slow = args_with(
        &[
            "map",
            "--x",
            "wp=0.1us..3us:60",
            "--y",
            "wc=0.1us..3us:60",
            "--messages",
            "20000",
            "--out",
            "{out}",
        ],
        &out,
    );
    let first = spawn(&slow);
    std::thread::sleep(Duration::from_millis(300));
    let second = kicklab(&[
        "sweep",
        "--vary",
        "wp=0.5us..1us:3",
        "--messages",
        "500",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{err}");
    assert!(err.contains("another kicklab run is writing"), "{err}");
    let first = first.wait_with_output().unwrap();
    assert!(first.status.success());
    assert!(out.join("map.csv").is_file(), "the first run's files whole");

    let sweep = |force: bool| {
        let mut a = vec![
            "sweep",
            "--vary",
            "wp=0.5us..1us:3",
            "--messages",
            "500",
            "--out",
            out.to_str().unwrap(),
        ];
        if force {
            a.push("--force");
        }
        kicklab(&a)
    };
    let again = sweep(false);
    let err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{err}");
    assert!(
        err.contains("earlier run (kicklab map)") && err.contains("--force"),
        "{err}"
    );
    assert!(sweep(true).status.success());
    assert!(out.join("sweep.csv").is_file());
    assert!(!out.join("map.csv").exists(), "no stale file from the map");
    assert_eq!(
        leftovers(&root)
            .iter()
            .filter(|p| !p.starts_with("o"))
            .count(),
        0
    );

    // A folder of someone else's files: never replaced, even with --force.
    let theirs = root.join("theirs");
    std::fs::create_dir_all(&theirs).unwrap();
    std::fs::write(theirs.join("notes.txt"), "mine").unwrap();
    let out = kicklab(&[
        "sweep",
        "--vary",
        "wp=0.5us..1us:3",
        "--force",
        "--out",
        theirs.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("did not write"), "{err}");
    assert_eq!(
        std::fs::read_to_string(theirs.join("notes.txt")).unwrap(),
        "mine"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_refused_out_leaves_none_of_the_parents_it_would_have_made() {
    let root = tmp("parents");
    std::fs::create_dir_all(&root).unwrap();
    let long = "n".repeat(300);
    let out = root.join("a/b").join(&long).join("c");
    let r = kicklab(&[
        "sweep",
        "--vary",
        "wp=0.5us..1us:3",
        "--out",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(err.contains("--out"), "{err}");
    assert!(leftovers(&root).is_empty(), "{:?}", leftovers(&root));
    let _ = std::fs::remove_dir_all(&root);
}

/// A file-size limit (`ulimit -f`) makes every write past it fail as a
/// full disk would (EFBIG, with SIGXFSZ ignored).
fn size_limited(args: &[String], blocks: u32) -> Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; ulimit -f {blocks}; exec \"$0\" \"$@\""
        ))
        .arg(env!("CARGO_BIN_EXE_kicklab"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run sh")
}

/// An `--out` folder that cannot even be begun because the disk is full
/// (here a file-size limit of nothing): a failed write, exit 1, in one
/// line naming the flag; a folder that cannot be made is bad input, exit 2.
#[test]
fn an_out_folder_on_a_full_disk_is_a_failed_write_not_bad_input() {
    let root = tmp("full-at-start");
    std::fs::create_dir_all(&root).unwrap();
    let sweep = COMMANDS.iter().find(|c| c[0] == "sweep").unwrap();
    let full = size_limited(&args_with(sweep, &root.join("o")), 0);
    let err = String::from_utf8_lossy(&full.stderr);
    assert_eq!(full.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.starts_with("error: --out: cannot write "), "{err}");
    assert!(leftovers(&root).is_empty(), "{:?}", leftovers(&root));
    let not_a_folder = root.join("f");
    std::fs::write(&not_a_folder, "x").unwrap();
    let args = args_with(sweep, &not_a_folder.join("o"));
    let bad = kicklab(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(err.starts_with("error: --out: "), "{err}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_disk_that_fills_leaves_no_partial_folder() {
    let root = tmp("full");
    std::fs::create_dir_all(&root).unwrap();
    for (i, cmd) in COMMANDS.iter().filter(|c| c.contains(&"{out}")).enumerate() {
        let dir = root.join(format!("o{i}"));
        let out = size_limited(&args_with(cmd, &dir), 2);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{cmd:?}: {err}");
        assert!(!err.contains("panicked"), "{cmd:?}: {err}");
        let last = err.trim_end().lines().last().unwrap_or_default();
        assert!(last.starts_with("error: "), "{cmd:?}: {err}");
        assert!(
            leftovers(&root).is_empty(),
            "{cmd:?}: {:?}",
            leftovers(&root)
        );
    }
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_signal_during_any_folder_writing_command_leaves_its_folder_whole_or_none() {
    let root = tmp("signal-all");
    std::fs::create_dir_all(&root).unwrap();
    for (i, cmd) in COMMANDS.iter().filter(|c| c.contains(&"{out}")).enumerate() {
        // Early and close together: the first milliseconds are when the
        // folder is being made.
        for (j, delay_ms) in [2u64, 4, 6, 9, 40, 150].iter().enumerate() {
            let out = root.join(format!("c{i}-{j}"));
            let mut child = spawn(&args_with(cmd, &out));
            std::thread::sleep(Duration::from_millis(*delay_ms));
            // SAFETY: kill on a child we spawned and have not reaped.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
            }
            let status = child.wait().unwrap();
            if status.code() == Some(0) {
                assert!(out.join(".kicklab-output").is_file(), "{cmd:?}");
                std::fs::remove_dir_all(&out).unwrap();
            } else {
                // Ended by the signal: no folder, or (the signal came after
                // the folder was committed, before the exit) the whole
                // folder, marked, and nothing beside it.
                use std::os::unix::process::ExitStatusExt as _;
                assert_eq!(status.signal(), Some(libc::SIGTERM), "{cmd:?}: {status:?}");
                if out.exists() {
                    assert!(
                        out.join(".kicklab-output").is_file(),
                        "{cmd:?} after {delay_ms} ms: unmarked {:?}",
                        leftovers(&root)
                    );
                    std::fs::remove_dir_all(&out).unwrap();
                }
            }
            assert!(
                leftovers(&root).is_empty(),
                "{cmd:?} after {delay_ms} ms: {:?}",
                leftovers(&root)
            );
        }
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// `calibrate --save` on a full disk or stopped by a signal: the profile
/// that was there stays whole, no temporary file is left, and the error
/// names the flag and the path.
#[test]
fn a_save_that_fails_keeps_the_old_profile() {
    let root = tmp("save");
    std::fs::create_dir_all(&root).unwrap();
    let profile = root.join("p.json");
    let quick = |save: &Path| -> Vec<String> {
        [
            "calibrate",
            "--backend",
            "futex",
            "--samples",
            "20",
            "--rounds",
            "1",
            "--gaps",
            "none",
            "--overhead-runs",
            "0",
            "--save",
        ]
        .iter()
        .map(ToString::to_string)
        .chain([save.display().to_string()])
        .collect()
    };
    let first = Command::new(env!("CARGO_BIN_EXE_kicklab"))
        .args(quick(&profile))
        .output()
        .unwrap();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let old = std::fs::read(&profile).unwrap();
    // Room for the calibration's output on the terminal, not for the file.
    let out = size_limited(&quick(&profile), 1);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let last = err.trim_end().lines().last().unwrap_or_default();
    assert!(
        last.starts_with("error: --save: ") && last.contains(&*profile.display().to_string()),
        "{err}"
    );
    assert_eq!(
        std::fs::read(&profile).unwrap(),
        old,
        "the old profile whole"
    );
    assert_eq!(leftovers(&root), ["p.json"]);

    let mut child = spawn(&quick(&profile));
    std::thread::sleep(Duration::from_millis(300));
    // SAFETY: kill on a child we spawned and have not reaped.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGINT);
    }
    let _ = child.wait().unwrap();
    assert_eq!(leftovers(&root), ["p.json"]);
    assert!(
        serde_json::from_slice::<serde_json::Value>(&std::fs::read(&profile).unwrap()).is_ok(),
        "a whole profile"
    );
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn force_replaces_only_the_files_an_earlier_run_wrote_and_a_linked_out_keeps_its_link() {
    let root = tmp("force-mine");
    std::fs::create_dir_all(&root).unwrap();
    let out = root.join("o");
    let sweep = |dir: &Path, force: bool| {
        let mut a = vec![
            "sweep".to_string(),
            "--vary".into(),
            "wp=0.5us..1us:3".into(),
            "--messages".into(),
            "500".into(),
            "--out".into(),
            dir.display().to_string(),
        ];
        if force {
            a.push("--force".into());
        }
        Command::new(env!("CARGO_BIN_EXE_kicklab"))
            .args(&a)
            .output()
            .unwrap()
    };
    assert!(sweep(&out, false).status.success());
    std::fs::write(out.join("my-notes.txt"), "mine").unwrap();
    let r = sweep(&out, true);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(err.contains("did not write"), "{err}");
    assert_eq!(
        std::fs::read_to_string(out.join("my-notes.txt")).unwrap(),
        "mine"
    );
    std::fs::remove_file(out.join("my-notes.txt")).unwrap();
    assert!(sweep(&out, true).status.success());

    // --out a link to a folder: the folder it names is written, the link
    // stays a link.
    let real = root.join("real");
    std::fs::create_dir_all(&real).unwrap();
    let link = root.join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let r = sweep(&link, false);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(link.is_symlink());
    assert!(real.join("sweep.csv").is_file());
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_save_to_a_fifo_that_nothing_reads_is_refused_before_any_work() {
    use std::os::unix::ffi::OsStrExt as _;
    let root = tmp("fifo");
    std::fs::create_dir_all(&root).unwrap();
    let fifo = root.join("profile.json");
    let path = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let mut child = Command::new(env!("CARGO_BIN_EXE_kicklab"))
        .args([
            "calibrate",
            "--backend",
            "futex",
            "--samples",
            "20",
            "--save",
        ])
        .arg(&fifo)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            panic!("still waiting on the FIFO after 20 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("--save") && err.contains("FIFO"), "{err}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_file_size_limit_is_a_failed_write_with_nothing_left() {
    // `ulimit -f 1` (512 bytes): the charts pass it; the kernel's SIGXFSZ
    // would kill the process with its staged files left behind.
    let root = tmp("fsize");
    std::fs::create_dir_all(&root).unwrap();
    let out = root.join("o");
    let run = Command::new("sh")
        .arg("-c")
        .arg("ulimit -f 1 && exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_kicklab"))
        .args([
            "sweep",
            "--vary",
            "wp=0.1us..3us:20",
            "--messages",
            "2000",
            "--out",
        ])
        .arg(&out)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{err}");
    assert!(
        err.trim_end().lines().count() == 1 && err.contains("File too large"),
        "{err}"
    );
    assert!(leftovers(&root).is_empty(), "{:?}", leftovers(&root));
    let _ = std::fs::remove_dir_all(&root);
}

/// A temporary folder the CPU lock cannot use: the run goes on, and says
/// once that a run started beside it will not wait for it.
#[test]
fn a_lock_file_that_cannot_be_made_is_a_warning_and_the_run_goes_on() {
    let profile = shared_profile("futex", "tx");
    let out = Command::new(env!("CARGO_BIN_EXE_kicklab"))
        .args(["run", "--backend", "futex", "--messages", "2000"])
        .args(["--profile", &profile, "--json"])
        .env("TMPDIR", "/nonexistent/kicklab-tmp")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let said: Vec<_> = err.lines().filter(|l| l.contains("cpus.lock")).collect();
    assert_eq!(said.len(), 1, "{err}");
    assert!(
        said[0].starts_with("warning: a kicklab run started beside this one will not wait")
            && said[0].contains("/nonexistent/kicklab-tmp/kicklab-cpus.lock")
            && said[0].ends_with("point TMPDIR at a writable folder"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["messages"], 2000, "{v}");
}
