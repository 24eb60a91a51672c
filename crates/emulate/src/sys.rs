//! The raw system-call layer of the emulator: the exempt `syscall` site and what the `proxy`
//! mechanism's child does through it, fork and exec, seccomp filter installation and the
//! user-notification ioctls, children pinned before exec. Every other module is safe code.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

// A `syscall` instruction at a known address: the seccomp filter lets calls from here through, so
// the launcher can send the listener and exec after the filter is installed without being trapped.
// C ABI: rdi = nr, rsi/rdx/rcx = args 1–3; returns rax.
std::arch::global_asm!(
    ".text",
    ".globl multios_exempt_syscall3",
    ".type multios_exempt_syscall3,@function",
    "multios_exempt_syscall3:",
    "mov rax, rdi",
    "mov rdi, rsi",
    "mov rsi, rdx",
    "mov rdx, rcx",
    "syscall",
    ".globl multios_exempt_syscall3_ret",
    "multios_exempt_syscall3_ret:",
    "ret",
);

extern "C" {
    fn multios_exempt_syscall3(nr: i64, a1: u64, a2: u64, a3: u64) -> i64;
    static multios_exempt_syscall3_ret: u8;
}

/// The instruction address the kernel reports for calls made through [`exempt_syscall3`].
pub fn exempt_ip() -> u64 {
    std::ptr::addr_of!(multios_exempt_syscall3_ret) as u64
}

/// A three-argument system call from the exempt site. Returns the raw result (negative errno).
///
/// # Safety
/// The caller must pass arguments valid for system call `nr`.
unsafe fn exempt_syscall3(nr: i64, a1: u64, a2: u64, a3: u64) -> i64 {
    // SAFETY: forwarded to the caller's contract.
    unsafe { multios_exempt_syscall3(nr, a1, a2, a3) }
}

/// Installs `prog` as a seccomp filter on the calling thread and returns the notification listener.
/// Sets no_new_privs first when not root (the kernel requires one of the two).
pub fn install_listener(prog: &[libc::sock_filter]) -> io::Result<RawFd> {
    let fprog = libc::sock_fprog {
        len: prog.len() as u16,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: geteuid/prctl take no pointers.
    unsafe {
        if libc::geteuid() != 0 && libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    let install = |flags: libc::c_ulong| {
        // SAFETY: `fprog` points to `prog`, which outlives the call; the kernel copies the program.
        unsafe {
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                flags,
                &fprog as *const libc::sock_fprog,
            )
        }
    };
    // WAIT_KILLABLE_RECV (Linux 5.19): once the supervisor has received a notification, only a
    // fatal signal interrupts the caller's wait. Without it a handler of the program that ran
    // during the f_c spins made the call fail with EINTR (getppid returned -4 in a Python
    // program with an alarm), or restarted it (SA_RESTART) with a new notification and a new
    // 2·f_c each time — for ever with a timer faster than 2·f_c. An older kernel refuses the flag
    // (EINVAL): the filter is then installed without it, with the old behaviour.
    let mut fd = install(libc::SECCOMP_FILTER_FLAG_NEW_LISTENER | WAIT_KILLABLE_RECV);
    if fd < 0 && io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
        fd = install(libc::SECCOMP_FILTER_FLAG_NEW_LISTENER);
    }
    if fd < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(fd as RawFd)
    }
}

/// SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (Linux 5.19+; not in every libc crate version).
const WAIT_KILLABLE_RECV: libc::c_ulong = 1 << 5;

/// Sends `fd` over the unix socket `sock` with SCM_RIGHTS, from the exempt site.
pub fn send_fd_exempt(sock: RawFd, fd: RawFd) -> io::Result<()> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut cbuf = [0u64; 4]; // CMSG_SPACE(sizeof(int)) = 24 bytes, 8-aligned
                              // SAFETY: a zeroed msghdr is valid; the pointers set below point to live locals.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE is a pure computation.
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) } as usize;
    // SAFETY: msg_control points to a buffer of msg_controllen bytes, so the first header fits.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_SOCKET;
        (*c).cmsg_type = libc::SCM_RIGHTS;
        (*c).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as usize;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<RawFd>(), fd);
    }
    // SAFETY: `msg` and everything it points to are valid for the call.
    let r = unsafe { exempt_syscall3(libc::SYS_sendmsg, sock as u64, &msg as *const _ as u64, 0) };
    if r < 0 {
        Err(io::Error::from_raw_os_error(-r as i32))
    } else {
        Ok(())
    }
}

