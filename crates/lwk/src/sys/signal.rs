//! Host signal dispositions and the siginfo the kernel hands a handler.

/// Sets the disposition of host signal `sig`: `action` is SIG_DFL, SIG_IGN or an SA_SIGINFO
/// handler, with `flags` (SA_SIGINFO is added); a handler runs with every signal blocked (so one
/// handler never interrupts another on its thread).
pub fn set_signal_action(sig: i32, action: libc::sighandler_t, flags: i32) {
    // SAFETY: sigaction reads a fully initialised struct; the caller passes a catchable signal
    // and, for a handler, one that is async-signal-safe.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = action;
        sa.sa_flags = flags | libc::SA_SIGINFO;
        libc::sigfillset(&mut sa.sa_mask);
        libc::sigaction(sig, &sa, std::ptr::null_mut());
    }
}

/// The 128 bytes of a siginfo, as 16 words (async-signal-safe: plain loads).
pub fn siginfo_words(info: &libc::siginfo_t) -> [u64; 16] {
    const { assert!(std::mem::size_of::<libc::siginfo_t>() == 128) };
    let p = (info as *const libc::siginfo_t).cast::<u64>();
    // SAFETY: `info` is a valid reference to a 128-byte siginfo_t (checked above), 8-byte aligned
    // as the kernel and libc lay it out, so 16 u64 reads stay inside it.
    std::array::from_fn(|k| unsafe { p.add(k).read() })
}

/// The host set holding `signals`.
pub fn sigset_of(signals: impl Iterator<Item = i32>) -> libc::sigset_t {
    // SAFETY: sigemptyset/sigaddset write into a sigset_t we own.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in signals {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// pthread_sigmask(`how`, `set`) for the calling thread; returns the previous mask.
pub fn change_mask(how: i32, set: &libc::sigset_t) -> libc::sigset_t {
    // SAFETY: both pointers are to valid sigset_t values we own.
    unsafe {
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(how, set, &mut old);
        old
    }
}

/// Raises `sig` on the calling thread with it unblocked there for the moment, so that the
/// kernel acts on it at once with the process's disposition (the default action of a stop
/// signal stops every thread of the process until SIGCONT); restores the thread's mask after.
pub fn raise_here_unblocked(sig: i32) {
    let set = sigset_of(std::iter::once(sig));
    let old = change_mask(libc::SIG_UNBLOCK, &set);
    // SAFETY: tgkill to this process's own calling thread; no memory is passed.
    unsafe {
        libc::syscall(libc::SYS_tgkill, libc::getpid(), libc::gettid(), sig);
    }
    change_mask(libc::SIG_SETMASK, &old);
}

/// How many real-time signals may wait in one pending set: the VMM's RLIMIT_SIGPENDING (soft),
/// as Linux bounds a user's queued signals; 1024 when it cannot be read.
pub fn sigpending_limit() -> usize {
    // SAFETY: getrlimit writes into the rlimit we own.
    unsafe {
        let mut r: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_SIGPENDING, &mut r) == 0 {
            return usize::try_from(r.rlim_cur).unwrap_or(usize::MAX).max(1);
        }
    }
    1024
}

