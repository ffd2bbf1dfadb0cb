//! What a trace line says happened ([`Event`]), from the tracepoints the
//! estimates use: the scheduler's switches and wake-ups, KVM's exits and
//! entries and the exits' I/O, and system calls' entries and exits. Every
//! other event is [`Event::Other`]: the thread was running then.

use crate::line::{Call, Line};

/// One event, reduced to what the estimates read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// `sched_switch`: `prev` left the CPU (`sleeping`: in a sleep state,
    /// not preempted) and `next` took it.
    Switch {
        /// The thread that left.
        prev: u32,
        /// Whether it left to sleep (state S, D, I...; not R).
        sleeping: bool,
        /// The thread that runs now.
        next: u32,
    },
    /// `sched_waking` (`early`) or `sched_wakeup`: the line's thread made
    /// `target` runnable.
    Wake {
        /// The woken thread.
        target: u32,
        /// `sched_waking` (at the waker's call) rather than
        /// `sched_wakeup`.
        early: bool,
    },
    /// `kvm_exit`: the vCPU left the guest.
    KvmExit,
    /// `kvm_entry`: the vCPU entered the guest.
    KvmEntry,
    /// An event inside an exit: `kvm_emulate_insn`, `kvm_userspace_exit`,
    /// reads by `kvm_pio`/`kvm_mmio`.
    KvmInExit,
    /// A guest's write to a device (`kvm_pio` `pio_write`, `kvm_mmio`
    /// `write`, `kvm_fast_mmio`): a notification.
    KvmWrite,
    /// `sys_enter_*` (`raw_syscalls:sys_enter` too): `futex_wake` where
    /// it is a futex call with `FUTEX_WAKE`.
    SysEnter {
        /// A futex wake call.
        futex_wake: bool,
        /// A futex wait call (the thread may sleep in it).
        futex_wait: bool,
    },
    /// `sys_exit_*` (`raw_syscalls:sys_exit` too).
    SysExit,
    /// Any other event: the thread ran then.
    Other,
}

impl Event {
    /// The event a line holds.
    pub fn of(line: &Line<'_>) -> Event {
        let f = line.fields;
        match line.call {
            Some(Call::Enter) => {
                let op = (line.event == "sys_futex")
                    .then(|| futex_op(field(f, "op")))
                    .flatten();
                return Event::SysEnter {
                    futex_wake: op.is_some_and(is_wake),
                    futex_wait: op.is_some_and(is_wait),
                };
            }
            Some(Call::Exit) => return Event::SysExit,
            None => {}
        }
        match line.event {
            "sched_switch" => switch(f).unwrap_or(Event::Other),
            "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => match woken(f) {
                Some(target) => Event::Wake {
                    target,
                    early: line.event == "sched_waking",
                },
                None => Event::Other,
            },
            "kvm_exit" => Event::KvmExit,
            "kvm_entry" => Event::KvmEntry,
            "kvm_pio" if f.starts_with("pio_write") => Event::KvmWrite,
            "kvm_mmio" if f.starts_with("mmio write") => Event::KvmWrite,
            "kvm_fast_mmio" => Event::KvmWrite,
            "kvm_pio" | "kvm_mmio" | "kvm_emulate_insn" | "kvm_userspace_exit" => Event::KvmInExit,
            "sys_enter" => Event::SysEnter {
                futex_wake: raw_futex_op(f).is_some_and(is_wake),
                futex_wait: raw_futex_op(f).is_some_and(is_wait),
            },
            "sys_exit" => Event::SysExit,
            "sys_enter_futex" => Event::SysEnter {
                futex_wake: futex_op(field(f, "op")).is_some_and(is_wake),
                futex_wait: futex_op(field(f, "op")).is_some_and(is_wait),
            },
            name if name.starts_with("sys_enter_") => Event::SysEnter {
                futex_wake: false,
                futex_wait: false,
            },
            name if name.starts_with("sys_exit_") => Event::SysExit,
            _ => Event::Other,
        }
    }
}

/// `prev_pid=`, `prev_state=`, `next_pid=` (perf), or `comm:pid [prio] S
/// ==> comm:pid [prio]` (trace-cmd).
fn switch(f: &str) -> Option<Event> {
    if let (Some(prev), Some(next)) = (field(f, "prev_pid"), field(f, "next_pid")) {
        return Some(Event::Switch {
            prev: prev.parse().ok()?,
            sleeping: sleeping(field(f, "prev_state")?),
            next: next.parse().ok()?,
        });
    }
    let (left, right) = f.split_once("==>")?;
    let mut left = left.split_ascii_whitespace().rev();
    let state = left.next()?;
    let prev_thread = left.find(|t| !t.starts_with('['))?;
    let prev = prev_thread.rsplit(':').next()?.parse().ok()?;
    let next_thread = right.split_ascii_whitespace().next()?;
    let next = next_thread.rsplit(':').next()?.parse().ok()?;
    Some(Event::Switch {
        prev,
        sleeping: sleeping(state),
        next,
    })
}

/// Whether a task state left its CPU to sleep: anything but runnable
/// (`R`, `R+`: preempted).
fn sleeping(state: &str) -> bool {
    !state.starts_with('R')
}

/// The woken thread: `pid=` (perf, newer trace-cmd) or `comm:pid` first.
fn woken(f: &str) -> Option<u32> {
    if let Some(pid) = field(f, "pid") {
        return pid.parse().ok();
    }
    f.split_ascii_whitespace()
        .next()?
        .rsplit(':')
        .next()?
        .parse()
        .ok()
}

