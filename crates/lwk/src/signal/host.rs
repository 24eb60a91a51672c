//! Signals sent to the VMM process on behalf of the guest. The VMM catches every signal the guest
//! handles, and every signal whose default action would end the guest (so that the LWK applies the
//! guest's mask and disposition, interrupts a blocking delegated call, and the run ends by that
//! signal with its profile written); the catcher only records it and writes an eventfd. The
//! machine's signal pump (`machine.rs`) then queues it for the guest and kicks the vCPU, or the
//! host thread serving its call. Signals the guest ignores — explicitly, or by default (SIGCHLD,
//! SIGWINCH, SIGURG) — are ignored (or left to their default) by the VMM too, and the stop signals
//! keep their default action: the pump takes them (blocked in every thread) and the LWK stops the
//! VMM process with the same signal when the guest's action is the default one. The catcher is
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
//! Every instance is kept with its whole siginfo (issue #14), so real-time signals queue — each
//! sigqueue value, each timer expiry — and reach the guest in the order the host sends them. The
//! signals the guest may take are blocked in every VMM thread ([`block_in_this_thread`] before
//! the VMM starts its threads) and the pump reads them from a signalfd ([`open_signalfd`],
//! [`take`]): one reader, in the host's order, and at its own pace — a timer firing faster than
//! the guest takes its signals is coalesced by the host (overruns) instead of running a handler
//! in the VMM per expiry (a handler per expiry of stress-ng's 100 kHz timer kept the pump thread
//! busy forever). The catcher stays the disposition, for what reaches a thread that does not
//! block the signal and for the signals that cannot be blocked everywhere — the fault signals
//! another process sends (a VMM fault must still be raised on its thread) and glibc's signal 32
//! — and appends those to a ring the pump drains with the signalfd.

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
/// The signalfd the pump reads the guest's signals from (−1: none, the pump unblocks them).
static SIGNAL_FD: AtomicI32 = AtomicI32::new(-1);

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

/// Makes the VMM follow the guest's disposition `handler` (with sa_flags `flags`) for `sig` (see
/// the module comment). The guest's SA_RESTART is applied by the LWK when it interrupts a call;
/// of the flags only SIGCHLD's SA_NOCLDSTOP and SA_NOCLDWAIT are the host's to apply: the guest's
/// children are the VMM's, so the host then sends no SIGCHLD when one stops or continues, and
/// reaps them itself (wait gives ECHILD) — as SIG_IGN of SIGCHLD, followed as it is, does.
pub fn follow(sig: i32, handler: u64, flags: u64) {
    if !followable(sig) {
        return;
    }
    let child_flags = if sig == libc::SIGCHLD {
        (flags & (libc::SA_NOCLDSTOP | libc::SA_NOCLDWAIT) as u64) as i32
    } else {
        0
    };
    let dfl = handler == libc::SIG_DFL as u64;
    let kept = crate::signal::default_ignored(sig as u64) || crate::signal::stop_signal(sig as u64);
    let action = if handler == libc::SIG_IGN as u64 || dfl && kept {
        handler as libc::sighandler_t
    } else {
        // Only touches atomics and writes an eventfd: async-signal-safe.
        catcher as *const () as libc::sighandler_t
    };
    crate::sys::set_signal_action(sig, action, libc::SA_RESTART | child_flags);
}

