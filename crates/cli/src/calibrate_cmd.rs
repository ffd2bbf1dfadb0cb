//! `kicklab calibrate`: measure N and S of a notification backend.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use kicklab_model::{fmt_ns, parse_duration_ns};
use kicklab_testbed::{calibrate_backend, Calibration, Profile, Stat};
use serde_json::json;

use crate::args::BackendArgs;

/// Arguments of `kicklab calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    #[command(flatten)]
    be: BackendArgs,
    /// Notifications per direction per round.
    #[arg(long, default_value_t = 400, allow_hyphen_values = true)]
    samples: usize,
    /// How long the woken party idles before each notification (as a
    /// sleeping party does in a run; a longer idle lets its CPU halt).
    #[arg(long, default_value = "50us", value_parser = gap, allow_hyphen_values = true)]
    gap: Duration,
    /// Most rounds before giving up on stable medians (within 5%).
    #[arg(long, default_value_t = 6, allow_hyphen_values = true)]
    rounds: usize,
    /// Write the profile (JSON) here, for --profile.
    #[arg(long, allow_hyphen_values = true)]
    save: Option<PathBuf>,
    /// Print one JSON object: {"backend", "NP_ns", "NC_ns", "SP_ns", "SC_ns", ...}.
    #[arg(long)]
    json: bool,
}

fn gap(s: &str) -> Result<Duration, String> {
    parse_duration_ns(s)
        .map(|ns| Duration::from_secs_f64(ns / 1e9))
        .map_err(|e| e.to_string())
}

/// The profile as the JSON object of the contract (plus its full summary).
pub fn profile_json(p: &Profile) -> serde_json::Value {
    json!({
        "backend": p.backend,
        "NP_ns": p.np.mean_ns,
        "NC_ns": p.nc.mean_ns,
        "SP_ns": p.sp.mean_ns,
        "SC_ns": p.sc.mean_ns,
        "direction": p.direction.map(kicklab_model::Direction::name),
        "SP_cpu_ns": p.sp_cpu.mean_ns,
        "SC_cpu_ns": p.sc_cpu.mean_ns,
        "gap_ns": p.gap_ns,
        "rounds": p.rounds,
        "stable": p.stable,
        "profile": p,
    })
}

/// The most notifications per direction per round (each is a sample of
/// four costs; a million take minutes).
const MAX_SAMPLES: usize = 1_000_000;

pub fn run(a: &CalibrateArgs) -> anyhow::Result<()> {
    if !(10..=MAX_SAMPLES).contains(&a.samples) {
        return Err(crate::Usage(format!("--samples: between 10 and {MAX_SAMPLES}")).into());
    }
    if !(1..=100).contains(&a.rounds) {
        return Err(crate::Usage("--rounds: between 1 and 100".into()).into());
    }
    if let Some(path) = &a.save {
        crate::check_out_file(path, "--save")?;
    }
    eprintln!(
        "calibrating {} ({} notifications per direction per round, {} idle before each) ...",
        a.be.get().name(),
        a.samples,
        fmt_ns(a.gap.as_secs_f64() * 1e9)
    );
    let p = calibrate_backend(a.be.get(), &Calibration::new(a.samples, a.gap, a.rounds))?;
    if let Some(path) = &a.save {
        std::fs::write(path, serde_json::to_string_pretty(&p)?)?;
        eprintln!("saved {}", path.display());
    }
    if a.json {
        return crate::print_json(&profile_json(&p));
    }
    print_profile(&p);
    Ok(())
}

pub fn print_profile(p: &Profile) {
    let row = |name: &str, s: &Stat, what: &str| {
        println!(
            "{name:<7} mean {:>9}  median {:>9}  p10 {:>9}  p90 {:>9}  ({what})",
            fmt_ns(s.mean_ns),
            fmt_ns(s.median_ns),
            fmt_ns(s.p10_ns),
            fmt_ns(s.p90_ns)
        );
    };
    println!(
        "backend {}  ({} CPUs, TSC {:.3} GHz, {} idle before each notification)",
        p.backend,
        p.cpus,
        p.tsc_ghz,
        fmt_ns(p.gap_ns)
    );
    if let Some(d) = p.direction {
        let (guest, host) = if d == kicklab_model::Direction::Tx {
            ("P", "C")
        } else {
            ("C", "P")
        };
        println!(
            "direction {}: {guest} is the guest (kicks: `out` to an ioeventfd port), {host} a host thread \
             (wakes the guest: doorbell eventfd its halted vCPU thread sleeps on)",
            d.name()
        );
    }
    row("N_P", &p.np, "P's notify call, C asleep");
    row("N_C", &p.nc, "C's notify call, P asleep");
    row("S_P", &p.sp, "C's notify returns -> P runs");
    row("S_C", &p.sc, "P's notify returns -> C runs");
    row(
        "N_P cpu",
        &p.np_cpu,
        "P's thread CPU time across its notify",
    );
    row(
        "N_C cpu",
        &p.nc_cpu,
        "C's thread CPU time across its notify",
    );
    row("S_P cpu", &p.sp_cpu, "P's own CPU time across the wake-up");
    row("S_C cpu", &p.sc_cpu, "C's own CPU time across the wake-up");
    if let (Some(sync), Some(drift)) = (p.clock_sync_ns, p.clock_drift_ns) {
        println!(
            "guest and host clocks related to within {} (half the best ping round trip); offset moved {} during a round",
            fmt_ns(sync),
            fmt_ns(drift)
        );
    }
    if let Some(v) = &p.kick_visible {
        println!(
            "a polling host sees a guest kick {} after the kick starts (median; p10 {}, p90 {}), while the kick costs the guest {}",
            fmt_ns(v.median_ns),
            fmt_ns(v.p10_ns),
            fmt_ns(v.p90_ns),
            fmt_ns(if p.direction == Some(kicklab_model::Direction::Tx) { p.np.median_ns } else { p.nc.median_ns })
        );
    }
    if p.direction == Some(kicklab_model::Direction::Tx) {
        let d = kicklab_model::Params::default();
        let [np, nc, sp, sc] = p.means_over_paper();
        println!(
            "paper (Rizzo et al., guest P in QEMU/KVM, host C): N_P {}, S_P {}, N_C {}, S_C {}; \
             measured/paper: N_P {np:.1}x, S_P {sp:.1}x, N_C {nc:.1}x, S_C {sc:.1}x (means)",
            fmt_ns(d.n_p.mean_ns()),
            fmt_ns(d.s_p.mean_ns()),
            fmt_ns(d.n_c.mean_ns()),
            fmt_ns(d.s_c.mean_ns()),
        );
    }
    println!(
        "{} samples per cost in {} round(s); medians {}",
        p.np.n,
        p.rounds,
        if p.stable {
            "stable within 5%"
        } else {
            "NOT stable within 5% (noisy machine): see the spread"
        }
    );
}
