//! What each party did, interval by interval, in one run of the rules: the
//! picture of a regime. [`timeline`] runs the reference loop
//! (`reference.rs`, the plain event-queue implementation the fast loop is
//! checked against) and keeps every work, kick, start-up, spin and sleep
//! interval of P and C, and the queue's fill after each change.
//!
//! What does not live here: drawing it (`kicklab-report`), the run's
//! rates (`simulate`).

use kicklab_model::Party;

use crate::config::{SimConfig, SimError};

/// What a party does during an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activity {
    /// W: working on a message.
    Work,
    /// N: sending a notification that wakes the peer.
    Kick,
    /// S: starting up after a notification woke it.
    StartUp,
    /// Spinning (polling) for its condition.
    Spin,
    /// Asleep, waiting for the peer's notification.
    Sleep,
}

impl Activity {
    /// Its name in a legend.
    pub fn name(self) -> &'static str {
        match self {
            Activity::Work => "work (W)",
            Activity::Kick => "kick (N)",
            Activity::StartUp => "start-up (S)",
            Activity::Spin => "spin",
            Activity::Sleep => "sleep",
        }
    }
}

/// One interval of one party.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval {
    /// Whose.
    pub party: Party,
    /// Doing what.
    pub activity: Activity,
    /// From, to [ps].
    pub from_ps: u64,
    /// See `from_ps`.
    pub to_ps: u64,
}

/// A run's intervals and the queue's fill over time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    /// Every interval, in the order each began or was known to end.
    pub intervals: Vec<Interval>,
    /// `(time [ps], messages in the queue)` after each publish and claim.
    pub fill: Vec<(u64, u64)>,
    /// When the run's last message was freed [ps].
    pub end_ps: u64,
}

impl Timeline {
    /// Adds an interval; an empty one is dropped.
    pub(crate) fn push(&mut self, party: Party, activity: Activity, from_ps: u64, to_ps: u64) {
        if to_ps > from_ps {
            self.intervals.push(Interval {
                party,
                activity,
                from_ps,
                to_ps,
            });
        }
    }
}

/// Runs `cfg` (notify, poll or spin; at most 100 000 messages) and returns
/// what each party did. With the same seed its totals are the fast loop's
/// (the reference loop is checked against it to the picosecond).
///
/// # Errors
///
/// As [`crate::reference::simulate_reference`], and
/// [`SimError::TooManyMessages`] past 100 000 messages (a picture needs a
/// few rounds, not a measurement).
pub fn timeline(cfg: &SimConfig) -> Result<Timeline, SimError> {
    const MAX: u64 = 100_000;
    let total = cfg.messages.saturating_add(cfg.warmup);
    if total > MAX {
        return Err(SimError::TooManyMessages(u128::from(total)));
    }
    let mut t = Timeline::default();
    let totals = crate::reference::run(cfg, Some(&mut t))?;
    t.end_ps = totals.time_ps;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kicklab_model::{predict, Cost, Params, Regime, WaitMode};

    fn busy(t: &Timeline, party: Party) -> u64 {
        t.intervals
            .iter()
            .filter(|i| i.party == party && i.activity != Activity::Sleep)
            .map(|i| i.to_ps - i.from_ps)
            .sum()
    }

    /// A party's intervals never overlap, and its busy ones add up to the
    /// busy time the run reports; the fill stays within the queue.
    #[test]
    fn intervals_tile_each_party_and_add_up_to_its_busy_time() {
        for (w_p, mode) in [
            (500.0, WaitMode::Notify),
            (2000.0, WaitMode::Notify),
            (1000.0, WaitMode::Poll),
            (700.0, WaitMode::Spin { budget_ns: 800.0 }),
        ] {
            let p = Params {
                w_p: Cost::Const(w_p),
                ..Params::default()
            };
            let cfg = SimConfig::new(p, mode, 2_000);
            let t = timeline(&cfg).unwrap();
            let totals = crate::reference::simulate_reference(&cfg).unwrap();
            assert_eq!(t.end_ps, totals.time_ps);
            for party in [Party::P, Party::C] {
                let mut own: Vec<&Interval> =
                    t.intervals.iter().filter(|i| i.party == party).collect();
                own.sort_by_key(|i| i.from_ps);
                for w in own.windows(2) {
                    assert!(w[0].to_ps <= w[1].from_ps, "{w:?} overlap ({mode:?})");
                }
                let want = if party == Party::P {
                    totals.busy_p_ps
                } else {
                    totals.busy_c_ps
                };
                // A spin still running at the end is drawn up to it but
                // is not in the totals.
                let open: u64 = t
                    .intervals
                    .iter()
                    .filter(|i| {
                        i.party == party && i.activity == Activity::Spin && i.to_ps == t.end_ps
                    })
                    .map(|i| i.to_ps - i.from_ps)
                    .sum();
                assert_eq!(busy(&t, party) - open, want, "{party:?} {mode:?}");
            }
            assert!(t.fill.iter().all(|&(_, n)| n <= u64::from(p.len)));
        }
    }

    /// In FP the producer sleeps and the consumer is woken never; in FC the
    /// other way round: the picture shows who sleeps.
    #[test]
    fn the_sleeper_is_the_regimes() {
        for (w_p, regime, sleeper) in [
            (1000.0, Regime::FP, Party::P),
            (2000.0, Regime::FC, Party::C),
        ] {
            let p = Params {
                w_p: Cost::Const(w_p),
                ..Params::default()
            };
            assert_eq!(predict(&p, WaitMode::Notify).unwrap().regime, regime);
            let t = timeline(&SimConfig::new(p, WaitMode::Notify, 5_000)).unwrap();
            let late = t.end_ps / 2;
            let sleeps = |party| {
                t.intervals
                    .iter()
                    .filter(|i| {
                        i.party == party && i.activity == Activity::Sleep && i.from_ps > late
                    })
                    .count()
            };
            let other = if sleeper == Party::P {
                Party::C
            } else {
                Party::P
            };
            assert!(sleeps(sleeper) > 0, "{regime:?}");
            assert_eq!(sleeps(other), 0, "{regime:?}");
        }
    }

    #[test]
    fn a_picture_is_refused_past_its_message_limit() {
        let cfg = SimConfig::new(Params::default(), WaitMode::Notify, 200_000);
        assert!(matches!(timeline(&cfg), Err(SimError::TooManyMessages(_))));
    }
}
