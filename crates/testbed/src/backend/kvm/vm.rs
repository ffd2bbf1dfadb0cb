//! One tiny VM: guest memory, the kick ioeventfd, the doorbell the vCPU
//! thread sleeps on while the guest halts, and a vCPU thread that can
//! always be stopped.
//!
//! Stopping: the vCPU thread checks a stop flag before each `KVM_RUN`; to
//! get it out of `KVM_RUN` (a guest that spins, or halts for ever inside
//! the kernel) the stopper sends it a signal whose handler does nothing, so
//! the ioctl returns `EINTR`, and repeats every millisecond until the
//! thread has exited (a signal that lands just before `KVM_RUN` is lost,
//! the next one is not).

use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kvm_bindings::kvm_userspace_memory_region;
use kvm_ioctls::{IoEventAddress, Kvm, NoDatamatch, VcpuExit, VcpuFd, VmFd};
use vmm_sys_util::eventfd::EventFd;
use vmm_sys_util::signal::Killable;

use super::guest::{map, port, GuestMode, Program};
use crate::TestbedError;

/// [`Vm::start`]'s CPU for a vCPU thread the scheduler places (as it
/// places the host's own threads).
pub const UNPINNED: usize = usize::MAX;

/// How the guest runs and how the host treats its halts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VmOptions {
    /// Host halt polling: after the guest halts, poll this long for a
    /// wake-up before sleeping. User mode: the vCPU thread polls the
    /// doorbell; emulated mode: KVM's own per-VM halt polling
    /// (`KVM_CAP_HALT_POLL`). Zero: sleep at once.
    pub halt_poll: Duration,
    /// User-mode loop (doorbell wake-ups) or emulated real mode (irqfd).
    pub mode: GuestMode,
    /// Emulated mode: `KVM_CAP_X86_DISABLE_EXITS` with HLT, so a guest
    /// `hlt` does not exit to the host.
    pub disable_hlt_exits: bool,
}

/// Guest memory: an anonymous mapping, unmapped on drop.
#[derive(Debug)]
pub struct GuestMemory {
    ptr: NonNull<u8>,
    size: usize,
}

// SAFETY: the mapping is plain memory owned by this value; the host only
// touches it through atomics or before the guest runs.
unsafe impl Send for GuestMemory {}
// SAFETY: as for Send.
unsafe impl Sync for GuestMemory {}

impl GuestMemory {
    pub(super) fn new(size: usize) -> Result<GuestMemory, TestbedError> {
        // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
        let ptr = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                size,
                rustix::mm::ProtFlags::READ | rustix::mm::ProtFlags::WRITE,
                rustix::mm::MapFlags::PRIVATE | rustix::mm::MapFlags::NORESERVE,
            )
        }
        .map_err(std::io::Error::from)?;
        Ok(GuestMemory {
            ptr: NonNull::new(ptr.cast()).expect("mmap never returns null on success"),
            size,
        })
    }

    /// Base address in the host.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    fn atomic(&self, off: u32) -> &AtomicU32 {
        let off = off as usize;
        assert!(
            off.is_multiple_of(4) && off + 4 <= self.size,
            "guest offset {off:#x}"
        );
        // SAFETY: in bounds and 4-aligned (checked); the memory lives as long
        // as self; the guest may write it concurrently, hence atomics.
        unsafe { AtomicU32::from_ptr(self.ptr.as_ptr().add(off).cast()) }
    }

    fn atomic64(&self, off: u32) -> &AtomicU64 {
        let off = off as usize;
        assert!(
            off.is_multiple_of(8) && off + 8 <= self.size,
            "guest offset {off:#x}"
        );
        // SAFETY: in bounds and 8-aligned (checked); the memory lives as long
        // as self; the guest may write it concurrently (one 64-bit `mov`),
        // hence atomics.
        unsafe { AtomicU64::from_ptr(self.ptr.as_ptr().add(off).cast()) }
    }

    /// Reads a u64 the guest may be writing with one 64-bit store.
    pub fn load_u64(&self, off: u32) -> u64 {
        self.atomic64(off).load(Ordering::SeqCst)
    }

    /// Writes a u64 the guest may be reading with one 64-bit load.
    pub fn store_u64(&self, off: u32, v: u64) {
        self.atomic64(off).store(v, Ordering::SeqCst);
    }

    /// Reads a u32 the guest may be writing.
    pub fn read_u32(&self, off: u32) -> u32 {
        self.atomic(off).load(Ordering::SeqCst)
    }

    /// Reads a u64 written as two u32 (low first) by a finished guest.
    pub fn read_u64(&self, off: u32) -> u64 {
        u64::from(self.read_u32(off)) | (u64::from(self.read_u32(off + 4)) << 32)
    }

    /// Writes a u32 the guest may be reading.
    pub fn write_u32(&self, off: u32, v: u32) {
        self.atomic(off).store(v, Ordering::SeqCst);
    }

    /// Exchanges a u32 (a full fence, as the guest's `xchg`).
    pub fn swap_u32(&self, off: u32, v: u32) -> u32 {
        self.atomic(off).swap(v, Ordering::SeqCst)
    }

    fn write_bytes(&self, off: usize, bytes: &[u8]) {
        assert!(off + bytes.len() <= self.size);
        // SAFETY: in bounds (checked); called only before the vCPU runs.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.as_ptr().add(off), bytes.len());
        }
    }
}

