//! The atomics and hints the ring uses, switched to loom's with the `loom` feature
//! (crossbeam's `primitive` module, NeXosim's `loom_exports`). The ring
//! imports them only from here.

#[cfg(feature = "loom")]
pub use loom::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
#[cfg(not(feature = "loom"))]
pub use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// One iteration of a spin loop: a pause on hardware, a yield under loom
/// (so that loom explores the peer's progress instead of spinning forever).
#[inline(always)]
pub fn spin_hint() {
    #[cfg(feature = "loom")]
    loom::thread::yield_now();
    #[cfg(not(feature = "loom"))]
    std::hint::spin_loop();
}
