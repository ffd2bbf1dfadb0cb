//! [`Progress`]: how a long experiment tells its caller where it is.

/// Receives progress from a long experiment. The binary draws bars; a
/// library caller may ignore it ([`Silent`]).
pub trait Progress: Sync {
    /// A stage of `len` steps named `what` begins.
    fn start(&self, what: &str, len: u64);
    /// One step of the current stage is done (may be called from any thread).
    fn step(&self);
    /// The current stage is over.
    fn finish(&self);
    /// A line worth telling the user (a calibration starting, a warning).
    fn note(&self, line: &str);
}

/// Progress that goes nowhere.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {
    fn start(&self, _: &str, _: u64) {}
    fn step(&self) {}
    fn finish(&self) {}
    fn note(&self, _: &str) {}
}

/// Runs `work` and, while it runs, notes every `every` how long it has
/// taken so far (`"calibrating kvm: 10 s so far ..."`): a step of a long
/// experiment that has no steps of its own to count still shows that it
/// moves.
pub fn with_heartbeat<T>(
    progress: &dyn Progress,
    what: &str,
    every: std::time::Duration,
    work: impl FnOnce() -> T,
) -> T {
    let done = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|s| {
        // Where no thread can be had for it (a limit on processes), the
        // work runs without its heartbeat (and fails there if it needs
        // threads of its own).
        let _ = std::thread::Builder::new().spawn_scoped(s, || {
            let start = std::time::Instant::now();
            let mut next = every;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(50));
                if start.elapsed() >= next {
                    progress.note(&format!("{what}: {} s so far ...", next.as_secs()));
                    next += every;
                }
            }
        });
        let out = work();
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        out
    })
}

/// Starts the pool of threads the studies compute on (rayon's, a thread
/// per CPU): where the machine does not grant them (a limit on processes
/// or memory), the reason in one line, rather than a panic at a study's
/// first parallel step.
///
/// # Errors
///
/// Why the threads could not be had.
pub fn start_threads() -> Result<(), String> {
    rayon::ThreadPoolBuilder::new().build_global().map_err(|e| {
        format!(
            "cannot start the threads kicklab computes on ({e}): a limit on processes or memory leaves it too few"
        )
    })
}
