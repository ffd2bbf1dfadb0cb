//! The real multi-VM system's tests.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use kicklab_model::qos::{Police, QosSystem};

use crate::clock::{thread_cpu_ns, Tsc};
use crate::{Setting, TestbedError};

use super::config::*;
use super::run::*;
use super::stages::*;
use kicklab_model::qos::Path;

#[test]
fn busy_work_counts_only_time_on_the_cpu() {
    let tsc = Tsc::get();
    let never = AtomicBool::new(false);
    let c0 = thread_cpu_ns();
    let w0 = Instant::now();
    cpu_work(tsc.ticks(5e6), tsc.ticks(OFF_CPU_NS), u64::MAX, &never);
    let (cpu, wall) = (thread_cpu_ns() - c0, w0.elapsed().as_nanos());
    // At least the 5 ms of CPU it was asked for (less only if the
    // thread clock misses time), and no more wall time than CPU
    // plus what others took.
    assert!(cpu >= 4_500_000, "{cpu} ns of CPU");
    assert!(wall >= u128::from(cpu) * 9 / 10, "{wall} {cpu}");
    // Stopped when asked.
    assert!(!cpu_work(u64::MAX, 1000, 0, &never));
}

#[test]
fn bad_configurations_are_refused_before_anything_runs() {
    let ok = QosRunConfig {
        system: QosSystem::paper(Path::Shared, Police::Post, 100.0),
        warmup: Duration::from_millis(10),
        window: Duration::from_millis(10),
        seed: 1,
        vm_core: VmCore::Timed,
    };
    assert!(check_qos(&ok).is_ok());
    let mut bad = ok.clone();
    bad.system.vms = vec![bad.system.vms[0]; MAX_VMS + 1];
    assert!(run_qos(&bad).is_err());
    let mut bad = ok.clone();
    bad.system.shared_ns = 1e12;
    assert!(matches!(
        run_qos(&bad),
        Err(TestbedError::Limit {
            what: Setting::Work,
            ..
        })
    ));
    let mut bad = ok.clone();
    bad.system.vms[0].offered_per_s = 1e8;
    assert!(run_qos(&bad).is_err());
    let mut bad = ok.clone();
    bad.window = Duration::ZERO;
    assert!(run_qos(&bad).is_err());
    let mut bad = ok.clone();
    bad.system.buffer = MAX_BUFFER + 1;
    assert!(run_qos(&bad).is_err());
    // Guests: the requests kept until the end are bounded (checked
    // before any guest starts, so with or without KVM).
    let mut bad = ok;
    bad.vm_core = VmCore::Guest;
    bad.system.vms[0].offered_per_s = 500_000.0;
    bad.window = MAX_WINDOW;
    assert!(matches!(
        check_qos(&bad),
        Err(TestbedError::Limit {
            what: Setting::Messages,
            ..
        })
    ));
    bad.window = Duration::from_secs(1);
    assert!(check_qos(&bad).is_ok());
}
