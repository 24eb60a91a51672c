//! The raw system calls the profiler needs that neither std nor nix wraps, and the forked child
//! that waits to exec the target (it may only make raw, async-signal-safe calls).

use crate::spawn::PreExec;
use multios_host::process::ExecImage;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// A system call number that no x86_64 kernel implements (the 335–423 gap): the "null" call used
/// to calibrate, it does nothing but enter and leave the kernel.
pub const NULL_SYSCALL: libc::c_long = 400;

/// `PIDFD_THREAD` (Linux 6.9): a pidfd for one thread rather than a thread-group leader.
const PIDFD_THREAD: libc::c_uint = libc::O_EXCL as libc::c_uint;

/// Issues the null system call once; returns what the kernel said (−ENOSYS).
#[inline]
pub fn null_syscall() -> libc::c_long {
    // SAFETY: an unimplemented system call number takes no arguments and touches no memory.
    unsafe { libc::syscall(NULL_SYSCALL) }
}

/// The calling thread's id.
pub fn gettid() -> u32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::syscall(libc::SYS_gettid) as u32 }
}

/// A pidfd for task `tid`; `thread` asks for a per-thread pidfd (needed unless `tid` is a
/// thread-group leader).
pub fn pidfd_open(tid: u32, thread: bool) -> std::io::Result<OwnedFd> {
    let flags = if thread { PIDFD_THREAD } else { 0 };
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or −1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, tid as libc::pid_t, flags) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor to us and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// CLOCK_MONOTONIC in ns: the clock `bpf_ktime_get_ns` reads.
pub use multios_host::time::monotonic_ns;

static FORWARD_TO: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);
static INTERRUPTED: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

extern "C" fn forward(sig: libc::c_int) {
    // A SIGALRM (a wake-up) never hides a real interruption.
    if sig != libc::SIGALRM || INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) == 0 {
        INTERRUPTED.store(sig, std::sync::atomic::Ordering::SeqCst);
    }
    if sig == libc::SIGALRM {
        return;
    }
    let pid = FORWARD_TO.load(std::sync::atomic::Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe; a stale pid at worst gets ESRCH.
        unsafe { libc::kill(pid, sig) };
    }
}

/// While alive, SIGINT/SIGTERM/SIGHUP sent to the profiler are recorded and forwarded to `pid`
/// (0: only recorded), so the profile can still be written.
pub struct Forwarder {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

impl Forwarder {
    pub fn install(pid: i32) -> Forwarder {
        Self::install_for(pid, &[libc::SIGINT, libc::SIGTERM, libc::SIGHUP])
    }

    /// As [`Forwarder::install`] with nothing to forward to, also catching SIGALRM (see [`Waker`]).
    pub fn install_with_alarm() -> Forwarder {
        Self::install_for(0, &[libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGALRM])
    }

    fn install_for(pid: i32, sigs: &[libc::c_int]) -> Forwarder {
        FORWARD_TO.store(pid, std::sync::atomic::Ordering::SeqCst);
        INTERRUPTED.store(0, std::sync::atomic::Ordering::SeqCst);
        let mut old = Vec::new();
        for &sig in sigs {
            // SAFETY: sigaction structs are plain data; zeroed is a valid initial value.
            let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
            sa.sa_sigaction = forward as *const () as usize;
            sa.sa_flags = 0; // no SA_RESTART: waits return EINTR and notice the signal
                             // SAFETY: installs a handler that only touches atomics and calls kill.
            let mut prev: libc::sigaction = unsafe { std::mem::zeroed() };
            // SAFETY: both pointers refer to valid sigaction structs.
            if unsafe { libc::sigaction(sig, &sa, &mut prev) } == 0 {
                old.push((sig, prev));
            }
        }
        Forwarder { old }
    }

