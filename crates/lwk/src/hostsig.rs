//! Signals sent to the VMM process on behalf of the guest: when the guest installs a handler for
//! a signal, the VMM catches that signal too (with the guest's SA_RESTART choice, so a delegated
//! call it interrupts behaves as the guest asked); the catcher only records it and writes an
//! eventfd. The machine's signal pump (`machine.rs`) then queues it for the guest and kicks a vCPU.
//! When the guest goes back to SIG_DFL or SIG_IGN, so does the VMM.
//!
//! Never followed: SIGKILL/SIGSTOP (impossible), SIGUSR2 (kicks vCPU threads out of KVM_RUN), and
//! the synchronous faults SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP (the VMM's own; guest faults
//! are exceptions the VMM reports), SIGPIPE (the VMM ignores it; the LWK raises the guest's SIGPIPE
//! from EPIPE itself).

use std::io;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

/// Signals caught and not yet taken by the pump (bit sig-1).
static PENDING: AtomicU64 = AtomicU64::new(0);
/// The eventfd the catcher writes (−1 before the first machine starts).
static EVENT_FD: AtomicI32 = AtomicI32::new(-1);
/// Sender of the last instance of each signal.
static FROM_PID: [AtomicI32; 65] = [const { AtomicI32::new(0) }; 65];
static FROM_UID: [AtomicU32; 65] = [const { AtomicU32::new(0) }; 65];
static CODE: [AtomicI32; 65] = [const { AtomicI32::new(0) }; 65];

/// True when the VMM may catch `sig` for the guest.
pub fn followable(sig: i32) -> bool {
    (1..=64).contains(&sig)
        && ![
            libc::SIGKILL,
            libc::SIGSTOP,
            libc::SIGUSR2,
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGILL,
            libc::SIGFPE,
            libc::SIGTRAP,
            libc::SIGPIPE,
        ]
        .contains(&sig)
        // glibc reserves these two for its own threads' use.
        && sig != 32
        && sig != 33
}

extern "C" fn catcher(sig: libc::c_int, info: *mut libc::siginfo_t, _uc: *mut libc::c_void) {
    let s = sig as usize;
    if s == 0 || s > 64 {
        return;
    }
    // SAFETY: the kernel passes an SA_SIGINFO handler a valid siginfo (or null), alive for the
    // whole handler.
    if let Some(info) = unsafe { info.as_ref() } {
        let (code, pid, uid) = crate::sys::siginfo_sender(info);
        CODE[s].store(code, Ordering::Relaxed);
        FROM_PID[s].store(pid, Ordering::Relaxed);
        FROM_UID[s].store(uid, Ordering::Relaxed);
    }
    PENDING.fetch_or(1 << (s - 1), Ordering::AcqRel);
    let fd = EVENT_FD.load(Ordering::Acquire);
    if fd >= 0 {
        crate::sys::eventfd_add(fd);
    }
}

/// Makes the VMM follow the guest's disposition `handler` for `sig` (see the module comment).
pub fn follow(sig: i32, handler: u64, restart: bool) {
    if !followable(sig) {
        return;
    }
    let action = if handler == libc::SIG_DFL as u64 || handler == libc::SIG_IGN as u64 {
        handler as libc::sighandler_t
    } else {
        // Only touches atomics and writes an eventfd: async-signal-safe.
        catcher as *const () as libc::sighandler_t
    };
    crate::sys::set_signal_action(sig, action, if restart { libc::SA_RESTART } else { 0 });
}

/// Creates the eventfd the catcher writes (above the guest's fds) and returns it.
pub fn open_event(fd_floor: i32) -> io::Result<i32> {
    let old = EVENT_FD.load(Ordering::Acquire);
    if old >= 0 {
        return Ok(old);
    }
    let fd = crate::sys::eventfd()?;
    let high = crate::sys::move_fd_high(fd, fd_floor);
    crate::sys::close(fd);
    let high = high?;
    match EVENT_FD.compare_exchange(-1, high, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Ok(high),
        Err(other) => {
            // Lost the race to another machine of this process: use its eventfd.
            crate::sys::close(high);
            Ok(other)
        }
    }
}

/// In a forked child: stop using the parent's eventfd (its pump would read the child's events);
/// the next [`open_event`] makes the child's own.
pub fn forget_event() {
    let fd = EVENT_FD.swap(-1, Ordering::AcqRel);
    if fd >= 0 {
        // The child's copy of the descriptor; the parent keeps its own.
        crate::sys::close(fd);
    }
}

/// Blocks until the catcher or [`poke`] writes the eventfd; returns false on an error.
pub fn wait_event(fd: i32) -> bool {
    crate::sys::eventfd_wait(fd)
}

/// Wakes the pump (to stop it).
pub fn poke(fd: i32) {
    crate::sys::eventfd_add(fd);
}

/// Wakes the pump so that it kicks a vCPU for a signal the guest sent to another thread.
pub fn nudge() {
    let fd = EVENT_FD.load(Ordering::Acquire);
    if fd >= 0 {
        poke(fd);
    }
}

/// Takes the caught signals: (signal, si_code, sender pid, sender uid) each.
pub fn take() -> Vec<(u64, i32, i32, u32)> {
    let set = PENDING.swap(0, Ordering::AcqRel);
    (1..=64u64)
        .filter(|s| set & (1 << (s - 1)) != 0)
        .map(|s| {
            let i = s as usize;
            (
                s,
                CODE[i].load(Ordering::Relaxed),
                FROM_PID[i].load(Ordering::Relaxed),
                FROM_UID[i].load(Ordering::Relaxed),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vmm_never_follows_its_own_signals() {
        for s in [libc::SIGKILL, libc::SIGUSR2, libc::SIGSEGV, libc::SIGPIPE, 0, 65] {
            assert!(!followable(s), "{s}");
        }
        for s in [libc::SIGALRM, libc::SIGUSR1, libc::SIGINT, libc::SIGTERM, 40] {
            assert!(followable(s), "{s}");
        }
    }
}
