//! `kicklab`: the command-line front end. Thin: the flags, one library
//! call per command and printing; the work is in the `kicklab-*` library
//! crates, the process's plumbing (streams, raw arguments, exit codes) in
//! `kicklab-term`.
//!
//! The process starts at a C `main` of its own rather than Rust's: Rust's
//! start-up points a closed descriptor 0-2 at `/dev/null` before any of
//! kicklab runs, and a command whose standard output was closed (`exec
//! 1>&-`) then exited 0 with its result lost. Here the descriptors are
//! looked at first ([`kicklab_term::out::guard_std_fds`]).
#![cfg_attr(not(test), no_main)]

#[macro_use]
extern crate kicklab_term;

mod advise_cmd;
mod args;
mod bench;
mod calibrate_cmd;
mod control_cmd;
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
mod trace_cmd;
mod validate_cmd;

use clap::{Parser, Subcommand};
use kicklab_model::Flag;
use kicklab_term::cmdline::{given, given_value, one_line};
use kicklab_term::out;

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
    /// A real pair's costs, regime and advice from a kernel trace of it (`perf script` or `trace-cmd report` text).
    Trace(trace_cmd::TraceArgs),
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
        Err(_) => {
            let _ = kicklab_term::files::commit_saved(false);
            101
        }
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
    kicklab_term::start();
    let (cli, matches) = match kicklab_term::parse::<Cli>() {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    if let Some(line) =
        overridden_flag(&cli.cmd, &matches).or_else(|| sim_cmd::bench_flag(&matches))
    {
        errln!("error: {}", one_line(&line));
        return out::finish(2);
    }
    if out::stdout_was_closed() {
        return out::finish(1);
    }
    if let Err(why) = kicklab_lab::start_threads() {
        errln!("error: {}", one_line(&why));
        return out::finish(1);
    }
    // Said once the command ran: bad input stays one line.
    let notes = unused_flags(&cli.cmd, &matches);
    kicklab_testbed::cpu_lock::on_wait(say_waiting_for_cpus);
    kicklab_testbed::cpu_lock::on_unlocked(say_unlocked);
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
        Cmd::Trace(a) => trace_cmd::run(&a),
        Cmd::Qos(a) => qos_cmd::run(&a),
        Cmd::Scale(a) => scale_cmd::run(&a),
        Cmd::Flags(a) => flags_cmd::run(&a),
        Cmd::Map(a) => map_cmd::run(&a),
        Cmd::Report(a) => report_cmd::run(&a),
        Cmd::Replay(a) => replay_cmd::run(&a),
    };
    kicklab_term::exit_code(result, &notes)
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

/// Said when the CPU lock's file cannot be used: this run goes on, but
/// another started beside it will not wait for it.
fn say_unlocked(why: &str) {
    errln!("warning: {why}");
}

/// A parameter flag given on the command line that the subcommand sets
/// itself, as the line that refuses it ([`kicklab_lab::unused::overridden`]).
fn overridden_flag(cmd: &Cmd, matches: &clap::ArgMatches) -> Option<String> {
    use kicklab_model::Param;
    let (name, sets): (&str, Vec<(Param, Flag)>) = match cmd {
        Cmd::Sweep(a) => ("sweep", vec![(a.vary.param, Flag::Vary)]),
        Cmd::Map(a) => ("map", vec![(a.x.param, Flag::X), (a.y.param, Flag::Y)]),
        Cmd::Validate(a) => ("validate", vec![(a.vary.param, Flag::Vary)]),
        Cmd::Control(_) => ("control", vec![(Param::Wp, Flag::Range)]),
        _ => return None,
    };
    let sub = matches.subcommand_matches(name)?;
    kicklab_lab::unused::overridden(name, &sets, &|flag| given_value(sub, flag))
}

/// Flags given on the command line that this combination leaves unused
/// (`qos --backend futex --kick 5us`: the real stages pay their own
/// kicks), each said on stderr with the reason once the command ran
/// (after its output: a refusal of bad input stays one line).
fn unused_flags(cmd: &Cmd, matches: &clap::ArgMatches) -> Vec<String> {
    let Some((_, sub)) = matches.subcommand() else {
        return Vec::new();
    };
    let was_given = |flag: Flag| given(sub, flag);
    let unused = match cmd {
        Cmd::Model(a) => a.unused(&was_given),
        Cmd::Sim(a) => a.unused(&was_given),
        Cmd::Run(a) => a.unused(&was_given),
        Cmd::Qos(a) => a.unused(&was_given),
        _ => Vec::new(),
    };
    unused.iter().map(ToString::to_string).collect()
}
