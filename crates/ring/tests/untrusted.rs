//! The host's endpoints over memory a misbehaving peer scribbles on (the
//! property `kicklab_ring::untrusted::drive` checks), as a property test so
//! CI runs it without the fuzzer (`fuzz/` runs the same under libFuzzer).
//! Not with the `loom` feature: the endpoints over raw memory are not
//! built there.
#![cfg(not(feature = "loom"))]

use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(2000)
    ))]
    #[test]
    fn any_peer_writes_leave_the_host_safe(script in proptest::collection::vec(any::<u8>(), 0..600)) {
        kicklab_ring::untrusted::drive(&script);
    }
}
