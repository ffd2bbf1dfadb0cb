//! Relating a guest's clock to the host's: the ping exchange, and guest
//! stamps placed in host time between two of them.
//!
//! The host writes a ping counter, the spinning guest answers with its
//! TSC; offset = guest TSC - midpoint of the host's send and receive, from
//! the fastest of a few hundred exchanges (uncertainty: half its round
//! trip). KVM runs a guest's TSC at the host's rate with an offset where
//! the host's TSC is stable; where it is not (KVM then catches the guest's
//! TSC up at each entry), or where the guest's clock misbehaves, the
//! offset moves over a run. So a run that stamps in the guest relates the
//! clocks before and after and places each stamp by the offset
//! interpolated linearly between the two ([`ClockMap`]): a clock that
//! drifts at a steady rate is followed, and the drift is reported. One CI
//! run on another machine saw half of a guest's stamps land before their
//! requests were made when only the first exchange placed them.
//!
//! What does not live here: the guest's side of the exchange
//! (`super::guest`, `ping_answers`), what the stamps mean (the callers).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::guest::{ctrl, map};
use super::vm::GuestMemory;
use crate::clock::rdtsc;
use crate::TestbedError;

/// One clock exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Exchange {
    /// Host TSC at the middle of the fastest round trip.
    pub at: u64,
    /// Guest TSC minus host TSC [ticks].
    pub offset: i128,
    /// Half the fastest round trip [ticks].
    pub uncertainty: u64,
}

/// Spins until the counter at `off` has reached `v` (it only grows; the
/// guest may already be past `v`), or until `stop` is set or `until`
/// passes (errors).
pub(super) fn spin_until(
    mem: &GuestMemory,
    off: u32,
    v: u32,
    stop: &AtomicBool,
    until: Option<Instant>,
) -> Result<(), TestbedError> {
    let mut i = 0u32;
    while mem.read_u32(off).wrapping_sub(v) >= 1 << 31 {
        std::hint::spin_loop();
        i = i.wrapping_add(1);
        if i.is_multiple_of(1024) {
            if stop.load(Ordering::Relaxed) {
                return Err(TestbedError::Hang(
                    "stopped while waiting for the guest".into(),
                ));
            }
            if until.is_some_and(|t| Instant::now() > t) {
                return Err(TestbedError::Hang(
                    "the guest did not answer the clock exchange".into(),
                ));
            }
        }
    }
    Ok(())
}

/// A clock exchange of `sync` pings, numbered from `first`. A guest that
/// stops answering is an error once `stop` is set, or once one ping goes
/// unanswered for `answer_within`: a limit on each ping, not on the
/// exchange, since each takes both the host's thread and the vCPU's on a
/// CPU at once, which a machine with more runnable threads than CPUs
/// grants only a time slice at a time (300 pings took over 2 s beside
/// two busy loops on 2 cores, each answered).
pub(super) fn ping(
    mem: &GuestMemory,
    first: u32,
    sync: u32,
    stop: &AtomicBool,
    answer_within: Option<Duration>,
) -> Result<Exchange, TestbedError> {
    let mut best = Exchange {
        at: 0,
        offset: 0,
        uncertainty: u64::MAX,
    };
    for i in first..first + sync {
        let h0 = rdtsc();
        mem.write_u32(map::CTRL + ctrl::REQ, i);
        let until = answer_within.map(|d| Instant::now() + d);
        spin_until(mem, map::CTRL + ctrl::RESP, i, stop, until)?;
        let h1 = rdtsc();
        let g = mem.read_u64(map::CTRL + ctrl::PONG_TSC);
        if (h1 - h0) / 2 < best.uncertainty {
            let mid = h0 / 2 + h1 / 2;
            best = Exchange {
                at: mid,
                offset: i128::from(g) - i128::from(mid),
                uncertainty: (h1 - h0) / 2,
            };
        }
    }
    Ok(best)
}

