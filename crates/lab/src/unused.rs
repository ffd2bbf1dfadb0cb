//! Flags a command was given that its run would not use, each with why
//! ([`Unused`]): the pair's notification flags where both parties poll
//! ([`when_polling`]), the wait flags of `sim` and `run` ([`WaitFlags`]),
//! and a parameter flag that a sweep sets itself ([`overridden`]). Noted,
//! not refused, except the last: a script that loops over strategies or
//! backends with the same flags must not stop at the one that has no use
//! for them. What does not live here: whether a flag was given (the front
//! end asks its parser: `given`), `qos`'s rules (`qos_command`).

use std::fmt;

use kicklab_model::{Cost, Flag, Param, WaitMode};

/// A flag given that the run did not use, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unused {
    /// The flag.
    pub flag: Flag,
    /// Why it went unused.
    pub why: String,
}

impl fmt::Display for Unused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} was ignored: {}", self.flag, self.why)
    }
}

/// Each of `flags` that was `given`, with `why`.
pub fn say(flags: &[Flag], given: &dyn Fn(Flag) -> bool, why: &str) -> Vec<Unused> {
    flags
        .iter()
        .filter(|f| given(**f))
        .map(|&flag| Unused {
            flag,
            why: why.to_string(),
        })
        .collect()
}

/// Where both parties poll, each notification flag given (N, V, S and
/// the thresholds k): no one notifies or sleeps.
pub fn when_polling(modes: [WaitMode; 2], given: &dyn Fn(Flag) -> bool) -> Vec<Unused> {
    if modes != [WaitMode::Poll; 2] {
        return Vec::new();
    }
    // Every parameter but L and the work.
    let flags: Vec<Flag> = Param::ALL
        .into_iter()
        .filter(|p| !matches!(p, Param::Len | Param::Wp | Param::Wc))
        .map(Flag::Param)
        .collect();
    say(
        &flags,
        given,
        "both parties poll, so no one notifies or sleeps",
    )
}

/// How a pair waits as `sim` and `run` take it: one strategy for both
/// parties, one per party, and send combining's batch.
#[derive(Clone, Copy, Debug)]
pub struct WaitFlags {
    /// `--strategy`.
    pub both: WaitMode,
    /// `--strategy-p`.
    pub p: Option<WaitMode>,
    /// `--strategy-c`.
    pub c: Option<WaitMode>,
    /// `--batch`.
    pub batch: u32,
}

impl WaitFlags {
    /// The flags given that the pair would not use: `--latency` where no
    /// party runs `adaptive` without a bound of its own, `--flush` with a
    /// batch of 1, the notification flags where both poll, the
    /// both-party strategy beside both per-party ones.
    pub fn unused(&self, given: &dyn Fn(Flag) -> bool) -> Vec<Unused> {
        let mut notes = Vec::new();
        let modes = [self.p.unwrap_or(self.both), self.c.unwrap_or(self.both)];
        let takes_bound = |m: &WaitMode| {
            matches!(
                m,
                WaitMode::Adaptive {
                    latency_ns: None,
                    ..
                }
            )
        };
        if !modes.iter().any(takes_bound) {
            let why = if modes.iter().any(|m| matches!(m, WaitMode::Adaptive { .. })) {
                "adaptive's own latency= is its bound"
            } else {
                "neither party runs adaptive, the one strategy that keeps a latency bound"
            };
            notes.extend(say(&[Flag::Latency], given, why));
        }
        if self.batch <= 1 {
            notes.extend(say(
                &[Flag::Flush],
                given,
                &format!(
                    "with {} 1 every message goes out as it is written",
                    Flag::Batch
                ),
            ));
        }
        notes.extend(when_polling(modes, given));
        if self.p.is_some() && self.c.is_some() {
            notes.extend(say(
                &[Flag::Strategy],
                given,
                &format!(
                    "{} and {} set both parties",
                    Flag::StrategyP,
                    Flag::StrategyC
                ),
            ));
        }
        notes
    }
}

/// A parameter flag given on the command line that `command` sets itself
/// (`sweep --vary wp=... --wp 2us`: the sweep's W_P wins), as the line
/// that refuses it; `sets` pairs each parameter the command sets with the
/// flag that sets it, `value(flag)` is what the command line gave a flag.
/// A distribution given for a swept cost is not refused: the sweep sets
/// its mean and keeps its shape (`--vary wp=0.1us..3us:30 --wp exp:1us`
/// sweeps exponential work), so only a constant (or a count) is;
/// `control` takes W_P from its workloads whatever the flag says.
pub fn overridden(
    command: &str,
    sets: &[(Param, Flag)],
    value: &dyn Fn(Flag) -> Option<String>,
) -> Option<String> {
    let control = command == "control";
    sets.iter().find_map(|&(param, by)| {
        let flag = Flag::Param(param);
        let given = value(flag)?;
        let shape_kept = !control
            && !param.is_count()
            && Cost::parse(&given).is_ok_and(|c| !matches!(c, Cost::Const(_)));
        (!shape_kept).then(|| {
            format!(
                "{flag}: {command} sets {} itself ({by}); leave {flag} out{}",
                param.symbol(),
                if param.is_count() || control {
                    String::new()
                } else {
                    format!(" (a distribution there keeps its shape: {command} sets its mean)")
                }
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polling_pairs_leave_the_notification_flags_unused() {
        let given = |f: Flag| f == Flag::Param(Param::Np) || f == Flag::Param(Param::Wp);
        let notes = when_polling([WaitMode::Poll; 2], &given);
        assert_eq!(notes.len(), 1);
        assert_eq!(
            notes[0].to_string(),
            "--np was ignored: both parties poll, so no one notifies or sleeps"
        );
        assert!(when_polling([WaitMode::Notify, WaitMode::Poll], &given).is_empty());
    }

    #[test]
    fn a_constant_for_a_swept_cost_is_refused_a_distribution_kept() {
        let sets = [(Param::Wp, Flag::Vary)];
        let constant = overridden("sweep", &sets, &|_| Some("2us".into())).unwrap();
        assert!(
            constant.starts_with("--wp: sweep sets W_P itself (--vary)"),
            "{constant}"
        );
        assert_eq!(
            overridden("sweep", &sets, &|_| Some("exp:2us".into())),
            None
        );
        assert!(overridden("control", &sets, &|_| Some("exp:2us".into())).is_some());
        assert_eq!(overridden("sweep", &sets, &|_| None), None);
    }
}
