//! Idle-with-timeout at scale with real guests (`crate::scale` has the
//! threads version and the set-up): N tiny VMs of one vCPU each, their
//! vCPU threads time-sharing the CPUs, each guest serving its share of one
//! closed request load and running a periodic timer
//! ([`super::guest::scale_program`]). Idle by spinning, a guest holds its
//! CPU until the host scheduler takes it away; with a timeout it exits to
//! the VMM, whose vCPU thread sleeps on the doorbell until a request or
//! the guest's timer (the pingpong guest's `hint` mechanism).
//!
//! The client is a host thread: it gives each guest a request whenever the
//! guest answers one (REQ counts those given, RESP those answered, both in
//! the guest's control block), rings the guest's doorbell if it idles,
//! and, with nothing answered, asks every guest for a kick (HOST_WANT) and
//! sleeps on their kick eventfds. Guest memory is read as untrusted: an
//! answer count that runs ahead of what was given stops the run with an
//! error.

use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use vmm_sys_util::eventfd::EventFd;

use super::guest::{ctrl, map, scale_program, ScaleGuestIdle, ScaleTicks};
use super::vm::{GuestMemory, VcpuThread, Vm, VmOptions};
use crate::clock::Tsc;
use crate::scale::{process_cpu_ns, ScaleConfig, ScaleIdle, ScaleResult};
use crate::TestbedError;

/// The most guests a kvm scale run starts.
pub const MAX_VMS: usize = 64;

/// One guest of the run.
struct Guest {
    vm: Vm,
    mem: Arc<GuestMemory>,
    kick: EventFd,
    doorbell: EventFd,
    vcpu: Option<VcpuThread>,
    /// Requests given so far (the guest's REQ).
    given: u32,
    /// Answers seen so far.
    seen: u32,
}

impl Guest {
    fn read(&self, off: u32) -> u32 {
        self.mem.read_u32(map::CTRL + off)
    }

    /// Gives the guest `n` more requests; wakes it if it idles.
    fn give(&mut self, n: u32) -> Result<(), TestbedError> {
        self.given = self.given.wrapping_add(n);
        self.mem.write_u32(map::CTRL + ctrl::REQ, self.given);
        if self.mem.swap_u32(map::CTRL + ctrl::WANT_IRQ, 0) == 1 {
            self.doorbell.write(1)?;
        }
        Ok(())
    }

    /// New answers since the last look (checked against what was given).
    fn answered(&mut self, id: usize) -> Result<u32, TestbedError> {
        let resp = self.read(ctrl::RESP);
        let new = resp.wrapping_sub(self.seen);
        if new > self.given.wrapping_sub(self.seen) {
            return Err(TestbedError::Guest(format!(
                "guest {id} answered {resp} requests, but was given {}",
                self.given
            )));
        }
        self.seen = resp;
        Ok(new)
    }
}

