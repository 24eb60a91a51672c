//! The running machine: the VM, its vCPU threads (one per guest thread), the proxy, and how they
//! stop together. A guest clone() of a thread becomes a new vCPU with the parent's registers.

use crate::config::{Backend, Config};
use crate::kernel::{CloneReq, Ctx, ExitStatus, Kernel, Reply};
use crate::loader::Symbols;
use crate::memory::{sys_page, GuestMemory, DOORBELL_BASE};
use crate::outcome::{Fault, LwkError, Outcome};
use crate::proxy::{self, Proxy};
use crate::slot;
use crate::stub;
use crate::vcpu::{self, Entry};
use crate::vm::{Vm, VmError};
use kvm_bindings::CpuId;
use kvm_ioctls::{VcpuExit, VcpuFd};
use multios_lwk_abi::state;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

mod claimed;
mod fork;

/// Why a vCPU loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// exit_group, a fatal signal, or the last thread's exit.
    Process,
    /// This thread called exit.
    Thread,
    /// Another vCPU ended the process.
    Kicked,
    /// This thread forked and is now the child's vCPU 0 (its loop goes on).
    Forked,
}

struct VcpuThread {
    id: u64,
    pthread: libc::pthread_t,
    done: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

/// How long a deliverable signal whose default action ends the guest may wait for delivery
/// before the signal pump ends the VMM by it (a safety net: kicks deliver it in milliseconds).
const FATAL_GRACE: Duration = Duration::from_secs(10);

/// The signal pump: its eventfd and thread.
type SignalPump = (i32, JoinHandle<()>);

/// Everything the vCPU threads share.
pub struct Machine {
    /// Replaced in a forked child (a KVM VM belongs to the process that created it).
    vm: Mutex<Vm>,
    mem: Arc<GuestMemory>,
    kernel: Arc<Kernel>,
    cpuid: CpuId,
    budget: u32,
    symbols: Arc<Symbols>,
    next_id: AtomicU64,
    /// vCPUs of threads that exited, ready for new threads (KVM cannot destroy a vCPU; reusing
    /// them means `MAX_VCPUS` bounds the threads alive at once, not those created over a life).
    spare: Mutex<Vec<(u64, VcpuFd)>>,
    exiting: AtomicBool,
    threads: Mutex<Vec<VcpuThread>>,
    error: Mutex<Option<LwkError>>,
    doorbells: AtomicU64,
    /// How vCPU threads wait for calls the proxy claimed after their doorbell (`claimed.rs`).
    claimed: claimed::Claimed,
    /// Number of vCPU slots the proxy polls.
    nslots: Arc<AtomicUsize>,
    /// Unparks the proxy after a doorbell.
    waker: Mutex<Option<proxy::Waker>>,
    /// The proxy's CPU and idle spin (None: exit backend), to start one in a forked child.
    proxy_cfg: Option<(Option<usize>, crate::proxy::Idle)>,
    /// A forked child's own proxy and signal pump (the parent's threads do not exist there).
    child_threads: Mutex<(Option<Proxy>, Option<SignalPump>)>,
    /// True in a forked child: it exits when its guest does, without returning.
    forked: AtomicBool,
    /// The host thread running vCPU 0, for kicks (pthread_t: the caller of `drive`, or in a forked
    /// child the thread that forked).
    main_thread: AtomicU64,
    /// Set when vCPU 0's loop has ended (`stop_main_thread` waits for it).
    main_done: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

extern "C" fn on_kick(_: libc::c_int) {}

/// Installs the no-op SIGUSR2 handler used to kick vCPU threads out of KVM_RUN (no SA_RESTART,
/// so blocking calls return EINTR too).
fn install_kick_handler() {
    // The handler does nothing, so it is async-signal-safe.
    crate::sys::set_plain_handler(libc::SIGUSR2, on_kick);
}

fn kick(t: libc::pthread_t) {
    // SAFETY: `t` is a vCPU thread of this machine that has not been joined yet (the registry
    // entry is removed only after join), so the pthread_t is valid.
    unsafe { libc::pthread_kill(t, libc::SIGUSR2) };
}

/// Creates vCPU 0 at `entry` in `vm` (a new VM over `mem` when None) and runs until the guest
/// process exits.
pub fn drive(
    cfg: &Config,
    mem: Arc<GuestMemory>,
    kernel: Arc<Kernel>,
    entry: Entry,
    symbols: Symbols,
    mut phases: crate::costs::Phases,
    vm: Option<Vm>,
) -> Result<Outcome, LwkError> {
    let t0 = phases.t0();
    install_kick_handler();
    crate::signal::host::catch_sent_faults();
    // Before any VMM thread starts: they inherit the mask, and only the signal pump takes the
    // guest's signals (in the order the host sends them).
    let old_mask = crate::signal::host::block_in_this_thread();
    kernel.adopt_host_dispositions();
    let mut vm = match vm {
        Some(vm) => vm,
        None => Vm::new(&mem, crate::fds::floor())?,
    };
    phases.mark("VM and memslots");
    let vm_steps = vm.steps.clone();
    stub::write_tables(&mem);
    let cpuid = match vm.cpuid.take() {
        Some(c) => c,
        None => vm
            .kvm
            .get_supported_cpuid(kvm_bindings::KVM_MAX_CPUID_ENTRIES)
            .map_err(|source| VmError::Kvm {
                what: "KVM_GET_SUPPORTED_CPUID",
                source,
            })?,
    };
    let budget = if cfg.backend == Backend::Exit {
        1
    } else {
        cfg.spin_budget.max(1)
    };
    mem.shadow.set_vm(std::os::fd::AsRawFd::as_raw_fd(&vm.vm));
    let mut vcpu = vcpu::create(&vm.vm, &mem, &cpuid, 0, entry, budget, crate::fds::floor())?;
    kernel.faults.watch(&vcpu);
    phases.mark("vCPU 0");
    let m = Arc::new(Machine {
        vm: Mutex::new(vm),
        mem,
        kernel: kernel.clone(),
        cpuid,
        budget,
        symbols: Arc::new(symbols),
        next_id: AtomicU64::new(1),
        spare: Mutex::new(Vec::new()),
        exiting: AtomicBool::new(false),
        threads: Mutex::new(Vec::new()),
        error: Mutex::new(None),
        doorbells: AtomicU64::new(0),
        claimed: claimed::Claimed::from_env(),
        nslots: Arc::new(AtomicUsize::new(1)),
        waker: Mutex::new(None),
        proxy_cfg: match cfg.backend {
            Backend::Ring { proxy_cpu } => Some((proxy_cpu, cfg.proxy_idle())),
            Backend::Exit => None,
        },
        child_threads: Mutex::new((None, None)),
        forked: AtomicBool::new(false),
        main_thread: AtomicU64::new(crate::sys::pthread_self()),
        main_done: AtomicBool::new(false),
    });
    let pump = m.start_signal_pump();
    if pump.is_none() {
        // No pump to take the guest's signals: the VMM's threads take them as before.
        crate::signal::host::restore_mask(&old_mask);
    }
    let saved_affinity = crate::sys::affinity();
    let proxy = match cfg.backend {
        Backend::Ring { proxy_cpu } => Some(Proxy::start(
            kernel.clone(),
            m.nslots.clone(),
            proxy_cpu,
            cfg.proxy_idle(),
            m.budget,
        )),
        Backend::Exit => None,
    };
    kernel.vcpu_started(0);
    *lock(&m.waker) = proxy.as_ref().and_then(Proxy::waker);
    phases.mark("proxy and signal threads");
    let startup = t0.elapsed();
    let host_faults_startup = crate::costs::host_faults();
    let sched0 = crate::cputime::Sched::this_thread();
    kernel.guest_cpu.thread_started();
    let end = m.vcpu_loop(0, &mut vcpu);
    kernel.guest_cpu.thread_ended();
    kernel.kvm.add_vcpu(std::os::fd::AsRawFd::as_raw_fd(&vcpu));
    kernel
        .cputime
        .add_vcpu(crate::cputime::Sched::this_thread().since(sched0));
    m.main_done.store(true, Ordering::Release);
    m.main_loop_ended(end);
    // The guest has ended: what follows is the VMM's teardown (`costs.teardown`).
    let ended = Instant::now();
    m.stop_all();
    // Locks the threads still held die with them (Linux's exit_robust_list at each one's exit).
    kernel.exit_robust_lists();
    let vcpus_stopped = ended.elapsed();
    // The proxy and the signal pump are told to stop together, then joined: each may have to
    // wait for a CPU to wake up on (the proxy is pinned), and those waits overlap.
    if let Some(p) = &proxy {
        p.ask_to_stop();
    }
    if let Some((fd, h)) = pump {
        crate::signal::host::poke(fd);
        let _ = h.join();
    }
    drop(proxy);
    if let Some(a) = &saved_affinity {
        crate::sys::set_affinity(a);
    }
    crate::signal::host::restore_mask(&old_mask);
    let stopped = ended.elapsed();
    if let Some(e) = lock(&m.error).take() {
        return Err(e);
    }
    kernel
        .kvm
        .add_vm(std::os::fd::AsRawFd::as_raw_fd(&lock(&m.vm).vm));
    let (flushes, flush_time) = m.mem.shadow.flushes();
    let (invalidations, invalidate_time) = m.mem.shadow.invalidations();
    let (window_memslots, window_memslot_s) = m.mem.slots.made_so_far();
    let areas = if cfg.count_resident {
        let list = {
            let mm = lock(&kernel.space.mm);
            let vmas = lock(&kernel.space.vmas);
            vmas.areas(&mm)
        };
        crate::residency::areas(list)
    } else {
        Vec::new()
    };
    let (doorbell_waits, doorbell_wait_sleeps) = m.claimed.counts();
    let costs = crate::costs::Costs {
        phases: phases.seconds(),
        vm_thread: crate::costs::seconds(&vm_steps),
        window_memslots,
        window_memslot_s,
        teardown: vec![
            ("stop the other vCPU threads".into(), vcpus_stopped.as_secs_f64()),
            (
                "stop the proxy and the signal pump".into(),
                (stopped - vcpus_stopped).as_secs_f64(),
            ),
            (
                "read KVM's statistics and count the resident pages".into(),
                (ended.elapsed() - stopped).as_secs_f64(),
            ),
        ],
        flushes,
        flush_s: flush_time.as_secs_f64(),
        invalidations,
        invalidate_s: invalidate_time.as_secs_f64(),
        reloads: m.mem.shadow.reloads(),
        aside: kernel.aside.counts().0,
        aside_late: kernel.aside.counts().1,
        fault_parks: kernel.faults.parks(),
        doorbell_waits,
        doorbell_wait_sleeps,
        host_faults_startup,
        host_faults: crate::costs::host_faults(),
        kvm: kernel.kvm.snapshot(),
        doorbell_calls: kernel.doorbell_calls.named(),
        threads: kernel.cputime.snapshot(),
        populate: kernel.populated(),
        areas,
    };
    let status = kernel.exit_status().unwrap_or(ExitStatus::Code(0));
    let mut outcome = Outcome {
        status,
        stats: kernel.stats(),
        wall: t0.elapsed(),
        startup,
        doorbells: m.doorbells.load(Ordering::Relaxed),
        notes: kernel.notes(),
        rewritten: kernel.rewritten_at_run_time(),
        costs,
    };
    // The last references to the vCPUs and the VM: KVM frees its shadow pages and memslots.
    let t = Instant::now();
    drop(vcpu);
    drop(m);
    outcome
        .costs
        .teardown
        .push(("close the VM and its vCPUs".into(), t.elapsed().as_secs_f64()));
    Ok(outcome)
}

impl Machine {
    /// After vCPU 0's loop: the process lives until its last thread is gone; a forked child then
    /// exits here (never returning: the parent's proxy and pump do not exist in it).
    fn main_loop_ended(&self, end: End) {
        if end == End::Thread {
            self.wait_threads(None);
        }
        if self.forked.load(Ordering::Acquire) {
            self.exit_forked_child();
        }
    }

