//! `kicklab`: the command-line front end. Thin: parsing, printing and
//! progress bars; the work is in the `kicklab-*` library crates.
//!
//! The process starts at a C `main` of its own rather than Rust's: Rust's
//! start-up points a closed descriptor 0-2 at `/dev/null` before any of
//! kicklab runs, and a command whose standard output was closed (`exec
//! 1>&-`) then exited 0 with its result lost. Here the descriptors are
//! looked at first ([`out::guard_std_fds`]).
#![cfg_attr(not(test), no_main)]

#[macro_use]
mod out;

mod advise_cmd;
mod args;
mod bench;
mod calibrate_cmd;
mod control_cmd;
mod files;
mod flags_cmd;
mod map_cmd;
mod model_cmd;
mod pingpong_cmd;
mod qos_cmd;
mod replay_cmd;
mod report_cmd;
mod run_cmd;
mod scale_cmd;
mod sim_cmd;
mod sweep_cmd;
mod validate_cmd;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Bad input: printed as one line on stderr, exit code 2.
#[derive(Debug)]
pub struct Usage(pub String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Usage {}

#[derive(Debug, Parser)]
#[command(
    name = "kicklab",
    version,
    about = "Model, simulate and measure producer/consumer synchronization (kicks, interrupts, wake-ups).",
    long_about = "kicklab studies a producer P and a consumer C that exchange messages through a queue of L slots \
and wake each other with notifications (kicks, interrupts) when one of them sleeps. Small speed differences flip \
the pair between operating regimes (Rizzo et al., ANCS 2016): GP (polling), FC (fast consumer), FP (fast producer), \
SCS / SPS (slow consumer / producer start-up) and SS (both slow), and, where a kick is seen before it ends \
(--vp, --vc), EWC / EWP (early-woken consumer / producer), with very different throughput and CPU cost.\n\n\
Durations take a unit (ns, us, µs, ms, s; a bare number is ns). Every command's defaults are the paper's Fig. 4 \
set-up: --len 256 --wp 1us --wc 1.1us --kp 1 --kc 1 --np 2.4us --nc 0.2us --sp 3.9us --sc 0.2us.",
    after_help = "Examples:\n  kicklab model --wp 2us                             # regime, T and E in closed form\n  kicklab sim --wp exp:2us --messages 1000000        # the same, simulated with random work\n  kicklab sweep --vary wp=0.1us..3us:100             # Fig. 2/3 as CSV + SVG\n  kicklab calibrate --backend kvm --save kvm.json    # N and S with the producer in a KVM guest\n  kicklab validate --backend kvm --profile kvm.json  # Fig. 4 on this machine, guest and host\n  kicklab pingpong --backend kvm                     # request/response under guest idle strategies\n  kicklab report                                     # every figure, one HTML page"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// Closed-form model: the regime, the time per message T, the CPU cost per message E, the batch size m.
    Model(model_cmd::ModelArgs),
    /// Event simulation following the model's rules exactly; costs may be distributions.
    Sim(sim_cmd::SimArgs),
    /// Vary one parameter; model and simulator at every point (CSV + SVG, the paper's Fig. 2 and 3).
    Sweep(sweep_cmd::SweepArgs),
    /// Measure this machine's notification costs N and start-up costs S for a backend.
    Calibrate(calibrate_cmd::CalibrateArgs),
    /// Run the pair for real: two pinned threads, or a thread and a KVM guest, over a shared-memory ring.
    Run(run_cmd::RunArgs),
    /// The paper's Fig. 4 on this machine: model, simulator and measurement while W_P varies.
    Validate(validate_cmd::ValidateArgs),
    /// Request/response rate under the responder's idle strategies (van Riel's message-passing study).
    Pingpong(pingpong_cmd::PingPongArgs),
    /// Every wait strategy (KVM halt polling, haltpoll, hybrid polling, NAPI deferral, ..., kicklab's adaptive) against polling, simulated or for real (the paper's Fig. 5).
    Control(control_cmd::ControlArgs),
    /// The wait strategy to use for a pair and a workload (paper's costs or a profile), searched with the simulator.
    Advise(advise_cmd::AdviseArgs),
    /// Several VMs sharing one device: shared vs direct path, rate limits at the device or after receive (Lakshmi and Nandy).
    Qos(qos_cmd::QosArgs),
    /// Idle-with-timeout at scale (Denali): N guests time-sharing the CPUs, idling by spinning or with a timeout.
    Scale(scale_cmd::ScaleArgs),
    /// One consumer watching many sources: a system call over an eventfd each, or a shared-memory bit vector (VMware).
    Flags(flags_cmd::FlagsArgs),
    /// The regime, T and E over a grid of two parameters (e.g. W_P x W_C), model beside simulator, as 2-D maps.
    Map(map_cmd::MapArgs),
    /// Reproduce the figures and tables as one HTML page with plots.
    Report(report_cmd::ReportArgs),
    /// Forecast recorded validations again from their profiles and judge the forecasts (coverage, sharpness); also `validate --replay DIR`.
    Replay(replay_cmd::ReplayArgs),
}

