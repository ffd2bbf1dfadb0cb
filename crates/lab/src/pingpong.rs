//! The ping-pong suite: request/response rates under the responder's idle
//! strategies, run one after the other, as a table beside van Riel's KVM
//! Forum 2013 numbers.

use std::time::Duration;

use kicklab_model::{fmt_ns_short, sig, SHORT_DIGITS};
use kicklab_testbed::pingpong::{pingpong, Idle, PingPongConfig, PingPongResult};
use kicklab_testbed::Backend;

use crate::{Input, LabError, Progress};

/// Van Riel's message rates (KVM Forum 2013, "Measuring the overhead"):
/// his configuration and the idle strategies that correspond to it here
/// (their names as `--idle` writes them, without parameters; none: no
/// counterpart).
pub const VAN_RIEL: [(&str, f64, &[&str]); 5] = [
    (
        "default (vcpu_put/schedule/vcpu_load)",
        135_531.0,
        &["halt"],
    ),
    ("vcpu_put/safe_halt/vcpu_load", 150_476.0, &["halt-poll"]),
    (
        "vcpu_put/safe_halt/vcpu_load, skip FPU save",
        205_711.0,
        &[],
    ),
    (
        "safe_halt (no vcpu_put/vcpu_load)",
        214_624.0,
        &["halt-poll"],
    ),
    (
        "never trap to host (yield_on_hlt=n)",
        218_260.0,
        &["no-hlt-exit", "poll", "haltpoll"],
    ),
];

/// A van Riel row's counterparts here in words (`--json`'s
/// `closest_here`).
pub fn counterpart(here: &[&str]) -> String {
    if here.is_empty() {
        "(no counterpart: no FPU state here)".into()
    } else {
        here.join(" / ")
    }
}

/// Whether `idle` is the strategy named `name` (with any parameters).
fn is_named(idle: Idle, name: &str) -> bool {
    let s = idle.to_string();
    s == name
        || s.strip_prefix(name)
            .is_some_and(|rest| rest.starts_with(':'))
}

/// What the guest responder is, in one line.
pub fn guest_line(mode: kicklab_testbed::kvm::guest::GuestMode) -> &'static str {
    match mode {
        kicklab_testbed::kvm::guest::GuestMode::User => {
            "the guest responds from a native user-mode loop (a halt exits to the VMM, whose vCPU thread sleeps until the doorbell)"
        }
        kicklab_testbed::kvm::guest::GuestMode::Emulated => {
            "the guest responds in emulated real mode (it halts with `sti; hlt` inside KVM and is woken by irqfd interrupts; \
             every guest instruction costs about 1 us on PVM)"
        }
    }
}

/// The strategies run when none is named.
pub fn default_idles(be: Backend) -> Vec<Idle> {
    let us = |n| Duration::from_micros(n);
    match be {
        // Host halt polling swept over three windows; HLT exits can be
        // disabled only for the guest that halts inside KVM.
        Backend::Kvm(o) => {
            let mut idles = vec![
                Idle::Halt,
                Idle::HostHaltPoll(us(10)),
                Idle::HostHaltPoll(us(50)),
                Idle::HostHaltPoll(us(200)),
                Idle::PollThenHalt(us(50)),
                Idle::Poll,
            ];
            if o.guest == kicklab_testbed::kvm::guest::GuestMode::Emulated {
                idles.push(Idle::NoHltExit);
            }
            idles.push(Idle::Hint(us(1000)));
            idles
        }
        Backend::Threads(_) => vec![Idle::Halt, Idle::PollThenHalt(us(50)), Idle::Poll],
    }
}

/// A ping-pong suite as the user asks for it.
#[derive(Debug, Clone)]
pub struct PingPongRequest {
    /// Where the responder runs (the guest responds: tx).
    pub backend: crate::backend_input::BackendInput,
    /// The responder's idle strategies (none: every one the backend has).
    pub idles: Vec<Idle>,
    /// Requests per strategy.
    pub messages: u64,
    /// Work per message on each side.
    pub work: Duration,
    /// Whether the requester polls for each response (else it blocks).
    pub requester_polls: bool,
}

