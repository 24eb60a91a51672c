//! The system calls of a function running in the guest: a few answered by the LWK itself (the
//! calls of the LWK's local set that need no host state it lacks — `multios_lwk::LocalSet`, the
//! policy of `multios lwk run`), the rest forwarded: the partner thread makes the very same call
//! in this process, where the guest's pointers are the process's pointers (merged address space),
//! so no argument needs translating or checking beyond what Linux checks natively. Calls that
//! would act on the partner thread's own control flow (clone, fork, exit of one thread,
//! rt_sigreturn) are refused with ENOSYS.

use crate::sys;
use multios_lwk::LocalSet;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// The LWK's local answers. Only the pid is cached: the parent (getppid: it may die), the
/// credentials (the program may change them natively, or the function through a forwarded
/// set*id call) change under the runtime, so those calls are forwarded.
pub struct Local {
    set: LocalSet,
    pid: i64,
    /// Calls answered locally and forwarded, for the measurements.
    pub local: AtomicU64,
    pub forwarded: AtomicU64,
    pub refused: AtomicU64,
}

impl Local {
    pub fn new() -> Self {
        let id = |nr| sys::forward(nr as u64, [0; 6]);
        Local {
            set: LocalSet::mckernel(),
            pid: id(libc::SYS_getpid),
            local: AtomicU64::new(0),
            forwarded: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// The LWK's own answer to `nr`, when it has one. `tid` is the HRT thread's (its vCPU thread's).
    fn answer(&self, nr: i64, tid: i32) -> Option<i64> {
        let v = match nr {
            libc::SYS_gettid => tid as i64,
            libc::SYS_getpid => self.pid,
            n if !self.set.is_local(n as u64) => return None,
            libc::SYS_sched_yield => 0,
            _ => return None,
        };
        Some(v)
    }

    /// Serves call `nr` of the HRT thread whose vCPU thread is `tid`.
    pub fn serve(&self, nr: u64, a: [u64; 6], tid: i32) -> i64 {
        let n = nr as i64;
        if let Some(v) = self.answer(n, tid) {
            self.local.fetch_add(1, Relaxed);
            return v;
        }
        if refused(n) {
            self.refused.fetch_add(1, Relaxed);
            return -(libc::ENOSYS as i64);
        }
        self.forwarded.fetch_add(1, Relaxed);
        // set*id too: the function's C library broadcasts the change to the process's other
        // threads itself (SIGSETXID) and makes the system call for "its" thread last, and that
        // thread (its thread pointer) is the one serving it.
        sys::forward(nr, a)
    }
}

impl Default for Local {
    fn default() -> Self {
        Self::new()
    }
}

/// Calls a partner thread cannot make on the HRT thread's behalf.
pub fn refused(nr: i64) -> bool {
    matches!(
        nr,
        libc::SYS_clone
            | libc::SYS_clone3
            | libc::SYS_fork
            | libc::SYS_vfork
            | libc::SYS_exit
            | libc::SYS_rt_sigreturn
            | libc::SYS_arch_prctl
            | libc::SYS_set_tid_address
            | libc::SYS_rseq
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_is_answered_locally_and_the_rest_forwarded() {
        let l = Local::new();
        assert_eq!(l.serve(libc::SYS_gettid as u64, [0; 6], 77), 77);
        assert_eq!(
            l.serve(libc::SYS_getpid as u64, [0; 6], 77),
            std::process::id() as i64
        );
        assert_eq!(
            l.serve(libc::SYS_clone as u64, [0; 6], 77),
            -(libc::ENOSYS as i64)
        );
        // An invalid descriptor: forwarded, Linux answers.
        assert_eq!(
            l.serve(libc::SYS_close as u64, [9999, 0, 0, 0, 0, 0], 77),
            -(libc::EBADF as i64)
        );
        assert_eq!(l.forwarded.load(Relaxed), 1);
        assert_eq!(l.refused.load(Relaxed), 1);
        assert_eq!(l.local.load(Relaxed), 2);
    }
}
