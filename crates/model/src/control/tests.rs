//! Tests of the strategies' state machines and of `adaptive`'s planner
//! (its self-check's are in `check.rs`).

use super::adaptive::*;
use super::*;
use crate::Cost;

/// `adaptive`'s planner alone, without its self-check (the tests of the
/// check are in `check.rs`).
fn planner() -> Result<WaitMode, String> {
    WaitMode::parse("adaptive:check=off")
}

fn view(now: u64) -> View {
    View {
        now,
        len: 256,
        published: 0,
        consumed: 0,
    }
}

/// A producer twice as fast as its consumer, taught the pace of both
/// (16 publishes a window, the consumer 2 us a message, its own work
/// 1 us), with the ring at `occupancy`; returns it and the time.
fn fast_producer(p: &Params, occupancy: u64) -> (Controller, u64) {
    let mut c = Controller::new(planner().unwrap(), Party::P, p, None);
    let us = 1_000_000;
    let mut t = 0;
    for round in 0..8u64 {
        t += 32 * us;
        let v = View {
            now: t,
            len: 256,
            published: 16 * (round + 1) + occupancy,
            consumed: 16 * (round + 1),
        };
        let _ = c.after_work(&v, us);
    }
    (c, t)
}

/// The ring at `now` with the producer `ahead` messages in front of a
/// consumer that has gone on at 2 us a message since `t`.
fn two_us_consumer(t: u64) -> impl Fn(u64, u64) -> View {
    move |now, ahead| View {
        now,
        len: 256,
        published: 128 + (now - t) / 2_000_000 + ahead,
        consumed: 128 + (now - t) / 2_000_000,
    }
}

#[test]
fn a_producer_naps_by_the_models_rules_and_pauses_by_kicks_where_naps_cost_more() {
    let p = Params::default(); // S_P 3.9 us, N_C 0.2 us
    let us = 1_000_000;
    // The consumer goes on at 2 us a message; the producer has run
    // 200 ahead.
    let (mut c, t) = fast_producer(&p, 2);
    let at = two_us_consumer(t);
    let full = |now| at(now, 200);
    // Naps that wake S late, as the model says: it keeps napping.
    for i in 0..8 {
        let Some(Action::Nap(until)) = c.after_work(&full(t + i * 100 * us), us) else {
            panic!("a producer 200 messages ahead naps");
        };
        c.woke(until, until + 3_900_000);
    }
    assert!(matches!(
        c.after_work(&full(t + 900 * us), us),
        Some(Action::Nap(_))
    ));
    // Naps that wake 20 us late (a timer through a nested hypervisor):
    // it pauses until the consumer's kick, leaving a margin queued.
    let (mut c, t) = fast_producer(&p, 2);
    for i in 0..3 {
        let Some(Action::Nap(until)) = c.after_work(&full(t + i * 100 * us), us) else {
            panic!("naps until it knows what they cost");
        };
        c.woke(until, until + 20 * us);
    }
    let Some(Action::Nap(until)) = c.after_work(&full(t + 300 * us), us) else {
        panic!("three naps are not enough to judge");
    };
    c.woke(until, until + 20 * us);
    let Some(Action::BlockUntil(free)) = c.after_work(&full(t + 400 * us), us) else {
        panic!("four dear naps: a kicked pause");
    };
    // Margin: m = (S_P + N_C + W_P) / pace = 5.1 us / 2 us, and two
    // standard deviations: m + 2 + 2 sqrt(m) = 7.7, so 8 left queued.
    assert_eq!(free, 256 - 8);
    let guest = c.clone();
    // A ring below the pause mark (80 us / 2 us = 40) is no reason to
    // pause.
    assert_eq!(c.after_work(&at(t + 500 * us, 10), us), None);

    // A guest with the same past, consulting only at its pause mark,
    // pauses by kicks only where its VMM can block for it, with the
    // same margin.
    let mut g = guest;
    assert!(!matches!(
        g.clone().at_pause_mark(&full(t + 600 * us), None, false),
        Some(Action::BlockUntil(_))
    ));
    assert_eq!(
        g.at_pause_mark(&full(t + 600 * us), None, true),
        Some(Action::BlockUntil(256 - 8))
    );
    // 200 queued at t + 600 us; the consumer (2 us a message) drains
    // 192 by t + 984 us and kicks. A VMM that finds 7 of the 8 left
    // has seen less of the wake-up than the estimate (2.55 messages):
    // nothing learned.
    let woken = |now: u64, consumed: u64| View {
        now,
        len: 256,
        published: 628,
        consumed,
    };
    let mut quick = g.clone();
    quick.resumed(&woken(t + 986 * us, 621));
    assert_eq!(
        quick.at_pause_mark(&full(t + 1400 * us), None, true),
        Some(Action::BlockUntil(256 - 8))
    );
    // One that finds 3 left at t + 994 us: the wake-up used at least
    // 5 messages' time. The next margin is 5 + 2 + 2 sqrt(5) = 11.5,
    // so 12 left queued.
    g.resumed(&woken(t + 994 * us, 625));
    assert_eq!(
        g.at_pause_mark(&full(t + 1400 * us), None, true),
        Some(Action::BlockUntil(256 - 12))
    );
}

