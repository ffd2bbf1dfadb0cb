//! Ctrl-C during a long simulation: the work runs on a thread of its own,
//! without the GIL, while the caller's thread waits for it and checks
//! Python's signals every [`POLL`]. A `KeyboardInterrupt` asks every
//! simulation of the process to stop ([`kicklab_sim::stop`]), waits the
//! milliseconds the work takes to notice, and is raised. What does not
//! live here: the real runs (`calibrate`, `run`), which the simulator's
//! stop does not reach; `model_array` checks signals between its points.

use std::sync::mpsc::{channel, RecvTimeoutError};
use std::time::Duration;

use pyo3::prelude::*;

/// How often the waiting thread checks for a signal.
const POLL: Duration = Duration::from_millis(50);

/// Runs `work` as above; its value, or the signal's exception.
pub(crate) fn interruptible<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    std::thread::scope(|s| {
        let (done, mut finished) = channel::<()>();
        let worker = s.spawn(move || {
            let out = work();
            let _ = done.send(());
            out
        });
        loop {
            // Disconnected: the work panicked (the join below says so).
            let waiting;
            (waiting, finished) = py.detach(move || {
                let waiting = matches!(finished.recv_timeout(POLL), Err(RecvTimeoutError::Timeout));
                (waiting, finished)
            });
            if !waiting {
                break;
            }
            if let Err(signal) = py.check_signals() {
                kicklab_sim::stop::request();
                let _ = py.detach(move || worker.join());
                kicklab_sim::stop::clear();
                return Err(signal);
            }
        }
        match worker.join() {
            Ok(out) => Ok(out),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}
