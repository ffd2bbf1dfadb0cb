//! Drives the host's endpoints over memory an untrusted peer (a guest)
//! controls: a script of endpoint calls interleaved with arbitrary writes
//! to the shared header and slots. Used by the cargo-fuzz target
//! (`fuzz/fuzz_targets/guest_ring.rs`) and by a property test, so the
//! same check runs in CI without the fuzzer.
//!
//! The property: whatever the peer writes, no call panics or touches
//! memory outside the region, and every count the endpoints report is at
//! most L.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use crate::{on_raw, RawRing, RingHeader};

/// Header fields a peer can scribble on, as u32 offsets.
const FIELDS: [usize; 6] = crate::offsets::FIELDS;

/// Runs the script in `data` (any bytes). Panics only on a broken
/// property.
pub fn drive(data: &[u8]) {
    let Some((&l, script)) = data.split_first() else {
        return;
    };
    let len = u32::from(l % 64) + 1;
    let size = RawRing::region_size(len);
    // The region in 128-byte blocks (the ring wants 64-byte alignment).
    let mut blocks: Vec<u128> = vec![0; size.div_ceil(16) + 8];
    let base = blocks.as_mut_ptr().cast::<u8>();
    let aligned = base.wrapping_add(base.align_offset(64));
    // SAFETY: `aligned` is inside `blocks` with at least `size` bytes after
    // it (8 spare u128 cover the alignment), 64-byte aligned; `blocks`
    // outlives the endpoints (dropped at the end of this function, after
    // them); all access below goes through atomics.
    let raw = unsafe { RawRing::from_raw(aligned, size, len, Box::new(())) }
        .expect("aligned and large enough");
    let (mut p, mut c) = on_raw(raw);
    let header = aligned.cast::<RingHeader>();
    // The peer's writes: atomics over the same bytes.
    let field = |i: usize| {
        // SAFETY: FIELDS are 4-aligned offsets inside the header.
        unsafe { AtomicU32::from_ptr(aligned.add(FIELDS[i % FIELDS.len()]).cast()) }
    };
    let slot = |i: usize| {
        // SAFETY: i < len, so inside the slots after the header; 8-aligned.
        unsafe {
            AtomicU64::from_ptr(
                aligned
                    .add(crate::offsets::SLOTS + 8 * (i % len as usize))
                    .cast(),
            )
        }
    };
    let _ = header;
    // The host keeps the API's own contract (no pop between claim and
    // release, no push between write and publish); only the peer cheats.
    let (mut claimed, mut written) = (false, false);
    let mut bytes = script.iter().copied();
    let mut next = || bytes.next();
    while let Some(op) = next() {
        let arg = u32::from(next().unwrap_or(0));
        match op % 12 {
            0 => {
                // The peer writes a header field: a small step or garbage.
                let f = field(arg as usize);
                let v = match next().unwrap_or(0) {
                    0..=127 => f.load(Ordering::Relaxed).wrapping_add(arg % 4),
                    b => u32::from(b).wrapping_mul(0x0101_0101).rotate_left(arg),
                };
                f.store(v, Ordering::SeqCst);
            }
            1 => slot(arg as usize).store(u64::from(arg) * 0x9e37_79b9, Ordering::Relaxed),
            2 => {
                if let Ok(n) = c.available() {
                    assert!(n <= len, "available {n} > L {len}");
                }
            }
            3 => {
                claimed |= matches!(c.claim(), Ok(Some(_)));
            }
            4 => {
                let r = c.release();
                claimed = false;
                let _ = c.peer_wants_kick(r);
            }
            5 => {
                if let Ok(n) = p.free() {
                    assert!(n <= len, "free {n} > L {len}");
                }
            }
            6 => {
                written |= matches!(p.write(u64::from(arg)), Ok(true));
            }
            7 => {
                let r = p.publish();
                written = false;
                let _ = p.peer_wants_kick(r);
            }
            8 if c.prepare_sleep(arg).is_ok() => c.finish_sleep(),
            9 if p.prepare_sleep(arg).is_ok() => p.finish_sleep(),
            10 if !claimed => {
                let _ = c.pop();
            }
            11 if !written => {
                let _ = p.push(u64::from(arg));
            }
            _ => {}
        }
    }
    drop((p, c));
    drop(blocks);
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_few_scripts() {
        super::drive(&[]);
        super::drive(&[3, 0, 0, 200, 2, 0, 3, 0, 10, 0]);
        super::drive(&[0, 0, 3, 255, 11, 1, 11, 2, 10, 0, 5, 0]);
    }
}
