//! The two endpoints. Each keeps private copies of its own index and a
//! cached copy of the peer's, re-read only when the cache says full/empty
//! (rtrb's scheme).

use std::ptr::NonNull;
use std::sync::Arc;

#[cfg(feature = "loom")]
use crate::layout::Owned;
use crate::layout::{Memory, RingHeader, WaitPoint};
use crate::sync::{fence, AtomicU64, Ordering};
use crate::{Index, PopError, PushError, RingError};

/// Messages made visible by one [`Producer::publish`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "pass it to Producer::peer_wants_kick (or publish_and_check) to decide whether to notify"]
pub struct Published {
    /// `tail` before.
    pub from: u32,
    /// `tail` after.
    pub to: u32,
}

impl Published {
    /// How many messages.
    pub fn count(&self) -> u32 {
        self.to.wrapping_sub(self.from)
    }
}

/// Slots given back by one [`Consumer::release`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "pass it to Consumer::peer_wants_kick to decide whether to notify"]
pub struct Released {
    /// `head` before.
    pub from: u32,
    /// `head` after.
    pub to: u32,
}

impl Released {
    /// How many slots.
    pub fn count(&self) -> u32 {
        self.to.wrapping_sub(self.from)
    }
}

/// Builds the error out of the hot path.
#[cold]
#[inline(never)]
fn corrupt(what: Index, value: u32, len: u32) -> RingError {
    RingError::Corrupt { what, value, len }
}

/// The slot after `pos` in a ring of `len` slots: `pos + 1`, or 0 at `len`.
/// Requires `pos < len`; the result is then `< len` too.
///
/// The wrap is a branch marked with `std::hint::cold_path` (taken once in
/// `len` calls), deliberately not a `cmov` and not a call to a cold function.
/// Why it is written this way: see docs/ring-benchmarks.md.
#[inline(always)]
fn next_pos(pos: usize, len: u32) -> usize {
    let next = pos + 1;
    if next == len as usize {
        std::hint::cold_path();
        0
    } else {
        next
    }
}

/// A ring of `len` slots on the heap, as its two endpoints.
///
/// The memory is a zeroed [`crate::RawRing::allocate`] region (the same
/// layout as shared or guest memory); both indices start at 0 and it is
/// freed when both endpoints are dropped. Why it is `#[inline]`: see
/// docs/ring-benchmarks.md.
///
/// # Panics
///
/// If `len` is 0 or above 2^31.
#[inline]
pub fn ring(len: u32) -> (Producer, Consumer) {
    assert!(
        (1..=1 << 31).contains(&len),
        "ring length must be in 1..=2^31"
    );
    #[cfg(not(feature = "loom"))]
    let mem: Arc<dyn Memory> = Arc::new(crate::RawRing::allocate(len));
    // Loom needs its own atomics, built with `new`, not bytes of memory.
    #[cfg(feature = "loom")]
    let mem: Arc<dyn Memory> = Arc::new(Owned {
        header: RingHeader::default(),
        slots: (0..len).map(|_| AtomicU64::new(0)).collect(),
    });
    split(mem, len)
}

/// Endpoints over a caller-provided region ([`crate::RawRing`]). The
/// region's indices are taken as they are (a guest may have started the
/// ring); each side starts at the index it reads.
#[cfg(not(feature = "loom"))]
#[inline]
pub fn on_raw(raw: crate::RawRing) -> (Producer, Consumer) {
    let len = raw.len();
    split(Arc::new(raw), len)
}

#[inline]
fn split(mem: Arc<dyn Memory>, len: u32) -> (Producer, Consumer) {
    let h = mem.header();
    let tail = h.tail.0.load(Ordering::Relaxed);
    let head = h.head.0.load(Ordering::Relaxed);
    let start = |i: u32| (i % len) as usize;
    let view = View {
        header: NonNull::from(mem.header()),
        slots: NonNull::from(mem.slots()).cast(),
        mem: Arc::into_raw(mem),
    };
    (
        Producer {
            view: view.clone(),
            len,
            tail,
            written: 0,
            head_cache: head,
            pos: start(tail),
        },
        Consumer {
            view,
            len,
            head,
            claimed: 0,
            tail_cache: tail,
            pos: start(head),
        },
    )
}