/// The process's entry point (see the crate doc): the exit code of
/// [`kicklab`].
#[cfg(not(test))]
#[no_mangle]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    // Before anything opens a file: a closed 1 or 2 is seen, and taken.
    out::guard_std_fds();
    // A panic must not unwind out of a C function (that aborts, and no
    // staged folder is removed): caught here, after the unwinding removed
    // them, it is exit 101 as in any Rust program.
    match std::panic::catch_unwind(kicklab) {
        Ok(code) => libc::c_int::from(code),
        Err(_) => 101,
    }
}

/// The unit-test build's harness owns `main`: this keeps the command path
/// live there, so that it is compiled and linted the same.
#[cfg(test)]
#[allow(dead_code)]
fn entry_under_test() -> u8 {
    out::guard_std_fds();
    kicklab()
}

/// Parses, runs the command and prints; the exit code: 0 done, 1 failed
/// (an I/O error, a write that failed, the machine), 2 bad input.
fn kicklab() -> u8 {
    ignore_sigpipe();
    files::remove_temporaries_on_signals();
    if let Some(line) = non_utf8_argument() {
        errln!("error: {}", one_line(&line));
        return out::finish(2);
    }
    let parsed = Cli::command()
        .try_get_matches_from(replay_alias(std::env::args_os().collect()))
        .and_then(|m| Cli::from_arg_matches(&m).map(|c| (c, m)));
    let (cli, matches) = match parsed {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let text = if e.use_stderr() {
                    e.render().to_string()
                } else if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                    e.render().ansi().to_string()
                } else {
                    e.render().to_string()
                };
                if e.use_stderr() {
                    errln!("{}", text.trim_end());
                } else {
                    outln!("{}", text.trim_end());
                }
                return out::finish(
                    if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                        2
                    } else {
                        0
                    },
                );
            }
            errln!("{}", one_line(&one_line_error(&e)));
            return out::finish(2);
        }
    };
    if let Some(line) = overridden_flag(&cli.cmd, &matches).or_else(|| bench_flag(&matches)) {
        errln!("error: {}", one_line(&line));
        return out::finish(2);
    }
    // Said once the command ran: bad input stays one line.
    let notes = unused_flags(&cli.cmd, &matches);
    kicklab_testbed::cpu_lock::on_wait(say_waiting_for_cpus);
    let result = match cli.cmd {
        Cmd::Model(a) => model_cmd::run(&a),
        Cmd::Sim(a) => sim_cmd::run(&a),
        Cmd::Sweep(a) => sweep_cmd::run(&a),
        Cmd::Calibrate(a) => calibrate_cmd::run(&a),
        Cmd::Run(a) => run_cmd::run(&a),
        Cmd::Validate(a) => validate_cmd::run(&a),
        Cmd::Pingpong(a) => pingpong_cmd::run(&a),
        Cmd::Control(a) => control_cmd::run(&a),
        Cmd::Advise(a) => advise_cmd::run(&a),
        Cmd::Qos(a) => qos_cmd::run(&a),
        Cmd::Scale(a) => scale_cmd::run(&a),
        Cmd::Flags(a) => flags_cmd::run(&a),
        Cmd::Map(a) => map_cmd::run(&a),
        Cmd::Report(a) => report_cmd::run(&a),
        Cmd::Replay(a) => replay_cmd::run(&a),
    };
    match result {
        Ok(()) => {
            for note in notes {
                errln!("note: {}", one_line(&note));
            }
            out::finish(0)
        }
        // A lost standard output or error: `finish` says which, once.
        Err(e) if out::is_write_failure(&e) => out::finish(1),
        Err(e) => match usage_of(&e) {
            Some(line) => {
                errln!("error: {}", one_line(&line));
                out::finish(2)
            }
            None => {
                errln!("error: {}", one_line(&format!("{e:#}")));
                out::finish(1)
            }
        },
    }
}

