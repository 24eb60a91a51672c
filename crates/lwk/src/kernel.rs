//! The LWK state of the one guest process ([`Kernel`]) and the vocabulary every part of the LWK
//! shares with it: a call's [`Reply`], who serves it ([`Ctx`]), a thread ([`ThreadInfo`]) and how
//! the process ended ([`ExitStatus`]). The system calls are served by `impl Kernel` blocks in
//! `syscall/` (dispatch in `syscall/mod.rs`), the signal rules in `signal/`.

use crate::memory::GuestMemory;
use crate::mm::Mm;
use crate::policy::LocalSet;
use crate::stats::Stats;
use kvm_ioctls::VcpuFd;
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicI32, AtomicUsize};
use std::sync::{Arc, Mutex, MutexGuard};

/// The answer to one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// Return this value in rax.
    Ret(i64),
    /// Only the vCPU thread can serve this call (it needs the vCPU): ring the doorbell.
    NeedVcpu,
    /// The process is gone (exit_group, fatal signal, last thread's exit): stop every vCPU.
    Stop,
    /// This thread exited: stop its vCPU only.
    ThreadExit,
    /// Create a thread (only the vCPU thread can: it needs the parent's registers).
    Clone(CloneReq),
    /// Create a process: fork the VMM (only the vCPU thread can). `stack` 0 keeps the stack.
    Fork(CloneReq),
    /// The vCPU's registers were set to where the guest continues (rt_sigreturn): no return
    /// value; the slot goes back to IDLE.
    Resumed,
}

/// A clone of a thread or a process, decoded from clone or clone3 (`syscall/clone.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CloneReq {
    /// The child's stack pointer.
    pub stack: u64,
    /// vfork, or clone with CLONE_VFORK: the parent waits for the child's exec or exit
    /// (`vfork.rs`).
    pub vfork: bool,
    pub tls: Option<u64>,
    pub parent_tid: Option<u64>,
    pub child_tid: Option<u64>,
    pub clear_child_tid: Option<u64>,
    /// CLONE_PIDFD of a process: where the parent's pidfd of the child goes.
    pub pidfd: Option<u64>,
    /// CLONE_CLEAR_SIGHAND: the child's handled signals go back to SIG_DFL.
    pub clear_sighand: bool,
}

/// One guest thread (one vCPU).
#[derive(Debug, Clone, Default)]
pub struct ThreadInfo {
    pub tid: i32,
    /// CLONE_CHILD_CLEARTID / set_tid_address: zeroed and futex-woken at exit.
    pub clear_child_tid: Option<u64>,
    pub alive: bool,
    /// The Linux thread running this vCPU (0 until it has started).
    pub host_tid: i32,
    /// The CPUs the guest restricted this thread to with sched_setaffinity (None: the partition).
    pub affinity: Option<Vec<usize>>,
    /// The thread's signal state (mask, pending set, alternate stack), guarded by `threads`.
    pub sig: crate::signal::ThreadSignals,
    /// Its robust futex list and name (`procattr.rs`).
    pub attrs: crate::procattr::ThreadAttrs,
}

/// Who is serving the call.
pub enum Ctx<'a> {
    Proxy,
    Vcpu(&'a VcpuFd),
}

/// How the guest process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitStatus {
    Code(i32),
    Signal(i32),
}