/// An endpoint's access to the ring's memory: the header and the slots as
/// two plain pointers, resolved once (no `Arc<dyn Memory>` call per access).
///
/// It owns one strong count of the memory as a raw `Arc` pointer, taken in
/// `split` or `clone` and given back in an always-inlined `Drop`, so the
/// memory lives as long as either endpoint. Why it is written this way: see
/// docs/ring-benchmarks.md.
struct View {
    header: NonNull<RingHeader>,
    slots: NonNull<AtomicU64>,
    /// One strong count of the memory (`Arc::into_raw`), so it lives as
    /// long as either endpoint does.
    mem: *const dyn Memory,
}

impl Clone for View {
    fn clone(&self) -> View {
        // SAFETY: `mem` came from `Arc::into_raw` and this View still holds
        // its count, so the Arc is alive.
        unsafe { Arc::increment_strong_count(self.mem) };
        View {
            header: self.header,
            slots: self.slots,
            mem: self.mem,
        }
    }
}

impl Drop for View {
    // Always inlined, also on unwinding paths: an out-of-line drop takes
    // the endpoint's address there, which is enough for LLVM to keep all
    // of its fields in memory in the caller's loop.
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: gives back the count this View took (`into_raw` in
        // `split` or the increment in `clone`), exactly once.
        unsafe { Arc::decrement_strong_count(self.mem) };
    }
}

// SAFETY: the pointers point into `mem`, which is Send + Sync and lives as
// long as the View; every access through them is atomic.
unsafe impl Send for View {}
// SAFETY: as for Send.
unsafe impl Sync for View {}

impl View {
    #[inline(always)]
    fn header(&self) -> &RingHeader {
        // SAFETY: `header` came from `mem.header()`, which stays valid while
        // `mem` (counted by self) lives; the header is only accessed atomically.
        unsafe { self.header.as_ref() }
    }

    /// Slot `i`; `i < len` is the caller's invariant (positions wrap at len).
    #[inline(always)]
    fn slot(&self, i: usize, len: u32) -> &AtomicU64 {
        debug_assert!(i < len as usize);
        let _ = len;
        // SAFETY: `slots` came from `mem.slots()`, a slice of exactly `len`
        // atomics living as long as `mem`; `i < len` because positions only
        // advance modulo `len` (see `write` and `claim`).
        unsafe { self.slots.add(i).as_ref() }
    }
}

/// The writing end.
pub struct Producer {
    view: View,
    len: u32,
    /// Published count (our own index).
    tail: u32,
    /// Written but not yet published (send combining).
    written: u32,
    /// Last `head` read from shared memory.
    head_cache: u32,
    /// Slot of the next write.
    pos: usize,
}

/// The reading end.
pub struct Consumer {
    view: View,
    len: u32,
    /// Freed count (our own index).
    head: u32,
    /// Claimed (read) but not yet freed.
    claimed: u32,
    /// Last `tail` read from shared memory.
    tail_cache: u32,
    /// Slot of the next claim.
    pos: usize,
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("len", &self.len)
            .field("tail", &self.tail)
            .field("written", &self.written)
            .finish()
    }
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("len", &self.len)
            .field("head", &self.head)
            .field("claimed", &self.claimed)
            .finish()
    }
}

impl Producer {
    /// The ring's length L.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Always false (a ring has at least one slot).
    pub fn is_empty(&self) -> bool {
        false
    }

    #[inline(always)]
    fn header(&self) -> &RingHeader {
        self.view.header()
    }

    /// Published count so far (the shared `tail`, as this side knows it).
    pub fn tail(&self) -> u32 {
        self.tail
    }

    /// Own index (`tail`) and the messages published and not yet freed as
    /// last seen (from the cached `head`).
    pub(crate) fn seen_indices(&self) -> (u32, u32) {
        (self.tail, self.tail.wrapping_sub(self.head_cache))
    }

    fn free_cached(&self) -> u32 {
        self.len
            - self
                .tail
                .wrapping_add(self.written)
                .wrapping_sub(self.head_cache)
    }

    /// Re-reads the consumer's index into `head_cache`; on an impossible
    /// index, returns it and leaves the cache unchanged.
    ///
    /// The fast paths use this and build no [`RingError`] (that is
    /// [`corrupt`]'s job, out of line, for the slow paths). Why: see
    /// docs/ring-benchmarks.md.
    #[inline(always)]
    fn try_refresh_head(&mut self) -> Result<(), u32> {
        // Acquire: pairs with the consumer's Release store of `head`; the
        // consumer is done reading the slots it freed, so we may overwrite.
        let head = self.header().head.0.load(Ordering::Acquire);
        // Impossible: more in use than the ring holds (counting what we
        // wrote but did not publish), or a head that moved backwards (found
        // by the untrusted-peer property test: a peer that lowers `head`
        // after we filled the slots it had freed made `free` underflow).
        let used = self.tail.wrapping_add(self.written).wrapping_sub(head);
        if used > self.len || head.wrapping_sub(self.head_cache) >= 1 << 31 {
            return Err(head);
        }
        self.head_cache = head;
        Ok(())
    }