#[test]
fn what_its_pauses_showed_decides_naps_or_kicks_and_one_stall_decides_nothing() {
    let p = Params::default(); // S_P 3.9 us, N_C 0.2 us
    let us = 1_000_000;
    let (mut c, t) = fast_producer(&p, 2);
    let at = two_us_consumer(t);
    // Four naps that wake 20 us late against S_P + N_C = 4.1 us: a
    // kicked pause, leaving 8 queued (the test above).
    for i in 0..4 {
        let Some(Action::Nap(until)) = c.after_work(&at(t + i * 100 * us, 200), us) else {
            panic!("naps until it knows what they cost");
        };
        c.woke(until, until + 20 * us);
    }
    assert_eq!(
        c.after_work(&at(t + 400 * us, 200), us),
        Some(Action::BlockUntil(256 - 8))
    );
    // Its first publish after the kick finds the ring run dry: the
    // wake-up took longer than the margin (counted as twice it, 16
    // messages, 32 us, a long idle's wake-up), so a nap's 20 us is no
    // longer dear: it naps again.
    assert_eq!(c.after_work(&at(t + 800 * us, 1), us), None);
    assert!(matches!(
        c.after_work(&at(t + 900 * us, 200), us),
        Some(Action::Nap(_))
    ));
    // With 25 queued the nap that leaves the margin (2 + 2 sqrt(25))
    // is shorter than its own wake-up: 13 x 2 us - 20 us - 1 us = 5 us.
    // Taken now that kicked pauses have shown that naps are not dear;
    // before them it was not, and a kicked pause would need 28 queued.
    assert_eq!(
        c.at_pause_mark(&at(t + 1000 * us, 25), None, true),
        Some(Action::Nap(t + 1005 * us))
    );

    // Naps that wake S late, one of eight stalled for 5 ms: the median
    // of what they took decides, so it keeps napping (a mean would
    // make naps look 150 times dearer, and they would never be taken
    // again to unlearn it).
    let (mut c, t) = fast_producer(&p, 2);
    let at = two_us_consumer(t);
    for i in 0..8 {
        let Some(Action::Nap(until)) = c.after_work(&at(t + i * 100 * us, 200), us) else {
            panic!("a producer 200 messages ahead naps");
        };
        c.woke(until, until + if i == 5 { 5_000 * us } else { 3_900_000 });
    }
    assert!(matches!(
        c.after_work(&at(t + 900 * us, 200), us),
        Some(Action::Nap(_))
    ));
}

