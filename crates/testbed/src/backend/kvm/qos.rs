//! Several VMs sharing one device, with a real guest per VM
//! (`--vm-core guest`, `kicklab qos --backend kvm`): each VM's stage is a
//! tiny KVM guest of its own running `kicklab run`'s consumer program over
//! a ring in its memory, which the shared stage (a host thread, as in
//! `crate::qos`) fills.
//!
//! ```text
//!   device thread --ring--> shared stage thread --guest ring--> guest 1 (vCPU thread)
//!                            (busy work, post policer)  \--guest ring--> guest 2 ...
//! ```
//!
//! A guest takes one request per slot, does its service time as busy work
//! by its TSC, stamps the slot with its TSC when it is done (before it
//! frees the slot) and halts on an empty ring after registering for a
//! kick; the shared stage kicks it through its doorbell only then. The
//! ring holds the VM's buffer plus the request in service (a request that
//! finds it full is dropped, drop-tail). The shared stage keeps what it
//! wrote in each slot (the request's header and when the device made it)
//! and, when it is about to write a slot again (the slot is free, so the
//! guest's stamp is there), keeps the request that was there with the
//! guest's stamp. At the end it waits for every guest to free what it
//! holds, stops it (a word in its memory, and one more request to take)
//! and relates the two clocks again: the guests' stamps are placed in host
//! time by the offset interpolated between the clock exchanges before and
//! after the run (a guest clock that drifts at a steady rate is followed;
//! the drift is reported), and every request completes then. Guest memory
//! is untrusted: the ring's endpoint validates the guest's index; a stamp
//! before the request was made or after its slot was seen free counts the
//! request done when it was seen instead (and is counted).
//!
//! What does not live here: the device, the shared stage and the figures
//! (`crate::qos`), the guest's code (`super::guest`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kicklab_model::qos::QosSystem;
use kicklab_ring::{on_raw, Producer, RawRing};
use vmm_sys_util::eventfd::EventFd;

use super::clocks::{ping, ClockMap, Exchange};
use super::guest::{
    ctrl, map, ring, GuestFlush, GuestMode, GuestRole, GuestWait, Misbehavior, PairProgram, SYNC,
};
use super::vm::{GuestMemory, VcpuThread, Vm, VmOptions, UNPINNED};
use crate::clock::rdtsc;
use crate::qos::stages::{aborted, Ctx, Outlets, VmOut};
use crate::{Setting, TestbedError};

/// The guests of a run; dropping them stops them.
pub(crate) struct Guests {
    vcpus: Vec<VcpuThread>,
    mems: Vec<Arc<GuestMemory>>,
    // Last: the VMs outlive their vCPU threads.
    _vms: Vec<Vm>,
}

impl Guests {
    /// Each guest's halts so far (its own count: only reported).
    pub(crate) fn sleeps(&self) -> Vec<u64> {
        self.mems
            .iter()
            .map(|m| u64::from(m.read_u32(map::CTRL + ctrl::SLEEPS)))
            .collect()
    }
}

impl Drop for Guests {
    fn drop(&mut self) {
        for v in &mut self.vcpus {
            v.stop();
        }
    }
}

/// One guest as the shared stage sees it.
struct Outlet {
    producer: Producer,
    doorbell: EventFd,
    mem: Arc<GuestMemory>,
    /// Per slot: the header and the device's time of the request written
    /// there last.
    held: Vec<[u64; 2]>,
    /// Requests written into the ring so far (the guest's sequence).
    written: u64,
    /// The clock exchange before the run.
    before: Option<Exchange>,
    /// The requests whose slots the guest freed, in order: [header, made,
    /// the guest's done stamp, host TSC when the slot was seen free].
    /// Completed at the end, once the exchange after the run places the
    /// stamps (32 bytes a request).
    freed: Vec<[u64; 4]>,
    out: VmOut,
    last: Option<u64>,
}

impl Outlet {
    /// Request `i`'s slot is free (the guest is done with it), as seen at
    /// host TSC `seen`: keeps its stamp for the end.
    fn freed(&mut self, i: u64, seen: u64) {
        let len = self.held.len() as u64;
        #[allow(clippy::cast_possible_truncation)] // < len, a usize
        let slot = (i % len) as usize;
        let [hdr, made] = self.held[slot];
        let stamp = self.mem.load_u64(map::STAMPS + 8 * slot as u32);
        self.freed.push([hdr, made, stamp, seen]);
    }