    #[inline]
    fn refresh_head(&mut self) -> Result<(), RingError> {
        self.try_refresh_head()
            .map_err(|head| corrupt(Index::Head, head, self.len))
    }

    /// Free slots (re-reading the consumer's index only if the cached copy
    /// says the ring is full).
    ///
    /// # Errors
    ///
    /// [`RingError::Corrupt`] if the consumer's index is impossible.
    pub fn free(&mut self) -> Result<u32, RingError> {
        if self.free_cached() == 0 {
            self.refresh_head()?;
        }
        Ok(self.free_cached())
    }

    /// Free slots, always re-reading the consumer's index.
    ///
    /// # Errors
    ///
    /// As [`Producer::free`].
    pub fn free_now(&mut self) -> Result<u32, RingError> {
        self.refresh_head()?;
        Ok(self.free_cached())
    }

    /// Writes `msg` into the next slot without publishing it; several writes
    /// are published together by [`Producer::publish`] (send combining).
    /// Returns `Ok(false)` if the ring is full.
    ///
    /// # Errors
    ///
    /// [`RingError::Corrupt`] if the consumer's index is impossible.
    pub fn write(&mut self, msg: u64) -> Result<bool, RingError> {
        if self.free()? == 0 {
            return Ok(false);
        }
        // Relaxed: made visible by the Release store of `tail` in `publish`.
        self.view
            .slot(self.pos, self.len)
            .store(msg, Ordering::Relaxed);
        self.pos = next_pos(self.pos, self.len);
        self.written += 1;
        Ok(true)
    }

    /// Writes and publishes one message (rtrb's `push`): the fast path when
    /// there is nothing to combine.
    ///
    /// # Errors
    ///
    /// [`PushError::Full`] if no slot is free; [`PushError::Corrupt`] if the
    /// consumer's index is impossible ([`Producer::free_now`] gives the
    /// details).
    #[inline]
    pub fn push(&mut self, msg: u64) -> Result<(), PushError> {
        debug_assert_eq!(self.written, 0, "push after unpublished writes");
        if self.tail.wrapping_sub(self.head_cache) == self.len {
            if self.try_refresh_head().is_err() {
                return Err(PushError::Corrupt(Index::Head));
            }
            if self.tail.wrapping_sub(self.head_cache) == self.len {
                return Err(PushError::Full);
            }
        }
        // Relaxed: published by the Release store of `tail` just below.
        self.view
            .slot(self.pos, self.len)
            .store(msg, Ordering::Relaxed);
        self.pos = next_pos(self.pos, self.len);
        self.tail = self.tail.wrapping_add(1);
        // Release: publishes the slot write; pairs with the consumer's
        // Acquire load of `tail`.
        self.header().tail.0.store(self.tail, Ordering::Release);
        Ok(())
    }

    /// Publishes everything written since the last publish with one store.
    pub fn publish(&mut self) -> Published {
        let from = self.tail;
        self.tail = self.tail.wrapping_add(self.written);
        self.written = 0;
        // Release: publishes the slot writes above; pairs with the
        // consumer's Acquire load of `tail`.
        self.header().tail.0.store(self.tail, Ordering::Release);
        Published {
            from,
            to: self.tail,
        }
    }

    /// After a publish: does the consumer want a kick? True at most once per
    /// consumer registration (the caller then notifies).
    pub fn peer_wants_kick(&self, p: Published) -> bool {
        // SeqCst fence: orders our `tail` store before the load of the
        // consumer's `need_kick` (Dekker with `Consumer::prepare_sleep`).
        fence(Ordering::SeqCst);
        self.header().consumer_wait.0.take_if_reached(p.to)
    }

