//! Entering the guest's signal handlers from a vCPU thread (the signal state and the frame are in
//! `syscall/signal.rs`). Two moments are clean for it:
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

use crate::proxy;
use crate::stub;
use crate::syscall::signal::Delivery;
use crate::syscall::Kernel;
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
/// result (a signal interrupted the call) becomes EINTR or the call again (`syscall/signal.rs`).
/// Returns true when the process ends.
pub fn complete_call(kernel: &Kernel, id: u64, vcpu: &mut VcpuFd, ret: i64) -> bool {
    let slot = stub::slot_addr(id);
    settle(vcpu);
    let Ok(regs) = vcpu.get_regs() else {
        proxy::reply(kernel, slot, restart_fallback(ret));
        return false;
    };
    let (nr, _) = proxy::request(kernel, slot);
    let mut regs = proxy::returned(kernel, slot, regs, ret, 0);
    proxy::state_of(kernel, slot).store(state::IDLE, Ordering::Release);
    match kernel.deliver(id as usize, vcpu, &regs, Some(nr)) {
        Delivery::Entered => false,
        Delivery::Stop => true,
        Delivery::None => {
            kernel.returned_without_handler(id as usize, &mut regs, nr);
            if vcpu.set_regs(&regs).is_err() {
                // Fall back to the stub's own return path.
                proxy::reply(kernel, slot, restart_fallback(ret));
            }
            false
        }
    }
}

/// What the stub returns when the registers cannot be set: never an internal restart result.
fn restart_fallback(ret: i64) -> i64 {
    if crate::syscall::signal::is_restart(ret) {
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
    use crate::syscall::signal::SI_KERNEL;
    let (sig, code, addr) = match vector {
        vector::DE => (libc::SIGFPE, 1 /* FPE_INTDIV */, rip),
        vector::DB => (libc::SIGTRAP, 2 /* TRAP_TRACE */, rip),
        vector::BP => (libc::SIGTRAP, SI_KERNEL, 0),
        vector::OF | vector::BR | vector::GP => (libc::SIGSEGV, SI_KERNEL, 0),
        vector::UD => (libc::SIGILL, 2 /* ILL_ILLOPN */, rip),
        // Bit 0 of the error code: the page was present (a protection fault).
        vector::PF => (libc::SIGSEGV, if error & 1 == 0 { 1 } else { 2 }, cr2),
        vector::MF => (libc::SIGFPE, fpe_code(fpu(false)), rip),
        vector::XM => (libc::SIGFPE, fpe_code(fpu(true)), rip),
        vector::AC => (libc::SIGBUS, 1 /* BUS_ADRALN */, 0),
        _ => return None,
    };
    Some((sig as u64, code, addr))
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
    let Some((sig, code, addr)) = signal_of(vector, error, rip, sregs.cr2, fpu) else {
        return false;
    };
    let mut user = regs;
    user.rip = rip;
    user.rsp = frame.rsp;
    user.rflags = frame.rflags;
    let info = crate::syscall::signal::SigInfo {
        code,
        trap: Some(crate::syscall::signal::Trap {
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
    match kernel.deliver_fault(id as usize, vcpu, &user, sig, info) {
        Delivery::Entered => true,
        _ => {
            // Not delivered: back to the reporter's state, so the fault report reads its frame.
            let _ = vcpu.set_sregs(&sregs);
            let _ = vcpu.set_regs(&regs);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
