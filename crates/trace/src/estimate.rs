//! The second pass: the pair's notifications, wake-ups, sleeps and busy
//! time, read from its events ([`Estimates`]). The rules, per party X and
//! its peer Y (`docs/trace.md` has them with the events each needs):
//!
//! - **A notification** is a guest's write to a device (`kvm_pio`
//!   `pio_write`, `kvm_mmio` write, `kvm_fast_mmio`), a `FUTEX_WAKE`
//!   call, or a system call during which X woke Y; where X has no exits
//!   or calls in the trace, a wake-up of Y alone. It starts at the exit's
//!   `kvm_exit` (without one, its first event: `kvm_emulate_insn` or the
//!   write) or at the call's `sys_enter`.
//! - **Its cost** (N) ends at the `kvm_entry` back into the guest or the
//!   call's `sys_exit`; without `kvm_entry` a guest's cost is not known.
//! - **Its visibility** (V) is from its start to X's wake-up of Y.
//! - **A wake-up** (R = V + S) runs from the start of the notification
//!   that woke a sleeping Y to Y running: the switch into Y, or Y's first
//!   `sys_exit` or `kvm_entry` where the switch was not recorded.
//! - **A sleep** is a switch away from X in a sleep state (not R).
//! - **Busy time** is the window less X's time off the CPU: from a switch
//!   away to the next sign X runs.
//!
//! The window runs from the first notification between the two to the
//! last; events outside it count nothing.

use kicklab_model::{Party, Stat};
use serde::Serialize;

use crate::event::Event;
use crate::line;
use crate::parties::Pair;
use crate::source::Lines;
use crate::survey::Survey;
use crate::TraceError;

/// Marks a sleeper woken by a thread other than its peer.
const WOKEN_BY_OTHER: u64 = u64::MAX;

/// Samples kept per cost (a bounded reservoir: the first ones).
const MAX_SAMPLES: usize = 1 << 20;

/// Spans kept per party for a picture of the pair: the first of the window.
const MAX_SPANS: usize = 4096;

/// What a party was doing over a stretch of the trace, where the trace
/// says: notifying its peer, asleep, or runnable but off its CPU. The
/// rest of the window it ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanKind {
    /// A notification, from its start to the call's or exit's end.
    Kick,
    /// Asleep: switched away in a sleep state, until switched in.
    Sleep,
    /// Preempted: switched away runnable, until switched in.
    Off,
}

/// One stretch of one party's time [ns, the trace's clock].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// What it was.
    pub kind: SpanKind,
    /// From, to [ns].
    pub from_ns: u64,
    /// See `from_ns`.
    pub to_ns: u64,
}

/// What the trace shows of one party.
#[derive(Debug, Clone, Serialize)]
pub struct Side {
    /// Notifications it sent its peer in the window.
    pub notifications: u64,
    /// Times it went to sleep in the window.
    pub sleeps: u64,
    /// Its time on the CPU in the window [ns].
    pub busy_ns: f64,
    /// Its notification's cost N (`None` where the trace cannot time it).
    pub kick: Option<Stat>,
    /// Its notification's visibility V: from its start to the peer made
    /// runnable.
    pub visible: Option<Stat>,
    /// Its wake-up R: from the start of the peer's notification to it
    /// running after a sleep.
    pub wake: Option<Stat>,
}

/// The pair's costs and counts from one trace.
#[derive(Debug, Clone, Serialize)]
pub struct Estimates {
    /// From the first notification between the two to the last [ns].
    pub window_ns: f64,
    /// P, then C.
    pub sides: [Side; 2],
    /// The first spans of P's and C's time in the window (at most a few
    /// thousand each), for a picture of the pair.
    #[serde(skip)]
    pub spans: [Vec<Span>; 2],
}