/// The value after `key=` or `key: ` where `key` starts a word.
fn field<'a>(f: &'a str, key: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(at) = f[from..].find(key).map(|i| i + from) {
        let starts_word = at == 0 || f.as_bytes()[at - 1] == b' ';
        let after = &f[at + key.len()..];
        let value = after.strip_prefix('=').or_else(|| after.strip_prefix(": "));
        if let (true, Some(value)) = (starts_word, value) {
            let end = value.find([' ', ',']).unwrap_or(value.len());
            return Some(&value[..end]);
        }
        from = at + key.len();
    }
    None
}

/// A futex `op` (`0x00000081`, `129`) without `FUTEX_PRIVATE_FLAG` and
/// `FUTEX_CLOCK_REALTIME`.
fn futex_op(op: Option<&str>) -> Option<u64> {
    let op = op?;
    let value = match op.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => op.parse().ok(),
    };
    value.map(|v| v & 0x7f)
}

/// `FUTEX_WAKE`, `FUTEX_WAKE_OP`, `FUTEX_WAKE_BITSET`.
fn is_wake(op: u64) -> bool {
    matches!(op, 1 | 5 | 10)
}

/// `FUTEX_WAIT`, `FUTEX_WAIT_BITSET`.
fn is_wait(op: u64) -> bool {
    matches!(op, 0 | 9)
}

/// `raw_syscalls:sys_enter`: `NR 202 (uaddr, op, ...)`: x86-64's futex
/// is 202; its op, in hex.
fn raw_futex_op(f: &str) -> Option<u64> {
    let rest = f.strip_prefix("NR 202 (")?;
    let op = rest.split(',').nth(1)?.trim();
    futex_op(Some(&format!("0x{op}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::line::parse;

    fn ev(s: &str) -> Event {
        Event::of(&parse(s).unwrap())
    }

    #[test]
    fn switches_in_both_formats() {
        assert_eq!(
            ev("    kicklab-host 24368 [001] 21541.017159275:       sched:sched_switch: prev_comm=kicklab-host prev_pid=24368 prev_prio=120 prev_state=S ==> next_comm=perf next_pid=24362 next_prio=120"),
            Event::Switch { prev: 24368, sleeping: true, next: 24362 }
        );
        assert_eq!(
            ev("perf 24362 [001] 21541.017092734: sched:sched_switch: prev_comm=perf prev_pid=24362 prev_prio=120 prev_state=R+ ==> next_comm=kicklab-host next_pid=24368 next_prio=120"),
            Event::Switch { prev: 24362, sleeping: false, next: 24368 }
        );
        assert_eq!(
            ev("  vhost-1233-1240  [002] d..2.  1234.567890123: sched_switch:         vhost-1233:1240 [120] S ==> swapper/2:0 [120]"),
            Event::Switch { prev: 1240, sleeping: true, next: 0 }
        );
    }

    #[test]
    fn wakes_kvm_and_syscalls() {
        assert_eq!(
            ev("kicklab-vcpu 24366 [000] 21541.017012924: sched:sched_waking: comm=kicklab-host pid=24368 prio=120 target_cpu=001"),
            Event::Wake { target: 24368, early: true }
        );
        assert_eq!(
            ev("qemu-900 [001] 7.000001: sched_wakeup: vhost-900:905 [120] CPU:001"),
            Event::Wake {
                target: 905,
                early: false
            }
        );
        assert_eq!(
            ev("v 1 [0] 1.000000001: kvm:kvm_pio: pio_write at 0x10 size 1 count 1 val 0x1"),
            Event::KvmWrite
        );
        assert_eq!(
            ev("v 1 [0] 1.000000001: kvm:kvm_pio: pio_read at 0x10 size 1 count 1 val 0x1"),
            Event::KvmInExit
        );
        assert_eq!(
            ev("v 1 [0] 1.000000001: kvm:kvm_mmio: mmio write len 4 gpa 0xfe003000 val 0x0"),
            Event::KvmWrite
        );
        assert_eq!(
            ev("v 1 [0] 1.000000001: kvm:kvm_fast_mmio: fast mmio at gpa 0xfe003000"),
            Event::KvmWrite
        );
        assert_eq!(
            ev("v 1 [0] 1.000000001: kvm:kvm_exit: reason IO_INSTRUCTION rip 0x1"),
            Event::KvmExit
        );
        assert_eq!(
            ev("v 1 [0] 1.000000001: kvm:kvm_entry: vcpu 0"),
            Event::KvmEntry
        );
        assert_eq!(
            ev("p 1 [0] 1.000000001: syscalls:sys_enter_futex: uaddr: 0x7f00, op: 0x00000081, val: 0x00000001, utime: 0, uaddr2: 0, val3: 0"),
            Event::SysEnter { futex_wake: true, futex_wait: false }
        );
        assert_eq!(
            ev("p 1 [0] 1.000000001: syscalls:sys_enter_futex: uaddr: 0x7f00, op: 0x00000080, val: 0x00000001, utime: 0, uaddr2: 0, val3: 0"),
            Event::SysEnter { futex_wake: false, futex_wait: true }
        );
        assert_eq!(
            ev("p 1 [0] 1.000000001: raw_syscalls:sys_enter: NR 202 (7f00, 81, 1, 0, 0, 0)"),
            Event::SysEnter {
                futex_wake: true,
                futex_wait: false
            }
        );
        assert_eq!(
            ev("p 1 [0] 1.000000001: syscalls:sys_enter_futex: uaddr: 0x7f00, op: 0x00000089, val: 0x00000001, utime: 0, uaddr2: 0, val3: 0"),
            Event::SysEnter { futex_wake: false, futex_wait: true }
        );
        assert_eq!(
            ev("p 1 [0] 1.000000001: syscalls:sys_exit_read: 0x8"),
            Event::SysExit
        );
        assert_eq!(
            ev("p 1 [0] 1.000000001: irq:irq_handler_entry: irq=1"),
            Event::Other
        );
    }
}
