//! N and S across the VM boundary, measured as the thread backend measures
//! them (`docs/calibration.md`), with the guest's TSC related to the
//! host's by a ping exchange.
//!
//! - guest kick (ioeventfd): N = the guest's TSC around its `out` (the
//!   host blocked); S = from the end of the `out` to the host thread
//!   running after `read(kick)`; V (every fourth kick, the host polling
//!   the eventfd instead) = from the start of the `out` to the host seeing
//!   it, and the model's S = N + S - V on the statistics.
//! - host wake-up (doorbell): N = the host's TSC around `write(doorbell)`;
//!   S = from the end of the write to the guest running after its halt; V
//!   = N + S - the vCPU thread's CPU per wake-up, within [0, N], per
//!   sample, and the model's S = N + S - V.
//!
//! Clocks: the guest's TSC is related to the host's by a clock exchange
//! before the samples and one after (`super::clocks`); each guest stamp is
//! placed by the offset interpolated between them. The larger uncertainty
//! and the drift are reported.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::clocks::{ping, spin_until, ClockMap};
use super::guest::{calibration_program, ctrl, map, GuestMode};
use super::session::Session;
use super::vm::{clock_ns, Vm, VmOptions};
use super::Direction;
use crate::backend::threads::visibility;
use crate::calibrate::{check_round, settled, start_after, Profile, Stat};
use crate::clock::{pin, rdtsc, thread_cpu_ns, Tsc};
use crate::{Setting, TestbedError};

pub(crate) const SYNC: u32 = 300;

/// One round's samples [ns].
#[derive(Default)]
struct Round {
    guest_kick_n: Vec<f64>,
    host_wake_s: Vec<f64>,
    host_wake_cpu: Vec<f64>,
    host_irq_n: Vec<f64>,
    host_irq_cpu: Vec<f64>,
    guest_wake_s: Vec<f64>,
    guest_wake_cpu: Vec<f64>,
    kick_visible: Vec<f64>,
    /// The guest's kick: V (the polled visibility within [0, N]) and R
    /// (N + the blocked host's wall S), each from its own samples.
    kick_v: Vec<f64>,
    kick_r: Vec<f64>,
    /// The host's wake-up: V and the model's S per sample.
    wake_v: Vec<f64>,
    wake_s_v: Vec<f64>,
    sync_ns: f64,
    drift_ns: f64,
}

