//! A plain reference implementation of the same rules: a generic event queue
//! (`BinaryHeap`), one event per action, no folding, no specialisation.
//!
//! It also notes, where asked, what each party did interval by interval
//! ([`timeline`]): the picture of a regime.
//!
//! It exists for two reasons. It is an independent check of the fast loop in
//! `engine.rs`: fed the same seeded cost streams it draws the same values, so
//! the two must agree exactly, with random costs and spin budgets too. And it
//! is what a user would write instead: the benchmarks compare against it.
//!
//! Events are ordered by `(time, class, party, insertion)`: class 0 is a
//! publish/free, class 1 an attempt or a spin deadline, class 2 an attempt
//! that found nothing while the peer had one at the same instant, made
//! again after it; so every publish and free at an instant precedes every
//! attempt that could take it at that instant (the tie rule), even where
//! work takes no time.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use kicklab_model::{to_ps, WaitMode};

use crate::config::{SimConfig, SimError, Start, Totals};
use crate::sampler::Sampler;
use crate::timeline::{Activity, Timeline};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// End of W: publish (P) or free (C).
    EndWork,
    /// Reserve (P) or claim (C) attempt.
    Attempt,
    /// An attempt that found nothing while the peer had an attempt at the
    /// same instant, made again after it (class 2).
    Yielded,
    /// End of a spin budget; `gen` tells stale deadlines apart.
    Deadline { gen: u64 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Event {
    t: u64,
    class: u8,
    party: usize,
    seq: u64,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, Default)]
struct Party {
    asleep: bool,
    /// When it last fell asleep [ps].
    asleep_since: u64,
    spinning_since: Option<u64>,
    gen: u64,
    busy: u64,
    notifications: u64,
    sleeps: u64,
}

const P: usize = 0;
const C: usize = 1;

/// The model's party of an index.
fn party(i: usize) -> kicklab_model::Party {
    if i == P {
        kicklab_model::Party::P
    } else {
        kicklab_model::Party::C
    }
}

/// Runs the rules with a generic event queue and returns the run's totals.
///
/// # Errors
///
/// As [`crate::simulate`].
pub fn simulate_reference(cfg: &SimConfig) -> Result<Totals, SimError> {
    run(cfg, None)
}

/// Runs `cfg` (notify, poll or spin; at most 100 000 messages) and returns
/// what each party did. With the same seed its totals are the fast loop's
/// (the reference loop is checked against it to the picosecond).
///
/// # Errors
///
/// As [`simulate_reference`], and
/// [`SimError::TooManyMessages`] past 100 000 messages (a picture needs a
/// few rounds, not a measurement).
pub fn timeline(cfg: &SimConfig) -> Result<Timeline, SimError> {
    const MAX: u64 = 100_000;
    let total = cfg.messages.saturating_add(cfg.warmup);
    if total > MAX {
        return Err(SimError::TooManyMessages(u128::from(total)));
    }
    let mut t = Timeline::default();
    let totals = run(cfg, Some(&mut t))?;
    t.end_ps = totals.time_ps;
    Ok(t)
}

