//! Assembler helpers shared by the guest programs: the entry (user or
//! emulated mode), halting, kicking, busy work from the table, the end of
//! a program, and [`Builder`], which wraps a program's loop between its
//! entry and its interrupt handler. No program lives here.

use iced_x86::code_asm::{
    al, ax, dword_ptr, eax, ebx, ecx, edi, edx, esi, ptr, qword_ptr, rax, rcx, rdx, rsp,
    CodeAssembler, CodeLabel,
};

use super::map::{self, ctrl, port};
use super::{GuestMode, Misbehavior, Program};
use crate::TestbedError;

pub(super) type R = Result<(), TestbedError>;

pub(super) fn m(addr: u32) -> iced_x86::code_asm::AsmMemoryOperand {
    dword_ptr(addr)
}

pub(super) fn c(off: u32) -> iced_x86::code_asm::AsmMemoryOperand {
    dword_ptr(map::CTRL + off)
}

/// Kernel entry: stack, task register, then `iretq` to `user` in user
/// mode with IOPL 3 (interrupts off: the guest takes none).
pub(super) fn prologue(a: &mut CodeAssembler, user: CodeLabel) -> R {
    a.cli()?;
    a.mov(rsp, u64::from(map::STACK_TOP))?;
    a.mov(ax, 0x28u32)?;
    a.ltr(ax)?;
    a.lea(rax, ptr(user))?;
    a.push(0x1bi32)?; // user data
    a.push(map::USER_STACK_TOP as i32)?;
    a.push(0x3002i32)?; // IOPL 3
    a.push(0x23i32)?; // user code
    a.push(rax)?;
    a.iretq()?;
    Ok(())
}

/// Emulated mode's entry: real-mode segments and stack, the 8259 (vector
/// base 0x20, only IRQ 5 open), interrupts on.
pub(super) fn prologue_emulated(a: &mut CodeAssembler) -> R {
    a.cli()?;
    a.xor(ax, ax)?;
    a.mov(iced_x86::code_asm::ds, ax)?;
    a.mov(iced_x86::code_asm::es, ax)?;
    a.mov(iced_x86::code_asm::ss, ax)?;
    a.mov(iced_x86::code_asm::sp, map::STACK_TOP)?;
    for (p, v) in [
        (0x20u32, 0x11u32),
        (0x21, 0x20),
        (0x21, 0x04),
        (0x21, 0x01),
        (0x21, 0xdf),
    ] {
        a.mov(al, v)?;
        a.out(p, al)?;
    }
    a.sti()?;
    Ok(())
}

/// Emulated mode's IRQ 5 handler: count, EOI, return.
pub(super) fn irq_handler(a: &mut CodeAssembler, label: &mut CodeLabel) -> R {
    a.set_label(label)?;
    a.push(eax)?;
    a.inc(c(ctrl::IRQS))?;
    a.mov(al, 0x20u32)?;
    a.out(0x20u32, al)?;
    a.pop(eax)?;
    a.iret()?;
    Ok(())
}

/// Reads the interrupt count into ebx, before announcing that we will
/// halt: emulated mode halts only if no interrupt came since (no lost
/// wake-up); user mode does not need it (the doorbell keeps a wake-up).
pub(super) fn snapshot(a: &mut CodeAssembler) -> R {
    a.mov(ebx, c(ctrl::IRQS))?;
    Ok(())
}

/// Halts until woken. User mode: exits to the VMM, whose vCPU thread
/// sleeps until the doorbell. Emulated: `sti; hlt` inside KVM unless an
/// interrupt came since [`snapshot`] (the `sti` shadow makes the check and
/// the halt atomic).
pub(super) fn halt(a: &mut CodeAssembler, mode: GuestMode) -> R {
    match mode {
        GuestMode::User => a.out(u32::from(port::HALT), al)?,
        GuestMode::Emulated => {
            let mut skip = a.create_label();
            a.cli()?;
            a.cmp(c(ctrl::IRQS), ebx)?;
            a.jne(skip)?;
            a.sti()?;
            a.hlt()?;
            a.set_label(&mut skip)?;
            a.sti()?;
        }
    }
    Ok(())
}

pub(super) fn kick(a: &mut CodeAssembler, misbehavior: Misbehavior) -> R {
    if misbehavior != Misbehavior::NeverKick {
        a.out(u32::from(port::KICK), al)?;
    }
    a.inc(c(ctrl::KICKS))?;
    Ok(())
}

/// A kick timed by the guest's TSC (user mode): stamps its start at
/// `KICK_STAMP` (for the host's wake-up) and adds its length to
/// `KICK_TICKS`. Clobbers rax, rcx, rdx.
pub(super) fn timed_kick(a: &mut CodeAssembler, misbehavior: Misbehavior) -> R {
    tsc64(a)?;
    a.mov(qword_ptr(map::CTRL + ctrl::KICK_STAMP), rax)?;
    a.mov(rcx, rax)?;
    kick(a, misbehavior)?;
    tsc64(a)?;
    a.sub(rax, rcx)?;
    a.add(qword_ptr(map::CTRL + ctrl::KICK_TICKS), rax)?;
    Ok(())
}

/// rax = the whole TSC (64-bit mode). Clobbers rdx.
pub(super) fn tsc64(a: &mut CodeAssembler) -> R {
    a.rdtsc()?;
    a.shl(rdx, 32)?;
    a.or(rax, rdx)?;
    Ok(())
}

