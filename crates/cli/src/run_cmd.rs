//! `kicklab run`: parses, calls `kicklab_lab::real`, prints.

use clap::Args;
use kicklab_lab::real::{predicted, profile_for, RunSpec};
use kicklab_model::{fmt_ns, WaitMode};
use serde_json::json;

use crate::args::{mode, BackendArgs, ParamArgs};

/// Arguments of `kicklab run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    params: ParamArgs,
    #[command(flatten)]
    be: BackendArgs,
    /// How both threads wait: notify (block), poll (spin), spin:<budget>.
    #[arg(long, default_value = "notify", value_parser = mode, allow_hyphen_values = true)]
    strategy: WaitMode,
    /// Messages measured (after a warm-up of a tenth as many).
    #[arg(long, default_value_t = 200_000, allow_hyphen_values = true)]
    messages: u64,
    /// Seed for random W_P / W_C.
    #[arg(long, default_value_t = 1, allow_hyphen_values = true)]
    seed: u64,
    /// Send combining: the producer publishes (and kicks at most once) every
    /// N messages, or sooner when the ring fills.
    #[arg(long, default_value_t = 1, allow_hyphen_values = true)]
    batch: u32,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

pub fn run(a: &RunArgs) -> anyhow::Result<()> {
    let params = a.params.params()?;
    let spec = RunSpec {
        batch: a.batch,
        ..RunSpec::new(params, a.be.get(), a.strategy, a.messages, a.seed)
    };
    kicklab_lab::real::check(&spec)?;
    let profile = profile_for(
        a.be.get(),
        a.params.load_profile()?,
        &crate::Bars::default(),
    )?;
    let r = kicklab_lab::real::run(&spec)?;
    // The prediction: the model with this machine's N and S.
    let predicted = predicted(&params, &profile, a.strategy)?;
    let warnings = kicklab_lab::disturbance::check(&r, &params, a.strategy, &profile)?;
    crate::print_warnings("", &warnings);
    if a.json {
        let mut v = serde_json::to_value(r)?;
        v["warnings"] = serde_json::to_value(&warnings)?;
        v["disturbed"] = json!(!warnings.is_empty());
        v["backend"] = json!(a.be.get().name());
        v["strategy"] = json!(a.strategy.to_string());
        v["batch"] = json!(a.batch);
        v["predicted"] = predicted.map_or(serde_json::Value::Null, |p| {
            crate::model_cmd::prediction_json(&p)
        });
        v["profile"] = crate::calibrate_cmd::profile_json(&profile);
        return crate::print_json(&v);
    }
    let cpu = |c: Option<usize>| c.map_or("unpinned".to_string(), |c| format!("CPU {c}"));
    let pinned = if r.pinned {
        format!(
            "pinned to their own CPU (P {}, C {})",
            cpu(r.cpu_p),
            cpu(r.cpu_c)
        )
    } else if r.concurrent_runs > 0 {
        format!(
            "sharing the CPUs with {} other run(s) (P {}, C {})",
            r.concurrent_runs,
            cpu(r.cpu_p),
            cpu(r.cpu_c)
        )
    } else {
        format!(
            "NOT on CPUs of their own (P {}, C {})",
            cpu(r.cpu_p),
            cpu(r.cpu_c)
        )
    };
    match a.be.get() {
        kicklab_testbed::Backend::Kvm(o) => {
            println!(
            "backend        kvm ({}), direction {}: {} in the guest, {} in a host thread, {pinned}",
            a.strategy,
            o.direction.name(),
            if o.direction == kicklab_testbed::kvm::Direction::Tx { "P" } else { "C" },
            if o.direction == kicklab_testbed::kvm::Direction::Tx { "C" } else { "P" },
        )
        }
        be => println!(
            "backend        {} ({}), both threads {pinned}",
            be.name(),
            a.strategy
        ),
    }
    crate::RateLines {
        t_ns: r.rates.t_ns,
        e_ns: [r.rates.e_p_ns, r.rates.e_c_ns],
        notifications: [r.rates.notifications_p, r.rates.notifications_c],
        sleeps: [r.rates.sleeps_p, r.rates.sleeps_c],
        messages: r.rates.messages,
    }
    .print();
    println!(
        "checked        {} messages: {} lost, {} duplicated or reordered",
        r.rates.messages, r.lost, r.duplicated_or_reordered
    );
    println!(
        "calibrated     N_P {}, N_C {}, S_P {}, S_C {}",
        fmt_ns(profile.np.mean_ns),
        fmt_ns(profile.nc.mean_ns),
        fmt_ns(profile.sp.mean_ns),
        fmt_ns(profile.sc.mean_ns)
    );
    if let Some(p) = predicted {
        println!(
            "model          {}: T {} (measured/model {:.3}), E {} (measured/model {:.3})",
            p.regime,
            fmt_ns(p.rates.t_ns),
            r.rates.t_ns / p.rates.t_ns,
            fmt_ns(p.rates.e_ns),
            r.rates.e_ns / p.rates.e_ns
        );
    }
    Ok(())
}
