//! The guest's memory map and its code, generated at run time with
//! iced-x86's code assembler (64-bit): no toolchain, no firmware, no guest
//! OS.
//!
//! The guest is a few kernel instructions and one user-mode loop. The
//! kernel part sets the stack and the task register and drops to user mode
//! (`iretq`, IOPL 3 and an all-open I/O bitmap so `out` is allowed). Why
//! user mode: on these machines KVM is PVM (`kvm_pvm`, no VMX), which
//! emulates a non-PVM guest's kernel mode one instruction at a time (about
//! 1.2 us each, measured) but runs its user mode natively.
//!
//! Notifications: guest -> host is an `out` to [`port::KICK`], an
//! ioeventfd (no exit to user space). Host -> guest: the guest halts by an
//! `out` to [`port::HALT`] (an exit to the VMM, as KVM's `KVM_EXIT_HLT`
//! without an in-kernel irqchip) and the vCPU thread sleeps on the VM's
//! doorbell eventfd until the host writes it. Not an irqfd interrupt: on
//! PVM an interrupt cannot be delivered to a non-PVM guest in user mode,
//! and `sti; hlt` in its kernel mode crashes it (both measured: triple
//! faults); see `docs/kvm.md`. The eventfd keeps a wake-up written before
//! the vCPU thread sleeps, so no wake-up is lost.
//!
//! Every program ends with an `out` to [`port::DONE`]. The ring protocol is
//! the one of `kicklab-ring`, instruction for instruction: register
//! need-kick and event index, full fence (`xchg`), re-check, then halt.
//!
//! Run parameters (message count, L, k, spin budget, which wait) are baked
//! into the code as immediates; per-message work comes from a table of TSC
//! tick counts the host fills ([`map::TABLE`]), so random costs work too.

use iced_x86::code_asm::{
    al, ax, dword_ptr, eax, ebp, ebx, ecx, edi, edx, esi, ptr, rax, rsp, CodeAssembler, CodeLabel,
};

use crate::TestbedError;

/// Guest-physical memory map. Everything a guest program touches lies below
/// 64 KiB, so the real-mode guest reaches it with all segments at 0; the
/// page tables above are the 64-bit guest's only.
pub mod map {
    /// Size of guest memory.
    pub const MEM_SIZE: usize = 0x1_4000;
    /// Global descriptor table: null, kernel code, kernel data, user code,
    /// user data, the TSS (two entries).
    pub const GDT: usize = 0x500;
    /// Task state segment (its RSP0 is the kernel stack).
    pub const TSS: usize = 0x980;
    /// Page tables: PML4, PDPT, PD; one 2 MiB identity page, user-accessible.
    pub const PML4: usize = 0x1_0000;
    /// Top of the user stack.
    pub const USER_STACK_TOP: u32 = 0x2800;

    /// Control block: host-written inputs, guest-written counters.
    pub const CTRL: u32 = 0x400;
    /// Code.
    pub const CODE: usize = 0x1000;
    /// Most code bytes.
    pub const CODE_MAX: usize = 0x1000;
    /// Top of the kernel stack.
    pub const STACK_TOP: u32 = 0x3000;
    /// Work table: TSC ticks of busy work, one u32 per message, cycled.
    pub const TABLE: u32 = 0x3000;
    /// Entries in the work table (a power of two).
    pub const TABLE_LEN: u32 = 2048;
    /// Calibration samples: two u64 TSC values per kick, then one per
    /// interrupt.
    pub const SAMPLES: u32 = 0x5000;
    /// Most calibration samples.
    pub const SAMPLES_MAX: u32 = 0x3000 / 24;
    /// The ring (`kicklab_ring::RingHeader` then the slots).
    pub const RING: u32 = 0x8000;
    /// Bytes for the ring.
    pub const RING_BYTES: usize = 0x8000;
    /// Longest ring that fits.
    #[allow(clippy::cast_possible_truncation)] // RING_BYTES is 32 KiB
    pub const MAX_LEN: u32 = ((RING_BYTES - kicklab_ring::offsets::SLOTS) / 8) as u32;

    // The regions do not overlap (checked at compile time).
    const _: () = {
        assert!(GDT + 7 * 8 <= TSS);
        assert!(TSS + 233 <= CODE);
        assert!(CODE + CODE_MAX <= 0x2000);
        assert!(0x2000 < USER_STACK_TOP && USER_STACK_TOP < STACK_TOP);
        assert!(TABLE + 4 * TABLE_LEN <= SAMPLES);
        assert!(SAMPLES + 24 * SAMPLES_MAX <= RING);
        assert!(RING as usize + RING_BYTES <= PML4);
        assert!(PML4 + 3 * 0x1000 <= MEM_SIZE);
        assert!(kicklab_ring::offsets::SLOTS + 8 * MAX_LEN as usize == RING_BYTES);
    };
}

