//! The pair program: the guest's half of a run, producing or consuming
//! over the ring in guest memory with the `kicklab-ring` wait protocol,
//! instruction for instruction, and the deliberate faults of [`Misbehavior`].

use iced_x86::code_asm::{
    al, dword_ptr, eax, ebp, ecx, edi, edx, esi, qword_ptr, r8, r8d, r9, rax, rcx, CodeAssembler,
    CodeLabel,
};

use super::asm::{
    busy, c, clock, clock_start, done, halt, kick, m, ping_answers, slow_clock, snapshot,
    timed_kick, tsc64, Builder, R,
};
use super::map::{self, ctrl, port, ring};
use super::{GuestFlush, GuestMode, GuestRole, GuestWait, Misbehavior, Program};
use crate::TestbedError;

/// A pair program: the guest's half of a run.
#[derive(Debug, Clone, Copy)]
pub struct PairProgram {
    /// Producer or consumer.
    pub role: GuestRole,
    /// How it waits.
    pub wait: GuestWait,
    /// L.
    pub len: u32,
    /// Its threshold: k_C when it produces (kick me once k_C slots are
    /// free), k_P when it consumes.
    pub k: u32,
    /// Messages in all (warm-up included).
    pub total: u32,
    /// Messages before the window.
    pub warmup: u32,
    /// A deliberate fault, for tests.
    pub misbehavior: Misbehavior,
    /// How the guest runs.
    pub mode: GuestMode,
    /// Send combining (a producer): messages per publish (1: each).
    pub batch: u32,
    /// Send combining: when a partial batch goes out as well.
    pub flush: GuestFlush,
    /// Latency stamps ([`map::STAMPS`], one u64 per slot; 64-bit guest
    /// only): a producer stamps each message with its TSC as it writes
    /// it, a consumer as it is done with it (after its work, before it
    /// frees the slot).
    pub stamps: bool,
    /// Ping answers before the message loop ([`SYNC`] or 0), relating the
    /// guest's TSC to the host's (the stamps are the guest's TSC).
    pub sync: u32,
    /// Runs until the host sets [`ctrl::STOP`] (checked after each
    /// message; `total` still bounds it). The host stops a guest waiting
    /// on an empty ring by setting the word, then handing it one more
    /// message.
    pub until_stopped: bool,
    /// After its loop, answers `sync` more pings (numbered on from the
    /// first `sync`) before it ends: the two clocks related at the end as
    /// well.
    pub end_sync: bool,
}

/// Ping exchanges a pair program answers before its loop when asked to
/// (`PairProgram::sync`).
pub const SYNC: u32 = 300;

/// The side-specific parts of a wait (see `kicklab_ring::wait`).
struct Side {
    /// The peer's index in the ring.
    peer: u32,
    /// Our wait point.
    need: u32,
    wake: u32,
    /// wake_at = own index + this.
    wake_offset: u32,
    producer: bool,
    len: u32,
}

impl Side {
    /// Jumps to `have` if there is something (space / messages) by the
    /// cached peer index. Clobbers eax.
    fn check(&self, a: &mut CodeAssembler, have: CodeLabel) -> R {
        if self.producer {
            // used = tail - head_cache; space if used < L
            a.mov(eax, ebp)?;
            a.sub(eax, c(ctrl::CACHE))?;
            a.cmp(eax, self.len as i32)?;
            a.jb(have)?;
        } else {
            // available = tail_cache - head
            a.mov(eax, c(ctrl::CACHE))?;
            a.sub(eax, ebp)?;
            a.jne(have)?;
        }
        Ok(())
    }

    /// Re-reads the peer's index into the cache (and edx).
    fn reload(&self, a: &mut CodeAssembler) -> R {
        a.mov(edx, m(self.peer))?;
        a.mov(c(ctrl::CACHE), edx)?;
        Ok(())
    }