/// Receives one fd sent with SCM_RIGHTS on `sock`.
pub fn recv_fd(sock: RawFd) -> io::Result<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut cbuf = [0u64; 4];
    // SAFETY: a zeroed msghdr is valid; the pointers set below point to live locals.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&cbuf);
    // SAFETY: `msg` points to live buffers of the stated sizes.
    let r = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if r <= 0 {
        return Err(if r == 0 {
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the launcher closed the socket before sending the listener",
            )
        } else {
            io::Error::last_os_error()
        });
    }
    // SAFETY: the kernel filled msg_control; CMSG_FIRSTHDR checks msg_controllen.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        if c.is_null() || (*c).cmsg_type != libc::SCM_RIGHTS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "no file descriptor in the message",
            ));
        }
        let fd = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<RawFd>());
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// A pending notification: the id and the system call number.
#[derive(Debug, Clone, Copy)]
pub struct Notif {
    pub id: u64,
    pub nr: i32,
}

/// What waiting on the listener found.
pub enum Ready {
    Notif,
    Hangup,
    Nothing,
}

/// One check of the listener: non-blocking when `timeout_ms` is 0, blocking when it is -1.
pub fn poll_listener(fd: RawFd, timeout_ms: i32) -> Ready {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let r = unsafe { libc::poll(&mut p, 1, timeout_ms) };
    if r <= 0 {
        Ready::Nothing
    } else if p.revents & libc::POLLIN != 0 {
        Ready::Notif
    } else if p.revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
        Ready::Hangup
    } else {
        Ready::Nothing
    }
}

/// Receives one notification (the caller saw the listener readable). `None` if it vanished.
pub fn recv_notif(fd: RawFd) -> io::Result<Option<Notif>> {
    // SAFETY: the kernel requires a zeroed seccomp_notif and fills it.
    let mut n: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    // SAFETY: `n` is a valid seccomp_notif for the RECV ioctl.
    let r = unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut n) };
    if r < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOENT) | Some(libc::EINTR) => Ok(None),
            _ => Err(e),
        };
    }
    Ok(Some(Notif {
        id: n.id,
        nr: n.data.nr,
    }))
}

/// Lets the notified call proceed in the caller's context.
pub fn send_continue(fd: RawFd, id: u64) -> io::Result<()> {
    let resp = libc::seccomp_notif_resp {
        id,
        val: 0,
        error: 0,
        flags: libc::SECCOMP_USER_NOTIF_FLAG_CONTINUE as u32,
    };
    // SAFETY: `resp` is a valid seccomp_notif_resp for the SEND ioctl.
    let r = unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_SEND, &resp) };
    if r < 0 {
        let e = io::Error::last_os_error();
        // ENOENT: the caller was killed or interrupted meanwhile; nothing to answer.
        if e.raw_os_error() != Some(libc::ENOENT) {
            return Err(e);
        }
    }
    Ok(())
}

/// A blocking `wait4` that retries on EINTR: the wait status and the CPU time (user + system, in
/// seconds) of the child and of the descendants it waited for.
pub fn wait_child(pid: libc::pid_t) -> io::Result<(libc::c_int, f64)> {
    let mut status = 0;
    loop {
        // SAFETY: a zeroed rusage is valid; both out-pointers are valid.
        let (r, ru) = unsafe {
            let mut ru: libc::rusage = std::mem::zeroed();
            (libc::wait4(pid, &mut status, 0, &mut ru), ru)
        };
        if r == pid {
            let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 * 1e-6;
            return Ok((status, t(ru.ru_utime) + t(ru.ru_stime)));
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// The cheapest system call: a round trip into the kernel, so that a reschedule pending on this
/// CPU is taken on the way back to user mode.
pub fn enter_kernel() {
    // SAFETY: getppid takes no arguments, touches no memory and cannot fail.
    unsafe { libc::syscall(libc::SYS_getppid) };
}

/// Puts the calling thread in the SCHED_IDLE class; false if refused.
pub fn set_sched_idle() -> bool {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) == 0 }
}

/// Puts the calling thread in SCHED_FIFO at `prio`; false if refused (not root).
pub fn set_fifo(prio: i32) -> bool {
    let param = libc::sched_param { sched_priority: prio };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0 }
}

/// Returns the calling thread to SCHED_OTHER.
pub fn set_other() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid sched_param; pid 0 is the calling thread.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
}

