//! Ping-pong with the guest as the responder (see `crate::pingpong`).
//!
//! The host writes REQ = i into guest memory; if the guest asked for a
//! wake-up (WANT_IRQ) it rings the doorbell its halted vCPU thread sleeps
//! on (with a timeout, for a guest idling with a hint). The guest
//! spins its work, writes RESP = i and kicks (ioeventfd) if the host asked
//! (HOST_WANT, when the host blocks instead of polling).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::guest::{ctrl, map, pingpong_program, GuestIdle, GuestMode};
use super::session::Session;
use super::vm::{clock_ns, Vm, VmOptions};
use super::KvmOptions;
use crate::clock::{pin, rdtsc, thread_cpu_ns, Tsc};
use crate::pingpong::{Idle, PingPongConfig, PingPongResult};
use crate::{Setting, TestbedError};

/// Runs ping-pong with a guest responder.
///
/// # Errors
///
/// Parameters out of range, no usable KVM, a capability this KVM lacks
/// (for example disabling HLT exits), or a guest that stops answering.
#[allow(clippy::cast_precision_loss, clippy::too_many_lines)]
pub fn run(cfg: &PingPongConfig, kvm: KvmOptions) -> Result<PingPongResult, TestbedError> {
    let (total, warm) = cfg.check()?;
    let tsc = Tsc::get();
    let ticks = |d: Duration| u32::try_from(tsc.ticks(d.as_secs_f64() * 1e9)).unwrap_or(u32::MAX);
    let mode = kvm.guest;
    let user = VmOptions {
        mode,
        ..VmOptions::default()
    };
    let (opts, guest_idle) = match cfg.idle {
        Idle::Halt => (user, GuestIdle::Halt),
        Idle::HostHaltPoll(w) => (
            VmOptions {
                halt_poll: w,
                ..user
            },
            GuestIdle::Halt,
        ),
        Idle::PollThenHalt(w) => (user, GuestIdle::PollThenHalt(ticks(w))),
        Idle::Poll => (user, GuestIdle::Poll),
        Idle::NoHltExit if mode == GuestMode::Emulated => (
            VmOptions {
                disable_hlt_exits: true,
                ..user
            },
            GuestIdle::Halt,
        ),
        Idle::NoHltExit => {
            return Err(TestbedError::invalid(
                Setting::Idle,
                crate::pingpong::NO_HLT_EXIT_USER,
            ))
        }
        Idle::Hint(w) => (
            user,
            GuestIdle::HaltHint(u16::try_from(w.as_micros()).unwrap_or(u16::MAX)),
        ),
    };
    let vm = Vm::new(opts)?;
    // One request more than measured: the guest exits after answering it,
    // once the host has read the clocks.
    let program = pingpong_program(mode, total + 1, guest_idle, ticks(cfg.work))?;
    // A guest idling with a timeout waits in the VMM: the doorbell wakes
    // it; a halted one is woken by the VM's waker (doorbell or irqfd).
    let doorbell = if matches!(cfg.idle, Idle::Hint(_)) {
        vm.doorbell.try_clone()?
    } else {
        vm.waker()?
    };
    let kick = vm.kick.try_clone()?;
    let polls = cfg.requester_polls;
    let work = tsc.ticks(cfg.work.as_secs_f64() * 1e9);
    let session = Session::start(&vm, &program, 0)?;
    let vclock = session.vcpu.clock_id();
    let mem = Arc::clone(&vm.mem);
    let mem_h = Arc::clone(&mem);
    let host = move |stop_h: &AtomicBool| -> Result<[u64; 7], TestbedError> {
        let mem = &*mem_h;
        pin(1);
        let [mut t0, mut c0, mut v0, mut s0] = [0u64; 4];
        for i in 1..=total {
            if i == warm + 1 {
                (t0, c0, v0) = (rdtsc(), thread_cpu_ns(), clock_ns(vclock));
                s0 = u64::from(mem.read_u32(map::CTRL + ctrl::SLEEPS));
            }
            if !tsc.spin_ticks_or_stop(work, stop_h) {
                return Err(TestbedError::Hang("stopped by the watchdog".into()));
            }
            mem.write_u32(map::CTRL + ctrl::REQ, i);
            if mem.swap_u32(map::CTRL + ctrl::WANT_IRQ, 0) == 1 {
                doorbell.write(1)?;
            }
            let mut spins = 0u32;
            while mem.read_u32(map::CTRL + ctrl::RESP) != i {
                if polls {
                    std::hint::spin_loop();
                } else {
                    mem.write_u32(map::CTRL + ctrl::HOST_WANT, 1);
                    if mem.read_u32(map::CTRL + ctrl::RESP) == i {
                        mem.write_u32(map::CTRL + ctrl::HOST_WANT, 0);
                        break;
                    }
                    kick.read()?;
                }
                spins = spins.wrapping_add(1);
                if spins.is_multiple_of(1024) && stop_h.load(Ordering::Relaxed) {
                    return Err(TestbedError::Hang("stopped".into()));
                }
                if !polls && stop_h.load(Ordering::Relaxed) {
                    return Err(TestbedError::Hang("stopped".into()));
                }
            }
        }
        let s1 = u64::from(mem.read_u32(map::CTRL + ctrl::SLEEPS));
        let marks = [
            t0,
            rdtsc(),
            c0,
            thread_cpu_ns(),
            v0,
            clock_ns(vclock),
            s1 - s0,
        ];
        // Release the guest: the last request ends its program.
        mem.write_u32(map::CTRL + ctrl::REQ, total + 1);
        if mem.swap_u32(map::CTRL + ctrl::WANT_IRQ, 0) == 1 {
            doorbell.write(1)?;
        }
        Ok(marks)
    };
    let (mem_w, mem_s) = (Arc::clone(&mem), Arc::clone(&mem));
    let [t0, t1, c0, c1, v0, v1, sleeps] = session.run(
        "kicklab-requester",
        host,
        cfg.timeout,
        move || mem_w.read_u32(map::CTRL + ctrl::RESP),
        move || {
            format!(
                "request {} of {total} sent, answers up to {} (a guest that stopped answering, \
                 or host work longer than the stall limit)",
                mem_s.read_u32(map::CTRL + ctrl::REQ),
                mem_s.read_u32(map::CTRL + ctrl::RESP)
            )
        },
    )?;

    Ok(PingPongResult::from_window(
        cfg.messages,
        tsc.ns(t1 - t0),
        c1 - c0,
        v1.saturating_sub(v0),
        sleeps,
    ))
}
