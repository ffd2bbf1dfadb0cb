//! `kicklab pingpong`: parses, calls `kicklab_lab::pingpong`, prints.

use std::time::Duration;

use clap::Args;
use kicklab_lab::pingpong::{counterpart, default_idles, guest_line, run_all, table, VAN_RIEL};
use kicklab_model::{fmt_ns, parse_duration_ns};
use kicklab_testbed::pingpong::{Idle, PingPongResult};
use kicklab_testbed::Backend;
use serde_json::json;

use crate::args::PingPongBackendArgs;

/// Arguments of `kicklab pingpong`.
#[derive(Debug, Args)]
pub struct PingPongArgs {
    #[command(flatten)]
    be: PingPongBackendArgs,
    /// How the responder (the guest, with kvm) idles between requests:
    /// halt, halt-poll:<dur> (the host polls before sleeping; kvm),
    /// haltpoll:<dur> (the responder polls, then halts), poll, hint:<dur>
    /// (idle with a timeout, Denali; kvm), no-hlt-exit (kvm with --guest
    /// emulated). Repeat for several; not given: every one this backend has.
    #[arg(long, value_parser = idle, allow_hyphen_values = true)]
    idle: Vec<Idle>,
    /// Requests measured per strategy (after a tenth as many to warm up).
    #[arg(long, value_parser = crate::args::whole::<u64>, default_value_t = 20_000, allow_hyphen_values = true)]
    messages: u64,
    /// Work per message on each side (so the responder idles about this
    /// long between requests).
    #[arg(long, default_value = "2us", value_parser = duration, allow_hyphen_values = true)]
    work: Duration,
    /// How the requester waits for each response: poll (spin) or block.
    #[arg(long, default_value = "poll", value_parser = ["poll", "block"], allow_hyphen_values = true)]
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

pub fn run(a: &PingPongArgs) -> anyhow::Result<()> {
    a.be.check()?;
    let be = a.be.get();
    let names: Vec<String> = a.idle.iter().map(ToString::to_string).collect();
    crate::show::no_repeats("--idle", &names)?;
    let idles = if a.idle.is_empty() {
        default_idles(be)
    } else {
        a.idle.clone()
    };
    let polls = a.requester == "poll";
    let runs = run_all(
        be,
        &idles,
        a.messages,
        a.work,
        polls,
        &crate::show::Bars::default(),
    )?;
    // The serialized result, with what it was run with.
    let obj = |idle: &Idle, r: &PingPongResult| {
        let mut v = serde_json::to_value(r).unwrap_or_default();
        v["backend"] = json!(be.name());
        v["idle"] = json!(idle.to_string());
        v["work_ns"] = json!(a.work.as_secs_f64() * 1e9);
        v["requester"] = json!(a.requester);
        v
    };
    if a.json {
        if let [(idle, r)] = runs.as_slice() {
            return crate::show::print_json(&obj(idle, r));
        }
        return crate::show::print_json(&json!({
            "runs": runs.iter().map(|(i, r)| obj(i, r)).collect::<Vec<_>>(),
            "van_riel": VAN_RIEL.iter().map(|(n, r, h)| json!({"config": n, "rate_per_s": r, "closest_here": counterpart(h)})).collect::<Vec<_>>(),
        }));
    }
    outln!(
        "ping-pong: {} requests per strategy, {} of work per message on each side, the requester {}s",
        a.messages,
        fmt_ns(a.work.as_secs_f64() * 1e9),
        a.requester
    );
    if let Backend::Kvm(o) = be {
        outln!("{}", guest_line(o.guest));
    }
    for l in table(be, &runs, true) {
        outln!("{l}");
    }
    Ok(())
}
