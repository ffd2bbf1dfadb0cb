//! A short real run of several VMs sharing one device (issue 15): every
//! request accounted for, the figures in range.

use std::time::Duration;

use kicklab_model::qos::{Path, Police, QosSystem};
use kicklab_testbed::qos::{run_qos, QosRunConfig, VmCore};

#[test]
fn a_short_run_accounts_for_every_request() {
    // The paper's system at 1/10 of its times, light load and an
    // overloaded one with VM2 limited after receive.
    for (offered, limit, police, vm_core) in [
        (300.0, None, Police::Ingress, VmCore::Timed),
        (3000.0, Some(500.0), Police::Post, VmCore::Timed),
        (3000.0, Some(500.0), Police::Ingress, VmCore::Busy),
    ] {
        let mut sys = QosSystem::paper(Path::Shared, police, 1.0);
        sys.shared_ns /= 10.0;
        for vm in &mut sys.vms {
            vm.service_ns /= 10.0;
            vm.offered_per_s = offered * 10.0;
        }
        sys.vms[1].limit = limit.map(|r| (r * 10.0, 10.0));
        let r = run_qos(&QosRunConfig {
            system: sys,
            warmup: Duration::from_millis(50),
            window: Duration::from_millis(300),
            seed: 1,
            vm_core,
        })
        .unwrap();
        eprintln!("{r:#?}");
        for v in &r.vms {
            assert_eq!(v.lost, 0, "{v:?}");
            assert_eq!(v.duplicated, 0, "{v:?}");
            assert_eq!(v.generated, v.completed + v.dropped, "{v:?}");
            assert!(v.generated > 0);
        }
    }
}

#[test]
#[ignore]
fn print_calibration() {
    let sys = QosSystem::paper(Path::Shared, Police::Post, 1.0);
    for _ in 0..5 {
        let c = kicklab_testbed::qos::calibrate_qos(&sys).unwrap();
        eprintln!("{c:?}");
    }
}
