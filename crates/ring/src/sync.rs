//! The atomics and hints the ring uses, switched to loom's under `--cfg loom`
//! (crossbeam's `primitive` module, NeXosim's `loom_exports`). The ring
//! imports them only from here.

#[cfg(loom)]
pub use loom::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
#[cfg(not(loom))]
pub use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// One iteration of a spin loop: a pause on hardware, a yield under loom
/// (so that loom explores the peer's progress instead of spinning forever).
#[inline(always)]
pub fn spin_hint() {
    #[cfg(loom)]
    loom::thread::yield_now();
    #[cfg(not(loom))]
    std::hint::spin_loop();
}
