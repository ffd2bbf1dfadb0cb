//! In-run costs: the reference pairs time P's and C's kicks and wake-ups.

use kicklab_ring::NotifierKind;
use kicklab_testbed::kvm::KvmOptions;
use kicklab_testbed::Backend;

#[test]
fn reference_pairs_time_kicks_and_wake_ups_on_threads_only() {
    let r = Backend::Threads(NotifierKind::Futex)
        .in_run(1)
        .unwrap()
        .expect("both reference pairs kick and sleep");
    for (name, s) in [("N_P", r.np), ("N_C", r.nc), ("R_P", r.rp), ("R_C", r.rc)] {
        assert!(
            s.mean_ns.is_finite() && s.mean_ns > 0.0,
            "{name}: {}",
            s.mean_ns
        );
        assert_eq!(s.n, 1, "{name}: one sample per run");
    }
    // A guest's kicks are not timed from the host: nothing to report, and
    // nothing is run.
    assert_eq!(Backend::Kvm(KvmOptions::default()).in_run(1).unwrap(), None);
}