    fn wait(&self, a: &mut CodeAssembler, how: GuestWait, mode: GuestMode) -> R {
        let mut have = a.create_label();
        let mut block = a.create_label();
        let mut sleep = a.create_label();
        self.check(a, have)?;
        self.reload(a)?;
        self.check(a, have)?;
        match how {
            GuestWait::Poll => {
                let mut lp = a.create_label();
                a.set_label(&mut lp)?;
                a.pause()?;
                self.reload(a)?;
                self.check(a, have)?;
                a.jmp(lp)?;
            }
            GuestWait::SpinThenHalt(ticks) => {
                let mut lp = a.create_label();
                a.rdtsc()?;
                a.mov(c(ctrl::SPIN_T0), eax)?;
                a.set_label(&mut lp)?;
                a.pause()?;
                self.reload(a)?;
                self.check(a, have)?;
                a.rdtsc()?;
                a.sub(eax, c(ctrl::SPIN_T0))?;
                a.cmp(eax, ticks as i32)?;
                a.jb(lp)?;
            }
            GuestWait::Delegated { .. } => {
                a.out(u32::from(port::WAIT), al)?;
                self.reload(a)?;
                self.check(a, have)?;
            }
            GuestWait::Halt => {}
        }
        // Register, fence, re-check, halt: Producer/Consumer::prepare_sleep.
        a.set_label(&mut block)?;
        snapshot(a)?;
        if mode == GuestMode::User {
            tsc64(a)?;
            a.mov(qword_ptr(map::CTRL + ctrl::SLEEP_STAMP), rax)?;
        }
        a.mov(eax, ebp)?;
        a.add(eax, self.wake_offset as i32)?;
        a.mov(m(self.wake), eax)?;
        a.mov(ecx, 1u32)?;
        a.xchg(m(self.need), ecx)?; // a SeqCst store and a full fence
        self.reload(a)?;
        a.sub(edx, eax)?;
        a.js(sleep)?; // peer index short of wake_at
        a.xor(ecx, ecx)?;
        a.xchg(m(self.need), ecx)?; // reached meanwhile: withdraw
        a.inc(c(ctrl::AVERTED))?;
        self.check(a, have)?;
        a.jmp(block)?;
        a.set_label(&mut sleep)?;
        a.inc(c(ctrl::SLEEPS))?;
        halt(a, mode)?;
        if mode == GuestMode::User {
            time_wake_up(a)?;
            tsc64(a)?;
            a.mov(rcx, qword_ptr(map::CTRL + ctrl::SLEEP_STAMP))?;
            record_span(a, false)?;
        }
        a.xor(ecx, ecx)?;
        a.xchg(m(self.need), ecx)?; // finish_sleep
        self.reload(a)?;
        self.check(a, have)?;
        a.inc(c(ctrl::SPURIOUS))?;
        a.jmp(block)?;
        a.set_label(&mut have)?;
        Ok(())
    }
}

/// After a halt (user mode): if the host kicked since this sleep began to
/// register, adds the time from the start of that kick to now to
/// WAKE_TICKS and counts it. Clobbers rax, rcx, rdx.
fn time_wake_up(a: &mut CodeAssembler) -> R {
    let mut skip = a.create_label();
    tsc64(a)?;
    a.mov(rcx, qword_ptr(map::CTRL + ctrl::HOST_STAMP))?;
    a.cmp(rcx, qword_ptr(map::CTRL + ctrl::SLEEP_STAMP))?;
    a.jbe(skip)?;
    a.cmp(rax, rcx)?;
    a.jbe(skip)?;
    a.sub(rax, rcx)?;
    a.add(qword_ptr(map::CTRL + ctrl::WAKE_TICKS), rax)?;
    a.inc(c(ctrl::WAKES))?;
    a.set_label(&mut skip)?;
    Ok(())
}

