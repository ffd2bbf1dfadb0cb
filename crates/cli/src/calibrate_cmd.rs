//! `kicklab calibrate`: measure N and S of a notification backend.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use kicklab_model::{fmt_ns, parse_duration_ns, Party};
use kicklab_testbed::{calibrate_backend, Calibration, Profile, Stat};

use crate::args::BackendArgs;

/// Arguments of `kicklab calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    #[command(flatten)]
    be: BackendArgs,
    /// Notifications per direction per round.
    #[arg(long, value_parser = crate::args::whole::<usize>, default_value_t = 400, allow_hyphen_values = true)]
    samples: usize,
    /// How long the woken party idles before each notification (as a
    /// sleeping party does in a run; a longer idle lets its CPU halt).
    #[arg(long, default_value = "50us", value_parser = gap, allow_hyphen_values = true)]
    gap: Duration,
    /// Most rounds before giving up on stable medians (within 5%).
    #[arg(long, value_parser = crate::args::whole::<usize>, default_value_t = 6, allow_hyphen_values = true)]
    rounds: usize,
    /// The idle gaps of the idle curve (N and S after each; one round of
    /// --samples each), comma-separated, or `none`.
    #[arg(long, default_value = "5us,10us,20us,50us,100us,200us,500us", value_parser = gaps, allow_hyphen_values = true)]
    gaps: Gaps,
    /// Runs of a polling pair with no work, for the ring's cost per
    /// message (added to W_P and W_C by the model); 0: not measured.
    #[arg(long, value_parser = crate::args::whole::<u32>, default_value_t = 5, allow_hyphen_values = true)]
    overhead_runs: u32,
    /// Write the profile (JSON) here, for --profile.
    #[arg(long, allow_hyphen_values = true)]
    save: Option<PathBuf>,
    /// Print one JSON object: {"backend", "NP_ns", "NC_ns", "SP_ns", "SC_ns", ...}.
    #[arg(long)]
    json: bool,
}

/// The gaps of `--gaps`.
#[derive(Debug, Clone)]
struct Gaps(Vec<Duration>);

fn gaps(s: &str) -> Result<Gaps, String> {
    if s.trim() == "none" {
        return Ok(Gaps(Vec::new()));
    }
    let v = s
        .split(',')
        .map(|g| {
            let d = gap(g)?;
            if d.is_zero() {
                return Err(format!("`{}`: every gap must be longer than 0", g.trim()));
            }
            Ok(d)
        })
        .collect::<Result<Vec<_>, String>>()?;
    if v.len() > kicklab_testbed::calibrate::MAX_GAPS {
        return Err(format!(
            "at most {} gaps",
            kicklab_testbed::calibrate::MAX_GAPS
        ));
    }
    Ok(Gaps(v))
}

fn gap(s: &str) -> Result<Duration, String> {
    parse_duration_ns(s)
        .map(|ns| Duration::from_secs_f64(ns / 1e9))
        .map_err(|e| e.to_string())
}

/// The most notifications per direction per round (each is a sample of
/// four costs; a million take minutes).
const MAX_SAMPLES: usize = 1_000_000;

pub fn run(a: &CalibrateArgs) -> anyhow::Result<()> {
    a.be.check()?;
    if !(10..=MAX_SAMPLES).contains(&a.samples) {
        return Err(crate::Usage(format!("--samples: between 10 and {MAX_SAMPLES}")).into());
    }
    if !(1..=100).contains(&a.rounds) {
        return Err(crate::Usage("--rounds: between 1 and 100".into()).into());
    }
    if a.overhead_runs > kicklab_testbed::calibrate::MAX_OVERHEAD_RUNS {
        return Err(crate::Usage(format!(
            "--overhead-runs: at most {}",
            kicklab_testbed::calibrate::MAX_OVERHEAD_RUNS
        ))
        .into());
    }
    if let Some(path) = &a.save {
        crate::files::check_out_file(path, "--save")?;
    }
    let c = Calibration {
        gaps: a.gaps.0.clone(),
        overhead_runs: a.overhead_runs,
        ..Calibration::new(a.samples, a.gap, a.rounds)
    };
    // Before it says what it is about to measure.
    c.check()?;
    errln!(
        "calibrating {} ({} notifications per direction per round, {} idle before each; then {} more idle gaps, \
         one round each; then {} runs of a polling pair with no work; then {} runs of two reference pairs \
         with notifications) ...",
        a.be.get().name(),
        a.samples,
        fmt_ns(a.gap.as_secs_f64() * 1e9),
        c.gaps.iter().filter(|g| **g != c.gap).count(),
        c.overhead_runs,
        c.reference_runs
    );
    let p = kicklab_lab::with_heartbeat(
        &crate::Bars::default(),
        &format!("calibrating {}", a.be.get().name()),
        std::time::Duration::from_secs(10),
        || calibrate_backend(a.be.get(), &c),
    )?;
    if let Some(path) = &a.save {
        crate::files::save(path, "--save", serde_json::to_string_pretty(&p)?.as_bytes())?;
        errln!("saved {}", path.display());
    }
    if a.json {
        return crate::print_json(&kicklab_lab::real::profile_json(&p));
    }
    let guest = match a.be.get() {
        kicklab_testbed::Backend::Kvm(o) => Some(o.guest),
        kicklab_testbed::Backend::Threads(_) => None,
    };
    print_profile(&p, guest);
    Ok(())
}