/// What a ping-pong suite shows: `--json`'s object and the text lines.
#[derive(Debug, Clone)]
pub struct PingPongOutput {
    /// As [`runs_json`].
    pub json: serde_json::Value,
    /// The header and the table beside van Riel's.
    pub text: Vec<String>,
}

impl PingPongRequest {
    /// Checks the request, runs every strategy once, in order, and shows
    /// the runs.
    ///
    /// # Errors
    ///
    /// A kvm option without kvm, a strategy listed twice, and as
    /// [`run_all`].
    pub fn run(&self, progress: &dyn Progress) -> Result<PingPongOutput, LabError> {
        self.backend.check()?;
        let be = self.backend.get();
        let names: Vec<String> = self.idles.iter().map(ToString::to_string).collect();
        crate::error::no_repeats(Input::Idle, &names)?;
        let idles = if self.idles.is_empty() {
            default_idles(be)
        } else {
            self.idles.clone()
        };
        let (work, polls) = (self.work, self.requester_polls);
        let runs = run_all(be, &idles, self.messages, work, polls, progress)?;
        let mut text = header(be, self.messages, work, polls);
        text.extend(table(be, &as_rounds(&runs), true));
        Ok(PingPongOutput {
            json: runs_json(be, &runs, work, polls)?,
            text,
        })
    }
}

/// Runs every strategy once, in order.
///
/// # Errors
///
/// No messages, a strategy the backend lacks, or a run that fails.
pub fn run_all(
    be: Backend,
    idles: &[Idle],
    messages: u64,
    work: Duration,
    requester_polls: bool,
    progress: &dyn Progress,
) -> Result<Vec<(Idle, PingPongResult)>, LabError> {
    if messages == 0 {
        return Err(LabError::input(Input::Messages, "need at least 1 request"));
    }
    if let Some(i) = idles
        .iter()
        .find(|i| i.kvm_only() && !matches!(be, Backend::Kvm(_)))
    {
        return Err(LabError::input(
            Input::Idle,
            format!("{i} exists only with the kvm backend"),
        ));
    }
    let config = |idle| PingPongConfig {
        backend: be,
        idle,
        messages,
        work,
        requester_polls,
        timeout: Duration::from_secs(10),
    };
    // Every run's settings before the first run starts.
    for &idle in idles {
        config(idle).check()?;
    }
    // A request takes both sides' work: at a quarter of the stall limit
    // or more, a run would end as stalled instead of measuring (the
    // testbed's watchdog, which its own tests reach with an hour of work).
    let stall = config(Idle::Halt).timeout;
    if work.saturating_mul(4) > stall {
        return Err(LabError::input(
            Input::Work,
            format!(
                "{work:?} a side is past a quarter of the run's stall limit ({stall:?}): a request \
                 takes both sides' work, so the run would stop as stalled; at most {:?}",
                stall / 4
            ),
        ));
    }
    let mut out = Vec::new();
    progress.start("pingpong", idles.len() as u64);
    for &idle in idles {
        progress.note(&format!("pingpong: {} {idle} ...", be.name()));
        let r = pingpong(&config(idle))?;
        out.push((idle, r));
        progress.step();
    }
    progress.finish();
    Ok(out)
}

/// Runs every strategy `rounds` times, `messages` requests each: round
/// after round of [`run_all`], so that a drift of the machine falls on
/// every strategy alike. Each strategy with its runs, in order.
///
/// # Errors
///
/// As [`run_all`].
pub fn run_rounds(
    be: Backend,
    idles: &[Idle],
    messages: u64,
    work: Duration,
    requester_polls: bool,
    rounds: usize,
    progress: &dyn Progress,
) -> Result<Vec<(Idle, Vec<PingPongResult>)>, LabError> {
    let mut out: Vec<(Idle, Vec<PingPongResult>)> =
        idles.iter().map(|&i| (i, Vec::new())).collect();
    for _ in 0..rounds.max(1) {
        let runs = run_all(be, idles, messages, work, requester_polls, progress)?;
        for ((_, all), (_, r)) in out.iter_mut().zip(runs) {
            all.push(r);
        }
    }
    Ok(out)
}