impl Drop for GuestMemory {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, of this size, unmapped once.
        let _ = unsafe { rustix::mm::munmap(self.ptr.as_ptr().cast(), self.size) };
    }
}

/// Whether this machine can run the KVM backend; the reason if not.
pub fn available() -> Result<(), String> {
    let kvm = Kvm::new().map_err(|e| format!("cannot open /dev/kvm: {e}"))?;
    for (cap, name) in [(kvm_ioctls::Cap::Ioeventfd, "IOEVENTFD")] {
        if !kvm.check_extension(cap) {
            return Err(format!("/dev/kvm lacks KVM_CAP_{name}"));
        }
    }
    Ok(())
}

/// A VM with its memory, kick and doorbell eventfds.
pub struct Vm {
    vm: VmFd,
    opts: VmOptions,
    /// Guest memory (shared with the ring endpoints that live in it).
    pub mem: Arc<GuestMemory>,
    /// Signalled by each guest `out` to [`port::KICK`] (an ioeventfd).
    pub kick: EventFd,
    /// Wakes a user-mode guest halted in the VMM (its vCPU thread sleeps
    /// on it), or one idling with a timeout.
    pub doorbell: EventFd,
    /// Emulated mode: raises IRQ 5 in the guest (an irqfd).
    pub irq: Option<EventFd>,
}

impl std::fmt::Debug for Vm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vm").finish_non_exhaustive()
    }
}

fn kvm_err(what: &str) -> impl Fn(kvm_ioctls::Error) -> TestbedError + '_ {
    move |e| TestbedError::Kvm(format!("{what}: {e}"))
}

impl Vm {
    /// Creates the VM: memory and eventfds.
    ///
    /// # Errors
    ///
    /// No usable `/dev/kvm`, or an ioctl failed.
    pub fn new(opts: VmOptions) -> Result<Vm, TestbedError> {
        let kvm = Kvm::new().map_err(kvm_err("open /dev/kvm"))?;
        let vm = kvm.create_vm().map_err(kvm_err("create VM"))?;
        if opts.mode == GuestMode::Emulated {
            if opts.disable_hlt_exits {
                let mut cap = kvm_bindings::kvm_enable_cap {
                    cap: kvm_bindings::KVM_CAP_X86_DISABLE_EXITS,
                    ..Default::default()
                };
                cap.args[0] = u64::from(kvm_bindings::KVM_X86_DISABLE_EXITS_HLT);
                vm.enable_cap(&cap)
                    .map_err(kvm_err("disable HLT exits (KVM_CAP_X86_DISABLE_EXITS)"))?;
            }
            let mut cap = kvm_bindings::kvm_enable_cap {
                cap: kvm_bindings::KVM_CAP_HALT_POLL,
                ..Default::default()
            };
            cap.args[0] = u64::try_from(opts.halt_poll.as_nanos()).unwrap_or(u64::MAX);
            vm.enable_cap(&cap)
                .map_err(kvm_err("set halt polling (KVM_CAP_HALT_POLL)"))?;
            vm.set_tss_address(0xfffb_d000)
                .map_err(kvm_err("set TSS address"))?;
            vm.create_irq_chip().map_err(kvm_err("create irqchip"))?;
        }
        let mem = Arc::new(GuestMemory::new(map::MEM_SIZE)?);
        let region = kvm_userspace_memory_region {
            slot: 0,
            guest_phys_addr: 0,
            memory_size: map::MEM_SIZE as u64,
            userspace_addr: mem.as_ptr() as u64,
            flags: 0,
        };
        // SAFETY: the region is our mapping of exactly this size; it outlives
        // the VM because `Vm` drops `vm` before `mem` (field order) and any
        // other holder of `mem` keeps it mapped.
        unsafe { vm.set_user_memory_region(region) }.map_err(kvm_err("map guest memory"))?;
        let kick = EventFd::new(libc::EFD_CLOEXEC)?;
        vm.register_ioevent(
            &kick,
            &IoEventAddress::Pio(u64::from(port::KICK)),
            NoDatamatch,
        )
        .map_err(kvm_err("register the kick ioeventfd"))?;
        let doorbell = EventFd::new(libc::EFD_CLOEXEC | libc::EFD_NONBLOCK)?;
        let irq = if opts.mode == GuestMode::Emulated {
            let irq = EventFd::new(libc::EFD_CLOEXEC)?;
            vm.register_irqfd(&irq, 5)
                .map_err(kvm_err("register the irqfd"))?;
            Some(irq)
        } else {
            None
        };
        Ok(Vm {
            vm,
            opts,
            mem,
            kick,
            doorbell,
            irq,
        })
    }

