//! The shared memory layout: a header of four cache lines and L slots.

use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// Size of one line of the header [bytes]. Fixed (not the platform's
/// `CachePadded`) so that a guest can hard-code the offsets.
pub const CACHE_LINE: usize = 64;

/// A value alone on its cache line.
#[repr(C, align(64))]
#[derive(Debug, Default)]
pub struct Line<T>(pub T);

/// Where a sleeping party says it wants a kick.
///
/// The sleeper writes `wake_at`, then sets `need_kick` (SeqCst), then
/// re-checks the peer's index; the peer, after moving its index, clears
/// `need_kick` with a swap and kicks if its index has reached `wake_at`.
/// Only the party that turns `need_kick` from 1 to 0 acts on it, so each
/// registration gets at most one kick.
#[repr(C)]
#[derive(Debug, Default)]
pub struct WaitPoint {
    /// 1 while the owner sleeps (or is about to) and wants a kick.
    pub need_kick: AtomicU32,
    /// The peer's index at which the owner wants the kick.
    pub wake_at: AtomicU32,
}

/// `index` has reached `target` in free-running (wrapping) arithmetic.
#[inline]
pub fn reached(index: u32, target: u32) -> bool {
    index.wrapping_sub(target) < (1 << 31)
}

impl WaitPoint {
    /// Registers a wish to be kicked once the peer's index reaches `wake_at`.
    #[inline]
    pub fn register(&self, wake_at: u32) {
        self.wake_at.store(wake_at, Ordering::Relaxed);
        // Publishes `wake_at` with the flag; pairs with the SeqCst load in
        // `take_if_reached`, and with the owner's SeqCst fence before it
        // re-reads the peer's index (Dekker: one of the two sees the other).
        // A swap, not a store: the same `xchg` on x86, and loom, which
        // models SeqCst accesses as acquire/release only, otherwise lets
        // the peer read the flag of a registration cancelled just before
        // (a false lost wake-up it found once pauses registered and
        // cancelled after every publish).
        self.need_kick.swap(1, Ordering::SeqCst);
    }

    /// Withdraws a registration. Returns false if the peer already took it
    /// (a kick is on its way and the next wait will return at once).
    #[inline]
    pub fn cancel(&self) -> bool {
        // Races with the peer's swap in `take_if_reached`: exactly one wins.
        self.need_kick.swap(0, Ordering::SeqCst) == 1
    }

    /// The peer's side: with its index now at `index`, decides whether to
    /// kick. True at most once per registration.
    #[inline]
    pub fn take_if_reached(&self, index: u32) -> bool {
        // SeqCst: the second half of the Dekker pattern, after the caller's
        // index store and SeqCst fence.
        if self.need_kick.load(Ordering::SeqCst) == 0 {
            return false;
        }
        // Relaxed is enough: the SeqCst load above synchronized with the
        // SeqCst store in `register`, which came after this store.
        let target = self.wake_at.load(Ordering::Relaxed);
        reached(index, target) && self.need_kick.swap(0, Ordering::SeqCst) == 1
    }
}

/// The ring header, at the start of the shared region; the slots follow
/// it (`L` little-endian `u64`s at offset `size_of::<RingHeader>()`).
///
/// | offset | field | written by |
/// | --- | --- | --- |
/// | 0 | `tail`: messages published, free-running | producer |
/// | 64 | `consumer_wait`: `need_kick`, `wake_at` (a tail value) | consumer (the producer clears `need_kick`) |
/// | 128 | `head`: slots freed, free-running | consumer |
/// | 192 | `producer_wait`: `need_kick`, `wake_at` (a head value) | producer (the consumer clears `need_kick`) |
/// | 256 | slots | producer writes, consumer reads |
///
/// `tail` and `head` are 128 bytes apart: x86's adjacent-line prefetcher
/// moves 128-byte pairs of lines, so 64 bytes apart they could still
/// false-share. Why it is laid out this way: see docs/ring-benchmarks.md.
#[repr(C)]
#[derive(Debug, Default)]
pub struct RingHeader {
    /// Messages published so far (wrapping).
    pub tail: Line<AtomicU32>,
    /// The consumer's registration: kick me when `tail` reaches `wake_at`.
    pub consumer_wait: Line<WaitPoint>,
    /// Slots freed so far (wrapping).
    pub head: Line<AtomicU32>,
    /// The producer's registration: kick me when `head` reaches `wake_at`.
    pub producer_wait: Line<WaitPoint>,
}

/// Byte offsets of the header fields and the slots inside a ring region,
/// for a party that hard-codes the layout (the KVM guest, a fuzzer playing
/// the peer). Computed from [`RingHeader`], so they cannot drift from it;
/// a test pins the values the guest relies on.
pub mod offsets {
    use core::mem::{offset_of, size_of};

    use super::RingHeader;