/// Stops the VMM process as the default action of stop signal `sig` stops a program, and
/// returns once it is continued. `sig` is raised on this thread, unblocked here for the moment,
/// with the VMM's action for it left at the default (`follow`): the kernel applies its own rules
/// (a process group without a parent in the session does not stop for SIGTSTP, SIGTTIN and
/// SIGTTOU), and the parent's wait sees the program stopped by `sig`.
pub fn stop_like_the_program(sig: i32) {
    crate::sys::raise_here_unblocked(sig);
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
    // SAFETY: `uc` is the context the kernel passed this SA_SIGINFO handler.
    if (sig == libc::SIGSEGV || sig == libc::SIGBUS) && unsafe { crate::usercopy::recover(uc) } {
        // A copy to or from guest memory the host refused: the copy fails (EFAULT), the VMM lives.
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
/// faults keep their previous handling, except one in a copy to or from guest memory
/// (`usercopy.rs`), which fails instead. Idempotent.
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
/// background job of a non-interactive shell, a parent ignoring SIGPIPE — keeps it ignored across
/// exec): from the dispositions at start (`inherited.rs`), every signal but SIGKILL and SIGSTOP.
pub fn inherited_ignore(sig: i32) -> bool {
    if sig == libc::SIGKILL || sig == libc::SIGSTOP {
        return false;
    }
    match crate::signal::inherited::ignored_at_start(sig) {
        Some(ignored) => ignored,
        None => followable(sig) && crate::sys::signal_action(sig).sa_sigaction == libc::SIG_IGN,
    }
}

/// Creates the eventfd the catcher writes (above the guest's fds) and returns it.
pub fn open_event(fd_floor: i32) -> io::Result<i32> {
    let old = EVENT_FD.load(Ordering::Acquire);
    if old >= 0 {
        return Ok(old);
    }
    let high = crate::sys::create_high(fd_floor, crate::sys::eventfd)?;
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
    let sfd = SIGNAL_FD.swap(-1, Ordering::AcqRel);
    if sfd >= 0 {
        crate::sys::close(sfd);
    }
    // Instances the parent caught are the parent's (fork clears a child's pending signals).
    TAIL.store(HEAD.load(Ordering::Acquire), Ordering::Release);
    OVERFLOW.store(0, Ordering::Release);
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

/// Opens the signalfd of the guest's signals (kept blocked in every VMM thread), above the
/// guest's fds; on failure the pump takes them with the catcher instead (it unblocks them).
pub fn open_signalfd(fd_floor: i32) -> io::Result<i32> {
    let high = crate::sys::create_high(fd_floor, || crate::sys::signalfd(&guest_set()))?;
    let old = SIGNAL_FD.swap(high, Ordering::AcqRel);
    if old >= 0 {
        crate::sys::close(old);
    }
    Ok(high)
}

/// Blocks until the pump has something to do: a signal on the signalfd, or the eventfd written
/// (the catcher, [`poke`], [`nudge`]); false on an error.
pub fn wait_event(fd: i32) -> bool {
    let sfd = SIGNAL_FD.load(Ordering::Acquire);
    if sfd < 0 {
        return crate::sys::eventfd_wait(fd);
    }
    if !crate::sys::wait_readable(fd, sfd) {
        return false;
    }
    // Reset the eventfd if it was written (non-blocking: it may not have been).
    crate::sys::eventfd_drain(fd);
    true
}

/// The siginfo (16 words, `siginfo_t`'s layout) of a `struct signalfd_siginfo`, by the layout
/// Linux gives the signal's si_code (kernel/signal.c, `siginfo_layout`).
pub fn from_signalfd(s: &[u8; 128]) -> (u64, [u64; 16]) {
    let u32_at = |o: usize| u32::from_le_bytes([s[o], s[o + 1], s[o + 2], s[o + 3]]);
    let u64_at = |o: usize| u64::from_le_bytes(s[o..o + 8].try_into().unwrap_or_default());
    let (signo, code) = (u32_at(0), u32_at(8) as i32);
    let (pid, uid, tid, band, overrun) = (u32_at(12), u32_at(16), u32_at(24), u32_at(28), u32_at(32));
    let (fd, status, ptr) = (u32_at(20), u32_at(40), u64_at(48));
    let pair = |lo: u32, hi: u32| u64::from(lo) | (u64::from(hi) << 32);
    let mut w = [0u64; 16];
    w[0] = pair(signo, u32_at(4));
    w[1] = u64::from(code as u32);
    match code {
        crate::signal::SI_TIMER => {
            w[2] = pair(tid, overrun);
            w[3] = ptr;
        }
        // SIGPOLL: si_band, si_fd.
        c if c > 0 && signo == libc::SIGPOLL as u32 => {
            w[2] = u64::from(band);
            w[3] = u64::from(fd);
        }
        c if c > 0 && signo == libc::SIGCHLD as u32 => {
            w[2] = pair(pid, uid);
            w[3] = u64::from(status);
            w[4] = u64_at(56);
            w[5] = u64_at(64);
        }
        c if c == crate::signal::SI_USER || c > 0 => w[2] = pair(pid, uid),
        // SI_QUEUE, SI_TKILL, SI_MESGQ…: pid, uid and the value.
        _ => {
            w[2] = pair(pid, uid);
            w[3] = ptr;
        }
    }
    (u64::from(signo), w)
}

/// Takes the pending instances: those on the signalfd (in the host's order), then those the
/// catcher caught: (signal, its siginfo as 16 words; all zero — SI_USER from nobody — for an
/// instance the full ring could not hold).
pub fn take() -> Vec<(u64, [u64; 16])> {
    let sfd = SIGNAL_FD.load(Ordering::Acquire);
    let mut out: Vec<(u64, [u64; 16])> = if sfd >= 0 {
        crate::sys::read_signalfd(sfd).iter().map(from_signalfd).collect()
    } else {
        Vec::new()
    };
    let (tail, head) = (TAIL.load(Ordering::Relaxed), HEAD.load(Ordering::Acquire));
    out.extend((tail..head).map(|k| {
        let r = &RECORDS[(k % RING as u64) as usize];
        let mut w = [0u64; 16];
        for (v, slot) in w.iter_mut().zip(&r.info) {
            *v = slot.load(Ordering::Relaxed);
        }
        (r.sig.load(Ordering::Relaxed), w)
    }));
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
    fn signalfd_records_become_the_siginfo_linux_gives_a_handler() {
        let mut s = [0u8; 128];
        let put = |s: &mut [u8; 128], o: usize, v: u32| s[o..o + 4].copy_from_slice(&v.to_le_bytes());
        // A timer's expiry: si_timerid 3, si_overrun 5, si_value 42.
        put(&mut s, 0, 34);
        put(&mut s, 8, crate::signal::SI_TIMER as u32);
        put(&mut s, 24, 3);
        put(&mut s, 32, 5);
        s[48..56].copy_from_slice(&42u64.to_le_bytes());
        let (sig, w) = from_signalfd(&s);
        assert_eq!((sig, w[1] as u32 as i32, w[2], w[3]), (34, -2, 3 | (5 << 32), 42));
        // sigqueue from pid 7, uid 0, value 9.
        let mut q = [0u8; 128];
        put(&mut q, 0, 40);
        put(&mut q, 8, crate::signal::SI_QUEUE as u32);
        put(&mut q, 12, 7);
        q[48..56].copy_from_slice(&9u64.to_le_bytes());
        let (_, w) = from_signalfd(&q);
        let info = crate::signal::SigInfo::from_host(&w);
        assert_eq!((info.code, info.pid, info.fields.map(|f| f[1])), (-1, 7, Some(9)));
        // SIGCHLD: pid, status at 24.
        let mut c = [0u8; 128];
        put(&mut c, 0, libc::SIGCHLD as u32);
        put(&mut c, 8, 1); // CLD_EXITED
        put(&mut c, 12, 99);
        put(&mut c, 40, 3);
        let (_, w) = from_signalfd(&c);
        assert_eq!((w[2] as u32, w[3]), (99, 3));
    }

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