#[test]
fn a_consumer_plans_its_naps_with_the_wake_ups_they_showed() {
    // S_C 0.2 us; the producer's kick 10 us, too dear for it (21% of
    // its time at the 16 messages a kicked wait would gather), so the
    // consumer naps however late its naps wake.
    let p = Params {
        n_p: Cost::Const(10_000.0),
        ..Params::default()
    };
    let us = 1_000_000;
    let mut c = Controller::new(planner().unwrap(), Party::C, &p, None);
    // The producer publishes one message every 3 us; the consumer
    // takes 1 us for each and finds the ring empty after it.
    let empty = |now: u64| View {
        now,
        len: 256,
        published: now / (3 * us),
        consumed: now / (3 * us),
    };
    let mut now = 0;
    let nap = |c: &mut Controller, now: &mut u64, late: u64| -> u64 {
        for _ in 0..20 {
            *now += 3 * us;
            let _ = c.after_work(&empty(*now), us);
        }
        let Action::Nap(until) = c.wait(&empty(*now), *now, true) else {
            panic!("a consumer 3 times faster naps");
        };
        c.woke(until, until + late);
        until - *now
    };
    // Before it has timed four naps: the bound's budget (80 us) less
    // S_C and two messages' work.
    assert_eq!(nap(&mut c, &mut now, 30 * us), 80 * us - 200_000 - 2 * us);
    for _ in 0..3 {
        nap(&mut c, &mut now, 30 * us);
    }
    // Its naps woke 30 us late: the first message, which may arrive
    // just after it fell asleep, still waits under 80 us.
    assert_eq!(nap(&mut c, &mut now, 30 * us), 80 * us - 30 * us - 2 * us);
    // Naps so late that nothing would gather under the bound (five of
    // the last eight 79 us late): it spins, then blocks, and is kicked.
    for _ in 0..5 {
        nap(&mut c, &mut now, 79 * us);
    }
    now += 3 * us;
    assert!(matches!(
        c.wait(&empty(now), now, true),
        Action::Spin(Some(_))
    ));
    // Every PROBE_EVERY-th such wait is a short nap (one of the
    // producer's messages), timed like any other. Once four of the
    // last eight woke 10 us late (the median halfway to 79 us), it
    // naps again: the median would allow 80 - 44.5 - 2 = 33.5 us, but
    // five of its last fourteen naps woke 79 us late, and a nap past 19
    // us keeps their first messages past the 100 us bound: 20.75 us, the
    // most that keeps 1% of the messages past it (`tail.rs`).
    let (mut naps, mut last) = (0, 0);
    for i in 1..=5 * PROBE_EVERY {
        now += 3 * us;
        let _ = c.after_work(&empty(now), us);
        if let Action::Nap(until) = c.wait(&empty(now), now, true) {
            naps += 1;
            if naps <= 4 {
                // (The wait above was the first declined.)
                let gap = if naps == 1 {
                    PROBE_EVERY - 1
                } else {
                    PROBE_EVERY
                };
                assert_eq!((i - last, until - now), (gap, 3 * us));
                last = i;
                c.woke(until, until + 10 * us);
            } else {
                assert!(
                    (20_745_000..20_757_000).contains(&(until - now)),
                    "{}",
                    until - now
                );
                break;
            }
        }
    }
    assert_eq!(naps, 5);
}

