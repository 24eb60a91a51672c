//! Entering the guest's signal handlers from a vCPU thread (the state is in `signal/mod.rs`, the
//! frame in `signal/frame.rs`). Three moments are clean for it:
//!
//! * the return of a system call the vCPU thread completes itself (after a doorbell exit; the
//!   proxy hands such calls over with the slot state SIGNAL): the call's result is put in the
//!   registers as the stub would, and the handler's frame saves exactly that state;
//! * a kick out of KVM_RUN (SIGUSR2 from the signal pump) while the guest runs its own code: the
//!   frame saves the interrupted registers. A vCPU kicked inside its stub keeps the signal pending
//!   until the call returns.
//!
//! * a CPU exception in the guest's own code (the ring-0 reporter halted): the signal the exception
//!   raises natively enters the guest's handler, with the faulting registers in the frame.
//!
//! Registers are changed only after any pending MMIO completion has been flushed with an
//! `immediate_exit` KVM_RUN (the KVM API's rule for changing state after an I/O exit).

use super::{
    bit, default_ignored, is_restart, stop_signal, Delivery, SigInfo, Trap, ERESTARTNOINTR, ERESTARTSYS,
    SA_RESTART,
};
use crate::kernel::{lock, ExitStatus, Kernel};
use crate::slot;
use crate::stub;
use kvm_bindings::kvm_regs;
use kvm_ioctls::VcpuFd;
use multios_lwk_abi::{state, STUB_PAGE};
use std::sync::atomic::Ordering;

/// Completes the I/O exit the vCPU is in, without running guest code.
pub fn settle(vcpu: &mut VcpuFd) {
    vcpu.set_kvm_immediate_exit(1);
    let _ = vcpu.run();
    vcpu.set_kvm_immediate_exit(0);
}

/// Completes vCPU `id`'s system call with result `ret` in its registers (the slot goes back to
/// IDLE) and enters a signal handler if one is deliverable. A `ret` that is an internal restart
/// result (a signal interrupted the call) becomes EINTR or the call again (`after_interrupt` below).
/// Returns true when the process ends.
pub fn complete_call(kernel: &Kernel, id: u64, vcpu: &mut VcpuFd, ret: i64) -> bool {
    let slot = stub::slot_addr(id);
    settle(vcpu);
    let Ok(regs) = vcpu.get_regs() else {
        slot::reply(&kernel.mem, slot, restart_fallback(ret));
        return false;
    };
    let (nr, _) = slot::request(&kernel.mem, slot);
    let mut regs = slot::returned(&kernel.mem, slot, regs, ret, 0);
    slot::state_of(&kernel.mem, slot).store(state::IDLE, Ordering::Release);
    match kernel.deliver(id as usize, vcpu, &regs, Some(nr)) {
        Delivery::Entered => false,
        Delivery::Stop => true,
        Delivery::None => {
            kernel.returned_without_handler(id as usize, &mut regs, nr);
            if vcpu.set_regs(&regs).is_err() {
                // Fall back to the stub's own return path.
                slot::reply(&kernel.mem, slot, restart_fallback(ret));
            }
            false
        }
    }
}

/// What the stub returns when the registers cannot be set: never an internal restart result.
fn restart_fallback(ret: i64) -> i64 {
    if is_restart(ret) {
        -(libc::EINTR as i64)
    } else {
        ret
    }
}

/// After rt_sigreturn restored the registers: another signal may have become deliverable (the
/// mask changed). Returns true when the process ends.
pub fn after_sigreturn(kernel: &Kernel, id: u64, vcpu: &mut VcpuFd) -> bool {
    if !kernel.deliverable(id as usize) {
        return false;
    }
    match vcpu.get_regs() {
        Ok(regs) => kernel.deliver(id as usize, vcpu, &regs, None) == Delivery::Stop,
        Err(_) => false,
    }
}

/// vCPU `id` was kicked out of KVM_RUN: enters a handler if a signal is deliverable and the guest
/// is in its own code. Returns true when the process ends.
pub fn on_kick(kernel: &Kernel, id: u64, vcpu: &mut VcpuFd) -> bool {
    if !kernel.deliverable(id as usize) {
        return false;
    }
    let Ok(regs) = vcpu.get_regs() else {
        return false;
    };
    let stub = stub::stub_addr(id);
    if (stub..stub + STUB_PAGE as u64).contains(&regs.rip) {
        return false; // inside a system call: delivered on its way back
    }
    kernel.deliver(id as usize, vcpu, &regs, None) == Delivery::Stop
}