/// Each strategy's single run as a round of one ([`table`] takes rounds).
#[must_use]
pub fn as_rounds(runs: &[(Idle, PingPongResult)]) -> Vec<(Idle, Vec<PingPongResult>)> {
    runs.iter().map(|&(i, r)| (i, vec![r])).collect()
}

/// The median of `f` over `runs` (NaN for none).
fn median(runs: &[PingPongResult], f: impl Fn(&PingPongResult) -> f64) -> f64 {
    kicklab_model::median(runs.iter().map(f).collect())
}

/// The median rate of a strategy's runs [requests/s].
fn median_rate(runs: &[PingPongResult]) -> f64 {
    median(runs, |r| r.rate_per_s)
}

/// The lowest and highest ratio, over `halt`'s median rate, of the
/// median rates of the strategies called `name` (`halt-poll` takes every
/// window); `None` without a halt run or such a strategy.
#[must_use]
pub fn over_halt(runs: &[(Idle, Vec<PingPongResult>)], name: &str) -> Option<(f64, f64)> {
    let halt = runs
        .iter()
        .find(|(i, _)| *i == Idle::Halt)
        .map(|(_, r)| median_rate(r))?;
    runs.iter()
        .filter(|(i, _)| is_named(*i, name))
        .map(|(_, r)| median_rate(r) / halt)
        .fold(None, |acc, x| match acc {
            None => Some((x, x)),
            Some((lo, hi)) => Some((f64::min(lo, x), f64::max(hi, x))),
        })
}

/// The runs as `pingpong --json` prints them: one object for one
/// strategy (the result with `backend`, `idle`, `work_ns` and
/// `requester`), else `{"runs": [..], "van_riel": [..]}`.
///
/// # Errors
///
/// A result that cannot be put in JSON.
pub fn runs_json(
    be: Backend,
    runs: &[(Idle, PingPongResult)],
    work: Duration,
    polls: bool,
) -> Result<serde_json::Value, LabError> {
    let obj = |idle: &Idle, r: &PingPongResult| -> Result<serde_json::Value, LabError> {
        let mut v = serde_json::to_value(r)?;
        v["backend"] = serde_json::json!(be.name());
        v["idle"] = serde_json::json!(idle.to_string());
        v["work_ns"] = serde_json::json!(work.as_secs_f64() * 1e9);
        v["requester"] = serde_json::json!(if polls { "poll" } else { "block" });
        Ok(v)
    };
    if let [(idle, r)] = runs {
        return obj(idle, r);
    }
    Ok(serde_json::json!({
        "runs": runs.iter().map(|(i, r)| obj(i, r)).collect::<Result<Vec<_>, _>>()?,
        "van_riel": VAN_RIEL
            .iter()
            .map(|(n, r, h)| serde_json::json!({"config": n, "rate_per_s": r, "closest_here": counterpart(h)}))
            .collect::<Vec<_>>(),
    }))
}

/// The text's first lines: what ran, and with a KVM guest, which guest.
#[must_use]
pub fn header(be: Backend, messages: u64, work: Duration, polls: bool) -> Vec<String> {
    let mut out = vec![format!(
        "ping-pong: {messages} requests per strategy, {} of work per message on each side, the requester {}s",
        kicklab_model::fmt_ns(work.as_secs_f64() * 1e9),
        if polls { "poll" } else { "block" }
    )];
    if let Backend::Kvm(o) = be {
        out.push(guest_line(o.guest).to_string());
    }
    out
}

