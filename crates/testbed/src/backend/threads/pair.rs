//! The pair as two pinned host threads over the kicklab ring, each running
//! the host party loop (`crate::party`), with a progress watchdog.
//!
//! ```text
//!   thread P (cpu 0)                       ring (L slots)                 thread C (cpu 1)
//!   wait_for_space(k_C)  <--- kick C->P --- head / producer_wait ---  release, maybe kick P
//!   busy W_P, write seq, publish --------> tail / consumer_wait ---> wait_for_messages(k_P)
//!   maybe kick C  --------- kick P->C ---------------------------->  claim, check seq, busy W_C
//! ```

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kicklab_ring::{ring, Notifier, NotifierKind, RawRing};
use kicklab_sim::Sampler;

use crate::clock::{pin_cpu, Tsc};
use crate::pair::{busy_waits, placement, Record, RecordedSpan, RunGuard};
use crate::party::{join_within, HostParty, Marks, Stoppable, ThreadStamps, TICK};
use crate::watchdog::{Stall, Tids};
use crate::{PairConfig, PairResult, Setting, TestbedError};

/// The most memory a thread run's ring may take [bytes].
pub const MAX_RING_BYTES: usize = 1 << 30;

/// How long stopped threads get to notice before a join gives up.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Checks the run before anything starts; returns the messages in all
/// (warm-up included).
///
/// # Errors
///
/// Bad parameters, or a ring larger than [`MAX_RING_BYTES`].
pub fn check_pair(cfg: &PairConfig) -> Result<u64, TestbedError> {
    let total = cfg.check()?;
    if RawRing::region_size(cfg.params.len) > MAX_RING_BYTES {
        return Err(TestbedError::limit(
            Setting::Len,
            format!(
                "a ring of {} slots needs more than {} MiB",
                cfg.params.len,
                MAX_RING_BYTES >> 20
            ),
        ));
    }
    Ok(total)
}

