//! The first pass over a trace ([`Survey`]): which tool wrote it, which
//! events it holds, and per thread what it did (guest writes, KVM entries,
//! system calls) and whom it woke. The pair is chosen from this (the
//! parties module); nothing here is an estimate.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::event::Event;
use crate::line::{self, Format};
use crate::source::Lines;
use crate::TraceError;

/// Lines read without finding one event before a file is called foreign.
const FOREIGN_AFTER: u64 = 10_000;
/// Distinct event names kept for the summary.
const MAX_NAMES: usize = 1_000;

/// What one thread did in the trace.
#[derive(Debug, Clone, Default)]
pub struct ThreadSeen {
    /// Its name (the last one printed).
    pub comm: String,
    /// Events on it.
    pub events: u64,
    /// Guest writes to a device (a vCPU's notifications).
    pub kvm_writes: u64,
    /// `kvm_entry` events.
    pub kvm_entries: u64,
    /// System call entries.
    pub syscalls: u64,
    /// Times it was switched in (seen as `next` of a switch).
    pub switched_in: u64,
}

/// The first pass's findings.
#[derive(Debug, Clone, Default)]
pub struct Survey {
    /// The tool that printed the trace (the first event line's).
    pub format: Option<Format>,
    /// The fewest digits after the seconds' point seen (6: microsecond
    /// stamps).
    pub digits: u32,
    /// Lines read.
    pub lines: u64,
    /// Event lines.
    pub events: u64,
    /// Events per name (at most [`MAX_NAMES`] names).
    pub names: BTreeMap<String, u64>,
    /// Per thread.
    pub threads: HashMap<u32, ThreadSeen>,
    /// Wake-ups per (waker, woken).
    pub wakes: HashMap<(u32, u32), u64>,
    /// Whether any `sched_waking` was recorded (then `sched_wakeup` is
    /// not counted again).
    pub early_wakes: bool,
    /// Whether the file ended in the middle of a line.
    pub unterminated: bool,
}

impl Survey {
    /// Reads the whole file once.
    pub fn of(path: &Path) -> Result<Survey, TraceError> {
        let mut lines = Lines::open(path)?;
        let mut s = Survey {
            digits: 9,
            ..Survey::default()
        };
        let mut first_text: Option<String> = None;
        while let Some(text) = lines.next_line()? {
            s.lines += 1;
            let Some(l) = line::parse(&text) else {
                if first_text.is_none() && !text.trim().is_empty() && !text.starts_with('#') {
                    first_text = Some(text.chars().take(80).collect());
                }
                if s.events == 0 && s.lines >= FOREIGN_AFTER {
                    break;
                }
                continue;
            };
            s.events += 1;
            s.format.get_or_insert(l.format);
            s.digits = s.digits.min(l.digits);
            if let Some(n) = s.names.get_mut(l.event) {
                *n += 1;
            } else if s.names.len() < MAX_NAMES {
                s.names.insert(l.event.to_string(), 1);
            }
            let event = Event::of(&l);
            let t = s.threads.entry(l.tid).or_default();
            if t.comm != l.comm {
                l.comm.clone_into(&mut t.comm);
            }
            t.events += 1;
            match event {
                Event::KvmWrite => t.kvm_writes += 1,
                Event::KvmEntry => t.kvm_entries += 1,
                Event::SysEnter { .. } => t.syscalls += 1,
                Event::Switch { next, .. } => {
                    s.threads.entry(next).or_default().switched_in += 1;
                }
                Event::Wake { target, early } => {
                    s.early_wakes |= early;
                    *s.wakes.entry((l.tid, target)).or_default() += u64::from(early);
                    if !early {
                        // Kept apart until the end: counted only where the
                        // trace has no sched_waking.
                        *s.wakes.entry((l.tid, target | LATE)).or_default() += 1;
                    }
                }
                _ => {}
            }
        }
        s.unterminated = lines.unterminated;
        if s.events == 0 {
            return Err(TraceError::NotATrace {
                path: path.display().to_string(),
                first: first_text.unwrap_or_default(),
            });
        }
        // One count per wake-up: sched_waking where present, else
        // sched_wakeup.
        let early = s.early_wakes;
        s.wakes = s
            .wakes
            .drain()
            .filter_map(|((waker, target), n)| {
                let late = target & LATE != 0;
                (late != early && n > 0).then_some(((waker, target & !LATE), n))
            })
            .collect();
        Ok(s)
    }

    /// Wake-ups `a` gave `b` plus those `b` gave `a`.
    pub fn exchanged(&self, a: u32, b: u32) -> u64 {
        self.wakes.get(&(a, b)).copied().unwrap_or(0)
            + self.wakes.get(&(b, a)).copied().unwrap_or(0)
    }

    /// How many events of `name` the trace holds.
    pub fn count(&self, name: &str) -> u64 {
        self.names.get(name).copied().unwrap_or(0)
    }
}

/// Marks a wake-up seen only as `sched_wakeup` while the first pass runs
/// (thread ids are below 2^22 on Linux).
const LATE: u32 = 1 << 31;
