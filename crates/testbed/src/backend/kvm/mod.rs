//! The KVM backend: one party of the ring runs inside a tiny guest of our
//! own (no QEMU, no guest OS), the other in a host thread.
//!
//! ```text
//!   host thread (one CPU)                guest memory                 vCPU thread (other CPU)
//!   kicklab-ring endpoint  <------>  RingHeader + slots (0x8000)  <--->  generated 16-bit code
//!   wait: read(kick eventfd) <------- ioeventfd on port 0x10 <--------  `out 0x10, al` (a kick)
//!   notify: write(doorbell) --------> vCPU thread's ppoll ----------->  `out 0x14` (halt) returns
//! ```
//!
//! What lives here: the VM and its vCPU thread ([`vm`]), the guest's memory
//! map and code ([`guest`]), one guest session (start, run the host side,
//! watchdog, stop, collect: `session`), the pair in both directions
//! ([`run_pair`], its host side the shared host party loop), calibration of
//! N and S across the VM boundary ([`calibrate()`]) and the
//! request/response workload with guest idle strategies ([`pingpong`]),
//! and the guest's waits by any strategy, run by its vCPU thread
//! (`waits`); idle-with-timeout at scale with many guests ([`scale`]),
//! notification flags set by a guest ([`flags`]), and a guest per VM
//! sharing one device (`qos`, behind `crate::qos`).
//! What does not: the ring protocol itself (`kicklab-ring`, which this
//! backend reuses unchanged over guest memory).

mod calibrate;
mod clocks;
pub mod flags;
pub mod guest;
mod pair;
pub mod pingpong;
pub(crate) mod qos;
pub mod scale;
mod session;
pub mod vm;
mod waits;

pub use calibrate::calibrate;
pub use pair::{check_pair, run_pair, run_pair_recorded, run_pair_with};
pub use vm::available;

pub use kicklab_model::Direction;

/// Options of a KVM run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KvmOptions {
    /// Which side the guest is.
    pub direction: Direction,
    /// Host halt polling [ns]: the vCPU thread of a halted guest polls
    /// this long before sleeping (0: it sleeps at once, as the model's
    /// sleeping party does).
    pub halt_poll_ns: u32,
    /// How the guest runs: a native user-mode loop woken through a
    /// doorbell (the default), or emulated real mode woken by irqfd
    /// interrupts.
    pub guest: guest::GuestMode,
}