    /// `tail` (u32, written by the producer).
    pub const TAIL: usize = offset_of!(RingHeader, tail.0);
    /// `consumer_wait.need_kick` (u32).
    pub const CONSUMER_NEED_KICK: usize = offset_of!(RingHeader, consumer_wait.0.need_kick);
    /// `consumer_wait.wake_at` (u32, a tail value).
    pub const CONSUMER_WAKE_AT: usize = offset_of!(RingHeader, consumer_wait.0.wake_at);
    /// `head` (u32, written by the consumer).
    pub const HEAD: usize = offset_of!(RingHeader, head.0);
    /// `producer_wait.need_kick` (u32).
    pub const PRODUCER_NEED_KICK: usize = offset_of!(RingHeader, producer_wait.0.need_kick);
    /// `producer_wait.wake_at` (u32, a head value).
    pub const PRODUCER_WAKE_AT: usize = offset_of!(RingHeader, producer_wait.0.wake_at);
    /// The first slot (`L` little-endian u64s follow the header).
    pub const SLOTS: usize = size_of::<RingHeader>();
    /// Every u32 header field a peer may write, in offset order.
    pub const FIELDS: [usize; 6] = [
        TAIL,
        CONSUMER_NEED_KICK,
        CONSUMER_WAKE_AT,
        HEAD,
        PRODUCER_NEED_KICK,
        PRODUCER_WAKE_AT,
    ];
}

/// The memory behind a ring: a header and its slots.
pub(crate) trait Memory: Send + Sync {
    fn header(&self) -> &RingHeader;
    fn slots(&self) -> &[AtomicU64];
}

/// A ring of loom atomics (model checking only; real rings use [`RawRing`]).
#[cfg(feature = "loom")]
pub(crate) struct Owned {
    pub(crate) header: RingHeader,
    pub(crate) slots: Box<[AtomicU64]>,
}

#[cfg(feature = "loom")]
impl Memory for Owned {
    fn header(&self) -> &RingHeader {
        &self.header
    }
    fn slots(&self) -> &[AtomicU64] {
        &self.slots
    }
}

/// A ring in a memory region the caller provides: shared memory between
/// processes, or guest memory of a VM.
#[cfg(not(feature = "loom"))]
pub struct RawRing {
    header: *const RingHeader,
    slots: *const AtomicU64,
    len: u32,
    _owner: Box<dyn Send + Sync>,
}

// SAFETY: the region is only accessed through atomics (header fields and
// slots), which may be shared between threads; `_owner` is Send + Sync.
#[cfg(not(feature = "loom"))]
unsafe impl Send for RawRing {}
// SAFETY: as for Send: every access is atomic.
#[cfg(not(feature = "loom"))]
unsafe impl Sync for RawRing {}

#[cfg(not(feature = "loom"))]
impl RawRing {
    /// Bytes a ring of `len` slots needs.
    pub fn region_size(len: u32) -> usize {
        std::mem::size_of::<RingHeader>() + len as usize * 8
    }

    /// Uses `region` as a ring of `len` slots. `owner` keeps the memory
    /// alive (an mmap, a `Vec`, guest memory) and is dropped with the ring.
    ///
    /// Returns `None` if the region is too small or not aligned to 64 bytes.
    ///
    /// # Safety
    ///
    /// `region` must point to `region_len` bytes that stay valid, and are
    /// only accessed atomically (by this process or another party such as a
    /// guest), for as long as `owner` lives. The bytes may hold anything:
    /// every bit pattern is a valid `AtomicU32`/`AtomicU64`, and indices
    /// read from them are validated before use.
    pub unsafe fn from_raw(
        region: *mut u8,
        region_len: usize,
        len: u32,
        owner: Box<dyn Send + Sync>,
    ) -> Option<RawRing> {
        if region.is_null()
            || !(region as usize).is_multiple_of(CACHE_LINE)
            || region_len < Self::region_size(len)
            || len == 0
        {
            return None;
        }
        Some(RawRing {
            header: region.cast::<RingHeader>(),
            // SAFETY: in bounds: region_len >= header size + 8 len (checked).
            slots: unsafe { region.add(std::mem::size_of::<RingHeader>()) }.cast::<AtomicU64>(),
            len,
            _owner: owner,
        })
    }