#[test]
fn a_consumer_waits_for_the_kick_where_naps_cost_more_than_kicked_wake_ups() {
    let p = Params::default(); // S_C 0.2 us, N_P 2.4 us
    let us = 1_000_000;
    let mut c = Controller::new(planner().unwrap(), Party::C, &p, None);
    // The producer publishes one message every 3 us; the consumer
    // takes 1 us for each.
    let ring = |now: u64, queued: u64| View {
        now,
        len: 256,
        published: now / (3 * us),
        consumed: now / (3 * us) - queued,
    };
    let mut now = 0;
    let run = |c: &mut Controller, now: &mut u64| {
        for _ in 0..20 {
            *now += 3 * us;
            let _ = c.after_work(&ring(*now, 0), us);
        }
        c.wait(&ring(*now, 0), *now, true)
    };
    // A kicked wait that ends at `now` after `idle`, `queued` waiting.
    let kicked = |c: &mut Controller, now: u64, queued: u64, idle: u64| {
        c.done(
            &ring(now, queued),
            Episode {
                start: now - idle,
                end: now,
                blocked: Some(idle),
            },
        );
    };
    // Four naps, each waking 30 us late: more than S_C + N_P.
    for _ in 0..NAP_SAMPLES {
        let Action::Nap(until) = run(&mut c, &mut now) else {
            panic!("it naps until it has timed its naps");
        };
        c.woke(until, until + 30 * us);
    }
    // Then it waits for the kick, with the nap it would take (80 - 30
    // - 2 us = 48 us) as deadline, at the 16 messages the producer
    // brings by then.
    let Action::TimedBlock(at, until) = run(&mut c, &mut now) else {
        panic!("naps wake later than a kick would");
    };
    assert_eq!((at, until - now), (16, 48 * us));
    // The kick came; one more message arrived while it woke: a kicked
    // wake-up is 3 us + N_P, and it goes on.
    now += 16 * 3 * us + 3 * us;
    kicked(&mut c, now, 16 + 1, 51 * us);
    let Action::TimedBlock(at, _) = run(&mut c, &mut now) else {
        panic!("kicked waits go on");
    };
    assert_eq!(at, 16);
    // A wait its deadline ended teaches what the timer's wake-up took,
    // and nothing of a kick's, whatever is queued when it runs (60 more
    // would have made kicked wake-ups 47 us, dearer than naps).
    c.woke(until, until + 30 * us);
    now += 16 * 3 * us + 60 * 3 * us;
    kicked(&mut c, now, 16 + 60, 78 * us);
    let Action::TimedBlock(at, _) = run(&mut c, &mut now) else {
        panic!("kicked waits go on");
    };
    assert_eq!(at, 16);
    // Kicked wake-ups that let 16 messages gather (the average moves to
    // 4.75, then 7.6, 9.7 messages: 31.5 us with N_P, more than the
    // naps' 30 us): back to naps.
    for round in 0..3 {
        now += 16 * 3 * us + 16 * 3 * us;
        kicked(&mut c, now, 16 + 16, 96 * us);
        let a = run(&mut c, &mut now);
        assert_eq!(matches!(a, Action::Nap(_)), round == 2, "{round}: {a:?}");
    }
    // A waiter that cannot block with a timeout naps.
    let mut guest = Controller::new(planner().unwrap(), Party::C, &p, None).without_timed_blocks();
    for _ in 0..=NAP_SAMPLES {
        let Action::Nap(until) = run(&mut guest, &mut now) else {
            panic!("no timed blocks for it");
        };
        guest.woke(until, until + 30 * us);
    }
    // Where the producer's kick would take more than 5% of its time
    // (10 us / (16 x 3 us) = 21%), it naps, however late.
    let dear = Params {
        n_p: Cost::Const(10_000.0),
        ..Params::default()
    };
    let mut c = Controller::new(planner().unwrap(), Party::C, &dear, None);
    for _ in 0..=NAP_SAMPLES {
        let Action::Nap(until) = run(&mut c, &mut now) else {
            panic!("kicks too dear for the producer");
        };
        c.woke(until, until + 30 * us);
    }
}