/// If the peer asked for a kick at an index we have now reached, take the
/// request and kick (`peer_wants_kick`): fence, load need, reached, xchg.
/// In user mode the kick is timed ([`timed_kick`]).
fn maybe_kick(
    a: &mut CodeAssembler,
    need: u32,
    wake: u32,
    misbehavior: Misbehavior,
    mode: GuestMode,
) -> R {
    let mut no = a.create_label();
    a.mfence()?;
    a.cmp(m(need), 0)?;
    a.je(no)?;
    a.mov(eax, ebp)?;
    a.sub(eax, m(wake))?;
    a.js(no)?;
    a.xor(ecx, ecx)?;
    a.xchg(m(need), ecx)?;
    a.cmp(ecx, 1)?;
    a.jne(no)?;
    any_kick(a, misbehavior, mode)?;
    a.set_label(&mut no)?;
    Ok(())
}

/// Send combining: publishes what the producer holds (its written index
/// ebp becomes `tail`) and kicks if the host asked; a guest that never
/// flushes ([`Misbehavior::NeverFlush`]) does nothing.
fn flush(a: &mut CodeAssembler, misbehavior: Misbehavior, mode: GuestMode) -> R {
    if misbehavior != Misbehavior::NeverFlush {
        a.mov(m(ring::TAIL), ebp)?; // publish (x86 stores are release)
        maybe_kick(a, ring::CW_NEED, ring::CW_WAKE, misbehavior, mode)?;
    }
    // One label per instruction: callers may place theirs next.
    a.nop()?;
    Ok(())
}

/// Send combining: flushes if anything is held (ebp ahead of `tail`).
fn flush_held(a: &mut CodeAssembler, misbehavior: Misbehavior, mode: GuestMode) -> R {
    let mut none = a.create_label();
    a.cmp(m(ring::TAIL), ebp)?;
    a.je(none)?;
    flush(a, misbehavior, mode)?;
    a.set_label(&mut none)?;
    a.nop()?;
    Ok(())
}

/// The misbehavior hook, placed after message `esi` is handled.
fn misbehave(a: &mut CodeAssembler, how: Misbehavior, producer: bool) -> R {
    let at = match how {
        Misbehavior::None
        | Misbehavior::NeverKick
        | Misbehavior::NeverFlush
        | Misbehavior::BadFlag { .. }
        | Misbehavior::SlowClock { .. } => return Ok(()),
        Misbehavior::GarbageIndex { at }
        | Misbehavior::KickStorm { at }
        | Misbehavior::Hang { at }
        | Misbehavior::Crash { at }
        | Misbehavior::WrongPort { at }
        | Misbehavior::StopEarly { at } => at,
    };
    let mut fine = a.create_label();
    let mut lp = a.create_label();
    a.cmp(esi, at as i32)?;
    a.jne(fine)?;
    match how {
        Misbehavior::GarbageIndex { .. } => {
            a.mov(eax, ebp)?;
            a.add(eax, 0x4000_0000)?;
            a.mov(m(if producer { ring::TAIL } else { ring::HEAD }), eax)?;
            a.set_label(&mut lp)?;
            a.pause()?;
            a.jmp(lp)?;
        }
        Misbehavior::KickStorm { .. } => {
            a.set_label(&mut lp)?;
            a.out(u32::from(port::KICK), al)?;
            a.jmp(lp)?;
        }
        Misbehavior::Hang { .. } => {
            a.set_label(&mut lp)?;
            a.jmp(lp)?;
        }
        Misbehavior::Crash { .. } => {
            a.cli()?;
        }
        Misbehavior::WrongPort { .. } => {
            a.out(0x99u32, al)?;
        }
        Misbehavior::StopEarly { .. } => done(a)?,
        Misbehavior::None
        | Misbehavior::NeverKick
        | Misbehavior::NeverFlush
        | Misbehavior::BadFlag { .. }
        | Misbehavior::SlowClock { .. } => unreachable!(),
    }
    a.set_label(&mut fine)?;
    Ok(())
}