    /// True on the host thread running vCPU 0.
    fn on_main_thread(&self) -> bool {
        self.main_thread.load(Ordering::Acquire) == crate::sys::pthread_self()
    }

    /// Runs vCPU `id` until its thread or the process ends.
    fn vcpu_loop(self: &Arc<Self>, mut id: u64, vcpu: &mut VcpuFd) -> End {
        let mut io_exit = false;
        loop {
            if self.exiting.load(Ordering::Acquire) {
                return End::Kicked;
            }
            self.mem.shadow.enter(id as usize, vcpu, io_exit);
            let exit = run_once(vcpu);
            self.mem.shadow.leave(id as usize);
            io_exit = matches!(exit, Ok(Exit::Doorbell(_)));
            match exit {
                Ok(Exit::Doorbell(addr)) => {
                    if addr != stub::doorbell_addr(id) {
                        return self.fail(LwkError::Stopped {
                            what: format!("vCPU {id} rang another vCPU's doorbell {addr:#x}"),
                            rip: 0,
                            symbol: None,
                        });
                    }
                    self.doorbells.fetch_add(1, Ordering::Relaxed);
                    if let Some(w) = lock(&self.waker).as_ref() {
                        w.wake();
                    }
                    match self.serve_doorbell(id, vcpu) {
                        None => {}
                        Some(End::Process) => {
                            self.exiting.store(true, Ordering::Release);
                            return End::Process;
                        }
                        Some(End::Forked) => id = 0,
                        Some(e) => return e,
                    }
                }
                Ok(Exit::Fault) => {
                    if crate::signal::deliver::retry_stale_fault(&self.kernel, id, vcpu) {
                        continue;
                    }
                    if !crate::signal::deliver::on_fault(&self.kernel, id, vcpu) {
                        return self.fatal_fault(id, vcpu);
                    }
                }
                Ok(Exit::Other(what)) => {
                    let rip = vcpu.get_regs().map(|r| r.rip).unwrap_or(0);
                    return self.fail(LwkError::Stopped {
                        what,
                        rip,
                        symbol: self.symbol(rip),
                    });
                }
                Err(e) if e.errno() == libc::EINTR || e.errno() == libc::EAGAIN => {
                    if crate::signal::deliver::on_kick(&self.kernel, id, vcpu) {
                        self.exiting.store(true, Ordering::Release);
                        return End::Process;
                    }
                }
                Err(e) if e.errno() == libc::EFAULT => {
                    use crate::signal::deliver::HostFault;
                    match crate::signal::deliver::on_host_fault(&self.kernel, id, vcpu) {
                        HostFault::Handled => {}
                        HostFault::Fatal(addr) => {
                            self.kernel.note(format!(
                                "guest fault: no file behind {addr:#x} (past the end of a mapped file): \
                                 killed by signal {}, as on Linux",
                                libc::SIGBUS
                            ));
                            lock(&self.kernel.exit).get_or_insert(ExitStatus::Signal(libc::SIGBUS));
                            self.exiting.store(true, Ordering::Release);
                            if id != 0 {
                                self.stop_main_thread();
                            }
                            return End::Process;
                        }
                        HostFault::Unknown => return self.fail(LwkError::Run(e)),
                    }
                }
                Err(e) => return self.fail(LwkError::Run(e)),
            }
        }
    }

