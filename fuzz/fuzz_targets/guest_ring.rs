//! The host's ring endpoints over guest-controlled memory: arbitrary header
//! and slot contents, written between arbitrary endpoint calls, must never
//! panic or reach outside the region (`kicklab_ring::untrusted::drive`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kicklab_ring::untrusted::drive(data);
});
