//! Wait and notification strategies as values: the one vocabulary of
//! `--mode` shared by the model, the simulator, the ring and the testbeds
//! (`docs/control.md` for the rules and kicklab's own). What lives here: the names, their parameters with the
//! shipped defaults, parsing and printing. What does not: running them
//! (the per-party state machines are in `control.rs`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::time::{fmt_ns, parse_duration_ns, MAX_DURATION_NS};

/// How a party waits when it cannot go on (the queue is full for P, empty
/// for C), and, for `coalesce`, how it notifies. String forms in
/// [`WaitMode::parse`]; serialized as that string.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum WaitMode {
    /// `notify`: block at once and wait for the peer's notification (the
    /// paper's rule).
    Notify,
    /// `poll`: spin until the condition holds; spinning is busy time.
    Poll,
    /// `spin:<B>`: spin for at most `budget_ns`, then block (vhost-net's
    /// busyloop, io_uring SQPOLL idle, NAPI busy poll).
    Spin {
        /// Spin budget B [ns].
        budget_ns: f64,
    },
    /// `sleep:<Y>`: timed sleeps of `period_ns`, re-checking after each;
    /// never blocks, so never needs a kick (Denali's idle-with-timeout).
    Sleep {
        /// Sleep length Y [ns].
        period_ns: f64,
    },
    /// `halt-poll[:max=..,grow=..,start=..,shrink=..]` (also
    /// `host-halt-poll`): KVM's host-side halt polling, `halt_poll_ns` (a
    /// per-party window, grown and shrunk from past episodes). Printed
    /// with the kernel's own name.
    HostHaltPoll(Window),
    /// `haltpoll[:max=..,grow=..,start=..,shrink=..]` (also
    /// `guest-haltpoll`): the guest's cpuidle-haltpoll governor, printed
    /// with its own name.
    GuestHaltpoll(Window),
    /// `hybrid[:mean|min]`: a timed sleep of half the estimated wait, then
    /// spin (block-layer hybrid polling: windowed mean; io_uring hybrid
    /// IOPOLL: running minimum).
    Hybrid(Estimator),
    /// `defer[:timeout=..,count=..]`: NAPI deferral / IRQ suspension:
    /// re-check on a timer instead of blocking, `count` empty checks in a
    /// row before blocking.
    Defer {
        /// Timer [ns].
        timeout_ns: f64,
        /// Empty checks before blocking.
        count: u32,
    },
    /// `coalesce:<n>,<t>`: waits as `notify`; its own kicks are held until
    /// `n` items are pending or `t` has passed since the first (virtio-net
    /// notification coalescing).
    Coalesce {
        /// Items pending before a kick.
        n: u32,
        /// Longest hold [ns].
        t_ns: f64,
    },
    /// `adaptive[:latency=<D>,check=on|off]`: kicklab's controller
    /// (`docs/control.md`).
    Adaptive {
        /// Bound on the p99 message latency [ns]; `None`: the command's
        /// `--latency`, else [`DEFAULT_LATENCY_NS`].
        latency_ns: Option<f64>,
        /// Whether it checks what its own decisions cost against a
        /// fallback (deferral at its defaults) and takes whichever pays
        /// (`check=on`, the default); `check=off` is its planner alone.
        check: bool,
    },
}

/// The latency bound of `adaptive` when none is given: 100 us.
pub const DEFAULT_LATENCY_NS: f64 = 100_000.0;

/// The window rules of `halt-poll` and `haltpoll` (`control.md`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Largest window [ns].
    pub max_ns: f64,
    /// Growth factor.
    pub grow: f64,
    /// First window when growing from 0 [ns].
    pub start_ns: f64,
    /// Shrink divisor (0: shrink to 0).
    pub shrink: f64,
}

