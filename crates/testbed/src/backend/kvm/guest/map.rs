//! The guest's memory map: where code, stacks, the control block, the work
//! table, calibration samples (or a pair's record of its kicks and halts)
//! and the ring lie in guest-physical memory;
//! the control block's fields ([`ctrl`]), the ring's fields ([`ring`]) and
//! the I/O ports ([`port`]). Only constants: no code lives here.
//!
//! Everything a guest program touches lies below
//! 64 KiB, so the real-mode guest reaches it with all segments at 0; the
//! page tables above, and the write stamps above them, are the 64-bit
//! guest's only.

/// Size of guest memory.
pub const MEM_SIZE: usize = 0x1_C000;
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
/// A pair program's record of the window's first kicks and halts (64-bit
/// guest only; the calibration samples' region, which a pair program does
/// not use): at `RECORD` the most spans the host wants (u32, host-written),
/// at `RECORD + 4` the spans written (u32, the guest's count, which it
/// holds at `u32::MAX` until its window starts), and from
/// [`RECORD_SPANS`] the spans, each two u64 TSC values (its start, with
/// [`RECORD_KICK`] set for a kick, and its end).
pub const RECORD: u32 = SAMPLES;
/// The first span of the record.
pub const RECORD_SPANS: u32 = RECORD + 16;
/// Most spans the record holds.
pub const RECORD_MAX: u32 = (0x3000 - 16) / 16;
/// The bit of a span's start that marks a kick (a halt's has it clear).
pub const RECORD_KICK: u64 = 1 << 63;
/// The ring (`kicklab_ring::RingHeader` then the slots).
pub const RING: u32 = 0x8000;
/// Bytes for the ring.
pub const RING_BYTES: usize = 0x8000;
/// Longest ring that fits.
#[allow(clippy::cast_possible_truncation)] // RING_BYTES is 32 KiB
pub const MAX_LEN: u32 = ((RING_BYTES - kicklab_ring::offsets::SLOTS) / 8) as u32;
/// Latency stamps (64-bit guest only): the guest's TSC when it wrote the
/// message in slot i (a producer) or was done with it (a consumer), a u64
/// at `STAMPS + 8 i`.
pub const STAMPS: u32 = 0x1_4000;

/// The flags program's bit vector, one bit per source (it uses the ring's
/// region, which it has no ring in).
pub const FLAG_BITS: u32 = RING;
/// The flags program's counts, a u32 per source.
pub const FLAG_COUNTS: u32 = RING + 0x80;
/// The most sources of the flags program (its bit vector holds twice as
/// many bits: a guest that flags a source past the last is caught).
pub const FLAG_SOURCES: u32 = 512;
/// The flags program's first source port (one port, and one ioeventfd,
/// per source; all below 0x400, the ports the guest's I/O bitmap opens).
pub const FLAG_PORT: u16 = 0x100;
/// Ports the guest's I/O bitmap opens to user mode: 0 to this, excluded.
pub const OPEN_PORTS: u32 = 0x400;

// The regions do not overlap (checked at compile time).
const _: () = {
    assert!(GDT + 7 * 8 <= TSS);
    assert!(TSS + 233 <= CODE);
    assert!(CODE + CODE_MAX <= 0x2000);
    assert!(0x2000 < USER_STACK_TOP && USER_STACK_TOP < STACK_TOP);
    assert!(TABLE + 4 * TABLE_LEN <= SAMPLES);
    assert!(SAMPLES + 24 * SAMPLES_MAX <= RING);
    assert!(RECORD_SPANS + 16 * RECORD_MAX <= RING);
    assert!(RING as usize + RING_BYTES <= PML4);
    assert!(PML4 + 3 * 0x1000 <= STAMPS as usize);
    assert!(STAMPS as usize + 8 * MAX_LEN as usize <= MEM_SIZE);
    assert!(kicklab_ring::offsets::SLOTS + 8 * MAX_LEN as usize == RING_BYTES);
    assert!(FLAG_COUNTS >= FLAG_BITS + 2 * FLAG_SOURCES / 8);
    assert!(FLAG_COUNTS as usize + 4 * 2 * FLAG_SOURCES as usize <= RING as usize + RING_BYTES);
    assert!(FLAG_PORT as u32 > 0xFF && FLAG_PORT as u32 + FLAG_SOURCES <= OPEN_PORTS);
};

