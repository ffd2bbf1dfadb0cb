//! The calibration program: ping exchanges that relate the guest's TSC
//! to the host's, then timed kicks and timed wake-ups.

use iced_x86::code_asm::{al, dword_ptr, eax, ebp, ecx, edi, edx, esi, CodeAssembler};

use super::asm::{c, done, halt, ping_answers, snapshot, Builder};
use super::map::{self, ctrl, port};
use super::{GuestMode, Program};
use crate::TestbedError;

/// The calibration program: answers the host's pings (TSC exchange, to
/// relate guest and host clocks), then measures both notification paths.
///
/// Phase 1, `sync` rounds: wait for REQ = i, write PONG_TSC = rdtsc and
/// RESP = i. Phase 2, `samples` kicks: wait for REQ = i (the host is about
/// to block on the kick eventfd), spin `gap_ticks`, then read the TSC,
/// kick, read the TSC, store both at SAMPLES[i]. Phase 3, `samples`
/// interrupts: set RESP = i with interrupts off, `sti; hlt`; once woken,
/// store the TSC at SAMPLES[samples + i]. Phase 4: `sync` more pings.
///
/// # Errors
///
/// Only if the assembler rejects an instruction (a bug).
pub fn calibration_program(
    mode: GuestMode,
    sync: u32,
    samples: u32,
    gap_ticks: u32,
) -> Result<Program, TestbedError> {
    let mut b = Builder::new(mode)?;
    let a = &mut b.a;
    // esi: counter of REQ values seen (1-based across the whole program).
    a.xor(esi, esi)?;
    let ping_phase = |a: &mut CodeAssembler| ping_answers(a, sync, None);
    ping_phase(a)?;
    // Phase 2: guest -> host kicks. ebp: sample address.
    {
        let (mut lp, mut wait, mut gap) = (a.create_label(), a.create_label(), a.create_label());
        a.mov(ebp, map::SAMPLES)?;
        a.mov(edi, samples as i32)?;
        a.set_label(&mut lp)?;
        a.inc(esi)?;
        a.set_label(&mut wait)?;
        a.cmp(c(ctrl::REQ), esi)?;
        a.jne(wait)?;
        a.rdtsc()?;
        a.mov(ecx, eax)?;
        a.set_label(&mut gap)?;
        a.rdtsc()?;
        a.sub(eax, ecx)?;
        a.cmp(eax, gap_ticks as i32)?;
        a.jb(gap)?;
        a.rdtsc()?;
        a.mov(dword_ptr(ebp), eax)?;
        a.mov(dword_ptr(ebp + 4), edx)?;
        a.out(u32::from(port::KICK), al)?;
        a.rdtsc()?;
        a.mov(dword_ptr(ebp + 8), eax)?;
        a.mov(dword_ptr(ebp + 12), edx)?;
        a.mov(c(ctrl::RESP), esi)?;
        a.add(ebp, 16)?;
        a.dec(edi)?;
        a.jne(lp)?;
    }
    // Phase 3: host -> guest interrupts.
    {
        let (mut lp, mut again) = (a.create_label(), a.create_label());
        a.mov(edi, samples as i32)?;
        a.set_label(&mut lp)?;
        a.inc(esi)?;
        snapshot(a)?;
        a.mov(c(ctrl::RESP), esi)?; // "I am about to halt"
        a.set_label(&mut again)?;
        halt(a, mode)?;
        a.mov(eax, c(ctrl::REQ))?; // not this sample's wake-up yet: halt again
        a.sub(eax, esi)?;
        a.js(again)?;
        a.rdtsc()?;
        a.mov(dword_ptr(ebp), eax)?;
        a.mov(dword_ptr(ebp + 4), edx)?;
        a.add(ebp, 8)?;
        a.dec(edi)?;
        a.jne(lp)?;
    }
    ping_phase(a)?;
    done(a)?;
    b.finish()
}