#[test]
fn a_consumer_goes_into_kicked_waits_past_a_margin_and_out_at_the_line() {
    let p = Params::default(); // S_C 0.2 us, N_P 2.4 us: a kick's 2.6 us
    let us = 1_000_000;
    // The producer publishes one message every 3 us; the consumer
    // takes 1 us for each.
    let ring = |now: u64, queued: u64| View {
        now,
        len: 256,
        published: now / (3 * us),
        consumed: now / (3 * us) - queued,
    };
    let run = |c: &mut Controller, now: &mut u64| {
        for _ in 0..20 {
            *now += 3 * us;
            let _ = c.after_work(&ring(*now, 0), us);
        }
        c.wait(&ring(*now, 0), *now, true)
    };
    let naps = |c: &mut Controller, now: &mut u64, late: u64| {
        for _ in 0..NAP_SAMPLES {
            let Action::Nap(until) = run(c, now) else {
                panic!("it naps until it has timed its naps");
            };
            c.woke(until, until + late);
        }
    };
    let mut now = 0;
    // Naps 3.5 us late: later than a kick's 2.6 us, within 1.5 times
    // it (3.9 us): it naps on.
    let mut c = Controller::new(planner().unwrap(), Party::C, &p, None);
    naps(&mut c, &mut now, 3_500_000);
    for _ in 0..8 {
        let Action::Nap(until) = run(&mut c, &mut now) else {
            panic!("within the margin: naps");
        };
        c.woke(until, until + 3_500_000);
    }
    // Naps 4.5 us late: past it, so kicked waits.
    let mut c = Controller::new(planner().unwrap(), Party::C, &p, None);
    naps(&mut c, &mut now, 4_500_000);
    let kicked = |c: &mut Controller, now: &mut u64, gathered: u64| {
        let Action::TimedBlock(at, _) = run(c, now) else {
            panic!("in kicked waits");
        };
        *now += u64::from(at) * 3 * us;
        let queued = u64::from(at) + gathered;
        c.done(
            &ring(*now, queued),
            Episode {
                start: *now - 50 * us,
                end: *now,
                blocked: Some(50 * us),
            },
        );
    };
    // Its kicked wake-ups let 0, then 1, 1, 1 messages gather: 0, 0.25,
    // 0.44, 0.58 on average, 2.4 to 4.1 us with N_P. The naps' 4.5 us
    // is within 1.5 times all but the first, yet more than each: it
    // stays in kicked waits.
    kicked(&mut c, &mut now, 0);
    for _ in 0..3 {
        kicked(&mut c, &mut now, 1);
    }
    // Two more (0.68, then 0.76 on average: 4.45, then 4.7 us with
    // N_P): the naps' 4.5 us is no more than that, and it naps again.
    kicked(&mut c, &mut now, 1);
    kicked(&mut c, &mut now, 1);
    let a = run(&mut c, &mut now);
    assert!(matches!(a, Action::Nap(_)), "back to naps: {a:?}");
}

/// `n` naps of the producer `c` 200 messages ahead of the consumer
/// `at` from `t`, 100 us apart, each waking `late` after its end;
/// returns the time of the last decision.
fn naps_late(c: &mut Controller, at: &impl Fn(u64, u64) -> View, t: u64, n: u64, late: u64) -> u64 {
    let mut now = t;
    for _ in 0..n {
        now += 100_000_000;
        let Some(Action::Nap(until)) = c.after_work(&at(now, 200), 1_000_000) else {
            panic!("naps until it knows what they cost");
        };
        c.woke(until, until + late);
    }
    now
}