/// Prints a profile as `calibrate` does; `guest_mode` is how the KVM guest ran,
/// for the line that says what wakes it (profiles do not record it).
pub fn print_profile(p: &Profile, guest_mode: Option<kicklab_testbed::kvm::guest::GuestMode>) {
    let row = |name: &str, s: &Stat, what: &str| {
        outln!(
            "{name:<9} mean {:>9}  median {:>9}  p10 {:>9}  p90 {:>9}  ({what})",
            fmt_ns(s.mean_ns),
            fmt_ns(s.median_ns),
            fmt_ns(s.p10_ns),
            fmt_ns(s.p90_ns)
        );
    };
    outln!(
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
        let wakes = if guest_mode == Some(kicklab_testbed::kvm::guest::GuestMode::Emulated) {
            "an irqfd interrupt into the guest's IRQ 5 handler, halted inside KVM"
        } else {
            "doorbell eventfd its halted vCPU thread sleeps on"
        };
        outln!(
            "direction {}: {guest} is the guest (kicks: `out` to an ioeventfd port), {host} a host thread \
             (wakes the guest: {wakes})",
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
    let (sp_cpu, sc_cpu) = if p.direction.is_some() {
        (
            "P's own CPU time across the wait, per wake-up",
            "C's own CPU time across the wait, per wake-up",
        )
    } else {
        (
            "P's own CPU time from the start of C's notify to running",
            "C's own CPU time from the start of P's notify to running",
        )
    };
    row("S_P cpu", &p.sp_cpu, sp_cpu);
    row("S_C cpu", &p.sc_cpu, sc_cpu);
    let guest_kick = |party: Party| {
        let guest = match p.direction {
            Some(kicklab_model::Direction::Tx) => Some(Party::P),
            Some(kicklab_model::Direction::Rx) => Some(Party::C),
            None => None,
        };
        guest == Some(party)
    };
    for (name, party, n, s) in [
        ("V_P", Party::P, "N_P", "S_C"),
        ("V_C", Party::C, "N_C", "S_P"),
    ] {
        if let Some(v) = p.visibility(party) {
            let how = if guest_kick(party) {
                "a polling host sees the guest's kick".to_string()
            } else {
                format!("{n} + {s} - {s} cpu, within [0, {n}], per sample")
            };
            row(
                name,
                v,
                &format!("{n} starts -> the peer is runnable: {how}"),
            );
        }
    }
    for (name, party, r) in [
        ("S_P|V", Party::P, "N_C + S_P - V_C"),
        ("S_C|V", Party::C, "N_P + S_C - V_P"),
    ] {
        if p.visibility(party.other()).is_some() {
            row(
                name,
                p.start(party),
                &format!("runnable -> runs, the model's S: {r}"),
            );
        }
    }
    if let Some(o) = &p.overhead {
        row(
            "ring",
            o,
            &format!(
                "per message of a polling pair with no work, {} runs; the model adds it to W_P and W_C of polling pairs",
                o.n
            ),
        );
    }
    for (name, o, who) in [
        (
            "ring P",
            &p.overhead_p,
            "P sets the pace (W_P 4us, W_C 0), C asleep",
        ),
        (
            "ring C",
            &p.overhead_c,
            "C sets the pace (W_C 4us, W_P 0), P asleep",
        ),
    ] {
        if let Some(o) = o {
            row(
                name,
                o,
                &format!(
                    "the pace-setter's CPU per message, {who}, less its work and kicks; {} runs; the model adds it to notify pairs",
                    o.n
                ),
            );
        }
    }
    for (name, nap, cpu) in [("nap P", &p.nap_p, "P's"), ("nap C", &p.nap_c, "C's")] {
        if let Some(n) = nap {
            row(
                name,
                n,
                &format!(
                    "a timed sleep of the gap on {cpu} CPU: planned end -> running; {} naps; the simulator's naps pay it",
                    n.n
                ),
            );
        }
    }
    for (name, nap, cpu) in [
        ("nap P cpu", &p.nap_p_cpu, "P's"),
        ("nap C cpu", &p.nap_c_cpu, "C's"),
    ] {
        if let Some(n) = nap {
            row(
                name,
                n,
                &format!("the sleeper's own CPU time across each of those naps on {cpu} CPU"),
            );
        }
    }
    if let Some(r) = &p.in_run {
        const TAKES: &str = "the model takes these";
        for (name, stat, what, use_) in [
            (
                "N_P run",
                &r.np,
                "P's notify inside runs (W_P 2us, W_C 1us: C sleeps)",
                TAKES,
            ),
            (
                "N_C run",
                &r.nc,
                "C's notify inside runs (the mirror: P sleeps)",
                TAKES,
            ),
            (
                "R_P run",
                &r.rp,
                "C's notify starts -> P runs, inside runs (V_C + S_P)",
                TAKES,
            ),
            (
                "R_C run",
                &r.rc,
                "P's notify starts -> C runs, inside runs (V_P + S_C)",
                TAKES,
            ),
            (
                "sleep P cpu",
                &r.sleep_p_cpu,
                "P's CPU per sleep in the runs where it sleeps, less work, ring and kicks",
                "E counts it per sleep",
            ),
            (
                "sleep C cpu",
                &r.sleep_c_cpu,
                "C's CPU per sleep in the runs where it sleeps, less work, ring and kicks",
                "E counts it per sleep",
            ),
        ] {
            let Some(s) = stat else { continue };
            row(name, s, &format!("{what}; {} runs; {use_}", s.n));
        }
    }
    if let (Some(sync), Some(drift)) = (p.clock_sync_ns, p.clock_drift_ns) {
        outln!(
            "guest and host clocks related to within {} (half the best ping round trip); offset moved {} during a round",
            fmt_ns(sync),
            fmt_ns(drift)
        );
    }
    if let Some(v) = &p.kick_visible {
        outln!(
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
        outln!(
            "paper (Rizzo et al., guest P in QEMU/KVM, host C): N_P {}, S_P {}, N_C {}, S_C {}; \
             measured/paper: N_P {np:.1}x, S_P {sp:.1}x, N_C {nc:.1}x, S_C {sc:.1}x (means)",
            fmt_ns(d.n_p.mean_ns()),
            fmt_ns(d.s_p.mean_ns()),
            fmt_ns(d.n_c.mean_ns()),
            fmt_ns(d.s_c.mean_ns()),
        );
    }
    if !p.idle_curve.is_empty() {
        outln!("after other idle gaps (one round each; S as the model takes it; mean, median in parentheses):");
        outln!(
            "  {:>8}  {:>21}  {:>21}  {:>21}  {:>21}",
            "gap",
            "N_P",
            "N_C",
            "S_P",
            "S_C"
        );
        let cell = |s: &Stat| format!("{} ({})", fmt_ns(s.mean_ns), fmt_ns(s.median_ns));
        for q in &p.idle_curve {
            outln!(
                "  {:>8}  {:>21}  {:>21}  {:>21}  {:>21}",
                fmt_ns(q.gap_ns),
                cell(&q.np),
                cell(&q.nc),
                cell(&q.sp),
                cell(&q.sc)
            );
        }
    }
    if let Some(o) = p.others_cpu {
        outln!(
            "others    {o:.3} CPU  (other processes on the pair's CPUs while calibrating, from /proc/stat less this process)"
        );
    }
    outln!(
        "{} samples per cost in {} round(s); medians {}",
        p.np.n,
        p.rounds,
        if p.stable {
            "stable within 5%"
        } else {
            "NOT stable within 5% (noisy machine): see the spread"
        }
    );
    for w in kicklab_lab::disturbance::check_profile(p) {
        if matches!(
            w,
            kicklab_lab::disturbance::Warning::UnsteadyRingCost { .. }
                | kicklab_lab::disturbance::Warning::BusyCalibration { .. }
        ) {
            outln!("warning: {w}");
        }
    }
}