#[allow(clippy::cast_precision_loss, clippy::too_many_lines)]
fn round(mode: GuestMode, samples: u32, gap: Duration) -> Result<Round, TestbedError> {
    let tsc = Tsc::get();
    let vm = Vm::new(VmOptions {
        mode,
        ..VmOptions::default()
    })?;
    let gap_ticks = u32::try_from(tsc.ticks(gap.as_secs_f64() * 1e9)).unwrap_or(u32::MAX);
    let program = calibration_program(mode, SYNC, samples, gap_ticks)?;
    let (kick, doorbell) = (vm.kick.try_clone()?, vm.waker()?);
    let session = Session::start(&vm, &program, 0)?;
    let vclock = session.vcpu.clock_id();
    let mem = Arc::clone(&vm.mem);
    let mem_h = Arc::clone(&mem);
    let host = move |stop_h: &AtomicBool| -> Result<Round, TestbedError> {
        let mem = &*mem_h;
        pin(1);
        let mut r = Round::default();
        let before = ping(mem, 1, SYNC, stop_h, None)?;
        let mut req = SYNC;
        // Guest -> host kicks. Every fourth one the host polls the
        // eventfd instead of blocking on it: when a kick becomes
        // visible, as opposed to when a sleeping thread wakes.
        let mut woke = Vec::with_capacity(samples as usize);
        let mut pfd = libc::pollfd {
            fd: std::os::fd::AsRawFd::as_raw_fd(&kick),
            events: libc::POLLIN,
            revents: 0,
        };
        for j in 0..samples {
            req += 1;
            let c0 = thread_cpu_ns();
            mem.write_u32(map::CTRL + ctrl::REQ, req);
            if j % 4 == 3 {
                // SAFETY: one valid pollfd, zero timeout.
                while unsafe { libc::poll(&mut pfd, 1, 0) } <= 0 {
                    if stop_h.load(Ordering::Relaxed) {
                        return Err(TestbedError::Hang("calibration stopped".into()));
                    }
                }
                woke.push((true, rdtsc()));
                kick.read()?;
            } else {
                kick.read()?;
                woke.push((false, rdtsc()));
                r.host_wake_cpu.push((thread_cpu_ns() - c0) as f64);
            }
            if stop_h.load(Ordering::Relaxed) {
                return Err(TestbedError::Hang("calibration stopped".into()));
            }
            spin_until(mem, map::CTRL + ctrl::RESP, req, stop_h, None)?;
        }
        // Host -> guest wake-ups.
        let mut sent = Vec::with_capacity(samples as usize);
        let v0 = clock_ns(vclock);
        for _ in 0..samples {
            req += 1;
            spin_until(mem, map::CTRL + ctrl::RESP, req, stop_h, None)?;
            tsc.spin_ticks(u64::from(gap_ticks));
            mem.write_u32(map::CTRL + ctrl::REQ, req); // "this one is for you"
            let c0 = thread_cpu_ns();
            let t0 = rdtsc();
            doorbell.write(1)?;
            let t1 = rdtsc();
            r.host_irq_cpu.push((thread_cpu_ns() - c0) as f64);
            r.host_irq_n.push(tsc.ns(t1 - t0));
            sent.push(t1);
        }
        // The guest stores its last wake-up before its next ping.
        let after = ping(mem, req + 1, SYNC, stop_h, None)?;
        let v1 = clock_ns(vclock);
        let clocks = ClockMap::new(before, after);
        let to_host = |g: u64| clocks.host(g);
        // Signed: a wake-up can come before the notifier's call
        // returns (the peer runs while the kick's exit unwinds).
        #[allow(clippy::cast_precision_loss)]
        let signed_ns = |a: i128, b: i128| (a - b) as f64 / tsc.ticks_per_ns;
        let base = map::SAMPLES;
        for (j, (polled, w)) in woke.iter().enumerate() {
            let a = base + 16 * j as u32;
            let (g0, g1) = (mem.read_u64(a), mem.read_u64(a + 8));
            let n = tsc.ns(g1.saturating_sub(g0));
            if *polled {
                let v = signed_ns(i128::from(*w), to_host(g0));
                r.kick_visible.push(v);
                r.kick_v.push(v.clamp(0.0, n));
            } else {
                // N counts the kicks with the host asleep only: what a
                // kick to a sleeping peer costs (and R = N + S per sample).
                let s = signed_ns(i128::from(*w), to_host(g1));
                r.guest_kick_n.push(n);
                r.host_wake_s.push(s);
                r.kick_r.push(n + s);
            }
        }
        // The vCPU thread's CPU over the wake-up phase, per wake-up:
        // the guest only halts there, so this is its wake-up work.
        let wake_cpu = v1.saturating_sub(v0) as f64 / f64::from(samples.max(1));
        r.guest_wake_cpu.push(wake_cpu);
        let base = base + 16 * samples;
        for (j, t1) in sent.iter().enumerate() {
            let g = mem.read_u64(base + 8 * j as u32);
            let s = signed_ns(to_host(g), i128::from(*t1));
            r.guest_wake_s.push(s);
            let (v, s_v) = visibility(r.host_irq_n[j], s, wake_cpu);
            r.wake_v.push(v);
            r.wake_s_v.push(s_v);
        }
        r.sync_ns = tsc.ns(clocks.uncertainty());
        r.drift_ns = tsc.ns(clocks.drift());
        Ok(r)
    };
    // Every ping, kick and wake-up moves REQ or RESP; each waits `gap`.
    let stall = Duration::from_secs(10) + 2 * gap;
    let (mem_w, mem_s) = (Arc::clone(&mem), Arc::clone(&mem));
    session.run(
        "kicklab-calib",
        host,
        stall,
        move || {
            (
                mem_w.read_u32(map::CTRL + ctrl::REQ),
                mem_w.read_u32(map::CTRL + ctrl::RESP),
            )
        },
        move || {
            format!(
                "the calibration guest stopped answering (request {}, answer {})",
                mem_s.read_u32(map::CTRL + ctrl::REQ),
                mem_s.read_u32(map::CTRL + ctrl::RESP),
            )
        },
    )
}