    /// Completes every freed request at its guest's stamp, in host time
    /// ([`place`]); a stamp that makes no sense completes it when it was
    /// seen (counted).
    fn complete_freed(&mut self, id: usize, clocks: &ClockMap, ctx: &Ctx) {
        for [hdr, made, stamp, seen] in std::mem::take(&mut self.freed) {
            let at = place(clocks, stamp, made, seen).unwrap_or_else(|| {
                self.out.bad_stamps += 1;
                seen
            });
            self.out.complete(id, hdr, made, at, &mut self.last, ctx);
        }
    }
}

/// A guest's done `stamp` (its TSC) in host TSC, by `clocks`. Guest memory
/// is untrusted: `None` for a stamp before the request was `made` or after
/// its slot was `seen` free.
fn place(clocks: &ClockMap, stamp: u64, made: u64, seen: u64) -> Option<u64> {
    let done = clocks.host(stamp);
    (done >= i128::from(made) && done <= i128::from(seen)).then(|| {
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)] // within [made, seen]
        let done = done as u64;
        done
    })
}

/// The shared stage's side of the guests.
pub(crate) struct GuestOutlets {
    outlets: Vec<Outlet>,
    /// The longest a guest may take to finish what it holds at the end.
    drain: Duration,
}

/// Starts a guest per VM of `sys` (real time), registers their vCPU
/// threads' clocks with `ctx` as the VMs' stages, and returns them with
/// the shared stage's side.
///
/// # Errors
///
/// No usable KVM, a buffer the guest's ring cannot hold, a service time
/// the guest's 32-bit work table cannot count, a guest TSC at another
/// rate than the host's.
pub(crate) fn start(
    sys: &QosSystem,
    ctx: &Arc<Ctx>,
    misbehavior: Misbehavior,
) -> Result<(Guests, GuestOutlets), TestbedError> {
    super::available().map_err(TestbedError::Kvm)?;
    // Checked by `crate::qos::check_qos`.
    let len = sys.buffer + 1;
    assert!(len <= map::MAX_LEN, "the buffer was checked");
    let tsc = ctx.tsc;
    let mut guests = Guests {
        vcpus: Vec::new(),
        mems: Vec::new(),
        _vms: Vec::new(),
    };
    let mut outlets = Vec::new();
    for (i, vm_sys) in sys.vms.iter().enumerate() {
        let ticks = tsc.ticks(vm_sys.service_ns);
        let Ok(ticks) = u32::try_from(ticks) else {
            return Err(TestbedError::limit(
                Setting::Work,
                "a guest counts its work in 32 bits of TSC ticks: a service time of at most about a second",
            ));
        };
        let vm = Vm::new(VmOptions {
            halt_poll: Duration::ZERO,
            mode: GuestMode::User,
            disable_hlt_exits: false,
        })?;
        let mem = Arc::clone(&vm.mem);
        for k in 0..map::TABLE_LEN {
            mem.write_u32(map::TABLE + 4 * k, ticks);
        }
        let program = PairProgram {
            role: GuestRole::Consumer,
            wait: GuestWait::Halt,
            len,
            k: 1,
            // Runs until stopped.
            total: i32::MAX.unsigned_abs(),
            warmup: 0,
            misbehavior,
            mode: GuestMode::User,
            batch: 1,
            flush: GuestFlush::Full,
            stamps: true,
            sync: SYNC,
            until_stopped: true,
            end_sync: true,
        }
        .assemble()?;
        let owner: Box<dyn Send + Sync> = Box::new(Arc::clone(&mem));
        // SAFETY: as in the pair (`super::pair`): the region lies inside the
        // guest mapping, is 64-byte aligned, `owner` keeps it mapped, and
        // the guest uses the layout's aligned 32-bit accesses.
        let raw = unsafe {
            RawRing::from_raw(
                mem.as_ptr().add(map::RING as usize),
                map::RING_BYTES,
                len,
                owner,
            )
        }
        .ok_or_else(|| TestbedError::Kvm("ring region rejected".into()))?;
        let (producer, consumer) = on_raw(raw);
        drop(consumer);
        // Placed by the scheduler, as the other stages' threads are (the
        // model shares the CPUs among them all).
        let vcpu = vm.start(&program, UNPINNED)?;
        if let Some(khz) = vcpu.guest_khz {
            if (f64::from(khz) / (tsc.ticks_per_ns * 1e6) - 1.0).abs() > 0.02 {
                return Err(TestbedError::Kvm(format!(
                    "the guest TSC runs at {khz} kHz, the host's at {:.0} kHz: its work would be off",
                    tsc.ticks_per_ns * 1e6
                )));
            }
        }
        ctx.clocks[2 + i].store(i64::from(vcpu.clock_id()), Ordering::Relaxed);
        outlets.push(Outlet {
            producer,
            doorbell: vm.waker()?,
            mem: Arc::clone(&mem),
            held: vec![[0; 2]; len as usize],
            written: 0,
            before: None,
            freed: Vec::new(),
            out: VmOut::new(),
            last: None,
        });
        guests.vcpus.push(vcpu);
        guests.mems.push(mem);
        guests._vms.push(vm);
    }
    let longest = sys.vms.iter().map(|v| v.service_ns).fold(0.0, f64::max);
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let drain =
        Duration::from_secs(2) + Duration::from_nanos((4.0 * longest * f64::from(len)) as u64);
    ctx.ready.fetch_add(sys.vms.len(), Ordering::Release);
    Ok((guests, GuestOutlets { outlets, drain }))
}

