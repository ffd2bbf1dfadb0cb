//! One line of trace text split into its header (thread, CPU, time) and
//! its event (name and fields), for the two formats kicklab reads:
//!
//! - `perf script`: `comm tid [cpu] secs.frac: subsystem:event: fields`
//!   (the comm may hold spaces; `pid/tid` where `-F pid,tid` asks for
//!   both; a period before the event where `-F period` asks for it);
//! - `trace-cmd report`, and ftrace's own `/sys/kernel/tracing/trace`:
//!   `comm-pid [cpu] [flags] secs.frac: event: fields`, where ftrace
//!   prints a system call as `sys_futex(uaddr: .., op: ..)` and its return
//!   as `sys_futex -> 0x0` ([`Line::call`]).
//!
//! Nothing here knows what an event means: the event module reads that.

/// Which tool printed a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `perf script`.
    Perf,
    /// `trace-cmd report`.
    TraceCmd,
}

/// A line's parts, borrowed from the line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<'a> {
    /// The thread's name as the tool printed it.
    pub comm: &'a str,
    /// The thread (the kernel's pid of a task).
    pub tid: u32,
    /// The CPU it ran on.
    pub cpu: u32,
    /// When, in nanoseconds of the trace clock.
    pub t_ns: u64,
    /// Digits after the seconds' point (6: microseconds, 9: nanoseconds).
    pub digits: u32,
    /// The event's name without its subsystem (`sched_switch`).
    pub event: &'a str,
    /// The rest of the line: the event's fields.
    pub fields: &'a str,
    /// Which tool printed it.
    pub format: Format,
    /// ftrace's form of a system call's entry or exit (the event is then
    /// the call's name, `sys_futex`).
    pub call: Option<Call>,
}

/// A system call's entry or exit, as ftrace prints them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// `sys_futex(uaddr: .., op: ..)`.
    Enter,
    /// `sys_futex -> 0x0`.
    Exit,
}

/// Splits one line, or `None` where it is not an event line of either
/// tool (a header, a comment, a stack frame, other text).
pub fn parse(line: &str) -> Option<Line<'_>> {
    let (open, close) = cpu_bracket(line)?;
    let cpu = line[open + 1..close].parse().ok()?;
    let (comm, tid, format) = thread(line[..open].trim())?;
    let rest = &line[close + 1..];
    // The time is the first token of the form digits.digits: (trace-cmd
    // may print a flags column such as `d..2.` before it).
    let mut offset = 0;
    let mut time = None;
    for token in rest.split_ascii_whitespace().take(3) {
        let at = rest[offset..].find(token)? + offset;
        offset = at + token.len();
        if let Some(t) = token.strip_suffix(':').and_then(timestamp) {
            time = Some(t);
            break;
        }
    }
    let (t_ns, digits) = time?;
    let rest = rest[offset..].trim_start();
    // perf prints the period before the event where asked to: skip plain
    // numbers.
    let mut rest = rest;
    while let Some((token, after)) = rest.split_once(char::is_whitespace) {
        if token.bytes().all(|b| b.is_ascii_digit()) {
            rest = after.trim_start();
        } else {
            break;
        }
    }
    let (event, fields, call) = match ftrace_call(rest) {
        Some((event, fields, call)) => (event, fields, Some(call)),
        None => {
            let (name, fields) = match rest.split_once(": ") {
                Some((name, fields)) => (name, fields),
                None => (rest.strip_suffix(':')?, ""),
            };
            let event = name.rsplit(':').next()?.trim();
            if event.is_empty() || event.contains(char::is_whitespace) {
                return None;
            }
            (event, fields.trim(), None)
        }
    };
    Some(Line {
        comm,
        tid,
        cpu,
        t_ns,
        digits,
        event,
        fields,
        format,
        call,
    })
}

/// ftrace's `sys_NAME(args)` and `sys_NAME -> value`.
fn ftrace_call(rest: &str) -> Option<(&str, &str, Call)> {
    if !rest.starts_with("sys_") {
        return None;
    }
    if let Some((name, value)) = rest.split_once(" -> ") {
        if !name.contains([' ', '(', ':']) {
            return Some((name, value.trim(), Call::Exit));
        }
    }
    let (name, args) = rest.split_once('(')?;
    if name.contains([' ', ':']) {
        return None;
    }
    Some((
        name,
        args.trim_end().strip_suffix(')').unwrap_or(args),
        Call::Enter,
    ))
}

/// The first `[digits]` that follows a space: the CPU column.
fn cpu_bracket(line: &str) -> Option<(usize, usize)> {
    let bytes = line.as_bytes();
    let mut from = 0;
    while let Some(i) = line[from..].find(" [").map(|i| i + from + 1) {
        let close = line[i..].find(']').map(|c| c + i)?;
        if close > i + 1 && bytes[i + 1..close].iter().all(u8::is_ascii_digit) {
            return Some((i, close));
        }
        from = i + 1;
    }
    None
}

