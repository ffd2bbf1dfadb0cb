//! Hostile text: any line, any bytes, never a panic; every line the
//! reader takes apart gives an event, and a file of them is read to its
//! end or refused in one line.

use kicklab_trace::event::Event;
use kicklab_trace::line::parse;
use proptest::prelude::*;

/// Lines shaped like trace lines, with random parts.
fn tracelike() -> impl Strategy<Value = String> {
    (
        "[ -~]{0,20}",
        any::<u32>(),
        0u32..300,
        0u64..100_000,
        0u32..1_000_000_000,
        prop::sample::select(vec![
            "sched:sched_switch",
            "sched_waking",
            "kvm:kvm_pio",
            "kvm_entry",
            "sys_futex(",
            "sys_futex ->",
            "syscalls:sys_enter_futex",
            "raw_syscalls:sys_enter",
        ]),
        ".{0,80}",
    )
        .prop_map(|(comm, tid, cpu, s, ns, ev, rest)| {
            format!("{comm} {tid} [{cpu:03}] {s}.{ns:09}: {ev}: {rest}")
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn any_text_is_taken_apart_or_left(s in ".{0,200}") {
        if let Some(l) = parse(&s) {
            let _ = Event::of(&l);
        }
    }

    #[test]
    fn tracelike_lines_never_panic(s in tracelike()) {
        if let Some(l) = parse(&s) {
            let _ = Event::of(&l);
        }
    }

    #[test]
    fn any_file_is_read_or_refused(lines in prop::collection::vec(tracelike(), 0..60), junk in prop::collection::vec(any::<u8>(), 0..200)) {
        let path = std::env::temp_dir().join(format!("kicklab-hostile-{}", std::process::id()));
        let mut bytes = lines.join("\n").into_bytes();
        bytes.extend(junk);
        std::fs::write(&path, &bytes).unwrap();
        match kicklab_trace::read(&path, &kicklab_trace::Naming::default()) {
            Ok(t) => prop_assert!(t.estimates.window_ns > 0.0),
            Err(e) => prop_assert_eq!(e.to_string().lines().count(), 1),
        }
        std::fs::remove_file(&path).unwrap();
    }
}
