//! Request/response ("message passing", van Riel's KVM Forum 2013 study):
//! a requester on the host sends request i and waits for response i; the
//! responder (a KVM guest, or a thread) does a little work per request and
//! idles in between, per an idle strategy. Each side works `work` per
//! message, so the responder idles about that long each round: short idle
//! periods, as in van Riel's reader/writer threads. What it measures is the
//! cost of the responder's running -> idle -> running transitions.
//!
//! What lives here: the idle strategies ([`Idle`]), the thread version and
//! the dispatch ([`pingpong`]); the guest side is `kvm::pingpong`.

use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kicklab_model::parse_duration_ns;
use kicklab_ring::{Notifier, NotifierKind};
use serde::Serialize;

use crate::clock::{pin, rdtsc, thread_cpu_ns, Tsc};
use crate::{Backend, TestbedError};

/// How the responder idles between requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Idle {
    /// Halt at once (KVM: the guest exits to the VMM, whose vCPU thread
    /// sleeps until woken). Threads: block at once.
    Halt,
    /// KVM only: halt, and the host polls this long for a wake-up before
    /// its vCPU thread sleeps (halt polling).
    HostHaltPoll(Duration),
    /// Poll this long, then halt (guest haltpoll / a paravirtual C-state
    /// driver). Threads: spin, then block.
    PollThenHalt(Duration),
    /// Never idle: spin on the request counter.
    Poll,
    /// KVM only: `hlt` does not exit (`KVM_CAP_X86_DISABLE_EXITS`), the
    /// vCPU halts inside the guest (van Riel's "never trap to host").
    /// Refused on PVM, where a guest cannot execute `hlt` natively.
    NoHltExit,
    /// KVM only: idle with a timeout (Denali): the guest exits to the VMM
    /// with "wake me on a message or after this long".
    Hint(Duration),
}

impl Idle {
    /// Whether only the KVM backend has it.
    pub fn kvm_only(self) -> bool {
        matches!(
            self,
            Idle::HostHaltPoll(_) | Idle::NoHltExit | Idle::Hint(_)
        )
    }
}

impl std::fmt::Display for Idle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = |d: &Duration| kicklab_model::fmt_ns(d.as_secs_f64() * 1e9).replace(' ', "");
        match self {
            Idle::Halt => write!(f, "halt"),
            Idle::HostHaltPoll(w) => write!(f, "halt-poll:{}", d(w)),
            Idle::PollThenHalt(w) => write!(f, "haltpoll:{}", d(w)),
            Idle::Poll => write!(f, "poll"),
            Idle::NoHltExit => write!(f, "no-hlt-exit"),
            Idle::Hint(w) => write!(f, "hint:{}", d(w)),
        }
    }
}

impl FromStr for Idle {
    type Err = String;
    fn from_str(s: &str) -> Result<Idle, String> {
        let dur = |v: &str| -> Result<Duration, String> {
            parse_duration_ns(v)
                .map(|ns| Duration::from_secs_f64(ns / 1e9))
                .map_err(|e| e.to_string())
        };
        match s.trim() {
            "halt" => Ok(Idle::Halt),
            "poll" => Ok(Idle::Poll),
            "no-hlt-exit" => Ok(Idle::NoHltExit),
            other => {
                if let Some(v) = other.strip_prefix("halt-poll:") {
                    Ok(Idle::HostHaltPoll(dur(v)?))
                } else if let Some(v) = other.strip_prefix("haltpoll:") {
                    Ok(Idle::PollThenHalt(dur(v)?))
                } else if let Some(v) = other.strip_prefix("hint:") {
                    let d = dur(v)?;
                    if d.as_micros() > u128::from(u16::MAX) || d.is_zero() {
                        return Err("hint:<timeout> must be between 1us and 65ms".into());
                    }
                    Ok(Idle::Hint(d))
                } else {
                    Err(format!(
                        "unknown idle strategy `{other}` (use halt, halt-poll:<dur>, haltpoll:<dur>, poll, no-hlt-exit or hint:<dur>)"
                    ))
                }
            }
        }
    }
}