    /// An eventfd signalled by each guest `out` to `port` (an ioeventfd:
    /// no exit to user space), besides [`port::KICK`]'s.
    ///
    /// # Errors
    ///
    /// The eventfd or the registration failed (KVM takes at most about
    /// 1000 per bus).
    pub fn port_eventfd(&self, port: u16) -> Result<EventFd, TestbedError> {
        let fd = EventFd::new(libc::EFD_CLOEXEC | libc::EFD_NONBLOCK)?;
        self.vm
            .register_ioevent(&fd, &IoEventAddress::Pio(u64::from(port)), NoDatamatch)
            .map_err(kvm_err("register a port's ioeventfd"))?;
        Ok(fd)
    }

    /// What wakes a halted guest: the irqfd (emulated mode) or the
    /// doorbell (user mode). A clone the caller owns.
    ///
    /// # Errors
    ///
    /// Duplicating the descriptor failed.
    pub fn waker(&self) -> Result<EventFd, TestbedError> {
        Ok(self.irq.as_ref().unwrap_or(&self.doorbell).try_clone()?)
    }

    /// The guest's TSC rate [kHz], as KVM reports it.
    ///
    /// # Errors
    ///
    /// The ioctl failed.
    fn tsc_khz(vcpu: &VcpuFd) -> Result<u32, TestbedError> {
        vcpu.get_tsc_khz()
            .map_err(kvm_err("read the guest TSC rate"))
    }

    /// Loads `program` (code at [`map::CODE`]) and starts the vCPU on its
    /// own thread, pinned to `cpu` ([`UNPINNED`]: where the scheduler puts
    /// it).
    ///
    /// # Errors
    ///
    /// An ioctl failed.
    pub fn start(&self, program: &Program, cpu: usize) -> Result<VcpuThread, TestbedError> {
        self.start_with(program, cpu, None)
    }

