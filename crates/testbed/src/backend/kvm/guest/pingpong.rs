//! The ping-pong program: the guest as the responder, idling between
//! requests per [`GuestIdle`].

use iced_x86::code_asm::{al, ax, eax, ecx, esi, CodeAssembler, CodeLabel};

use super::asm::{c, done, halt, snapshot, Builder, R};
use super::map::{ctrl, port};
use super::{GuestMode, Program};
use crate::TestbedError;

/// How the guest idles between ping-pong requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestIdle {
    /// Spin on the request counter (never halts).
    Poll,
    /// Ask for an interrupt and halt at once.
    Halt,
    /// Spin this many TSC ticks, then as `Halt` (haltpoll).
    PollThenHalt(u32),
    /// Ask for a wake-up and tell the host "idle until a message or this
    /// many microseconds" through an exit to user space.
    HaltHint(u16),
}

/// The ping-pong program: for `total` requests, wait for REQ = i (idling
/// per `idle`), spin `work_ticks`, write RESP = i and kick the host if it
/// asked for one (HOST_WANT).
///
/// # Errors
///
/// Only if the assembler rejects an instruction (a bug).
pub fn pingpong_program(
    mode: GuestMode,
    total: u32,
    idle: GuestIdle,
    work_ticks: u32,
) -> Result<Program, TestbedError> {
    let mut b = Builder::new(mode)?;
    let a = &mut b.a;
    let (mut main, mut have, mut block) = (a.create_label(), a.create_label(), a.create_label());
    a.xor(esi, esi)?;
    a.set_label(&mut main)?;
    a.inc(esi)?;
    // Is request esi there?
    let check = |a: &mut CodeAssembler, have: CodeLabel| -> R {
        a.cmp(c(ctrl::REQ), esi)?;
        a.je(have)?;
        Ok(())
    };
    check(a, have)?;
    match idle {
        GuestIdle::Poll => {
            let mut lp = a.create_label();
            a.set_label(&mut lp)?;
            a.pause()?;
            check(a, have)?;
            a.jmp(lp)?;
        }
        GuestIdle::PollThenHalt(ticks) => {
            let mut lp = a.create_label();
            a.rdtsc()?;
            a.mov(ecx, eax)?;
            a.set_label(&mut lp)?;
            a.pause()?;
            check(a, have)?;
            a.rdtsc()?;
            a.sub(eax, ecx)?;
            a.cmp(eax, ticks as i32)?;
            a.jb(lp)?;
        }
        GuestIdle::Halt | GuestIdle::HaltHint(_) => {}
    }
    a.set_label(&mut block)?;
    snapshot(a)?;
    a.mov(ecx, 1u32)?;
    a.xchg(c(ctrl::WANT_IRQ), ecx)?;
    {
        let mut sleep = a.create_label();
        a.cmp(c(ctrl::REQ), esi)?;
        a.jne(sleep)?;
        a.xor(ecx, ecx)?;
        a.xchg(c(ctrl::WANT_IRQ), ecx)?;
        a.jmp(have)?;
        a.set_label(&mut sleep)?;
        a.inc(c(ctrl::SLEEPS))?;
        if let GuestIdle::HaltHint(us) = idle {
            a.mov(ax, u32::from(us))?;
            a.out(u32::from(port::IDLE_HINT), ax)?;
        } else {
            halt(a, mode)?;
        }
        a.xor(ecx, ecx)?;
        a.xchg(c(ctrl::WANT_IRQ), ecx)?;
        check(a, have)?;
        a.jmp(block)?;
    }
    a.set_label(&mut have)?;
    if work_ticks > 0 {
        let mut spin = a.create_label();
        a.rdtsc()?;
        a.mov(ecx, eax)?;
        a.set_label(&mut spin)?;
        a.rdtsc()?;
        a.sub(eax, ecx)?;
        a.cmp(eax, work_ticks as i32)?;
        a.jb(spin)?;
    }
    a.mov(c(ctrl::RESP), esi)?;
    {
        let mut no = a.create_label();
        a.xor(ecx, ecx)?;
        a.xchg(c(ctrl::HOST_WANT), ecx)?; // a full fence, then take the request
        a.cmp(ecx, 1)?;
        a.jne(no)?;
        a.out(u32::from(port::KICK), al)?;
        a.inc(c(ctrl::KICKS))?;
        a.set_label(&mut no)?;
    }
    a.cmp(esi, total as i32)?;
    a.jb(main)?;
    done(a)?;
    b.finish()
}
