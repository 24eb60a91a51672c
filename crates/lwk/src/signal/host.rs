//! Signals sent to the VMM process on behalf of the guest. The VMM catches every signal the guest
//! handles, and every signal whose default action would end the guest (so that the LWK applies the
//! guest's mask and disposition, interrupts a blocking delegated call, and the run ends by that
//! signal with its profile written); the catcher only records it and writes an eventfd. The
//! machine's signal pump (`machine.rs`) then queues it for the guest and kicks the vCPU, or the
//! host thread serving its call. Signals the guest ignores — explicitly, or by default (SIGCHLD,
//! SIGWINCH, SIGURG) — are ignored (or left to their default) by the VMM too, and the stop signals
//! keep their default action, which stops the VMM as it would stop the program. The catcher is
//! installed with SA_RESTART: whether a guest call is interrupted is the LWK's decision
//! (`syscall/interrupt.rs`), never a side effect of where the host signal landed.
//!
//! The synchronous faults SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGTRAP are the VMM's own when the
//! kernel raises them (si_code > 0: a fault of the VMM, handled as before it was caught — by the
//! previous handler, Rust's stack-overflow report, or the default action); when another process
//! sends one (kill, tgkill, sigqueue: si_code ≤ 0) it is the guest's, like any other signal.
//!
//! Never caught: SIGKILL/SIGSTOP (impossible), SIGUSR2 (kicks VMM threads), SIGPIPE (the VMM
//! ignores it; the LWK raises the guest's SIGPIPE from EPIPE itself), and 32/33 (glibc's).

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
/// (`_restart`, the guest's SA_RESTART, is applied by the LWK when it interrupts a call.)
pub fn follow(sig: i32, handler: u64, _restart: bool) {
    if !followable(sig) {
        return;
    }
    let dfl = handler == libc::SIG_DFL as u64;
    let action = if handler == libc::SIG_IGN as u64 || dfl && crate::signal::default_ignored(sig as u64) {
        handler as libc::sighandler_t
    } else {
        // Only touches atomics and writes an eventfd: async-signal-safe.
        catcher as *const () as libc::sighandler_t
    };
    crate::sys::set_signal_action(sig, action, libc::SA_RESTART);
}

/// The signals the VMM raises itself as synchronous faults.
const FAULTS: [i32; 5] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGILL,
    libc::SIGFPE,
    libc::SIGTRAP,
];

/// The handlers the fault signals had before [`catch_sent_faults`] (index: position in FAULTS).
static PREVIOUS: std::sync::OnceLock<[libc::sigaction; 5]> = std::sync::OnceLock::new();

/// The catcher of the fault signals: sent by another process, the guest's; raised by the kernel,
/// a fault of the VMM itself, handed to what handled it before.
extern "C" fn fault_catcher(sig: libc::c_int, info: *mut libc::siginfo_t, uc: *mut libc::c_void) {
    // SAFETY: the kernel passes an SA_SIGINFO handler a valid siginfo (or null), alive for the
    // whole handler.
    let code = unsafe { info.as_ref() }.map(|i| i.si_code);
    if code.is_some_and(|c| c <= 0) {
        // SI_USER, SI_QUEUE, SI_TKILL…: another process sent it.
        catcher(sig, info, uc);
        return;
    }
    let previous = FAULTS
        .iter()
        .position(|&f| f == sig)
        .and_then(|k| PREVIOUS.get().map(|p| p[k]));
    match previous {
        Some(old) if old.sa_sigaction != libc::SIG_DFL && old.sa_sigaction != libc::SIG_IGN => {
            crate::sys::call_signal_handler(&old, sig, info, uc)
        }
        // Back to the default action: the faulting instruction runs again and the VMM dies of it.
        _ => crate::sys::set_signal_action(sig, libc::SIG_DFL, 0),
    }
}

/// Catches SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGTRAP so that those sent by another process reach
/// the guest (its handler, or its default action: the run ends by that signal); the VMM's own
/// faults keep their previous handling. Idempotent.
pub fn catch_sent_faults() {
    if PREVIOUS.get().is_some() {
        return;
    }
    let old = FAULTS.map(crate::sys::signal_action);
    if PREVIOUS.set(old).is_ok() {
        for sig in FAULTS {
            // SA_ONSTACK: a stack overflow of a VMM thread still reaches Rust's report.
            crate::sys::set_signal_action(
                sig,
                fault_catcher as *const () as libc::sighandler_t,
                libc::SA_RESTART | libc::SA_ONSTACK,
            );
        }
    }
}

/// True when the VMM inherited SIG_IGN for `sig` (a program started with it ignored — nohup, a
/// background job of a non-interactive shell — keeps it ignored across exec).
pub fn inherited_ignore(sig: i32) -> bool {
    followable(sig) && crate::sys::signal_action(sig).sa_sigaction == libc::SIG_IGN
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
        Ok(_) => {
            if PENDING.load(Ordering::Acquire) != 0 {
                // Caught before there was an eventfd to write: the pump takes them first thing.
                poke(high);
            }
            Ok(high)
        }
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