/// What became of a KVM_RUN that failed with EFAULT ([`on_host_fault`]).
pub enum HostFault {
    /// The guest's SIGBUS handler was entered.
    Handled,
    /// SIGBUS at this address, which the guest does not handle: the process dies of it.
    Fatal(u64),
    /// Not a page the host cannot back: a VMM failure.
    Unknown,
}

/// KVM_RUN failed with EFAULT: the host could not back a page the guest touched, which for a
/// file mapping's page past the end of its file is Linux's SIGBUS with BUS_ADRERR (the VMM used
/// to stop with "KVM_RUN failed: Bad address"). The vCPU is still at the instruction, in ring 3,
/// so its registers are the program's; the signal goes to its handler as a fault's would.
pub fn on_host_fault(kernel: &Kernel, id: u64, vcpu: &mut VcpuFd) -> HostFault {
    let Ok(regs) = vcpu.get_regs() else {
        return HostFault::Unknown;
    };
    let Some(addr) = kernel.unbacked_file_page(&regs) else {
        return HostFault::Unknown;
    };
    let info = SigInfo {
        code: BUS_ADRERR,
        trap: Some(Trap {
            vector: vector::PF,
            error: 4, // a user-mode access (KVM does not say whether it was a read or a write)
            addr,
            cr2: addr,
        }),
        ..Default::default()
    };
    match kernel.deliver_fault(id as usize, vcpu, &regs, libc::SIGBUS as u64, info) {
        Delivery::Entered => HostFault::Handled,
        _ => HostFault::Fatal(addr),
    }
}

/// si_code of SIGBUS: an address the mapping has no backing for.
const BUS_ADRERR: i32 = 2;

/// si_code of SIGSEGV: no mapping at the address / a mapping that forbids the access.
const SEGV_MAPERR: i32 = 1;
const SEGV_ACCERR: i32 = 2;

/// Exception vectors (Intel SDM vol. 3, table 6-1).
mod vector {
    pub const DE: u64 = 0;
    pub const DB: u64 = 1;
    pub const BP: u64 = 3;
    pub const OF: u64 = 4;
    pub const BR: u64 = 5;
    pub const UD: u64 = 6;
    pub const GP: u64 = 13;
    pub const PF: u64 = 14;
    pub const MF: u64 = 16;
    pub const AC: u64 = 17;
    pub const XM: u64 = 19;
}

/// The si_code of a floating-point exception from the unmasked exception flags `status & !masks`
/// (x87: FSW and FCW; SSE: MXCSR's flags and its masks shifted down by 7), in the order Linux
/// checks them: invalid, divide by zero, overflow, underflow or denormal, precision.
pub fn fpe_code(unmasked: u64) -> i32 {
    if unmasked & 0x01 != 0 {
        7 // FPE_FLTINV
    } else if unmasked & 0x04 != 0 {
        3 // FPE_FLTDIV
    } else if unmasked & 0x08 != 0 {
        4 // FPE_FLTOVF
    } else if unmasked & 0x12 != 0 {
        5 // FPE_FLTUND
    } else if unmasked & 0x20 != 0 {
        6 // FPE_FLTRES
    } else {
        0
    }
}

/// The signal, si_code and si_addr Linux raises for exception `vector` (error code `error`, CR2
/// `cr2`) at `rip` in user mode (arch/x86/kernel/traps.c, fault.c); `None` for vectors a user
/// program cannot cause. `fpu` gives the unmasked floating-point exception flags (see
/// [`fpe_code`]) of the x87 (#MF) or SSE (#XM) unit.
pub fn signal_of(
    vector: u64,
    error: u64,
    rip: u64,
    cr2: u64,
    fpu: impl Fn(bool) -> u64,
) -> Option<(u64, i32, u64)> {
    use super::SI_KERNEL;
    let (sig, code, addr) = match vector {
        vector::DE => (libc::SIGFPE, 1 /* FPE_INTDIV */, rip),
        vector::DB => (libc::SIGTRAP, 2 /* TRAP_TRACE */, rip),
        vector::BP => (libc::SIGTRAP, SI_KERNEL, 0),
        vector::OF | vector::BR | vector::GP => (libc::SIGSEGV, SI_KERNEL, 0),
        vector::UD => (libc::SIGILL, 2 /* ILL_ILLOPN */, rip),
        // Bit 0 of the error code: the page was present (a protection fault). A not-present page
        // that is mapped (PROT_NONE) is SEGV_ACCERR too: `on_fault` asks the VMAs.
        vector::PF => (
            libc::SIGSEGV,
            if error & 1 == 0 { SEGV_MAPERR } else { SEGV_ACCERR },
            cr2,
        ),
        vector::MF => (libc::SIGFPE, fpe_code(fpu(false)), rip),
        vector::XM => (libc::SIGFPE, fpe_code(fpu(true)), rip),
        vector::AC => (libc::SIGBUS, 1 /* BUS_ADRALN */, 0),
        _ => return None,
    };
    Some((sig as u64, code, addr))
}

