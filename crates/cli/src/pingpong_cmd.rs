//! `kicklab pingpong`: parses, calls `kicklab_lab::pingpong`, prints.

use std::time::Duration;

use clap::Args;
use kicklab_lab::pingpong::PingPongRequest;
use kicklab_testbed::pingpong::Idle;

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
    #[arg(long, value_parser = <Idle as std::str::FromStr>::from_str, allow_hyphen_values = true)]
    idle: Vec<Idle>,
    /// Requests measured per strategy (after a tenth as many to warm up).
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, default_value_t = 20_000, allow_hyphen_values = true)]
    messages: u64,
    /// Work per message on each side (so the responder idles about this
    /// long between requests).
    #[arg(long, default_value = "2us", value_parser = kicklab_model::typed::duration, allow_hyphen_values = true)]
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

pub fn run(a: &PingPongArgs) -> anyhow::Result<()> {
    let out = PingPongRequest {
        backend: a.be.input(),
        idles: a.idle.clone(),
        messages: a.messages,
        work: a.work,
        requester_polls: a.requester == "poll",
    }
    .run(&kicklab_term::progress::Bars::default())?;
    kicklab_term::show::result(a.json, &out.json, &out.text)
}
