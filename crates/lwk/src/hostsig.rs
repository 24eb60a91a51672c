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
    if !info.is_null() {
        // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler; si_pid/si_uid are
        // read as the kill-style union member, which every sender fills (0 otherwise).
        let (code, pid, uid) = unsafe { ((*info).si_code, (*info).si_pid(), (*info).si_uid()) };
        CODE[s].store(code, Ordering::Relaxed);
        FROM_PID[s].store(pid, Ordering::Relaxed);
        FROM_UID[s].store(uid, Ordering::Relaxed);
    }
    PENDING.fetch_or(1 << (s - 1), Ordering::AcqRel);
    let fd = EVENT_FD.load(Ordering::Acquire);
    if fd >= 0 {
        let one = 1u64;
        // SAFETY: write(2) is async-signal-safe; `one` is 8 valid bytes, as an eventfd needs.
        unsafe { libc::write(fd, (&one as *const u64).cast(), 8) };
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
        catcher as *const () as libc::sighandler_t
    };
    let mut flags = libc::SA_SIGINFO;
    if restart {
        flags |= libc::SA_RESTART;
    }
    // SAFETY: sigaction is plain data; `catcher` only touches atomics and calls write(2), which is
    // async-signal-safe; `sig` is a catchable signal (checked above).
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = action;
        sa.sa_flags = flags;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut());
    }
}

/// Creates the eventfd the catcher writes (above the guest's fds) and returns it.
pub fn open_event(fd_floor: i32) -> io::Result<i32> {
    let old = EVENT_FD.load(Ordering::Acquire);
    if old >= 0 {
        return Ok(old);
    }
    // SAFETY: eventfd creates a new descriptor; no pointers are involved.
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let high = crate::sys::move_fd_high(fd, fd_floor)?;
    // SAFETY: `fd` was created above and is not used elsewhere.
    unsafe { libc::close(fd) };
    match EVENT_FD.compare_exchange(-1, high, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Ok(high),
        Err(other) => {
            // SAFETY: `high` was created above and lost the race; nobody else has it.
            unsafe { libc::close(high) };
            Ok(other)
        }
    }
}

/// In a forked child: stop using the parent's eventfd (its pump would read the child's events);
/// the next [`open_event`] makes the child's own.
pub fn forget_event() {
    let fd = EVENT_FD.swap(-1, Ordering::AcqRel);
    if fd >= 0 {
        // SAFETY: the child's copy of the descriptor is closed; the parent keeps its own.
        unsafe { libc::close(fd) };
    }
}

/// Blocks until the catcher or [`poke`] writes the eventfd; returns false on an error.
pub fn wait_event(fd: i32) -> bool {
    let mut v = 0u64;
    // SAFETY: reads 8 bytes into `v`, as an eventfd read requires.
    let r = unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) };
    r == 8 || io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
}

/// Wakes the pump (to stop it).
pub fn poke(fd: i32) {
    let one = 1u64;
    // SAFETY: writes 8 valid bytes to an eventfd.
    unsafe { libc::write(fd, (&one as *const u64).cast(), 8) };
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
