//! The estimates on a made-up trace whose answer is known by hand: a vCPU
//! (P, thread 10) kicks a host thread (C, thread 20) every 20 us with
//! `kvm_exit`, `kvm_entry` and switches into C all recorded, printed once
//! as `perf script` and once as `trace-cmd report` would.

use std::io::Write;
use std::path::PathBuf;

use kicklab_trace::{read, Naming, Trace};

/// Each round starts at 20k us: C went to sleep at 0 (20 in the next
/// round); P exits at 10, writes at 10.5, wakes C at 11, enters at 13; C
/// runs at 16 and sleeps at 20.
fn rounds(n: u64) -> Vec<(u64, u32, &'static str, String)> {
    let mut v = Vec::new();
    let us = |x: f64, k: u64| {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let ns = (x * 1000.0) as u64;
        1_000_000_000 + k * 20_000 + ns
    };
    for k in 0..n {
        v.push((us(0.0, k), 20, "sched_switch", "sleep".to_string()));
        v.push((
            us(10.0, k),
            10,
            "kvm_exit",
            "reason IO_INSTRUCTION rip 0x1000 info 0 0".into(),
        ));
        v.push((
            us(10.5, k),
            10,
            "kvm_pio",
            "pio_write at 0x10 size 1 count 1 val 0x1".into(),
        ));
        v.push((us(11.0, k), 10, "sched_waking", "wake".into()));
        v.push((us(13.0, k), 10, "kvm_entry", "vcpu 0".into()));
        v.push((us(16.0, k), 0, "sched_switch", "run".into()));
    }
    v
}

fn perf_line(t: u64, tid: u32, event: &str, what: &str) -> String {
    let comm = match tid {
        10 => "CPU 0/KVM",
        20 => "vhost-9",
        _ => "swapper/1",
    };
    let fields = match (event, what) {
        ("sched_switch", "sleep") => "prev_comm=vhost-9 prev_pid=20 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120".to_string(),
        ("sched_switch", _) => "prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=vhost-9 next_pid=20 next_prio=120".to_string(),
        ("sched_waking", _) => "comm=vhost-9 pid=20 prio=120 target_cpu=001".to_string(),
        _ => what.to_string(),
    };
    let sub = if event.starts_with("sched") {
        "sched"
    } else {
        "kvm"
    };
    format!(
        "{comm:>16} {tid:>6} [00{}] {}.{:09}: {sub}:{event}: {fields}",
        u32::from(tid != 10),
        t / 1_000_000_000,
        t % 1_000_000_000
    )
}

fn trace_cmd_line(t: u64, tid: u32, event: &str, what: &str) -> String {
    let comm = match tid {
        10 => "qemu-kvm",
        20 => "vhost-9",
        _ => "<idle>",
    };
    let fields = match (event, what) {
        ("sched_switch", "sleep") => "vhost-9:20 [120] S ==> swapper/1:0 [120]".to_string(),
        ("sched_switch", _) => "swapper/1:0 [120] R ==> vhost-9:20 [120]".to_string(),
        ("sched_waking", _) => "comm=vhost-9 pid=20 prio=120 target_cpu=001".to_string(),
        _ => what.to_string(),
    };
    format!(
        "{comm:>16}-{tid:<6} [00{}] d..2. {}.{:09}: {event}: {fields}",
        u32::from(tid != 10),
        t / 1_000_000_000,
        t % 1_000_000_000
    )
}

fn write(name: &str, lines: &[String]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("kicklab-trace-{}-{name}", std::process::id()));
    let mut f = std::fs::File::create(&path).unwrap();
    writeln!(f, "# a header line, then the events").unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
    path
}

fn check(t: &Trace) {
    let e = &t.estimates;
    assert_eq!((t.pair.producer.tid, t.pair.consumer.tid), (10, 20));
    assert_eq!(t.pair.guest, Some(kicklab_model::Party::P));
    // From the first write (10.5 us) to the last wake-up (4 x 20 + 11).
    assert!((e.window_ns - 80_500.0).abs() < 1e-6, "{}", e.window_ns);
    let [p, c] = &e.sides;
    assert_eq!((p.notifications, c.notifications), (5, 0));
    assert_eq!((p.sleeps, c.sleeps), (0, 4));
    let kick = p.kick.unwrap();
    assert_eq!((kick.mean_ns, kick.n), (3000.0, 5));
    assert_eq!(p.visible.unwrap().mean_ns, 1000.0);
    let wake = c.wake.unwrap();
    assert_eq!((wake.mean_ns, wake.n), (6000.0, 5));
    // P never sleeps; C runs 4 us of each of the window's 4 whole rounds.
    assert!((p.busy_ns - 80_500.0).abs() < 1e-6);
    assert!((c.busy_ns - 16_000.0).abs() < 1e-6, "{}", c.busy_ns);
    assert!(t.gaps.is_empty(), "{:?}", t.gaps);
}

#[test]
fn perf_script_text_gives_the_known_answer() {
    let lines: Vec<String> = rounds(5)
        .iter()
        .map(|(t, tid, e, w)| perf_line(*t, *tid, e, w))
        .collect();
    let path = write("perf", &lines);
    let t = read(&path, &Naming::default()).unwrap();
    assert_eq!(t.format, "perf script");
    check(&t);
    std::fs::remove_file(path).unwrap();
}

#[test]
fn trace_cmd_text_gives_the_same_answer() {
    let lines: Vec<String> = rounds(5)
        .iter()
        .map(|(t, tid, e, w)| trace_cmd_line(*t, *tid, e, w))
        .collect();
    let path = write("trace-cmd", &lines);
    let t = read(&path, &Naming::default()).unwrap();
    assert_eq!(t.format, "trace-cmd report or ftrace");
    check(&t);
    std::fs::remove_file(path).unwrap();
}
