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
//!
//! Every instance is kept with its whole siginfo (issue #14): the catcher appends it to a ring the
//! pump drains, so real-time signals queue — each sigqueue value, each timer expiry — and reach
//! the guest in the order the host delivered them. To keep that order, the signals the guest may
//! take are blocked in every VMM thread but the pump's ([`block_in_this_thread`] before the VMM
//! starts its threads, [`unblock_in_this_thread`] in the pump), so the host hands them to one
//! thread, one after the other. (The fault signals are not blocked: a VMM fault must still be
//! raised on its thread.)

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};

/// Instances the ring holds between two drains of the pump.
const RING: usize = 1024;

/// One caught instance: the signal (0: empty) and its siginfo as 16 words.
struct Record {
    sig: AtomicU64,
    info: [AtomicU64; 16],
}

impl Record {
    const fn new() -> Self {
        Record {
            sig: AtomicU64::new(0),
            info: [const { AtomicU64::new(0) }; 16],
        }
    }
}

/// Caught instances: the catcher writes at HEAD, the pump reads from TAIL (both only grow).
static RECORDS: [Record; RING] = [const { Record::new() }; RING];
static HEAD: AtomicU64 = AtomicU64::new(0);
static TAIL: AtomicU64 = AtomicU64::new(0);
/// Held by a catcher while it appends (catchers run with every signal blocked, so one never
/// interrupts another on its own thread; across threads the wait is a few stores).
static APPENDING: AtomicBool = AtomicBool::new(false);
/// Signals caught while the ring was full (bit sig-1): delivered without their siginfo.
static OVERFLOW: AtomicU64 = AtomicU64::new(0);
/// The eventfd the catcher writes (−1 before the first machine starts).
static EVENT_FD: AtomicI32 = AtomicI32::new(-1);

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
    let words = unsafe { info.as_ref() }.map(crate::sys::siginfo_words);
    while APPENDING.swap(true, Ordering::Acquire) {
        std::hint::spin_loop();
    }
    let head = HEAD.load(Ordering::Relaxed);
    match words {
        Some(w) if head - TAIL.load(Ordering::Acquire) < RING as u64 => {
            let r = &RECORDS[(head % RING as u64) as usize];
            r.sig.store(s as u64, Ordering::Relaxed);
            for (slot, v) in r.info.iter().zip(w) {
                slot.store(v, Ordering::Relaxed);
            }
            HEAD.store(head + 1, Ordering::Release);
        }
        _ => {
            OVERFLOW.fetch_or(1 << (s - 1), Ordering::AcqRel);
        }
    }
    APPENDING.store(false, Ordering::Release);
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

/// Catches glibc's internal signal `sig` (32, SIGTIMER, with which glibc's SIGEV_THREAD timers
/// wake their helper thread) for the guest: such a timer signals the pump's thread alone
/// (`syscall/sigqueue.rs`), and the VMM itself never uses the signal (it never cancels threads).
pub fn catch_internal(sig: i32) {
    static DONE: AtomicU64 = AtomicU64::new(0);
    let b = 1u64 << (sig - 1);
    if DONE.fetch_or(b, Ordering::AcqRel) & b == 0
        && !crate::sys::set_internal_signal_action(sig, catcher as *const () as libc::sighandler_t)
    {
        DONE.fetch_and(!b, Ordering::AcqRel);
    }
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
            if HEAD.load(Ordering::Acquire) != TAIL.load(Ordering::Acquire)
                || OVERFLOW.load(Ordering::Acquire) != 0
            {
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
    // Instances the parent caught are the parent's (fork clears a child's pending signals).
    TAIL.store(HEAD.load(Ordering::Acquire), Ordering::Release);
    OVERFLOW.store(0, Ordering::Release);
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

/// Takes the caught instances, in the order they were caught: (signal, its siginfo as 16 words;
/// all zero — SI_USER from nobody — for an instance the full ring could not hold).
pub fn take() -> Vec<(u64, [u64; 16])> {
    let (tail, head) = (TAIL.load(Ordering::Relaxed), HEAD.load(Ordering::Acquire));
    let mut out: Vec<(u64, [u64; 16])> = (tail..head)
        .map(|k| {
            let r = &RECORDS[(k % RING as u64) as usize];
            let mut w = [0u64; 16];
            for (v, slot) in w.iter_mut().zip(&r.info) {
                *v = slot.load(Ordering::Relaxed);
            }
            (r.sig.load(Ordering::Relaxed), w)
        })
        .collect();
    TAIL.store(head, Ordering::Release);
    let lost = OVERFLOW.swap(0, Ordering::AcqRel);
    out.extend(
        (1..=64u64)
            .filter(|s| lost & (1 << (s - 1)) != 0)
            .map(|s| (s, [0u64; 16])),
    );
    out
}

/// The signals the guest may take through the VMM (those [`follow`] may catch), as a host set.
fn guest_set() -> libc::sigset_t {
    crate::sys::sigset_of((1..=64).filter(|&s| followable(s)))
}

/// Blocks the signals the guest may take in the calling thread — and so in every thread it
/// starts afterwards — so the host hands them to the pump's thread alone. Returns the mask to
/// put back with [`restore_mask`] when the machine is done.
pub fn block_in_this_thread() -> libc::sigset_t {
    crate::sys::change_mask(libc::SIG_BLOCK, &guest_set())
}

/// In the pump's thread: takes the signals [`block_in_this_thread`] blocked.
pub fn unblock_in_this_thread() {
    crate::sys::change_mask(libc::SIG_UNBLOCK, &guest_set());
}

/// Puts back the calling thread's mask from before [`block_in_this_thread`].
pub fn restore_mask(old: &libc::sigset_t) {
    crate::sys::change_mask(libc::SIG_SETMASK, old);
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
