//! `kicklab run`: the pair for real, with the model's prediction.

use std::time::Duration;

use clap::Args;
use kicklab_model::{fmt_ns, predict, WaitMode};
use kicklab_testbed::{calibrate_backend, run_pair, Backend, PairConfig, PairResult, Profile};
use serde_json::json;

use crate::args::{mode, strategy, BackendArgs, ParamArgs};
use crate::Usage;

/// Arguments of `kicklab run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    params: ParamArgs,
    #[command(flatten)]
    be: BackendArgs,
    /// How both threads wait: notify (block), poll (spin), spin:<budget>.
    #[arg(long, default_value = "notify", value_parser = mode)]
    strategy: WaitMode,
    /// Messages measured (after a warm-up of a tenth as many).
    #[arg(long, default_value_t = 200_000)]
    messages: u64,
    /// Seed for random W_P / W_C.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Send combining: the producer publishes (and kicks at most once) every
    /// N messages, or sooner when the ring fills.
    #[arg(long, default_value_t = 1)]
    batch: u32,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
}

/// Runs the pair with the given strategy.
pub fn real_run(
    params: &kicklab_model::Params,
    be: Backend,
    mode: WaitMode,
    messages: u64,
    seed: u64,
) -> anyhow::Result<PairResult> {
    real_run_batched(params, be, mode, messages, seed, 1)
}

/// As [`real_run`], publishing every `batch` messages (send combining).
pub fn real_run_batched(
    params: &kicklab_model::Params,
    be: Backend,
    mode: WaitMode,
    messages: u64,
    seed: u64,
    batch: u32,
) -> anyhow::Result<PairResult> {
    let cfg = PairConfig {
        params: *params,
        strategy_p: strategy(mode),
        strategy_c: strategy(mode),
        backend: be,
        messages,
        warmup: messages / 10,
        seed,
        timeout: Duration::from_secs(30).max(Duration::from_secs_f64(messages as f64 * 1e-4)),
        batch,
    };
    let r = run_pair(&cfg)?;
    anyhow::ensure!(
        r.lost == 0 && r.duplicated_or_reordered == 0,
        "message check failed: {} lost, {} duplicated or reordered",
        r.lost,
        r.duplicated_or_reordered
    );
    Ok(r)
}

/// The profile from `--profile`, or a quick calibration of `be` now.
pub fn profile_or_calibrate(params: &ParamArgs, be: Backend) -> anyhow::Result<Profile> {
    let direction = match be {
        Backend::Kvm(o) => Some(o.direction),
        Backend::Threads(_) => None,
    };
    if let Some(p) = params.load_profile()? {
        if p.backend != be.name() || p.direction != direction {
            let d = |d: Option<kicklab_testbed::kvm::Direction>| {
                d.map(|d| format!(" --direction {}", d.name()))
                    .unwrap_or_default()
            };
            return Err(Usage(format!(
                "--profile: it calibrates {}{}, not {}{}",
                p.backend,
                d(p.direction),
                be.name(),
                d(direction)
            ))
            .into());
        }
        warn_negative_starts(&p);
        return Ok(p);
    }
    eprintln!("no --profile: calibrating {} quickly (kicklab calibrate --backend {} --save FILE for a better one) ...", be.name(), be.name());
    let p = calibrate_backend(be, 200, Duration::from_micros(50), 2)?;
    warn_negative_starts(&p);
    Ok(p)
}

/// Says when a calibrated start-up came out negative, which the model
/// cannot express.
fn warn_negative_starts(p: &Profile) {
    for s in p.negative_starts() {
        eprintln!(
            "warning: calibrated {s} is negative (the woken party ran before the notifier's call returned); \
             the model and simulator take it as 0 (docs/kvm.md)"
        );
    }
}

pub fn run(a: &RunArgs) -> anyhow::Result<()> {
    let mut params = a.params.params()?;
    if a.messages == 0 {
        return Err(Usage("--messages: need at least 1 message".into()).into());
    }
    let profile = profile_or_calibrate(&a.params, a.be.get())?;
    if a.batch == 0 {
        return Err(Usage("--batch: at least 1 message per publish".into()).into());
    }
    let r = real_run_batched(&params, a.be.get(), a.strategy, a.messages, a.seed, a.batch)?;
    // The prediction: the model with this machine's N and S.
    profile.apply(&mut params, false);
    let predicted = match a.strategy {
        WaitMode::Spin { .. } => None,
        m => Some(predict(&params, m)?),
    };
    if a.json {
        return crate::print_json(&json!({
            "backend": a.be.get().name(),
            "strategy": a.strategy.to_string(),
            "batch": a.batch,
            "T_ns": r.t_ns,
            "E_ns": r.e_ns,
            "E_p_ns": r.e_p_ns,
            "E_c_ns": r.e_c_ns,
            "messages": r.messages,
            "lost": r.lost,
            "duplicated_or_reordered": r.duplicated_or_reordered,
            "notifications_p": r.notifications_p,
            "notifications_c": r.notifications_c,
            "sleeps_p": r.sleeps_p,
            "sleeps_c": r.sleeps_c,
            "pinned": r.pinned,
            "oversubscribed": r.oversubscribed,
            "predicted": predicted.map(|p| json!({"regime": p.regime.name(), "T_ns": p.rates.t_ns, "E_ns": p.rates.e_ns, "m": p.m})),
            "profile": crate::calibrate_cmd::profile_json(&profile),
        }));
    }
    let pinned = if r.pinned {
        "pinned to their own CPU"
    } else {
        "NOT pinned"
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
    if r.oversubscribed {
        println!(
            "warning        more busy threads than CPUs: polling numbers are not meaningful here"
        );
    }
    crate::RateLines {
        t_ns: r.t_ns,
        e_ns: [r.e_p_ns, r.e_c_ns],
        notifications: [r.notifications_p, r.notifications_c],
        sleeps: [r.sleeps_p, r.sleeps_c],
        messages: r.messages,
    }
    .print();
    println!(
        "checked        {} messages: {} lost, {} duplicated or reordered",
        r.messages, r.lost, r.duplicated_or_reordered
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
            r.t_ns / p.rates.t_ns,
            fmt_ns(p.rates.e_ns),
            r.e_ns / p.rates.e_ns
        );
    }
    Ok(())
}