    /// [`Vm::start`], with the waits the VMM runs for the guest (ports
    /// [`port::WAIT`] and [`port::PAUSE`]; without, a guest writing them
    /// is stopped with an error).
    ///
    /// # Errors
    ///
    /// An ioctl failed.
    pub fn start_with(
        &self,
        program: &Program,
        cpu: usize,
        waits: Option<Box<dyn GuestWaits>>,
    ) -> Result<VcpuThread, TestbedError> {
        self.mem.write_bytes(map::CODE, &program.code);
        let vcpu = self.vm.create_vcpu(0).map_err(kvm_err("create vCPU"))?;
        let mut sregs = vcpu.get_sregs().map_err(kvm_err("get sregs"))?;
        if program.mode != self.opts.mode {
            return Err(TestbedError::Kvm(format!(
                "a {} program in a {} VM",
                program.mode.name(),
                self.opts.mode.name()
            )));
        }
        match program.mode {
            GuestMode::User => self.long_mode(&mut sregs),
            GuestMode::Emulated => {
                // Real mode at 0:CODE; IRQ 5 (vector 0x25) -> the handler.
                let mut ivt = [0u8; 4];
                ivt[..2].copy_from_slice(&program.irq_handler.to_le_bytes());
                self.mem.write_bytes(4 * 0x25, &ivt);
                sregs.cs.base = 0;
                sregs.cs.selector = 0;
            }
        }
        vcpu.set_sregs(&sregs).map_err(kvm_err("set sregs"))?;
        let regs = kvm_bindings::kvm_regs {
            rip: map::CODE as u64,
            rflags: 2,
            ..Default::default()
        };
        vcpu.set_regs(&regs).map_err(kvm_err("set regs"))?;
        let guest_khz = Self::tsc_khz(&vcpu).ok();
        install_kick_signal()?;
        // User mode polls the doorbell itself; emulated mode leaves halt
        // polling to KVM (set in `new`).
        let halt_poll = if self.opts.mode == GuestMode::User {
            self.opts.halt_poll
        } else {
            Duration::ZERO
        };
        let stop = Arc::new(AtomicBool::new(false));
        let ended = Arc::new(AtomicBool::new(false));
        let doorbell = self.doorbell.try_clone()?;
        let (tx, rx) = mpsc::channel();
        let (stop2, ended2) = (Arc::clone(&stop), Arc::clone(&ended));
        let handle = std::thread::Builder::new()
            .name("kicklab-vcpu".into())
            .spawn(move || {
                let pinned = cpu != UNPINNED && crate::clock::pin(cpu);
                let _ = tx.send((thread_cpu_clock(), pinned));
                let r = vcpu_loop(vcpu, &stop2, &doorbell, halt_poll, waits);
                // Linger (asleep, so its CPU clock stands still) until the
                // host has read that clock and lets go.
                ended2.store(true, Ordering::SeqCst);
                while !stop2.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_micros(100));
                }
                r
            })?;
        let (clock, pinned) = rx
            .recv()
            .map_err(|_| TestbedError::Kvm("the vCPU thread died at start".into()))?;
        Ok(VcpuThread {
            handle: Some(handle),
            stop,
            ended,
            clock,
            pinned,
            guest_khz,
        })
    }
}

impl Vm {
    /// Long mode without firmware (as Firecracker sets it up): identity-map
    /// the first 2 MiB with one user-accessible large page; a GDT with
    /// kernel and user segments and a TSS (RSP0: the kernel stack; an I/O
    /// bitmap that opens ports 0..0x400).
    fn long_mode(&self, sregs: &mut kvm_bindings::kvm_sregs) {
        let pml4 = map::PML4 as u64;
        // Present, writable, user.
        self.mem
            .write_bytes(map::PML4, &((pml4 + 0x1000) | 0x7).to_le_bytes());
        self.mem
            .write_bytes(map::PML4 + 0x1000, &((pml4 + 0x2000) | 0x7).to_le_bytes());
        self.mem
            .write_bytes(map::PML4 + 0x2000, &0x87u64.to_le_bytes()); // 2 MiB page
        let tss = map::TSS as u64;
        // 104 bytes of TSS, then an I/O bitmap allowing ports 0..0x400
        // (all zero bits) and its 0xff terminator: this KVM checks the
        // bitmap for user-mode `out` even with IOPL 3 (measured).
        let tss_limit = 104 + 128;
        let tss_low =
            tss_limit | ((tss & 0xff_ffff) << 16) | (0x89 << 40) | (((tss >> 24) & 0xff) << 56);
        let gdt: [u64; 7] = [
            0,
            0x00af_9b00_0000_ffff, // 0x08 kernel code
            0x00cf_9300_0000_ffff, // 0x10 kernel data
            0x00cf_f300_0000_ffff, // 0x18 user data (DPL 3)
            0x00af_fb00_0000_ffff, // 0x20 user code (DPL 3)
            tss_low,               // 0x28 TSS
            tss >> 32,
        ];
        for (i, e) in gdt.iter().enumerate() {
            self.mem.write_bytes(map::GDT + 8 * i, &e.to_le_bytes());
        }
        self.mem
            .write_bytes(map::TSS + 4, &u64::from(map::STACK_TOP).to_le_bytes()); // RSP0
        self.mem.write_bytes(map::TSS + 102, &104u16.to_le_bytes()); // I/O bitmap offset
        self.mem.write_bytes(map::TSS + 104, &[0u8; 128]);
        self.mem.write_bytes(map::TSS + 232, &[0xff]);
        let seg = |selector: u16, type_: u8, l: u8| kvm_bindings::kvm_segment {
            base: 0,
            limit: 0xffff_ffff,
            selector,
            type_,
            present: 1,
            dpl: 0,
            db: u8::from(l == 0),
            s: 1,
            l,
            g: 1,
            avl: 0,
            unusable: 0,
            padding: 0,
        };
        sregs.cs = seg(0x08, 0xb, 1);
        let data = seg(0x10, 0x3, 0);
        (sregs.ds, sregs.es, sregs.fs, sregs.gs, sregs.ss) = (data, data, data, data, data);
        sregs.gdt.base = map::GDT as u64;
        sregs.gdt.limit = 7 * 8 - 1;
        sregs.cr3 = pml4;
        sregs.cr4 = 1 << 5; // PAE
        sregs.cr0 = 1 | (1 << 4) | (1 << 31); // PE, ET, PG
        sregs.efer = (1 << 8) | (1 << 10); // LME, LMA
    }
}

