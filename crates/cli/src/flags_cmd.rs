//! `kicklab flags`: one consumer watching many sources, through a system
//! call over one eventfd each or a shared-memory bit vector (VMware), with
//! threads or with a KVM guest signalling.

use clap::Args;
use kicklab_testbed::flags::{FlagPath, FlagsBackend, FlagsConfig};
use serde_json::json;

use crate::errors::Usage;

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
    #[arg(long, value_parser = crate::args::whole::<u64>, default_value_t = 20_000, allow_hyphen_values = true)]
    signals: u64,
    /// Time between two signals (the consumer sleeps in between) [default:
    /// 20us with threads, 100us with kvm, whose signals through a port
    /// exit].
    #[arg(long, value_parser = crate::args::duration, allow_hyphen_values = true)]
    gap: Option<std::time::Duration>,
    /// threads (a producer and a consumer thread) or kvm (a guest
    /// signals: its bit vector and one kick ioeventfd, or a port and an
    /// ioeventfd per source; a host thread watches).
    #[arg(long, default_value = "threads")]
    backend: FlagsBackend,
    /// Runs per point; the one of median wake-up cost is reported (the
    /// machine may be shared).
    #[arg(long, value_parser = crate::args::whole::<usize>, default_value_t = 3, allow_hyphen_values = true)]
    repeat: usize,
    /// Print JSON: {"runs": [{"backend", "sources", "path", "notify_ns",
    /// "wake_ns", ..., "pair_model": {"wp_ns", "T_ns", "E_ns"}}]}: each
    /// run's costs fed to the model as N_P and S_C of Fig. 4's pair with
    /// W_P = 2 us.
    #[arg(long)]
    json: bool,
}

pub fn run(a: &FlagsArgs) -> anyhow::Result<()> {
    if a.signals == 0 || a.signals > 10_000_000 {
        return Err(Usage("--signals: 1 to 10000000 per run".into()).into());
    }
    crate::show::no_repeats("--sources", &a.sources)?;
    crate::show::no_repeats("--path", &a.path)?;
    if a.repeat == 0 || a.repeat > 25 {
        return Err(Usage("--repeat: 1 to 25".into()).into());
    }
    let most = match a.backend {
        FlagsBackend::Threads => 1024,
        FlagsBackend::Kvm => kicklab_testbed::kvm::flags::MAX_SOURCES,
    };
    if a.sources.iter().any(|&n| n == 0 || n > most) {
        return Err(Usage(
            format!("--sources: 1 to {most} each with {:?}", a.backend).to_lowercase(),
        )
        .into());
    }
    if a.backend == FlagsBackend::Kvm {
        if a.signals >= 1 << 30 {
            return Err(Usage("--signals: at most 2^30 - 1 with kvm".into()).into());
        }
        crate::args::kvm_usable()?;
    }
    let gap = a
        .gap
        .unwrap_or_else(|| kicklab_lab::flags::default_gap(a.backend));
    if gap.is_zero() || gap > std::time::Duration::from_millis(100) {
        return Err(Usage("--gap: above 0 and at most 100ms".into()).into());
    }
    let mut runs = Vec::new();
    if !a.json {
        outln!(
            "{:>8} {:<8} {:>16} {:>16} {:>9} {:>9} {:>22}",
            "sources",
            "path",
            "notify (CPU)",
            "wake-up (CPU)",
            "wake-ups",
            "counted",
            "pair T / E (model)"
        );
    }
    for &sources in &a.sources {
        for &path in &a.path {
            let cfg = FlagsConfig {
                backend: a.backend,
                sources,
                path,
                signals: a.signals,
                gap,
            };
            let r = kicklab_lab::flags::median_run(&cfg, a.repeat, &|| {})?;
            if !a.json {
                outln!(
                    "{:>8} {:<8} {:>16} {:>16} {:>9} {:>9} {:>22}",
                    r.sources,
                    format!("{:?}", r.path).to_lowercase(),
                    kicklab_model::fmt_ns(r.notify_ns),
                    kicklab_model::fmt_ns(r.wake_ns),
                    r.wakeups,
                    format!("{}/{}", r.received, r.signals),
                    kicklab_lab::flags::pair_model(&r).map_or("-".into(), |(t, e)| format!(
                        "{} / {}",
                        kicklab_model::fmt_ns(t),
                        kicklab_model::fmt_ns(e)
                    ))
                );
            }
            runs.push(r);
        }
    }
    if a.json {
        let runs: Vec<serde_json::Value> = runs
            .iter()
            .map(|r| {
                let mut v = serde_json::to_value(r)?;
                v["pair_model"] = match kicklab_lab::flags::pair_model(r) {
                    Some((t, e)) => json!({
                        "wp_ns": kicklab_lab::flags::PAIR_WP_NS,
                        "T_ns": t,
                        "E_ns": e,
                    }),
                    None => serde_json::Value::Null,
                };
                Ok(v)
            })
            .collect::<Result<_, serde_json::Error>>()?;
        return crate::show::print_json(&json!({ "runs": runs }));
    }
    Ok(())
}
