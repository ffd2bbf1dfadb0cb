//! `kicklab trace`: a real pair's costs and regime from a kernel trace of
//! it (`perf script` or `trace-cmd report` text), as a profile and advice.

use std::path::PathBuf;

use clap::Args;
use kicklab_lab::knobs::{Mechanism, Mechanisms};
use kicklab_lab::trace::{analyze, TraceRequest};
use kicklab_trace::{Naming, Who};

/// Arguments of `kicklab trace`.
#[derive(Debug, Args)]
pub struct TraceArgs {
    /// The trace: the text `perf script --ns` or `trace-cmd report -t`
    /// printed, or ftrace's /sys/kernel/tracing/trace (gzip-compressed or
    /// not). Record with `perf record -a -e 'kvm:*' -e
    /// sched:sched_switch -e sched:sched_waking ...` (docs/trace.md).
    file: PathBuf,
    /// Messages the pair passed in the traced window.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u64>, allow_hyphen_values = true, conflicts_with = "rate")]
    messages: Option<u64>,
    /// The pair's rate over the window [messages per second]; the messages
    /// are this times the window.
    #[arg(long, value_parser = kicklab_model::typed::number, allow_hyphen_values = true)]
    rate: Option<f64>,
    /// The producer: a thread id or a thread name as the trace prints it.
    #[arg(long, allow_hyphen_values = true)]
    producer: Option<Who>,
    /// The consumer: a thread id or a thread name.
    #[arg(long, allow_hyphen_values = true)]
    consumer: Option<Who>,
    /// With a vCPU found and no party named: tx (the guest produces) or rx
    /// (the guest consumes).
    #[arg(long, default_value = "tx", value_parser = ["tx", "rx"])]
    direction: String,
    /// Queue length L [slots] of the pair's ring.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u32>, default_value_t = 256, allow_hyphen_values = true)]
    len: u32,
    /// k_P: P wakes a sleeping C once this many messages are queued.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u32>, default_value_t = 1, allow_hyphen_values = true)]
    kp: u32,
    /// k_C: C wakes a sleeping P once this many slots are free.
    #[arg(long, value_parser = kicklab_model::typed::whole::<u32>, default_value_t = 1, allow_hyphen_values = true)]
    kc: u32,
    /// A calibration profile: its costs stand where the trace has none
    /// (a guest's kick without kvm_entry); without one, the paper's.
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Write the costs as a profile (the format `calibrate --save` writes).
    #[arg(long)]
    save: Option<PathBuf>,
    /// Draw a few rounds of the pair as traced (P's and C's notifications,
    /// sleeps and the time they ran between) as an SVG picture, like the
    /// report's regime timelines.
    #[arg(long, value_name = "FILE.svg")]
    timeline: Option<PathBuf>,
    /// Bound on the p99 message latency the advice keeps.
    #[arg(long, default_value = "100us", value_parser = kicklab_model::typed::latency_ns, allow_hyphen_values = true)]
    latency: f64,
    /// The real mechanisms to give settings for (as `advise --for`), or none.
    #[arg(long = "for", value_name = "MECHANISMS", default_value = "all", value_parser = Mechanism::parse, allow_hyphen_values = true)]
    mechanisms: Mechanisms,
    /// Print {"producer": {"tid", "comm"}, "consumer", "messages", "T_ns", "E_ns", "kick_p_ns", "kick_c_ns", "visible_p_ns", "visible_c_ns", "wake_p_ns", "wake_c_ns", "notifications_p", "notifications_c", "sleeps_p", "sleeps_c", "observed", "regime", "sources", "events_used", "missing", "profile", "advice", ...} (docs/cli.md).
    #[arg(long)]
    json: bool,
}

pub fn run(a: &TraceArgs) -> anyhow::Result<()> {
    if let Some(path) = &a.save {
        kicklab_term::files::check_out_file(path, kicklab_model::Flag::Save)?;
    }
    if let Some(path) = &a.timeline {
        kicklab_term::files::check_out_file(path, kicklab_model::Flag::Timeline)?;
    }
    let spec = TraceRequest {
        path: a.file.clone(),
        naming: Naming {
            producer: a.producer.clone(),
            consumer: a.consumer.clone(),
            guest_consumes: a.direction == "rx",
        },
        messages: a.messages,
        rate_per_s: a.rate,
        len: a.len,
        k_p: a.kp,
        k_c: a.kc,
        profile: a.profile.clone(),
        latency_ns: a.latency,
        mechanisms: a.mechanisms.0.clone(),
    }
    .spec()?;
    let report = analyze(&spec, &kicklab_term::progress::Bars::default())?;
    if let Some(path) = &a.save {
        kicklab_term::files::save(
            path,
            kicklab_model::Flag::Save,
            serde_json::to_string_pretty(&report.profile)?.as_bytes(),
            "saved",
        )?;
    }
    if let Some(path) = &a.timeline {
        let svg = kicklab_lab::trace::timeline_svg(&report);
        kicklab_term::show::save_timeline(path, svg.as_deref(), "the trace times")?;
    }
    if a.json {
        return kicklab_term::show::print_json(&serde_json::to_value(&report)?);
    }
    for line in kicklab_lab::trace_text::lines(&report) {
        outln!("{line}");
    }
    Ok(())
}