/// The producer's pause check: exits to [`port::PAUSE`] if the ring now
/// holds PAUSE_AT or more (a fresh read of `head`). Clobbers eax.
fn pause_mark(a: &mut CodeAssembler) -> R {
    let mut skip = a.create_label();
    a.mov(eax, ebp)?;
    a.sub(eax, m(ring::HEAD))?;
    a.cmp(eax, c(ctrl::PAUSE_AT))?;
    a.jb(skip)?;
    a.out(u32::from(port::PAUSE), al)?;
    a.set_label(&mut skip)?;
    Ok(())
}

/// A kick, timed and recorded in user mode.
fn any_kick(a: &mut CodeAssembler, misbehavior: Misbehavior, mode: GuestMode) -> R {
    match mode {
        GuestMode::User => {
            timed_kick(a, misbehavior)?;
            // rcx: the kick's start; rax: its length.
            a.add(rax, rcx)?;
            record_span(a, true)
        }
        GuestMode::Emulated => kick(a, misbehavior),
    }
}

/// Adds the span from rcx to rax (TSC) to the record ([`map::RECORD`])
/// if the window has started and the host wants more. Clobbers r8, r9.
fn record_span(a: &mut CodeAssembler, kick: bool) -> R {
    let mut skip = a.create_label();
    a.mov(r8d, dword_ptr(map::RECORD + 4))?; // zero-extends into r8
    a.cmp(r8d, dword_ptr(map::RECORD))?;
    a.jae(skip)?;
    a.shl(r8, 4)?;
    a.mov(r9, rcx)?;
    if kick {
        a.bts(r9, 63)?;
    }
    a.mov(qword_ptr(r8 + map::RECORD_SPANS), r9)?;
    a.mov(qword_ptr(r8 + map::RECORD_SPANS + 8), rax)?;
    a.inc(dword_ptr(map::RECORD + 4))?;
    a.set_label(&mut skip)?;
    // One label per instruction: callers may place theirs next.
    a.nop()?;
    Ok(())
}

fn window_start(a: &mut CodeAssembler, warmup: u32, mode: GuestMode) -> R {
    let mut skip = a.create_label();
    a.cmp(esi, warmup as i32)?;
    a.jne(skip)?;
    a.rdtsc()?;
    a.mov(c(ctrl::T0), eax)?;
    a.mov(c(ctrl::T0 + 4), edx)?;
    a.mov(eax, c(ctrl::KICKS))?;
    a.mov(c(ctrl::KICKS0), eax)?;
    a.mov(eax, c(ctrl::SLEEPS))?;
    a.mov(c(ctrl::SLEEPS0), eax)?;
    if mode == GuestMode::User {
        for (from, to) in [
            (ctrl::KICK_TICKS, ctrl::KICK_TICKS0),
            (ctrl::WAKE_TICKS, ctrl::WAKE_TICKS0),
        ] {
            a.mov(rax, qword_ptr(map::CTRL + from))?;
            a.mov(qword_ptr(map::CTRL + to), rax)?;
        }
        a.mov(eax, c(ctrl::WAKES))?;
        a.mov(c(ctrl::WAKES0), eax)?;
        a.mov(dword_ptr(map::RECORD + 4), 0)?; // the record opens
    }
    a.set_label(&mut skip)?;
    Ok(())
}

fn window_end(a: &mut CodeAssembler) -> R {
    a.rdtsc()?;
    a.mov(c(ctrl::T1), eax)?;
    a.mov(c(ctrl::T1 + 4), edx)?;
    // The record closes: the end-of-stream kick is not the window's. (The
    // host reads the record against its own count, not this one.)
    a.mov(dword_ptr(map::RECORD), 0)?;
    Ok(())
}

