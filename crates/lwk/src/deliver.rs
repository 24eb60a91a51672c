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
/// IDLE) and enters a signal handler if one is deliverable. Returns true when the process ends.
pub fn complete_call(kernel: &Kernel, id: u64, vcpu: &mut VcpuFd, ret: i64) -> bool {
    let slot = stub::slot_addr(id);
    settle(vcpu);
    let Ok(regs) = vcpu.get_regs() else {
        proxy::reply(kernel, slot, ret);
        return false;
    };
    let regs = proxy::returned(kernel, slot, regs, ret, 0);
    proxy::state_of(kernel, slot).store(state::IDLE, Ordering::Release);
    match kernel.deliver(id as usize, vcpu, &regs) {
        Delivery::Entered => false,
        Delivery::Stop => true,
        Delivery::None => {
            if vcpu.set_regs(&regs).is_err() {
                // Fall back to the stub's own return path.
                proxy::reply(kernel, slot, ret);
            }
            false
        }
    }
}

/// After rt_sigreturn restored the registers: another signal may have become deliverable (the
/// mask changed). Returns true when the process ends.
pub fn after_sigreturn(kernel: &Kernel, id: u64, vcpu: &mut VcpuFd) -> bool {
    if !kernel.deliverable(id as usize) {
        return false;
    }
    match vcpu.get_regs() {
        Ok(regs) => kernel.deliver(id as usize, vcpu, &regs) == Delivery::Stop,
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
    kernel.deliver(id as usize, vcpu, &regs) == Delivery::Stop
}
