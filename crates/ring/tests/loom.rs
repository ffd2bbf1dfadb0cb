//! Model checking of the notification protocol with loom: every
//! interleaving (up to a preemption bound) of a producer and a consumer
//! moving messages through a tiny ring, for each wait strategy and
//! thresholds above 1. A lost wake-up shows as a deadlock, which loom
//! reports; a lost, duplicated or reordered message fails the assertion.
//!
//! The waits driven by a policy (`driven.rs`) are checked with scripted
//! policies that walk through every kind of step a strategy takes (timed
//! sleeps, spins with and without deadlines, blocks), on both sides, with
//! notifier-side coalescing too: under loom a nap is a yield and a spin
//! with a deadline runs out after two rounds, so every interleaving of
//! "woke from a nap / gave up a spin just as the peer moved" is explored.
//!
//! Run: `cargo test -p kicklab-ring --features loom --test loom --release`.
#![cfg(feature = "loom")]

use std::time::Duration;

use kicklab_ring::{
    ring, Action, Clock, Coalescer, Driven, Episode, Notifier, Policy, View, WaitStats,
    WaitStrategy,
};
use loom::sync::{Arc, Condvar, Mutex};

/// A token notifier on loom's primitives.
#[derive(Default)]
struct LoomNotifier {
    token: Mutex<bool>,
    cv: Condvar,
}

impl Notifier for LoomNotifier {
    fn notify(&self) -> std::io::Result<()> {
        *self.token.lock().unwrap() = true;
        self.cv.notify_one();
        Ok(())
    }
    fn wait(&self) -> std::io::Result<()> {
        let mut t = self.token.lock().unwrap();
        while !*t {
            t = self.cv.wait(t).unwrap();
        }
        *t = false;
        Ok(())
    }
    fn wait_timeout(&self, _timeout: std::time::Duration) -> std::io::Result<bool> {
        // The deadline comes at a point of loom's choosing: a kick sent
        // before it ends the wait, one sent after stays pending.
        loom::thread::yield_now();
        let mut t = self.token.lock().unwrap();
        Ok(std::mem::take(&mut *t))
    }
}

fn transfer(len: u32, messages: u64, k_p: u32, k_c: u32, sp: WaitStrategy, sc: WaitStrategy) {
    transfer_batched(len, messages, k_p, k_c, sp, sc, 1);
}

/// The producer publishes every `batch` messages (send combining), and
/// sooner when the ring is full.
fn transfer_batched(
    len: u32,
    messages: u64,
    k_p: u32,
    k_c: u32,
    sp: WaitStrategy,
    sc: WaitStrategy,
    batch: u64,
) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(move || {
        let (mut p, mut c) = ring(len);
        let to_c = Arc::new(LoomNotifier::default());
        let to_p = Arc::new(LoomNotifier::default());
        let (to_c2, to_p2) = (Arc::clone(&to_c), Arc::clone(&to_p));
        let producer = loom::thread::spawn(move || {
            let mut st = WaitStats::default();
            let mut pending = 0;
            // Publish what is written; kick if the consumer asked.
            let flush = |p: &mut kicklab_ring::Producer| {
                let pubd = p.publish();
                if p.peer_wants_kick(pubd) {
                    to_c2.notify().unwrap();
                }
            };
            for i in 0..messages {
                if pending > 0 && p.free().unwrap() == 0 {
                    flush(&mut p);
                    pending = 0;
                }
                p.wait_for_space(k_c, sp, &*to_p2, &mut st).unwrap();
                assert!(p.write(i).unwrap());
                pending += 1;
                if pending == batch || i + 1 == messages {
                    flush(&mut p);
                    pending = 0;
                }
            }
            // End of stream: fewer than k_P messages may be left, so flush.
            if k_p > 1 {
                to_c2.notify().unwrap();
            }
        });
        let mut st = WaitStats::default();
        for want in 0..messages {
            c.wait_for_messages(k_p, sc, &*to_c, &mut st).unwrap();
            assert_eq!(
                c.claim().unwrap(),
                Some(want),
                "lost, duplicated or reordered"
            );
            let r = c.release();
            if c.peer_wants_kick(r) {
                to_p.notify().unwrap();
            }
        }
        producer.join().unwrap();
    });
}

const BLOCK: WaitStrategy = WaitStrategy::Block;
const SPIN: WaitStrategy = WaitStrategy::SpinThenBlock(Duration::from_micros(1));

#[test]
fn block_both_sides_k1() {
    transfer(2, 3, 1, 1, BLOCK, BLOCK);
}

#[test]
fn block_both_sides_thresholds_above_one() {
    transfer(2, 3, 2, 2, BLOCK, BLOCK);
}

#[test]
fn producer_threshold_above_one_consumer_one() {
    transfer(3, 4, 2, 1, BLOCK, BLOCK);
}