/// vCPU `id` halted in a page fault from ring 3 while it ran with page tables older than the
/// current ones (`shadow.rs`): puts it back at the faulting instruction, which runs again with the
/// new tables (its CR3 is reloaded before the next KVM_RUN). Linux's spurious-fault path.
pub fn retry_stale_fault(kernel: &Kernel, id: u64, vcpu: &mut VcpuFd) -> bool {
    if !kernel.mem.shadow.stale(id as usize) {
        return false;
    }
    let Ok(regs) = vcpu.get_regs() else {
        return false;
    };
    let frame = stub::ExceptionFrame::read(&kernel.mem, regs.rsp);
    if !frame.from_user() || frame.vector != vector::PF {
        return false;
    }
    let user = kvm_regs {
        rip: frame.rip,
        rsp: frame.rsp,
        rflags: frame.rflags,
        ..regs
    };
    crate::vcpu::back_to_ring3(vcpu).is_ok() && vcpu.set_regs(&user).is_ok()
}

/// vCPU `id` halted in an exception reporter: if the exception came from ring 3 and the guest
/// handles the signal it raises, enters that handler back in ring 3 and returns true; false
/// leaves the vCPU as it is for the fault report.
pub fn on_fault(kernel: &Kernel, id: u64, vcpu: &mut VcpuFd) -> bool {
    let (Ok(regs), Ok(sregs)) = (vcpu.get_regs(), vcpu.get_sregs()) else {
        return false;
    };
    let frame = stub::ExceptionFrame::read(&kernel.mem, regs.rsp);
    if !frame.from_user() {
        return false;
    }
    let (vector, error, rip) = (frame.vector, frame.error, frame.rip);
    // The legacy XSAVE area: FCW at byte 0, FSW at 2, MXCSR at 24.
    let fpu = |sse: bool| {
        let Ok(x) = vcpu.get_xsave() else { return 0 };
        if sse {
            let mxcsr = u64::from(x.region[6]);
            mxcsr & 0x3f & !(mxcsr >> 7)
        } else {
            let (fcw, fsw) = (u64::from(x.region[0] & 0xffff), u64::from(x.region[0] >> 16));
            fsw & 0x3f & !fcw
        }
    };
    let Some((sig, mut code, addr)) = signal_of(vector, error, rip, sregs.cr2, fpu) else {
        return false;
    };
    if vector == vector::PF && kernel.is_mapped(sregs.cr2) {
        // A mapping is there but forbids the access (PROT_NONE is not present in the page
        // tables, like in Linux's): SEGV_ACCERR, as Linux decides from its VMA.
        code = SEGV_ACCERR;
    }
    let mut user = regs;
    user.rip = rip;
    user.rsp = frame.rsp;
    user.rflags = frame.rflags;
    let info = SigInfo {
        code,
        trap: Some(Trap {
            vector,
            error,
            addr,
            cr2: if vector == vector::PF { sregs.cr2 } else { 0 },
        }),
        ..Default::default()
    };
    if crate::vcpu::back_to_ring3(vcpu).is_err() {
        return false;
    }
    let t0 = std::time::Instant::now();
    match kernel.deliver_fault(id as usize, vcpu, &user, sig, info) {
        Delivery::Entered => {
            let fault = crate::trace::hooks::TracedFault {
                sig,
                vector,
                rip,
                rsp: frame.rsp,
                addr,
                ns: t0.elapsed().as_nanos() as u64,
            };
            kernel.trace_fault(id as usize, fault);
            true
        }
        _ => {
            // Not delivered: back to the reporter's state, so the fault report reads its frame.
            let _ = vcpu.set_sregs(&sregs);
            let _ = vcpu.set_regs(&regs);
            false
        }
    }
}