    /// Before sleeping because the ring is full: asks for a kick once at
    /// least `k_c` slots are free, then re-checks. Returns true if the
    /// caller should block on its notifier, false if it should go on
    /// (enough slots freed meanwhile; or a kick is already on its way).
    ///
    /// # Errors
    ///
    /// [`RingError::Corrupt`] if the consumer's index is impossible.
    pub fn prepare_sleep(&mut self, k_c: u32) -> Result<bool, RingError> {
        // Slots written and not yet published stay taken however far the
        // consumer gets: asking for more than the rest would never be met.
        let k_c = k_c.min(self.len.saturating_sub(self.written)).max(1);
        let wake_at = self
            .tail
            .wrapping_add(self.written)
            .wrapping_sub(self.len)
            .wrapping_add(k_c);
        self.wait_point().register(wake_at);
        // SeqCst fence: the registration above before the re-read of `head`
        // below (pairs with the fence in `Consumer::peer_wants_kick`).
        fence(Ordering::SeqCst);
        self.refresh_head()?;
        if crate::reached(self.head_cache, wake_at) {
            // Freed meanwhile: withdraw (if the consumer took it first, its
            // kick is on the way; the next wait returns at once).
            self.wait_point().cancel();
            return Ok(false);
        }
        Ok(true)
    }

    /// Withdraws a registration after waking up (a no-op if the consumer
    /// already took it, as it does when it kicks).
    pub fn finish_sleep(&self) {
        self.wait_point().cancel();
    }

    fn wait_point(&self) -> &WaitPoint {
        &self.header().producer_wait.0
    }
}

impl Consumer {
    /// The ring's length L.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Always false (a ring has at least one slot).
    pub fn is_empty(&self) -> bool {
        false
    }

    #[inline(always)]
    fn header(&self) -> &RingHeader {
        self.view.header()
    }

    /// Freed count so far (the shared `head`).
    pub fn head(&self) -> u32 {
        self.head
    }

    /// Own index (`head`) and the messages published and not yet freed as
    /// last seen (from the cached `tail`; claimed ones count until freed).
    pub(crate) fn seen_indices(&self) -> (u32, u32) {
        (self.head, self.tail_cache.wrapping_sub(self.head))
    }

    fn available_cached(&self) -> u32 {
        self.tail_cache
            .wrapping_sub(self.head)
            .wrapping_sub(self.claimed)
    }

    /// Re-reads the producer's index into `tail_cache`; on an impossible
    /// index, returns it and leaves the cache unchanged (see
    /// `Producer::try_refresh_head` for why not a `RingError`).
    #[inline(always)]
    fn try_refresh_tail(&mut self) -> Result<(), u32> {
        // Acquire: pairs with the producer's Release store of `tail`, making
        // the slot writes before it visible.
        let tail = self.header().tail.0.load(Ordering::Acquire);
        if tail.wrapping_sub(self.head) > self.len || tail.wrapping_sub(self.tail_cache) >= 1 << 31
        {
            return Err(tail);
        }
        self.tail_cache = tail;
        Ok(())
    }

    #[inline]
    fn refresh_tail(&mut self) -> Result<(), RingError> {
        self.try_refresh_tail()
            .map_err(|tail| corrupt(Index::Tail, tail, self.len))
    }

    /// Published messages not yet claimed (re-reading the producer's index
    /// only if the cached copy says the ring is empty).
    ///
    /// # Errors
    ///
    /// [`RingError::Corrupt`] if the producer's index is impossible (more
    /// than L ahead of `head`, or moving backwards).
    pub fn available(&mut self) -> Result<u32, RingError> {
        if self.available_cached() == 0 {
            self.refresh_tail()?;
        }
        Ok(self.available_cached())
    }

    /// Available messages, always re-reading the producer's index.
    ///
    /// # Errors
    ///
    /// As [`Consumer::available`].
    pub fn available_now(&mut self) -> Result<u32, RingError> {
        self.refresh_tail()?;
        Ok(self.available_cached())
    }

    /// Claims the next message: reads it, keeping its slot until
    /// [`Consumer::release`]. `Ok(None)` if the ring is empty.
    ///
    /// # Errors
    ///
    /// As [`Consumer::available`].
    pub fn claim(&mut self) -> Result<Option<u64>, RingError> {
        if self.available()? == 0 {
            return Ok(None);
        }
        // Relaxed: the Acquire load of `tail` in `refresh_tail` made it visible.
        let msg = self.view.slot(self.pos, self.len).load(Ordering::Relaxed);
        self.pos = next_pos(self.pos, self.len);
        self.claimed += 1;
        Ok(Some(msg))
    }