    /// The signal received since install, if any.
    pub fn interrupted(&self) -> Option<i32> {
        match INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
            0 => None,
            s => Some(s),
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        FORWARD_TO.store(0, std::sync::atomic::Ordering::SeqCst);
        for (sig, prev) in &self.old {
            // SAFETY: restores the disposition saved by install.
            unsafe { libc::sigaction(*sig, prev, std::ptr::null_mut()) };
        }
    }
}

/// Makes the calling process the reaper of its orphaned descendants, so the whole tree can be waited for.
pub fn become_subreaper() {
    // SAFETY: a prctl with integer arguments.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
}

pub const PTRACE_CONT: libc::c_uint = 7;
pub const PTRACE_SYSCALL: libc::c_uint = 24;
pub const PTRACE_SEIZE: libc::c_uint = 0x4206;
const PTRACE_GETREGS: libc::c_uint = 12;
const PTRACE_GETEVENTMSG: libc::c_uint = 0x4201;

/// A ptrace request without memory arguments (SEIZE, CONT, SYSCALL, …): `data` is the options or
/// the signal to inject.
pub fn ptrace(req: libc::c_uint, pid: u32, data: usize) -> std::io::Result<()> {
    // SAFETY: these requests take integer arguments only; addr is unused (0).
    let r = unsafe { libc::ptrace(req, pid as libc::pid_t, 0usize, data) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// PTRACE_GETEVENTMSG: the new task's id after a fork/clone event.
pub fn ptrace_eventmsg(pid: u32) -> std::io::Result<u64> {
    let mut msg: libc::c_ulong = 0;
    // SAFETY: GETEVENTMSG writes one unsigned long to the valid address given.
    let r = unsafe { libc::ptrace(PTRACE_GETEVENTMSG, pid as libc::pid_t, 0usize, &mut msg as *mut _) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(msg as u64)
    }
}

/// PTRACE_GETREGS: (orig_rax = system call number, rax = return value).
pub fn ptrace_syscall_regs(pid: u32) -> std::io::Result<(u64, i64)> {
    // SAFETY: user_regs_struct is plain data; zeroed is valid.
    let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    // SAFETY: GETREGS writes a user_regs_struct to the valid address given.
    let r = unsafe { libc::ptrace(PTRACE_GETREGS, pid as libc::pid_t, 0usize, &mut regs as *mut _) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok((regs.orig_rax, regs.rax as i64))
    }
}

/// PTRACE_GETREGS at a syscall-exit stop: the call's second, third and fourth arguments (rsi,
/// rdx, r10: the kernel leaves them as the caller set them) and its result (rax).
pub fn ptrace_exit_args(pid: u32) -> std::io::Result<([u64; 3], i64)> {
    // SAFETY: user_regs_struct is plain data; zeroed is valid.
    let mut regs: libc::user_regs_struct = unsafe { std::mem::zeroed() };
    // SAFETY: GETREGS writes a user_regs_struct to the valid address given.
    let r = unsafe { libc::ptrace(PTRACE_GETREGS, pid as libc::pid_t, 0usize, &mut regs as *mut _) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(([regs.rsi, regs.rdx, regs.r10], regs.rax as i64))
    }
}

/// waitpid(-1, __WALL): (pid, status); EINTR is returned as an error for the caller to retry.
pub fn wait_any() -> std::io::Result<(u32, i32)> {
    let mut status = 0;
    // SAFETY: waitpid writes the status into a valid local.
    let r = unsafe { libc::waitpid(-1, &mut status, libc::__WALL) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok((r as u32, status))
    }
}

/// Kills and reaps one of our children.
pub fn kill_and_reap(pid: u32) {
    // SAFETY: signals and reaps our own child; harmless if it is already gone.
    unsafe {
        libc::kill(pid as libc::pid_t, libc::SIGKILL);
        libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), libc::__WALL);
    }
}

/// User + system CPU seconds of all waited-for children so far (getrusage RUSAGE_CHILDREN).
pub fn children_cpu_s() -> f64 {
    // SAFETY: rusage is plain data; getrusage fills the valid struct given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: see above.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Reaps every child that has already exited (orphans we inherited as subreaper); returns how many.
pub fn reap_exited() -> usize {
    let mut n = 0;
    loop {
        // SAFETY: waitpid with WNOHANG and no status pointer only reaps zombies.
        let r = unsafe { libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG | libc::__WALL) };
        if r <= 0 {
            return n;
        }
        n += 1;
    }
}

pub const PTRACE_INTERRUPT: libc::c_uint = 0x4207;
pub const PTRACE_DETACH: libc::c_uint = 17;
const PTRACE_GET_SYSCALL_INFO: libc::c_uint = 0x420e;

/// What a syscall stop is, from PTRACE_GET_SYSCALL_INFO (Linux 5.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyscallStop {
    Entry { nr: u64 },
    Exit { ret: i64 },
    Other,
}

/// PTRACE_GET_SYSCALL_INFO at a syscall stop of `pid`.
pub fn ptrace_syscall_info(pid: u32) -> std::io::Result<SyscallStop> {
    // struct ptrace_syscall_info: op (u8) at 0, …, the entry's nr / the exit's rval at byte 24.
    let mut buf = [0u64; 11];
    // SAFETY: the kernel writes at most `size` (88) bytes to the valid buffer given.
    let r = unsafe {
        libc::ptrace(
            PTRACE_GET_SYSCALL_INFO,
            pid as libc::pid_t,
            std::mem::size_of_val(&buf),
            buf.as_mut_ptr(),
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(match buf[0] & 0xff {
        1 => SyscallStop::Entry { nr: buf[3] },
        2 => SyscallStop::Exit { ret: buf[3] as i64 },
        _ => SyscallStop::Other,
    })
}

/// While alive, a helper thread sends SIGALRM every `every` to the thread that created it, so that
/// its blocking waits return EINTR and it can look at a deadline. (A process-wide timer would wake
/// whichever thread the kernel picks.)
pub struct Waker {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Waker {
    pub fn start(every: std::time::Duration) -> Waker {
        let (pid, tid) = (std::process::id() as libc::c_long, gettid() as libc::c_long);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            while !flag.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::sleep(every);
                // SAFETY: tgkill sends a signal to one thread of our own process.
                unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, libc::SIGALRM) };
            }
        });
        Waker {
            stop,
            handle: Some(handle),
        }
    }
}