/// Bit `sig`: the signal was ignored (SIG_IGN) when multios started; bit 0: the record was taken.
static IGNORED_AT_START: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The signals whose inherited disposition is recorded: the forwarded ones and SIGPIPE.
const RECORDED_SIGNALS: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE];

extern "C" fn record_ignored() {
    let mut mask = 1u64;
    for sig in RECORDED_SIGNALS {
        // SAFETY: a zeroed sigaction is valid plain data; a null new action only reads the old.
        let ignored = unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
        };
        if ignored {
            mask |= 1 << sig;
        }
    }
    IGNORED_AT_START.store(mask, std::sync::atomic::Ordering::Relaxed);
}

// Run by the C library before `main`, so before Rust's runtime sets SIGPIPE to SIG_IGN (as
// `multios_host::stdio` records the closed standard streams). `#[used]` keeps the entry although
// nothing refers to it.
#[used]
#[link_section = ".init_array"]
static RECORD_IGNORED_BEFORE_MAIN: extern "C" fn() = record_ignored;

/// Whether `sig` (SIGINT, SIGTERM, SIGHUP or SIGPIPE) was ignored when the process started
/// (`nohup`, `trap "" INT`, a shell's background job); `None` without a record.
pub fn ignored_at_start(sig: libc::c_int) -> Option<bool> {
    let mask = IGNORED_AT_START.load(std::sync::atomic::Ordering::Relaxed);
    (mask & 1 != 0 && RECORDED_SIGNALS.contains(&sig)).then_some(mask & (1 << sig) != 0)
}

/// Gives the calling process (a child before exec) the SIGPIPE disposition multios inherited:
/// ignored if it was (`trap "" PIPE`, an ignoring parent), else the default, as std's `Command`
/// gives it (Rust's runtime ignores SIGPIPE in multios itself, and an ignored disposition
/// survives exec: under proxy `yes | head -1` exited 1 on EPIPE instead of dying by SIGPIPE).
/// Async-signal-safe.
pub fn inherited_sigpipe() {
    let h = if ignored_at_start(libc::SIGPIPE) == Some(true) {
        libc::SIG_IGN
    } else {
        libc::SIG_DFL
    };
    // SAFETY: signal is async-signal-safe; both dispositions are valid.
    unsafe { libc::signal(libc::SIGPIPE, h) };
}

/// The programs that SIGINT, SIGTERM and SIGHUP sent to multios are forwarded to (issue #16): one
/// slot per run in progress (tests run several at once), each with the signal it received.
const SLOTS: usize = 32;
static TARGETS: [std::sync::atomic::AtomicI32; SLOTS] =
    [const { std::sync::atomic::AtomicI32::new(0) }; SLOTS];
static CAUGHT: [std::sync::atomic::AtomicI32; SLOTS] =
    [const { std::sync::atomic::AtomicI32::new(0) }; SLOTS];
/// A signal that arrived while its slot's program was still being started (slot −1): forwarded by
/// [`Forward::arm`] once the pid is known.
static PENDING: [std::sync::atomic::AtomicI32; SLOTS] =
    [const { std::sync::atomic::AtomicI32::new(0) }; SLOTS];
static HANDLERS: std::sync::Once = std::sync::Once::new();
/// The signals forwarded to a running program.
pub const FORWARDED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

extern "C" fn forward(sig: libc::c_int, info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    use std::sync::atomic::Ordering::SeqCst;
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler (null checked anyway).
    let from_terminal = !info.is_null() && unsafe { (*info).si_code } == libc::SI_KERNEL;
    let mut any = false;
    for ((t, c), p) in TARGETS.iter().zip(CAUGHT.iter()).zip(PENDING.iter()) {
        let pid = t.load(SeqCst);
        if pid > 0 {
            c.store(sig, SeqCst);
            // A terminal's Ctrl-C (or hang-up) went to the whole foreground process group: a
            // program still in multios's group had it already (forwarding it made a Python
            // program take KeyboardInterrupt twice). Sent by a process, it is forwarded.
            // SAFETY: getpgid/getpgrp and kill are async-signal-safe; a pid already reaped at
            // worst gets ESRCH.
            unsafe {
                if !(from_terminal && libc::getpgid(pid) == libc::getpgrp()) {
                    libc::kill(pid, sig);
                }
            }
            any = true;
        } else if pid == -1 {
            // Its program is being started: kept for `arm`, which forwards it.
            c.store(sig, SeqCst);
            p.store(sig, SeqCst);
            any = true;
        }
    }
    if !any {
        // No program running: what the signal would have done without us (end multios).
        // SAFETY: signal and raise are async-signal-safe; SIG_DFL is a valid disposition.
        unsafe {
            libc::signal(sig, libc::SIG_DFL);
            libc::raise(sig);
        }
    }
}