impl Window {
    /// KVM's halt polling: max 200 us, grow 2, start 10 us, shrink 2.
    pub const HALT_POLL: Window = Window {
        max_ns: 200_000.0,
        grow: 2.0,
        start_ns: 10_000.0,
        shrink: 2.0,
    };
    /// The guest haltpoll governor: max 200 us, grow 2, start 50 us, shrink 2.
    pub const HALTPOLL: Window = Window {
        max_ns: 200_000.0,
        grow: 2.0,
        start_ns: 50_000.0,
        shrink: 2.0,
    };
}

/// How `hybrid` estimates the coming wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Estimator {
    /// The mean of the last 16 waits (the block layer).
    Mean,
    /// The shortest wait so far (io_uring).
    Min,
}

/// NAPI's example: re-check every 20 us, 10 times.
const DEFER_TIMEOUT_NS: f64 = 20_000.0;
const DEFER_COUNT: u32 = 10;

impl WaitMode {
    /// Every family, with its parameters' defaults: what `advise` and the
    /// control sweep compare, and what `--help` lists.
    pub const FAMILIES: &'static str = "notify, poll, spin:<B>, sleep:<Y>, \
halt-poll[:max=200us,grow=2,start=10us,shrink=2], haltpoll[:max=200us,grow=2,start=50us,shrink=2], \
hybrid[:mean|min], defer[:timeout=20us,count=10], coalesce:<n>,<t>, adaptive[:latency=100us,check=on]";

