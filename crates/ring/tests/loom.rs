//! Model checking of the notification protocol with loom: every
//! interleaving (up to a preemption bound) of a producer and a consumer
//! moving messages through a tiny ring, for each wait strategy and
//! thresholds above 1. A lost wake-up shows as a deadlock, which loom
//! reports; a lost, duplicated or reordered message fails the assertion.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p kicklab-ring --test loom --release`.
#![cfg(loom)]

use std::time::Duration;

use kicklab_ring::{ring, Notifier, WaitStats, WaitStrategy};
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