/// How a guest run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuestEnd {
    /// The guest wrote to the done port.
    Done,
    /// Stopped by the host.
    Stopped,
}

/// Waits the VMM runs on the guest's behalf, as KVM's halt polling runs
/// in the host on a guest's `hlt`: the guest exits to [`port::WAIT`] when
/// it cannot go on, and to [`port::PAUSE`] when the ring holds what its
/// pause mark says; the vCPU thread carries out its strategy there (spins
/// and naps on the vCPU's thread, so their CPU is the guest's) and
/// returns to it. Everything such a handler reads from guest memory is
/// untrusted; it must return once `stop` is set.
pub trait GuestWaits: Send {
    /// The guest cannot go on: return once it can, or once it should
    /// block (ask for a kick and halt).
    ///
    /// # Errors
    ///
    /// Only the host's own failures.
    fn wait(&mut self, stop: &AtomicBool) -> Result<(), TestbedError>;
    /// The guest passed its pause mark: pause it if its strategy says so.
    ///
    /// # Errors
    ///
    /// Only the host's own failures.
    fn pause(&mut self, stop: &AtomicBool) -> Result<(), TestbedError>;
    /// The guest halted (it blocked) and runs again.
    fn woke(&mut self);
}

fn vcpu_loop(
    mut vcpu: VcpuFd,
    stop: &AtomicBool,
    doorbell: &EventFd,
    halt_poll: Duration,
    mut waits: Option<Box<dyn GuestWaits>>,
) -> Result<GuestEnd, TestbedError> {
    loop {
        if stop.load(Ordering::SeqCst) {
            return Ok(GuestEnd::Stopped);
        }
        match vcpu.run() {
            Ok(VcpuExit::IoOut(p, _)) if p == port::DONE => return Ok(GuestEnd::Done),
            Ok(VcpuExit::IoOut(p, _)) if p == port::HALT => {
                halt(doorbell, halt_poll, None, stop)?;
                if let Some(w) = waits.as_deref_mut() {
                    w.woke();
                }
            }
            Ok(VcpuExit::IoOut(p, _)) if p == port::WAIT && waits.is_some() => {
                if let Some(w) = waits.as_deref_mut() {
                    w.wait(stop)?;
                }
            }
            Ok(VcpuExit::IoOut(p, _)) if p == port::PAUSE && waits.is_some() => {
                if let Some(w) = waits.as_deref_mut() {
                    w.pause(stop)?;
                }
            }
            Ok(VcpuExit::IoOut(p, data)) if p == port::IDLE_HINT && data.len() == 2 => {
                let us = u16::from_le_bytes([data[0], data[1]]);
                halt(
                    doorbell,
                    halt_poll,
                    Some(Duration::from_micros(u64::from(us))),
                    stop,
                )?;
            }
            Ok(VcpuExit::IoOut(p, data)) => {
                return Err(TestbedError::Guest(format!(
                    "wrote {data:?} to I/O port {p:#x}, which nothing handles"
                )))
            }
            Ok(VcpuExit::IoIn(p, _)) => {
                return Err(TestbedError::Guest(format!(
                    "read I/O port {p:#x}, which nothing handles"
                )))
            }
            Ok(VcpuExit::Shutdown) => {
                let rip = vcpu.get_regs().map(|r| r.rip).unwrap_or(0);
                return Err(TestbedError::Guest(format!(
                    "shut down (a triple fault) at {rip:#x}"
                )));
            }
            Ok(VcpuExit::Intr) => {}
            Ok(other) => {
                return Err(TestbedError::Guest(format!(
                    "stopped with an unexpected exit: {other:?}"
                )))
            }
            Err(e) if e.errno() == libc::EINTR || e.errno() == libc::EAGAIN => {}
            Err(e) => return Err(TestbedError::Kvm(format!("KVM_RUN: {e}"))),
        }
    }
}