#[derive(Default)]
struct State {
    tid: u32,
    /// A vCPU thread: its system calls (KVM_RUN) are not notifications.
    vcpu: bool,
    /// In a futex wait call.
    waiting: bool,
    /// Start of the exit in progress (a vCPU).
    exit_start: Option<u64>,
    /// The exit in progress is a notification.
    exit_kick: bool,
    /// The last event was a `kvm_emulate_insn` at this time (no
    /// `kvm_exit` recorded: the exit's first sign).
    emulate_at: Option<u64>,
    /// Start of the system call in progress.
    call_start: Option<u64>,
    /// The call in progress is a notification.
    call_kick: bool,
    /// Start of the notification in progress, once counted.
    kick_start: Option<u64>,
    /// Asleep since (switched away in a sleep state).
    asleep_since: Option<u64>,
    /// Preempted since.
    preempted_since: Option<u64>,
    /// Start of the peer's notification that woke it.
    woken_by_kick: Option<u64>,
    notifications: u64,
    sleeps: u64,
    off_ns: u64,
    kicks: Vec<f64>,
    visible: Vec<f64>,
    wakes: Vec<f64>,
    /// Counts at the last notification of the pair (the window's end).
    at_last: (u64, u64, u64),
    spans: Vec<Span>,
}

fn keep(v: &mut Vec<f64>, x: u64) {
    if v.len() < MAX_SAMPLES {
        #[allow(clippy::cast_precision_loss)]
        v.push(x as f64);
    }
}

impl State {
    fn span(&mut self, kind: SpanKind, from_ns: u64, to_ns: u64) {
        if self.spans.len() < MAX_SPANS && to_ns > from_ns {
            self.spans.push(Span {
                kind,
                from_ns,
                to_ns,
            });
        }
    }

    /// X runs at `t`; `exact`: the event marks the moment it resumed
    /// (a switch in, a call's or an exit's end).
    fn runs(&mut self, t: u64, exact: bool) {
        if let Some(since) = self.asleep_since.take() {
            self.span(SpanKind::Sleep, since, t);
            self.off_ns += t.saturating_sub(since);
            match self.woken_by_kick {
                Some(k) if exact && k != WOKEN_BY_OTHER => {
                    keep(&mut self.wakes, t.saturating_sub(k))
                }
                _ => {}
            }
        }
        self.woken_by_kick = None;
        if let Some(since) = self.preempted_since.take() {
            self.span(SpanKind::Off, since, t);
            self.off_ns += t.saturating_sub(since);
        }
    }

    /// Off-CPU time up to `t`, counting a sleep or preemption in progress.
    fn off_until(&self, t: u64) -> u64 {
        let open = self
            .asleep_since
            .or(self.preempted_since)
            .map_or(0, |s| t.saturating_sub(s));
        self.off_ns + open
    }

    /// Whether a notification now would wake it.
    fn waits(&self) -> bool {
        self.asleep_since.is_some() || self.waiting
    }

    fn count_kick(&mut self, start: u64) {
        if self.kick_start.is_none() {
            self.kick_start = Some(start);
            self.notifications += 1;
        }
    }
}

