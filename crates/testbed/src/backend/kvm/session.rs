//! One guest session: start the guest's program on its vCPU, run the host
//! side in a thread, watch both for progress, stop whatever is left and
//! collect the host's result. The pair, calibration and ping-pong all run
//! through [`Session`]; what they do on each side does not live here.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::guest::Program;
use super::vm::{GuestEnd, GuestWaits, VcpuThread, Vm};
use crate::party::{join_within, TICK};
use crate::watchdog::Stall;
use crate::TestbedError;

/// How long the host gets to finish once the guest has ended, and how long
/// stopped threads get before a join gives up.
const GRACE: Duration = Duration::from_millis(500);

/// A guest that runs, and the host's stop flag for this session.
pub(crate) struct Session<'vm> {
    vm: &'vm Vm,
    /// The running vCPU.
    pub vcpu: VcpuThread,
    /// Set when the session fails: the host side must give up.
    pub stop: Arc<AtomicBool>,
}

impl<'vm> Session<'vm> {
    /// Starts `program` on a vCPU pinned to `cpu`.
    pub(crate) fn start(vm: &'vm Vm, program: &Program, cpu: usize) -> Result<Self, TestbedError> {
        Self::start_with(vm, program, cpu, None)
    }

    /// [`Session::start`] with the waits the VMM runs for the guest.
    pub(crate) fn start_with(
        vm: &'vm Vm,
        program: &Program,
        cpu: usize,
        waits: Option<Box<dyn GuestWaits>>,
    ) -> Result<Self, TestbedError> {
        Ok(Session {
            vm,
            vcpu: vm.start_with(program, cpu, waits)?,
            stop: Arc::new(AtomicBool::new(false)),
        })
    }

    /// Runs `host` in a thread named `name` against the guest. Fails with a
    /// hang once `progress()` has not changed for `stall_limit`, when the
    /// guest ends before the host (`state()` says where the run stood), or
    /// with the host's or the guest's own error; then stops both. The host
    /// gets the stop flag (also set by [`Session::stop`]).
    pub(crate) fn run<T, P>(
        mut self,
        name: &str,
        host: impl FnOnce(&AtomicBool) -> Result<T, TestbedError> + Send + 'static,
        stall_limit: Duration,
        mut progress: impl FnMut() -> P,
        state: impl Fn() -> String,
    ) -> Result<T, TestbedError>
    where
        T: Send + 'static,
        P: PartialEq + Copy,
    {
        let stop_h = Arc::clone(&self.stop);
        let h = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || host(&stop_h))?;
        let mut stall = Stall::new(stall_limit);
        let outcome = loop {
            std::thread::sleep(TICK);
            if h.is_finished() {
                break None;
            }
            if self.vcpu.finished() {
                // The guest ended first (an error or a premature done);
                // give the host a moment to finish what was published.
                let end = self.vcpu.join_within(Duration::ZERO);
                let t = Instant::now();
                while !h.is_finished() && t.elapsed() < GRACE {
                    std::thread::sleep(Duration::from_millis(1));
                }
                break match end {
                    Err(e) => Some(e),
                    Ok(_) if h.is_finished() => None,
                    Ok(GuestEnd::Done) => Some(TestbedError::Guest(format!(
                        "said it was done after {}",
                        state()
                    ))),
                    Ok(GuestEnd::Stopped) => Some(TestbedError::Hang(format!(
                        "the guest was stopped: {}",
                        state()
                    ))),
                };
            }
            if stall.stalled(progress()) {
                break Some(TestbedError::Hang(format!(
                    "no progress for {stall_limit:?}: {}",
                    state()
                )));
            }
        };
        if let Some(e) = outcome {
            self.stop_all();
            let _ = join_within(h, GRACE, name);
            return Err(e);
        }
        let r = join_within(h, GRACE, name);
        if r.is_err() {
            self.stop_all();
            return r;
        }
        self.vcpu.join_within(stall_limit)?;
        r
    }

    /// Stops both sides: the host's waits end, the vCPU is kicked out.
    fn stop_all(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.vm.kick.write(1); // wakes a host thread blocked on kicks
        self.vcpu.stop();
    }

    /// Stops the guest before the host side has started.
    pub(crate) fn stop(mut self) {
        self.stop_all();
    }
}