/// Offsets of the control block's u32 fields (from [`map::CTRL`]).
pub mod ctrl {
    /// Kicks the guest sent.
    pub const KICKS: u32 = 0x40;
    /// Times the guest halted waiting for the host.
    pub const SLEEPS: u32 = 0x44;
    /// Wake-ups that found nothing to do.
    pub const SPURIOUS: u32 = 0x48;
    /// Registrations withdrawn because the re-check succeeded.
    pub const AVERTED: u32 = 0x4C;
    /// Messages the guest consumer never saw.
    pub const LOST: u32 = 0x50;
    /// Messages the guest consumer saw twice or out of order.
    pub const BAD: u32 = 0x54;
    /// Next sequence number the guest consumer expects.
    pub const NEXT: u32 = 0x58;
    /// Interrupts the guest handled (emulated mode).
    pub const IRQS: u32 = 0x5C;
    /// Guest TSC at the start of the window (u64).
    pub const T0: u32 = 0x60;
    /// Guest TSC at the end (u64).
    pub const T1: u32 = 0x68;
    /// Cached peer index.
    pub const CACHE: u32 = 0x70;
    /// Scratch: start of a spin.
    pub const SPIN_T0: u32 = 0x74;
    /// KICKS at the start of the window.
    pub const KICKS0: u32 = 0x78;
    /// SLEEPS at the start of the window.
    pub const SLEEPS0: u32 = 0x7C;
    /// Calibration / ping-pong: the host's request counter.
    pub const REQ: u32 = 0x80;
    /// Calibration / ping-pong: the guest's answer counter.
    pub const RESP: u32 = 0x84;
    /// Ping-pong: the guest asks for a wake-up before it idles (1) or not
    /// (0); the host clears it when it sends one.
    pub const WANT_IRQ: u32 = 0x88;
    /// Ping-pong: the host asks for a kick before it blocks (1) or not.
    pub const HOST_WANT: u32 = 0x8C;
    /// Calibration: the guest's TSC read when answering a ping.
    pub const PONG_TSC: u32 = 0x90;
}

/// The ring header's fields in guest memory (`kicklab_ring::offsets`).
pub mod ring {
    use super::map::RING;
    use kicklab_ring::offsets as o;

    /// Guest address of an offset into the ring region.
    #[allow(clippy::cast_possible_truncation)] // offsets are < 512 (pinned by a test)
    const fn at(off: usize) -> u32 {
        RING + off as u32
    }
    /// `tail`.
    pub const TAIL: u32 = at(o::TAIL);
    /// `consumer_wait.need_kick`.
    pub const CW_NEED: u32 = at(o::CONSUMER_NEED_KICK);
    /// `consumer_wait.wake_at`.
    pub const CW_WAKE: u32 = at(o::CONSUMER_WAKE_AT);
    /// `head`.
    pub const HEAD: u32 = at(o::HEAD);
    /// `producer_wait.need_kick`.
    pub const PW_NEED: u32 = at(o::PRODUCER_NEED_KICK);
    /// `producer_wait.wake_at`.
    pub const PW_WAKE: u32 = at(o::PRODUCER_WAKE_AT);
    /// The first slot.
    pub const SLOTS: u32 = at(o::SLOTS);
}

/// I/O ports the guest writes.
pub mod port {
    /// A kick: registered as an ioeventfd, so no exit to user space.
    pub const KICK: u16 = 0x10;
    /// The program is done (exit to user space).
    pub const DONE: u16 = 0x11;
    /// Idle with a timeout: "wake me on a notification or after AX
    /// microseconds" (exit to user space, Denali's idle-with-timeout).
    pub const IDLE_HINT: u16 = 0x12;
    /// Halt until the host writes the doorbell (exit to user space).
    pub const HALT: u16 = 0x14;
}

/// How the guest waits when it cannot go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestWait {
    /// Spin (never halts, never asks for a kick).
    Poll,
    /// Ask for a kick and halt at once.
    Halt,
    /// Spin this many TSC ticks, then as `Halt`.
    SpinThenHalt(u32),
}

/// Deliberately broken guests, for the tests that the host survives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Misbehavior {
    /// None: a correct guest.
    None,
    /// After `at` messages, writes an impossible index into the ring.
    GarbageIndex {
        /// Messages before.
        at: u32,
    },
    /// Never kicks the host (the host waits for ever unless it notices).
    NeverKick,
    /// After `at` messages, kicks in a tight loop without publishing.
    KickStorm {
        /// Messages before.
        at: u32,
    },
    /// After `at` messages, spins for ever, never exiting.
    Hang {
        /// Messages before.
        at: u32,
    },
    /// After `at` messages, executes a privileged instruction (`cli`) in
    /// user mode: the guest crashes (a triple fault, having no handler).
    Crash {
        /// Messages before.
        at: u32,
    },
    /// After `at` messages, writes to a port nobody handles.
    WrongPort {
        /// Messages before.
        at: u32,
    },
    /// After `at` messages, says it is done without finishing.
    StopEarly {
        /// Messages before.
        at: u32,
    },
}