impl Drop for Waker {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Forks the stopped child of [`crate::spawn::Stopped`]: it closes `go[1]` and `err[0]`, waits
/// for a byte on `go[0]`, does what `pre` says and execs `image` (or writes execve's errno to
/// `err[1]`); `parent` is the profiler's pid, whose death kills it. Returns the child's pid; the
/// caller closes its copies of `go[0]` and `err[1]`.
pub fn fork_stopped(
    image: &ExecImage,
    pre: PreExec,
    parent: libc::pid_t,
    go: [&OwnedFd; 2],
    err: [&OwnedFd; 2],
) -> std::io::Result<u32> {
    let filter = [libc::sock_filter {
        code: (libc::BPF_RET | libc::BPF_K) as u16,
        jt: 0,
        jf: 0,
        k: libc::SECCOMP_RET_TRACE,
    }];
    let prog = libc::sock_fprog {
        len: 1,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: the child below only calls async-signal-safe functions (close, read, prctl, syscall,
    // execve, write, _exit) on data prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: we are the child of that fork; every pointer refers to memory the fork copied.
        unsafe {
            libc::close(go[1].as_raw_fd());
            libc::close(err[0].as_raw_fd());
            stopped_child((go[0].as_raw_fd(), err[1].as_raw_fd()), parent, pre, &prog, image)
        }
    }
    Ok(pid as u32)
}

/// The forked child: wait for the go byte, optionally install the seccomp filter, exec.
///
/// # Safety
/// Must only be called in the child of a fork, with pointers valid in its copy of memory.
/// `pipes` are (the go pipe's read end, the exec-error pipe's write end); `parent` is the profiler's pid.
unsafe fn stopped_child(
    (go, err): (i32, i32),
    parent: libc::pid_t,
    pre: PreExec,
    prog: &libc::sock_fprog,
    image: &ExecImage,
) -> ! {
    // Like std::process::Command: default SIGPIPE (Rust programs ignore it) and no blocked signals,
    // so the target starts as it would from a shell (shells and make look at inherited dispositions).
    // SAFETY: signal and sigprocmask with valid arguments are async-signal-safe.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
    // The target dies with the profiler (also a SIGKILLed one, which cannot clean up): the eBPF backend
    // does not trace it, so nothing else would stop it. The death signal survives execve; if the profiler
    // is already gone, exit now.
    if let Err(e) = multios_host::process::die_with_parent(parent, libc::SIGKILL) {
        if e.raw_os_error() == Some(libc::ESRCH) {
            // SAFETY: _exit never returns and is async-signal-safe.
            unsafe { libc::_exit(126) };
        }
    }
    let mut b = 0u8;
    loop {
        // SAFETY: reads one byte into a local.
        let n = unsafe { libc::read(go, (&mut b as *mut u8).cast(), 1) };
        // SAFETY: errno is thread-local and readable.
        if n < 0 && unsafe { *libc::__errno_location() } == libc::EINTR {
            continue;
        }
        if n != 1 {
            // The tracer went away without releasing us.
            // SAFETY: _exit is always safe to call.
            unsafe { libc::_exit(126) };
        }
        break;
    }
    if pre == PreExec::SeccompTrace || pre == PreExec::CalibrateNull {
        // No-new-privileges only when the filter needs it (no CAP_SYS_ADMIN): set for root too, it
        // kept setuid and setgid programs from gaining their privileges under the profiler (a
        // setgid `id` printed no egid), which they do natively and under the other backends.
        // SAFETY: plain prctl/seccomp calls; `prog` points to a valid one-instruction filter.
        unsafe {
            let install = || {
                libc::syscall(
                    libc::SYS_seccomp,
                    libc::SECCOMP_SET_MODE_FILTER,
                    0,
                    prog as *const libc::sock_fprog,
                )
            };
            if install() != 0 {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                install();
            }
        }
    }
    if pre == PreExec::CalibrateNull || pre == PreExec::CalibratePlain {
        for _ in 0..crate::spawn::CALIBRATION_CALLS {
            null_syscall();
        }
        // SAFETY: _exit is always safe to call.
        unsafe { libc::_exit(0) };
    }
    let e = image.execve().to_ne_bytes();
    // SAFETY: write sends 4 bytes from a local; _exit never returns.
    unsafe {
        libc::write(err, e.as_ptr().cast(), 4);
        libc::_exit(127)
    }
}

/// Whether the profiler runs as root (effective uid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Reaps our child `pid` (blocking until it has exited).
pub fn reap(pid: u32) {
    // SAFETY: waitpid with no status pointer only reaps our own child.
    unsafe { libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), 0) };
}

/// Waits at most `ms` milliseconds for `fd` to become readable (a pidfd: its process exited).
pub fn poll_readable(fd: std::os::fd::BorrowedFd<'_>, ms: i32) -> bool {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: polls one valid pollfd.
    unsafe { libc::poll(&mut pfd, 1, ms) > 0 }
}