    /// Claims and frees one message at once (rtrb's `pop`): the fast path
    /// when the message needs no slot while it is processed.
    ///
    /// # Errors
    ///
    /// [`PopError::Empty`] if nothing is published; [`PopError::Corrupt`] if
    /// the producer's index is impossible ([`Consumer::available_now`] gives
    /// the details).
    #[inline]
    pub fn pop(&mut self) -> Result<u64, PopError> {
        debug_assert_eq!(self.claimed, 0, "pop with claimed messages");
        if self.tail_cache == self.head {
            if self.try_refresh_tail().is_err() {
                return Err(PopError::Corrupt(Index::Tail));
            }
            if self.tail_cache == self.head {
                return Err(PopError::Empty);
            }
        }
        // Relaxed: the Acquire load of `tail` made the slot write visible.
        let msg = self.view.slot(self.pos, self.len).load(Ordering::Relaxed);
        self.pos = next_pos(self.pos, self.len);
        self.head = self.head.wrapping_add(1);
        // Release: our read of the slot happens before the producer may
        // overwrite it; pairs with its Acquire load of `head`.
        self.header().head.0.store(self.head, Ordering::Release);
        Ok(msg)
    }

    /// Frees the slots of every claimed message with one store.
    pub fn release(&mut self) -> Released {
        let from = self.head;
        self.head = self.head.wrapping_add(self.claimed);
        self.claimed = 0;
        // Release: our reads of the freed slots happen before the producer
        // may overwrite them; pairs with its Acquire load of `head`.
        self.header().head.0.store(self.head, Ordering::Release);
        Released {
            from,
            to: self.head,
        }
    }

    /// After a release: does the producer want a kick?
    pub fn peer_wants_kick(&self, r: Released) -> bool {
        // SeqCst fence: our `head` store before the load of the producer's
        // `need_kick` (Dekker with `Producer::prepare_sleep`).
        fence(Ordering::SeqCst);
        self.header().producer_wait.0.take_if_reached(r.to)
    }

    /// Before sleeping because the ring is empty: asks for a kick once at
    /// least `k_p` messages are available, then re-checks. True: block on
    /// the notifier; false: go on.
    ///
    /// # Errors
    ///
    /// [`RingError::Corrupt`] if the producer's index is impossible.
    pub fn prepare_sleep(&mut self, k_p: u32) -> Result<bool, RingError> {
        let wake_at = self
            .head
            .wrapping_add(self.claimed)
            .wrapping_add(k_p.clamp(1, self.len));
        self.wait_point().register(wake_at);
        // SeqCst fence: pairs with the fence in `Producer::peer_wants_kick`.
        fence(Ordering::SeqCst);
        self.refresh_tail()?;
        if crate::reached(self.tail_cache, wake_at) {
            self.wait_point().cancel();
            return Ok(false);
        }
        Ok(true)
    }

    /// Withdraws a registration after waking up.
    pub fn finish_sleep(&self) {
        self.wait_point().cancel();
    }

    fn wait_point(&self) -> &WaitPoint {
        &self.header().consumer_wait.0
    }
}

#[cfg(all(test, not(feature = "loom")))]
mod tests {
    use super::*;

    #[test]
    fn fills_drains_and_wraps_for_odd_lengths() {
        for len in [1u32, 2, 3, 5, 7] {
            let (mut p, mut c) = ring(len);
            let mut next_in = 0u64;
            let mut next_out = 0u64;
            for round in 0..10 {
                while p.write(next_in).unwrap() {
                    next_in += 1;
                }
                assert_eq!(p.free().unwrap(), 0);
                let pubd = p.publish();
                assert_eq!(pubd.count(), len, "round {round}");
                while let Some(m) = c.claim().unwrap() {
                    assert_eq!(m, next_out);
                    next_out += 1;
                }
                assert_eq!(c.release().count(), len);
            }
            assert_eq!(next_in, next_out);
        }
    }

    #[test]
    fn push_pop_fast_paths() {
        let (mut p, mut c) = ring(3);
        assert_eq!(c.pop(), Err(PopError::Empty));
        for i in 0..3 {
            assert_eq!(p.push(i), Ok(()));
        }
        assert_eq!(p.push(9), Err(PushError::Full));
        for round in 0..10u64 {
            let m = c.pop().unwrap();
            assert_eq!(m, round);
            assert_eq!(p.push(round + 3), Ok(()));
        }
        // A consumer index from nowhere is reported, not trusted.
        p.header().head.0.store(1000, Ordering::Relaxed);
        while p.push(0).is_ok() {}
        assert_eq!(p.push(0), Err(PushError::Corrupt(Index::Head)));
        c.header().tail.0.store(5000, Ordering::Relaxed);
        while c.pop().is_ok() {}
        assert_eq!(c.pop(), Err(PopError::Corrupt(Index::Tail)));
    }