    /// The symbol at `rip` in the first program's tables (none once the guest has exec'd).
    fn symbol(&self, rip: u64) -> Option<String> {
        (self.kernel.execs() == 0)
            .then(|| self.symbols.lookup(rip))
            .flatten()
    }

    fn fail(&self, e: LwkError) -> End {
        lock(&self.error).get_or_insert(e);
        self.exiting.store(true, Ordering::Release);
        End::Process
    }

    /// Serves vCPU `id`'s slot after a doorbell exit; Some when the loop must end.
    fn serve_doorbell(self: &Arc<Self>, id: u64, vcpu: &mut VcpuFd) -> Option<End> {
        let slot = stub::slot_addr(id);
        let st = slot::state_of(&self.kernel.mem, slot);
        let (mut since, mut sleeps) = (None, 0u32);
        loop {
            match st.load(Ordering::Acquire) {
                state::REQUEST => {
                    if !slot::claim(st) {
                        continue;
                    }
                }
                state::EXIT => st.store(state::CLAIMED, Ordering::Release),
                state::SIGNAL => {
                    // The proxy served the call; a signal handler runs before it returns.
                    let ret = self
                        .kernel
                        .mem
                        .read_u64(slot + multios_lwk_abi::offset::RET as u64)
                        as i64;
                    st.store(state::CLAIMED, Ordering::Release);
                    return crate::signal::deliver::complete_call(&self.kernel, id, vcpu, ret)
                        .then_some(End::Process);
                }
                state::CLAIMED => {
                    // The proxy is serving it: spin a while, then sleep (`claimed.rs`).
                    if self.exiting.load(Ordering::Acquire) {
                        return Some(End::Kicked);
                    }
                    let (t, yields) = *since.get_or_insert_with(|| {
                        let (nr, a) = slot::request(&self.kernel.mem, slot);
                        (self.claimed.begin(), crate::syscall::may_wait_for_another(nr, &a))
                    });
                    self.claimed.step(t, yields, &mut sleeps);
                    continue;
                }
                _ => return None,
            }
            let (nr, a) = slot::request(&self.kernel.mem, slot);
            self.kernel.doorbell_calls.add(nr);
            if [libc::SYS_rt_sigreturn, libc::SYS_execve, libc::SYS_execveat].contains(&(nr as i64)) {
                // These set the vCPU's registers: complete the doorbell's MMIO exit first.
                crate::signal::deliver::settle(vcpu);
            }
            let reply = self.kernel.serve(Ctx::Vcpu(vcpu), id as usize, nr, a);
            if self.exiting.load(Ordering::Acquire) && reply != Reply::Stop {
                return Some(End::Kicked);
            }
            return match reply {
                Reply::Ret(r) if self.kernel.deliverable(id as usize) || crate::signal::is_restart(r) => {
                    crate::signal::deliver::complete_call(&self.kernel, id, vcpu, r).then_some(End::Process)
                }
                Reply::Ret(r) => {
                    slot::reply(&self.kernel.mem, slot, r);
                    None
                }
                Reply::Resumed => {
                    st.store(state::IDLE, Ordering::Release);
                    crate::signal::deliver::after_sigreturn(&self.kernel, id, vcpu).then_some(End::Process)
                }
                Reply::NeedVcpu => {
                    slot::reply(&self.kernel.mem, slot, crate::syscall::ENOSYS);
                    None
                }
                Reply::Clone(req) => {
                    let t0 = Instant::now();
                    let r = self.spawn(id, vcpu, req);
                    self.kernel
                        .record_clone(id as usize, nr, t0.elapsed().as_nanos() as u64, r);
                    slot::reply(&self.kernel.mem, slot, r);
                    None
                }
                Reply::Fork(req) => self.fork_process(id, vcpu, req),
                Reply::ThreadExit => Some(End::Thread),
                Reply::Stop => Some(End::Process),
            };
        }
    }