    /// Parses a strategy: `notify`, `poll`, `spin:5us`, `sleep:20us`,
    /// `halt-poll`, `halt-poll:max=100us,shrink=0`, `haltpoll`,
    /// `hybrid`, `hybrid:min`, `defer`, `defer:timeout=50us,count=4`,
    /// `coalesce:8,20us`, `adaptive`, `adaptive:latency=50us`. Keys left
    /// out keep their defaults.
    ///
    /// # Errors
    ///
    /// A message naming the bad part and the accepted forms.
    ///
    /// # Examples
    ///
    /// ```
    /// use kicklab_model::WaitMode;
    /// let m = WaitMode::parse("halt-poll:max=100us").unwrap();
    /// assert_eq!(m.to_string(), "halt-poll:max=100us,grow=2,start=10us,shrink=2");
    /// assert_eq!(WaitMode::parse(&m.to_string()).unwrap(), m);
    /// assert!(WaitMode::parse("spin:5 parsecs").is_err());
    /// ```
    pub fn parse(s: &str) -> Result<WaitMode, String> {
        let s = s.trim();
        let (name, args) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        // The two window rules by whose they are: KVM's on the host, the
        // guest's cpuidle driver. `halt-poll` and `haltpoll` differ by a
        // hyphen only; these say which is which.
        let name = match name {
            "host-halt-poll" => "halt-poll",
            "guest-haltpoll" => "haltpoll",
            other => other,
        };
        let dur = |what: &str, v: &str| -> Result<f64, String> {
            parse_duration_ns(v).map_err(|e| format!("{name}: {what}: {e}"))
        };
        let need = |a: Option<&str>, usage: &str| -> Result<String, String> {
            a.map(str::to_owned)
                .ok_or_else(|| format!("`{name}` needs an argument: {usage}"))
        };
        let none = |a: Option<&str>, m: WaitMode| match a {
            None => Ok(m),
            Some(x) => Err(format!("`{name}` takes no argument (got `{x}`)")),
        };
        let mode = match name {
            "notify" => none(args, WaitMode::Notify)?,
            "poll" => none(args, WaitMode::Poll)?,
            "spin" => WaitMode::Spin {
                budget_ns: dur("budget", &need(args, "spin:5us")?)?,
            },
            "sleep" => {
                let period_ns = dur("period", &need(args, "sleep:20us")?)?;
                if period_ns <= 0.0 {
                    return Err("sleep: the period must be > 0 (sleep:0 would never sleep)".into());
                }
                WaitMode::Sleep { period_ns }
            }
            "halt-poll" | "haltpoll" => {
                let mut w = if name == "halt-poll" {
                    Window::HALT_POLL
                } else {
                    Window::HALTPOLL
                };
                for (k, v) in keys(name, args, &["max", "grow", "start", "shrink"])? {
                    match k {
                        "max" => w.max_ns = dur("max", v)?,
                        "start" => w.start_ns = dur("start", v)?,
                        "grow" => w.grow = factor(name, k, v, "from 1 to 1024")?,
                        "shrink" => {
                            w.shrink = factor(name, k, v, "0 (reset) or from 1 to 1024")?;
                        }
                        _ => return Err(unknown_key(name, k, "max, grow, start, shrink")),
                    }
                }
                // A factor past 1024 takes a window from a nanosecond to
                // an hour in four steps: no rule in use comes near it.
                const MAX_FACTOR: f64 = 1024.0;
                if !(1.0..=MAX_FACTOR).contains(&w.grow) {
                    return Err(format!(
                        "{name}: grow must be from 1 to {MAX_FACTOR} (got {})",
                        crate::shown(v_text(w.grow).as_str())
                    ));
                }
                if w.shrink != 0.0 && !(1.0..=MAX_FACTOR).contains(&w.shrink) {
                    return Err(format!(
                        "{name}: shrink must be 0 (reset) or from 1 to {MAX_FACTOR} (got {})",
                        crate::shown(v_text(w.shrink).as_str())
                    ));
                }
                if name == "halt-poll" {
                    WaitMode::HostHaltPoll(w)
                } else {
                    WaitMode::GuestHaltpoll(w)
                }
            }
            "hybrid" => match args {
                None | Some("mean") => WaitMode::Hybrid(Estimator::Mean),
                Some("min") => WaitMode::Hybrid(Estimator::Min),
                Some(x) => {
                    return Err(format!("hybrid: unknown estimator `{x}` (use mean or min)"))
                }
            },
            "defer" => {
                let (mut timeout_ns, mut count) = (DEFER_TIMEOUT_NS, DEFER_COUNT);
                for (k, v) in keys(name, args, &["timeout", "count"])? {
                    match k {
                        "timeout" => timeout_ns = dur("timeout", v)?,
                        "count" => count = integer(name, k, v)?,
                        _ => return Err(unknown_key(name, k, "timeout, count")),
                    }
                }
                if timeout_ns <= 0.0 {
                    return Err("defer: timeout must be > 0".into());
                }
                WaitMode::Defer { timeout_ns, count }
            }
            "coalesce" => {
                let a = need(
                    args,
                    "coalesce:8,20us (kick once 8 are pending or after 20us)",
                )?;
                let Some((n, t)) = a.split_once(',') else {
                    return Err(format!(
                        "coalesce: expected <n>,<t> such as 8,20us (got `{a}`)"
                    ));
                };
                let n = integer(name, "n", n)?;
                if n == 0 {
                    return Err("coalesce: n must be >= 1 (1 is plain notify)".into());
                }
                WaitMode::Coalesce {
                    n,
                    t_ns: dur("t", t)?,
                }
            }
            "adaptive" => {
                let mut latency_ns = None;
                let mut check = true;
                for (k, v) in keys(name, args, &["latency", "check"])? {
                    match k {
                        "latency" => {
                            let l = dur("latency", v)?;
                            if l <= 0.0 {
                                return Err("adaptive: latency must be > 0".into());
                            }
                            latency_ns = Some(l);
                        }
                        "check" => {
                            check = match v {
                                "on" => true,
                                "off" => false,
                                _ => {
                                    return Err(format!("adaptive: check is on or off, not `{v}`"))
                                }
                            }
                        }
                        _ => return Err(unknown_key(name, k, "latency, check")),
                    }
                }
                WaitMode::Adaptive { latency_ns, check }
            }
            other => {
                return Err(format!(
                    "unknown strategy `{other}` (use {})",
                    WaitMode::FAMILIES
                ))
            }
        };
        Ok(mode)
    }