/// Said when another kicklab process holds the CPUs this one's real runs
/// pin ([`kicklab_testbed::cpu_lock`]): the run waits for it.
fn say_waiting_for_cpus(holder: Option<u32>) {
    errln!(
        "note: another kicklab run{} is using this machine's CPUs for real runs; \
         waiting for it to finish ...",
        holder.map(|p| format!(" (pid {p})")).unwrap_or_default()
    );
}

/// `kicklab validate --replay DIR ...` as `kicklab replay DIR ...`: a
/// replay runs nothing, so none of validate's own flags (its required
/// `--backend`) apply.
fn replay_alias(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    if args.get(1).is_none_or(|a| a != "validate") {
        return args;
    }
    let at = args
        .iter()
        .position(|a| a == "--replay" || a.to_str().is_some_and(|a| a.starts_with("--replay=")));
    let Some(at) = at else {
        return args;
    };
    let mut out: Vec<std::ffi::OsString> = vec![args[0].clone(), "replay".into()];
    for (i, a) in args.iter().enumerate().skip(2) {
        if i == at {
            if let Some(dir) = a.to_str().and_then(|a| a.strip_prefix("--replay=")) {
                out.push(dir.into());
            }
        } else {
            out.push(a.clone());
        }
    }
    out
}

/// `line` on one line: control characters (a newline in a path, say)
/// shown escaped, so that an error stays the one line it claims to be.
fn one_line(line: &str) -> String {
    if !line.chars().any(char::is_control) {
        return line.to_string();
    }
    line.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// The command line's arguments as text, with any byte that is not UTF-8
/// replaced (for hints only: [`non_utf8_argument`] refuses such
/// arguments before anything reads them).
fn args_text() -> Vec<String> {
    std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// The refusal of an argument that is not UTF-8 text, naming its flag
/// where there is one (`--wp: its value is not UTF-8 text: \xff`);
/// `None` where every argument is text.
fn non_utf8_argument() -> Option<String> {
    use std::os::unix::ffi::OsStrExt as _;
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let shown = |a: &std::ffi::OsStr| {
        let mut text = String::new();
        for chunk in a.as_bytes().utf8_chunks() {
            text.push_str(chunk.valid());
            for b in chunk.invalid() {
                text.push_str(&format!("\\x{b:02x}"));
            }
        }
        kicklab_model::shown(&text)
    };
    let i = args.iter().position(|a| a.to_str().is_none())?;
    let arg = &args[i];
    let bytes = arg.as_bytes();
    if bytes.starts_with(b"--") {
        if let Some(eq) = bytes.iter().position(|&b| b == b'=') {
            if let Ok(flag) = std::str::from_utf8(&bytes[..eq]) {
                return Some(format!(
                    "{flag}: its value is not UTF-8 text: {}",
                    shown(arg)
                ));
            }
        }
    }
    if bytes.starts_with(b"-") {
        return Some(format!(
            "{}: no such flag (it is not UTF-8 text; kicklab's flags are ASCII)",
            shown(arg)
        ));
    }
    match i.checked_sub(1).and_then(|p| args[p].to_str()) {
        Some(flag) if flag.starts_with('-') && !flag.contains('=') => Some(format!(
            "{flag}: its value is not UTF-8 text: {}",
            shown(arg)
        )),
        _ => Some(format!(
            "{}: an argument that is not UTF-8 text (kicklab reads its arguments as UTF-8)",
            shown(arg)
        )),
    }
}

/// A parameter flag given on the command line that the subcommand sets
/// itself (`sweep --vary wp=... --wp 2us`: the sweep's W_P wins), refused
/// rather than ignored without a word. A distribution given for a swept
/// cost is not ignored: the sweep sets its mean and keeps its shape
/// (`--vary wp=0.1us..3us:30 --wp exp:1us` sweeps exponential work), so
/// only a constant (or a count) is refused; `control` takes W_P from its
/// workloads whatever the flag says.
fn overridden_flag(cmd: &Cmd, matches: &clap::ArgMatches) -> Option<String> {
    let (name, sets): (&str, Vec<(kicklab_model::Param, &str)>) = match cmd {
        Cmd::Sweep(a) => ("sweep", vec![(a.vary.param, "--vary")]),
        Cmd::Map(a) => ("map", vec![(a.x.param, "--x"), (a.y.param, "--y")]),
        Cmd::Validate(a) => ("validate", vec![(a.vary.param, "--vary")]),
        Cmd::Control(_) => ("control", vec![(kicklab_model::Param::Wp, "--range")]),
        _ => return None,
    };
    let sub = matches.subcommand_matches(name)?;
    let shape_kept = |param: kicklab_model::Param| {
        name != "control"
            && !param.is_count()
            && sub
                .get_raw(param.name())
                .and_then(|mut v| v.next())
                .and_then(|v| v.to_str())
                .and_then(|v| kicklab_model::Cost::parse(v).ok())
                .is_some_and(|c| !matches!(c, kicklab_model::Cost::Const(_)))
    };
    sets.into_iter().find_map(|(param, by)| {
        let id = param.name();
        let given = sub.try_get_raw(id).ok().flatten().is_some()
            && sub.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
            && !shape_kept(param);
        given.then(|| {
            format!(
                "--{id}: {name} sets {} itself ({by}); leave --{id} out{}",
                param.symbol(),
                if param.is_count() || name == "control" {
                    String::new()
                } else {
                    format!(" (a distribution there keeps its shape: {name} sets its mean)")
                }
            )
        })
    })
}

/// Flags given on the command line that this combination leaves unused
/// (`qos --backend futex --kick 5us`: the real stages pay their own
/// kicks), each said on stderr with the reason once the command ran
/// (after its output: a refusal of bad input stays one line).
/// Noted, not refused: a script that loops over strategies or backends
/// with the same flags (`--latency` for every strategy, `--flush` for
/// every batch size) must not stop at the one that has no use for them.
fn unused_flags(cmd: &Cmd, matches: &clap::ArgMatches) -> Vec<String> {
    let Some((_, sub)) = matches.subcommand() else {
        return Vec::new();
    };
    let given = |id: &str| {
        sub.try_get_raw(id).is_ok()
            && sub.value_source(id) == Some(clap::parser::ValueSource::CommandLine)
    };
    match cmd {
        Cmd::Model(a) => a.unused(&given),
        Cmd::Sim(a) => a.unused(&given),
        Cmd::Run(a) => a.unused(&given),
        Cmd::Qos(a) => a.unused(&given),
        _ => Vec::new(),
    }
}

/// clap's error as one line: its first line names the flag and the
/// problem; for a missing argument the flags follow on the next lines
/// (with the values `--backend` takes); clap's tip (a similar flag or
/// subcommand) and the possible values, where it gives them, are kept in
/// parentheses.
fn one_line_error(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut out = shorten_echo(lines.next().unwrap_or("error: bad arguments"));
    let rest: Vec<&str> = lines.collect();
    if e.kind() == clap::error::ErrorKind::MissingRequiredArgument {
        let missing: Vec<String> = rest
            .iter()
            .take_while(|l| l.starts_with("--") || l.starts_with('<'))
            .map(|l| match l.split_whitespace().next() {
                Some("--backend") => format!("{l} (futex, eventfd, pipe or kvm)"),
                _ => (*l).to_string(),
            })
            .collect();
        out = format!("{out} {}", missing.join(", "));
    }
    // `--strategy-p` where only `--strategy` is (model, sweep, map): say
    // where the per-party flags are, where clap's nearest flag (`--start`)
    // would mislead.
    if e.kind() == clap::error::ErrorKind::UnknownArgument {
        let arg = e
            .get(clap::error::ContextKind::InvalidArg)
            .map(ToString::to_string)
            .unwrap_or_default();
        let flag = arg.split('=').next().unwrap_or_default();
        let side = flag
            .strip_prefix("--strategy")
            .or_else(|| flag.strip_prefix("--mode"));
        let args = args_text();
        let sub = args.iter().skip(1).find(|a| !a.starts_with('-'));
        let names_strategies = matches!(
            sub.map(String::as_str),
            Some("model" | "sim" | "sweep" | "map" | "run")
        );
        // `-wp 2us`: clap reads `-w`; the user meant a long flag.
        if let Some(word) = args
            .iter()
            .skip(1)
            .find(|a| {
                !flag.is_empty()
                    && a.starts_with('-')
                    && !a.starts_with("--")
                    && a.len() > 2
                    && a.starts_with(flag)
            })
            .filter(|a| a[1..].bytes().all(|b| b.is_ascii_alphabetic() || b == b'-'))
        {
            return format!("{out} (a long flag takes two dashes: -{word})");
        }
        if let (true, Some(side @ ("-p" | "-c"))) = (names_strategies, side) {
            return format!(
                "{out} (--strategy{side} is sim's and run's; here --strategy sets both parties)"
            );
        }
    }
    let hints: Vec<&str> = rest
        .iter()
        .filter_map(|l| {
            l.strip_prefix("tip: ")
                .or_else(|| l.strip_prefix('[').and_then(|v| v.strip_suffix(']')))
        })
        .filter(|h| !h.starts_with("to pass ") && !h.starts_with("to see "))
        .collect();
    if !hints.is_empty() {
        out = format!("{out} ({})", hints.join("; "));
    }
    out
}

/// clap's line with the value it repeats (`invalid value '...' for`)
/// cut as kicklab's own messages cut one ([`kicklab_model::shown`]): a
/// 5000-character value is not repeated whole.
fn shorten_echo(line: &str) -> String {
    const START: &str = "invalid value '";
    const END: &str = "' for '";
    let Some(a) = line.find(START).map(|i| i + START.len()) else {
        return line.to_string();
    };
    let Some(b) = line[a..].find(END).map(|i| a + i) else {
        return line.to_string();
    };
    format!(
        "{}{}{}",
        &line[..a],
        kicklab_model::shown(&line[a..b]),
        &line[b..]
    )
}

/// A flag beside `sim --bench` other than `--json`: the benchmark runs
/// its own pairs and sizes, so the flag would be ignored without a word.
fn bench_flag(matches: &clap::ArgMatches) -> Option<String> {
    let sub = matches.subcommand_matches("sim")?;
    if !sub.get_flag("bench") {
        return None;
    }
    sub.ids()
        .map(clap::Id::as_str)
        .filter(|id| !matches!(*id, "bench" | "json"))
        .find(|id| sub.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
        .map(|id| {
            format!(
                "--{}: sim --bench measures the simulator on its own pairs and sizes; \
                 leave --{0} out (only --json goes with --bench)",
                id.replace('_', "-")
            )
        })
}

/// A closed pipe (`kicklab sweep ... | head -1`) becomes a failed write
/// like any other (one line, exit 1, no folder left behind) rather than a
/// death by SIGPIPE in the middle of writing files.
fn ignore_sigpipe() {
    // SAFETY: called first thing in `main`, before any other thread
    // exists; SIG_IGN is a valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// A testbed error caused by the input, naming the flag of the setting.
fn testbed_usage(t: &kicklab_testbed::TestbedError) -> Option<String> {
    use kicklab_testbed::{Setting, TestbedError};
    match t {
        TestbedError::Params(p) => Some(param_usage(p)),
        TestbedError::Invalid { what, reason } | TestbedError::Limit { what, reason } => {
            let f = match what {
                Setting::Len => "--len",
                Setting::Messages | Setting::Warmup => "--messages",
                Setting::Batch => "--batch",
                Setting::Flush => "--flush",
                Setting::Work => "--work",
                Setting::Timer => "--timer",
                Setting::Spin | Setting::Strategy => "--strategy",
                Setting::Samples => "--samples",
                Setting::Gap => "--gap",
                Setting::Gaps => "--gaps",
                Setting::Runs => "--overhead-runs",
                Setting::Idle => "--idle",
                Setting::HaltPoll => "--halt-poll",
                Setting::Vms => "--vms",
                Setting::Timeout => return None,
            };
            Some(format!("{f}: {reason}"))
        }
        _ => None,
    }
}

/// A parameter error as the command line says it: `--kp (k_P): ...`.
pub fn param_usage(e: &kicklab_model::ParamError) -> String {
    format!("--{} ({}): {}", e.param.name(), e.param.symbol(), e.reason)
}

/// A library error that was caused by the user's input, rendered as one
/// line naming the flag; `None` for everything else (exit 1).
///
/// The libraries name parameters ([`kicklab_model::Param`]) and fields,
/// never flags: this is the one place that maps them to the command line.
fn usage_of(e: &anyhow::Error) -> Option<String> {
    use kicklab_model::{ModelError, ParamError};
    use kicklab_sim::SimError;
    let param = param_usage;
    if let Some(u) = e.downcast_ref::<Usage>() {
        return Some(u.to_string());
    }
    if let Some(p) = e.downcast_ref::<ParamError>() {
        return Some(param(p));
    }
    if let Some(v) = e.downcast_ref::<kicklab_sim::VaryError>() {
        return Some(format!("--vary: {v}"));
    }
    if let Some(m) = e.downcast_ref::<ModelError>() {
        return Some(match m {
            ModelError::Params(p) => param(p),
            ModelError::NoClosedForm => format!("--strategy: {m}: use `kicklab sim`"),
        });
    }
    if let Some(t) = e.downcast_ref::<kicklab_testbed::TestbedError>() {
        return testbed_usage(t);
    }
    if let Some(l) = e.downcast_ref::<kicklab_lab::LabError>() {
        use kicklab_lab::LabError;
        return match l {
            LabError::Testbed(t) => testbed_usage(t),
            LabError::Input {
                input: kicklab_lab::Input::Axes,
                reason,
            } => Some(format!("--x, --y: {reason}")),
            LabError::Input {
                input: kicklab_lab::Input::StageWork,
                reason,
            } => Some(format!("--shared/--vm-service: {reason}")),
            LabError::Input { input, reason } => {
                Some(format!("--{}: {reason}", input.name().replace('_', "-")))
            }
            LabError::Param(p)
            | LabError::Model(ModelError::Params(p))
            | LabError::Sim(SimError::Params(p)) => Some(param(p)),
            LabError::Model(m) => usage_of(&anyhow::Error::new(m.clone())),
            LabError::Sim(s) => usage_of(&anyhow::Error::new(s.clone())),
            _ => None,
        };
    }
    if let Some(s) = e.downcast_ref::<SimError>() {
        return match s {
            SimError::Params(p) => Some(param(p)),
            // "messages: ..." names the input; its flag is the same word.
            SimError::NoMessages
            | SimError::TooManyMessages(_)
            | SimError::StudyTooLarge { .. } => Some(format!("--{s}")),
            SimError::Mode { .. } | SimError::TooManyEvents { .. } => {
                Some(format!("--strategy: {s}"))
            }
            SimError::SweepPoint { .. } => Some(format!("--vary: {s}")),
            SimError::TimeOverflow => Some(format!("--messages: {s}: simulate fewer")),
            // "batch: ..." / "flush: ..." name their flags.
            SimError::Combine(_) => Some(format!("--{s}")),
            // Only a profile sets it.
            SimError::Nap { .. } => Some(format!("--profile: {s}")),
            SimError::Deadlock { .. } => None,
        };
    }
    None
}

/// Messages per second at `t_ns` a message, as the text output shows it
/// (no number where T is 0: zero work and zero costs, or a window that
/// freed a burst at one instant).
pub(crate) fn rate_text(t_ns: f64) -> String {
    let rate = 1e9 / t_ns;
    if t_ns > 0.0 && rate >= 10.0 {
        format!("{rate:.0} messages/s")
    } else if t_ns > 0.0 && rate >= 0.001 {
        // Three significant digits: 1.25, 0.0417.
        let digits = usize::try_from((2 - rate.log10().floor() as i64).max(0)).unwrap_or(0);
        format!("{rate:.digits$} messages/s")
    } else if t_ns > 0.0 {
        format!("{rate:.3e} messages/s")
    } else {
        "no rate: T is 0".into()
    }
}

/// The binary's [`kicklab_lab::Progress`]: a bar per stage on stderr
/// (hidden when stderr is not a terminal) and notes as lines.
#[derive(Default)]
pub struct Bars(std::sync::Mutex<Option<indicatif::ProgressBar>>);

impl Bars {
    fn bar(&self) -> std::sync::MutexGuard<'_, Option<indicatif::ProgressBar>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl kicklab_lab::Progress for Bars {
    fn start(&self, what: &str, len: u64) {
        *self.bar() = Some(progress(len, what));
    }
    fn step(&self) {
        if let Some(b) = &*self.bar() {
            b.inc(1);
        }
    }
    fn finish(&self) {
        if let Some(b) = self.bar().take() {
            b.finish_and_clear();
        }
    }
    fn note(&self, line: &str) {
        match &*self.bar() {
            Some(b) => b.suspend(|| errln!("{line}")),
            None => errln!("{line}"),
        }
    }
}

/// Fails (a [`Usage`] naming `flag`) where a list flag names an item twice
/// (`--vms 1,1`): it would run the same thing again, or the last would
/// silently win.
///
/// # Errors
///
/// A [`Usage`] error naming the item.
pub fn no_repeats<T: PartialEq + std::fmt::Debug>(flag: &str, items: &[T]) -> anyhow::Result<()> {
    match kicklab_model::first_repeat(items) {
        Some(x) => Err(Usage(format!(
            "{flag}: {} is listed twice (each runs once)",
            format!("{x:?}").to_lowercase().replace('"', "")
        ))
        .into()),
        None => Ok(()),
    }
}

/// A progress bar on stderr (hidden when stderr is not a terminal).
pub fn progress(len: u64, what: &str) -> indicatif::ProgressBar {
    let bar = if out::stderr_is_terminal() {
        indicatif::ProgressBar::new(len)
    } else {
        indicatif::ProgressBar::hidden()
    };
    bar.set_style(
        indicatif::ProgressStyle::with_template(
            "{msg:>12} [{bar:40}] {pos}/{len} points, {elapsed} elapsed, ~{eta} left",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}

/// What `sim` and `run` both print: the T, E, notifications and sleeps
/// lines (times in ns, counts over `messages`).
pub struct RateLines {
    /// Time per message [ns].
    pub t_ns: f64,
    /// CPU per message, P and C [ns].
    pub e_ns: [f64; 2],
    /// Notifications sent by P and C.
    pub notifications: [u64; 2],
    /// Sleeps of P and C.
    pub sleeps: [u64; 2],
    /// Messages these count over.
    pub messages: u64,
}

impl RateLines {
    /// Prints the four lines.
    #[allow(clippy::cast_precision_loss)]
    pub fn print(&self) {
        use kicklab_model::fmt_ns;
        let per = |n: u64| n as f64 / self.messages.max(1) as f64;
        let [np, nc] = self.notifications;
        outln!(
            "T              {}/message  ({})",
            fmt_ns(self.t_ns),
            rate_text(self.t_ns)
        );
        outln!(
            "E              {} of CPU/message  (P {}, C {})",
            fmt_ns(self.e_ns[0] + self.e_ns[1]),
            fmt_ns(self.e_ns[0]),
            fmt_ns(self.e_ns[1])
        );
        outln!(
            "notifications  P->C {np} ({:.4}/message), C->P {nc} ({:.4}/message)",
            per(np),
            per(nc)
        );
        outln!("sleeps         P {}, C {}", self.sleeps[0], self.sleeps[1]);
    }
}

/// Prints each warning as a `warning: ` line on stderr, after `context`
/// (`"W_P 1us: "`, say), then one line saying the run is disturbed.
pub fn print_warnings(context: &str, warnings: &[kicklab_lab::disturbance::Warning]) {
    for w in warnings {
        errln!("warning: {context}{w}");
    }
    if !warnings.is_empty() {
        errln!(
            "warning: {context}this measurement is disturbed: its numbers are not the pair's alone"
        );
    }
}

/// Where a party runs `adaptive` and the run's p99 latency came out above
/// the bound it keeps (the tightest of the two), a line saying so; a
/// bound under a microsecond was most likely written without its unit (a
/// bare number is nanoseconds), and the line says that too. `None` where
/// no party adapts, latency was not measured, or the bound held.
pub fn latency_bound_missed(
    modes: [kicklab_model::WaitMode; 2],
    latency: Option<&kicklab_model::Latency>,
) -> Option<String> {
    let bound = kicklab_model::WaitMode::latency_bound(modes)?;
    let p99 = latency?.p99;
    (p99 > bound).then(|| {
        let fmt = kicklab_model::fmt_ns;
        let unit = if bound < 1e3 && latency_written_bare() {
            format!(" (a bare number is nanoseconds: for {bound} microseconds write {bound}us)")
        } else {
            String::new()
        };
        format!(
            "p99 latency {} is above the bound adaptive keeps, {}{unit}",
            fmt(p99),
            fmt(bound)
        )
    })
}

/// Whether a latency bound on the command line (`--latency D` or
/// `latency=D` in a strategy) was written as a bare number, without its
/// unit.
fn latency_written_bare() -> bool {
    let args = args_text();
    let bare = |v: &str| v.trim().ends_with(|c: char| c.is_ascii_digit() || c == '.');
    args.iter().enumerate().any(|(i, a)| {
        if a == "--latency" {
            return args.get(i + 1).is_some_and(|v| bare(v));
        }
        if let Some(v) = a.strip_prefix("--latency=") {
            return bare(v);
        }
        a.split("latency=")
            .skip(1)
            .any(|v| bare(v.split(',').next().unwrap_or_default()))
    })
}

/// Prints `value` as one JSON object on stdout.
pub fn print_json(value: &serde_json::Value) -> anyhow::Result<()> {
    outln!("{}", serde_json::to_string(value)?);
    Ok(())
}