/// The guest's address space: the window's allocator and what its ranges hold.
pub struct AddressSpace {
    /// Held for the whole of every call that changes the address space (brk, mmap, munmap,
    /// mremap, mprotect, madvise, shmat, shmdt), as Linux holds its mmap_lock for writing: the
    /// bookkeeping, the zeroing and copying of guest memory, the VMAs and the page tables of one
    /// call are done before another call sees the range. Without it, a range an mremap or munmap
    /// had released in `mm` but not yet zeroed could be handed to another thread's mmap (the proxy
    /// and a vCPU thread serve calls at the same time), whose fresh data the late zeroing then
    /// wiped (issue #14: glibc's `free(): invalid pointer` in `tests/c/heap.c`). A thread's exit
    /// holds it too, from the fall of the thread count to its clear-child-tid write. Taken first,
    /// before any other lock of the LWK.
    pub(crate) map: Mutex<()>,
    /// The application window's allocator (brk, mmap, munmap…).
    pub(crate) mm: Mutex<Mm>,
    /// What the ranges of the window hold, for the guest's /proc/self/maps (lock after `mm`).
    pub(crate) vmas: Mutex<crate::vmas::Vmas>,
    /// Ranges of the window that are shared file mappings (`syscall/shared.rs`).
    pub(crate) shared: Mutex<crate::mm::RangeSet>,
    /// SysV shared-memory attachments: address → length (shmdt's argument is only the address;
    /// lock after `shared`).
    pub(crate) shm: Mutex<std::collections::BTreeMap<u64, u64>>,
    /// io_uring rings the guest set up, by (st_dev, st_ino) of their fd (`syscall/uring.rs`).
    pub(crate) uring: Mutex<std::collections::HashMap<(u64, u64), Arc<crate::iouring::Ring>>>,
}

/// The program the guest runs now (execve replaces it).
pub struct Program {
    /// The program's absolute path, the answer to readlink("/proc/self/exe") when its file
    /// cannot name itself.
    pub(crate) exe: Mutex<Vec<u8>>,
    /// The program's file, an O_PATH descriptor above the floor (close-on-exec): what the guest's
    /// own `/proc/PID/exe` opens, execs and reads as a link (`syscall/ownexe.rs`).
    pub(crate) file: Mutex<Option<std::os::fd::OwnedFd>>,
    /// execve calls so far.
    pub(crate) execs: AtomicUsize,
    /// With rewriting on (the default): thunks for code mapped later (shared libraries), and the count.
    pub(crate) thunks: Mutex<Option<crate::rewrite::Thunks>>,
    pub(crate) rewritten: AtomicUsize,
    /// Its auxiliary vector as the loader wrote it, the answer to `/proc/self/auxv`.
    pub(crate) auxv: Mutex<Vec<u64>>,
}

