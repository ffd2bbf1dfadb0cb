//! `kicklab flags`: one consumer watching many sources, through a system
//! call over one eventfd each or a shared-memory bit vector (VMware).

use clap::Args;
use kicklab_testbed::flags::{FlagPath, FlagsConfig};
use serde_json::json;

use crate::Usage;

/// Arguments of `kicklab flags`.
#[derive(Debug, Args)]
pub struct FlagsArgs {
    /// Sources watched, or a comma-separated list.
    #[arg(
        long,
        default_value = "1,2,4,8,16,32,64",
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    sources: Vec<usize>,
    /// poll (the select family, one eventfd per source), epoll, or bitmap
    /// (shared bit vector, one futex); a comma-separated list runs each.
    #[arg(long, default_value = "poll,epoll,bitmap", value_delimiter = ',')]
    path: Vec<FlagPath>,
    /// Signals per run.
    #[arg(long, default_value_t = 20_000, allow_hyphen_values = true)]
    signals: u64,
    /// Time between two signals (the consumer sleeps in between).
    #[arg(long, default_value = "20us", value_parser = crate::args::duration, allow_hyphen_values = true)]
    gap: std::time::Duration,
    /// Runs per point; the one of median wake-up cost is reported (the
    /// machine may be shared).
    #[arg(long, default_value_t = 3, allow_hyphen_values = true)]
    repeat: usize,
    /// Print JSON: {"runs": [{"sources", "path", "notify_ns", "wake_ns", ...}]}.
    #[arg(long)]
    json: bool,
}

pub fn run(a: &FlagsArgs) -> anyhow::Result<()> {
    if a.signals == 0 || a.signals > 10_000_000 {
        return Err(Usage("--signals: 1 to 10000000 per run".into()).into());
    }
    if a.repeat == 0 || a.repeat > 25 {
        return Err(Usage("--repeat: 1 to 25".into()).into());
    }
    if a.sources.iter().any(|&n| n == 0 || n > 1024) {
        return Err(Usage("--sources: 1 to 1024 each".into()).into());
    }
    let mut runs = Vec::new();
    if !a.json {
        println!(
            "{:>8} {:<8} {:>16} {:>16} {:>9} {:>9}",
            "sources", "path", "notify (CPU)", "wake-up (CPU)", "wake-ups", "counted"
        );
    }
    for &sources in &a.sources {
        for &path in &a.path {
            let cfg = FlagsConfig {
                sources,
                path,
                signals: a.signals,
                gap: a.gap,
            };
            let r = kicklab_lab::flags::median_run(&cfg, a.repeat, &|| {})?;
            if !a.json {
                println!(
                    "{:>8} {:<8} {:>16} {:>16} {:>9} {:>9}",
                    r.sources,
                    format!("{:?}", r.path).to_lowercase(),
                    kicklab_model::fmt_ns(r.notify_ns),
                    kicklab_model::fmt_ns(r.wake_ns),
                    r.wakeups,
                    format!("{}/{}", r.received, r.signals)
                );
            }
            runs.push(r);
        }
    }
    if a.json {
        return crate::print_json(&json!({ "runs": runs }));
    }
    Ok(())
}