/// One ping-pong run.
#[derive(Debug, Clone, Copy)]
pub struct PingPongConfig {
    /// KVM (the guest responds) or threads.
    pub backend: Backend,
    /// How the responder idles.
    pub idle: Idle,
    /// Requests measured (after a warm-up of a tenth as many).
    pub messages: u64,
    /// Each side's work per message (the requester's before each request,
    /// the responder's before each response).
    pub work: Duration,
    /// The requester spins for the response (true) or blocks on a kick.
    pub requester_polls: bool,
    /// Give up after this long without progress.
    pub timeout: Duration,
}

/// What a ping-pong run measured.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct PingPongResult {
    /// Request/response pairs per second.
    pub rate_per_s: f64,
    /// CPU time of both sides per request [ns].
    pub cpu_ns_per_msg: f64,
    /// The requester's share [ns].
    pub cpu_requester_ns: f64,
    /// The responder's share (for KVM: the vCPU thread) [ns].
    pub cpu_responder_ns: f64,
    /// Requests measured.
    pub messages: u64,
    /// Times the responder went idle (halted or blocked).
    pub responder_sleeps: u64,
}

impl PingPongResult {
    /// From a measured window: `messages` requests in `wall_ns`, the two
    /// sides' CPU time [ns] and the responder's idle sleeps.
    #[allow(clippy::cast_precision_loss)]
    pub(crate) fn from_window(
        messages: u64,
        wall_ns: f64,
        requester_cpu_ns: u64,
        responder_cpu_ns: u64,
        responder_sleeps: u64,
    ) -> PingPongResult {
        let n = messages as f64;
        let (q, r) = (requester_cpu_ns as f64 / n, responder_cpu_ns as f64 / n);
        PingPongResult {
            rate_per_s: n / (wall_ns / 1e9),
            cpu_ns_per_msg: q + r,
            cpu_requester_ns: q,
            cpu_responder_ns: r,
            messages,
            responder_sleeps,
        }
    }
}

/// Runs ping-pong on `cfg.backend`.
///
/// # Errors
///
/// An idle strategy the backend lacks, no usable KVM, or a hang.
pub fn pingpong(cfg: &PingPongConfig) -> Result<PingPongResult, TestbedError> {
    if cfg.messages == 0 {
        return Err(TestbedError::Params("--messages: need at least 1".into()));
    }
    match cfg.backend {
        Backend::Kvm(_) => crate::kvm::pingpong::run(cfg),
        Backend::Threads(kind) => {
            if cfg.idle.kvm_only() {
                return Err(TestbedError::Params(format!(
                    "--idle: {} exists only with --backend kvm",
                    cfg.idle
                )));
            }
            threads(cfg, kind)
        }
    }
}

/// The responder's side of the thread version.
struct Shared {
    req: AtomicU32,
    resp: AtomicU32,
    /// The responder asks for a notification before it blocks.
    want: AtomicU32,
    /// The requester asks for a notification before it blocks.
    host_want: AtomicU32,
    stop: AtomicBool,
    to_responder: Box<dyn Notifier>,
    to_requester: Box<dyn Notifier>,
    sleeps: AtomicU32,
}