    /// The p99 latency bound a pair with these two modes keeps: the
    /// tightest of its `adaptive` parties' bounds; `None` where no party
    /// adapts with a bound.
    pub fn latency_bound(modes: [WaitMode; 2]) -> Option<f64> {
        modes
            .iter()
            .filter_map(|m| match m {
                WaitMode::Adaptive {
                    latency_ns: Some(l),
                    ..
                } => Some(*l),
                _ => None,
            })
            .reduce(f64::min)
    }

    /// `adaptive` without its own latency bound takes `latency_ns` (a
    /// command's `--latency`); every other mode is returned as is.
    #[must_use]
    pub fn with_latency(self, latency_ns: Option<f64>) -> WaitMode {
        match self {
            WaitMode::Adaptive {
                latency_ns: None,
                check,
            } => WaitMode::Adaptive { latency_ns, check },
            m => m,
        }
    }

    /// Whether the closed forms and the fast event loop cover it: `notify`,
    /// `poll` and `spin:<B>`.
    pub fn is_basic(&self) -> bool {
        matches!(
            self,
            WaitMode::Notify | WaitMode::Poll | WaitMode::Spin { .. }
        )
    }

    /// Whether a party in this mode may register for a kick (all but `poll`,
    /// `sleep` and `hybrid`).
    pub fn may_block(&self) -> bool {
        !matches!(
            self,
            WaitMode::Poll | WaitMode::Sleep { .. } | WaitMode::Hybrid(_)
        )
    }

    /// Checks durations against the clock's range.
    ///
    /// # Errors
    ///
    /// What is out of range.
    pub fn check(&self) -> Result<(), String> {
        let ok = |what: &str, v: f64| {
            if v.is_finite() && (0.0..=MAX_DURATION_NS).contains(&v) {
                Ok(())
            } else {
                Err(format!("{what} {v} ns must be a duration between 0 and 1h"))
            }
        };
        match *self {
            WaitMode::Notify | WaitMode::Poll | WaitMode::Hybrid(_) => Ok(()),
            WaitMode::Spin { budget_ns } => ok("spin budget", budget_ns),
            WaitMode::Sleep { period_ns } => ok("sleep period", period_ns),
            WaitMode::HostHaltPoll(w) | WaitMode::GuestHaltpoll(w) => {
                ok("max", w.max_ns)?;
                ok("start", w.start_ns)
            }
            WaitMode::Defer { timeout_ns, .. } => ok("timeout", timeout_ns),
            WaitMode::Coalesce { t_ns, .. } => ok("coalesce time", t_ns),
            WaitMode::Adaptive { latency_ns, .. } => {
                latency_ns.map_or(Ok(()), |l| ok("latency", l))
            }
        }
    }
}

/// A factor as an error message shows it (`1e308`, not 309 digits).
fn v_text(x: f64) -> String {
    if x.abs() >= 1e6 {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// The `key=value` pairs of a strategy's arguments; `known` are its keys,
/// named in the error for a value given without one (`adaptive:50us`).
fn keys<'a>(
    name: &str,
    args: Option<&'a str>,
    known: &[&str],
) -> Result<Vec<(&'a str, &'a str)>, String> {
    let Some(args) = args else {
        return Ok(Vec::new());
    };
    let parts: Vec<&str> = args.split(',').collect();
    let kvs: Vec<(&str, &str)> = parts
        .iter()
        .enumerate()
        .map(|(i, kv)| {
            kv.split_once('=')
                .map(|(k, v)| (k.trim(), v.trim()))
                .ok_or_else(|| {
                    let kv = kv.trim();
                    // `latency=1,5us`: a decimal comma split the value.
                    let before = i.checked_sub(1).map(|j| parts[j].trim());
                    if before.is_some_and(|b| b.ends_with(|c: char| c.is_ascii_digit()))
                        && kv.starts_with(|c: char| c.is_ascii_digit())
                    {
                        return format!(
                            "{name}: `{}`: a decimal point is `.` (e.g. 2.5us)",
                            crate::shown(&format!("{},{kv}", before.unwrap_or_default()))
                        );
                    }
                    format!(
                        "{name}: expected key=value, got `{}` (keys: {})",
                        crate::shown(kv),
                        known.join(", ")
                    )
                })
        })
        .collect::<Result<_, _>>()?;
    if let Some((k, _)) = kvs
        .iter()
        .enumerate()
        .find_map(|(i, (k, _))| kvs[..i].iter().any(|(j, _)| j == k).then_some((k, i)))
    {
        return Err(format!("{name}: `{k}` given twice"));
    }
    Ok(kvs)
}

fn unknown_key(name: &str, k: &str, known: &str) -> String {
    format!("{name}: unknown key `{k}` (use {known})")
}

/// A factor's value; `range` says what the caller accepts (it checks
/// that), for a value that is no number >= 0 at all.
fn factor(name: &str, k: &str, v: &str, range: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!(
            "{name}: {k} must be {range} (got `{}`)",
            crate::shown(v)
        )),
    }
}