/// A party that pauses or waits by kicks because its naps woke too
/// late takes every 32nd as a nap, timed, and naps again once those
/// probes have made its naps cheap (five of its last eight).
#[test]
fn a_party_in_kicked_pauses_probes_naps_and_naps_again_once_they_are_cheap() {
    let p = Params::default(); // S_P 3.9 us, N_C 0.2 us
    let us = 1_000_000;
    // A producer: four naps 20 us late, then kicked pauses whose
    // wake-ups used 2 messages (4 us): naps are dear.
    let (mut c, t) = fast_producer(&p, 2);
    let at = two_us_consumer(t);
    let mut now = naps_late(&mut c, &at, t, 4, 20 * us);
    let (mut probes, mut pauses) = (0, 0);
    loop {
        now += 100 * us;
        match c.after_work(&at(now, 200), us) {
            Some(Action::BlockUntil(_)) => {
                pauses += 1;
                // Woken, one publish later: 7 queued of the margin's 8.
                now += 10 * us;
                assert_eq!(c.after_work(&at(now, 7), us), None);
            }
            Some(Action::Nap(until)) if probes < 5 => {
                probes += 1;
                assert_eq!(pauses, 31 * probes, "every 32nd is a probe");
                // Naps have turned cheap: S_P late.
                c.woke(until, until + 3_900_000);
            }
            a => {
                // After five cheap probes, five of the last eight naps
                // are cheap: it naps, and keeps napping.
                assert_eq!(probes, 5, "{a:?}");
                assert!(matches!(a, Some(Action::Nap(_))), "{a:?}");
                break;
            }
        }
    }
    // With 30 queued the nap that leaves the margin (13 us) is shorter
    // than its 20 us wake-up: not worth one, so kicked pauses; the
    // probe is that short nap all the same (it still ends before the
    // ring is down to the margin).
    let (mut c, t) = fast_producer(&p, 2);
    let at = two_us_consumer(t);
    let mut now = naps_late(&mut c, &at, t, 4, 20 * us);
    let probe_at = |c: &mut Controller, now: &mut u64| -> u64 {
        for i in 1..=32 {
            *now += 100 * us;
            // At its pause mark, 30 left after an exit (as a guest
            // meets it).
            match c.at_pause_mark(&at(*now, 30), None, true) {
                Some(Action::BlockUntil(_)) if i < 32 => {
                    *now += 10 * us;
                    assert_eq!(c.after_work(&at(*now, 7), us), None);
                }
                Some(Action::Nap(until)) if i == 32 => return until - *now,
                a => panic!("pause {i}: {a:?}"),
            }
        }
        unreachable!()
    };
    let probe = probe_at(&mut c, &mut now);
    assert!(probe > 10 * us && probe < 20 * us, "{probe}");
    // A nap that woke 250 us late (a stall): no nap can be planned at
    // all after it (one is enough to judge that), and the probe is one
    // of the consumer's messages long.
    let (mut c, t2) = fast_producer(&p, 2);
    assert_eq!(t2, t, "the same start");
    let mut now = t + 100 * us;
    let Some(Action::Nap(until)) = c.after_work(&at(now, 200), us) else {
        panic!("a producer 200 messages ahead naps");
    };
    c.woke(until, until + 250 * us);
    now = until + 250 * us;
    assert_eq!(probe_at(&mut c, &mut now), 2 * us);
    // A consumer in kicked waits: every 32nd wait is its nap.
    let mut c = Controller::new(planner().unwrap(), Party::C, &p, None);
    let ring = |now: u64| View {
        now,
        len: 256,
        published: now / (3 * us),
        consumed: now / (3 * us),
    };
    let mut now = 0;
    let mut run = |c: &mut Controller| {
        for _ in 0..20 {
            now += 3 * us;
            let _ = c.after_work(&ring(now), us);
        }
        c.wait(&ring(now), now, true)
    };
    for _ in 0..NAP_SAMPLES {
        let Action::Nap(until) = run(&mut c) else {
            panic!("it naps until it has timed its naps");
        };
        c.woke(until, until + 30 * us);
    }
    let kinds: Vec<bool> = (0..64)
        .map(|_| match run(&mut c) {
            Action::TimedBlock(..) => true,
            Action::Nap(until) => {
                c.woke(until, until + 30 * us);
                false
            }
            a => panic!("{a:?}"),
        })
        .collect();
    let naps: Vec<usize> = (0..64).filter(|&i| !kinds[i]).collect();
    assert_eq!(naps, [31, 63], "the 32nd and 64th");
}

#[test]
fn halt_poll_grows_keeps_and_shrinks_its_window() {
    let p = Params::default();
    let mut c = Controller::new(WaitMode::parse("halt-poll").unwrap(), Party::C, &p, None);
    let us = 1_000_000;
    // Window 0: block at once; a 5 us wait grows it to start (10 us).
    assert_eq!(c.wait(&view(0), 0, true), Action::Block);
    let ep = |len: u64| Episode {
        start: 0,
        end: len,
        blocked: Some(len),
    };
    c.done(&view(5 * us), ep(5 * us));
    assert_eq!(c.wait(&view(0), 0, true), Action::Spin(Some(10 * us)));
    // A wait within the window keeps it; a longer one below max doubles it.
    c.done(&view(0), ep(8 * us));
    assert_eq!(c.wait(&view(0), 0, true), Action::Spin(Some(10 * us)));
    c.done(&view(0), ep(15 * us));
    assert_eq!(c.wait(&view(0), 0, true), Action::Spin(Some(20 * us)));
    // One longer than max halves it.
    c.done(&view(0), ep(300 * us));
    assert_eq!(c.wait(&view(0), 0, true), Action::Spin(Some(10 * us)));
    // After the spin runs out it blocks.
    assert_eq!(c.wait(&view(10 * us), 0, false), Action::Block);
}