/// While alive, [`FORWARDED`] signals sent to multios are forwarded to `pid` and recorded, so the
/// caller can wait for the program and still report (partially) what it did.
pub struct Forward {
    slot: Option<usize>,
}

impl Forward {
    /// Installs the handlers and reserves a slot before the program is started, so that a signal
    /// arriving while it starts is kept and forwarded by [`Forward::arm`] instead of ending
    /// multios (CI of 2026-11-27: `profile --backend inproc` died of a SIGINT sent right after its
    /// program wrote its pid, before `to` ran).
    pub fn prepare() -> Forward {
        Self::reserve()
    }

    /// Forwards to `pid` from now on, and the signal that came while it started, if any.
    pub fn arm(&self, pid: libc::pid_t) {
        use std::sync::atomic::Ordering::SeqCst;
        if let Some(i) = self.slot {
            TARGETS[i].store(pid, SeqCst);
            let early = PENDING[i].swap(0, SeqCst);
            if early != 0 {
                // SAFETY: kill only sends a signal; a pid already reaped at worst gets ESRCH.
                unsafe { libc::kill(pid, early) };
            }
        }
    }

    pub fn to(pid: libc::pid_t) -> Forward {
        let f = Self::reserve();
        f.arm(pid);
        f
    }

    fn reserve() -> Forward {
        use std::sync::atomic::Ordering::SeqCst;
        HANDLERS.call_once(|| {
            for sig in FORWARDED {
                // A signal ignored when multios started (nohup, `trap "" INT HUP`) stays ignored,
                // in multios and so in the program, which inherits it: a handler here made the
                // program's disposition the default one at exec.
                if ignored_at_start(sig).unwrap_or_else(|| currently_ignored(sig)) {
                    continue;
                }
                // SAFETY: a zeroed sigaction is valid plain data; the handler only touches atomics
                // and calls async-signal-safe functions. No SA_RESTART: waits see EINTR and retry.
                unsafe {
                    let mut sa: libc::sigaction = std::mem::zeroed();
                    sa.sa_sigaction = forward as *const () as usize;
                    sa.sa_flags = libc::SA_SIGINFO;
                    libc::sigaction(sig, &sa, std::ptr::null_mut());
                }
            }
        });
        // Reserved (-1: the handler keeps a signal for `arm`), cleared; `arm` sets the pid.
        let slot = (0..SLOTS).find(|&i| TARGETS[i].compare_exchange(0, -1, SeqCst, SeqCst).is_ok());
        if let Some(i) = slot {
            CAUGHT[i].store(0, SeqCst);
            PENDING[i].store(0, SeqCst);
        }
        Forward { slot }
    }

    /// The signal forwarded since [`Forward::to`], if any (the last one).
    pub fn caught(&self) -> Option<i32> {
        let s = CAUGHT[self.slot?].load(std::sync::atomic::Ordering::SeqCst);
        (s != 0).then_some(s)
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering::SeqCst;
        if let Some(i) = self.slot {
            TARGETS[i].store(0, SeqCst);
            // Never armed (the program did not start) and a signal came: what it would have done.
            let early = PENDING[i].swap(0, SeqCst);
            if early != 0 {
                // SAFETY: signal and raise are async-signal-safe; SIG_DFL is a valid disposition.
                unsafe {
                    libc::signal(early, libc::SIG_DFL);
                    libc::raise(early);
                }
            }
        }
    }
}

/// Whether `sig`'s disposition is SIG_IGN now.
fn currently_ignored(sig: libc::c_int) -> bool {
    // SAFETY: a zeroed sigaction is valid plain data; a null new action only reads the old.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// In a child before exec: SIGKILL it when the multios thread that started it ends (multios
/// killed with SIGKILL included), and if that already happened (the parent is no longer
/// `parent`), end now. Async-signal-safe.
pub fn die_with_parent(parent: libc::pid_t) -> io::Result<()> {
    match multios_host::process::die_with_parent(parent, libc::SIGKILL) {
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
            // SAFETY: _exit ends the child at once.
            unsafe { libc::_exit(127) }
        }
        r => r,
    }
}