/// Runs `cfg.vms` guests and the client on this host's CPUs.
///
/// # Errors
///
/// A bad configuration, no usable KVM, more than [`MAX_VMS`] guests, a
/// guest that ends or misbehaves during the run.
#[allow(clippy::cast_precision_loss, clippy::too_many_lines)]
pub fn scale(cfg: &ScaleConfig) -> Result<ScaleResult, TestbedError> {
    cfg.check()?;
    if cfg.vms > MAX_VMS {
        return Err(TestbedError::invalid(
            crate::Setting::Vms,
            format!("1 to {MAX_VMS} guests with kvm (a VM and a vCPU thread each)"),
        ));
    }
    let _cpus = crate::cpu_lock::hold()?;
    let tsc = Tsc::get();
    let ticks = |d: Duration| u32::try_from(tsc.ticks(d.as_secs_f64() * 1e9)).ok();
    let too_long = |what| {
        TestbedError::invalid(
            what,
            "the guest counts 32 bits of TSC ticks: work and timer of at most a second",
        )
    };
    let timer = ticks(cfg.timer).ok_or_else(|| too_long(crate::Setting::Timer))?;
    let (Some(work), Some(timer_work)) = (ticks(cfg.work), ticks(cfg.timer_work)) else {
        return Err(too_long(crate::Setting::Work));
    };
    if timer >= 1 << 30 {
        return Err(TestbedError::invalid(
            crate::Setting::Timeout,
            "the guest's timer compares 32-bit TSC deadlines: a period of at most 0.4 s",
        ));
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let per_us = (tsc.ticks_per_ns * 1000.0).round().max(1.0) as u32;
    let program = scale_program(
        match cfg.idle {
            ScaleIdle::Spin => ScaleGuestIdle::Spin,
            ScaleIdle::Timeout => ScaleGuestIdle::Timeout,
        },
        ScaleTicks {
            work,
            timer,
            timer_work,
            per_us,
        },
    )?;
    let cpus = crate::clock::cpus();
    let mut guests = Vec::with_capacity(cfg.vms);
    for _ in 0..cfg.vms {
        let vm = Vm::new(VmOptions::default())?;
        let (kick, doorbell) = (vm.kick.try_clone()?, vm.doorbell.try_clone()?);
        let mem = Arc::clone(&vm.mem);
        guests.push(Guest {
            vm,
            mem,
            kick,
            doorbell,
            vcpu: None,
            given: 0,
            seen: 0,
        });
    }
    // The vCPUs spread over the CPUs, as a hypervisor places them.
    for (i, g) in guests.iter_mut().enumerate() {
        g.vcpu = Some(g.vm.start(&program, i % cpus)?);
    }
    let out = client(cfg, &mut guests);
    // Stop every guest: ask, wake, then take out what does not finish.
    for g in &mut guests {
        g.mem.write_u32(map::CTRL + ctrl::STOP, 1);
        let _ = g.doorbell.write(1);
    }
    for g in &mut guests {
        if let Some(mut v) = g.vcpu.take() {
            if v.join_within(Duration::from_secs(2)).is_err() {
                v.stop();
            }
        }
    }
    let (completed, wall, cpu) = out?;
    Ok(ScaleResult {
        vms: cfg.vms,
        cpus,
        idle: cfg.idle,
        throughput_per_s: completed as f64 / wall,
        cpu_util: cpu as f64 / 1e9 / wall / cpus as f64,
        oversubscribed: cfg.vms + 1 > cpus,
    })
}

/// The client: the closed load over the guests, for a warm-up of a fifth
/// of `cfg.duration` and then `cfg.duration`. Returns (requests answered
/// in the window, its wall time [s], the process's CPU in it [ns]).
fn client(cfg: &ScaleConfig, guests: &mut [Guest]) -> Result<(u64, f64, u64), TestbedError> {
    let n = guests.len();
    // Each guest gets its share of the outstanding requests (at least 1).
    let mut share = vec![0u32; n];
    for i in 0..cfg.concurrency.max(n) {
        share[i % n] = share[i % n].saturating_add(1);
    }
    for (g, s) in guests.iter_mut().zip(&share) {
        g.give(*s)?;
    }
    let mut fds: Vec<libc::pollfd> = guests
        .iter()
        .map(|g| libc::pollfd {
            fd: g.kick.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let start = Instant::now();
    let end = start + cfg.duration / 5 + cfg.duration;
    let (mut t0, mut cpu0, mut n0) = (None, 0u64, 0u64);
    let mut completed = 0u64;
    loop {
        let now = Instant::now();
        if t0.is_none() && now >= start + cfg.duration / 5 {
            (t0, cpu0, n0) = (Some(now), process_cpu_ns(), completed);
        }
        if now >= end {
            break;
        }
        let mut any = false;
        for (id, g) in guests.iter_mut().enumerate() {
            let new = g.answered(id)?;
            if new > 0 {
                completed += u64::from(new);
                // Closed loop: the guest that answered gets as many again.
                g.give(new)?;
                any = true;
            }
        }
        if any {
            continue;
        }
        if let Some((id, _)) = guests
            .iter()
            .enumerate()
            .find(|(_, g)| g.vcpu.as_ref().is_some_and(VcpuThread::finished))
        {
            return Err(TestbedError::Guest(format!(
                "guest {id} ended during the run"
            )));
        }
        // Nothing answered: ask for kicks, look once more, then sleep on
        // the kick eventfds until one comes (or a few ms pass).
        for g in guests.iter() {
            g.mem.write_u32(map::CTRL + ctrl::HOST_WANT, 1);
        }
        if guests.iter().any(|g| g.read(ctrl::RESP) != g.seen) {
            continue;
        }
        let wait = end
            .saturating_duration_since(now)
            .min(Duration::from_millis(5));
        let ms = libc::c_int::try_from(wait.as_millis()).unwrap_or(5).max(1);
        // SAFETY: `fds` is a valid array of `fds.len()` pollfds.
        let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e.into());
            }
        }
        for (f, g) in fds.iter_mut().zip(guests.iter()) {
            if f.revents & libc::POLLIN != 0 {
                let _ = g.kick.read();
            }
            f.revents = 0;
            // Awake now: no kicks wanted until the next sleep.
            g.mem.write_u32(map::CTRL + ctrl::HOST_WANT, 0);
        }
    }
    let t1 = Instant::now();
    let cpu1 = process_cpu_ns();
    let t0 = t0.unwrap_or(start);
    Ok((
        completed - n0,
        (t1 - t0).as_secs_f64(),
        cpu1.saturating_sub(cpu0),
    ))
}