/// Reads the pair's events (the second pass over the file).
pub fn estimate(
    path: &std::path::Path,
    survey: &Survey,
    pair: &Pair,
) -> Result<Estimates, TraceError> {
    let mut lines = Lines::open(path)?;
    let mut st = [
        State {
            tid: pair.producer.tid,
            ..State::default()
        },
        State {
            tid: pair.consumer.tid,
            ..State::default()
        },
    ];
    for s in &mut st {
        s.vcpu = survey.threads.get(&s.tid).is_some_and(|t| t.kvm_writes > 0);
    }
    let has_entry = |s: &State| {
        survey
            .threads
            .get(&s.tid)
            .is_some_and(|t| t.kvm_entries > 0)
    };
    let entries = [has_entry(&st[0]), has_entry(&st[1])];
    let early = survey.early_wakes;
    let mut first: Option<u64> = None;
    let mut last = 0u64;
    while let Some(text) = lines.next_line()? {
        let Some(l) = line::parse(&text) else {
            continue;
        };
        let event = Event::of(&l);
        let t = l.t_ns;
        // Events that concern a party without being on its thread.
        match event {
            Event::Switch { next, .. } => {
                if let Some(x) = st.iter_mut().find(|s| s.tid == next) {
                    x.runs(t, true);
                }
            }
            Event::Wake { target, .. } if first.is_some() && st.iter().all(|s| s.tid != l.tid) => {
                if let Some(x) = st.iter_mut().find(|s| s.tid == target) {
                    // Woken by someone other than its peer: not a wake-up
                    // the model knows.
                    if x.asleep_since.is_some() && x.woken_by_kick.is_none() {
                        x.woken_by_kick = Some(WOKEN_BY_OTHER);
                    }
                }
            }
            _ => {}
        }
        let Some(i) = st.iter().position(|s| s.tid == l.tid) else {
            continue;
        };
        let (me, peer) = if i == 0 {
            let (a, b) = st.split_at_mut(1);
            (&mut a[0], &mut b[0])
        } else {
            let (a, b) = st.split_at_mut(1);
            (&mut b[0], &mut a[0])
        };
        let mut notified = false;
        match event {
            Event::Switch { sleeping, .. } => {
                if sleeping {
                    // A futex wait was counted when it began.
                    if !me.waiting {
                        me.sleeps += u64::from(first.is_some());
                        me.woken_by_kick = None;
                    }
                    me.asleep_since = Some(t);
                } else {
                    me.preempted_since = Some(t);
                }
                continue;
            }
            Event::Wake { target, early: e } if target == peer.tid && e == early => {
                let call = me.call_start.filter(|_| !me.vcpu);
                let start = me
                    .exit_start
                    .filter(|_| me.exit_kick)
                    .or(call)
                    .or(me.emulate_at)
                    .unwrap_or(t);
                if me.exit_start.is_some() && !me.exit_kick {
                    me.exit_kick = true;
                }
                if call.is_some() {
                    me.call_kick = true;
                }
                me.count_kick(start);
                keep(&mut me.visible, t.saturating_sub(start));
                if peer.waits() && peer.woken_by_kick.is_none() {
                    peer.woken_by_kick = Some(start);
                }
                notified = true;
                if me.exit_start.is_none() && call.is_none() {
                    // A wake-up with no call or exit around it: its cost
                    // is not in the trace.
                    me.kick_start = None;
                }
            }
            Event::Wake { .. } | Event::Other => {}
            Event::KvmExit => {
                me.exit_start = Some(t);
                me.exit_kick = false;
                me.kick_start = None;
            }
            Event::KvmInExit => {
                if l.event == "kvm_emulate_insn" && !entries[i] {
                    // Without kvm_entry each exit is known by its first
                    // event: an emulated instruction starts a new one.
                    me.exit_start = None;
                    me.exit_kick = false;
                    me.kick_start = None;
                    me.emulate_at = Some(t);
                }
            }
            Event::KvmWrite => {
                if !entries[i] {
                    me.exit_start = Some(me.emulate_at.unwrap_or(t));
                    me.kick_start = None;
                }
                let start = me.exit_start.unwrap_or(t);
                me.exit_kick = true;
                me.count_kick(start);
                notified = true;
            }
            Event::KvmEntry => {
                if let (Some(k), true) = (me.kick_start, me.exit_kick) {
                    keep(&mut me.kicks, t.saturating_sub(k));
                    me.span(SpanKind::Kick, k, t);
                }
                me.exit_start = None;
                me.exit_kick = false;
                me.kick_start = None;
                me.emulate_at = None;
                me.runs(t, true);
                continue;
            }
            Event::SysEnter {
                futex_wake,
                futex_wait,
            } => {
                me.call_start = Some(t);
                me.call_kick = futex_wake && !me.vcpu;
                me.kick_start = None;
                if me.call_kick {
                    me.count_kick(t);
                    if peer.waits() && peer.woken_by_kick.is_none() {
                        peer.woken_by_kick = Some(t);
                    }
                    notified = true;
                }
                if futex_wait {
                    // A wait is a sleep, as the pair counts it, even where
                    // the futex had changed and the call returned at once.
                    me.waiting = true;
                    me.woken_by_kick = None;
                    if first.is_some() {
                        me.sleeps += 1;
                    }
                }
            }
            Event::SysExit => {
                if let (Some(s), true) = (me.call_start, me.call_kick) {
                    keep(&mut me.kicks, t.saturating_sub(s));
                    me.span(SpanKind::Kick, s, t);
                }
                if me.waiting && me.asleep_since.is_none() {
                    // Woken before it slept: the wake-up is the call's end.
                    match me.woken_by_kick.take() {
                        Some(k) if k != WOKEN_BY_OTHER => keep(&mut me.wakes, t.saturating_sub(k)),
                        _ => {}
                    }
                }
                me.waiting = false;
                me.call_start = None;
                me.call_kick = false;
                me.kick_start = None;
                me.runs(t, true);
                continue;
            }
        }
        if !matches!(event, Event::KvmInExit | Event::Wake { .. }) {
            me.emulate_at = None;
        }
        // Without kvm_entry, a guest's exit ends at its first event that
        // is not part of it.
        if !entries[i]
            && matches!(event, Event::Other | Event::SysEnter { .. })
            && me.exit_start.is_some()
        {
            me.exit_start = None;
            me.exit_kick = false;
            if me.call_start.is_none() {
                me.kick_start = None;
            }
        }
        me.runs(t, false);
        if notified {
            if first.is_none() {
                first = Some(t);
                // Counting starts here: drop what came before.
                for s in [&mut *me, &mut *peer] {
                    // A sleep or preemption in progress counts from here.
                    s.asleep_since = s.asleep_since.map(|_| t);
                    s.preempted_since = s.preempted_since.map(|_| t);
                    s.notifications = u64::from(s.tid == l.tid);
                    s.sleeps = 0;
                    s.off_ns = 0;
                    s.kicks.clear();
                    s.visible.clear();
                    s.wakes.clear();
                    s.spans.clear();
                }
            }
            last = t;
            for s in [&mut *me, &mut *peer] {
                s.at_last = (s.notifications, s.sleeps, s.off_until(t));
            }
        }
    }
    let Some(first) = first else {
        return Err(TraceError::Missing(format!(
            "{} ({}) and {} ({}) exchanged no notification: the trace needs the guest's exits (kvm:kvm_pio, kvm:kvm_mmio or kvm:kvm_fast_mmio) or wake-ups (sched:sched_waking)",
            pair.producer.tid, pair.producer.comm, pair.consumer.tid, pair.consumer.comm
        )));
    };
    #[allow(clippy::cast_precision_loss)]
    let window_ns = last.saturating_sub(first) as f64;
    if window_ns <= 0.0 {
        return Err(TraceError::Missing(
            "the pair notified each other once: a trace needs two notifications or more to have a window".into(),
        ));
    }
    let side = |s: &State| {
        let stat = |v: &Vec<f64>| (!v.is_empty()).then(|| Stat::of(v.clone()));
        #[allow(clippy::cast_precision_loss)]
        Side {
            notifications: s.at_last.0,
            sleeps: s.at_last.1,
            busy_ns: (window_ns - s.at_last.2 as f64).max(0.0),
            kick: stat(&s.kicks),
            visible: stat(&s.visible),
            wake: stat(&s.wakes),
        }
    };
    let [p, c] = st;
    Ok(Estimates {
        window_ns,
        sides: [side(&p), side(&c)],
        spans: [p.spans, c.spans],
    })
}

impl Estimates {
    /// One party's side.
    pub fn side(&self, p: Party) -> &Side {
        match p {
            Party::P => &self.sides[0],
            Party::C => &self.sides[1],
        }
    }
}