/// The LWK state of the one guest process.
///
/// Lock order — the nesting the code does, and the order the VMM's fork holds the busiest locks
/// in (`machine/fork.rs`): `space.map` before every other; `threads`, then `signals.pending`, then
/// `stats`; `space.mm` before `space.vmas`; `space.shared` before `space.shm`. Every other lock is taken
/// alone, released before the next one is taken.
pub struct Kernel {
    pub mem: Arc<GuestMemory>,
    pub(crate) space: AddressSpace,
    pub(crate) program: Program,
    pub(crate) policy: LocalSet,
    /// The guest's pid: the VMM's (a forked child's after fork).
    pub(crate) pid: AtomicI32,
    /// The guest's execution domain (`personality`), inherited across exec and fork as on Linux.
    pub(crate) persona: std::sync::atomic::AtomicU64,
    /// The lowest of the VMM's own descriptors (`fds.rs`): the guest's stay below it.
    pub(crate) fd_floor: i32,
    /// The guest's threads, indexed by vCPU id, each with its signal state.
    pub(crate) threads: Mutex<Vec<ThreadInfo>>,
    pub(crate) live_threads: AtomicUsize,
    /// Threads created so far: a new thread's tid is the pid plus this count, so tids are not
    /// reused when vCPU ids are (a program may create thousands of threads over its life).
    pub(crate) threads_made: AtomicI32,
    /// The largest address-space size and fd-table size the guest's `status` reported
    /// (`syscall/procstatus.rs`): Linux's VmPeak and FDSize never fall (VmPeak starts over at exec).
    pub(crate) vm_peak: std::sync::atomic::AtomicU64,
    pub(crate) fd_table_seen: std::sync::atomic::AtomicU64,
    /// The process's signal state: dispositions, the process-directed pending set, senders, the
    /// host threads serving calls (per-thread masks and pending sets are in `threads`).
    pub(crate) signals: crate::signal::Signals,
    /// The LWK partition: the CPUs sched_getaffinity reports, vCPU k pinned on `cpus[k % len]`
    /// when `pin` is set.
    pub(crate) cpus: Vec<usize>,
    pub(crate) pin: bool,
    pub(crate) exit: Mutex<Option<ExitStatus>>,
    pub(crate) stats: Mutex<Stats>,
    /// Calls already reported as refused (each is reported once).
    pub(crate) reported: Mutex<BTreeSet<u64>>,
    /// Reports of refused calls, kept for the caller (also printed to stderr once each).
    pub(crate) notes: Mutex<Vec<String>>,
    pub(crate) quiet: bool,
    /// `--trace FILE`: every delegated call and every fault turned into a signal (`trace/`).
    pub(crate) trace: Option<crate::trace::writer::Tracer>,
    /// `--prefault`: anonymous writable mappings are backed by host pages when they are made.
    pub(crate) prefault: bool,
    /// `--populate`: new anonymous memory populated by the proxy before the guest touches it
    /// (`populate.rs`).
    pub(crate) ahead: crate::populate::Ahead,
    /// `--populate-at-map`: the head of new anonymous memory populated in the call that maps it
    /// (`atmap.rs`).
    pub(crate) at_map: crate::atmap::AtMap,
    /// `--populate-next`: the free memory the next mappings will get, populated by the proxy
    /// while it idles (`next.rs`).
    pub(crate) next: crate::next::Next,
    /// The proxy parks while a vCPU thread edits the host's mappings (`aside.rs`).
    pub(crate) aside: crate::aside::Aside,
    /// vCPU 0's fault count, which makes a polling proxy park while the guest faults
    /// (`faultwatch.rs`).
    pub(crate) faults: crate::faultwatch::FaultWatch,
    /// KVM's statistics of the run's vCPUs and VM (`costs.rs`).
    pub(crate) kvm: crate::costs::KvmCounters,
    /// The calls served after a doorbell exit (`costs.rs`).
    pub(crate) doorbell_calls: crate::costs::PerCall,
    /// The scheduler times of the run's vCPU threads and proxy (`cputime.rs`).
    pub(crate) cputime: crate::cputime::Collector,
    /// The guest process's own CPU time, for its process clock, getrusage and times
    /// (`guestcpu.rs`).
    pub(crate) guest_cpu: crate::guestcpu::GuestCpu,
    /// In a vfork child until it execs or exits: what it hands back to its parent (`vfork.rs`).
    pub(crate) vfork: Mutex<Option<crate::vfork::Release>>,
    /// Programs an execve runs on Linux, outside the LWK (`syscall/linux_exec.rs`).
    pub(crate) linux_exec: Vec<String>,
    /// Process attributes prctl serves locally (`procattr.rs`, `syscall/prctl.rs`).
    pub(crate) attrs: crate::procattr::ProcessAttrs,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Kernel {
    pub fn new(
        mem: Arc<GuestMemory>,
        mm: Mm,
        policy: LocalSet,
        exe: Vec<u8>,
        fd_floor: i32,
        quiet: bool,
    ) -> Self {
        // The VMM's procfs directory, opened before the guest runs (a failure is reported when a
        // procfs file is opened: every one is then refused).
        let _ = crate::procfs::init();
        Kernel {
            mem,
            space: AddressSpace {
                map: Mutex::new(()),
                mm: Mutex::new(mm),
                vmas: Mutex::new(crate::vmas::Vmas::default()),
                shared: Mutex::new(crate::mm::RangeSet::default()),
                shm: Mutex::new(std::collections::BTreeMap::new()),
                uring: Mutex::new(std::collections::HashMap::new()),
            },
            program: Program {
                exe: Mutex::new(exe),
                file: Mutex::new(None),
                execs: AtomicUsize::new(0),
                thunks: Mutex::new(None),
                rewritten: AtomicUsize::new(0),
                auxv: Mutex::new(Vec::new()),
            },
            policy,
            pid: AtomicI32::new(std::process::id() as i32),
            persona: std::sync::atomic::AtomicU64::new(crate::sys::personality_now()),
            fd_floor,
            signals: crate::signal::Signals::new(crate::memory::sys_page::MAX_VCPUS as usize),
            reported: Mutex::new(BTreeSet::new()),
            exit: Mutex::new(None),
            stats: Mutex::new(Stats::default()),
            notes: Mutex::new(Vec::new()),
            quiet,
            trace: None,
            prefault: false,
            ahead: crate::populate::Ahead::new(0),
            at_map: crate::atmap::AtMap::new(0),
            next: crate::next::Next::new(0),
            aside: crate::aside::Aside::default(),
            faults: crate::faultwatch::FaultWatch::default(),
            kvm: crate::costs::KvmCounters::default(),
            doorbell_calls: crate::costs::PerCall::default(),
            cputime: crate::cputime::Collector::default(),
            guest_cpu: crate::guestcpu::GuestCpu::default(),
            vfork: Mutex::new(None),
            linux_exec: Vec::new(),
            attrs: crate::procattr::ProcessAttrs::default(),
            threads: Mutex::new(vec![ThreadInfo {
                tid: std::process::id() as i32,
                clear_child_tid: None,
                alive: true,
                host_tid: 0,
                affinity: None,
                sig: crate::signal::ThreadSignals::default(),
                attrs: crate::procattr::ThreadAttrs::default(),
            }]),
            live_threads: AtomicUsize::new(1),
            threads_made: AtomicI32::new(0),
            vm_peak: std::sync::atomic::AtomicU64::new(0),
            fd_table_seen: std::sync::atomic::AtomicU64::new(0),
            cpus: crate::sys::affinity_list(),
            pin: false,
        }
    }

    /// The programs an execve runs on Linux instead of in the LWK (`Config::linux_exec`).
    /// The caller resolves them to the files it trusts first (`syscall::linux_exec::trust`).
    pub fn set_linux_exec(&mut self, programs: Vec<String>) {
        self.linux_exec = programs;
    }

    /// Backs anonymous writable mappings with host pages when they are made (`--prefault`).
    pub fn set_prefault(&mut self, on: bool) {
        self.prefault = on;
    }

    /// Populates new anonymous memory ahead of the guest, up to `cap` bytes of each range (0:
    /// off; `populate.rs`).
    pub fn set_populate(&mut self, cap: u64) {
        self.ahead = crate::populate::Ahead::new(cap);
    }

    /// Populates up to `per_range` bytes of each new anonymous range in the call that maps it
    /// (0: off; `atmap.rs`).
    pub fn set_populate_at_map(&mut self, per_range: u64) {
        self.at_map = crate::atmap::AtMap::new(per_range);
    }

    /// Keeps `ahead` bytes of the free memory the next anonymous mappings will get populated,
    /// by the proxy between calls (0: off; `next.rs`).
    pub fn set_populate_next(&mut self, ahead: u64) {
        self.next = crate::next::Next::new(ahead);
    }

    /// The program's auxiliary vector (`/proc/self/auxv`).
    pub(crate) fn set_auxv(&mut self, auxv: Vec<u64>) {
        self.program.auxv = Mutex::new(auxv);
    }

    /// The program's file (`Program::file`).
    pub(crate) fn set_program_file(&mut self, file: std::os::fd::OwnedFd) {
        self.program.file = Mutex::new(Some(file));
    }

    /// Rewrites syscall sites of executable file mappings made by the program from now on.
    pub fn set_thunks(&mut self, thunks: crate::rewrite::Thunks) {
        self.program.thunks = Mutex::new(Some(thunks));
    }

    /// Sets the LWK partition. With `pin`, vCPU k runs on `cpus[k % len]` (see
    /// [`Kernel::home_cpu`]); an empty list keeps the VMM's own affinity.
    pub fn set_cpus(&mut self, cpus: Vec<usize>, pin: bool) {
        if !cpus.is_empty() {
            self.cpus = cpus;
        }
        self.pin = pin;
    }

    /// Syscall sites rewritten in code mapped at run time.
    pub fn rewritten_at_run_time(&self) -> usize {
        self.program.rewritten.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Registers vCPU `id`, created by vCPU `parent`, as a new thread (it inherits the parent's
    /// signal mask) and returns its tid.
    pub fn add_thread(&self, id: usize, parent: usize, clear_child_tid: Option<u64>) -> i32 {
        let made = self
            .threads_made
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel)
            + 1;
        let tid = self.pid().wrapping_add(made);
        let mut t = lock(&self.threads);
        let mask = t.get(parent).map_or(0, |p| p.sig.mask);
        let attrs = t.get(parent).map(|p| p.attrs.inherited()).unwrap_or_default();
        if t.len() <= id {
            t.resize(id + 1, ThreadInfo::default());
        }
        t[id] = ThreadInfo {
            tid,
            clear_child_tid,
            alive: true,
            host_tid: 0,
            affinity: None,
            // A new thread starts without an alternate stack (Linux clears it for CLONE_VM
            // clones) and nothing pending.
            sig: crate::signal::ThreadSignals {
                mask,
                ..Default::default()
            },
            attrs,
        };
        self.live_threads
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        tid
    }

    /// The guest's pid.
    pub fn pid(&self) -> i32 {
        self.pid.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// In a forked child: the guest is now process `pid` with one thread, vCPU 0 — a copy of
    /// thread `from`, which called fork — run by the calling host thread (its clear-child-tid
    /// address as clone asked).
    pub fn become_child(&self, pid: i32, clear_child_tid: Option<u64>, from: usize) {
        self.pid.store(pid, std::sync::atomic::Ordering::Relaxed);
        let mut threads = lock(&self.threads);
        let mask = threads.get(from).map_or(0, |t| t.sig.mask);
        // fork keeps the calling thread's alternate stack (the child's copy of memory has it).
        let altstack = threads.get(from).and_then(|t| t.sig.altstack);
        let attrs = threads.get(from).map(|t| t.attrs.inherited()).unwrap_or_default();
        threads.clear();
        threads.push(ThreadInfo {
            tid: pid,
            clear_child_tid,
            alive: true,
            host_tid: crate::sys::gettid(),
            affinity: None,
            sig: crate::signal::ThreadSignals {
                mask,
                altstack,
                ..Default::default()
            },
            attrs,
        });
        self.live_threads.store(1, std::sync::atomic::Ordering::Release);
        self.guest_cpu.forked();
        self.threads_made.store(0, std::sync::atomic::Ordering::Release);
        lock(&self.signals.pending).clear();
        drop(threads);
        // The child's signalfds report the child's signals (`signal/sfd.rs`).
        self.signalfds_forked();
    }

    /// The stack pointer of vCPU `cpu`'s thread at its current system call (its stub saved it in
    /// the slot).
    pub(crate) fn caller_rsp(&self, cpu: usize) -> u64 {
        self.mem
            .read_u64(crate::stub::slot_addr(cpu as u64) + multios_lwk_abi::offset::RSP as u64)
    }

    /// The tid of vCPU `cpu`'s thread.
    pub fn tid(&self, cpu: usize) -> i32 {
        lock(&self.threads).get(cpu).map_or(self.pid(), |t| t.tid)
    }

    /// True when `tid` is one of this process's threads.
    pub fn is_own_tid(&self, tid: i32) -> bool {
        lock(&self.threads).iter().any(|t| t.alive && t.tid == tid)
    }

    /// The exit status, once the process is gone.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        *lock(&self.exit)
    }

    pub fn stats(&self) -> Stats {
        lock(&self.stats).clone()
    }

    pub fn notes(&self) -> Vec<String> {
        lock(&self.notes).clone()
    }

    /// Reports `msg`: on stderr (unless quiet) and in the run's notes.
    pub(crate) fn note(&self, msg: String) {
        if !self.quiet {
            crate::diag!("multios lwk: {msg}");
        }
        lock(&self.notes).push(msg);
    }

    /// Ends the guest with SIGSEGV, as Linux does when it cannot go on; `why` is reported.
    pub(crate) fn end_with_sigsegv(&self, why: String) {
        self.note(format!("{why}; the process ends with SIGSEGV, as on Linux"));
        lock(&self.exit).get_or_insert(ExitStatus::Signal(libc::SIGSEGV));
    }
}