impl Outlets for GuestOutlets {
    /// Relates each guest's clock to the host's (the guest answers
    /// [`SYNC`] pings before its loop).
    fn prepare(&mut self, ctx: &Ctx) -> Result<(), TestbedError> {
        for o in &mut self.outlets {
            // One ping at a time, each a step of the set-up the start
            // watches (a guest answers only when its vCPU gets a CPU).
            let mut best: Option<super::clocks::Exchange> = None;
            for i in 1..=SYNC {
                let e = ping(&o.mem, i, 1, &ctx.abort, None)?;
                ctx.set_up.fetch_add(1, Ordering::Release);
                if best.is_none_or(|b| e.uncertainty < b.uncertainty) {
                    best = Some(e);
                }
            }
            o.before = best;
        }
        Ok(())
    }

    fn deliver(
        &mut self,
        vm: usize,
        [hdr, made, _]: [u64; 3],
    ) -> Result<Option<bool>, TestbedError> {
        let o = &mut self.outlets[vm];
        let guest = |e: kicklab_ring::RingError| {
            TestbedError::Guest(format!("VM {}'s guest broke its ring: {e}", vm + 1))
        };
        if o.producer.free().map_err(guest)? == 0 && o.producer.free_now().map_err(guest)? == 0 {
            return Ok(None);
        }
        let len = o.held.len() as u64;
        if o.written >= len {
            // The slot is free: the guest is done with what was there.
            o.freed(o.written - len, rdtsc());
        }
        #[allow(clippy::cast_possible_truncation)] // < len, a usize
        let slot = (o.written % len) as usize;
        o.held[slot] = [hdr, made];
        let ok = o.producer.write(o.written)?;
        debug_assert!(ok, "room was checked");
        o.written += 1;
        let published = o.producer.publish();
        let kick = o.producer.peer_wants_kick(published);
        if kick {
            o.doorbell.write(1)?;
        }
        Ok(Some(kick))
    }

    /// Waits for every guest to free what it holds, then completes it.
    fn finish(&mut self, ctx: &Ctx) -> Result<Option<Vec<VmOut>>, TestbedError> {
        let until = Instant::now() + self.drain;
        let mut outs = Vec::with_capacity(self.outlets.len());
        for (id, o) in self.outlets.iter_mut().enumerate() {
            let len = o.held.len() as u64;
            #[allow(clippy::cast_possible_truncation)] // the guest's 32-bit index
            let want = o.written as u32;
            loop {
                if ctx.abort.load(Ordering::Relaxed) {
                    return Err(aborted());
                }
                // Validated: an index that moves back or past what was
                // written is an error.
                let free = o.producer.free_now().map_err(|e| {
                    TestbedError::Guest(format!("VM {}'s guest broke its ring: {e}", id + 1))
                })?;
                if free == o.producer.len() {
                    break;
                }
                if Instant::now() > until {
                    return Err(TestbedError::Hang(format!(
                        "VM {}'s guest did not finish its requests within {:?} (it hung, crashed or stopped): its head at {} of {want}",
                        id + 1,
                        self.drain,
                        o.mem.read_u32(ring::HEAD)
                    )));
                }
                std::thread::sleep(Duration::from_micros(100));
            }
            let seen = rdtsc();
            for i in o.written.saturating_sub(len)..o.written {
                o.freed(i, seen);
            }
            let ctrl = |off| o.mem.read_u32(map::CTRL + off);
            let (lost, bad) = (ctrl(ctrl::LOST), ctrl(ctrl::BAD));
            if lost != 0 || bad != 0 {
                return Err(TestbedError::Guest(format!(
                    "VM {}'s guest missed {lost} requests and saw {bad} twice or out of order",
                    id + 1
                )));
            }
            // Stop the guest (the word, then one more request for it to
            // take: it waits on an empty ring) and relate the two clocks
            // again: its stamps are placed between the two exchanges.
            o.mem.write_u32(map::CTRL + ctrl::STOP, 1);
            let ok = o.producer.write(o.written)?;
            debug_assert!(ok, "the ring is empty");
            let published = o.producer.publish();
            if o.producer.peer_wants_kick(published) {
                o.doorbell.write(1)?;
            }
            let after = ping(&o.mem, SYNC + 1, SYNC, &ctx.abort, Some(self.drain))
            .map_err(|e| match e {
                TestbedError::Hang(_) => TestbedError::Hang(format!(
                    "VM {}'s guest left a ping of the clock exchange after its run unanswered for {:?} (it hung, crashed or stopped)",
                    id + 1,
                    self.drain
                )),
                e => e,
            })?;
            let before = o
                .before
                .ok_or_else(|| TestbedError::Kvm("the guest's clock was never related".into()))?;
            let clocks = ClockMap::new(before, after);
            o.complete_freed(id, &clocks, ctx);
            let mut out = std::mem::replace(&mut o.out, VmOut::new());
            out.clock_drift_ns = Some(ctx.tsc.ns(clocks.drift()));
            outs.push(out);
        }
        Ok(Some(outs))
    }
}