/// Turns an internal restart result in `regs.rax` into what the guest sees after call `nr`: with
/// a handler (its sa_flags) EINTR, or the call again for ERESTARTSYS under SA_RESTART (and for
/// ERESTARTNOINTR); without one, the call again. "Again" is Linux's way: rax = the call number and
/// rip back over the 2-byte `syscall` (or to the start of a rewritten site's thunk:
/// `rewrite::restart_at`), so the guest issues it anew with its argument registers, which the
/// stub does not touch.
fn after_interrupt(regs: &mut kvm_regs, nr: u64, handler_flags: Option<u64>) {
    let r = regs.rax as i64;
    if !is_restart(r) {
        return;
    }
    let again = match handler_flags {
        None => true,
        Some(flags) => r == ERESTARTNOINTR || (r == ERESTARTSYS && flags & SA_RESTART != 0),
    };
    if again {
        regs.rax = nr;
        regs.rip = crate::rewrite::restart_at(regs.rip);
        regs.rcx = regs.rip;
    } else {
        regs.rax = -(libc::EINTR as i64) as u64;
    }
}

impl Kernel {
    /// Delivers the next deliverable signal of vCPU `cpu`, whose user-mode registers are `regs`
    /// (a system call already completed in them): pushes a signal frame and points the vCPU at the
    /// handler, ends the process for a fatal default action, or drops ignored signals. `call` is
    /// the number of the system call whose result is in `regs.rax` (None when the guest was
    /// interrupted in its own code): an internal restart result there becomes EINTR or the call
    /// again, as the handler's SA_RESTART says.
    ///
    /// Like Linux's return to user mode, which goes on delivering while a signal is deliverable,
    /// every signal the handler's mask still lets through gets its frame too, each on top of the
    /// last: the handler entered last runs first (a blocked set of pending signals, unblocked at
    /// once, runs its handlers from the highest signal down, as natively).
    pub fn deliver(&self, cpu: usize, vcpu: &VcpuFd, regs: &kvm_regs, call: Option<u64>) -> Delivery {
        let mut first = self.deliver_one(cpu, vcpu, regs, call);
        while first == Delivery::Entered && self.deliverable(cpu) {
            // The system call is done with: the next frames save the handler's entry state.
            let Ok(entry) = vcpu.get_regs() else { break };
            match self.deliver_one(cpu, vcpu, &entry, None) {
                Delivery::Entered => {}
                Delivery::Stop => first = Delivery::Stop,
                Delivery::None => break,
            }
        }
        first
    }

    /// Delivers one signal (see [`Kernel::deliver`]).
    fn deliver_one(&self, cpu: usize, vcpu: &VcpuFd, regs: &kvm_regs, call: Option<u64>) -> Delivery {
        while let Some((sig, info)) = self.take_signal(cpu) {
            let act = lock(&self.signals.actions)[sig as usize];
            let handler = act.raw[0];
            if handler == libc::SIG_IGN as u64 || (handler == libc::SIG_DFL as u64 && default_ignored(sig)) {
                continue;
            }
            if handler == libc::SIG_DFL as u64 && stop_signal(sig) {
                // The program stops, and goes on with its next signal once continued.
                crate::signal::host::stop_like_the_program(sig as i32);
                continue;
            }
            if handler == libc::SIG_DFL as u64 {
                lock(&self.exit).get_or_insert(ExitStatus::Signal(sig as i32));
                return Delivery::Stop;
            }
            let mut regs = *regs;
            if let Some(nr) = call {
                after_interrupt(&mut regs, nr, Some(act.raw[1]));
            }
            return match self.push_frame(cpu, vcpu, &regs, sig, info, act.raw) {
                Ok(()) => Delivery::Entered,
                Err(why) => {
                    self.end_with_sigsegv(format!("signal {sig}: cannot enter the guest's handler ({why})"));
                    Delivery::Stop
                }
            };
        }
        Delivery::None
    }

    /// A system call of vCPU `cpu` returns (`regs.rax` its result) without entering a handler:
    /// an internal restart result makes the guest issue call `nr` again, and a mask the call
    /// installed (rt_sigsuspend, pselect6…) is taken back, as Linux does.
    pub fn returned_without_handler(&self, cpu: usize, regs: &mut kvm_regs, nr: u64) {
        after_interrupt(regs, nr, None);
        self.restore_call_mask(cpu);
    }