/// The thread before the CPU column: `comm tid`, `comm pid/tid` (perf) or
/// `comm-pid` (trace-cmd).
fn thread(head: &str) -> Option<(&str, u32, Format)> {
    if let Some((comm, id)) = head.rsplit_once(char::is_whitespace) {
        let tid = id.rsplit('/').next()?;
        if let Ok(tid) = tid.parse() {
            return Some((comm.trim(), tid, Format::Perf));
        }
    }
    let (comm, pid) = head.rsplit_once('-')?;
    Some((comm.trim(), pid.parse().ok()?, Format::TraceCmd))
}

/// `secs.frac` as nanoseconds and the number of fraction digits.
fn timestamp(s: &str) -> Option<(u64, u32)> {
    let (secs, frac) = s.split_once('.')?;
    if secs.is_empty() || frac.is_empty() || frac.len() > 9 {
        return None;
    }
    let secs: u64 = secs.parse().ok()?;
    if !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let digits = u32::try_from(frac.len()).ok()?;
    let frac: u64 = frac.parse().ok()?;
    let t = secs
        .checked_mul(1_000_000_000)?
        .checked_add(frac * 10u64.pow(9 - digits))?;
    Some((t, digits))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_script_lines() {
        let l = parse("    kicklab-vcpu 24366 [000] 21541.017121889:              kvm:kvm_pio: pio_write at 0x10 size 1 count 1 val 0xf2 ").unwrap();
        assert_eq!(l.comm, "kicklab-vcpu");
        assert_eq!(l.tid, 24366);
        assert_eq!(l.cpu, 0);
        assert_eq!(l.t_ns, 21_541_017_121_889);
        assert_eq!(l.digits, 9);
        assert_eq!(l.event, "kvm_pio");
        assert_eq!(l.fields, "pio_write at 0x10 size 1 count 1 val 0xf2");
        assert_eq!(l.format, Format::Perf);
        // A comm with a space, pid/tid, microseconds, a period.
        let l = parse(
            "CPU 0/KVM  1200/1234 [003]  5.000123:   1 kvm:kvm_exit: reason EPT_MISCONFIG rip 0x1",
        )
        .unwrap();
        assert_eq!((l.comm, l.tid, l.cpu), ("CPU 0/KVM", 1234, 3));
        assert_eq!((l.t_ns, l.digits), (5_000_123_000, 6));
        assert_eq!(l.event, "kvm_exit");
        assert_eq!(l.fields, "reason EPT_MISCONFIG rip 0x1");
    }

    #[test]
    fn trace_cmd_lines() {
        let l = parse("  vhost-1233-1240  [002] d..2.  1234.567890123: sched_switch:         vhost-1233:1240 [120] S ==> swapper/2:0 [120]").unwrap();
        assert_eq!((l.comm, l.tid, l.cpu), ("vhost-1233", 1240, 2));
        assert_eq!(l.t_ns, 1_234_567_890_123);
        assert_eq!(l.event, "sched_switch");
        assert_eq!(l.format, Format::TraceCmd);
        let l =
            parse("qemu-system-x86-900   [001]   77.000001: kvm_entry:            vcpu 0").unwrap();
        assert_eq!(
            (l.comm, l.tid, l.t_ns),
            ("qemu-system-x86", 900, 77_000_001_000)
        );
    }

    #[test]
    fn ftrace_system_calls() {
        let l = parse("       kicklab-P-20020   [000] ..... 25909.098497: sys_futex(uaddr: 0x556af4ae6980, op: 0x80, val: 2, utime: 0, uaddr2: 0, val3: 0)").unwrap();
        assert_eq!(
            (l.comm, l.tid, l.event, l.call),
            ("kicklab-P", 20020, "sys_futex", Some(Call::Enter))
        );
        assert_eq!(
            l.fields,
            "uaddr: 0x556af4ae6980, op: 0x80, val: 2, utime: 0, uaddr2: 0, val3: 0"
        );
        let l =
            parse("       kicklab-P-20020   [000] ..... 25909.098597: sys_futex -> 0x0").unwrap();
        assert_eq!(
            (l.event, l.fields, l.call),
            ("sys_futex", "0x0", Some(Call::Exit))
        );
    }

    #[test]
    fn other_text_is_not_a_line() {
        for s in [
            "",
            "# ========",
            "cpus=2",
            "\tffffffff81000000 do_syscall_64+0x1 ([kernel.kallsyms])",
            "hello [world] 1.2: x: y",
            "a 1 [0] 1.2.3: x: y",
            "a 1 [0] 99999999999999999999.1: x: y",
        ] {
            assert_eq!(parse(s), None, "{s:?}");
        }
    }
}