fn integer(name: &str, k: &str, v: &str) -> Result<u32, String> {
    v.trim()
        .parse::<u32>()
        .map_err(|_| format!("{name}: {k} must be a whole number (got `{v}`)"))
}

impl fmt::Display for WaitMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let window = |f: &mut fmt::Formatter<'_>, name: &str, w: &Window| {
            write!(
                f,
                "{name}:max={},grow={},start={},shrink={}",
                fmt_ns(w.max_ns),
                w.grow,
                fmt_ns(w.start_ns),
                w.shrink
            )
        };
        match self {
            WaitMode::Notify => f.write_str("notify"),
            WaitMode::Poll => f.write_str("poll"),
            WaitMode::Spin { budget_ns } => write!(f, "spin:{}", fmt_ns(*budget_ns)),
            WaitMode::Sleep { period_ns } => write!(f, "sleep:{}", fmt_ns(*period_ns)),
            WaitMode::HostHaltPoll(w) => window(f, "halt-poll", w),
            WaitMode::GuestHaltpoll(w) => window(f, "haltpoll", w),
            WaitMode::Hybrid(Estimator::Mean) => f.write_str("hybrid"),
            WaitMode::Hybrid(Estimator::Min) => f.write_str("hybrid:min"),
            WaitMode::Defer { timeout_ns, count } => {
                write!(f, "defer:timeout={},count={count}", fmt_ns(*timeout_ns))
            }
            WaitMode::Coalesce { n, t_ns } => write!(f, "coalesce:{n},{}", fmt_ns(*t_ns)),
            WaitMode::Adaptive { latency_ns, check } => {
                f.write_str("adaptive")?;
                match (latency_ns, check) {
                    (None, true) => Ok(()),
                    (None, false) => f.write_str(":check=off"),
                    (Some(l), true) => write!(f, ":latency={}", fmt_ns(*l)),
                    (Some(l), false) => write!(f, ":latency={},check=off", fmt_ns(*l)),
                }
            }
        }
    }
}

impl FromStr for WaitMode {
    type Err = String;
    fn from_str(s: &str) -> Result<WaitMode, String> {
        WaitMode::parse(s)
    }
}

impl From<WaitMode> for String {
    fn from(m: WaitMode) -> String {
        m.to_string()
    }
}

impl TryFrom<String> for WaitMode {
    type Error = String;
    fn try_from(s: String) -> Result<WaitMode, String> {
        WaitMode::parse(&s)
    }
}

/// How an idle guest waits while its timers are pending (Denali's
/// idle-with-timeout, `kicklab scale`): the guest-level counterpart of
/// [`WaitMode`] for a guest time-sharing CPUs with others.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScaleIdle {
    /// Spin until a request comes or the timer is due (Denali's guest
    /// without idle-with-timeout).
    Spin,
    /// Sleep until a request comes or the timer is due (idle-with-timeout).
    Timeout,
}

