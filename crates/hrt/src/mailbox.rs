//! The event channel between Linux threads and one resident vCPU (Multiverse §III-B): four cache
//! lines of host memory the guest reads and writes directly (the address space is merged). Line 0
//! is written by the thread that posts a function, line 1 by the guest, line 2 by the waiter,
//! line 3 by the guest when it goes idle.
//!
//! Not versioned (unlike the syscall slot of `multios-lwk-abi`, which the LWK's stub machine code
//! is assembled against): both ends are this library's own code, built together.
//!
//! ```text
//!  poster (hrt_call / partner)        guest (guest::resident, vCPU k)      vCPU thread (Linux)
//!  func, arg, fs, fp := f, a, TLS, FP
//!  seq := n  ───────────────────────▶ sees seq != done; loads fs, fp; r := f(a)
//!  (idle? futex-wake seq)             ret, fp_out := r, FP; done := n
//!  spins on done == n ◀────────────── (waiter asleep? ring WAKE) ───────▶ bell++, futex-wake bell
//!  while spinning: serves the vCPU's
//!  syscall slot (forwarded calls)     nothing to do for a while: idle := 1,
//!                                      ring IDLE ────────────────────────▶ futex-waits on seq
//! ```

use std::sync::atomic::{AtomicU32, AtomicU64};

/// Doorbell reasons the guest writes at its doorbell + [`BELL_OFFSET`].
pub mod reason {
    /// No function posted for a while: the vCPU thread sleeps until one is.
    pub const IDLE: u32 = 1;
    /// A function finished while its waiter sleeps: wake it.
    pub const WAKE: u32 = 2;
    /// `stop` was set: the vCPU thread ends.
    pub const STOP: u32 = 3;
}

/// Where the guest loop rings, from its vCPU's doorbell (the stub rings at +0).
pub const BELL_OFFSET: u64 = 8;

/// How a posted function ended.
pub mod status {
    pub const OK: u32 = 0;
    /// It raised an exception the process's mappings do not explain (see `Fault`).
    pub const FAULT: u32 = 1;
}

/// One vCPU's event channel.
#[repr(C, align(64))]
#[derive(Default)]
pub struct Mailbox {
    // Line 0: the poster.
    pub seq: AtomicU32,
    pub stop: AtomicU32,
    pub func: AtomicU64,
    pub arg: AtomicU64,
    /// Spins of the guest loop before it goes idle.
    pub idle_spins: AtomicU64,
    /// The FS base (TLS) the function runs with: the poster's, so that the function uses the TLS
    /// of the thread waiting for it — errno, malloc's thread cache — and never that of the vCPU's
    /// thread, which serves faults while the function may hold a lock of malloc.
    pub fs: AtomicU64,
    /// The poster's floating-point control state (`fpu::save`: MXCSR, x87 control word and
    /// flags), which the function starts with, as a plain call would.
    pub fp: AtomicU64,
    _p0: [u64; 2],
    // Line 1: the guest.
    pub done: AtomicU32,
    pub status: AtomicU32,
    pub ret: AtomicU64,
    /// The function's floating-point control state when it returned, which the poster takes on
    /// (a rounding mode it set, the exception flags it raised).
    pub fp_out: AtomicU64,
    _p1: [u64; 5],
    // Line 2: the waiter and the vCPU thread.
    /// 1 while the waiter sleeps on `bell`.
    pub waiter: AtomicU32,
    pub bell: AtomicU32,
    _p2: [u32; 14],
    // Line 3: the guest, only when it goes idle (a poster reads it at every call: on a line of
    // its own it stays shared in the poster's cache instead of pulling line 1 early).
    pub idle: AtomicU32,
    _p3: [u32; 15],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_writer_has_its_own_cache_line() {
        assert_eq!(std::mem::size_of::<Mailbox>(), 256);
        assert_eq!(std::mem::offset_of!(Mailbox, idle), 192);
        assert_eq!(std::mem::offset_of!(Mailbox, done), 64);
        assert!(std::mem::offset_of!(Mailbox, fp) < 64);
        assert!((64..128).contains(&std::mem::offset_of!(Mailbox, fp_out)));
        assert_eq!(std::mem::offset_of!(Mailbox, waiter), 128);
    }
}