/// The guest halted: poll the doorbell for `poll` (host halt polling),
/// then sleep on it until it rings, `timeout` passes (Denali's
/// idle-with-timeout), or a stop signal arrives.
pub(super) fn halt(
    doorbell: &EventFd,
    poll: Duration,
    timeout: Option<Duration>,
    stop: &AtomicBool,
) -> Result<(), TestbedError> {
    if !poll.is_zero() {
        let start = Instant::now();
        loop {
            if doorbell.read().is_ok() {
                return Ok(());
            }
            if start.elapsed() >= poll || stop.load(Ordering::Relaxed) {
                break;
            }
            std::hint::spin_loop();
        }
    }
    let mut pfd = libc::pollfd {
        fd: doorbell.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: libc::time_t::try_from(t.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: libc::c_long::from(t.subsec_nanos()),
    });
    let ts_ptr = ts.as_ref().map_or(std::ptr::null(), std::ptr::from_ref);
    // SAFETY: one valid pollfd, a valid or null timeout; a null sigmask
    // keeps the thread's mask, so the stop signal interrupts the call.
    let r = unsafe { libc::ppoll(&mut pfd, 1, ts_ptr, std::ptr::null()) };
    if r > 0 {
        let _ = doorbell.read();
    } else if r < 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e.into());
        }
    }
    Ok(())
}

pub use crate::clock::clock_ns;
use crate::clock::own_cpu_clock as thread_cpu_clock;

/// The signal that interrupts `KVM_RUN`.
fn kick_signal() -> i32 {
    vmm_sys_util::signal::SIGRTMIN() + 2
}

fn install_kick_signal() -> Result<(), TestbedError> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    extern "C" fn nothing(_: i32, _: *mut libc::siginfo_t, _: *mut libc::c_void) {}
    INSTALLED
        .get_or_init(|| {
            vmm_sys_util::signal::register_signal_handler(kick_signal(), nothing)
                .map_err(|e| format!("install the vCPU kick signal: {e}"))
        })
        .clone()
        .map_err(TestbedError::Kvm)
}

/// A running vCPU.
#[derive(Debug)]
pub struct VcpuThread {
    handle: Option<JoinHandle<Result<GuestEnd, TestbedError>>>,
    stop: Arc<AtomicBool>,
    /// The guest has stopped running (the thread may linger).
    ended: Arc<AtomicBool>,
    clock: libc::clockid_t,
    /// The guest's TSC rate [kHz], if KVM says.
    pub guest_khz: Option<u32>,
    /// Whether pinning the vCPU thread to its CPU succeeded.
    pub pinned: bool,
}

impl VcpuThread {
    /// CPU time of the vCPU thread so far (guest and host kernel time).
    pub fn cpu_ns(&self) -> u64 {
        clock_ns(self.clock)
    }

    /// The vCPU thread's CPU clock, readable from any thread while it runs.
    pub fn clock_id(&self) -> libc::clockid_t {
        self.clock
    }

    /// Whether the guest has stopped running.
    pub fn finished(&self) -> bool {
        self.ended.load(Ordering::SeqCst)
            || self.handle.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Waits up to `timeout` for the guest to end by itself.
    ///
    /// # Errors
    ///
    /// What the vCPU thread reported, or a hang if it did not end.
    pub fn join_within(&mut self, timeout: Duration) -> Result<GuestEnd, TestbedError> {
        let start = Instant::now();
        while !self.finished() && start.elapsed() < timeout {
            std::thread::sleep(Duration::from_micros(200));
        }
        if !self.finished() {
            self.stop();
            return Err(TestbedError::Hang(format!(
                "the guest did not finish within {timeout:?}"
            )));
        }
        self.stop.store(true, Ordering::SeqCst);
        self.join()
    }

    /// Stops the guest (wherever it is) and waits for the thread.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = &self.handle {
            while !h.is_finished() && !self.ended.load(Ordering::SeqCst) {
                let _ = h.kill(kick_signal());
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        let _ = self.join();
    }

    fn join(&mut self) -> Result<GuestEnd, TestbedError> {
        match self.handle.take() {
            Some(h) => h
                .join()
                .map_err(|_| TestbedError::Kvm("the vCPU thread panicked".into()))?,
            None => Ok(GuestEnd::Stopped),
        }
    }
}

impl Drop for VcpuThread {
    fn drop(&mut self) {
        if self.handle.is_some() {
            self.stop();
        }
    }
}
