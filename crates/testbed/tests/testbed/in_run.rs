//! In-run costs: the reference pairs time P's and C's kicks and wake-ups.

use kicklab_ring::NotifierKind;
use kicklab_testbed::kvm::KvmOptions;
use kicklab_testbed::Backend;

#[test]
fn reference_pairs_time_every_kick_and_wake_up_between_threads_and_with_a_guest() {
    let (r, sleeps) = Backend::Threads(NotifierKind::Futex).in_run(1).unwrap();
    let r = r.expect("both reference pairs kick and sleep");
    for (name, s) in [("N_P", r.np), ("N_C", r.nc), ("R_P", r.rp), ("R_C", r.rc)] {
        let s = s.unwrap_or_else(|| panic!("{name}: threads time every part"));
        assert!(
            s.mean_ns.is_finite() && s.mean_ns > 0.0,
            "{name}: {}",
            s.mean_ns
        );
        assert_eq!(s.n, 1, "{name}: one sample per run");
    }
    // Each sleeper's CPU beyond its work, and its sleeps, one sample per
    // run (calibration takes the ring's cost out once it has measured it).
    for (name, v) in [("P", &sleeps.p), ("C", &sleeps.c)] {
        assert_eq!(v.len(), 1, "{name}: one sample per run");
        let (extra, per_message) = v[0];
        assert!(extra.is_finite() && extra > 0.0, "{name}: {extra}");
        assert!(
            per_message > 0.0 && per_message <= 1.0,
            "{name}: {per_message}"
        );
    }
    // With a guest on the other side every part is timed too: the guest
    // times its own kicks and its wake-ups from the host's kicks by its
    // TSC, the host its wake-ups from the guest's kicks across the clock
    // exchange. A sign or offset error in that exchange leaves wake-ups
    // uncounted (None) or absurd (longer than the whole run).
    if kicklab_testbed::kvm::available().is_ok() {
        let k = Backend::Kvm(KvmOptions::default())
            .in_run(1)
            .unwrap()
            .0
            .expect("the reference pairs kick and sleep");
        for (name, s) in [("N_P", k.np), ("N_C", k.nc), ("R_P", k.rp), ("R_C", k.rc)] {
            let s =
                s.unwrap_or_else(|| panic!("{name}: a user-mode guest times every part: {k:?}"));
            assert!(
                s.mean_ns.is_finite() && s.mean_ns > 0.0 && s.mean_ns < 1e8,
                "{name}: {}",
                s.mean_ns
            );
        }
    } else {
        println!("skipped the KVM half: no usable /dev/kvm");
    }
}
