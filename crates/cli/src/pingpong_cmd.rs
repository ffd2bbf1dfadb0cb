//! `kicklab pingpong`: request/response rate under the responder's idle
//! strategies, side by side with van Riel's KVM Forum 2013 numbers.

use std::time::Duration;

use clap::Args;
use kicklab_model::{fmt_ns, parse_duration_ns};
use kicklab_testbed::pingpong::{pingpong, Idle, PingPongConfig, PingPongResult};
use kicklab_testbed::Backend;
use serde_json::json;

use crate::args::BackendArgs;
use crate::Usage;

/// Arguments of `kicklab pingpong`.
#[derive(Debug, Args)]
pub struct PingPongArgs {
    #[command(flatten)]
    be: BackendArgs,
    /// How the responder (the guest, with kvm) idles between requests:
    /// halt, halt-poll:<dur> (the host polls before sleeping; kvm),
    /// haltpoll:<dur> (the responder polls, then halts), poll, hint:<dur>
    /// (idle with a timeout, Denali; kvm), no-hlt-exit (kvm with --guest
    /// emulated). Repeat for several; none: every one this backend has.
    #[arg(long, value_parser = idle)]
    idle: Vec<Idle>,
    /// Requests measured per strategy (after a tenth as many to warm up).
    #[arg(long, default_value_t = 20_000)]
    messages: u64,
    /// Work per message on each side (so the responder idles about this
    /// long between requests).
    #[arg(long, default_value = "2us", value_parser = duration)]
    work: Duration,
    /// How the requester waits for each response: poll (spin) or block.
    #[arg(long, default_value = "poll", value_parser = ["poll", "block"])]
    requester: String,
    /// Print JSON: one object for one strategy
    /// ({"backend", "idle", "rate_per_s", "cpu_ns_per_msg", "messages"}),
    /// else {"runs": [..], "van_riel": [..]}.
    #[arg(long)]
    json: bool,
}

fn idle(s: &str) -> Result<Idle, String> {
    s.parse()
}

fn duration(s: &str) -> Result<Duration, String> {
    parse_duration_ns(s)
        .map(|ns| Duration::from_secs_f64(ns / 1e9))
        .map_err(|e| e.to_string())
}

/// Van Riel's message rates (KVM Forum 2013, "Measuring the overhead"):
/// his configuration and what it corresponds to here.
pub const VAN_RIEL: [(&str, f64, &str); 5] = [
    ("default (vcpu_put/schedule/vcpu_load)", 135_531.0, "halt"),
    ("vcpu_put/safe_halt/vcpu_load", 150_476.0, "halt-poll"),
    (
        "vcpu_put/safe_halt/vcpu_load, skip FPU save",
        205_711.0,
        "(no counterpart: no FPU state here)",
    ),
    ("safe_halt (no vcpu_put/vcpu_load)", 214_624.0, "halt-poll"),
    (
        "never trap to host (yield_on_hlt=n)",
        218_260.0,
        "poll / haltpoll",
    ),
];

/// What the guest responder is, in one line.
pub fn guest_line(mode: kicklab_testbed::kvm::guest::GuestMode) -> &'static str {
    match mode {
        kicklab_testbed::kvm::guest::GuestMode::User => {
            "the guest responds from a native user-mode loop (a halt exits to the VMM, whose vCPU thread sleeps until the doorbell)"
        }
        kicklab_testbed::kvm::guest::GuestMode::Emulated => {
            "the guest responds in emulated real mode (it halts with `sti; hlt` inside KVM and is woken by irqfd interrupts; \
             every guest instruction costs about 1 us on PVM)"
        }
    }
}

/// The strategies run when none is named.
pub fn default_idles(be: Backend) -> Vec<Idle> {
    let us = |n| Duration::from_micros(n);
    match be {
        // Host halt polling swept over three windows; HLT exits can be
        // disabled only for the guest that halts inside KVM.
        Backend::Kvm(o) => {
            let mut idles = vec![
                Idle::Halt,
                Idle::HostHaltPoll(us(10)),
                Idle::HostHaltPoll(us(50)),
                Idle::HostHaltPoll(us(200)),
                Idle::PollThenHalt(us(50)),
                Idle::Poll,
            ];
            if o.guest == kicklab_testbed::kvm::guest::GuestMode::Emulated {
                idles.push(Idle::NoHltExit);
            }
            idles.push(Idle::Hint(us(1000)));
            idles
        }
        Backend::Threads(_) => vec![Idle::Halt, Idle::PollThenHalt(us(50)), Idle::Poll],
    }
}

