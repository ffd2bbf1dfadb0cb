//! Short real runs of several VMs sharing one device: every
//! request accounted for (completed in order, or dropped where it was
//! counted), and the figures in range.

use std::time::Duration;

use kicklab_model::qos::{Arrivals, Path, Police, QosSystem};
use kicklab_testbed::qos::{calibrate_qos, run_qos, QosRunConfig, QosRunResult, VmCore};

/// Real runs time themselves on the machine's CPUs: one at a time in this
/// binary (the harness runs tests on parallel threads; two runs at once
/// starve each other's stages, and a starved backend that never reaches a
/// VM's limit gives its policer nothing to drop).
static REAL_RUNS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    REAL_RUNS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The paper's system at 1/10 of its times, every VM offered `offered`
/// requests/s of the paper's time.
fn system(path: Path, police: Police, offered: f64) -> QosSystem {
    let mut sys = QosSystem::paper(path, police, 1.0);
    sys.shared_ns /= 10.0;
    for vm in &mut sys.vms {
        vm.service_ns /= 10.0;
        vm.offered_per_s = offered * 10.0;
    }
    sys
}

fn run(sys: QosSystem, vm_core: VmCore) -> QosRunResult {
    run_qos(&QosRunConfig {
        system: sys,
        warmup: Duration::from_millis(50),
        window: Duration::from_millis(250),
        seed: 1,
        vm_core,
    })
    .unwrap()
}

fn accounted(r: &QosRunResult) {
    for v in &r.vms {
        assert!(v.generated > 0, "{v:?}");
        assert_eq!(v.lost, 0, "{v:?}");
        assert_eq!(v.duplicated, 0, "{v:?}");
        assert_eq!(v.generated, v.completed + v.dropped, "{v:?}");
        assert!(v.throughput_per_s <= v.offered_per_s * 1.05 + 50.0, "{v:?}");
        assert!(v.dropped_per_s >= v.policed_per_s, "{v:?}");
    }
    assert_eq!(r.stages.len(), r.vms.len() + 1);
    for s in r.stages.iter().chain([&r.device]) {
        assert!(s.cpu >= 0.0 && s.cpu <= 1.05, "{s:?}");
        assert!(s.busy >= 0.0 && s.busy <= 1.05, "{s:?}");
    }
}

#[test]
fn every_request_is_accounted_for() {
    let _one = one_at_a_time();
    // Light load on both paths, timed and busy VM cores: nothing dropped,
    // everything completed, latency at least the work on the way.
    for (path, core) in [
        (Path::Shared, VmCore::Timed),
        (Path::Direct, VmCore::Timed),
        (Path::Shared, VmCore::Busy),
    ] {
        let sys = system(path, Police::Ingress, 200.0);
        let work = sys.shared_ns + sys.vms[0].service_ns;
        let r = run(sys, core);
        accounted(&r);
        for v in &r.vms {
            // Nothing dropped (a stall of the whole machine longer than a
            // buffer may cost a few).
            assert!(v.dropped * 100 <= v.generated, "{path:?} {core:?}: {v:?}");
            assert!(v.latency_ns[0] >= 0.9 * work, "{path:?} {core:?}: {v:?}");
        }
        assert_eq!(r.vm_core, core);
    }
}

#[test]
fn limits_drop_at_their_policer_and_overload_at_the_buffers() {
    let _one = one_at_a_time();
    // Overloaded shared path, VM2 limited: at ingress the device drops
    // what is over the limit; after receive the backend serves it first.
    for police in [Police::Ingress, Police::Post] {
        let mut sys = system(Path::Shared, police, 3000.0);
        sys.vms[1].limit = Some((5000.0, 10.0));
        let r = run(sys, VmCore::Timed);
        accounted(&r);
        let (v1, v2) = (&r.vms[0], &r.vms[1]);
        assert!(v2.policed_per_s > 0.0, "{police:?}: {v2:?}");
        assert_eq!(v1.policed_per_s, 0.0, "{police:?}: {v1:?}");
        // VM2 held to its limit (and its burst).
        assert!(
            v2.throughput_per_s <= 5000.0 * 1.1 + 100.0,
            "{police:?}: {v2:?}"
        );
        // Overloaded: VM1 loses requests at the backend's buffer.
        assert!(v1.dropped > 0, "{police:?}: {v1:?}");
    }
}

#[test]
fn poisson_arrivals_and_many_vms_are_accounted_for() {
    let _one = one_at_a_time();
    let mut sys = system(Path::Direct, Police::Ingress, 300.0);
    sys.vms = vec![sys.vms[0]; 5];
    sys.arrivals = Arrivals::Poisson;
    sys.buffer = 4;
    let r = run(sys, VmCore::Timed);
    accounted(&r);
    assert_eq!(r.vms.len(), 5);
    assert_eq!(r.threads, 7);
}

#[test]
fn calibration_measures_the_costs() {
    let _one = one_at_a_time();
    let sys = system(Path::Shared, Police::Post, 100.0);
    let c = calibrate_qos(&sys, VmCore::Timed).unwrap();
    // Busy work is CPU time: at least what was asked, not far above.
    assert!(
        c.shared_ns >= 0.95 * sys.shared_ns && c.shared_ns <= 1.5 * sys.shared_ns,
        "{c:?}"
    );
    assert_eq!(c.vm_ns.len(), 2);
    assert!(c.kick_ns.is_finite() && c.kick_ns >= 0.0, "{c:?}");
    assert!(c.wake_ns.is_finite() && c.wake_ns > 0.0, "{c:?}");
    assert!(c.ring_ns > 0.0 && c.ring_ns < 10_000.0, "{c:?}");
}