#[test]
fn one_slot() {
    transfer(1, 3, 1, 1, BLOCK, BLOCK);
}

#[test]
fn spin_then_block() {
    transfer(2, 3, 1, 2, SPIN, SPIN);
}

#[test]
fn poll_against_block() {
    transfer(2, 3, 1, 1, WaitStrategy::Poll, BLOCK);
    transfer(2, 3, 1, 1, BLOCK, WaitStrategy::Poll);
}

#[test]
fn send_combining_two_per_publish() {
    transfer_batched(2, 4, 1, 1, BLOCK, BLOCK, 2);
    transfer_batched(3, 4, 2, 1, BLOCK, BLOCK, 2);
}

/// A batch longer than the ring: only the early publish on a full ring keeps
/// the pair going (without it loom reports the deadlock).
#[test]
fn send_combining_batch_longer_than_the_ring() {
    transfer_batched(2, 4, 1, 1, BLOCK, BLOCK, 3);
}

/// No clock under loom: always 0 (naps yield, deadline spins run out after
/// two rounds, coalescing's time limit never passes).
struct NoClock;

impl Clock for NoClock {
    fn now_ps(&self) -> u64 {
        0
    }
}

/// Plays `script` from its start in every episode; after its end, repeats
/// its last step.
struct Scripted {
    script: &'static [Action],
    step: usize,
    /// The pause after every message, if any.
    pause: Option<Action>,
}

impl Policy for Scripted {
    fn wait(&mut self, _v: &View, _start: u64, first: bool) -> Action {
        if first {
            self.step = 0;
        }
        let a = self.script[self.step.min(self.script.len() - 1)];
        self.step += 1;
        a
    }
    fn done(&mut self, v: &View, e: Episode) {
        assert!(e.end >= e.start);
        assert!(v.occupancy() <= v.len);
    }
    fn after_work(&mut self, v: &View, _work_ps: Option<u64>) -> Option<Action> {
        assert!(v.occupancy() <= v.len);
        self.pause
    }
}

/// Nap, spin to a deadline, then block.
const NAP_SPIN_BLOCK: &[Action] = &[Action::Nap(0), Action::Spin(Some(0)), Action::Block];
/// `defer`: nap, nap, block.
const DEFER: &[Action] = &[Action::Nap(0), Action::Nap(0), Action::Block];
/// `sleep:<Y>`: naps only, never registers.
const SLEEP: &[Action] = &[Action::Nap(0)];
/// `hybrid`: a nap, then spin with no deadline.
const HYBRID: &[Action] = &[Action::Nap(0), Action::Spin(None)];
/// `notify`.
const BLOCK_NOW: &[Action] = &[Action::Block];
/// `adaptive`'s consumer where naps wake late: a kick at 2, or the deadline.
const TIMED: &[Action] = &[Action::TimedBlock(2, 0)];

/// One side of a driven transfer: its script, and coalescing of its own
/// kicks (hold until `n` are pending; the time limit never passes).
#[derive(Clone, Copy)]
struct Side {
    script: &'static [Action],
    coalesce: Option<u64>,
    /// The producer's pause after each publish (`adaptive`'s
    /// `BlockUntil`: block once until the consumer's kick).
    pause: Option<Action>,
}

const fn side(script: &'static [Action]) -> Side {
    Side {
        script,
        coalesce: None,
        pause: None,
    }
}

/// Sends a held kick or a wanted one as the coalescer says.
fn kick_now(co: &mut Option<Coalescer>, wanted: bool, pending: impl FnOnce() -> u64) -> bool {
    match co {
        None => wanted,
        Some(c) if wanted || c.holding() => c.kick_now(wanted, 0, pending()),
        Some(_) => false,
    }
}

