//! The split-execution runtime of this process: its VM, the merged address space, the resident
//! vCPUs and the calls that post functions to them (synchronous: the caller waits and serves;
//! asynchronous: a partner thread does, and is joined).

use crate::cpu::{self, Cpu, CpuError, Fault};
use crate::forward::Local;
use crate::fpu;
use crate::guest::Func;
use crate::mailbox::status;
use crate::space::{Space, SpaceError, SpaceStats};
use crate::sys;
use kvm_bindings::CpuId;
use kvm_ioctls::{Kvm, VmFd};
use multios_lwk::memory::{GuestMemory, PT_POOL_BASE, STUB_BASE, SYS_BASE};
use multios_lwk::stub::slot_addr;
use multios_lwk_abi::state;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Settings of [`crate::Hrt::init`].
#[derive(Debug, Clone)]
pub struct Config {
    /// The CPUs the vCPUs are pinned to, vCPU k on `cpus[k % len]` (empty: every CPU the process
    /// may use, last first, so that vCPU 0 leaves the first CPU to the process).
    pub cpus: Vec<usize>,
    /// The most vCPUs (concurrent invocations beyond it wait for one to be free).
    pub max_vcpus: usize,
    /// How long an idle vCPU spins for the next function before its thread sleeps (a call then
    /// pays a wake-up: ≈ 30 µs exit plus the futex wake).
    pub idle_spin: Duration,
    /// How long a partner thread spins for its function's events before sleeping between them.
    pub partner_spin: Duration,
    /// The guest page-table pool, bytes.
    pub pool: u64,
    /// Print each function's fault on stderr.
    pub verbose_faults: bool,
    /// Leave the affinity of the thread calling `init` alone (else it is restricted to the CPUs
    /// no vCPU is pinned to, when any is left: a caller spinning on a vCPU's CPU waits for the
    /// scheduler's time slice, milliseconds, at every call).
    pub keep_affinity: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            cpus: Vec::new(),
            max_vcpus: 8,
            idle_spin: Duration::from_millis(2),
            partner_spin: Duration::from_micros(200),
            pool: 256 << 20,
            verbose_faults: true,
            keep_affinity: false,
        }
    }
}