/// A hand-off to a guest that halted, measured: one guest with no work,
/// handed a request every `gap` (`samples` of them) and kicked when it
/// asks. Returns the host's CPU per kick (the doorbell write, with the
/// ring's handling) and the guest's vCPU thread's CPU per request (its
/// halt, exit to the VMM, wake-up, re-entry, and taking the request) [ns].
///
/// # Errors
///
/// No usable KVM, a guest that does not start, answer or finish.
#[allow(clippy::cast_precision_loss)]
pub(crate) fn hand_off(samples: usize, gap: Duration) -> Result<(f64, f64), TestbedError> {
    let mut sys = QosSystem::paper(
        kicklab_model::qos::Path::Direct,
        kicklab_model::qos::Police::Ingress,
        1.0,
    );
    sys.vms.truncate(1);
    sys.vms[0].service_ns = 0.0;
    let ctx = Arc::new(Ctx::new(crate::clock::Tsc::get(), 1));
    let (guests, mut outlets) = start(&sys, &ctx, Misbehavior::None)?;
    outlets.prepare(&ctx)?;
    let vcpu = &guests.vcpus[0];
    let (mut kick_ns, mut kicks) = (0u64, 0u64);
    let cpu0 = vcpu.cpu_ns();
    for k in 0..samples as u64 {
        std::thread::sleep(gap);
        let c0 = crate::clock::thread_cpu_ns();
        let kicked = outlets.deliver(0, [k, rdtsc(), 0])?;
        if kicked == Some(true) {
            kick_ns += crate::clock::thread_cpu_ns() - c0;
            kicks += 1;
        }
    }
    outlets.finish(&ctx)?;
    let guest_ns = vcpu.cpu_ns().saturating_sub(cpu0);
    if kicks == 0 {
        return Err(TestbedError::Guest(
            "a guest handed a request every so often never asked for a kick".into(),
        ));
    }
    Ok((
        kick_ns as f64 / kicks as f64,
        guest_ns as f64 / samples as f64,
    ))
}

#[cfg(test)]
mod tests {
    use super::super::clocks::{ClockMap, Exchange};
    use super::place;

    #[test]
    fn stamps_that_make_no_sense_are_refused() {
        let e = |at, offset| Exchange {
            at,
            offset,
            uncertainty: 10,
        };
        // 1000 ppm fast: at host 501_000 the guest reads 502_000.
        let m = ClockMap::new(e(1000, 500), e(1_001_000, 1500));
        assert_eq!(place(&m, 502_000, 400_000, 600_000), Some(501_000));
        // Before the request was made, after it was seen, and extremes.
        assert_eq!(place(&m, 502_000, 501_001, 600_000), None);
        assert_eq!(place(&m, 502_000, 400_000, 500_999), None);
        assert_eq!(place(&m, 0, 0, u64::MAX), None);
        assert_eq!(place(&m, u64::MAX, 0, u64::MAX), Some(u64::MAX - 1500));
        assert_eq!(place(&m, u64::MAX, 0, u64::MAX - 1501), None);
        // By the first exchange alone, the last stamp of the run would
        // land after its slot was seen free.
        let first = ClockMap::fixed(e(1000, 500));
        assert_eq!(place(&first, 1_002_500, 0, 1_001_500), None);
        assert_eq!(place(&m, 1_002_500, 0, 1_001_500), Some(1_001_000));
    }
}