/// Guest stamps in host time, by the clock exchanges before and after the
/// span they were taken in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ClockMap {
    before: Exchange,
    after: Exchange,
}

impl ClockMap {
    /// By the exchanges `before` and `after` the span.
    pub(super) fn new(before: Exchange, after: Exchange) -> ClockMap {
        ClockMap { before, after }
    }

    /// By one exchange (the offset is taken as constant): what the runs
    /// did before, kept for the tests that show why they no longer do.
    #[cfg(test)]
    pub(super) fn fixed(e: Exchange) -> ClockMap {
        ClockMap {
            before: e,
            after: e,
        }
    }

    /// The guest's `stamp` (its TSC) in host TSC: the offset interpolated
    /// linearly at the stamp, held at the nearer exchange's outside the
    /// span (exchanges out of order: the first's). Signed, and unchecked:
    /// a stamp from untrusted memory may land anywhere.
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    pub(super) fn host(&self, stamp: u64) -> i128 {
        let (t0, o0) = (i128::from(self.before.at), self.before.offset);
        let (t1, o1) = (i128::from(self.after.at), self.after.offset);
        let g = i128::from(stamp);
        let offset = if t1 > t0 {
            let t = (g - o0).clamp(t0, t1);
            let f = (t - t0) as f64 / (t1 - t0) as f64;
            o0 + ((o1 - o0) as f64 * f).round() as i128
        } else {
            o0
        };
        g - offset
    }

    /// How far the guest's clock moved against the host's between the
    /// exchanges [ticks].
    pub(super) fn drift(&self) -> u64 {
        u64::try_from((self.after.offset - self.before.offset).unsigned_abs()).unwrap_or(u64::MAX)
    }

    /// The larger of the two exchanges' uncertainties [ticks].
    pub(super) fn uncertainty(&self) -> u64 {
        self.before.uncertainty.max(self.after.uncertainty)
    }
}

#[cfg(test)]
mod tests {
    use super::{ClockMap, Exchange};

    fn at(at: u64, offset: i128) -> Exchange {
        Exchange {
            at,
            offset,
            uncertainty: 10,
        }
    }

    /// Host TSC 1000 at the first exchange, 1_001_000 at the second; the
    /// guest's clock 500 ahead at the first, 1500 at the second (1000 ppm
    /// fast).
    fn drifting() -> ClockMap {
        ClockMap::new(at(1000, 500), at(1_001_000, 1500))
    }

    #[test]
    fn a_steady_drift_is_followed() {
        let m = drifting();
        // Done at host 501_000 (half-way): the guest read 501_000 + 1000.
        assert_eq!(m.host(502_000), 501_000);
        // At the exchanges themselves, and held outside them.
        assert_eq!(m.host(1500), 1000);
        assert_eq!(m.host(1_002_500), 1_001_000);
        assert_eq!(m.host(0), -500);
        assert_eq!(m.host(2_001_500), 2_000_000);
        assert_eq!(m.drift(), 1000);
        // With the first exchange alone, the last stamp lands 1000 ticks
        // late.
        assert_eq!(ClockMap::fixed(at(1000, 500)).host(1_002_500), 1_002_000);
    }

    #[test]
    fn hostile_stamps_and_exchanges_do_not_overflow() {
        let m = drifting();
        assert_eq!(m.host(u64::MAX), i128::from(u64::MAX) - 1500);
        // Exchanges out of order (a nonsense clock): the first offset.
        let back = ClockMap::new(at(5000, 100), at(1000, 9_999_999));
        assert_eq!(back.host(3100), 3000);
        let wild = ClockMap::new(
            at(0, i128::from(u64::MAX)),
            at(u64::MAX, -i128::from(u64::MAX)),
        );
        let _ = wild.host(u64::MAX);
        let _ = wild.host(0);
        assert_eq!(wild.drift(), u64::MAX);
    }
}