/// Runs every strategy once.
///
/// # Errors
///
/// A strategy the backend lacks, or a run that fails.
pub fn run_all(
    be: Backend,
    idles: &[Idle],
    messages: u64,
    work: Duration,
    requester_polls: bool,
) -> anyhow::Result<Vec<(Idle, PingPongResult)>> {
    let mut out = Vec::new();
    for &idle in idles {
        eprintln!("pingpong: {} {idle} ...", be.name());
        let r = pingpong(&PingPongConfig {
            backend: be,
            idle,
            messages,
            work,
            requester_polls,
            timeout: Duration::from_secs(10),
        })
        .map_err(|e| match e {
            kicklab_testbed::TestbedError::Params(m) => anyhow::Error::new(Usage(m)),
            e @ (kicklab_testbed::TestbedError::Invalid { .. }
            | kicklab_testbed::TestbedError::Limit { .. }) => {
                anyhow::Error::new(Usage(e.to_string()))
            }
            other => anyhow::Error::new(other),
        })?;
        out.push((idle, r));
    }
    Ok(out)
}

/// The table as text lines: ours with ratios to `halt`, then (if
/// `van_riel`) his.
pub fn table(be: Backend, runs: &[(Idle, PingPongResult)], van_riel: bool) -> Vec<String> {
    let base = runs
        .iter()
        .find(|(i, _)| *i == Idle::Halt)
        .map_or(runs.first().map_or(1.0, |(_, r)| r.rate_per_s), |(_, r)| {
            r.rate_per_s
        });
    let mut lines = vec![format!(
        "{:<22} {:>12} {:>9} {:>14} {:>12}",
        format!("{} idle", be.name()),
        "requests/s",
        "vs halt",
        "CPU/request",
        "idle sleeps"
    )];
    for (idle, r) in runs {
        lines.push(format!(
            "{:<22} {:>12.0} {:>8.2}x {:>14} {:>11.2}",
            idle.to_string(),
            r.rate_per_s,
            r.rate_per_s / base,
            fmt_ns(r.cpu_ns_per_msg),
            r.responder_sleeps as f64 / r.messages.max(1) as f64
        ));
    }
    if !van_riel {
        return lines;
    }
    lines.push(String::new());
    lines.push(format!(
        "{:<46} {:>10} {:>8}  {}",
        "van Riel 2013 (Java threads in a KVM guest)", "msgs/s", "vs def.", "closest here"
    ));
    for (name, rate, here) in VAN_RIEL {
        lines.push(format!(
            "{name:<46} {rate:>10.0} {:>7.2}x  {here}",
            rate / VAN_RIEL[0].1
        ));
    }
    lines
}

pub fn run(a: &PingPongArgs) -> anyhow::Result<()> {
    let be = a.be.get();
    if a.messages == 0 {
        return Err(Usage("--messages: need at least 1".into()).into());
    }
    let idles = if a.idle.is_empty() {
        default_idles(be)
    } else {
        a.idle.clone()
    };
    if let Some(i) = idles
        .iter()
        .find(|i| i.kvm_only() && !matches!(be, Backend::Kvm(_)))
    {
        return Err(Usage(format!("--idle: {i} exists only with --backend kvm")).into());
    }
    let polls = a.requester == "poll";
    let runs = run_all(be, &idles, a.messages, a.work, polls)?;
    let obj = |idle: &Idle, r: &PingPongResult| {
        json!({
            "backend": be.name(),
            "idle": idle.to_string(),
            "rate_per_s": r.rate_per_s,
            "cpu_ns_per_msg": r.cpu_ns_per_msg,
            "cpu_requester_ns": r.cpu_requester_ns,
            "cpu_responder_ns": r.cpu_responder_ns,
            "responder_sleeps": r.responder_sleeps,
            "messages": r.messages,
            "work_ns": a.work.as_secs_f64() * 1e9,
            "requester": a.requester,
        })
    };
    if a.json {
        if let [(idle, r)] = runs.as_slice() {
            return crate::print_json(&obj(idle, r));
        }
        return crate::print_json(&json!({
            "runs": runs.iter().map(|(i, r)| obj(i, r)).collect::<Vec<_>>(),
            "van_riel": VAN_RIEL.iter().map(|(n, r, h)| json!({"config": n, "rate_per_s": r, "closest_here": h})).collect::<Vec<_>>(),
        }));
    }
    println!(
        "ping-pong: {} requests per strategy, {} of work per message on each side, the requester {}s",
        a.messages,
        fmt_ns(a.work.as_secs_f64() * 1e9),
        a.requester
    );
    if let Backend::Kvm(o) = be {
        println!("{}", guest_line(o.guest));
    }
    for l in table(be, &runs, true) {
        println!("{l}");
    }
    Ok(())
}