#[test]
fn haltpoll_blocks_at_once_after_a_timed_out_spin() {
    let p = Params::default();
    let mut c = Controller::new(WaitMode::parse("haltpoll").unwrap(), Party::C, &p, None);
    let us = 1_000_000;
    assert_eq!(c.wait(&view(0), 0, true), Action::Block);
    c.done(
        &view(0),
        Episode {
            start: 0,
            end: 30 * us,
            blocked: Some(30 * us),
        },
    );
    assert_eq!(c.wait(&view(0), 0, true), Action::Spin(Some(50 * us)));
    assert_eq!(c.wait(&view(50 * us), 0, false), Action::Block);
    c.done(
        &view(0),
        Episode {
            start: 0,
            end: 60 * us,
            blocked: Some(10 * us),
        },
    );
    // The last spin timed out: block at once, once.
    assert_eq!(c.wait(&view(0), 0, true), Action::Block);
    c.done(
        &view(0),
        Episode {
            start: 0,
            end: us,
            blocked: Some(us),
        },
    );
    assert_eq!(c.wait(&view(0), 0, true), Action::Spin(Some(50 * us)));
}

#[test]
fn defer_naps_count_times_then_blocks_and_resets() {
    let p = Params::default();
    let mut c = Controller::new(
        WaitMode::parse("defer:timeout=5us,count=3").unwrap(),
        Party::C,
        &p,
        None,
    );
    let us = 1_000_000;
    assert_eq!(c.wait(&view(0), 0, true), Action::Nap(5 * us));
    assert_eq!(c.wait(&view(6 * us), 0, false), Action::Nap(11 * us));
    assert_eq!(c.wait(&view(12 * us), 0, false), Action::Nap(17 * us));
    assert_eq!(c.wait(&view(18 * us), 0, false), Action::Block);
    c.done(
        &view(0),
        Episode {
            start: 0,
            end: 30 * us,
            blocked: Some(10 * us),
        },
    );
    assert_eq!(c.wait(&view(40 * us), 40 * us, true), Action::Nap(45 * us));
}

#[test]
fn hybrid_sleeps_half_the_estimate() {
    let p = Params::default();
    let mut mean = Controller::new(WaitMode::parse("hybrid").unwrap(), Party::C, &p, None);
    let mut min = Controller::new(WaitMode::parse("hybrid:min").unwrap(), Party::C, &p, None);
    for c in [&mut mean, &mut min] {
        assert_eq!(c.wait(&view(0), 0, true), Action::Spin(None));
        for len in [10_000, 30_000] {
            c.done(
                &view(0),
                Episode {
                    start: 0,
                    end: len,
                    blocked: None,
                },
            );
        }
    }
    assert_eq!(mean.wait(&view(100), 100, true), Action::Nap(100 + 10_000));
    assert_eq!(min.wait(&view(100), 100, true), Action::Nap(100 + 5_000));
    assert_eq!(min.wait(&view(9_000), 100, false), Action::Spin(None));
}

/// A guest consults its controller only at its pause mark, through an
/// exit during which the consumer drains a few messages: the decision
/// takes the mark as reached (where `after_work`, which sees the ring
/// below it, would not pause), and a consultation without a timing of
/// its own work leaves the estimate as it was.
/// The ring of 256 after k messages of a consumer at 1.16 us a
/// message, `occupancy` queued.
fn paced(k: u64, occupancy: u64) -> View {
    View {
        now: k * 1_160_000,
        len: 256,
        published: k + occupancy,
        consumed: k,
    }
}