fn transfer_driven(len: u32, messages: u64, k_p: u32, k_c: u32, sp: Side, sc: Side) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(move || {
        let (mut p, mut c) = ring(len);
        let to_c = Arc::new(LoomNotifier::default());
        let to_p = Arc::new(LoomNotifier::default());
        let (to_c2, to_p2) = (Arc::clone(&to_c), Arc::clone(&to_p));
        let producer = loom::thread::spawn(move || {
            let mut st = WaitStats::default();
            let mut by = Driven::new(
                Scripted {
                    script: sp.script,
                    step: 0,
                    pause: sp.pause,
                },
                NoClock,
            );
            let mut co = sp.coalesce.map(|n| Coalescer::new(n, u64::MAX));
            for i in 0..messages {
                // A held kick goes before this side waits.
                if p.free().unwrap() == 0 && co.as_mut().is_some_and(Coalescer::flush) {
                    to_c2.notify().unwrap();
                }
                p.wait_for_space_by(k_c, &mut by, &*to_p2, &mut st).unwrap();
                assert!(p.write(i).unwrap());
                let pubd = p.publish();
                let wanted = p.peer_wants_kick(pubd);
                if kick_now(&mut co, wanted, || u64::from(len - p.free_now().unwrap())) {
                    to_c2.notify().unwrap();
                }
                if sp.pause.is_some() {
                    // A held kick goes before this side pauses, too.
                    if co.as_mut().is_some_and(Coalescer::flush) {
                        to_c2.notify().unwrap();
                    }
                    p.pause_by(Some(0), &mut by, &*to_p2, &mut st).unwrap();
                }
            }
            // ... and before it finishes; end of stream: fewer than k_P
            // messages may be left, so kick anyway.
            if co.as_mut().is_some_and(Coalescer::flush) || k_p > 1 {
                to_c2.notify().unwrap();
            }
        });
        let mut st = WaitStats::default();
        let mut by = Driven::new(
            Scripted {
                script: sc.script,
                step: 0,
                pause: None,
            },
            NoClock,
        );
        let mut co = sc.coalesce.map(|n| Coalescer::new(n, u64::MAX));
        for want in 0..messages {
            if c.available().unwrap() == 0 && co.as_mut().is_some_and(Coalescer::flush) {
                to_p.notify().unwrap();
            }
            c.wait_for_messages_by(k_p, &mut by, &*to_c, &mut st)
                .unwrap();
            assert_eq!(
                c.claim().unwrap(),
                Some(want),
                "lost, duplicated or reordered"
            );
            let r = c.release();
            let wanted = c.peer_wants_kick(r);
            if kick_now(&mut co, wanted, || {
                u64::from(len - c.available_now().unwrap())
            }) {
                to_p.notify().unwrap();
            }
        }
        if co.as_mut().is_some_and(Coalescer::flush) {
            to_p.notify().unwrap();
        }
        producer.join().unwrap();
    });
}

#[test]
fn driven_nap_spin_block_both_sides() {
    transfer_driven(2, 3, 1, 1, side(NAP_SPIN_BLOCK), side(NAP_SPIN_BLOCK));
}

#[test]
fn driven_defer_both_sides_thresholds_above_one() {
    transfer_driven(2, 3, 2, 2, side(DEFER), side(DEFER));
}

#[test]
fn driven_one_slot() {
    transfer_driven(1, 3, 1, 1, side(NAP_SPIN_BLOCK), side(DEFER));
}

#[test]
fn driven_timed_sleeps_against_blocks() {
    // A side that never registers is never kicked, and never needs to be.
    transfer_driven(2, 3, 1, 1, side(SLEEP), side(BLOCK_NOW));
    transfer_driven(2, 3, 1, 1, side(BLOCK_NOW), side(SLEEP));
    transfer_driven(2, 3, 1, 1, side(HYBRID), side(DEFER));
}

#[test]
fn driven_coalesced_kicks_are_flushed_before_waiting() {
    // P holds its kicks until 2 messages are pending (or it waits, or
    // ends); C holds its own until 2 slots are free.
    let hold = |script| Side {
        script,
        coalesce: Some(2),
        pause: None,
    };
    transfer_driven(3, 4, 1, 1, hold(BLOCK_NOW), side(BLOCK_NOW));
    transfer_driven(2, 3, 1, 1, side(BLOCK_NOW), hold(BLOCK_NOW));
    transfer_driven(3, 3, 1, 2, hold(BLOCK_NOW), side(NAP_SPIN_BLOCK));
}

#[test]
fn driven_producer_pauses_until_the_consumers_kick() {
    // After every publish P blocks once until k slots are free, and C must
    // kick it there: until the ring is empty, until one slot is free (the
    // threshold met at once or soon), and against a consumer that naps.
    let pause = |k, script| Side {
        script,
        coalesce: None,
        pause: Some(Action::BlockUntil(k)),
    };
    transfer_driven(3, 3, 1, 1, pause(3, BLOCK_NOW), side(BLOCK_NOW));
    transfer_driven(2, 3, 1, 1, pause(1, BLOCK_NOW), side(NAP_SPIN_BLOCK));
    transfer_driven(3, 3, 1, 2, pause(2, NAP_SPIN_BLOCK), side(DEFER));
}

#[test]
fn driven_timed_blocks_end_by_kick_or_deadline() {
    // A wait that asks for a kick at 2 with a deadline: fewer than 2 may
    // ever come (the last message), so only the deadline ends some waits;
    // a kick sent after it stays pending for the next wait.
    transfer_driven(3, 3, 1, 1, side(BLOCK_NOW), side(TIMED));
    transfer_driven(2, 3, 1, 1, side(NAP_SPIN_BLOCK), side(TIMED));
    transfer_driven(2, 3, 1, 1, side(TIMED), side(NAP_SPIN_BLOCK));
    transfer_driven(2, 3, 1, 1, side(TIMED), side(TIMED));
}