/// [`simulate_reference`], noting each interval and the queue's fill in
/// `rec` where given ([`crate::timeline`]).
#[allow(clippy::too_many_lines)]
pub(crate) fn run(cfg: &SimConfig, mut rec: Option<&mut Timeline>) -> Result<Totals, SimError> {
    let note = |rec: &mut Option<&mut Timeline>, who: usize, what: Activity, from: u64, to: u64| {
        if let Some(t) = rec.as_deref_mut() {
            t.push(party(who), what, from, to);
        }
    };
    let fill = |rec: &mut Option<&mut Timeline>, now: u64, n: u64| {
        if let Some(t) = rec.as_deref_mut() {
            t.fill.push((now, n));
        }
    };
    cfg.params.validate()?;
    if cfg.messages == 0 {
        return Err(SimError::NoMessages);
    }
    for (party, mode) in [
        (kicklab_model::Party::P, cfg.mode_p),
        (kicklab_model::Party::C, cfg.mode_c),
    ] {
        if !mode.is_basic() {
            return Err(SimError::Mode {
                party,
                reason: format!("the reference loop runs notify, poll and spin only, not {mode}"),
            });
        }
    }
    let prm = &cfg.params;
    // Same streams as the fast loop: W_P, W_C, N_P, N_C, S_P, S_C, V_P, V_C.
    let costs = [
        prm.w_p,
        prm.w_c,
        prm.n_p,
        prm.n_c,
        prm.s_p,
        prm.s_c,
        prm.vis_p(),
        prm.vis_c(),
    ];
    let mut draw: Vec<Sampler> = costs
        .iter()
        .zip(0u64..)
        .map(|(c, i)| Sampler::new(*c, cfg.seed, i))
        .collect();
    let (work, notify, start, seen) = ([0usize, 1], [2usize, 3], [4usize, 5], [6usize, 7]);
    let vis_set = [prm.v_p.is_some(), prm.v_c.is_some()];
    let k = [u64::from(prm.k_p), u64::from(prm.k_c)];
    let modes = [cfg.mode_p, cfg.mode_c];
    let stop = cfg.warmup + cfg.messages;

    // have[P] = free slots, have[C] = available messages.
    let mut have = [u64::from(prm.len), 0u64];
    let mut parties = [Party::default(); 2];
    let mut published_at: VecDeque<u64> = VecDeque::new();
    let (mut published, mut consumed, mut latency_sum) = (0u64, 0u64, 0u128);

    let mut heap = BinaryHeap::new();
    let mut seq = 0u64;
    // When each party's pending attempt (not a yielded one) is due.
    let mut attempt_at: [Option<u64>; 2] = [None, None];
    let mut push = |heap: &mut BinaryHeap<Reverse<Event>>,
                    attempt_at: &mut [Option<u64>; 2],
                    t: u64,
                    party: usize,
                    kind: Kind| {
        seq += 1;
        let class = match kind {
            Kind::EndWork => 0,
            Kind::Attempt | Kind::Deadline { .. } => 1,
            Kind::Yielded => 2,
        };
        if kind == Kind::Attempt {
            attempt_at[party] = Some(t);
        }
        heap.push(Reverse(Event {
            t,
            class,
            party,
            seq,
            kind,
        }));
    };
    if cfg.start == Start::Full {
        // L published messages, P asleep.
        have = [0, u64::from(prm.len)];
        published = u64::from(prm.len);
        published_at.extend(std::iter::repeat_n(0, prm.len as usize));
        parties[P].asleep = true;
        parties[P].sleeps = 1;
    } else {
        push(&mut heap, &mut attempt_at, 0, P, Kind::Attempt);
    }
    push(&mut heap, &mut attempt_at, 0, C, Kind::Attempt);

    while let Some(Reverse(ev)) = heap.pop() {
        let (me, peer, now) = (ev.party, 1 - ev.party, ev.t);
        match ev.kind {
            Kind::EndWork => {
                // Publish (P gives the consumer a message) or free (C gives
                // the producer a slot).
                have[peer] += 1;
                if me == P {
                    published += 1;
                    published_at.push_back(now);
                    fill(&mut rec, now, have[C]);
                } else {
                    consumed += 1;
                    let t0 = published_at
                        .pop_front()
                        .expect("a freed message was published");
                    if consumed > cfg.warmup {
                        latency_sum += u128::from(now - t0);
                    }
                    if consumed >= stop {
                        // Who sleeps or spins at the end does so up to it.
                        for (i, party) in parties.iter().enumerate() {
                            if party.asleep {
                                note(&mut rec, i, Activity::Sleep, party.asleep_since, now);
                            } else if let Some(since) = party.spinning_since {
                                note(&mut rec, i, Activity::Spin, since, now);
                            }
                        }
                        return Ok(Totals {
                            time_ps: now,
                            published,
                            consumed,
                            busy_p_ps: parties[P].busy,
                            busy_c_ps: parties[C].busy,
                            notifications_p: parties[P].notifications,
                            notifications_c: parties[C].notifications,
                            sleeps_p: parties[P].sleeps,
                            sleeps_c: parties[C].sleeps,
                            latency_sum_ps: latency_sum,
                        });
                    }
                }
                if parties[peer].asleep && have[peer] >= k[me] {
                    let n = draw[notify[me]].draw_ps();
                    // The peer sees it V <= N after it starts (V = N unset).
                    let v = if vis_set[me] {
                        draw[seen[me]].draw_ps().min(n)
                    } else {
                        n
                    };
                    let mut s = draw[start[peer]].draw_ps();
                    if let Some(scale) = &cfg.idle_scale[peer] {
                        let idle_ps = now + v - parties[peer].asleep_since;
                        s = (s as f64 * scale.factor(idle_ps as f64 / 1000.0)).round() as u64;
                    }
                    parties[me].notifications += 1;
                    parties[me].busy += n;
                    parties[peer].busy += s;
                    note(&mut rec, me, Activity::Kick, now, now + n);
                    note(
                        &mut rec,
                        peer,
                        Activity::Sleep,
                        parties[peer].asleep_since,
                        now + v,
                    );
                    note(&mut rec, peer, Activity::StartUp, now + v, now + v + s);
                    parties[peer].asleep = false;
                    push(&mut heap, &mut attempt_at, now + v + s, peer, Kind::Attempt);
                    push(&mut heap, &mut attempt_at, now + n, me, Kind::Attempt);
                } else {
                    if let Some(since) = parties[peer].spinning_since.take() {
                        note(&mut rec, peer, Activity::Spin, since, now);
                        parties[peer].busy += now - since;
                        parties[peer].gen += 1;
                        push(&mut heap, &mut attempt_at, now, peer, Kind::Attempt);
                    }
                    push(&mut heap, &mut attempt_at, now, me, Kind::Attempt);
                }
            }
            Kind::Attempt | Kind::Yielded => {
                if ev.kind == Kind::Attempt {
                    attempt_at[me] = None;
                }
                if have[me] >= 1 {
                    have[me] -= 1;
                    let w = draw[work[me]].draw_ps();
                    parties[me].busy += w;
                    note(&mut rec, me, Activity::Work, now, now + w);
                    if me == C {
                        fill(&mut rec, now, have[C]);
                    }
                    push(&mut heap, &mut attempt_at, now + w, me, Kind::EndWork);
                } else if ev.kind == Kind::Attempt && attempt_at[peer] == Some(now) {
                    // Nothing to take, and the peer attempts at this same
                    // instant: again after it (its work may publish or
                    // free at this instant).
                    push(&mut heap, &mut attempt_at, now, me, Kind::Yielded);
                } else {
                    match modes[me] {
                        WaitMode::Notify => {
                            parties[me].asleep = true;
                            parties[me].asleep_since = now;
                            parties[me].sleeps += 1;
                        }
                        WaitMode::Poll => parties[me].spinning_since = Some(now),
                        WaitMode::Spin { budget_ns } => {
                            parties[me].spinning_since = Some(now);
                            parties[me].gen += 1;
                            let gen = parties[me].gen;
                            push(
                                &mut heap,
                                &mut attempt_at,
                                now + to_ps(budget_ns),
                                me,
                                Kind::Deadline { gen },
                            );
                        }
                        _ => unreachable!("checked above"),
                    }
                }
            }
            Kind::Deadline { gen } => {
                if gen == parties[me].gen {
                    if let Some(since) = parties[me].spinning_since.take() {
                        note(&mut rec, me, Activity::Spin, since, now);
                        parties[me].busy += now - since;
                        parties[me].asleep = true;
                        parties[me].asleep_since = now;
                        parties[me].sleeps += 1;
                    }
                }
            }
        }
    }
    Err(SimError::Deadlock {
        t_ns: 0,
        free: have[P],
        avail: have[C],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::Interval;
    use kicklab_model::{predict, Cost, Params, Party, Regime};

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
            let totals = simulate_reference(&cfg).unwrap();
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
