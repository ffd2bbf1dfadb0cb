//! [`Stall`]: the watchdog's judgement of a run that has stopped moving.
//! A run whose counters have not moved for the stall limit is a hang
//! only if its parties had the CPU: each party's thread says its id
//! ([`Tids`]), and the watchdog reads what the scheduler counted for it
//! (`/proc/self/task/TID/schedstat`: time on a CPU, time runnable but
//! waiting for one). A party that waited for a CPU for most of the window
//! was starved by other work on the machine: the run goes on (its
//! `others_cpu` flags it disturbed) until starvation alone has lasted
//! [`MAX_STARVED_LIMITS`] stall limits. A party that ran, or slept, with
//! no progress is a hang, and the error says what each did.
//! What is not here: the loops that feed it (each backend's), progress
//! counters (the parties').

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How many stall limits of starvation a run may wait through before the
/// watchdog gives up on it (as starved, not hung).
pub(crate) const MAX_STARVED_LIMITS: u32 = 30;

/// The thread id of each party (0 until it says).
#[derive(Debug, Default)]
pub(crate) struct Tids(Vec<AtomicI32>);

impl Tids {
    /// Room for `n` parties.
    pub(crate) fn new(n: usize) -> Arc<Tids> {
        Arc::new(Tids((0..n).map(|_| AtomicI32::new(0)).collect()))
    }

    /// Called by party `i`'s own thread.
    pub(crate) fn set_mine(&self, i: usize) {
        if let Some(t) = self.0.get(i) {
            t.store(
                rustix::thread::gettid().as_raw_nonzero().get(),
                Ordering::Relaxed,
            );
        }
    }

    fn get(&self) -> Vec<i32> {
        self.0.iter().map(|t| t.load(Ordering::Relaxed)).collect()
    }
}

/// What the scheduler counted for a thread: time on a CPU and time
/// runnable but waiting for one [ns], and its state letter (`R`, `S`, ...).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Sched {
    on_cpu_ns: u64,
    waiting_ns: u64,
    state: char,
}

/// `/proc/self/task/TID/schedstat` and the state from `.../stat`; `None`
/// where the kernel keeps no such file (no schedstats) or the thread ended.
pub(crate) fn sched(tid: i32) -> Option<Sched> {
    if tid <= 0 {
        return None;
    }
    let text = std::fs::read_to_string(format!("/proc/self/task/{tid}/schedstat")).ok()?;
    let mut f = text.split_whitespace().map(|v| v.parse::<u64>().ok());
    let (on_cpu_ns, waiting_ns) = (f.next()??, f.next()??);
    let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next())
        .unwrap_or('?');
    Some(Sched {
        on_cpu_ns,
        waiting_ns,
        state,
    })
}

/// Progress watchdog: fed a snapshot of the run's counters now and then,
/// says when they have not moved for longer than the stall limit while
/// the parties had the CPU (see the module doc).
pub(crate) struct Stall<T> {
    limit: Duration,
    last: Option<T>,
    since: Instant,
    tids: Option<(Arc<Tids>, Vec<&'static str>)>,
    base: Vec<Option<Sched>>,
    starved: Duration,
    gave_up_starved: bool,
}

impl<T: PartialEq + Copy> Stall<T> {
    /// A watchdog on progress alone (wall time).
    pub(crate) fn new(limit: Duration) -> Stall<T> {
        Stall {
            limit,
            last: None,
            since: Instant::now(),
            tids: None,
            base: Vec::new(),
            starved: Duration::ZERO,
            gave_up_starved: false,
        }
    }

