//! One resident vCPU and its Linux thread: the thread creates the vCPU (so the guest code uses
//! this thread's TLS: errno, malloc's per-thread cache, the stack protector's canary), enters the
//! guest's resident loop, and serves the vCPU's exits — page faults (the merged address space),
//! EFAULTs (mappings that changed under it), doorbells (a sleeping waiter to wake, idleness) and
//! the faults of a function, which end that function and put the vCPU back in its loop.

use crate::mailbox::{reason, status, Mailbox, BELL_OFFSET};
use crate::runtime::Shared;
use crate::space::{Access, Resolution};
use crate::sys;
use kvm_bindings::kvm_regs;
use kvm_ioctls::{VcpuExit, VcpuFd};
use multios_lwk::stub::{doorbell_addr, exception_name, slot_addr, ExceptionFrame};
use multios_lwk::vcpu::{self, Entry};
use multios_lwk_abi::state;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering::*};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The guest stack of each vCPU.
const STACK: usize = 8 << 20;
/// Page-fault vector.
const PF: u64 = 14;
/// Spurious faults in a row at one address before KVM's shadow tables are dropped, and before the
/// fault is taken as the function's.
const SPURIOUS_FLUSH: u32 = 3;
const SPURIOUS_GIVE_UP: u32 = 12;

/// A function's fault, as the vCPU reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(C)]
pub struct Fault {
    /// x86 exception vector (14: page fault, 13: general protection, 6: invalid opcode…; 0x100:
    /// an access the host could not back, a bus error natively).
    pub vector: u64,
    pub error: u64,
    pub rip: u64,
    /// The faulting address (CR2) for page faults.
    pub addr: u64,
    /// 1 when a mapping is there but forbids the access (SEGV_ACCERR), 0 when none is (SEGV_MAPERR).
    pub mapped: u64,
}

/// The vector reported for an access the host could not back (KVM_RUN failed with EFAULT).
pub const VECTOR_BUS: u64 = 0x100;

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = if self.vector == VECTOR_BUS {
            "bus error (the host cannot back this access)"
        } else {
            exception_name(self.vector)
        };
        write!(f, "{what} at rip {:#x}", self.rip)?;
        if self.vector == PF || self.vector == VECTOR_BUS {
            let kind = if self.mapped != 0 { "access not allowed" } else { "no mapping" };
            write!(f, ", address {:#x} ({kind})", self.addr)?;
        }
        Ok(())
    }
}