/// Runs the pair once on two threads notifying through `kind`.
///
/// # Errors
///
/// Bad parameters, a ring too large ([`TestbedError::Limit`]), a notifier
/// that cannot be created or fails, a corrupt ring (a bug), or a run in
/// which no message moved for `cfg.timeout` (a hang: a lost wake-up).
#[allow(clippy::cast_precision_loss)]
pub fn run_pair(
    cfg: &PairConfig,
    kind: NotifierKind,
) -> Result<(PairResult, Record), TestbedError> {
    let total = check_pair(cfg)?;
    let mut guard = RunGuard::enter();
    let tsc = Tsc::get();
    let (producer, consumer) = ring(cfg.params.len);
    let to_c: Arc<dyn Notifier> = Arc::from(kind.make()?);
    let to_p: Arc<dyn Notifier> = Arc::from(kind.make()?);
    let stop = Arc::new(AtomicBool::new(false));
    // Which side failed first (1: P, 2: C): its error is the run's.
    let origin = Arc::new(AtomicU8::new(0));
    let progress = [Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0))];
    // TSC at the start of each party's last kick (P's, C's).
    let stamps = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
    // Each slot's message's publish time (TSC), for its latency.
    let publish_times: Option<Arc<[AtomicU64]>> = cfg
        .latency
        .then(|| (0..cfg.params.len).map(|_| AtomicU64::new(0)).collect());

    let tids = Tids::new(2);
    let spawn_side = |producer_side: bool| {
        let (to_c, to_p, stop) = (Arc::clone(&to_c), Arc::clone(&to_p), Arc::clone(&stop));
        let tids = Arc::clone(&tids);
        let origin = Arc::clone(&origin);
        let progress = Arc::clone(&progress[usize::from(!producer_side)]);
        let stamps = Arc::clone(&stamps);
        let publish_times = publish_times.clone();
        let c = *cfg;
        move |end: Endpoint| -> Result<(Option<usize>, Marks), TestbedError> {
            tids.set_mine(usize::from(!producer_side));
            let pinned = pin_cpu(usize::from(!producer_side));
            let (wait_on, kick_peer) = if producer_side {
                (&to_p, &to_c)
            } else {
                (&to_c, &to_p)
            };
            let wait_on = Stoppable {
                inner: &**wait_on,
                stop: &stop,
            };
            let p = c.params;
            let (mine, peer) = if producer_side {
                (&stamps[0], &stamps[1])
            } else {
                (&stamps[1], &stamps[0])
            };
            let stamps_of_side = ThreadStamps { mine, peer };
            let party = HostParty {
                total,
                warmup: c.warmup,
                k: if producer_side { p.k_c } else { p.k_p },
                mode: if producer_side { c.mode_p } else { c.mode_c },
                params: p,
                work: Sampler::new(
                    if producer_side { p.w_p } else { p.w_c },
                    c.seed,
                    u64::from(!producer_side),
                ),
                batch: u64::from(c.batch),
                flush: c.flush,
                wait_on: &wait_on,
                kick_peer: &**kick_peer,
                stop: &stop,
                progress: &progress,
                extra_clock: None,
                stamps: Some(&stamps_of_side),
                publish_times: publish_times.as_deref(),
                stamp_offset: 0,
                done: None,
                record: c.record,
            };
            let m = match end {
                Endpoint::P(mut pr) => party.produce(&mut pr),
                Endpoint::C(mut co) => party.consume(&mut co),
            };
            if m.is_err() {
                let me = if producer_side { 1 } else { 2 };
                let _ = origin.compare_exchange(0, me, Ordering::SeqCst, Ordering::SeqCst);
                stop.store(true, Ordering::SeqCst);
            }
            Ok((pinned, m?))
        }
    };
    let run_p = spawn_side(true);
    let run_c = spawn_side(false);
    let hp = std::thread::Builder::new()
        .name("kicklab-P".into())
        .spawn(move || run_p(Endpoint::P(producer)))?;
    let hc = std::thread::Builder::new()
        .name("kicklab-C".into())
        .spawn(move || run_c(Endpoint::C(consumer)))?;

    // Watchdog: fail only when no message has moved for the stall limit.
    let mut stall = Stall::watching(cfg.timeout, Arc::clone(&tids), &["P", "C"]);
    let failure = loop {
        std::thread::sleep(TICK);
        if hp.is_finished() && hc.is_finished() {
            break None;
        }
        // A side that failed ends the run at once.
        if stop.load(Ordering::SeqCst) {
            break None;
        }
        let now = (
            progress[0].load(Ordering::Relaxed),
            progress[1].load(Ordering::Relaxed),
        );
        if stall.stalled(now) {
            let state = |h: &std::thread::JoinHandle<_>| {
                if h.is_finished() {
                    "finished"
                } else {
                    "running or blocked"
                }
            };
            break Some(TestbedError::Hang(format!(
                "no progress for {:?}: P published {} and C consumed {} of {total} messages; \
                 P {}, C {}; {} (a lost wake-up, a stuck notifier or very long busy work)",
                cfg.timeout,
                now.0,
                now.1,
                state(&hp),
                state(&hc),
                stall.account(),
            )));
        }
    };
    let stop_all = || {
        stop.store(true, Ordering::SeqCst);
        // Unblock a party that may wait for a kick that will not come.
        let _ = to_c.notify();
        let _ = to_p.notify();
    };
    if failure.is_some() || stop.load(Ordering::SeqCst) {
        stop_all();
    }
    let rp = join_within(hp, STOP_GRACE, "producer");
    let rc = join_within(hc, STOP_GRACE, "consumer");
    if let Some(e) = failure {
        return Err(e);
    }
    let ((cpu_p, pm), (cpu_c, cm)) = if origin.load(Ordering::SeqCst) == 2 {
        let c = rc?;
        (rp?, c)
    } else {
        (rp?, rc?)
    };
    let mut r = PairResult::of_window(
        [cfg.messages, total],
        tsc.ns(cm.t1 - cm.t0),
        [pm.side(), cm.side()],
        (cm.lost, cm.bad),
        cm.latency,
    );
    // Both parties' TSC is this host's: one origin, the window's start.
    let start = pm.t0.min(cm.t0);
    let spans = |m: &Marks| {
        m.recorded
            .iter()
            .map(|r| RecordedSpan {
                kick: r.kick,
                from_ns: tsc.ns(r.t0.saturating_sub(start)),
                to_ns: tsc.ns(r.t1.saturating_sub(start)),
            })
            .collect()
    };
    let record = Record {
        spans: [spans(&pm), spans(&cm)],
    };
    let others = guard.others();
    placement(
        &mut r,
        cpu_p,
        cpu_c,
        others,
        busy_waits(cfg.mode_p) || busy_waits(cfg.mode_c),
    );
    Ok((r, record))
}

/// The endpoint a thread gets.
enum Endpoint {
    P(kicklab_ring::Producer),
    C(kicklab_ring::Consumer),
}