    /// A zeroed, 64-byte-aligned region of the right size on the heap, owned
    /// by the ring: the same contiguous layout as shared or guest memory,
    /// with the slots starting on a cache line.
    ///
    /// # Panics
    ///
    /// If `len` is 0.
    pub fn allocate(len: u32) -> RawRing {
        assert!(len >= 1, "a ring needs at least one slot");
        // Whole 128-byte blocks, 128-byte aligned: x86's adjacent-line
        // prefetcher moves 128-byte pairs of lines, so where the region starts
        // modulo 128 decides which lines travel together.
        let blocks = Self::region_size(len).div_ceil(2 * CACHE_LINE);
        let boxed: Box<[Block]> = (0..blocks).map(|_| Block([0u8; 2 * CACHE_LINE])).collect();
        let lines = blocks * 2;
        let region = HeapRegion(Box::into_raw(boxed));
        let ptr = region.0.cast::<u8>();
        // SAFETY: `ptr` is 128-byte aligned (Block is align(128)) and points to
        // `lines * 64 >= region_size(len)` zeroed bytes; `region` owns them
        // (through a raw pointer, so that moving it does not invalidate
        // `ptr`) and lives as long as the ring; only atomics touch them.
        unsafe { RawRing::from_raw(ptr, lines * CACHE_LINE, len, Box::new(region)) }
            .expect("aligned and large enough")
    }

    /// The ring's length L.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Always false: a ring has at least one slot.
    pub fn is_empty(&self) -> bool {
        false
    }
}

/// Heap memory owned through a raw pointer (a `Box` moved after a raw
/// pointer was taken from it would invalidate that pointer under Stacked
/// Borrows; Miri caught exactly this in an earlier test).
#[cfg(not(feature = "loom"))]
struct HeapRegion(*mut [Block]);

/// A 128-byte-aligned block of the heap region.
#[cfg(not(feature = "loom"))]
#[repr(C, align(128))]
struct Block([u8; 2 * CACHE_LINE]);

// SAFETY: plain memory, only accessed through the ring's atomics.
#[cfg(not(feature = "loom"))]
unsafe impl Send for HeapRegion {}
// SAFETY: as for Send.
#[cfg(not(feature = "loom"))]
unsafe impl Sync for HeapRegion {}

#[cfg(not(feature = "loom"))]
impl Drop for HeapRegion {
    fn drop(&mut self) {
        // SAFETY: the pointer came from Box::into_raw and is freed only here.
        drop(unsafe { Box::from_raw(self.0) });
    }
}

#[cfg(not(feature = "loom"))]
impl Memory for RawRing {
    fn header(&self) -> &RingHeader {
        // SAFETY: `from_raw` checked size and 64-byte alignment; the caller
        // of `from_raw` keeps the region valid while `_owner` lives, and any
        // bit pattern is a valid header of atomics.
        unsafe { &*self.header }
    }
    fn slots(&self) -> &[AtomicU64] {
        // SAFETY: as for the header: `len` slots of 8 bytes follow the
        // header inside the checked region, 8-byte aligned (header size is a
        // multiple of 64).
        unsafe { std::slice::from_raw_parts(self.slots, self.len as usize) }
    }
}

#[cfg(all(test, not(feature = "loom")))]
mod tests {
    use super::*;

    #[test]
    fn layout_is_the_documented_one() {
        assert_eq!(std::mem::size_of::<RingHeader>(), 256);
        let h = RingHeader::default();
        let base = std::ptr::addr_of!(h) as usize;
        assert_eq!(std::ptr::addr_of!(h.tail) as usize - base, 0);
        assert_eq!(std::ptr::addr_of!(h.consumer_wait) as usize - base, 64);
        assert_eq!(std::ptr::addr_of!(h.head) as usize - base, 128);
        assert_eq!(std::ptr::addr_of!(h.producer_wait) as usize - base, 192);
    }

    /// The values the KVM guest's code and the fuzz harness rely on.
    #[test]
    fn exported_offsets_are_pinned() {
        assert_eq!(offsets::TAIL, 0);
        assert_eq!(offsets::CONSUMER_NEED_KICK, 64);
        assert_eq!(offsets::CONSUMER_WAKE_AT, 68);
        assert_eq!(offsets::HEAD, 128);
        assert_eq!(offsets::PRODUCER_NEED_KICK, 192);
        assert_eq!(offsets::PRODUCER_WAKE_AT, 196);
        assert_eq!(offsets::SLOTS, 256);
        assert_eq!(offsets::FIELDS, [0, 64, 68, 128, 192, 196]);
        // Each fits the guest's u32 displacements.
        assert!(u32::try_from(offsets::SLOTS).is_ok());
    }

    #[test]
    fn reached_wraps() {
        assert!(reached(5, 5));
        assert!(reached(6, 5));
        assert!(!reached(4, 5));
        assert!(reached(2, u32::MAX - 1));
        assert!(!reached(u32::MAX - 1, 2));
    }

    #[test]
    fn a_registration_is_taken_once() {
        let w = WaitPoint::default();
        assert!(!w.take_if_reached(10));
        w.register(10);
        assert!(!w.take_if_reached(9));
        assert!(w.take_if_reached(10));
        assert!(!w.take_if_reached(11));
        assert!(!w.cancel(), "already taken");
        w.register(20);
        assert!(w.cancel());
        assert!(!w.take_if_reached(25));
    }
}