/// A resident vCPU.
pub struct Cpu {
    pub id: u64,
    pub mb: Box<Mailbox>,
    /// The Linux thread running it (its tid answers the guest's gettid).
    pub tid: AtomicI32,
    pub fault: Mutex<Option<Fault>>,
    pub exited: AtomicBool,
    pub thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl Cpu {
    pub fn new(id: u64, idle_spins: u64) -> Self {
        let mb = Box::<Mailbox>::default();
        mb.idle_spins.store(idle_spins, Relaxed);
        Cpu {
            id,
            mb,
            tid: AtomicI32::new(0),
            fault: Mutex::new(None),
            exited: AtomicBool::new(false),
            thread: Mutex::new(None),
        }
    }

    fn bell(&self) -> u64 {
        doorbell_addr(self.id) + BELL_OFFSET
    }

    /// Wakes a waiter sleeping on this vCPU's bell.
    pub fn ring_waiter(&self) {
        self.mb.bell.fetch_add(1, SeqCst);
        sys::futex_wake(&self.mb.bell);
    }

    /// The registers that enter the resident loop on a fresh stack.
    fn entry_regs(&self, stack_top: u64) -> kvm_regs {
        kvm_regs {
            rip: crate::guest::resident as *const () as u64,
            rsp: stack_top - 8,
            rdi: &*self.mb as *const Mailbox as u64,
            rsi: self.bell(),
            rflags: 0x202,
            ..Default::default()
        }
    }
}

/// Errors starting a vCPU.
#[derive(Debug, thiserror::Error)]
pub enum CpuError {
    #[error("mapping a guest stack: {0}")]
    Stack(std::io::Error),
    #[error(transparent)]
    Vcpu(#[from] vcpu::VcpuError),
    #[error(transparent)]
    Space(#[from] crate::space::SpaceError),
}

/// The body of vCPU `cpu`'s Linux thread. Sends the outcome of the set-up on `ready`.
pub fn thread(rt: Arc<Shared>, cpu: Arc<Cpu>, pin: Option<usize>, ready: std::sync::mpsc::Sender<Result<(), CpuError>>) {
    if let Some(c) = pin {
        sys::pin_to_cpu(c);
    }
    let mut vcpu = match start(&rt, &cpu) {
        Ok(v) => {
            let _ = ready.send(Ok(()));
            v
        }
        Err(e) => {
            let _ = ready.send(Err(e));
            cpu.exited.store(true, Release);
            return;
        }
    };
    run(&rt, &cpu, &mut vcpu);
    cpu.exited.store(true, Release);
}

/// Creates the vCPU in the resident loop, its stack and mailbox already in the guest's tables.
fn start(rt: &Shared, cpu: &Cpu) -> Result<(VcpuFd, u64), CpuError> {
    let base = sys::map_stack(STACK).map_err(CpuError::Stack)?;
    let top = base + STACK as u64;
    {
        let mut space = crate::runtime::lock(&rt.space);
        let w = Access { write: true, exec: false };
        space.on_fault(&rt.vm, top - 8, &w)?;
        space.on_fault(&rt.vm, &*cpu.mb as *const Mailbox as u64, &w)?;
    }
    let entry = Entry {
        fs_base: sys::fs_base(),
        regs: Some(cpu.entry_regs(top)),
        ..Default::default()
    };
    let vcpu = vcpu::create(&rt.vm, &rt.mem, &rt.cpuid, cpu.id, entry, rt.spin_budget, 3)?;
    cpu.tid.store(sys::gettid(), Release);
    Ok((vcpu, top))
}

/// What one KVM_RUN ended with, without borrowing the vCPU.
enum Exit {
    Stub,
    Bell(u32),
    Exception,
    Interrupted,
    MemoryFault(u64),
    Other(String),
}

fn run_once(vcpu: &mut VcpuFd, id: u64) -> Exit {
    let exit = match vcpu.run() {
        Ok(VcpuExit::MmioWrite(addr, data)) if addr == doorbell_addr(id) + BELL_OFFSET => {
            let mut b = [0u8; 4];
            let n = data.len().min(4);
            b[..n].copy_from_slice(&data[..n]);
            Exit::Bell(u32::from_le_bytes(b))
        }
        Ok(VcpuExit::MmioWrite(addr, _)) if addr == doorbell_addr(id) => Exit::Stub,
        Ok(VcpuExit::Hlt) => Exit::Exception,
        Ok(VcpuExit::Intr) => Exit::Interrupted,
        Ok(other) => Exit::Other(format!("{other:?}")),
        Err(e) if e.errno() == libc::EINTR || e.errno() == libc::EAGAIN => Exit::Interrupted,
        Err(e) if e.errno() == libc::EFAULT => Exit::MemoryFault(u64::MAX),
        Err(e) => Exit::Other(format!("KVM_RUN: {e}")),
    };
    if let Exit::MemoryFault(_) = exit {
        let run = vcpu.get_kvm_run();
        if run.exit_reason == kvm_bindings::KVM_EXIT_MEMORY_FAULT {
            // SAFETY: exit_reason says the memory_fault member of the union is the one KVM filled.
            return Exit::MemoryFault(unsafe { run.__bindgen_anon_1.memory_fault.gpa });
        }
    }
    exit
}

fn run(rt: &Shared, cpu: &Cpu, vcpu: &mut (VcpuFd, u64)) {
    let (vcpu, top) = (&mut vcpu.0, vcpu.1);
    let id = cpu.id;
    let mut io_exit = false;
    let mut spurious = (0u64, 0u32);
    let mut efaults = 0u32;
    loop {
        if cpu.mb.stop.load(Acquire) != 0 {
            return;
        }
        rt.mem.shadow.enter(id as usize, vcpu, io_exit);
        let exit = run_once(vcpu, id);
        rt.mem.shadow.leave(id as usize);
        io_exit = matches!(exit, Exit::Stub | Exit::Bell(_));
        match exit {
            Exit::Stub => wait_for_call(rt, cpu),
            Exit::Bell(reason::IDLE) => idle(cpu),
            Exit::Bell(reason::WAKE) => cpu.ring_waiter(),
            Exit::Bell(reason::STOP) => return,
            Exit::Bell(other) => fail(rt, cpu, vcpu, top, bad(format!("unknown doorbell {other}"))),
            Exit::Interrupted => {}
            Exit::Exception => {
                if let Some(f) = exception(rt, vcpu, &mut spurious) {
                    fail(rt, cpu, vcpu, top, f);
                }
            }
            Exit::MemoryFault(gpa) => {
                // Stale tables are rewritten and the access runs again; a second EFAULT in a row
                // with nothing stale is the function's bus error.
                let changed = crate::runtime::lock(&rt.space).on_efault(&rt.vm).unwrap_or(false);
                efaults = if changed { 0 } else { efaults + 1 };
                if efaults >= 2 {
                    efaults = 0;
                    let rip = vcpu.get_regs().map(|r| r.rip).unwrap_or(0);
                    let f = Fault {
                        vector: crate::cpu::VECTOR_BUS,
                        rip,
                        addr: if gpa == u64::MAX { 0 } else { gpa },
                        mapped: 1,
                        ..Default::default()
                    };
                    fail(rt, cpu, vcpu, top, f);
                }
            }
            Exit::Other(what) => fail(rt, cpu, vcpu, top, bad(what)),
        }
    }
}

fn bad(what: String) -> Fault {
    eprintln!("multios-hrt: unexpected vCPU exit: {what}");
    Fault {
        vector: u64::MAX,
        ..Default::default()
    }
}

/// The stub's spin budget ran out with its call still posted: the waiter sleeps or is busy in a
/// long call. Wakes it, then waits until the call is answered (the stub spins again after this).
fn wait_for_call(rt: &Shared, cpu: &Cpu) {
    cpu.ring_waiter();
    let st = multios_lwk::slot::state_of(&rt.mem, slot_addr(cpu.id));
    let mut n = 0u32;
    while matches!(st.load(Acquire), state::REQUEST | state::CLAIMED) && cpu.mb.stop.load(Acquire) == 0 {
        n = n.saturating_add(1);
        if n < 2000 {
            std::hint::spin_loop();
        } else {
            if n.is_multiple_of(64) {
                cpu.ring_waiter();
            }
            std::thread::sleep(Duration::from_micros(20));
        }
    }
}

/// The guest loop has had nothing to do: sleep until a function is posted.
fn idle(cpu: &Cpu) {
    let mb = &cpu.mb;
    loop {
        let done = mb.done.load(SeqCst);
        if mb.seq.load(SeqCst) != done || mb.stop.load(Acquire) != 0 {
            return;
        }
        sys::futex_wait(&mb.seq, done, Some(Duration::from_millis(100)));
    }
}

/// An exception reporter halted: resolves a page fault of the merged space, or returns the fault.
fn exception(rt: &Shared, vcpu: &mut VcpuFd, spurious: &mut (u64, u32)) -> Option<Fault> {
    let (Ok(regs), Ok(sregs)) = (vcpu.get_regs(), vcpu.get_sregs()) else {
        return Some(bad("reading registers after an exception".into()));
    };
    let frame = ExceptionFrame::read(&rt.mem, regs.rsp);
    let mut fault = Fault {
        vector: frame.vector,
        error: frame.error,
        rip: frame.rip,
        addr: if frame.vector == PF { sregs.cr2 } else { 0 },
        mapped: 0,
    };
    if !frame.from_user() || frame.vector != PF {
        return Some(fault);
    }
    let access = Access {
        write: frame.error & 2 != 0,
        exec: frame.error & 16 != 0,
    };
    let res = {
        let mut space = crate::runtime::lock(&rt.space);
        let r = space.on_fault(&rt.vm, sregs.cr2, &access);
        if matches!(r, Ok(Resolution::Spurious)) {
            *spurious = if spurious.0 == sregs.cr2 { (sregs.cr2, spurious.1 + 1) } else { (sregs.cr2, 1) };
            if spurious.1 == SPURIOUS_FLUSH {
                space.flush(&rt.vm);
            }
        } else {
            *spurious = (0, 0);
        }
        if matches!(r, Ok(Resolution::Filled)) {
            space.bump();
        }
        r
    };
    match res {
        Ok(Resolution::Filled) | Ok(Resolution::Spurious) if spurious.1 < SPURIOUS_GIVE_UP => {
            let user = kvm_regs {
                rip: frame.rip,
                rsp: frame.rsp,
                rflags: frame.rflags,
                ..regs
            };
            if vcpu::back_to_ring3(vcpu).is_ok() && vcpu.set_regs(&user).is_ok() {
                return None;
            }
            Some(fault)
        }
        Ok(Resolution::Fault { mapped }) => {
            fault.mapped = mapped as u64;
            Some(fault)
        }
        Ok(_) => Some(fault),
        Err(e) => {
            eprintln!("multios-hrt: merging the address space at {:#x}: {e}", sregs.cr2);
            Some(fault)
        }
    }
}

/// The function running on `cpu` faulted: reports it to its waiter and puts the vCPU back in its
/// resident loop on a fresh frame (what the function did before the fault stays done).
fn fail(rt: &Shared, cpu: &Cpu, vcpu: &mut VcpuFd, top: u64, f: Fault) {
    if rt.verbose_faults {
        eprintln!("multios-hrt: the function on vCPU {} faulted: {f}", cpu.id);
    }
    *crate::runtime::lock(&cpu.fault) = Some(f);
    let mb = &cpu.mb;
    mb.ret.store(0, Relaxed);
    mb.status.store(status::FAULT, Relaxed);
    // A call it left in its slot is abandoned.
    multios_lwk::slot::state_of(&rt.mem, slot_addr(cpu.id)).store(state::IDLE, SeqCst);
    mb.done.store(mb.seq.load(SeqCst), SeqCst);
    cpu.ring_waiter();
    if vcpu::back_to_ring3(vcpu).is_err() || vcpu.set_regs(&cpu.entry_regs(top)).is_err() {
        eprintln!("multios-hrt: vCPU {} cannot be reset after a fault; it stops", cpu.id);
        mb.stop.store(1, SeqCst);
    }
}
