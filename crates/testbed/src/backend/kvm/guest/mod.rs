//! The guest: its memory map ([`map`]) and its programs, generated at run time with
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
//!
//! What lives here: the shared types of the guest programs ([`GuestMode`],
//! [`GuestWait`], [`Misbehavior`], [`Program`]); the map in [`map`], the
//! assembler helpers in `asm`, one file per program (pair, calibration,
//! ping-pong). What does not: running the VM (the backend's `vm.rs`).

mod asm;
mod calibration;
mod flags;
pub mod map;
mod pair;
mod pingpong;
mod scale;

pub use calibration::calibration_program;
pub use flags::{FlagSignal, FlagsProgram};
pub use map::{ctrl, port, ring};
pub use pair::{PairProgram, SYNC};
pub use pingpong::{pingpong_program, GuestIdle};
pub use scale::{scale_program, ScaleGuestIdle, ScaleTicks};

/// How the guest waits when it cannot go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestWait {
    /// Spin (never halts, never asks for a kick).
    Poll,
    /// Ask for a kick and halt at once.
    Halt,
    /// Spin this many TSC ticks, then as `Halt`.
    SpinThenHalt(u32),
    /// Exit to [`port::WAIT`] and let the VMM wait by the strategy it runs
    /// for the guest (the VM's `GuestWaits`), then re-check, then as
    /// `Halt`; with `pauses`, a producer also exits to [`port::PAUSE`]
    /// after a publish that leaves [`ctrl::PAUSE_AT`] or more in the ring.
    Delegated {
        /// Whether the producer checks its pause mark.
        pauses: bool,
    },
}

/// When the guest producer publishes a partial batch (send combining;
/// besides before it waits and at the end, which every rule does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GuestFlush {
    /// Only when the batch is full.
    Full,
    /// Also once the first held message is this many TSC ticks old
    /// (checked after each write, on the low 32 bits of the TSC).
    Timer(u32),
    /// Also when a wait of the guest was ended by the host's wake-up.
    OnInterrupt,
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
    /// A producer that holds every message it writes and never publishes
    /// one (send combining that never flushes): it fills its side of the
    /// ring, then halts waiting for space that never comes.
    NeverFlush,
    /// The flags program: at signal `at`, flags a source that does not
    /// exist (the one after the last).
    BadFlag {
        /// Signals before.
        at: u32,
    },
    /// A guest whose clock runs slow against the host's (user mode; its
    /// program is otherwise correct): its stamps and its answers to the
    /// clock exchange read TSC - ((TSC - TSC at its start) >> `shift`), a
    /// drift of 2^-`shift`, as a guest TSC that KVM does not keep in step
    /// with the host's would.
    SlowClock {
        /// The drift is 2^-shift (10: 977 per million).
        shift: u32,
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
                    GuestWait::Delegated { pauses: true },
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
                        batch: 8,
                        flush: GuestFlush::Timer(5000),
                        stamps: mode == GuestMode::User,
                        sync: 300,
                        until_stopped: mode == GuestMode::User,
                        end_sync: mode == GuestMode::User,
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
        for idle in [ScaleGuestIdle::Spin, ScaleGuestIdle::Timeout] {
            let t = ScaleTicks {
                work: 1000,
                timer: 100_000,
                timer_work: 100,
                per_us: 2400,
            };
            let p = scale_program(idle, t).unwrap();
            assert!(p.code.len() < map::CODE_MAX);
        }
    }
}
