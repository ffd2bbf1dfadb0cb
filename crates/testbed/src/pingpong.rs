//! Request/response ("message passing", van Riel's KVM Forum 2013 study):
//! a requester on the host sends request i and waits for response i; the
//! responder (a KVM guest, or a thread) does a little work per request and
//! idles in between, per an idle strategy. Each side works `work` per
//! message, so the responder idles about that long each round: short idle
//! periods, as in van Riel's reader/writer threads. What it measures is the
//! cost of the responder's running -> idle -> running transitions.
//!
//! What lives here: the types both backends share ([`Idle`],
//! [`PingPongConfig`], [`PingPongResult`]), the checks common to both and
//! the entry point ([`pingpong`]). What does not: the runs themselves
//! (`backend::threads::pingpong`, `backend::kvm::pingpong`).

use std::str::FromStr;
use std::time::Duration;

use kicklab_model::parse_duration_ns;
use serde::Serialize;

use crate::clock::check_duration;
use crate::{Backend, Setting, TestbedError};

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
            let ns = parse_duration_ns(v).map_err(|e| e.to_string())?;
            Duration::try_from_secs_f64(ns / 1e9).map_err(|_| format!("`{v}`: out of range"))
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
    /// The stall limit: give up once no request has been answered for
    /// this long (the whole run may take longer while it progresses).
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

/// Why `no-hlt-exit` needs the emulated guest.
pub(crate) const NO_HLT_EXIT_USER: &str =
    "no-hlt-exit: the user-mode guest cannot execute `hlt` on this KVM (PVM); \
     use the emulated guest, or `poll` for a guest that never leaves";

impl PingPongConfig {
    /// Checks what both backends need; returns (requests in all, warm-up
    /// requests), both below 2^31.
    ///
    /// # Errors
    ///
    /// [`TestbedError`] naming the setting out of range.
    pub fn check(&self) -> Result<(u32, u32), TestbedError> {
        if self.messages == 0 {
            return Err(TestbedError::invalid(Setting::Messages, "need at least 1"));
        }
        check_duration(self.work, Setting::Work)?;
        check_duration(self.timeout, Setting::Timeout)?;
        if let (Backend::Kvm(o), Idle::NoHltExit) = (self.backend, self.idle) {
            if o.guest != crate::kvm::guest::GuestMode::Emulated {
                return Err(TestbedError::invalid(Setting::Idle, NO_HLT_EXIT_USER));
            }
        }
        if let Idle::HostHaltPoll(d) | Idle::PollThenHalt(d) | Idle::Hint(d) = self.idle {
            check_duration(d, Setting::Idle)?;
        }
        let total = self
            .messages
            .checked_add(self.messages / 10)
            .and_then(|t| u32::try_from(t).ok())
            .filter(|t| *t < 1 << 31)
            .ok_or_else(|| {
                TestbedError::limit(
                    Setting::Messages,
                    "at most 2^31 requests, warm-up (a tenth more) included",
                )
            })?;
        let warm = total - u32::try_from(self.messages).unwrap_or(total);
        Ok((total, warm))
    }
}

/// Runs ping-pong on `cfg.backend` (see [`Backend::pingpong`]).
///
/// # Errors
///
/// As [`Backend::pingpong`].
pub fn pingpong(cfg: &PingPongConfig) -> Result<PingPongResult, TestbedError> {
    cfg.backend.pingpong(cfg)
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
        assert!("haltpoll:1e30s".parse::<Idle>().is_err(), "no panic");
    }
}