#[allow(clippy::cast_precision_loss, clippy::too_many_lines)]
fn threads(cfg: &PingPongConfig, kind: NotifierKind) -> Result<PingPongResult, TestbedError> {
    let tsc = Tsc::get();
    let sh = Arc::new(Shared {
        req: AtomicU32::new(0),
        resp: AtomicU32::new(0),
        want: AtomicU32::new(0),
        host_want: AtomicU32::new(0),
        stop: AtomicBool::new(false),
        to_responder: kind.make()?,
        to_requester: kind.make()?,
        sleeps: AtomicU32::new(0),
    });
    let total = u32::try_from(cfg.messages + cfg.messages / 10)
        .map_err(|_| TestbedError::Params("--messages: too many".into()))?;
    let warm = total - u32::try_from(cfg.messages).unwrap_or(0);
    let (idle, work) = (cfg.idle, tsc.ticks(cfg.work.as_secs_f64() * 1e9));
    let sh_r = Arc::clone(&sh);
    let responder = std::thread::Builder::new()
        .name("kicklab-responder".into())
        .spawn(move || -> Result<(u64, u64), TestbedError> {
            let sh = &*sh_r;
            pin(0);
            let mut marks = (0, 0);
            for i in 1..=total {
                if i == warm + 1 {
                    marks.0 = thread_cpu_ns();
                }
                let here = || sh.req.load(Ordering::SeqCst) == i;
                let spin = match idle {
                    Idle::Poll => None,
                    Idle::PollThenHalt(d) => Some(tsc.ticks(d.as_secs_f64() * 1e9)),
                    _ => Some(0),
                };
                let t0 = rdtsc();
                while !here() {
                    if spin.is_some_and(|s| rdtsc() - t0 >= s) {
                        sh.want.store(1, Ordering::SeqCst);
                        if here() {
                            sh.want.store(0, Ordering::SeqCst);
                            break;
                        }
                        sh.sleeps.fetch_add(1, Ordering::Relaxed);
                        sh.to_responder.wait()?;
                        sh.want.store(0, Ordering::SeqCst);
                    } else {
                        std::hint::spin_loop();
                    }
                    if sh.stop.load(Ordering::Relaxed) {
                        return Err(TestbedError::Hang("stopped".into()));
                    }
                }
                tsc.spin_ticks(work);
                sh.resp.store(i, Ordering::SeqCst);
                if sh.host_want.swap(0, Ordering::SeqCst) == 1 {
                    sh.to_requester.notify()?;
                }
            }
            marks.1 = thread_cpu_ns();
            Ok(marks)
        })?;
    let sh_q = Arc::clone(&sh);
    let polls = cfg.requester_polls;
    let requester = std::thread::Builder::new()
        .name("kicklab-requester".into())
        .spawn(move || -> Result<(u64, u64, u64, u64, u32), TestbedError> {
            let sh = &*sh_q;
            pin(1);
            let (mut t0, mut c0, mut s0) = (0, 0, 0);
            for i in 1..=total {
                if i == warm + 1 {
                    (t0, c0, s0) = (rdtsc(), thread_cpu_ns(), sh.sleeps.load(Ordering::Relaxed));
                }
                tsc.spin_ticks(work);
                sh.req.store(i, Ordering::SeqCst);
                if sh.want.swap(0, Ordering::SeqCst) == 1 {
                    sh.to_responder.notify()?;
                }
                while sh.resp.load(Ordering::SeqCst) != i {
                    if polls {
                        std::hint::spin_loop();
                    } else {
                        sh.host_want.store(1, Ordering::SeqCst);
                        if sh.resp.load(Ordering::SeqCst) == i {
                            sh.host_want.store(0, Ordering::SeqCst);
                            break;
                        }
                        sh.to_requester.wait()?;
                    }
                    if sh.stop.load(Ordering::Relaxed) {
                        return Err(TestbedError::Hang("stopped".into()));
                    }
                }
            }
            let s1 = sh.sleeps.load(Ordering::Relaxed);
            Ok((t0, rdtsc(), c0, thread_cpu_ns(), s1 - s0))
        })?;
    let deadline = std::time::Instant::now() + cfg.timeout;
    while !(responder.is_finished() && requester.is_finished()) {
        if std::time::Instant::now() > deadline {
            sh.stop.store(true, Ordering::SeqCst);
            let _ = sh.to_responder.notify();
            let _ = sh.to_requester.notify();
            let _ = (responder.join(), requester.join());
            return Err(TestbedError::Hang(format!(
                "ping-pong did not finish within {:?}",
                cfg.timeout
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let panicked = || TestbedError::Hang("a ping-pong thread panicked".into());
    let (rc0, rc1) = responder.join().map_err(|_| panicked())??;
    let (t0, t1, c0, c1, sleeps) = requester.join().map_err(|_| panicked())??;
    Ok(PingPongResult::from_window(
        cfg.messages,
        tsc.ns(t1 - t0),
        c1 - c0,
        rc1 - rc0,
        u64::from(sleeps),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_strategies_parse_and_print_back() {
        for s in [
            "halt",
            "poll",
            "no-hlt-exit",
            "halt-poll:50us",
            "haltpoll:20us",
            "hint:100us",
        ] {
            let i: Idle = s.parse().unwrap();
            assert_eq!(i.to_string(), s, "{s}");
        }
        assert!("hint:1s".parse::<Idle>().is_err());
        assert!("nap".parse::<Idle>().is_err());
    }
}
