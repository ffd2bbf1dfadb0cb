//! A calibration profile as text: every cost with its spread and what it
//! measures, the in-run costs, the idle curve, the clocks, the paper's
//! costs beside, and the profile's own warnings. What does not live here:
//! the profile (`kicklab_testbed::Profile`), its JSON ([`crate::real`]).

use kicklab_model::{fmt_ns, Party};
use kicklab_testbed::kvm::guest::GuestMode;
use kicklab_testbed::{Profile, Stat};

/// A profile as `calibrate` prints it, line by line; `guest_mode` is how
/// the KVM guest ran, for the line that says what wakes it (profiles do not
/// record it).
#[allow(clippy::too_many_lines)]
pub fn lines(p: &Profile, guest_mode: Option<GuestMode>) -> Vec<String> {
    let mut lines = Vec::new();
    let row = |name: &str, s: &Stat, what: &str| {
        format!(
            "{name:<9} mean {:>9}  median {:>9}  p10 {:>9}  p90 {:>9}  ({what})",
            fmt_ns(s.mean_ns),
            fmt_ns(s.median_ns),
            fmt_ns(s.p10_ns),
            fmt_ns(s.p90_ns)
        )
    };
    lines.push(format!(
        "backend {}  ({} CPUs, TSC {:.3} GHz, {} idle before each notification)",
        p.backend,
        p.cpus,
        p.tsc_ghz,
        fmt_ns(p.gap_ns)
    ));
    if let Some(d) = p.direction {
        let (guest, host) = if d == kicklab_model::Direction::Tx {
            ("P", "C")
        } else {
            ("C", "P")
        };
        let wakes = if guest_mode == Some(GuestMode::Emulated) {
            "an irqfd interrupt into the guest's IRQ 5 handler, halted inside KVM"
        } else {
            "doorbell eventfd its halted vCPU thread sleeps on"
        };
        lines.push(format!(
            "direction {}: {guest} is the guest (kicks: `out` to an ioeventfd port), {host} a host thread \
             (wakes the guest: {wakes})",
            d.name()
        ));
    }
    lines.push(row("N_P", &p.np, "P's notify call, C asleep"));
    lines.push(row("N_C", &p.nc, "C's notify call, P asleep"));
    lines.push(row("S_P", &p.sp, "C's notify returns -> P runs"));
    lines.push(row("S_C", &p.sc, "P's notify returns -> C runs"));
    lines.push(row(
        "N_P cpu",
        &p.np_cpu,
        "P's thread CPU time across its notify",
    ));
    lines.push(row(
        "N_C cpu",
        &p.nc_cpu,
        "C's thread CPU time across its notify",
    ));
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
    lines.push(row("S_P cpu", &p.sp_cpu, sp_cpu));
    lines.push(row("S_C cpu", &p.sc_cpu, sc_cpu));
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
            lines.push(row(
                name,
                v,
                &format!("{n} starts -> the peer is runnable: {how}"),
            ));
        }
    }
    for (name, party, r) in [
        ("S_P|V", Party::P, "N_C + S_P - V_C"),
        ("S_C|V", Party::C, "N_P + S_C - V_P"),
    ] {
        if p.visibility(party.other()).is_some() {
            lines.push(row(
                name,
                p.start(party),
                &format!("runnable -> runs, the model's S: {r}"),
            ));
        }
    }
    if let Some(o) = &p.overhead {
        lines.push(row(
            "ring",
            o,
            &format!(
                "per message of a polling pair with no work, {} runs; the model adds it to W_P and W_C of polling pairs",
                o.n
            ),
        ));
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
            lines.push(row(
                name,
                o,
                &format!(
                    "the pace-setter's CPU per message, {who}, less its work and kicks; {} runs; the model adds it to notify pairs",
                    o.n
                ),
            ));
        }
    }
    for (name, nap, cpu) in [("nap P", &p.nap_p, "P's"), ("nap C", &p.nap_c, "C's")] {
        if let Some(n) = nap {
            lines.push(row(
                name,
                n,
                &format!(
                    "a timed sleep of the gap on {cpu} CPU: planned end -> running; {} naps; the simulator's naps pay it",
                    n.n
                ),
            ));
        }
    }
    for (name, nap, cpu) in [
        ("nap P cpu", &p.nap_p_cpu, "P's"),
        ("nap C cpu", &p.nap_c_cpu, "C's"),
    ] {
        if let Some(n) = nap {
            lines.push(row(
                name,
                n,
                &format!("the sleeper's own CPU time across each of those naps on {cpu} CPU"),
            ));
        }
    }
    if let Some(r) = &p.in_run {
        const TAKES: &str = "the model takes these";
        for (name, stat, what, use_, counted) in [
            (
                "N_P run",
                &r.np,
                "P's notify inside runs (W_P 2us, W_C 1us: C sleeps)",
                TAKES,
                "runs",
            ),
            (
                "N_C run",
                &r.nc,
                "C's notify inside runs (the mirror: P sleeps)",
                TAKES,
                "runs",
            ),
            (
                "R_P run",
                &r.rp,
                "C's notify starts -> P runs, inside runs (V_C + S_P)",
                TAKES,
                "runs",
            ),
            (
                "R_C run",
                &r.rc,
                "P's notify starts -> C runs, inside runs (V_P + S_C)",
                TAKES,
                "runs",
            ),
            (
                "start P run",
                &r.start_p,
                "C's notify returns -> P runs, round by round inside runs (the batch race's s_P)",
                "recorded, not yet in the forecast",
                "rounds",
            ),
            (
                "start C run",
                &r.start_c,
                "P's notify returns -> C runs, round by round inside runs (the batch race's s_C)",
                "recorded, not yet in the forecast",
                "rounds",
            ),
            (
                "sleep P cpu",
                &r.sleep_p_cpu,
                "P's CPU per sleep in the runs where it sleeps, less work, ring and kicks",
                "E counts it per sleep",
                "runs",
            ),
            (
                "sleep C cpu",
                &r.sleep_c_cpu,
                "C's CPU per sleep in the runs where it sleeps, less work, ring and kicks",
                "E counts it per sleep",
                "runs",
            ),
        ] {
            let Some(s) = stat else { continue };
            lines.push(row(name, s, &format!("{what}; {} {counted}; {use_}", s.n)));
        }
    }
    if let (Some(sync), Some(drift)) = (p.clock_sync_ns, p.clock_drift_ns) {
        lines.push(format!(
            "guest and host clocks related to within {} (half the best ping round trip); offset moved {} during a round",
            fmt_ns(sync),
            fmt_ns(drift)
        ));
    }
    if let Some(v) = &p.kick_visible {
        lines.push(format!(
            "a polling host sees a guest kick {} after the kick starts (median; p10 {}, p90 {}), while the kick costs the guest {}",
            fmt_ns(v.median_ns),
            fmt_ns(v.p10_ns),
            fmt_ns(v.p90_ns),
            fmt_ns(if p.direction == Some(kicklab_model::Direction::Tx) { p.np.median_ns } else { p.nc.median_ns })
        ));
    }
    if p.direction == Some(kicklab_model::Direction::Tx) {
        let d = kicklab_model::Params::default();
        let [np, nc, sp, sc] = p.means_over_paper();
        lines.push(format!(
            "paper (Rizzo et al., guest P in QEMU/KVM, host C): N_P {}, S_P {}, N_C {}, S_C {}; \
             measured/paper: N_P {np:.1}x, S_P {sp:.1}x, N_C {nc:.1}x, S_C {sc:.1}x (means)",
            fmt_ns(d.n_p.mean_ns()),
            fmt_ns(d.s_p.mean_ns()),
            fmt_ns(d.n_c.mean_ns()),
            fmt_ns(d.s_c.mean_ns()),
        ));
    }
    if !p.idle_curve.is_empty() {
        lines.push("after other idle gaps (one round each; S as the model takes it; mean, median in parentheses):".to_string());
        lines.push(format!(
            "  {:>8}  {:>21}  {:>21}  {:>21}  {:>21}",
            "gap", "N_P", "N_C", "S_P", "S_C"
        ));
        let cell = |s: &Stat| format!("{} ({})", fmt_ns(s.mean_ns), fmt_ns(s.median_ns));
        for q in &p.idle_curve {
            lines.push(format!(
                "  {:>8}  {:>21}  {:>21}  {:>21}  {:>21}",
                fmt_ns(q.gap_ns),
                cell(&q.np),
                cell(&q.nc),
                cell(&q.sp),
                cell(&q.sc)
            ));
        }
    }
    if let Some(o) = p.others_cpu {
        lines.push(format!(
            "others    {o:.3} CPU  (other processes on the pair's CPUs while calibrating, from /proc/stat less this process)"
        ));
    }
    lines.push(format!(
        "{} samples per cost in {} round(s); medians {}",
        p.np.n,
        p.rounds,
        if p.stable {
            "stable within 5%"
        } else {
            "NOT stable within 5% (noisy machine): see the spread"
        }
    ));
    for w in crate::disturbance::check_profile(p) {
        if matches!(
            w,
            crate::disturbance::Warning::UnsteadyRingCost { .. }
                | crate::disturbance::Warning::BusyCalibration { .. }
                | crate::disturbance::Warning::SharedCpu { .. }
        ) {
            lines.push(format!("warning: {w}"));
        }
    }
    lines
}