    /// A watchdog that also reads the parties' scheduler counts: `names`
    /// (`"P"`, `"C"`) in the order of `tids`.
    pub(crate) fn watching(limit: Duration, tids: Arc<Tids>, names: &[&'static str]) -> Stall<T> {
        Stall {
            tids: Some((tids, names.to_vec())),
            ..Stall::new(limit)
        }
    }

    fn read(&self) -> Vec<Option<Sched>> {
        self.tids
            .as_ref()
            .map(|(t, _)| t.get().into_iter().map(sched).collect())
            .unwrap_or_default()
    }

    /// Whether `now` is the same as for longer than the limit with the
    /// parties on their CPUs (or asleep): a hang.
    pub(crate) fn stalled(&mut self, now: T) -> bool {
        if self.last != Some(now) {
            self.last = Some(now);
            self.since = Instant::now();
            self.base = self.read();
            return false;
        }
        let waited = self.since.elapsed();
        if waited <= self.limit {
            return false;
        }
        let stats = self.read();
        // A party that had not said its id at the baseline counts from its
        // start (the counters are cumulative). Starved: it waited for a
        // CPU at least half the window and ran less than half of it.
        let starved = stats.iter().enumerate().any(|(i, now)| {
            let Some(n) = now else { return false };
            let b = self.base.get(i).copied().flatten().unwrap_or(Sched {
                on_cpu_ns: 0,
                waiting_ns: 0,
                state: '?',
            });
            let wait = Duration::from_nanos(n.waiting_ns.saturating_sub(b.waiting_ns));
            let ran = Duration::from_nanos(n.on_cpu_ns.saturating_sub(b.on_cpu_ns));
            wait * 2 >= waited && ran * 2 < waited
        });
        if starved {
            self.starved += waited;
            if self.starved < self.limit * MAX_STARVED_LIMITS {
                self.since = Instant::now();
                self.base = stats;
                return false;
            }
            self.gave_up_starved = true;
        }
        true
    }

    /// Time judged starved so far (runnable parties kept off a CPU).
    #[cfg(test)]
    pub(crate) fn starved(&self) -> Duration {
        self.starved
    }

    /// What each party did while nothing moved, for the error: `"P ran
    /// 1.95 s on its CPU and waited 0.01 s for one (state R)"`, and
    /// whether the watchdog gave up on a starved run rather than a hung
    /// one. Empty without thread ids.
    pub(crate) fn account(&self) -> String {
        let Some((_, names)) = &self.tids else {
            return String::new();
        };
        let now = self.read();
        let parts: Vec<String> = names
            .iter()
            .zip(now.iter().zip(&self.base))
            .map(|(name, (n, b))| match (n, b) {
                (Some(n), Some(b)) => format!(
                    "{name} ran {:.2} s on its CPU and waited {:.2} s for one (state {})",
                    n.on_cpu_ns.saturating_sub(b.on_cpu_ns) as f64 * 1e-9,
                    n.waiting_ns.saturating_sub(b.waiting_ns) as f64 * 1e-9,
                    n.state
                ),
                (Some(n), None) => format!("{name} (state {})", n.state),
                _ => format!("{name} (no scheduler counts)"),
            })
            .collect();
        if self.gave_up_starved {
            format!(
                "starved, not hung: runnable parties waited for a CPU for {:.1} s in all \
                 (other work on the machine); last window: {}",
                self.starved.as_secs_f64(),
                parts.join("; ")
            )
        } else {
            parts.join("; ")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stall_fires_only_without_progress() {
        let mut s = Stall::new(Duration::from_millis(30));
        assert!(!s.stalled(1));
        for i in 2..6 {
            std::thread::sleep(Duration::from_millis(15));
            assert!(!s.stalled(i), "it moved");
        }
        std::thread::sleep(Duration::from_millis(40));
        assert!(s.stalled(5));
    }

    #[test]
    fn a_sleeping_party_without_progress_is_a_hang_named_with_its_state() {
        let tids = Tids::new(1);
        let t2 = Arc::clone(&tids);
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            t2.set_mine(0);
            let _ = rx.recv();
        });
        while tids.get()[0] == 0 {
            std::thread::yield_now();
        }
        let mut s = Stall::watching(Duration::from_millis(50), tids, &["C"]);
        assert!(!s.stalled(7));
        std::thread::sleep(Duration::from_millis(80));
        if sched(std::process::id() as i32).is_none() {
            eprintln!("no /proc/self/task/*/schedstat here: the state check skips");
            drop(tx);
            h.join().unwrap();
            return;
        }
        assert!(s.stalled(7), "asleep with nothing moving: a hang");
        let account = s.account();
        assert!(account.starts_with("C ran 0.00 s"), "{account}");
        assert!(account.contains("state S"), "{account}");
        drop(tx);
        h.join().unwrap();
    }

    #[test]
    fn a_party_kept_off_its_cpu_is_starved_not_hung() {
        // Two threads pinned to one CPU with the party: it waits for the
        // CPU most of the time.
        let cpu = 0;
        let tids = Tids::new(1);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut hogs = Vec::new();
        for _ in 0..3 {
            let stop = Arc::clone(&stop);
            hogs.push(std::thread::spawn(move || {
                crate::clock::pin(cpu);
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            }));
        }
        let t2 = Arc::clone(&tids);
        let stop2 = Arc::clone(&stop);
        let party = std::thread::spawn(move || {
            crate::clock::pin(cpu);
            t2.set_mine(0);
            while !stop2.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        while tids.get()[0] == 0 {
            std::thread::yield_now();
        }
        let mut s = Stall::watching(Duration::from_millis(100), Arc::clone(&tids), &["P"]);
        assert!(!s.stalled(1));
        std::thread::sleep(Duration::from_millis(250));
        let have = sched(tids.get()[0]).is_some();
        let stalled = s.stalled(1);
        stop.store(true, Ordering::Relaxed);
        party.join().unwrap();
        for h in hogs {
            h.join().unwrap();
        }
        if !have {
            eprintln!("no /proc/self/task/*/schedstat here: the starvation check skips");
            return;
        }
        assert!(
            !stalled,
            "a party that waited 3/4 of the time for its CPU is starved"
        );
        assert!(s.starved() > Duration::ZERO);
    }
}