/// Errors of split execution.
#[derive(Debug, thiserror::Error)]
pub enum HrtError {
    #[error("split execution is already initialised in this process")]
    AlreadyInitialised,
    #[error("split execution is not initialised: call hrt_init first")]
    NotInitialised,
    #[error(transparent)]
    Kvm(#[from] multios_lwk::vm::VmError),
    #[error("{what}: {source}")]
    KvmCall {
        what: &'static str,
        source: kvm_ioctls::Error,
    },
    #[error("mapping the LWK's region at 0x7e0000000000: {0} (the process already uses that range)")]
    Memory(#[from] multios_lwk::memory::MemoryError),
    #[error(transparent)]
    Space(#[from] SpaceError),
    #[error("starting a vCPU: {0}")]
    Cpu(#[from] CpuError),
    #[error("the function faulted: {0}")]
    Faulted(Fault),
    #[error("split execution does not cross fork(): the child has no vCPUs (its VM belongs to the parent)")]
    ForkedChild,
    #[error("unknown invocation (already joined?)")]
    NoSuchInvocation,
    #[error("starting the partner thread: {0}")]
    Thread(std::io::Error),
    #[error("the partner thread panicked")]
    PartnerPanicked,
    #[error("starting vCPU {0}: its thread could not be started or ended during set-up: {1}")]
    VcpuThread(u64, std::io::Error),
    #[error("hrt_invoke_func called from inside a split-executed function (functions cannot start invocations: call the function directly)")]
    Nested,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Everything the vCPU threads and callers share.
pub struct Shared {
    pub vm: VmFd,
    _kvm: Kvm,
    pub mem: Arc<GuestMemory>,
    pub cpuid: CpuId,
    pub space: Mutex<Space>,
    pub local: Local,
    pub spin_budget: u32,
    pub verbose_faults: bool,
    cfg: Config,
    idle_spins: u64,
    cpus: Mutex<Vec<Arc<Cpu>>>,
    free: Mutex<Pool>,
    freed: Condvar,
    /// Callers waiting on `freed` (a notify is a futex call: skipped when nobody waits).
    waiting: std::sync::atomic::AtomicUsize,
    /// Time the merger took at start-up, ns.
    pub merge_ns: AtomicU64,
}

/// The idle vCPUs and the vCPU ids handed out, under one lock so that two first calls at once
/// never start the same id (KVM_CREATE_VCPU: EEXIST).
#[derive(Default)]
struct Pool {
    free: Vec<Arc<Cpu>>,
    /// vCPUs started or being started (a failed start gives its place back).
    live: usize,
    /// The next vCPU id (never reused: a failed start may have created it in KVM).
    next_id: u64,
}

/// pause-loop iterations per microsecond, roughly (Zen 4: a `pause` is ≈ 64 cycles).
fn spins_per_us() -> u64 {
    let t = Instant::now();
    let mut n = 0u64;
    while t.elapsed() < Duration::from_micros(200) {
        for _ in 0..100 {
            std::hint::spin_loop();
        }
        n += 100;
    }
    (n / 200).max(1)
}

impl Shared {
    pub fn new(cfg: Config) -> Result<Arc<Self>, HrtError> {
        multios_lwk::vm::check_kvm()?;
        let kvm = Kvm::new().map_err(|source| HrtError::KvmCall {
            what: "opening /dev/kvm",
            source,
        })?;
        let vm = kvm.create_vm().map_err(|source| HrtError::KvmCall {
            what: "KVM_CREATE_VM",
            source,
        })?;
        let cpuid = kvm
            .get_supported_cpuid(kvm_bindings::KVM_MAX_CPUID_ENTRIES)
            .map_err(|source| HrtError::KvmCall {
                what: "KVM_GET_SUPPORTED_CPUID",
                source,
            })?;
        let t0 = Instant::now();
        let mem = Arc::new(GuestMemory::lwk_only(cfg.pool)?);
        let lwk = |slot, start: u64, len: u64| {
            sys::set_slot(&vm, slot, start, len).map_err(|source| HrtError::KvmCall {
                what: "KVM_SET_USER_MEMORY_REGION (LWK region)",
                source,
            })
        };
        lwk(0, SYS_BASE, STUB_BASE + mem.stubs.len - SYS_BASE)?;
        lwk(1, PT_POOL_BASE, mem.pt_pool.len)?;
        multios_lwk::stub::write_tables(&mem);
        cpu::write_iret_stub(&mem);
        cpu::write_pf_reporter(&mem);
        mem.shadow.set_vm(std::os::fd::AsRawFd::as_raw_fd(&vm));
        let mut space = Space::new(mem.clone());
        space.merge(&vm)?;
        let merge_ns = t0.elapsed().as_nanos() as u64;
        let idle_spins = spins_per_us() * cfg.idle_spin.as_micros().max(1) as u64;
        Ok(Arc::new(Shared {
            vm,
            _kvm: kvm,
            mem,
            cpuid,
            space: Mutex::new(space),
            local: Local::new(),
            spin_budget: 20_000,
            verbose_faults: cfg.verbose_faults,
            cfg,
            idle_spins,
            cpus: Mutex::new(Vec::new()),
            free: Mutex::new(Pool::default()),
            freed: Condvar::new(),
            waiting: std::sync::atomic::AtomicUsize::new(0),
            merge_ns: AtomicU64::new(merge_ns),
        }))
    }

    /// The CPUs the vCPUs are pinned to, vCPU k on the k-th (round robin).
    fn partition(&self) -> Vec<usize> {
        if self.cfg.cpus.is_empty() {
            let mut c = multios_lwk::available_cpus();
            c.reverse();
            c
        } else {
            self.cfg.cpus.clone()
        }
    }

    fn pin_of(&self, id: u64) -> Option<usize> {
        let cpus = self.partition();
        (!cpus.is_empty()).then(|| cpus[id as usize % cpus.len()])
    }

    /// Restricts the calling thread to the CPUs that no vCPU of the first `max_vcpus` is pinned
    /// to, when there are any.
    pub fn keep_off_vcpus(&self) {
        if self.cfg.keep_affinity {
            return;
        }
        let used: Vec<usize> = (0..self.cfg.max_vcpus.max(1) as u64)
            .filter_map(|k| self.pin_of(k))
            .collect();
        let free: Vec<usize> = multios_lwk::available_cpus()
            .into_iter()
            .filter(|c| !used.contains(c))
            .collect();
        if !free.is_empty() {
            let _ = multios_lwk::sys::pin_thread(0, &free);
        }
    }

    /// Starts one more resident vCPU.
    fn start_cpu(self: &Arc<Self>, id: u64) -> Result<Arc<Cpu>, HrtError> {
        let cpu = Arc::new(Cpu::new(id, self.idle_spins));
        let (tx, rx) = std::sync::mpsc::channel();
        let (rt, c, pin) = (self.clone(), cpu.clone(), self.pin_of(id));
        let h = std::thread::Builder::new()
            .name(format!("hrt-vcpu{id}"))
            .spawn(move || cpu::thread(rt, c, pin, tx))
            .map_err(|e| HrtError::VcpuThread(id, e))?;
        *lock(&cpu.thread) = Some(h);
        match rx.recv() {
            Ok(Ok(())) => Ok(cpu),
            Ok(Err(e)) => Err(e.into()),
            Err(_) => Err(HrtError::VcpuThread(
                id,
                std::io::Error::other("the vCPU thread ended"),
            )),
        }
    }

    /// A free vCPU (the one used last, likely still spinning), started when none is free and the
    /// limit allows, else waited for.
    pub fn acquire(self: &Arc<Self>) -> Result<Arc<Cpu>, HrtError> {
        let mut pool = lock(&self.free);
        loop {
            if let Some(c) = pool.free.pop() {
                return Ok(c);
            }
            if pool.live < self.cfg.max_vcpus.clamp(1, 128) {
                // Reserve the place and the id under the lock; start outside it (a start takes
                // milliseconds; other callers meanwhile take a freed vCPU or start another).
                pool.live += 1;
                let id = pool.next_id;
                pool.next_id += 1;
                drop(pool);
                return match self.start_cpu(id) {
                    Ok(c) => {
                        lock(&self.cpus).push(c.clone());
                        Ok(c)
                    }
                    Err(e) => {
                        lock(&self.free).live -= 1;
                        // A caller waiting for this start may start one itself now.
                        self.freed.notify_all();
                        Err(e)
                    }
                };
            }
            self.waiting.fetch_add(1, SeqCst);
            pool = self.freed.wait(pool).unwrap_or_else(|p| p.into_inner());
            self.waiting.fetch_sub(1, SeqCst);
        }
    }

    pub fn release(&self, cpu: Arc<Cpu>) {
        let mut pool = lock(&self.free);
        if cpu.exited.load(Acquire) {
            // Its place is free again (a vCPU that faulted fatally does not come back).
            pool.live = pool.live.saturating_sub(1);
        } else {
            pool.free.push(cpu);
        }
        drop(pool);
        if self.waiting.load(SeqCst) > 0 {
            self.freed.notify_one();
        }
    }

    /// Serves the call waiting in `cpu`'s slot, if any; true when one was served.
    fn serve_slot(&self, cpu: &Cpu) -> bool {
        let slot = slot_addr(cpu.id);
        let st = multios_lwk::slot::state_of(&self.mem, slot);
        if st.load(Acquire) != state::REQUEST || !multios_lwk::slot::claim(st) {
            return false;
        }
        let (nr, a) = multios_lwk::slot::request(&self.mem, slot);
        let r = self.local.serve(nr, a, cpu.tid.load(Relaxed));
        self.follow(nr as i64, a, r);
        multios_lwk::slot::reply(&self.mem, slot, r);
        true
    }

    /// Keeps the guest's tables in step with a mapping call the function made itself (the
    /// process's other mappings are followed lazily: faults and EFAULT resyncs).
    fn follow(&self, nr: i64, a: [u64; 6], r: i64) {
        if r < 0
            || !matches!(
                nr,
                libc::SYS_mmap | libc::SYS_mremap | libc::SYS_brk | libc::SYS_munmap | libc::SYS_mprotect
            )
        {
            return;
        }
        let mut space = lock(&self.space);
        let res = match nr {
            libc::SYS_mmap => space.prefill(&self.vm, r as u64),
            libc::SYS_brk if r > 0 => space.prefill(&self.vm, r as u64 - 1),
            libc::SYS_mremap => space
                .resync_range(&self.vm, a[0], a[1])
                .and_then(|()| space.prefill(&self.vm, r as u64)),
            libc::SYS_munmap | libc::SYS_mprotect => space.resync_range(&self.vm, a[0], a[1]),
            _ => Ok(()),
        };
        if let Err(e) = res {
            eprintln!("multios-hrt: following the function's mapping call {nr}: {e}");
        }
    }

    /// Posts `f(arg)` to `cpu` and waits for it, serving its forwarded calls. A partner (`sleepy`)
    /// sleeps between events after `partner_spin`; a synchronous caller spins.
    pub fn run_on(&self, cpu: &Cpu, f: Func, arg: u64, sleepy: bool) -> Result<i64, HrtError> {
        let mb = &cpu.mb;
        let seq = mb.seq.load(Relaxed).wrapping_add(1);
        mb.func.store(f as usize as u64, Relaxed);
        mb.arg.store(arg, Relaxed);
        mb.fs.store(sys::my_fs_base(), Relaxed);
        let fp = fpu::save();
        mb.fp.store(fp, Relaxed);
        mb.seq.store(seq, SeqCst);
        if mb.idle.load(SeqCst) != 0 {
            sys::futex_wake(&mb.seq);
        }
        let mut since: Option<Instant> = None;
        let mut n = 0u32;
        loop {
            if mb.done.load(Acquire) == seq {
                break;
            }
            if self.serve_slot(cpu) {
                since = sleepy.then(Instant::now);
                continue;
            }
            if cpu.exited.load(Acquire) {
                return Err(HrtError::Faulted(Fault {
                    vector: u64::MAX,
                    ..Default::default()
                }));
            }
            std::hint::spin_loop();
            n = n.wrapping_add(1);
            if sleepy
                && n.is_multiple_of(256)
                && since.get_or_insert_with(Instant::now).elapsed() > self.cfg.partner_spin
            {
                let b = mb.bell.load(SeqCst);
                mb.waiter.store(1, SeqCst);
                let st = multios_lwk::slot::state_of(&self.mem, slot_addr(cpu.id));
                if mb.done.load(SeqCst) != seq && st.load(SeqCst) != state::REQUEST {
                    sys::futex_wait(&mb.bell, b, Some(Duration::from_millis(2)));
                }
                mb.waiter.store(0, SeqCst);
            }
        }
        if mb.status.load(Acquire) == status::FAULT {
            let f = lock(&cpu.fault).take().unwrap_or_default();
            return Err(HrtError::Faulted(f));
        }
        // What the function left (a rounding mode it set, the flags it raised) is the caller's
        // now, as after a plain call (this wait did no floating-point arithmetic: the state is
        // still `fp`). A function that faulted leaves the caller's as it was.
        fpu::switch(fp, mb.fp_out.load(Acquire));
        Ok(mb.ret.load(Acquire) as i64)
    }

    /// Stops every vCPU and waits for their threads (a vCPU still inside a function is left).
    pub fn stop(&self) {
        let cpus = std::mem::take(&mut *lock(&self.cpus));
        lock(&self.free).free.clear();
        for c in &cpus {
            c.mb.stop.store(1, SeqCst);
            sys::futex_wake(&c.mb.seq);
        }
        for c in &cpus {
            let t0 = Instant::now();
            while !c.exited.load(Acquire) && t0.elapsed() < Duration::from_secs(2) {
                std::thread::sleep(Duration::from_micros(100));
            }
            if c.exited.load(Acquire) {
                if let Some(h) = lock(&c.thread).take() {
                    let _ = h.join();
                }
            }
        }
    }

    pub fn space_stats(&self) -> SpaceStats {
        lock(&self.space).stats()
    }

    pub fn vcpus(&self) -> usize {
        lock(&self.cpus).len()
    }
}
