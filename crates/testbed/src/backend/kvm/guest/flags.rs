//! The flags program (VMware's shared-memory notification flags, issue
//! 17): the guest signals one source at a time, every `gap` TSC ticks,
//! the sources in turn by a stride coprime with their number, either
//!
//! - by setting the source's bit in a bit vector in its memory
//!   ([`map::FLAG_BITS`]) after bumping the source's count
//!   ([`map::FLAG_COUNTS`]), then kicking the host through the one kick
//!   ioeventfd only if the host asked for it ([`ctrl::HOST_WANT`]: the
//!   host sets it, fences and re-checks the vector before it sleeps, the
//!   guest's `lock bts` fences before it takes the request), or
//! - by writing the source's own port ([`map::FLAG_PORT`] + source), an
//!   ioeventfd each, which the host watches with `poll` or `epoll`.
//!
//! Each signal is timed by the guest's TSC, into `KICK_TICKS`; `KICKS`
//! counts the exits.

use iced_x86::code_asm::{al, dword_ptr, dx, eax, ebx, ecx, edi, edx, esi, qword_ptr, rax, rdi};

use super::asm::{c, done, tsc64, Builder};
use super::map::{self, ctrl, port};
use super::{GuestMode, Misbehavior, Program};
use crate::TestbedError;

/// How the guest signals a source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlagSignal {
    /// Bit vector and counts in its memory, one kick for all, when asked.
    Bitmap,
    /// The source's own port (an ioeventfd per source).
    Port,
}

/// A flags program.
#[derive(Debug, Clone, Copy)]
pub struct FlagsProgram {
    /// How it signals.
    pub signal: FlagSignal,
    /// Sources (1 to [`map::FLAG_SOURCES`]).
    pub sources: u32,
    /// Signals in all.
    pub signals: u32,
    /// TSC ticks between two signals.
    pub gap: u32,
    /// A deliberate fault: `NeverKick` (sets bits, never kicks) or
    /// `BadFlag` (flags a source that does not exist).
    pub misbehavior: Misbehavior,
}

impl FlagsProgram {
    /// Assembles the program.
    ///
    /// # Errors
    ///
    /// Sources out of range, or an instruction the assembler rejects (a
    /// bug).
    pub fn assemble(&self) -> Result<Program, TestbedError> {
        if self.sources == 0 || self.sources > map::FLAG_SOURCES {
            return Err(TestbedError::Kvm(format!(
                "1 to {} sources in the guest",
                map::FLAG_SOURCES
            )));
        }
        let mut b = Builder::new(GuestMode::User)?;
        let a = &mut b.a;
        let (mut main, mut wait, mut wrapped) =
            (a.create_label(), a.create_label(), a.create_label());
        let stride = 7919 % self.sources;
        a.xor(esi, esi)?; // signals sent
        a.xor(edi, edi)?; // the next source
        a.rdtsc()?;
        a.mov(ebx, eax)?; // the next signal's time (low 32 bits)
        a.set_label(&mut main)?;
        a.add(ebx, self.gap as i32)?;
        a.set_label(&mut wait)?;
        a.pause()?;
        a.rdtsc()?;
        a.sub(eax, ebx)?;
        a.js(wait)?;
        tsc64(a)?;
        a.mov(qword_ptr(map::CTRL + ctrl::KICK_STAMP), rax)?;
        // The source to signal: edi, or one that does not exist.
        a.mov(ecx, edi)?;
        if let Misbehavior::BadFlag { at } = self.misbehavior {
            let mut fine = a.create_label();
            a.cmp(esi, at as i32)?;
            a.jne(fine)?;
            a.mov(ecx, self.sources)?;
            a.set_label(&mut fine)?;
        }
        match self.signal {
            FlagSignal::Bitmap => {
                let mut no = a.create_label();
                #[allow(clippy::cast_possible_wrap)] // below 64 KiB
                a.lock().inc(dword_ptr(rdi * 4 + map::FLAG_COUNTS as i32))?;
                // A full fence: the count and the bit before the request.
                a.lock().bts(dword_ptr(map::FLAG_BITS), ecx)?;
                a.xor(ecx, ecx)?;
                a.xchg(c(ctrl::HOST_WANT), ecx)?;
                a.cmp(ecx, 1)?;
                a.jne(no)?;
                if self.misbehavior != Misbehavior::NeverKick {
                    a.out(u32::from(port::KICK), al)?;
                }
                a.inc(c(ctrl::KICKS))?;
                a.set_label(&mut no)?;
            }
            FlagSignal::Port => {
                a.lea(edx, dword_ptr(rdi + i32::from(map::FLAG_PORT)))?;
                a.out(dx, al)?;
                a.inc(c(ctrl::KICKS))?;
            }
        }
        tsc64(a)?;
        a.sub(rax, qword_ptr(map::CTRL + ctrl::KICK_STAMP))?;
        a.add(qword_ptr(map::CTRL + ctrl::KICK_TICKS), rax)?;
        a.add(edi, stride as i32)?;
        a.cmp(edi, self.sources as i32)?;
        a.jb(wrapped)?;
        a.sub(edi, self.sources as i32)?;
        a.set_label(&mut wrapped)?;
        a.inc(esi)?;
        a.cmp(esi, self.signals as i32)?;
        a.jb(main)?;
        done(a)?;
        b.finish()
    }
}
