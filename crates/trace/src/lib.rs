//! kicklab's reader of kernel traces of a real pair: `perf script` or
//! `trace-cmd report` text (whole or gzip-compressed) in, the pair and its
//! notification costs, wake-ups, sleeps and busy time out ([`Trace`]).
//!
//! The file is read twice, line by line, in bounded memory: a first pass
//! surveys the threads and events ([`survey`]) and chooses the pair
//! ([`parties`]), a second reads the pair's events ([`estimate`]). Turning
//! the estimates into model parameters, a profile and advice is the lab's
//! work (`kicklab_lab::trace`), not this crate's.

use std::path::Path;

use serde::Serialize;

pub mod estimate;
pub mod event;
pub mod line;
pub mod parties;
mod source;
pub mod survey;

pub use estimate::{Estimates, Side, Span, SpanKind};
pub use parties::{Naming, Pair, Thread, Who};

/// Why a trace gave no estimates; each message is one line that names
/// what is missing and what would supply it.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be read.
    #[error("{path}: {why}")]
    Read {
        /// The file.
        path: String,
        /// The system's reason.
        why: String,
    },
    /// No line of the file is a trace event.
    #[error("{path}: no line is an event of `perf script` or `trace-cmd report` (first text: {first:?}); record with perf record -e ... and print with perf script --ns, or trace-cmd record and trace-cmd report")]
    NotATrace {
        /// The file.
        path: String,
        /// Its first line of text.
        first: String,
    },
    /// The pair could not be told.
    #[error("{0}")]
    Pair(String),
    /// Events the estimates need are missing.
    #[error("{0}")]
    Missing(String),
}

/// An estimate the trace could not give, or gives only as a lower bound,
/// and the events it would need.
#[derive(Debug, Clone, Serialize)]
pub struct Gap {
    /// What is not known (`kick_p_ns`).
    pub estimate: &'static str,
    /// What recording it needs.
    pub needs: String,
}

/// One trace read.
#[derive(Debug, Clone, Serialize)]
pub struct Trace {
    /// The tool that printed it: `perf script`, or `trace-cmd report or
    /// ftrace` (the two share a layout).
    pub format: &'static str,
    /// Resolution of its time stamps [ns] (1000 where it printed
    /// microseconds).
    pub resolution_ns: u64,
    /// Event lines read.
    pub events: u64,
    /// The events the estimates read, with their counts.
    pub events_used: Vec<(String, u64)>,
    /// Whether the file ended in the middle of a line (cut short).
    pub truncated: bool,
    /// The pair.
    pub pair: Pair,
    /// The estimates.
    pub estimates: Estimates,
    /// What the trace could not estimate.
    pub gaps: Vec<Gap>,
}

/// Events the estimates read.
const USED: [&str; 13] = [
    "sched_switch",
    "sched_waking",
    "sched_wakeup",
    "kvm_exit",
    "kvm_entry",
    "kvm_pio",
    "kvm_mmio",
    "kvm_fast_mmio",
    "kvm_emulate_insn",
    "kvm_userspace_exit",
    "sys_enter",
    "sys_exit",
    "sys_enter_futex",
];

/// Reads a trace and estimates the pair `naming` names (or finds it).
pub fn read(path: &Path, naming: &Naming) -> Result<Trace, TraceError> {
    let survey = survey::Survey::of(path)?;
    if survey.count("sched_switch") == 0 {
        return Err(TraceError::Missing(format!(
            "{}: no sched:sched_switch event: sleeps and wake-ups need it (perf record -e sched:sched_switch -e sched:sched_waking ...)",
            path.display()
        )));
    }
    let pair = parties::choose(&survey, naming)?;
    let estimates = estimate::estimate(path, &survey, &pair)?;
    let mut events_used: Vec<(String, u64)> = survey
        .names
        .iter()
        .filter(|(n, _)| {
            USED.contains(&n.as_str()) || n.starts_with("sys_enter_") || n.starts_with("sys_exit_")
        })
        .map(|(n, c)| (n.clone(), *c))
        .collect();
    events_used.sort();
    let gaps = gaps(&survey, &pair, &estimates);
    Ok(Trace {
        format: match survey.format {
            Some(line::Format::TraceCmd) => "trace-cmd report or ftrace",
            _ => "perf script",
        },
        resolution_ns: 10u64.pow(9 - survey.digits),
        events: survey.events,
        events_used,
        truncated: survey.unterminated,
        pair,
        estimates,
        gaps,
    })
}

fn gaps(s: &survey::Survey, pair: &Pair, e: &Estimates) -> Vec<Gap> {
    let mut out = Vec::new();
    for (i, (thread, suffix)) in [(&pair.producer, "p"), (&pair.consumer, "c")]
        .into_iter()
        .enumerate()
    {
        let side = &e.sides[i];
        let seen = s.threads.get(&thread.tid);
        let vcpu = seen.is_some_and(|t| t.kvm_writes > 0);
        if side.kick.is_none() && side.notifications > 0 {
            let needs = if vcpu {
                format!(
                    "kvm:kvm_entry on the vCPU thread {} ({} of them in the trace: kvm_pvm and some nested set-ups never emit it); without it the trace times only the part of the kick before the peer is woken (visible_{suffix}_ns)",
                    thread.tid,
                    s.count("kvm_entry")
                )
            } else {
                format!(
                    "the system calls of thread {} that notify (-e 'syscalls:sys_enter_futex' -e 'syscalls:sys_exit_futex', or the write/ioctl calls its notifier uses)",
                    thread.tid
                )
            };
            out.push(Gap {
                estimate: if suffix == "p" {
                    "kick_p_ns"
                } else {
                    "kick_c_ns"
                },
                needs,
            });
        }
        if vcpu && s.count("kvm_exit") == 0 && side.notifications > 0 {
            let peer = if suffix == "p" {
                "wake_c_ns"
            } else {
                "wake_p_ns"
            };
            let visible = if suffix == "p" {
                "visible_p_ns"
            } else {
                "visible_c_ns"
            };
            for estimate in [visible, peer] {
                out.push(Gap {
                    estimate,
                    needs: "kvm:kvm_exit: without it a guest's kick starts at its first event in the host (kvm_emulate_insn or the write), after the exit itself, so this figure is short by the exit's cost (a lower bound)".into(),
                });
            }
        }
        if vcpu && side.wake.is_some() && s.count("kvm_entry") == 0 {
            out.push(Gap {
                estimate: if suffix == "p" { "wake_p_ns" } else { "wake_c_ns" },
                needs: format!(
                    "kvm:kvm_entry: without it the wake-up ends when the vCPU thread {} runs again in the host, before its guest does (a lower bound)",
                    thread.tid
                ),
            });
        }
        if side.wake.is_none() && side.sleeps > 0 {
            out.push(Gap {
                estimate: if suffix == "p" { "wake_p_ns" } else { "wake_c_ns" },
                needs: format!(
                    "the moment thread {} runs again after its peer wakes it: sched:sched_switch recorded on every CPU (perf record -a), or the exits of the calls it sleeps in (-e 'syscalls:sys_exit_read', ..._futex, ..._ppoll)",
                    thread.tid
                ),
            });
        }
    }
    out
}
