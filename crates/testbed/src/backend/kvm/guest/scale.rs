//! The scale program (Denali's idle-with-timeout at scale): a guest that
//! serves the requests the host gives it (REQ counts those given, RESP
//! those served) and runs a periodic timer, idling in between by spinning
//! or by telling the host "wake me on a request or at my timer".

use iced_x86::code_asm::{al, ax, eax, ebx, ecx, edx, esi, CodeAssembler};

use super::asm::{c, done, Builder, R};
use super::map::{ctrl, port};
use super::{GuestMode, Program};
use crate::TestbedError;

/// How the scale guest idles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScaleGuestIdle {
    /// Spin until a request comes or the timer is due (no
    /// idle-with-timeout: the guest stays runnable).
    Spin,
    /// Idle with a timeout: ask for a wake-up and exit to the VMM with
    /// "wake me on a request or in (the time to my timer)", through
    /// [`port::IDLE_HINT`].
    Timeout,
}

/// The scale program's costs, in TSC ticks.
#[derive(Debug, Clone, Copy)]
pub struct ScaleTicks {
    /// Work per request.
    pub work: u32,
    /// Timer period.
    pub timer: u32,
    /// Work when the timer fires.
    pub timer_work: u32,
    /// Ticks per microsecond (the hint counts microseconds).
    pub per_us: u32,
}

/// Spins `ticks` TSC ticks. Clobbers eax, ebx, edx.
fn spin(a: &mut CodeAssembler, ticks: u32) -> R {
    let mut lp = a.create_label();
    a.rdtsc()?;
    a.mov(ebx, eax)?;
    a.set_label(&mut lp)?;
    a.rdtsc()?;
    a.sub(eax, ebx)?;
    a.cmp(eax, ticks as i32)?;
    a.jb(lp)?;
    Ok(())
}

/// The scale program: until STOP, serve each request given (REQ ahead of
/// the served count esi): spin `work`, RESP = esi, kick the host if it
/// asked (HOST_WANT); run the timer when due (spin `timer_work`, the next
/// deadline a period on, or a period from now if it fell behind); else
/// idle per `idle`. Timer deadlines are the low 32 bits of the TSC,
/// compared by their signed difference.
///
/// # Errors
///
/// Only if the assembler rejects an instruction (a bug).
pub fn scale_program(idle: ScaleGuestIdle, t: ScaleTicks) -> Result<Program, TestbedError> {
    let mut b = Builder::new(GuestMode::User)?;
    let a = &mut b.a;
    let (mut main, mut no_req, mut idling, mut finish) = (
        a.create_label(),
        a.create_label(),
        a.create_label(),
        a.create_label(),
    );
    a.xor(esi, esi)?;
    a.rdtsc()?;
    a.add(eax, t.timer as i32)?;
    a.mov(c(ctrl::NEXT_T), eax)?;
    a.set_label(&mut main)?;
    a.cmp(c(ctrl::STOP), 0)?;
    a.jne(finish)?;
    a.cmp(c(ctrl::REQ), esi)?;
    a.je(no_req)?;
    // A request: serve it, answer, kick the host if it is waiting.
    spin(a, t.work)?;
    a.inc(esi)?;
    a.mov(c(ctrl::RESP), esi)?;
    a.xor(ecx, ecx)?;
    a.xchg(c(ctrl::HOST_WANT), ecx)?; // a full fence, then take the request
    a.cmp(ecx, 1)?;
    a.jne(main)?;
    a.out(u32::from(port::KICK), al)?;
    a.inc(c(ctrl::KICKS))?;
    a.jmp(main)?;
    // No request: the timer, if due.
    a.set_label(&mut no_req)?;
    a.rdtsc()?;
    a.sub(eax, c(ctrl::NEXT_T))?;
    a.js(idling)?;
    spin(a, t.timer_work)?;
    a.inc(c(ctrl::TIMERS))?;
    a.add(c(ctrl::NEXT_T), t.timer as i32)?;
    a.rdtsc()?;
    a.sub(eax, c(ctrl::NEXT_T))?;
    a.js(main)?;
    a.rdtsc()?; // fell behind: the next one a period from now
    a.add(eax, t.timer as i32)?;
    a.mov(c(ctrl::NEXT_T), eax)?;
    a.jmp(main)?;
    a.set_label(&mut idling)?;
    match idle {
        ScaleGuestIdle::Spin => {
            a.pause()?;
            a.jmp(main)?;
        }
        ScaleGuestIdle::Timeout => {
            let (mut awake, mut capped) = (a.create_label(), a.create_label());
            // Ask for a wake-up, then re-check (the host sets REQ, then
            // takes WANT_IRQ: one of the two sees the other).
            a.mov(ecx, 1u32)?;
            a.xchg(c(ctrl::WANT_IRQ), ecx)?;
            a.cmp(c(ctrl::REQ), esi)?;
            a.jne(awake)?;
            a.cmp(c(ctrl::STOP), 0)?;
            a.jne(awake)?;
            // Microseconds to the timer (none left: do not idle).
            a.rdtsc()?;
            a.mov(ecx, c(ctrl::NEXT_T))?;
            a.sub(ecx, eax)?;
            a.jle(awake)?;
            a.mov(eax, ecx)?;
            a.xor(edx, edx)?;
            a.mov(ecx, t.per_us.max(1))?;
            a.div(ecx)?;
            a.cmp(eax, 0xffff)?;
            a.jbe(capped)?;
            a.mov(eax, 0xffffu32)?;
            a.set_label(&mut capped)?;
            a.test(eax, eax)?;
            a.je(awake)?;
            a.inc(c(ctrl::SLEEPS))?;
            a.out(u32::from(port::IDLE_HINT), ax)?;
            a.set_label(&mut awake)?;
            a.xor(ecx, ecx)?;
            a.xchg(c(ctrl::WANT_IRQ), ecx)?;
            a.jmp(main)?;
        }
    }
    a.set_label(&mut finish)?;
    done(a)?;
    b.finish()
}
