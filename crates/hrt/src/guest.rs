//! The only code of split execution that runs in the guest (ring 3 of the vCPU, in the merged
//! address space, so it is this library's own machine code): the resident loop that waits for a
//! posted function, calls it with the poster's TLS and floating-point control state and posts its
//! result and the floating-point state it leaves. It touches nothing but its mailbox and its
//! doorbell; a system call the posted function makes goes through the LWK's LSTAR stub.

use crate::mailbox::{reason, status, Mailbox};
use std::sync::atomic::Ordering::{Acquire, Relaxed, SeqCst};

/// A function the guest can run: `long f(void *arg)`.
pub type Func = unsafe extern "C" fn(*mut libc::c_void) -> libc::c_long;

/// Rings the doorbell: an MMIO exit to the vCPU's Linux thread with `why`.
fn ring(bell: u64, why: u32) {
    // SAFETY: in the guest, `bell` is this vCPU's doorbell + 8, mapped without a memslot: the
    // write never reaches memory, it exits to the VMM. This function only runs in the guest.
    unsafe { std::ptr::write_volatile(bell as *mut u32, why) };
}

/// The resident loop (entered with rdi = the mailbox, rsi = the doorbell, on the vCPU's stack).
///
/// # Safety
/// Only the vCPU may run it, with `mb` its live mailbox and `bell` its doorbell address.
pub unsafe extern "C" fn resident(mb: *const Mailbox, bell: u64) -> ! {
    // SAFETY: the mailbox outlives the vCPU (the runtime frees neither).
    let mb = unsafe { &*mb };
    let mut last = mb.done.load(Acquire);
    let mut fp = crate::fpu::save();
    loop {
        let mut spins = 0u64;
        let seq = loop {
            let s = mb.seq.load(Acquire);
            if s != last {
                break s;
            }
            if mb.stop.load(Relaxed) != 0 {
                ring(bell, reason::STOP);
            }
            std::hint::spin_loop();
            spins += 1;
            if spins >= mb.idle_spins.load(Relaxed) {
                mb.idle.store(1, SeqCst);
                if mb.seq.load(SeqCst) == last {
                    ring(bell, reason::IDLE);
                }
                mb.idle.store(0, Relaxed);
                spins = 0;
            }
        };
        let fs = mb.fs.load(Relaxed);
        if fs != 0 {
            // SAFETY: CR4.FSGSBASE is set in the guest (`multios_lwk::vcpu`); FS is the TLS base
            // of the poster, which waits without touching its TLS until the function returns.
            unsafe { std::arch::asm!("wrfsbase {}", in(reg) fs, options(nostack, preserves_flags)) };
        }
        // The poster's rounding modes, FTZ/DAZ, masks and flags, as a plain call would have them.
        let want = mb.fp.load(Relaxed);
        crate::fpu::switch(fp, want);
        // SAFETY: the poster stored a `Func` (hrt_call / hrt_invoke_func take one) before `seq`.
        let f: Func = unsafe { std::mem::transmute::<u64, Func>(mb.func.load(Relaxed)) };
        // SAFETY: calling the posted function with its argument is what the poster asked for.
        let r = unsafe { f(mb.arg.load(Relaxed) as *mut libc::c_void) };
        mb.ret.store(r as u64, Relaxed);
        // This loop does no floating-point arithmetic: `fp` stays the vCPU's state until the next.
        fp = crate::fpu::save();
        mb.fp_out.store(fp, Relaxed);
        mb.status.store(status::OK, Relaxed);
        mb.done.store(seq, SeqCst);
        last = seq;
        if mb.waiter.load(SeqCst) != 0 {
            ring(bell, reason::WAKE);
        }
    }
}