/// Whether process `pid` exists (kill with signal 0; EPERM means it exists).
pub fn process_exists(pid: libc::pid_t) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Closes `fd` from the exempt site (in a child under the seccomp filter).
pub fn exempt_close(fd: RawFd) {
    // SAFETY: close takes no pointer; the caller gives up `fd`.
    unsafe { exempt_syscall3(libc::SYS_close, fd as u64, 0, 0) };
}

/// Writes `bytes` to `fd` from the exempt site; returns the raw result (bytes written or -errno).
pub fn exempt_write(fd: RawFd, bytes: &[u8]) -> i64 {
    // SAFETY: the kernel reads `bytes.len()` bytes from a live slice.
    unsafe {
        exempt_syscall3(
            libc::SYS_write,
            fd as u64,
            bytes.as_ptr() as u64,
            bytes.len() as u64,
        )
    }
}

/// Ends the process with `code` from the exempt site.
pub fn exempt_exit(code: i32) -> ! {
    // SAFETY: exit_group takes no pointer and does not return.
    unsafe { exempt_syscall3(libc::SYS_exit_group, code as u64, 0, 0) };
    // SAFETY: not reached (exit_group does not return); _exit ends the process at once.
    unsafe { libc::_exit(code) }
}

/// execve of `image` from the exempt site; returns only when it failed, with the negative errno.
pub fn exec_exempt(image: &multios_host::process::ExecImage) -> i64 {
    // SAFETY: `image` owns its path (a C string) and both NULL-terminated arrays of C strings,
    // which live as long as the borrow.
    unsafe {
        exempt_syscall3(
            libc::SYS_execve,
            image.path_ptr() as u64,
            image.argv_ptr() as u64,
            image.envp_ptr() as u64,
        )
    }
}

/// Forks; the child runs `child`, which should not return (it is ended with status 127 if it
/// does); the parent gets the child's pid.
///
/// `child` runs in a copy of a possibly multi-threaded process: it must only make
/// async-signal-safe calls on memory prepared before the fork (no allocation, no locks), as the
/// proxy launcher's child does (the raw calls of this module).
pub fn fork_child(child: impl FnOnce()) -> io::Result<libc::pid_t> {
    // SAFETY: the child only runs `child`, whose contract is above, and never returns into the
    // parent's code.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // The program starts with the SIGPIPE disposition multios inherited.
        inherited_sigpipe();
        child();
        // SAFETY: _exit ends the child at once, async-signal-safe.
        unsafe { libc::_exit(127) }
    }
    Ok(pid)
}

/// Makes `target` (0, 1 or 2) a copy of `fd` (dup2, async-signal-safe: for a forked child before
/// it execs; the copy does not close on exec).
pub fn dup_onto(fd: RawFd, target: RawFd) -> io::Result<()> {
    // SAFETY: dup2 takes two descriptor numbers and no pointer.
    if unsafe { libc::dup2(fd, target) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Changes the working directory to `dir` (chdir, async-signal-safe).
pub fn chdir(dir: &std::ffi::CStr) -> io::Result<()> {
    // SAFETY: `dir` is a NUL-terminated string that lives as long as the borrow.
    if unsafe { libc::chdir(dir.as_ptr()) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Reads at most `buf.len()` bytes from `fd`.
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: the kernel writes at most `buf.len()` bytes into the live, writable `buf`.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Makes `cmd`'s child, before it execs, die with multios (see [`die_with_parent`]; `parent` is
/// multios's pid), pin itself to `mask` and, with `fifo`, run SCHED_FIFO at that priority.
pub fn pin_before_exec(
    cmd: &mut std::process::Command,
    parent: libc::pid_t,
    mask: libc::cpu_set_t,
    fifo: Option<i32>,
) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure only calls signal, prctl, getppid, sched_setaffinity and
    // sched_setscheduler (async-signal-safe) on values computed before the fork.
    unsafe {
        cmd.pre_exec(move || {
            // std's Command made SIGPIPE the default; ignored if multios inherited it ignored.
            inherited_sigpipe();
            die_with_parent(parent)?;
            multios_host::cpus::pin_thread_to_mask(0, &mask)?;
            if let Some(prio) = fifo {
                set_fifo(prio);
            }
            Ok(())
        });
    }
}
