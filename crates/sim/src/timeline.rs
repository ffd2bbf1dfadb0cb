//! What each party did, interval by interval, in one run of the rules: the
//! picture of a regime. The types: every work, kick, start-up, spin and
//! sleep interval of P and C, and the queue's fill after each change.
//!
//! What does not live here: the run that notes them (the reference loop,
//! `reference.rs`: `kicklab_sim::timeline`), drawing them
//! (`kicklab-report`), the run's rates (`simulate`).

use kicklab_model::Party;

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