/// How the guest runs on this KVM.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GuestMode {
    /// 64-bit, the message loop in user mode: native speed on PVM. Halts
    /// exit to the VMM; the host wakes it through the doorbell eventfd.
    #[default]
    User,
    /// 16-bit real mode with an 8259 and an IRQ 5 handler: the host wakes
    /// it with an irqfd interrupt, it halts with `sti; hlt` inside KVM (and
    /// KVM's halt polling and HLT-exit control apply). On PVM every guest
    /// instruction is emulated (about 1.2 us each), so busy work has that
    /// granularity and each message costs tens of microseconds.
    Emulated,
}

impl GuestMode {
    /// `user` or `emulated`.
    pub fn name(self) -> &'static str {
        match self {
            GuestMode::User => "user",
            GuestMode::Emulated => "emulated",
        }
    }
}

impl std::str::FromStr for GuestMode {
    type Err = String;
    fn from_str(s: &str) -> Result<GuestMode, String> {
        match s {
            "user" => Ok(GuestMode::User),
            "emulated" => Ok(GuestMode::Emulated),
            other => Err(format!(
                "unknown guest mode `{other}` (user: native loop, doorbell wake-ups; emulated: real mode, irqfd interrupts)"
            )),
        }
    }
}

/// Which side of the ring the guest is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestRole {
    /// The guest produces (transmit path): it writes sequence numbers.
    Producer,
    /// The guest consumes (receive path): it checks sequence numbers.
    Consumer,
}

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
}

/// Assembled code.
#[derive(Debug, Clone)]
pub struct Program {
    /// Machine code, to be placed at [`map::CODE`] (its entry point).
    pub code: Vec<u8>,
    /// How it runs.
    pub mode: GuestMode,
    /// Emulated mode: the IRQ 5 handler's address (for the vector table).
    pub irq_handler: u16,
}

type R = Result<(), TestbedError>;

fn m(addr: u32) -> iced_x86::code_asm::AsmMemoryOperand {
    dword_ptr(addr)
}

fn c(off: u32) -> iced_x86::code_asm::AsmMemoryOperand {
    dword_ptr(map::CTRL + off)
}