/// The handler of host signal `sig`'s current disposition (SIG_DFL, SIG_IGN or a function) by the
/// raw rt_sigaction, which answers for glibc's internal signals 32 and 33 too (glibc's sigaction
/// refuses them); None when the kernel refuses `sig`.
pub fn signal_handler_raw(sig: i32) -> Option<u64> {
    let mut old = [0u64; 4];
    // SAFETY: no new action is given; `old` is a kernel-layout sigaction (handler, flags,
    // restorer, mask) we own, and the sigset size is the kernel's (8 bytes on x86-64).
    let r = unsafe { libc::syscall(libc::SYS_rt_sigaction, sig, 0usize, old.as_mut_ptr(), 8usize) };
    (r == 0).then_some(old[0])
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

/// Installs SA_SIGINFO `handler` (async-signal-safe) for one of glibc's internal signals (32),
/// with every signal blocked while it runs. glibc's sigaction refuses those signals, so this is
/// rt_sigaction itself, with the restorer glibc gave the VMM's SIGUSR2 handler.
pub fn set_internal_signal_action(sig: i32, handler: libc::sighandler_t) -> bool {
    let restorer = signal_action(libc::SIGUSR2)
        .sa_restorer
        .map_or(0, |f| f as usize as u64);
    if restorer == 0 {
        return false;
    }
    const SA_RESTORER: u64 = 0x0400_0000;
    // The kernel's struct sigaction on x86-64: handler, flags, restorer, mask.
    let act: [u64; 4] = [
        handler as u64,
        (libc::SA_SIGINFO | libc::SA_RESTART) as u64 | SA_RESTORER,
        restorer,
        !0,
    ];
    // SAFETY: `act` is a valid kernel sigaction that lives through the call; the old action is
    // not asked for; the handler is async-signal-safe (the caller's promise).
    let r = unsafe { libc::syscall(libc::SYS_rt_sigaction, sig, act.as_ptr(), 0usize, 8usize) };
    r == 0
}

/// timer_create(clock, ev, id_at) with the sigevent `ev` in VMM memory; the timer id is written
/// to `id_at` (a checked, writable guest address). Linux's return convention.
pub fn timer_create(clock: i32, ev: &[u8; 64], id_at: u64) -> i64 {
    // SAFETY: `ev` is a 64-byte sigevent we own for the call; `id_at` is a guest address the
    // caller checked to be writable, in memory this process owns and holds no references into.
    let r = unsafe { libc::syscall(libc::SYS_timer_create, clock, ev.as_ptr(), id_at) };
    if r == -1 {
        -(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO) as i64)
    } else {
        r
    }
}

/// A non-blocking, close-on-exec signalfd for the signals of `set` (which the caller keeps
/// blocked in every thread).
pub fn signalfd(set: &libc::sigset_t) -> std::io::Result<i32> {
    // SAFETY: `set` is a valid sigset_t; -1 asks for a new descriptor.
    let fd = unsafe { libc::signalfd(-1, set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fd)
}

/// Reads the pending signals of signalfd `fd` (at most 32), each a 128-byte
/// `struct signalfd_siginfo`; none when there are none (EAGAIN).
pub fn read_signalfd(fd: i32) -> Vec<[u8; 128]> {
    let mut buf = [0u8; 128 * 32];
    // SAFETY: reads at most `buf.len()` bytes into a live local buffer.
    let r = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if r <= 0 {
        return Vec::new();
    }
    buf[..r as usize]
        .chunks_exact(128)
        .map(|c| {
            let mut one = [0u8; 128];
            one.copy_from_slice(c);
            one
        })
        .collect()
}

/// Waits until `a` or `b` is readable (EINTR counts as a wake-up); false on another error.
pub fn wait_readable(a: i32, b: i32) -> bool {
    let mut fds = [
        libc::pollfd {
            fd: a,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: b,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: `fds` is a live array of two pollfd structs, the count passed.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
    r >= 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
}

/// glibc's own signals 32 and 33 that the VMM inherited ignored (bit s-1), recorded by
/// [`remember_glibc_signals`] before glibc in the VMM may install its handlers.
static GLIBC_IGNORED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();

/// Records which of glibc's signals 32 and 33 the VMM inherited ignored: a guest cannot change
/// them, so a program it execs on Linux inherits them as a native one would (`exec_on_host`).
pub fn remember_glibc_signals() {
    GLIBC_IGNORED.get_or_init(|| {
        // Raw rt_sigaction: glibc's sigaction refuses these two.
        [32, 33].iter().fold(0u64, |m, &sig| {
            let mut old = [0usize; 4];
            // SAFETY: a null new action only reads the disposition into `old`, a buffer of the
            // kernel's sigaction size (handler, flags, restorer, 8-byte mask).
            let r = unsafe {
                libc::syscall(
                    libc::SYS_rt_sigaction,
                    sig,
                    std::ptr::null::<u8>(),
                    old.as_mut_ptr(),
                    8,
                )
            };
            if r == 0 && old[0] == libc::SIG_IGN {
                m | (1 << (sig - 1))
            } else {
                m
            }
        })
    });
}

/// The set recorded by [`remember_glibc_signals`].
pub fn glibc_signals_ignored() -> u64 {
    GLIBC_IGNORED.get().copied().unwrap_or(0)
}