/// `rdtsc` busy loop for the table entry of message `esi`.
pub(super) fn busy(a: &mut CodeAssembler) -> R {
    let mut spin = a.create_label();
    a.mov(eax, esi)?;
    a.and(eax, (map::TABLE_LEN - 1) as i32)?;
    a.mov(ebx, dword_ptr(eax * 4 + map::TABLE))?;
    a.rdtsc()?;
    a.mov(ecx, eax)?;
    a.set_label(&mut spin)?;
    a.rdtsc()?;
    a.sub(eax, ecx)?;
    a.cmp(eax, ebx)?;
    a.jb(spin)?;
    Ok(())
}

/// The shift of a guest whose clock runs slow (`Misbehavior::SlowClock`,
/// user mode only), or `None`: its clock is its TSC.
pub(super) fn slow_clock(how: Misbehavior, mode: GuestMode) -> Option<u32> {
    match (how, mode) {
        (Misbehavior::SlowClock { shift }, GuestMode::User) => Some(shift.clamp(1, 63)),
        _ => None,
    }
}

/// Starts a slow clock (`slow`: [`slow_clock`]): its base is the TSC now.
/// Clobbers rax, rdx.
pub(super) fn clock_start(a: &mut CodeAssembler, slow: Option<u32>) -> R {
    if slow.is_some() {
        tsc64(a)?;
        a.mov(qword_ptr(map::CTRL + ctrl::CLOCK_BASE), rax)?;
    }
    Ok(())
}

/// The guest's clock into edx:eax: its TSC, or a slow clock's reading
/// (`slow`: [`slow_clock`]), TSC - ((TSC - base) >> shift). Clobbers rcx.
pub(super) fn clock(a: &mut CodeAssembler, slow: Option<u32>) -> R {
    let Some(shift) = slow else {
        a.rdtsc()?;
        return Ok(());
    };
    tsc64(a)?;
    a.mov(rcx, rax)?;
    a.sub(rcx, qword_ptr(map::CTRL + ctrl::CLOCK_BASE))?;
    a.shr(rcx, shift)?;
    a.sub(rax, rcx)?;
    a.mov(rdx, rax)?;
    a.shr(rdx, 32)?;
    Ok(())
}

/// `sync` ping answers (to relate the guest's clock to the host's; `slow`:
/// [`slow_clock`]): for each, wait for REQ to reach the next value of esi
/// (1-based, counted on from what esi holds), then write PONG_TSC = the
/// clock and RESP = esi. Clobbers eax, ecx, edx, edi.
pub(super) fn ping_answers(a: &mut CodeAssembler, sync: u32, slow: Option<u32>) -> R {
    let (mut lp, mut wait) = (a.create_label(), a.create_label());
    a.mov(edi, sync as i32)?;
    a.set_label(&mut lp)?;
    a.inc(esi)?;
    a.set_label(&mut wait)?;
    a.cmp(c(ctrl::REQ), esi)?;
    a.jne(wait)?;
    clock(a, slow)?;
    a.mov(c(ctrl::PONG_TSC), eax)?;
    a.mov(c(ctrl::PONG_TSC + 4), edx)?;
    a.mov(c(ctrl::RESP), esi)?;
    a.dec(edi)?;
    a.jne(lp)?;
    Ok(())
}

pub(super) fn done(a: &mut CodeAssembler) -> R {
    let mut forever = a.create_label();
    a.out(u32::from(port::DONE), al)?;
    a.set_label(&mut forever)?;
    a.pause()?;
    a.jmp(forever)?;
    Ok(())
}

/// A program under construction: the entry is emitted first (at
/// [`map::CODE`]), then the caller emits the message loop.
pub(super) struct Builder {
    pub(super) a: CodeAssembler,
    mode: GuestMode,
}

impl Builder {
    pub(super) fn new(mode: GuestMode) -> Result<Builder, TestbedError> {
        let mut a = match mode {
            GuestMode::User => {
                let mut a = CodeAssembler::new(64)?;
                let mut user = a.create_label();
                prologue(&mut a, user)?;
                a.set_label(&mut user)?;
                a
            }
            GuestMode::Emulated => {
                let mut a = CodeAssembler::new(16)?;
                prologue_emulated(&mut a)?;
                a
            }
        };
        a.xor(ebx, ebx)?;
        Ok(Builder { a, mode })
    }

    pub(super) fn finish(self) -> Result<Program, TestbedError> {
        let Builder { mut a, mode } = self;
        let mut h = a.create_label();
        if mode == GuestMode::Emulated {
            irq_handler(&mut a, &mut h)?;
        } else {
            a.set_label(&mut h)?;
            a.nop()?;
        }
        let r = a.assemble_options(
            map::CODE as u64,
            iced_x86::BlockEncoderOptions::RETURN_NEW_INSTRUCTION_OFFSETS,
        )?;
        let handler = r.label_ip(&h)?;
        let code = r.inner.code_buffer;
        if code.len() > map::CODE_MAX {
            return Err(TestbedError::Kvm("guest program too long".into()));
        }
        Ok(Program {
            code,
            mode,
            irq_handler: u16::try_from(handler)
                .map_err(|_| TestbedError::Kvm("guest handler out of reach".into()))?,
        })
    }
}