    /// A vCPU for a new thread: one an exited thread left (`spare`), else a new id (None when
    /// `MAX_VCPUS` threads are alive).
    fn vcpu_for_thread(&self) -> Option<(u64, Option<VcpuFd>)> {
        self.reap_threads();
        if let Some((id, v)) = lock(&self.spare).pop() {
            return Some((id, Some(v)));
        }
        let id = self
            .next_id
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < sys_page::MAX_VCPUS).then_some(n + 1)
            })
            .ok()?;
        Some((id, None))
    }

    /// Joins the host threads of guest threads that have exited (their entries would otherwise
    /// pile up in a program that creates thousands of threads over its life).
    fn reap_threads(&self) {
        let done: Vec<_> = {
            let mut threads = lock(&self.threads);
            let (done, live) = std::mem::take(&mut *threads)
                .into_iter()
                .partition(|t| t.done.load(Ordering::Acquire));
            *threads = live;
            done
        };
        for mut t in done {
            if let Some(h) = t.handle.take() {
                let _ = h.join();
            }
        }
    }

    /// Creates a vCPU for a new guest thread; returns its tid or a negative errno.
    fn spawn(self: &Arc<Self>, parent_id: u64, parent: &VcpuFd, req: CloneReq) -> i64 {
        let (Ok(regs), Ok(sregs), Ok(xsave)) = (parent.get_regs(), parent.get_sregs(), parent.get_xsave())
        else {
            return -(libc::EIO as i64);
        };
        let Some((id, spare)) = self.vcpu_for_thread() else {
            return -(libc::EAGAIN as i64);
        };
        // The child continues after the parent's syscall with the parent's registers, rax = 0,
        // on its own stack.
        let regs = slot::returned(&self.kernel.mem, stub::slot_addr(parent_id), regs, 0, req.stack);
        let fs_base = req.tls.unwrap_or(sregs.fs.base);
        let entry = Entry {
            rip: regs.rip,
            rsp: regs.rsp,
            fs_base,
            rax: 0,
            regs: Some(regs),
        };
        let made = match spare {
            Some(v) => vcpu::reuse(&v, &self.mem, id, entry, self.budget).map(|()| v),
            None => vcpu::create(
                &lock(&self.vm).vm,
                &self.mem,
                &self.cpuid,
                id,
                entry,
                self.budget,
                crate::fds::floor(),
            ),
        };
        let mut vcpu = match made {
            Ok(v) => v,
            Err(e) => {
                lock(&self.kernel.notes).push(format!("creating a vCPU for a new thread: {e}"));
                return -(libc::EAGAIN as i64);
            }
        };
        // Linux copies the parent's FPU state at clone: a thread made after fesetround or with
        // flush-to-zero set computes as its creator does (it started with the fresh x87 and MXCSR
        // defaults: another rounding, no FTZ; `issue_16_new_threads_inherit_the_floating_point_state`).
        if let Err(e) = crate::sys::kvm::set_xsave(&vcpu, &xsave) {
            lock(&self.kernel.notes).push(format!(
                "a new thread's FPU state (KVM_SET_XSAVE: {e}): it starts with the defaults"
            ));
        }
        let tid = self
            .kernel
            .add_thread(id as usize, parent_id as usize, req.clear_child_tid);
        // Linux's put_user, its failure ignored: not into a page the guest may not write.
        if let Some(p) = req.parent_tid {
            let _ = self.mem.write_user_u32(p, tid as u32);
        }
        if let Some(p) = req.child_tid {
            let _ = self.mem.write_user_u32(p, tid as u32);
        }
        self.nslots.fetch_max(id as usize + 1, Ordering::AcqRel);
        let m = self.clone();
        let done = Arc::new(AtomicBool::new(false));
        let d = done.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = std::thread::Builder::new()
            .name(format!("lwk-vcpu{id}"))
            .spawn(move || {
                m.kernel.vcpu_started(id as usize);
                m.kernel.guest_cpu.thread_started();
                // Read before the creator goes on: the read's descriptor is a temporary in the
                // guest's range, where a guest thread's fcntl or fstat would see it.
                let sched0 = crate::cputime::Sched::this_thread();
                let _ = tx.send(crate::sys::pthread_self() as libc::pthread_t);
                let end = m.vcpu_loop(id, &mut vcpu);
                m.kernel.guest_cpu.thread_ended();
                m.kernel.kvm.add_vcpu(std::os::fd::AsRawFd::as_raw_fd(&vcpu));
                m.kernel
                    .cputime
                    .add_vcpu(crate::cputime::Sched::this_thread().since(sched0));
                if m.on_main_thread() {
                    m.main_done.store(true, Ordering::Release);
                    // This thread forked: it is the child's vCPU 0 and the child ends here.
                    m.main_loop_ended(end);
                }
                if end == End::Process {
                    m.exiting.store(true, Ordering::Release);
                    m.kick_all();
                    if !m.on_main_thread() {
                        // vCPU 0's thread may wait in a blocking call (the main thread joining
                        // this one): kick it until it has stopped (issue #14: an abort() on a
                        // second thread left the run waiting forever).
                        m.stop_main_thread();
                    }
                }
                d.store(true, Ordering::Release);
                if end == End::Thread && !m.exiting.load(Ordering::Acquire) && !m.on_main_thread() {
                    // The thread exited: its vCPU (its last doorbell exit completed) waits for
                    // the next new thread.
                    crate::signal::deliver::settle(&mut vcpu);
                    lock(&m.spare).push((id, vcpu));
                }
            });
        match (handle, rx.recv()) {
            (Ok(h), Ok(pthread)) => {
                lock(&self.threads).push(VcpuThread {
                    id,
                    pthread,
                    done,
                    handle: Some(h),
                });
                tid as i64
            }
            _ => -(libc::EAGAIN as i64),
        }
    }

    /// Kicks vCPU `id`'s thread out of KVM_RUN, and the host thread performing its delegated
    /// call (the proxy or its own thread) out of that call.
    fn kick_vcpu(&self, id: u64) {
        if let Some(t) = self.kernel.serving_thread(id as usize) {
            if !self.exiting.load(Ordering::Acquire) {
                kick(t as libc::pthread_t);
            }
        }
        if id == 0 {
            if !self.exiting.load(Ordering::Acquire) {
                kick(self.main_thread.load(Ordering::Acquire) as libc::pthread_t);
            }
            return;
        }
        if let Some(t) = lock(&self.threads)
            .iter()
            .find(|t| t.id == id && !t.done.load(Ordering::Acquire))
        {
            kick(t.pthread);
        }
    }

    /// Starts the thread that turns signals caught for the guest (`signal::host`) into pending guest
    /// signals and kicks a vCPU that can take them until one has (every 1 ms for 10 ms, then
    /// every 10 ms: a vCPU in a long delegated call takes it on the way back).
    fn start_signal_pump(self: &Arc<Self>) -> Option<SignalPump> {
        let fd = match crate::signal::host::open_event(crate::fds::floor()) {
            Ok(fd) => fd,
            Err(e) => {
                lock(&self.kernel.notes).push(format!(
                    "no signal pump (eventfd: {e}): signals sent to the VMM do not reach guest handlers"
                ));
                return None;
            }
        };
        let m = self.clone();
        let h = std::thread::Builder::new()
            .name("lwk-signals".into())
            .spawn(move || {
                m.kernel.signals.pump_tid.store(crate::sys::gettid(), Ordering::Release);
                if let Err(e) = crate::signal::host::open_signalfd(crate::fds::floor()) {
                    // Taken by the catcher in this thread instead.
                    lock(&m.kernel.notes).push(format!("no signalfd for the guest's signals: {e}"));
                    crate::signal::host::unblock_in_this_thread();
                }
                while crate::signal::host::wait_event(fd) && !m.exiting.load(Ordering::Acquire) {
                    let round = m.kernel.signals.pump_begun.fetch_add(1, Ordering::AcqRel) + 1;
                    for (sig, words) in crate::signal::host::take() {
                        let info = crate::signal::SigInfo::from_host(&words);
                        // A timer that signals one thread (SIGEV_THREAD_ID) signals this one;
                        // the guest's thread is in the timer table.
                        let thread = m.kernel.timer_thread(&info);
                        m.kernel.queue_signal(thread, sig, info);
                    }
                    m.kernel.signals.pump_done.store(round, Ordering::Release);
                    let mut kicks = 0u32;
                    let since = Instant::now();
                    while let Some(id) = m.kernel.signal_target() {
                        if m.exiting.load(Ordering::Acquire) {
                            break;
                        }
                        m.kick_vcpu(id as u64);
                        kicks += 1;
                        std::thread::sleep(Duration::from_millis(if kicks < 10 { 1 } else { 10 }));
                        if since.elapsed() > FATAL_GRACE {
                            if let Some(sig) = m.kernel.fatal_pending() {
                                // The guest should have died of it long ago: whatever holds it
                                // up, the VMM dies of it now, as it would have without the LWK.
                                crate::diag!(
                                    "multios lwk: signal {sig} not delivered within {FATAL_GRACE:?}; ending the run by it"
                                );
                                crate::reserve::release();
                                crate::sys::die_by_signal(sig);
                            }
                        }
                    }
                }
            })
            .ok()?;
        Some((fd, h))
    }

    fn kick_all(&self) {
        for t in lock(&self.threads)
            .iter()
            .filter(|t| !t.done.load(Ordering::Acquire))
        {
            kick(t.pthread);
        }
    }

    /// Waits until every vCPU thread has finished (or `limit` passes), joining them.
    fn wait_threads(&self, limit: Option<Duration>) {
        let t0 = Instant::now();
        loop {
            let all_done = lock(&self.threads).iter().all(|t| t.done.load(Ordering::Acquire));
            if all_done
                || limit.is_some_and(|l| t0.elapsed() > l)
                || self.exiting.load(Ordering::Acquire) && limit.is_none()
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Ends every vCPU thread and joins them.
    fn stop_all(&self) {
        self.exiting.store(true, Ordering::Release);
        let t0 = Instant::now();
        while lock(&self.threads)
            .iter()
            .any(|t| !t.done.load(Ordering::Acquire))
            && t0.elapsed() < Duration::from_secs(5)
        {
            self.kick_all();
            std::thread::sleep(Duration::from_millis(1));
        }
        let handles: Vec<_> = lock(&self.threads)
            .iter_mut()
            .filter_map(|t| t.handle.take())
            .collect();
        for h in handles {
            let _ = h.join();
        }
    }

    /// A CPU exception no guest handler takes. From user mode it kills the process with the
    /// signal Linux raises for it (SIGSEGV for a page fault: status 139 with the core flag when
    /// the front end dies of it), the fault reported on stderr; from the LWK's own code it is an
    /// LWK error.
    fn fatal_fault(&self, id: u64, vcpu: &VcpuFd) -> End {
        let (Ok(regs), Ok(sregs)) = (vcpu.get_regs(), vcpu.get_sregs()) else {
            return self.fail(self.fault(vcpu));
        };
        let f = stub::ExceptionFrame::read(&self.mem, regs.rsp);
        let sig = crate::signal::deliver::signal_of(f.vector, f.error, f.rip, sregs.cr2, |_| 0);
        match sig {
            Some((sig, _, _)) if f.from_user() => {
                let report = self.fault(vcpu);
                // Not present in the tables but mapped: a PROT_NONE page (a guard).
                let prot_none = f.vector == 14 && f.error & 1 == 0 && self.kernel.is_mapped(sregs.cr2);
                let guard = if prot_none {
                    " (the page is mapped PROT_NONE: a guard page?)"
                } else {
                    ""
                };
                self.kernel
                    .note(format!("{report}{guard}: killed by signal {sig}, as on Linux"));
                lock(&self.kernel.exit).get_or_insert(ExitStatus::Signal(sig as i32));
                self.exiting.store(true, Ordering::Release);
                if id != 0 {
                    self.stop_main_thread();
                }
                End::Process
            }
            _ => self.fail(self.fault(vcpu)),
        }
    }

    /// Another thread ended the process: kicks vCPU 0's thread (and the host threads serving
    /// calls) until its loop has ended — it may be entering a blocking call (pthread_join), where
    /// one kick can land just before the call and be lost; kicked in the call, it sees the exit
    /// status and stops.
    fn stop_main_thread(&self) {
        let t0 = Instant::now();
        while !self.main_done.load(Ordering::Acquire) && t0.elapsed() < Duration::from_secs(5) {
            kick(self.main_thread.load(Ordering::Acquire) as libc::pthread_t);
            for k in 0..self.next_id.load(Ordering::Acquire) as usize {
                if let Some(t) = self.kernel.serving_thread(k) {
                    kick(t as libc::pthread_t);
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn fault(&self, vcpu: &VcpuFd) -> LwkError {
        let (regs, sregs) = match (vcpu.get_regs(), vcpu.get_sregs()) {
            (Ok(r), Ok(s)) => (r, s),
            (Err(e), _) | (_, Err(e)) => return LwkError::Run(e),
        };
        let f = stub::ExceptionFrame::read(&self.mem, regs.rsp);
        LwkError::GuestFault(Fault {
            vector: f.vector,
            error_code: f.error,
            rip: f.rip,
            rsp: f.rsp,
            addr: sregs.cr2,
            symbol: self.symbol(f.rip),
        })
    }
}

/// A vCPU exit.
enum Exit {
    Doorbell(u64),
    Fault,
    Other(String),
}

/// One KVM_RUN, reduced to what the loop needs (so the borrow of kvm_run ends here).
fn run_once(fd: &mut VcpuFd) -> Result<Exit, kvm_ioctls::Error> {
    Ok(match fd.run()? {
        VcpuExit::MmioWrite(addr, _) if (DOORBELL_BASE..DOORBELL_BASE + 0x20_0000).contains(&addr) => {
            Exit::Doorbell(addr)
        }
        VcpuExit::Hlt => Exit::Fault,
        VcpuExit::Intr => return Err(kvm_ioctls::Error::new(libc::EINTR)),
        VcpuExit::Shutdown => Exit::Other("triple fault (shutdown)".into()),
        VcpuExit::MmioWrite(a, _) | VcpuExit::MmioRead(a, _) => {
            Exit::Other(format!("access to unmapped memory {a:#x}"))
        }
        o => Exit::Other(format!("unexpected exit {o:?}")),
    })
}