impl PairProgram {
    /// Assembles the program.
    ///
    /// # Errors
    ///
    /// Only if the assembler rejects an instruction (a bug).
    pub fn assemble(&self) -> Result<Program, TestbedError> {
        let mut b = Builder::new(self.mode)?;
        let mode = self.mode;
        let a = &mut b.a;
        let mut main = a.create_label();
        let slow = slow_clock(self.misbehavior, mode);
        clock_start(a, slow)?;
        if self.sync > 0 {
            a.xor(esi, esi)?;
            ping_answers(a, self.sync, slow)?;
        }
        if mode == GuestMode::User {
            // The record stays shut until the window starts.
            a.mov(dword_ptr(map::RECORD + 4), -1)?;
        }
        a.xor(esi, esi)?; // messages handled
        a.xor(edi, edi)?; // byte offset of the next slot
        a.xor(ebp, ebp)?; // own index (tail or head; a producer's counts what it wrote)
        a.mov(c(ctrl::CACHE), 0)?;
        let producer = self.role == GuestRole::Producer;
        let delegated = matches!(self.wait, GuestWait::Delegated { .. });
        // Send combining: the producer holds what it writes (ebp runs
        // ahead of `tail`) and publishes by the rule.
        let combining = producer
            && (self.batch > 1
                || self.flush != GuestFlush::Full
                || self.misbehavior == Misbehavior::NeverFlush);
        let side = if producer {
            Side {
                peer: ring::HEAD,
                need: ring::PW_NEED,
                wake: ring::PW_WAKE,
                wake_offset: self.k.clamp(1, self.len).wrapping_sub(self.len),
                producer,
                len: self.len,
            }
        } else {
            Side {
                peer: ring::TAIL,
                need: ring::CW_NEED,
                wake: ring::CW_WAKE,
                wake_offset: self.k.clamp(1, self.len),
                producer,
                len: self.len,
            }
        };
        a.set_label(&mut main)?;
        window_start(a, self.warmup, mode)?;
        if combining {
            // A full ring must not hold unpublished messages while the
            // guest waits, or the host could never free a slot: flush if
            // there is no space (by the cached head, then the ring's).
            let mut space = a.create_label();
            side.check(a, space)?;
            side.reload(a)?;
            side.check(a, space)?;
            flush_held(a, self.misbehavior, self.mode)?;
            a.set_label(&mut space)?;
            if self.flush == GuestFlush::OnInterrupt {
                a.mov(eax, c(ctrl::SLEEPS))?;
                a.mov(c(ctrl::SLEEPS_SEEN), eax)?;
            }
        }
        side.wait(a, self.wait, mode)?;
        if combining && self.flush == GuestFlush::OnInterrupt {
            // Flush on interrupt: the wait halted and the host's wake-up
            // ended it. (It published before it waited, so in a one-way
            // pair nothing is held here: docs/model.md, "Send combining".)
            let mut no = a.create_label();
            a.mov(eax, c(ctrl::SLEEPS))?;
            a.cmp(eax, c(ctrl::SLEEPS_SEEN))?;
            a.je(no)?;
            flush_held(a, self.misbehavior, self.mode)?;
            a.set_label(&mut no)?;
        }
        if producer {
            busy(a)?;
            if delegated {
                // Its own work, as its VMM's estimate of it (eax: the ticks
                // the busy loop ran).
                a.add(c(ctrl::WORK_TICKS), eax)?;
            }
            a.mov(dword_ptr(edi + ring::SLOTS), esi)?;
            a.mov(dword_ptr(edi + (ring::SLOTS + 4)), 0)?;
            if self.stamps {
                clock(a, slow)?;
                a.mov(dword_ptr(edi + map::STAMPS), eax)?;
                a.mov(dword_ptr(edi + (map::STAMPS + 4)), edx)?;
            }
        } else {
            // Check the sequence number (its low 32 bits).
            let (mut eq, mut gt, mut checked) =
                (a.create_label(), a.create_label(), a.create_label());
            a.mov(eax, dword_ptr(edi + ring::SLOTS))?;
            a.cmp(eax, c(ctrl::NEXT))?;
            a.je(eq)?;
            a.ja(gt)?;
            a.inc(c(ctrl::BAD))?;
            a.jmp(checked)?;
            a.set_label(&mut gt)?;
            a.mov(ecx, eax)?;
            a.sub(ecx, c(ctrl::NEXT))?;
            a.add(c(ctrl::LOST), ecx)?;
            a.inc(eax)?;
            a.mov(c(ctrl::NEXT), eax)?;
            a.jmp(checked)?;
            a.set_label(&mut eq)?;
            a.inc(c(ctrl::NEXT))?;
            a.set_label(&mut checked)?;
            busy(a)?;
            if delegated {
                // Its own work, as its VMM's estimate of it (eax: the ticks
                // the busy loop ran).
                a.add(c(ctrl::WORK_TICKS), eax)?;
            }
            if self.stamps {
                // Done with it: the completion stamp, stored before the
                // slot is freed (x86 keeps the two stores in order).
                clock(a, slow)?;
                a.mov(dword_ptr(edi + map::STAMPS), eax)?;
                a.mov(dword_ptr(edi + (map::STAMPS + 4)), edx)?;
            }
        }
        let mut nowrap = a.create_label();
        a.add(edi, 8)?;
        a.cmp(edi, (self.len * 8) as i32)?;
        a.jb(nowrap)?;
        a.xor(edi, edi)?;
        a.set_label(&mut nowrap)?;
        a.inc(ebp)?;
        if combining {
            self.publish_by_rule(a)?;
        } else if producer {
            a.mov(m(ring::TAIL), ebp)?; // publish (x86 stores are release)
            maybe_kick(a, ring::CW_NEED, ring::CW_WAKE, self.misbehavior, mode)?;
            if self.wait == (GuestWait::Delegated { pauses: true }) {
                pause_mark(a)?;
            }
        } else {
            a.mov(m(ring::HEAD), ebp)?; // free the slot
            maybe_kick(a, ring::PW_NEED, ring::PW_WAKE, self.misbehavior, mode)?;
        }
        a.inc(esi)?;
        misbehave(a, self.misbehavior, producer)?;
        a.cmp(esi, self.total as i32)?;
        if self.until_stopped {
            let mut end = a.create_label();
            a.jae(end)?;
            a.cmp(c(ctrl::STOP), 0)?;
            a.je(main)?;
            a.set_label(&mut end)?;
        } else {
            a.jb(main)?;
        }
        if combining {
            // End of stream: publish the rest.
            flush_held(a, self.misbehavior, self.mode)?;
        }
        window_end(a)?;
        if producer {
            // End of stream: fewer than k_P messages may wait for a kick.
            any_kick(a, self.misbehavior, mode)?;
        }
        if self.end_sync && self.sync > 0 {
            a.mov(esi, self.sync as i32)?;
            ping_answers(a, self.sync, slow)?;
        }
        done(a)?;
        b.finish()
    }

    /// Send combining, after a write: publishes if `batch` messages are
    /// held or the oldest has been held for the timer; else holds (and,
    /// for the first message held, starts the timer).
    fn publish_by_rule(&self, a: &mut CodeAssembler) -> R {
        let (mut go, mut hold) = (a.create_label(), a.create_label());
        a.mov(eax, ebp)?;
        a.sub(eax, m(ring::TAIL))?; // held
        a.cmp(eax, self.batch as i32)?;
        a.jae(go)?;
        if let GuestFlush::Timer(ticks) = self.flush {
            let mut older = a.create_label();
            a.cmp(eax, 1)?;
            a.jne(older)?;
            a.rdtsc()?;
            a.mov(c(ctrl::FIRST_T), eax)?;
            a.jmp(hold)?;
            a.set_label(&mut older)?;
            a.rdtsc()?;
            a.sub(eax, c(ctrl::FIRST_T))?;
            a.cmp(eax, ticks as i32)?;
            a.jae(go)?;
        }
        a.jmp(hold)?;
        a.set_label(&mut go)?;
        flush(a, self.misbehavior, self.mode)?;
        a.set_label(&mut hold)?;
        Ok(())
    }
}