/// Offsets of the control block's u32 fields (from [`CTRL`]).
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
    /// Send combining: the guest's TSC (low 32 bits) when it wrote the
    /// first message it holds (the hold timer's start).
    pub const FIRST_T: u32 = 0x98;
    /// Send combining: SLEEPS before a wait (a wait that halted was ended
    /// by the host's wake-up: flush on interrupt).
    pub const SLEEPS_SEEN: u32 = 0x9C;
    /// Scale, and a pair program run until stopped
    /// (`PairProgram::until_stopped`): the host asks the guest to finish
    /// (1).
    pub const STOP: u32 = 0xA0;
    /// Scale: the guest's next timer deadline (low 32 bits of its TSC).
    pub const NEXT_T: u32 = 0xA4;
    /// Scale: timer expiries the guest handled.
    pub const TIMERS: u32 = 0xA8;
    /// A guest whose waits its VMM runs (`GuestWait::Delegated`): the TSC
    /// ticks of its own work, summed (u32, wrapping), for the VMM's
    /// estimate of its work per message.
    pub const WORK_TICKS: u32 = 0xAC;
    /// A guest whose clock runs slow (`Misbehavior::SlowClock`): its TSC
    /// at its start (u64).
    pub const CLOCK_BASE: u32 = 0xB0;
    // The pair program's in-run timing (user mode), u64s, 8-aligned: the
    // guest's kicks and its wake-ups from the host's kicks, timed by its
    // TSC (`docs/kvm.md`, "Timing inside runs").
    /// Guest TSC at the start of the guest's last kick.
    pub const KICK_STAMP: u32 = 0xB8;
    /// TSC ticks spent in the guest's kicks, summed.
    pub const KICK_TICKS: u32 = 0xC0;
    /// KICK_TICKS at the start of the window.
    pub const KICK_TICKS0: u32 = 0xC8;
    /// The host's last kick start, written by the host in guest TSC.
    pub const HOST_STAMP: u32 = 0xD0;
    /// Guest TSC when the guest last began to register for a kick.
    pub const SLEEP_STAMP: u32 = 0xD8;
    /// Ticks from the host's kick to the guest running again, summed over
    /// the wake-ups timed.
    pub const WAKE_TICKS: u32 = 0xE0;
    /// WAKE_TICKS at the start of the window.
    pub const WAKE_TICKS0: u32 = 0xE8;
    /// Wake-ups timed (u32).
    pub const WAKES: u32 = 0xF0;
    /// WAKES at the start of the window (u32).
    pub const WAKES0: u32 = 0xF4;
    /// The occupancy from which a guest whose waits the VMM runs exits to
    /// [`super::port::PAUSE`] after a publish (u32; the VMM sets it,
    /// `u32::MAX`: never).
    pub const PAUSE_AT: u32 = 0xF8;
    /// The end of the control block (the GDT follows).
    pub const END: u32 = 0x100;
}

const _: () = assert!(CTRL + ctrl::END <= GDT as u32);

/// The ring header's fields in guest memory (`kicklab_ring::offsets`).
pub mod ring {
    use super::RING;
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
    /// "I cannot go on: wait for me by my strategy" (exit to user space;
    /// the VMM spins, naps or returns for the guest to block).
    pub const WAIT: u16 = 0x15;
    /// "The ring holds my pause mark: pause me if my strategy says so"
    /// (exit to user space).
    pub const PAUSE: u16 = 0x16;
}
