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
use multios_lwk::stub::{doorbell_addr, exception_name, ring0_stack_top, slot_addr, ExceptionFrame};
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
            let kind = if self.mapped != 0 {
                "access not allowed"
            } else {
                "no mapping"
            };
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
pub fn thread(
    rt: Arc<Shared>,
    cpu: Arc<Cpu>,
    pin: Option<usize>,
    ready: std::sync::mpsc::Sender<Result<(), CpuError>>,
) {
    if let Some(c) = pin {
        let _ = multios_lwk::sys::pin_to_cpu(c);
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
        let w = Access {
            write: true,
            exec: false,
        };
        space.on_fault(&rt.vm, top - 8, &w)?;
        space.on_fault(&rt.vm, &*cpu.mb as *const Mailbox as u64, &w)?;
    }
    let entry = Entry {
        fs_base: sys::fs_base(),
        regs: Some(cpu.entry_regs(top)),
        ..Default::default()
    };
    let vcpu = vcpu::create(&rt.vm, &rt.mem, &rt.cpuid, cpu.id, entry, rt.spin_budget, 3)?;
    cpu.tid.store(multios_lwk::sys::gettid(), Release);
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
                if let Some(f) = exception(rt, id, vcpu, &mut spurious) {
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

/// What the page-fault reporter leaves on vCPU `id`'s ring-0 stack, read from memory:
/// `[PF_MARK, cr2, error, rip, cs, rflags, rsp, ss]` at its top − 64.
struct PfFrame {
    at: u64,
    cr2: u64,
    error: u64,
    rip: u64,
    cs: u64,
}

fn pf_frame(rt: &Shared, id: u64) -> Option<PfFrame> {
    let at = ring0_stack_top(id) - 64;
    let w = |k: u64| rt.mem.read_u64(at + 8 * k);
    (w(0) == PF_MARK).then(|| PfFrame {
        at,
        cr2: w(1),
        error: w(2),
        rip: w(3),
        cs: w(4),
    })
}

/// An exception reporter halted. A page fault from ring 3 comes from this crate's reporter, which
/// saved CR2 in its frame and resumes by itself (`iretq` after its `hlt`): when the merged space
/// resolves it, the vCPU just runs on — no register ioctl (each costs ≈ 10 µs here). Anything
/// else is the function's fault.
fn exception(rt: &Shared, id: u64, vcpu: &mut VcpuFd, spurious: &mut (u64, u32)) -> Option<Fault> {
    if let Some(pf) = pf_frame(rt, id) {
        let mut fault = Fault {
            vector: PF,
            error: pf.error,
            rip: pf.rip,
            addr: pf.cr2,
            mapped: 0,
        };
        if pf.cs & 3 != 3 {
            return Some(fault);
        }
        let access = Access {
            write: pf.error & 2 != 0,
            exec: pf.error & 16 != 0,
        };
        let res = {
            let mut space = crate::runtime::lock(&rt.space);
            let r = space.on_fault(&rt.vm, pf.cr2, &access);
            if matches!(r, Ok(Resolution::Spurious)) {
                *spurious = if spurious.0 == pf.cr2 {
                    (pf.cr2, spurious.1 + 1)
                } else {
                    (pf.cr2, 1)
                };
                if spurious.1 == SPURIOUS_FLUSH {
                    space.flush(&rt.vm);
                }
            } else {
                *spurious = (0, 0);
            }
            r
        };
        return match res {
            Ok(Resolution::Filled) | Ok(Resolution::Spurious) if spurious.1 < SPURIOUS_GIVE_UP => {
                rt.mem.write_u64(pf.at, 0);
                None
            }
            Ok(Resolution::Fault { mapped }) => {
                fault.mapped = mapped as u64;
                Some(fault)
            }
            Ok(_) => Some(fault),
            Err(e) => {
                eprintln!("multios-hrt: merging the address space at {:#x}: {e}", pf.cr2);
                Some(fault)
            }
        };
    }
    let Ok(regs) = vcpu.get_regs() else {
        return Some(bad("reading registers after an exception".into()));
    };
    let frame = ExceptionFrame::read(&rt.mem, regs.rsp);
    Some(Fault {
        vector: frame.vector,
        error: frame.error,
        rip: frame.rip,
        addr: 0,
        mapped: 0,
    })
}

/// The marker this crate's page-fault reporter pushes (not a vector: the LWK's reporters push
/// vectors below 32).
const PF_MARK: u64 = 0x10e;

/// The page-fault reporter (ring 0, entered through IDT vector 14 on the vCPU's ring-0 stack):
///
/// ```text
///  push %rax; mov %cr2,%rax; xchg %rax,(%rsp)   the faulting address over the saved rax
///  push $PF_MARK; hlt                            exit to the vCPU's thread, which resolves it
///  add $24,%rsp; iretq                           then back to the faulting instruction
/// ```
const PF_REPORTER: [u8; 21] = [
    0x50, 0x0f, 0x20, 0xd0, 0x48, 0x87, 0x04, 0x24, 0x68, 0x0e, 0x01, 0x00, 0x00, 0xf4, 0x48, 0x83, 0xc4,
    0x18, 0x48, 0xcf, 0x90,
];
const PF_REPORTER_AT: u64 = multios_lwk::memory::SYS_BASE + multios_lwk::memory::sys_page::HANDLERS + 0x300;

/// Installs the page-fault reporter as IDT vector 14 (after the LWK's tables are written).
pub fn write_pf_reporter(mem: &multios_lwk::memory::GuestMemory) {
    use multios_lwk::memory::{sys_page, SYS_BASE};
    mem.write(PF_REPORTER_AT, &PF_REPORTER);
    let h = PF_REPORTER_AT;
    let cs = multios_lwk::stub::sel::KERNEL_CS as u64;
    let lo = (h & 0xffff) | (cs << 16) | (0x8e << 40) | (((h >> 16) & 0xffff) << 48);
    mem.write_u64(SYS_BASE + sys_page::IDT + 16 * PF, lo);
    mem.write_u64(SYS_BASE + sys_page::IDT + 16 * PF + 8, h >> 32);
}

/// Where the ring-0 return stub is: `add $16,%rsp; iretq`, just past the LWK's exception
/// reporters in its system page (written by [`write_iret_stub`]).
const IRET_STUB: u64 = multios_lwk::memory::SYS_BASE + multios_lwk::memory::sys_page::HANDLERS + 0x200;

/// Writes the ring-0 return stub (once, at start-up).
pub fn write_iret_stub(mem: &multios_lwk::memory::GuestMemory) {
    mem.write(IRET_STUB, &[0x48, 0x83, 0xc4, 0x10, 0x48, 0xcf]);
}

/// Resumes a vCPU halted in an exception reporter at the frame on its ring-0 stack
/// (`[vector, error, rip, cs, rflags, rsp, ss]` at `regs.rsp`).
fn iret(vcpu: &VcpuFd, regs: kvm_regs) -> Result<(), kvm_ioctls::Error> {
    vcpu.set_regs(&kvm_regs {
        rip: IRET_STUB,
        ..regs
    })
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
    let entry = cpu.entry_regs(top);
    let reset = if let Some(pf) = pf_frame(rt, cpu.id).filter(|pf| pf.cs & 3 == 3) {
        // Halted in the page-fault reporter: its frame returns into the resident loop.
        rt.mem.write_u64(pf.at, 0);
        rt.mem.write_u64(pf.at + 24, entry.rip);
        rt.mem.write_u64(pf.at + 40, entry.rflags);
        rt.mem.write_u64(pf.at + 48, entry.rsp);
        vcpu.get_regs().and_then(|regs| {
            vcpu.set_regs(&kvm_regs {
                rdi: entry.rdi,
                rsi: entry.rsi,
                ..regs
            })
        })
    } else {
        let in_reporter = vcpu
            .get_regs()
            .ok()
            .filter(|r| rt.mem.sys.contains(r.rsp, 56) && rt.mem.read_u64(r.rsp + 24) & 3 == 3);
        match in_reporter {
            // Halted in one of the LWK's reporters: rewrite its frame to return into the loop.
            Some(regs) => {
                rt.mem.write_u64(regs.rsp + 16, entry.rip);
                rt.mem.write_u64(regs.rsp + 32, entry.rflags);
                rt.mem.write_u64(regs.rsp + 40, entry.rsp);
                iret(
                    vcpu,
                    kvm_regs {
                        rdi: entry.rdi,
                        rsi: entry.rsi,
                        ..regs
                    },
                )
            }
            None => vcpu::back_to_ring3(vcpu).and_then(|()| vcpu.set_regs(&entry)),
        }
    };
    if reset.is_err() {
        eprintln!(
            "multios-hrt: vCPU {} cannot be reset after a fault; it stops",
            cpu.id
        );
        mb.stop.store(1, SeqCst);
    }
}