/// Kernel entry: stack, task register, then `iretq` to `user` in user
/// mode with IOPL 3 (interrupts off: the guest takes none).
fn prologue(a: &mut CodeAssembler, user: CodeLabel) -> R {
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
fn prologue_emulated(a: &mut CodeAssembler) -> R {
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
fn irq_handler(a: &mut CodeAssembler, label: &mut CodeLabel) -> R {
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
fn snapshot(a: &mut CodeAssembler) -> R {
    a.mov(ebx, c(ctrl::IRQS))?;
    Ok(())
}

/// Halts until woken. User mode: exits to the VMM, whose vCPU thread
/// sleeps until the doorbell. Emulated: `sti; hlt` inside KVM unless an
/// interrupt came since [`snapshot`] (the `sti` shadow makes the check and
/// the halt atomic).
fn halt(a: &mut CodeAssembler, mode: GuestMode) -> R {
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

fn kick(a: &mut CodeAssembler, misbehavior: Misbehavior) -> R {
    if misbehavior != Misbehavior::NeverKick {
        a.out(u32::from(port::KICK), al)?;
    }
    a.inc(c(ctrl::KICKS))?;
    Ok(())
}

/// `rdtsc` busy loop for the table entry of message `esi`.
fn busy(a: &mut CodeAssembler) -> R {
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
            GuestWait::Halt => {}
        }
        // Register, fence, re-check, halt: Producer/Consumer::prepare_sleep.
        a.set_label(&mut block)?;
        snapshot(a)?;
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

/// If the peer asked for a kick at an index we have now reached, take the
/// request and kick (`peer_wants_kick`): fence, load need, reached, xchg.
fn maybe_kick(a: &mut CodeAssembler, need: u32, wake: u32, misbehavior: Misbehavior) -> R {
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
    kick(a, misbehavior)?;
    a.set_label(&mut no)?;
    Ok(())
}

fn done(a: &mut CodeAssembler) -> R {
    let mut forever = a.create_label();
    a.out(u32::from(port::DONE), al)?;
    a.set_label(&mut forever)?;
    a.pause()?;
    a.jmp(forever)?;
    Ok(())
}

/// The misbehavior hook, placed after message `esi` is handled.
fn misbehave(a: &mut CodeAssembler, how: Misbehavior, producer: bool) -> R {
    let at = match how {
        Misbehavior::None | Misbehavior::NeverKick => return Ok(()),
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
        Misbehavior::None | Misbehavior::NeverKick => unreachable!(),
    }
    a.set_label(&mut fine)?;
    Ok(())
}

fn window_start(a: &mut CodeAssembler, warmup: u32) -> R {
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
    a.set_label(&mut skip)?;
    Ok(())
}

fn window_end(a: &mut CodeAssembler) -> R {
    a.rdtsc()?;
    a.mov(c(ctrl::T1), eax)?;
    a.mov(c(ctrl::T1 + 4), edx)?;
    Ok(())
}

/// A program under construction: the entry is emitted first (at
/// [`map::CODE`]), then the caller emits the message loop.
struct Builder {
    a: CodeAssembler,
    mode: GuestMode,
}

impl Builder {
    fn new(mode: GuestMode) -> Result<Builder, TestbedError> {
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

    fn finish(self) -> Result<Program, TestbedError> {
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
        a.xor(esi, esi)?; // messages handled
        a.xor(edi, edi)?; // byte offset of the next slot
        a.xor(ebp, ebp)?; // own index (tail or head)
        a.mov(c(ctrl::CACHE), 0)?;
        let producer = self.role == GuestRole::Producer;
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
        window_start(a, self.warmup)?;
        side.wait(a, self.wait, mode)?;
        if producer {
            busy(a)?;
            a.mov(dword_ptr(edi + ring::SLOTS), esi)?;
            a.mov(dword_ptr(edi + (ring::SLOTS + 4)), 0)?;
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
        }
        let mut nowrap = a.create_label();
        a.add(edi, 8)?;
        a.cmp(edi, (self.len * 8) as i32)?;
        a.jb(nowrap)?;
        a.xor(edi, edi)?;
        a.set_label(&mut nowrap)?;
        a.inc(ebp)?;
        if producer {
            a.mov(m(ring::TAIL), ebp)?; // publish (x86 stores are release)
            maybe_kick(a, ring::CW_NEED, ring::CW_WAKE, self.misbehavior)?;
        } else {
            a.mov(m(ring::HEAD), ebp)?; // free the slot
            maybe_kick(a, ring::PW_NEED, ring::PW_WAKE, self.misbehavior)?;
        }
        a.inc(esi)?;
        misbehave(a, self.misbehavior, producer)?;
        a.cmp(esi, self.total as i32)?;
        a.jb(main)?;
        window_end(a)?;
        if producer {
            // End of stream: fewer than k_P messages may wait for a kick.
            kick(a, self.misbehavior)?;
        }
        done(a)?;
        b.finish()
    }
}

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
    let ping_phase = |a: &mut CodeAssembler| -> R {
        let (mut lp, mut wait) = (a.create_label(), a.create_label());
        a.mov(edi, sync as i32)?;
        a.set_label(&mut lp)?;
        a.inc(esi)?;
        a.set_label(&mut wait)?;
        a.cmp(c(ctrl::REQ), esi)?;
        a.jne(wait)?;
        a.rdtsc()?;
        a.mov(c(ctrl::PONG_TSC), eax)?;
        a.mov(c(ctrl::PONG_TSC + 4), edx)?;
        a.mov(c(ctrl::RESP), esi)?;
        a.dec(edi)?;
        a.jne(lp)?;
        Ok(())
    };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_assemble_and_fit() {
        for mode in [GuestMode::User, GuestMode::Emulated] {
            for role in [GuestRole::Producer, GuestRole::Consumer] {
                for wait in [
                    GuestWait::Poll,
                    GuestWait::Halt,
                    GuestWait::SpinThenHalt(1000),
                ] {
                    let p = PairProgram {
                        role,
                        wait,
                        len: map::MAX_LEN,
                        k: 3,
                        total: 1000,
                        warmup: 100,
                        misbehavior: Misbehavior::KickStorm { at: 5 },
                        mode,
                    }
                    .assemble()
                    .unwrap();
                    assert!(p.code.len() < map::CODE_MAX);
                    assert_eq!(p.mode, mode);
                    if mode == GuestMode::Emulated {
                        let h = usize::from(p.irq_handler);
                        assert!(h > map::CODE && h < map::CODE + p.code.len());
                    }
                }
            }
            let p = calibration_program(mode, 10, 10, 1000).unwrap();
            assert!(p.code.len() < map::CODE_MAX);
            let p = pingpong_program(mode, 10, GuestIdle::HaltHint(50), 100).unwrap();
            assert!(p.code.len() < map::CODE_MAX);
        }
    }
}
