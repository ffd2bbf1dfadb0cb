//! `kicklab scale`: idle-with-timeout at scale (Denali): N guests
//! time-sharing the CPUs, idling by spinning or with a timeout.

use clap::Args;
use kicklab_testbed::scale::{scale, ScaleConfig, ScaleIdle};
use kicklab_testbed::TestbedError;
use serde_json::json;

use crate::Usage;

/// Arguments of `kicklab scale`.
#[derive(Debug, Args)]
pub struct ScaleArgs {
    /// Guests, or a comma-separated list of counts (1,2,4,8,16).
    #[arg(
        long,
        default_value = "8",
        value_delimiter = ',',
        allow_hyphen_values = true
    )]
    vms: Vec<usize>,
    /// How an idle guest waits for its next request or timer: spin (no
    /// idle-with-timeout) or timeout; a comma-separated list runs each.
    #[arg(long, default_value = "spin,timeout", value_delimiter = ',')]
    idle: Vec<ScaleIdle>,
    /// futex: a thread per guest, the OS scheduler as the hypervisor; kvm:
    /// a tiny VM of one vCPU per guest, idling by spinning or through the
    /// VMM with a timeout (at most 64 guests).
    #[arg(long, default_value = "futex", value_parser = ["futex", "kvm"])]
    backend: String,
    /// Requests outstanding in all (the client's concurrency), spread over
    /// the guests.
    #[arg(long, default_value_t = 32, allow_hyphen_values = true)]
    concurrency: usize,
    /// Work per request.
    #[arg(long, default_value = "20us", value_parser = crate::args::duration, allow_hyphen_values = true)]
    work: std::time::Duration,
    /// Each guest's timer period (it must run then).
    #[arg(long, default_value = "1ms", value_parser = crate::args::duration, allow_hyphen_values = true)]
    timer: std::time::Duration,
    /// Seconds measured per run (after a fifth as long of warm-up).
    #[arg(long, default_value_t = 1.0, allow_hyphen_values = true)]
    seconds: f64,
    /// Print JSON: one object for one run, {"runs": [...]} for several.
    #[arg(long)]
    json: bool,
}

pub fn run(a: &ScaleArgs) -> anyhow::Result<()> {
    let kvm = a.backend == "kvm";
    if kvm {
        if let Some(&n) = a
            .vms
            .iter()
            .find(|&&n| n == 0 || n > kicklab_testbed::kvm::scale::MAX_VMS)
        {
            return Err(Usage(format!(
                "--vms: 1 to {} guests with kvm (a VM and a vCPU thread each), got {n}",
                kicklab_testbed::kvm::scale::MAX_VMS
            ))
            .into());
        }
        kicklab_testbed::kvm::available()
            .map_err(|why| TestbedError::Kvm(format!("kvm is not usable here: {why}")))?;
    }
    let duration = std::time::Duration::try_from_secs_f64(a.seconds)
        .ok()
        .filter(|d| !d.is_zero() && d.as_secs() <= 600)
        .ok_or_else(|| Usage("--seconds: between 0 and 600".into()))?;
    if a.concurrency == 0 || a.concurrency > 1_000_000 {
        return Err(Usage("--concurrency: 1 to 1000000 requests outstanding".into()).into());
    }
    if a.timer.is_zero() {
        return Err(Usage("--timer: a period > 0".into()).into());
    }
    let mut runs = Vec::new();
    for &vms in &a.vms {
        for &idle in &a.idle {
            let cfg = ScaleConfig {
                concurrency: a.concurrency,
                work: a.work,
                timer: a.timer,
                duration,
                ..ScaleConfig::new(vms, idle)
            };
            let r = if kvm {
                kicklab_testbed::kvm::scale::scale(&cfg)?
            } else {
                scale(&cfg)?
            };
            if !a.json {
                println!(
                    "{:>4} guests  idle {:<8} {:>10.0} requests/s  CPU {:>5.1}%{}",
                    r.vms,
                    format!("{:?}", r.idle).to_lowercase(),
                    r.throughput_per_s,
                    100.0 * r.cpu_util,
                    if r.oversubscribed {
                        format!(
                            "  ({} {} busy at times on {} CPUs: time-shared)",
                            r.vms + 1,
                            if kvm {
                                "vCPU and client threads"
                            } else {
                                "threads"
                            },
                            r.cpus
                        )
                    } else {
                        String::new()
                    }
                );
            }
            runs.push(r);
        }
    }
    if a.json {
        let v = if runs.len() == 1 {
            serde_json::to_value(&runs[0])?
        } else {
            json!({ "runs": runs })
        };
        return crate::print_json(&v);
    }
    // The ratio per N where both were run.
    for &vms in &a.vms {
        let get = |i| runs.iter().find(|r| r.vms == vms && r.idle == i);
        if let (Some(s), Some(t)) = (get(ScaleIdle::Spin), get(ScaleIdle::Timeout)) {
            println!(
                "{vms:>4} guests: idle-with-timeout {:.2}x spinning's throughput (Denali: more than 2x as the load spreads over more VMs)",
                t.throughput_per_s / s.throughput_per_s
            );
        }
    }
    Ok(())
}