/// With a KVM guest per VM: the guests take their requests off rings in
/// their own memory and stamp each done; every request is accounted for,
/// latencies come from the guests' stamps, and at light load the guests
/// halt between requests (and are kicked awake). Overloaded, the guests'
/// rings drop what they cannot hold, and no guest serves faster than its
/// work allows.
#[test]
fn a_guest_per_vm_accounts_for_every_request() {
    let _one = one_at_a_time();
    if let Err(why) = kicklab_testbed::kvm::available() {
        eprintln!("SKIPPED: no usable KVM here: {why}");
        return;
    }
    for path in [Path::Shared, Path::Direct] {
        let sys = system(path, Police::Ingress, 200.0);
        let work = sys.shared_ns + sys.vms[0].service_ns;
        let r = run(sys, VmCore::Guest);
        accounted(&r);
        assert_eq!(r.vm_core, VmCore::Guest);
        for (v, st) in r.vms.iter().zip(&r.stages[1..]) {
            assert!(v.dropped * 100 <= v.generated, "{path:?}: {v:?}");
            assert_eq!(v.bad_stamps, 0, "{path:?}: {v:?}");
            assert!(v.clock_drift_ns.is_some_and(|d| d >= 0.0), "{v:?}");
            assert!(v.latency_ns[0] >= 0.9 * work, "{path:?}: {v:?}");
            assert!(st.sleeps > 0, "{path:?}: {st:?}");
        }
        assert!(r.stages[0].kicks > 0, "{:?}", r.stages[0]);
    }
    let mut sys = system(Path::Direct, Police::Ingress, 3000.0);
    sys.buffer = 16;
    let service = sys.vms[0].service_ns;
    let r = run(sys, VmCore::Guest);
    accounted(&r);
    for v in &r.vms {
        assert!(v.dropped > 0, "{v:?}");
        assert!(v.throughput_per_s <= 1.05e9 / service, "{v:?}");
    }
}

/// A guest whose clock runs 977 per million slow (as a guest TSC that KVM
/// does not keep in step with the host's) drifts from the host's over the
/// run: the clock exchanges before and after it measure the drift, and
/// the stamps placed between them all make sense (by the first exchange
/// alone, the later half of them would land before their requests were
/// made).
#[test]
fn a_guest_clock_that_drifts_is_followed() {
    let _one = one_at_a_time();
    use kicklab_testbed::kvm::guest::Misbehavior;
    use kicklab_testbed::qos::run_qos_with;
    if let Err(why) = kicklab_testbed::kvm::available() {
        eprintln!("SKIPPED: no usable KVM here: {why}");
        return;
    }
    let sys = system(Path::Direct, Police::Ingress, 200.0);
    let work = sys.shared_ns + sys.vms[0].service_ns;
    let cfg = QosRunConfig {
        system: sys,
        warmup: Duration::from_millis(50),
        window: Duration::from_millis(250),
        seed: 1,
        vm_core: VmCore::Guest,
    };
    let r = run_qos_with(&cfg, Misbehavior::SlowClock { shift: 10 }).unwrap();
    accounted(&r);
    for v in &r.vms {
        // 977 ppm of at least the warm-up and window between the
        // exchanges (300 ms): 293 us.
        let drift = v.clock_drift_ns.unwrap();
        assert!(drift > 0.9 * 293e3 && drift < 1e-3 * 5e9, "{v:?}");
        assert_eq!(v.bad_stamps, 0, "{v:?}");
        assert!(v.latency_ns[0] >= 0.9 * work, "{v:?}");
    }
}

/// Guests that misbehave stop the run with an error naming what went
/// wrong, within a bounded time, and never take the host down: one that
/// writes an impossible index into its ring, one that hangs, one that
/// crashes, one that stops early.
#[test]
fn a_misbehaving_guest_stops_the_run_with_an_error() {
    let _one = one_at_a_time();
    use kicklab_testbed::kvm::guest::Misbehavior;
    use kicklab_testbed::qos::run_qos_with;
    if let Err(why) = kicklab_testbed::kvm::available() {
        eprintln!("SKIPPED: no usable KVM here: {why}");
        return;
    }
    for (how, says) in [
        (
            Misbehavior::GarbageIndex { at: 20 },
            "VM 1's guest broke its ring",
        ),
        (Misbehavior::Hang { at: 20 }, "did not finish"),
        (Misbehavior::Crash { at: 20 }, "did not finish"),
        (Misbehavior::StopEarly { at: 20 }, "did not finish"),
    ] {
        let t = std::time::Instant::now();
        let cfg = QosRunConfig {
            system: system(Path::Direct, Police::Ingress, 200.0),
            warmup: Duration::from_millis(50),
            window: Duration::from_millis(100),
            seed: 1,
            vm_core: VmCore::Guest,
        };
        let err = run_qos_with(&cfg, how).expect_err("a misbehaving guest");
        let text = err.to_string();
        eprintln!("{how:?}: {text} ({:?})", t.elapsed());
        assert!(text.contains(says), "{how:?}: {text}");
        assert!(t.elapsed() < Duration::from_secs(10), "{how:?}");
    }
}
