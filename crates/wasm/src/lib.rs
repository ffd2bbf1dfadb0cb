//! kicklab's model and simulator for the report's explorer, compiled to
//! WebAssembly (`wasm32-unknown-unknown`) by `kicklab-lab`'s build script
//! and inlined in the report page, so that the page computes with the same
//! code as the command line: no second implementation in JavaScript.
//!
//! The interface is a plain C ABI, so that no bindings generator is
//! needed: the page writes its request (UTF-8 `key=value` lines, the
//! command line's spelling: `wp=2.3us`, `kp=4`, `vp=` for unset) into the
//! buffer [`kl_input`] returns, calls [`kl_explore`] or [`kl_simulate`],
//! and reads the JSON answer (`kl_output`, its length returned). Bad input
//! comes back as `{"error": "W_P: ..."}`, never as a trap.
//!
//! What lives here: the request parsing and the answers
//! ([`explore`], [`simulate`], plain functions, tested natively). What does
//! not: the model, the simulator and the charts (their crates), the page
//! (`kicklab-lab`'s `explorer`).

use std::sync::{Mutex, MutexGuard, PoisonError};

mod explore;

pub use explore::{explore, simulate, Request};

/// The request, as the page wrote it.
static INPUT: Mutex<Vec<u8>> = Mutex::new(Vec::new());
/// The last answer.
static OUTPUT: Mutex<Vec<u8>> = Mutex::new(Vec::new());

fn lock(m: &Mutex<Vec<u8>>) -> MutexGuard<'_, Vec<u8>> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Makes room for a request of `len` bytes and returns where the page
/// writes it (valid until the next call of `kl_input`).
#[no_mangle]
pub extern "C" fn kl_input(len: usize) -> *mut u8 {
    let mut input = lock(&INPUT);
    input.clear();
    input.resize(len, 0);
    input.as_mut_ptr()
}

/// Where the last answer is (valid until the next `kl_explore` or
/// `kl_simulate`).
#[no_mangle]
pub extern "C" fn kl_output() -> *const u8 {
    lock(&OUTPUT).as_ptr()
}

fn answer(f: fn(&str) -> String) -> usize {
    let text = {
        let input = lock(&INPUT);
        f(&String::from_utf8_lossy(&input))
    };
    let mut out = lock(&OUTPUT);
    *out = text.into_bytes();
    out.len()
}

/// The model at the request's parameters, and its curves over the
/// request's range: [`explore`]. Returns the answer's length.
#[no_mangle]
pub extern "C" fn kl_explore() -> usize {
    answer(explore)
}

/// The simulator at the request's parameters: [`simulate`]. Returns the
/// answer's length.
#[no_mangle]
pub extern "C" fn kl_simulate() -> usize {
    answer(simulate)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The C ABI round trip the page makes: write the request, call, read.
    #[test]
    fn the_buffers_carry_request_and_answer() {
        let req = b"wp=2us\n";
        let p = kl_input(req.len());
        // SAFETY: `p` points at `req.len()` writable bytes owned by INPUT,
        // which nothing else touches during this test's calls.
        unsafe { std::ptr::copy_nonoverlapping(req.as_ptr(), p, req.len()) };
        let n = kl_explore();
        let out = kl_output();
        // SAFETY: `out` points at the `n` bytes of OUTPUT just written.
        let text = unsafe { std::slice::from_raw_parts(out, n) };
        let v: serde_json::Value = serde_json::from_slice(text).unwrap();
        assert_eq!(v["regime"], "FC");
        assert_eq!(v["T_ns"], 4400.0);
    }
}