/// Calibrates the KVM backend for `direction` with the guest in `mode`: rounds of `samples` kicks
/// and interrupts (each after `gap` of idling), until the four medians
/// move less than 5% between rounds (at most `max_rounds`).
///
/// # Errors
///
/// Too many samples or too long a gap ([`TestbedError::Limit`]), no usable
/// KVM, or a guest that stops answering.
pub fn calibrate(
    direction: Direction,
    mode: GuestMode,
    samples: usize,
    gap: Duration,
    max_rounds: usize,
) -> Result<Profile, TestbedError> {
    check_round(samples, gap)?;
    let samples = u32::try_from(samples)
        .ok()
        .filter(|s| *s <= map::SAMPLES_MAX)
        .ok_or_else(|| {
            TestbedError::limit(
                Setting::Samples,
                format!("at most {} per round with kvm", map::SAMPLES_MAX),
            )
        })?;
    let mut all = Round::default();
    let mut prev: Option<[f64; 4]> = None;
    let (mut rounds, mut stable) = (0, false);
    while rounds < max_rounds.max(1) {
        rounds += 1;
        let r = round(mode, samples, gap)?;
        all.guest_kick_n.extend(r.guest_kick_n);
        all.host_wake_s.extend(r.host_wake_s);
        all.host_wake_cpu.extend(r.host_wake_cpu);
        all.host_irq_n.extend(r.host_irq_n);
        all.host_irq_cpu.extend(r.host_irq_cpu);
        all.guest_wake_s.extend(r.guest_wake_s);
        all.guest_wake_cpu.extend(r.guest_wake_cpu);
        all.kick_visible.extend(r.kick_visible);
        all.kick_v.extend(r.kick_v);
        all.kick_r.extend(r.kick_r);
        all.wake_v.extend(r.wake_v);
        all.wake_s_v.extend(r.wake_s_v);
        all.sync_ns = all.sync_ns.max(r.sync_ns);
        all.drift_ns = all.drift_ns.max(r.drift_ns);
        let med = [
            &all.guest_kick_n,
            &all.host_wake_s,
            &all.host_irq_n,
            &all.guest_wake_s,
        ]
        .map(|v| Stat::of(v.clone()).median_ns);
        if settled(&mut prev, med) {
            stable = true;
            break;
        }
    }
    let st = |v: &Vec<f64>| Stat::of(v.clone());
    let (guest_n, host_s, host_n, guest_s) = (
        st(&all.guest_kick_n),
        st(&all.host_wake_s),
        st(&all.host_irq_n),
        st(&all.guest_wake_s),
    );
    let (host_s_cpu, host_n_cpu, guest_s_cpu) = (
        st(&all.host_wake_cpu),
        st(&all.host_irq_cpu),
        st(&all.guest_wake_cpu),
    );
    // The guest's kick is all guest CPU time (the vCPU is busy in the exit).
    let guest_n_cpu = guest_n;
    // V of the guest's kick is measured (a polling host), not paired with
    // the blocked host's start-ups: S = R - V on the statistics. V of the
    // host's wake-up is derived per sample from the vCPU thread's CPU.
    let kick_v = st(&all.kick_v);
    let kick_s_v = start_after(all.kick_r, &kick_v);
    let (wake_v, wake_s_v) = (st(&all.wake_v), st(&all.wake_s_v));
    let (vp, vc, sp_v, sc_v) = match direction {
        Direction::Tx => (kick_v, wake_v, wake_s_v, kick_s_v),
        Direction::Rx => (wake_v, kick_v, kick_s_v, wake_s_v),
    };
    let (np, nc, sp, sc, np_cpu, nc_cpu, sp_cpu, sc_cpu) = match direction {
        Direction::Tx => (
            guest_n,
            host_n,
            guest_s,
            host_s,
            guest_n_cpu,
            host_n_cpu,
            guest_s_cpu,
            host_s_cpu,
        ),
        Direction::Rx => (
            host_n,
            guest_n,
            host_s,
            guest_s,
            host_n_cpu,
            guest_n_cpu,
            host_s_cpu,
            guest_s_cpu,
        ),
    };
    Ok(Profile {
        backend: "kvm".into(),
        np,
        nc,
        sp,
        sc,
        np_cpu,
        nc_cpu,
        sp_cpu,
        sc_cpu,
        gap_ns: gap.as_secs_f64() * 1e9,
        rounds,
        stable,
        tsc_ghz: Tsc::get().ticks_per_ns,
        cpus: crate::clock::cpus(),
        direction: Some(direction),
        guest: Some(mode.name().into()),
        clock_sync_ns: Some(all.sync_ns),
        clock_drift_ns: Some(all.drift_ns),
        kick_visible: Some(st(&all.kick_visible)),
        vp: Some(vp),
        vc: Some(vc),
        sp_v: Some(sp_v),
        sc_v: Some(sc_v),
        overhead: None,
        overhead_p: None,
        overhead_c: None,
        idle_curve: Vec::new(),
        in_run: None,
        nap_p: None,
        nap_c: None,
        nap_p_cpu: None,
        nap_c_cpu: None,
        others_cpu: None,
    })
}