/// The table as text lines: ours with ratios to `halt`, then (if
/// `van_riel`) his. Each strategy's figures are the medians of its runs;
/// where it ran more than once, a column gives its lowest and highest
/// rate.
#[allow(clippy::cast_precision_loss)]
pub fn table(be: Backend, runs: &[(Idle, Vec<PingPongResult>)], van_riel: bool) -> Vec<String> {
    let halt = runs
        .iter()
        .find(|(i, _)| *i == Idle::Halt)
        .map(|(_, r)| median_rate(r));
    let base = halt.unwrap_or_else(|| runs.first().map_or(1.0, |(_, r)| median_rate(r)));
    let repeated = runs.iter().any(|(_, r)| r.len() > 1);
    let mut lines = vec![format!(
        "{:<22} {:>12} {:>9} {:>14} {:>12}{}",
        format!("{} idle", be.name()),
        "requests/s",
        match (halt, runs.first()) {
            (None, Some((first, _))) => format!("vs {first}"),
            _ => "vs halt".into(),
        },
        "CPU/request",
        "idle sleeps",
        if repeated {
            "  requests/s, lowest-highest run"
        } else {
            ""
        }
    )];
    for (idle, r) in runs {
        let range = if repeated {
            let lo = r.iter().map(|r| r.rate_per_s).fold(f64::INFINITY, f64::min);
            let hi = r
                .iter()
                .map(|r| r.rate_per_s)
                .fold(f64::NEG_INFINITY, f64::max);
            format!("  {lo:.0}-{hi:.0} ({} runs)", r.len())
        } else {
            String::new()
        };
        lines.push(format!(
            "{:<22} {:>12.0} {:>8}x {:>14} {:>11}{range}",
            idle.to_string(),
            median_rate(r),
            sig(median_rate(r) / base, SHORT_DIGITS),
            fmt_ns_short(median(r, |r| r.cpu_ns_per_msg)),
            sig(
                median(r, |r| r.responder_sleeps as f64 / r.messages.max(1) as f64),
                SHORT_DIGITS
            )
        ));
    }
    if !van_riel {
        return lines;
    }
    lines.push(String::new());
    lines.push(format!(
        "{:<46} {:>10} {:>8}  closest here ({}), vs halt",
        "van Riel 2013 (Java threads in a KVM guest)",
        "msgs/s",
        "vs def.",
        be.name()
    ));
    for (name, rate, here) in VAN_RIEL {
        let ratios: Vec<f64> = runs
            .iter()
            .filter(|(idle, _)| here.iter().any(|h| is_named(*idle, h)))
            .map(|(_, r)| median_rate(r) / base)
            .collect();
        let measured = match (
            ratios.iter().copied().reduce(f64::min),
            ratios.iter().copied().reduce(f64::max),
        ) {
            _ if here.is_empty() => counterpart(here),
            _ if halt.is_none() => format!("{}: no halt run to compare with", counterpart(here)),
            (Some(lo), Some(hi)) if sig(lo, SHORT_DIGITS) == sig(hi, SHORT_DIGITS) => {
                format!("{}: {}x", counterpart(here), sig(lo, SHORT_DIGITS))
            }
            (Some(lo), Some(hi)) => format!(
                "{}: {}-{}x",
                counterpart(here),
                sig(lo, SHORT_DIGITS),
                sig(hi, SHORT_DIGITS)
            ),
            _ => format!("{}: not run", counterpart(here)),
        };
        lines.push(format!(
            "{name:<46} {rate:>10.0} {:>7}x  {measured}",
            sig(rate / VAN_RIEL[0].1, SHORT_DIGITS)
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kvm_only_strategies_are_refused_on_threads() {
        let be = Backend::Threads(kicklab_ring::NotifierKind::Futex);
        let e = run_all(
            be,
            &[Idle::Hint(Duration::from_micros(5))],
            10,
            Duration::ZERO,
            true,
            &crate::Silent,
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                LabError::Input {
                    input: Input::Idle,
                    ..
                }
            ),
            "{e}"
        );
        let e = run_all(be, &[Idle::Poll], 0, Duration::ZERO, true, &crate::Silent).unwrap_err();
        assert!(
            matches!(
                e,
                LabError::Input {
                    input: Input::Messages,
                    ..
                }
            ),
            "{e}"
        );
    }

    #[test]
    fn the_table_has_a_row_per_run_and_van_riels_rows() {
        let be = Backend::Threads(kicklab_ring::NotifierKind::Futex);
        let runs = run_all(
            be,
            &[Idle::Poll, Idle::Halt],
            200,
            Duration::from_micros(1),
            true,
            &crate::Silent,
        )
        .unwrap();
        let lines = table(be, &as_rounds(&runs), true);
        assert_eq!(lines.len(), 1 + runs.len() + 2 + VAN_RIEL.len());
        assert!(
            lines[2].starts_with("halt") && lines[2].contains(" 1x "),
            "{lines:?}"
        );
        // His rows carry the ratio measured here for their counterpart:
        // halt against itself, poll's over halt's, halt-poll not run.
        let his = &lines[1 + runs.len() + 2..];
        assert!(his[0].ends_with("halt: 1x"), "{his:?}");
        let poll = runs[0].1.rate_per_s / runs[1].1.rate_per_s;
        assert!(
            his[4].ends_with(&format!("poll / haltpoll: {}x", sig(poll, SHORT_DIGITS))),
            "{his:?}"
        );
        assert!(his[1].ends_with("halt-poll: not run"), "{his:?}");
        assert!(his[2].contains("no counterpart"), "{his:?}");
        // Without a halt run: the ratios name their base, his rows none.
        let lines = table(be, &as_rounds(&runs[..1]), true);
        assert!(lines[0].contains("vs poll"), "{lines:?}");
        assert!(
            lines[4].ends_with("halt: no halt run to compare with"),
            "{lines:?}"
        );
    }

    #[test]
    fn repeated_runs_show_their_median_and_range() {
        let run = |rate: f64| PingPongResult {
            rate_per_s: rate,
            cpu_ns_per_msg: 1e9 / rate,
            cpu_requester_ns: 0.0,
            cpu_responder_ns: 0.0,
            messages: 1000,
            responder_sleeps: 500,
        };
        let be = Backend::Threads(kicklab_ring::NotifierKind::Futex);
        let runs = vec![
            (
                Idle::Halt,
                vec![run(100_000.0), run(90_000.0), run(120_000.0)],
            ),
            (
                Idle::Poll,
                vec![run(200_000.0), run(150_000.0), run(210_000.0)],
            ),
        ];
        let lines = table(be, &runs, false);
        assert!(
            lines[0].ends_with("requests/s, lowest-highest run"),
            "{lines:?}"
        );
        // halt: median 100 000 of 90 000-120 000; poll 2x halt's median.
        assert!(lines[1].starts_with("halt"), "{lines:?}");
        assert!(
            lines[1].contains(" 100000 ") && lines[1].ends_with("90000-120000 (3 runs)"),
            "{lines:?}"
        );
        assert!(
            lines[2].contains(" 200000 ") && lines[2].contains(" 2x "),
            "{lines:?}"
        );
        assert!(lines[2].ends_with("150000-210000 (3 runs)"), "{lines:?}");
        assert_eq!(over_halt(&runs, "poll"), Some((2.0, 2.0)));
        assert_eq!(over_halt(&runs, "halt-poll"), None);
        assert_eq!(over_halt(&runs[1..], "poll"), None, "no halt run");
        // Single runs: no range column.
        let single = table(be, &as_rounds(&[(Idle::Halt, run(1000.0))]), false);
        assert!(!single[0].contains("lowest"), "{single:?}");
    }
}