/// An `adaptive` producer (100 us bound) that has watched the consumer
/// of [`paced`] for 100 messages with `queued` waiting, its own work
/// 0.5 us: the faster party. Returns what its first decision was.
fn watching_producer(queued: u64) -> (Controller, Option<Action>) {
    let p = Params::default();
    let mode = WaitMode::parse("adaptive:latency=100us,check=off").unwrap();
    let mut c = Controller::new(mode, Party::P, &p, None);
    for k in 0..100 {
        c.observe(&paced(k, queued));
    }
    let first = c.after_work(&paced(100, queued), 500_000);
    (c, first)
}

#[test]
fn a_pause_mark_reached_before_an_exit_still_naps() {
    let p = Params::default();
    let at = paced;
    // A consumer at 1.16 us per message behind 100 waiting ones, the
    // producer's own work 0.5 us.
    let (mut c, first) = watching_producer(100);
    assert_eq!(first.map(|_| ()), Some(()));
    let mark = c
        .pause_mark(&at(101, 100))
        .expect("the faster party pauses");
    // At the exit the ring held the mark; 11 messages drained since.
    let drained = at(111, mark - 11);
    assert_eq!(c.clone().after_work(&drained, 500_000), None);
    assert!(matches!(
        c.clone().at_pause_mark(&drained, None, false),
        Some(Action::Nap(t)) if t > drained.now
    ));
    // Without a timing the estimate stands: still the faster party.
    for k in 0..50 {
        let _ = c.at_pause_mark(&at(112 + k, mark), None, false);
    }
    assert!(c.pause_mark(&at(200, mark)).is_some());
    // Not an adaptive party: nothing to decide.
    let mut poll = Controller::new(WaitMode::Poll, Party::P, &p, None);
    assert_eq!(poll.at_pause_mark(&drained, Some(500_000), true), None);
}

/// A party re-reads the peer's index only where a decision needs it:
/// a producer below its pause mark (by a stale view, which overstates
/// the ring) goes on by its own pace alone, and re-reads at the mark,
/// every 16 messages, and after a kicked pause; a consumer every 16;
/// other strategies never.
#[test]
fn a_party_rereads_the_peers_index_only_where_a_decision_needs_it() {
    let p = Params::default();
    let mode = WaitMode::parse("adaptive:latency=100us,check=off").unwrap();
    let at = paced;
    let (mut c, _) = watching_producer(30);
    let mark = c.pause_mark(&at(100, 30)).expect("the faster party pauses");
    assert!(mark > 40, "a mark of {mark}");
    // Below the mark: 15 messages by the stale view, the 16th re-reads.
    for k in 1..16 {
        assert!(!c.needs_fresh(&at(100, 30 + k)), "message {k}");
        c.own_work(500_000);
    }
    assert!(c.needs_fresh(&at(100, 46)), "the 16th");
    let _ = c.after_work(&at(116, 30), 500_000);
    // At the mark by the stale view: re-read at once.
    assert!(c.needs_fresh(&at(116, mark)));
    // Still the faster party: `own_work` kept its pace.
    assert!(c.pause_mark(&at(116, 30)).is_some());
    // A consumer decides nothing after a message: every 16th.
    let mut cons = Controller::new(mode, Party::C, &p, None);
    let fresh = (0..32).filter(|_| cons.needs_fresh(&at(0, 1))).count();
    assert_eq!(fresh, 2);
    // Polling decides nothing after a message.
    let mut poll = Controller::new(WaitMode::Poll, Party::P, &p, None);
    assert!(!poll.needs_fresh(&at(0, 255)));
}

#[test]
fn coalescing_caps_n_at_the_ring() {
    let m = WaitMode::parse("coalesce:300,10us").unwrap();
    assert_eq!(coalescing(m, 256), Some((256, 10_000_000)));
    assert_eq!(coalescing(WaitMode::Notify, 256), None);
    assert_eq!(
        coalescing(WaitMode::parse("coalesce:1,1us").unwrap(), 256),
        None
    );
}
