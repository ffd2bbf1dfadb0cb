//! In-run costs: the reference pairs time P's and C's kicks and wake-ups.

use kicklab_ring::NotifierKind;
use kicklab_testbed::kvm::KvmOptions;
use kicklab_testbed::Backend;

#[test]
fn reference_pairs_time_every_kick_and_wake_up_between_threads_and_the_hosts_kicks_with_a_guest() {
    let r = Backend::Threads(NotifierKind::Futex)
        .in_run(1)
        .unwrap()
        .expect("both reference pairs kick and sleep");
    for (name, s) in [("N_P", r.np), ("N_C", r.nc), ("R_P", r.rp), ("R_C", r.rc)] {
        let s = s.unwrap_or_else(|| panic!("{name}: threads time every part"));
        assert!(
            s.mean_ns.is_finite() && s.mean_ns > 0.0,
            "{name}: {}",
            s.mean_ns
        );
        assert_eq!(s.n, 1, "{name}: one sample per run");
    }
    // With a guest on the other side only the host's kicks are timed: in
    // tx the host consumes, so C's notify and nothing else.
    if kicklab_testbed::kvm::available().is_ok() {
        let k = Backend::Kvm(KvmOptions::default())
            .in_run(1)
            .unwrap()
            .expect("the host's kicks are timed");
        assert!(k.np.is_none() && k.rp.is_none() && k.rc.is_none(), "{k:?}");
        assert!(k.nc.is_some_and(|s| s.mean_ns > 0.0), "{k:?}");
    } else {
        println!("skipped the KVM half: no usable /dev/kvm");
    }
}
