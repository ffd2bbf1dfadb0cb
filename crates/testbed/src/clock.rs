//! Time and CPU: the TSC (calibrated against the OS clock at start-up),
//! busy work of a given length, per-thread CPU time, pinning.

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
        let end = rdtsc().wrapping_add(ticks);
        while rdtsc() < end {
            std::hint::spin_loop();
        }
    }
}

/// CPU time of the calling thread (user + system) [ns].
pub fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    u64::try_from(t.tv_sec).unwrap_or(0) * 1_000_000_000 + u64::try_from(t.tv_nsec).unwrap_or(0)
}

/// Number of CPUs this process may run on.
pub fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// Pins the calling thread to `cpu` (modulo the CPUs available). Returns
/// false if the system refused (the run goes on unpinned).
pub fn pin(cpu: usize) -> bool {
    let mut set = rustix::thread::CpuSet::new();
    set.set(cpu % cpus());
    rustix::thread::sched_setaffinity(None, &set).is_ok()
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
    fn thread_cpu_time_counts_spinning_not_sleeping() {
        let c0 = thread_cpu_ns();
        std::thread::sleep(Duration::from_millis(20));
        let slept = thread_cpu_ns() - c0;
        // Preemption steals CPU time from a spin: the best of three.
        let spun = (0..3)
            .map(|_| {
                let c1 = thread_cpu_ns();
                Tsc::get().spin_ticks(Tsc::get().ticks(20e6));
                thread_cpu_ns() - c1
            })
            .max()
            .unwrap_or(0);
        assert!(slept < 5_000_000, "sleeping cost {slept} ns of CPU");
        assert!(
            spun > 15_000_000,
            "spinning 20 ms cost only {spun} ns of CPU"
        );
    }
}