impl std::str::FromStr for ScaleIdle {
    type Err = String;
    fn from_str(s: &str) -> Result<ScaleIdle, String> {
        match s {
            "spin" => Ok(ScaleIdle::Spin),
            "timeout" => Ok(ScaleIdle::Timeout),
            _ => Err(format!("unknown idle `{s}` (use spin or timeout)")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pairs_latency_bound_is_its_tightest_adaptive_partys() {
        let a = |l: f64| WaitMode::Adaptive {
            latency_ns: Some(l),
            check: true,
        };
        assert_eq!(WaitMode::latency_bound([a(5e4), a(2e4)]), Some(2e4));
        assert_eq!(
            WaitMode::latency_bound([WaitMode::Notify, a(5e4)]),
            Some(5e4)
        );
        let unbound = WaitMode::Adaptive {
            latency_ns: None,
            check: true,
        };
        assert_eq!(WaitMode::latency_bound([WaitMode::Poll, unbound]), None);
    }

    #[test]
    fn every_family_round_trips() {
        for s in [
            "notify",
            "poll",
            "spin:5us",
            "sleep:20us",
            "halt-poll",
            "halt-poll:max=100us,shrink=0",
            "haltpoll:start=20us",
            "hybrid",
            "hybrid:min",
            "defer",
            "defer:timeout=50us,count=4",
            "coalesce:8,20us",
            "adaptive",
            "adaptive:latency=50us",
            "adaptive:check=off",
            "adaptive:latency=50us,check=off",
        ] {
            let m = WaitMode::parse(s).unwrap();
            let again = WaitMode::parse(&m.to_string()).unwrap();
            assert_eq!(m, again, "{s} -> {m}");
            let json = serde_json::to_string(&m).unwrap();
            assert_eq!(serde_json::from_str::<WaitMode>(&json).unwrap(), m);
        }
    }

    #[test]
    fn the_window_rules_are_also_named_by_whose_they_are() {
        assert_eq!(
            WaitMode::parse("host-halt-poll").unwrap(),
            WaitMode::parse("halt-poll").unwrap()
        );
        assert_eq!(
            WaitMode::parse("guest-haltpoll:max=1ms").unwrap(),
            WaitMode::parse("haltpoll:max=1ms").unwrap()
        );
        assert_ne!(
            WaitMode::parse("host-halt-poll").unwrap(),
            WaitMode::parse("guest-haltpoll").unwrap()
        );
        let e = WaitMode::parse("host-halt-poll:bogus=1").unwrap_err();
        assert!(e.contains("bogus"), "{e}");
    }

    #[test]
    fn defaults_are_the_shipped_ones() {
        assert_eq!(
            WaitMode::parse("halt-poll").unwrap(),
            WaitMode::HostHaltPoll(Window::HALT_POLL)
        );
        assert_eq!(
            WaitMode::parse("defer").unwrap(),
            WaitMode::Defer {
                timeout_ns: 20_000.0,
                count: 10
            }
        );
        assert_eq!(
            WaitMode::parse("haltpoll:max=1ms").unwrap(),
            WaitMode::GuestHaltpoll(Window {
                max_ns: 1e6,
                ..Window::HALTPOLL
            })
        );
    }

    #[test]
    fn bad_forms_say_what_is_wrong() {
        for (s, want) in [
            ("spin", "needs an argument"),
            ("sleep:0", "must be > 0"),
            ("halt-poll:max", "key=value"),
            ("halt-poll:foo=1", "unknown key `foo`"),
            ("halt-poll:max=1us,max=2us", "`max` given twice"),
            ("halt-poll:grow=0.5", "grow must be from 1 to 1024"),
            (
                "halt-poll:grow=1e308",
                "grow must be from 1 to 1024 (got 1e308)",
            ),
            ("hybrid:median", "unknown estimator"),
            ("coalesce:8", "<n>,<t>"),
            ("coalesce:0,1us", "n must be >= 1"),
            ("defer:count=x", "whole number"),
            ("adaptive:latency=0", "must be > 0"),
            ("adaptive:check=maybe", "check is on or off"),
            ("notify:1", "takes no argument"),
            ("busy", "unknown strategy"),
        ] {
            let e = WaitMode::parse(s).unwrap_err();
            assert!(e.contains(want), "{s}: {e}");
        }
    }
}
