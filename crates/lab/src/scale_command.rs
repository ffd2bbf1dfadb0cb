//! `kicklab scale` as one library call: the planned runs (a load on
//! threads or on KVM guests, or a simulated machine) in; their JSON object
//! and their text out, with the ratio of idle-with-timeout to spinning
//! wherever both ran for a number of guests. What does not live here: the
//! runs themselves (`kicklab_testbed::scale`, `kicklab_testbed::kvm::scale`,
//! `kicklab_sim::scale`), checking and planning them from the command line.

use kicklab_sim::scale::{simulate_scale, ScaleSim};
use kicklab_testbed::scale::{ScaleConfig, ScaleIdle};
use serde_json::json;

use crate::{Input, LabError, Progress};

/// One run of a `scale` request.
#[derive(Debug, Clone)]
pub enum PlannedRun {
    /// A thread per guest, the OS scheduler as the hypervisor.
    Threads(ScaleConfig),
    /// A KVM guest of one vCPU per guest.
    Kvm(ScaleConfig),
    /// The event simulator's machine.
    Sim(ScaleSim),
}

/// What a `scale` request gives back.
#[derive(Debug)]
pub struct ScaleOutput {
    /// One object for one run, `{"runs": [...]}` for several.
    pub json: serde_json::Value,
    /// The text output, line by line.
    pub text: Vec<String>,
}

/// Runs every planned run in turn, a step of `progress` each.
///
/// # Errors
///
/// A simulated machine the simulator refuses ([`Input::SimMachine`]), a
/// real run that failed.
pub fn run(planned: &[PlannedRun], progress: &dyn Progress) -> Result<ScaleOutput, LabError> {
    let mut runs = Vec::new();
    let mut text = Vec::new();
    progress.start("scale", planned.len() as u64);
    for p in planned {
        match p {
            PlannedRun::Sim(sim) => {
                let r = simulate_scale(sim)
                    .map_err(|e| LabError::input(Input::SimMachine, e.to_string()))?;
                text.push(format!(
                    "{:>4} guests  idle {:<8} {:>10.0} requests/s  CPU {:>5.1}% (spinning {:>5.1}%)  client waits {} per request{}",
                    r.vms,
                    format!("{:?}", r.idle).to_lowercase(),
                    r.throughput_per_s,
                    100.0 * r.cpu_util,
                    100.0 * r.spin_util,
                    kicklab_model::fmt_ns(r.client_delay_ns),
                    if r.vms + 1 > r.cpus {
                        format!("  (simulated: {} guests and the client on {} CPUs)", r.vms, r.cpus)
                    } else {
                        String::new()
                    }
                ));
                runs.push(serde_json::to_value(&r)?);
            }
            PlannedRun::Threads(cfg) | PlannedRun::Kvm(cfg) => {
                let kvm = matches!(p, PlannedRun::Kvm(_));
                let r = if kvm {
                    kicklab_testbed::kvm::scale::scale(cfg)?
                } else {
                    kicklab_testbed::scale::scale(cfg)?
                };
                text.push(format!(
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
                ));
                runs.push(serde_json::to_value(&r)?);
            }
        }
        progress.step();
    }
    progress.finish();
    // The ratio per number of guests where both were run.
    let mut counts: Vec<u64> = runs.iter().filter_map(|r| r["vms"].as_u64()).collect();
    counts.dedup();
    for vms in counts {
        let get = |idle: ScaleIdle| {
            let idle = serde_json::to_value(idle).unwrap_or_default();
            runs.iter()
                .find(|r| r["vms"] == vms && r["idle"] == idle)
                .and_then(|r| r["throughput_per_s"].as_f64())
        };
        if let (Some(s), Some(t)) = (get(ScaleIdle::Spin), get(ScaleIdle::Timeout)) {
            text.push(format!(
                "{vms:>4} guests: idle-with-timeout {:.2}x spinning's throughput (Denali: more than 2x as the load spreads over more VMs)",
                t / s
            ));
        }
    }
    let json = if runs.len() == 1 {
        runs.swap_remove(0)
    } else {
        json!({ "runs": runs })
    };
    Ok(ScaleOutput { json, text })
}