    #[test]
    fn consumer_waits_for_publish() {
        let (mut p, mut c) = ring(4);
        assert!(p.write(1).unwrap());
        assert_eq!(c.available().unwrap(), 0, "written but not published");
        let _ = p.publish();
        assert_eq!(c.available().unwrap(), 1);
        assert_eq!(c.claim().unwrap(), Some(1));
        assert_eq!(p.free_now().unwrap(), 3, "claimed slot still held");
        let _ = c.release();
        assert_eq!(p.free_now().unwrap(), 4);
    }

    #[test]
    fn kicks_only_a_registered_peer_at_its_index() {
        let (mut p, mut c) = ring(8);
        // The consumer sleeps on an empty ring until 3 messages are there.
        assert!(c.prepare_sleep(3).unwrap());
        for i in 0..2 {
            assert!(p.write(i).unwrap());
            let pubd = p.publish();
            assert!(!p.peer_wants_kick(pubd), "below k_P");
        }
        assert!(p.write(2).unwrap());
        let pubd = p.publish();
        assert!(p.peer_wants_kick(pubd), "k_P reached");
        assert!(p.write(3).unwrap());
        let pubd = p.publish();
        assert!(!p.peer_wants_kick(pubd), "one kick per registration");
        c.finish_sleep();

        // The producer sleeps on a full ring until 2 slots are free.
        while p.write(9).unwrap() {}
        let _ = p.publish();
        assert!(p.prepare_sleep(2).unwrap());
        c.claim().unwrap();
        let r = c.release();
        assert!(!c.peer_wants_kick(r));
        c.claim().unwrap();
        let r = c.release();
        assert!(c.peer_wants_kick(r));
    }

    #[test]
    fn prepare_sleep_declines_when_the_condition_already_holds() {
        let (mut p, mut c) = ring(4);
        p.write(1).unwrap();
        let _ = p.publish();
        assert!(!c.prepare_sleep(1).unwrap());
        let pubd = {
            p.write(2).unwrap();
            p.publish()
        };
        assert!(!p.peer_wants_kick(pubd), "registration withdrawn");
    }

    /// The raw-region path (the ring's unsafe code) with two threads; run
    /// under Miri by CI.
    #[test]
    fn raw_region_between_two_threads() {
        let len = 5u32;
        let raw = crate::RawRing::allocate(len);
        let (mut p, mut c) = on_raw(raw);
        let n: u64 = if cfg!(miri) { 40 } else { 100_000 };
        let t = std::thread::spawn(move || {
            let mut i = 0;
            while i < n {
                if p.write(i).unwrap() {
                    i += 1;
                    let _ = p.publish();
                } else {
                    std::thread::yield_now();
                }
            }
        });
        let mut want = 0;
        while want < n {
            match c.claim().unwrap() {
                Some(m) => {
                    assert_eq!(m, want);
                    want += 1;
                    let _ = c.release();
                }
                None => std::thread::yield_now(),
            }
        }
        t.join().unwrap();
    }

    #[test]
    fn raw_region_rejects_bad_regions() {
        let mut v = vec![0u64; 64];
        let ptr = v.as_mut_ptr().cast::<u8>();
        let misaligned = ptr.wrapping_add(8);
        // SAFETY: the region is never accessed: from_raw refuses it first
        // (too small, or misaligned), and `v` outlives the calls.
        unsafe {
            assert!(
                crate::RawRing::from_raw(ptr, 16, 4, Box::new(())).is_none(),
                "too small"
            );
            if !(misaligned as usize).is_multiple_of(64) {
                assert!(
                    crate::RawRing::from_raw(misaligned, 400, 4, Box::new(())).is_none(),
                    "misaligned"
                );
            }
            assert!(
                crate::RawRing::from_raw(std::ptr::null_mut(), 4096, 4, Box::new(())).is_none(),
                "null"
            );
        }
    }

    #[test]
    fn corrupt_indices_are_errors_not_panics() {
        let (mut p, mut c) = ring(4);
        // A peer that claims to have published 100 messages into 4 slots.
        p.header().tail.0.store(100, Ordering::Relaxed);
        assert!(matches!(
            c.available(),
            Err(RingError::Corrupt {
                what: Index::Tail,
                value: 100,
                len: 4
            })
        ));
        // A peer that freed slots never published.
        p.header().tail.0.store(0, Ordering::Relaxed);
        c.header().head.0.store(7, Ordering::Relaxed);
        assert!(matches!(
            p.free_now(),
            Err(RingError::Corrupt {
                what: Index::Head,
                ..
            })
        ));
    }
}
