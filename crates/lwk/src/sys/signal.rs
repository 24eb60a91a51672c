//! Host signal dispositions and the siginfo the kernel hands a handler.

/// Sets the disposition of host signal `sig`: `action` is SIG_DFL, SIG_IGN or an SA_SIGINFO
/// handler, with an empty mask and `flags` (SA_SIGINFO is added).
pub fn set_signal_action(sig: i32, action: libc::sighandler_t, flags: i32) {
    // SAFETY: sigaction reads a fully initialised struct; the caller passes a catchable signal
    // and, for a handler, one that is async-signal-safe.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = action;
        sa.sa_flags = flags | libc::SA_SIGINFO;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut());
    }
}

/// The current disposition of host signal `sig`.
pub fn signal_action(sig: i32) -> libc::sigaction {
    // SAFETY: sigaction with a null new action only writes the old one into a zeroed struct of
    // the right type.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old);
        old
    }
}

/// Calls the handler of disposition `old` (not SIG_DFL/SIG_IGN) from a signal handler, as the
/// kernel would have: with (sig, info, context) for SA_SIGINFO handlers, (sig) otherwise.
pub fn call_signal_handler(
    old: &libc::sigaction,
    sig: libc::c_int,
    info: *mut libc::siginfo_t,
    uc: *mut libc::c_void,
) {
    if old.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: `old` was read with sigaction and is an installed SA_SIGINFO handler, so its
        // address is a function of this type; the arguments are those the kernel passed us.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(old.sa_sigaction) };
        f(sig, info, uc);
    } else {
        // SAFETY: as above, for a plain handler taking the signal number.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(old.sa_sigaction) };
        f(sig);
    }
}

/// The si_code, sender pid and sender uid of a signal handed to an SA_SIGINFO handler.
pub fn siginfo_sender(info: &libc::siginfo_t) -> (i32, i32, u32) {
    // SAFETY: si_pid/si_uid read the kill-style member of the siginfo union, which every sender
    // fills (0 otherwise); `info` is a valid reference.
    unsafe { (info.si_code, info.si_pid(), info.si_uid()) }
}

/// Installs `handler` for `sig` as a plain handler: no SA_SIGINFO, no SA_RESTART (a blocking call
/// the signal interrupts returns EINTR), an empty mask. `handler` must be async-signal-safe.
pub fn set_plain_handler(sig: i32, handler: extern "C" fn(libc::c_int)) {
    // SAFETY: a zeroed sigaction with a valid handler and an empty mask is a valid argument; the
    // caller passes an async-signal-safe handler.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut());
    }
}
