//! Time and CPU: the TSC (calibrated against the OS clock at start-up),
//! busy work of a given length (interruptible by a stop flag), per-thread
//! CPU time, pinning, and the check that a duration is representable.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Reads the time-stamp counter.
#[inline(always)]
pub fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` exists on every x86_64 CPU and reads no memory; it
        // is `unsafe` only because it is a raw intrinsic.
        unsafe { std::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static START: OnceLock<Instant> = OnceLock::new();
        u64::try_from(START.get_or_init(Instant::now).elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// The TSC rate, measured against `Instant` (CLOCK_MONOTONIC).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tsc {
    /// TSC ticks per nanosecond.
    pub ticks_per_ns: f64,
    /// Relative spread of the three calibration windows (max - min) / median.
    pub spread: f64,
}

impl Tsc {
    /// The process-wide calibration (three 20 ms windows, median), done once.
    pub fn get() -> Tsc {
        static TSC: OnceLock<Tsc> = OnceLock::new();
        *TSC.get_or_init(|| {
            let mut rates: Vec<f64> = (0..3)
                .map(|_| {
                    let (t0, c0) = (Instant::now(), rdtsc());
                    while t0.elapsed() < Duration::from_millis(20) {
                        std::hint::spin_loop();
                    }
                    let (ns, c1) = (t0.elapsed().as_nanos(), rdtsc());
                    #[allow(clippy::cast_precision_loss)]
                    let r = (c1 - c0) as f64 / ns as f64;
                    r
                })
                .collect();
            rates.sort_by(f64::total_cmp);
            Tsc {
                ticks_per_ns: rates[1],
                spread: (rates[2] - rates[0]) / rates[1],
            }
        })
    }

    /// Ticks in `ns` nanoseconds.
    #[inline]
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    pub fn ticks(&self, ns: f64) -> u64 {
        (ns * self.ticks_per_ns) as u64
    }

    /// Nanoseconds in `ticks`.
    #[inline]
    #[allow(clippy::cast_precision_loss)]
    pub fn ns(&self, ticks: u64) -> f64 {
        ticks as f64 / self.ticks_per_ns
    }

    /// Spins for `ticks` TSC ticks (busy work).
    #[inline]
    pub fn spin_ticks(&self, ticks: u64) {
        let start = rdtsc();
        while rdtsc().wrapping_sub(start) < ticks {
            std::hint::spin_loop();
        }
    }

    /// Spins for `ticks` TSC ticks unless `stop` is set: checks it every
    /// [`SPIN_CHUNK_NS`] or so. Returns false if it stopped early.
    #[inline]
    pub fn spin_ticks_or_stop(&self, ticks: u64, stop: &AtomicBool) -> bool {
        let chunk = self.ticks(SPIN_CHUNK_NS).max(1);
        let start = rdtsc();
        let mut check_at = chunk;
        loop {
            let spun = rdtsc().wrapping_sub(start);
            if spun >= ticks {
                return true;
            }
            if spun >= check_at {
                if stop.load(Ordering::Relaxed) {
                    return false;
                }
                check_at = spun.saturating_add(chunk);
            }
            std::hint::spin_loop();
        }
    }
}

/// The TSC as the clock of a strategy's decisions (`kicklab_ring::Clock`):
/// picoseconds since it was made, a TSC read and a multiply.
#[derive(Debug, Clone, Copy)]
pub struct TscClock {
    epoch: u64,
    ps_per_tick: f64,
}

impl TscClock {
    /// A clock that reads 0 now.
    pub fn new() -> TscClock {
        TscClock {
            epoch: rdtsc(),
            ps_per_tick: 1000.0 / Tsc::get().ticks_per_ns,
        }
    }

    /// `ticks` of the TSC as a duration [ps].
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    pub fn ps(&self, ticks: u64) -> u64 {
        (ticks as f64 * self.ps_per_tick) as u64
    }
}

impl Default for TscClock {
    fn default() -> TscClock {
        TscClock::new()
    }
}

impl kicklab_ring::Clock for TscClock {
    #[inline]
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    fn now_ps(&self) -> u64 {
        self.ps(rdtsc().saturating_sub(self.epoch))
    }
}

/// Busy work checks its stop flag at least this often [ns].
pub const SPIN_CHUNK_NS: f64 = 100_000.0;

/// Refuses a duration that does not fit in 64-bit nanoseconds (about 584
/// years): the testbed converts durations to TSC ticks and timeouts.
pub(crate) fn check_duration(d: Duration, what: crate::Setting) -> Result<(), crate::TestbedError> {
    u64::try_from(d.as_nanos())
        .map(|_| ())
        .map_err(|_| crate::TestbedError::limit(what, format!("{d:?} is longer than 2^64 ns")))
}

/// CPU time of the calling thread (user + system) [ns].
pub fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

/// The calling thread's CPU clock, as an id other threads of the process
/// can read with [`clock_ns`]; `CLOCK_THREAD_CPUTIME_ID` (which reads the
/// reader's own clock) if the system has none to give.
pub fn own_cpu_clock() -> libc::clockid_t {
    let mut id: libc::clockid_t = 0;
    // SAFETY: pthread_self is always valid; `id` is a valid out pointer.
    let r = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
    if r == 0 {
        id
    } else {
        libc::CLOCK_THREAD_CPUTIME_ID
    }
}

/// Reads a CPU clock [ns]; 0 once its thread has exited.
pub fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a clock id and a valid out pointer; a stale id fails, no UB.
    if unsafe { libc::clock_gettime(clock, &mut ts) } != 0 {
        return 0;
    }
    u64::try_from(ts.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(ts.tv_nsec).unwrap_or(0)
}

/// Number of CPUs this process may run on.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// Pins the calling thread to `cpu` (modulo the CPUs available). Returns
/// false if the system refused (the run goes on unpinned).
pub fn pin(cpu: usize) -> bool {
    pin_cpu(cpu).is_some()
}

/// Pins the calling thread to `cpu` (modulo the CPUs available) and
/// returns the CPU it is pinned to, or `None` if the system refused.
pub fn pin_cpu(cpu: usize) -> Option<usize> {
    let cpu = cpu % cpus();
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu);
    rustix::thread::sched_setaffinity(None, &set)
        .is_ok()
        .then_some(cpu)
}

/// The CPUs a calibration's and a pair's two threads are pinned to (as
/// [`pin_cpu`] maps them): 0 and 1.
pub const PAIR_CPUS: [usize; 2] = [0, 1];

/// What other processes did on some CPUs over a stretch of time: a mark
/// ([`OthersLoad::mark`]) read again at the end ([`OthersLoad::since`]).
/// Busy time is `/proc/stat`'s user, nice and system of those CPUs (in
/// clock ticks; interrupts, steal and idle not counted), this process's
/// own time its CPU clock (all its threads, wherever they ran: the pair's
/// are pinned to those CPUs, the rest barely run).
#[derive(Debug, Clone, Copy)]
pub struct OthersLoad {
    busy_ticks: u64,
    /// Ticks the host took those CPUs away (`/proc/stat`'s steal): on a
    /// virtual machine, its hypervisor running something else.
    steal_ticks: u64,
    own_ns: u64,
    at: std::time::Instant,
    /// Distinct CPUs watched (one on a machine of one CPU).
    watched: usize,
}

impl OthersLoad {
    /// A mark on the pair's CPUs; `None` without a readable `/proc/stat`.
    pub fn mark() -> Option<OthersLoad> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        let mut cpus: Vec<usize> = PAIR_CPUS.iter().map(|c| c % cpus()).collect();
        cpus.dedup();
        Some(OthersLoad {
            busy_ticks: busy_ticks(&stat, &cpus)?,
            steal_ticks: steal_ticks(&stat, &cpus).unwrap_or(0),
            own_ns: process_cpu_ns(),
            at: std::time::Instant::now(),
            watched: cpus.len(),
        })
    }

    /// The CPU other processes took on those CPUs since this mark, in
    /// CPUs (busy time less this process's, over the wall time; at least
    /// 0); `None` without a readable `/proc/stat` or clock tick.
    pub fn since(&self) -> Option<f64> {
        self.measure().map(|m| m.others)
    }

    /// The CPU other processes and the machine's own host (a virtual
    /// machine's steal time) surely took from those CPUs since this mark,
    /// in CPUs: each share less what sampling by clock ticks can add to it
    /// (one tick per CPU watched, over the wall time; for a run of 0.1 s at
    /// 100 ticks a second on two CPUs, 0.2 CPU), at least 0; `/proc/stat`
    /// read once. The host's is 0 on a machine that is no guest.
    pub fn surely(&self) -> Option<(f64, f64)> {
        self.measure()
            .map(|m| ((m.others - m.tick).max(0.0), (m.stolen - m.tick).max(0.0)))
    }

    /// The shares since the mark, and what one tick per watched CPU is of
    /// them.
    #[allow(clippy::cast_precision_loss)]
    fn measure(&self) -> Option<Shares> {
        let now = OthersLoad::mark()?;
        // SAFETY: sysconf takes an integer and touches no memory of ours.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        let wall_s = now.at.duration_since(self.at).as_secs_f64();
        if hz <= 0 || wall_s <= 0.0 {
            return None;
        }
        let hz = hz as f64;
        let busy_s = now.busy_ticks.saturating_sub(self.busy_ticks) as f64 / hz;
        let own_s = now.own_ns.saturating_sub(self.own_ns) as f64 / 1e9;
        let stolen_s = now.steal_ticks.saturating_sub(self.steal_ticks) as f64 / hz;
        Some(Shares {
            others: ((busy_s - own_s) / wall_s).max(0.0),
            stolen: stolen_s / wall_s,
            tick: self.watched as f64 / (hz * wall_s),
        })
    }
}

/// What [`OthersLoad::measure`] finds, in CPUs.
struct Shares {
    others: f64,
    stolen: f64,
    tick: f64,
}

/// The steal ticks of `cpus` in `/proc/stat`'s text (the eighth value of
/// a CPU's line); `None` if a CPU's line is missing or has none.
pub fn steal_ticks(stat: &str, cpus: &[usize]) -> Option<u64> {
    ticks(stat, cpus, 7..8)
}

/// The user, nice and system ticks of `cpus` in `/proc/stat`'s text;
/// `None` if a CPU's line is missing or malformed.
pub fn busy_ticks(stat: &str, cpus: &[usize]) -> Option<u64> {
    ticks(stat, cpus, 0..3)
}

/// The sum of the values at `fields` (counted from the first after the
/// name: user 0, nice 1, system 2, idle 3, iowait 4, irq 5, softirq 6,
/// steal 7) of each of `cpus` (each once) in `/proc/stat`'s text; `None`
/// if a CPU's line is missing, short or malformed.
fn ticks(stat: &str, cpus: &[usize], fields: std::ops::Range<usize>) -> Option<u64> {
    let mut total = 0u64;
    let mut seen = Vec::new();
    for &cpu in cpus {
        if seen.contains(&cpu) {
            continue;
        }
        seen.push(cpu);
        let name = format!("cpu{cpu}");
        let line = stat
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name.as_str()))?;
        let f: Vec<u64> = line
            .split_whitespace()
            .skip(1 + fields.start)
            .take(fields.len())
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?;
        if f.len() < fields.len() {
            return None;
        }
        total = total.saturating_add(f.iter().sum());
    }
    Some(total)
}

/// CPU time of this process, all its threads (user + system) [ns].
pub fn process_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_work_lasts_what_it_should() {
        let tsc = Tsc::get();
        assert!(tsc.ticks_per_ns > 0.1 && tsc.ticks_per_ns < 10.0, "{tsc:?}");
        // 2 ms of spinning measured by the OS clock. A preemption can only
        // lengthen a try, so the shortest of five is the honest one; it must
        // be within 5% below and 30% above (the check is that the TSC rate
        // is not off by a factor, not a timing target).
        let ms = (0..5)
            .map(|_| {
                let t = Instant::now();
                tsc.spin_ticks(tsc.ticks(2e6));
                t.elapsed().as_secs_f64() * 1e3
            })
            .fold(f64::MAX, f64::min);
        assert!((1.9..2.6).contains(&ms), "{ms} ms");
    }

    #[test]
    fn busy_work_stops_when_asked() {
        let tsc = Tsc::get();
        let stop = AtomicBool::new(true);
        let t = Instant::now();
        // An hour of work, stopped at the first check.
        assert!(!tsc.spin_ticks_or_stop(tsc.ticks(3.6e12), &stop));
        assert!(t.elapsed() < Duration::from_millis(50), "{:?}", t.elapsed());
        stop.store(false, Ordering::Relaxed);
        assert!(tsc.spin_ticks_or_stop(tsc.ticks(1e6), &stop));
        // Huge tick counts do not wrap into "already done".
        assert!(!tsc.spin_ticks_or_stop(u64::MAX, &AtomicBool::new(true)));
    }

    #[test]
    fn huge_durations_are_refused_not_panicked_on() {
        assert!(check_duration(Duration::from_secs(3600), crate::Setting::Work).is_ok());
        let e = check_duration(Duration::MAX, crate::Setting::Work).unwrap_err();
        assert!(matches!(
            e,
            crate::TestbedError::Limit {
                what: crate::Setting::Work,
                ..
            }
        ));
    }

    #[test]
    fn thread_cpu_time_counts_spinning_not_sleeping() {
        let c0 = thread_cpu_ns();
        std::thread::sleep(Duration::from_millis(20));
        let slept = thread_cpu_ns() - c0;
        // Spinning accrues CPU time: 10 ms of it within 10 s of spinning,
        // however much a shared machine preempts this thread.
        let c1 = thread_cpu_ns();
        let t1 = std::time::Instant::now();
        while thread_cpu_ns() - c1 < 10_000_000 && t1.elapsed() < Duration::from_secs(10) {
            Tsc::get().spin_ticks(Tsc::get().ticks(1e6));
        }
        let spun = thread_cpu_ns() - c1;
        assert!(slept < 5_000_000, "sleeping cost {slept} ns of CPU");
        assert!(
            spun >= 10_000_000,
            "spinning for 10 s accrued only {spun} ns of CPU"
        );
    }

    #[test]
    fn busy_ticks_sums_user_nice_and_system_of_the_cpus_asked() {
        let stat = "cpu  9 9 9 9 9 9 9 9 9 9\ncpu0 1 2 3 100 5 6 7 8 0 0\ncpu1 10 20 30 100 0 0 0 0 0 0\ncpu10 1000 0 0 0 0 0 0 0 0 0\nintr 1 2\n";
        assert_eq!(busy_ticks(stat, &[0]), Some(6));
        assert_eq!(busy_ticks(stat, &[0, 1]), Some(66));
        assert_eq!(busy_ticks(stat, &[1, 1]), Some(60), "a CPU counted once");
        assert_eq!(busy_ticks(stat, &[2]), None, "no such CPU");
        assert_eq!(busy_ticks("cpu0 1 x 3\n", &[0]), None);
    }

    #[test]
    fn steal_ticks_are_the_eighth_value_of_the_cpus_asked() {
        let stat = "cpu  9 9 9 9 9 9 9 9 9 9\ncpu0 1 2 3 100 5 6 7 8 0 0\ncpu1 10 20 30 100 0 0 0 40 0 0\nintr 1 2\n";
        assert_eq!(steal_ticks(stat, &[0]), Some(8));
        assert_eq!(
            steal_ticks(stat, &[0, 1, 1]),
            Some(48),
            "a CPU counted once"
        );
        assert_eq!(steal_ticks(stat, &[2]), None, "no such CPU");
        assert_eq!(
            steal_ticks("cpu0 1 2 3 4\n", &[0]),
            None,
            "an old kernel's line"
        );
        if let Some(m) = OthersLoad::mark() {
            std::thread::sleep(std::time::Duration::from_millis(50));
            let (_, stolen) = m.surely().expect("readable once marked");
            assert!((0.0..=2.0).contains(&stolen), "{stolen}");
        }
    }

    #[test]
    fn others_load_is_a_share_of_cpus_at_least_0() {
        let Some(m) = OthersLoad::mark() else {
            return;
        };
        std::thread::sleep(std::time::Duration::from_millis(200));
        let o = m.since().expect("readable once marked");
        // At most the two CPUs watched, and a tick either way.
        assert!((0.0..=2.2).contains(&o), "{o}");
    }
}