    /// A CPU exception in vCPU `cpu`'s own code, raised as `sig`: enters the guest's handler with
    /// `regs` (the faulting context) saved in the frame. Like Linux's forced fault signals, a
    /// blocked, ignored or default-action signal is not deliverable: the caller then ends the
    /// process with its fault report.
    pub fn deliver_fault(
        &self,
        cpu: usize,
        vcpu: &VcpuFd,
        regs: &kvm_regs,
        sig: u64,
        info: SigInfo,
    ) -> Delivery {
        let act = lock(&self.signals.actions)[sig as usize];
        let handler = act.raw[0];
        let blocked = lock(&self.threads)
            .get(cpu)
            .is_some_and(|t| t.sig.mask & bit(sig) != 0);
        if blocked || handler == libc::SIG_IGN as u64 || handler == libc::SIG_DFL as u64 {
            return Delivery::None;
        }
        match self.push_frame(cpu, vcpu, regs, sig, info, act.raw) {
            Ok(()) => Delivery::Entered,
            // No room for a frame (an overflowed stack, without an alternate one): the fault
            // report says where the guest died.
            Err(_) => Delivery::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signal::ERESTARTNOHAND;

    #[test]
    fn exceptions_raise_the_signals_linux_raises() {
        // A user read of an unmapped page: SEGV_MAPERR at CR2; a write to a present page:
        // SEGV_ACCERR.
        let no = |_| 0;
        assert_eq!(signal_of(vector::PF, 4, 0x400000, 0x8, no), Some((11, 1, 0x8)));
        assert_eq!(
            signal_of(vector::PF, 7, 0x400000, 0x1000, no),
            Some((11, 2, 0x1000))
        );
        assert_eq!(signal_of(vector::GP, 0, 0x400000, 0, no), Some((11, 0x80, 0)));
        assert_eq!(signal_of(vector::DE, 0, 0x400123, 0, no), Some((8, 1, 0x400123)));
        assert_eq!(signal_of(vector::UD, 0, 0x400123, 0, no), Some((4, 2, 0x400123)));
        assert_eq!(signal_of(vector::BP, 0, 0x400123, 0, no), Some((5, 0x80, 0)));
        // An SSE divide by zero with ZM unmasked: FPE_FLTDIV; invalid wins over the others.
        assert_eq!(
            signal_of(vector::XM, 0, 0x400123, 0, |_| 0x04),
            Some((8, 3, 0x400123))
        );
        assert_eq!(fpe_code(0x04 | 0x01), 7);
        assert_eq!(fpe_code(0x02), 5);
        // A double fault or NMI is never the program's: no signal, the fault report.
        assert_eq!(signal_of(8, 0, 0, 0, no), None);
        assert_eq!(signal_of(2, 0, 0, 0, no), None);
    }

    #[test]
    fn interrupted_calls_return_eintr_or_run_again_as_linux_decides() {
        let at = |rax: i64| kvm_regs {
            rax: rax as u64,
            rip: 0x40_1002,
            ..Default::default()
        };
        let eintr = -(libc::EINTR as i64) as u64;
        // A handler without SA_RESTART: EINTR; with it, ERESTARTSYS runs the call again (rax = its
        // number, rip on the `syscall`), ERESTARTNOHAND still gives EINTR.
        let mut r = at(ERESTARTSYS);
        after_interrupt(&mut r, 0, Some(0));
        assert_eq!((r.rax, r.rip), (eintr, 0x40_1002));
        let mut r = at(ERESTARTSYS);
        after_interrupt(&mut r, 0, Some(SA_RESTART));
        assert_eq!((r.rax, r.rip), (0, 0x40_1000));
        let mut r = at(ERESTARTNOHAND);
        after_interrupt(&mut r, 270, Some(SA_RESTART));
        assert_eq!(r.rax, eintr);
        // No handler: the call again, whatever the code; a real result is left alone.
        let mut r = at(ERESTARTNOHAND);
        after_interrupt(&mut r, 270, None);
        assert_eq!((r.rax, r.rip), (270, 0x40_1000));
        let mut r = at(-4);
        after_interrupt(&mut r, 0, None);
        assert_eq!((r.rax, r.rip), (-4i64 as u64, 0x40_1002));
        // A return into a rewritten site's thunk goes back to the thunk's start.
        assert_eq!(
            crate::rewrite::restart_at(0x20_0000 + 3 * 32 + 17),
            0x20_0000 + 3 * 32
        );
        assert!(!is_restart(-(libc::EINTR as i64)) && is_restart(ERESTARTNOINTR));
    }
}
