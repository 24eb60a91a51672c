//! The few raw system interfaces the noise benchmarks need: the time-stamp counter, CPU affinity,
//! process-group signals and a SIGINT/SIGTERM flag. Every `unsafe` block of the crate lives here.

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

pub use multios_host::cpus::current_cpu;
pub use multios_host::time::{monotonic_ns, thread_cpu_ns};
pub use multios_host::tsc::now as ticks;

/// Pins the thread or process `pid` (0 = the calling thread) to `cpus`.
pub fn set_affinity(pid: i32, cpus: &[usize]) -> io::Result<()> {
    multios_host::cpus::pin_thread(pid, &cpus.iter().copied().collect())
}

/// Sends `sig` to the whole process group `pgid`; a group that is already gone is not an error.
pub fn kill_group(pgid: i32, sig: i32) -> io::Result<()> {
    if pgid <= 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to signal process group {pgid}"),
        ));
    }
    // SAFETY: kill with a negative pid signals a process group; no memory is touched.
    let r = unsafe { libc::kill(-pgid, sig) };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::ESRCH) {
        Ok(())
    } else {
        Err(e)
    }
}

/// The signal (SIGINT or SIGTERM) that arrived after [`catch_interrupt`], 0 before.
static INTERRUPTED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_interrupt(sig: libc::c_int) {
    INTERRUPTED.store(sig, Ordering::SeqCst);
}

/// Installs a SIGINT and SIGTERM handler that only records the signal, so measurement loops stop and the
/// guards of the in-situ load and the cpuset cgroup clean up on Ctrl-C or `kill`; the caller then exits
/// 128 + the signal (see [`interrupt_signal`]).
pub fn catch_interrupt() -> io::Result<()> {
    // SAFETY: sigaction is all plain data; zeroed is a valid starting value.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = on_interrupt as *const () as libc::sighandler_t;
    // SAFETY: `sa.sa_mask` is a valid sigset_t inside `sa`.
    unsafe { libc::sigemptyset(&mut sa.sa_mask) };
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic (async-signal-safe); `sa` is valid.
        let r = unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// True once SIGINT or SIGTERM arrived (after [`catch_interrupt`]).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed) != 0
}

/// The signal that interrupted the run (SIGINT or SIGTERM), if one did.
pub fn interrupt_signal() -> Option<i32> {
    match INTERRUPTED.load(Ordering::SeqCst) {
        0 => None,
        sig => Some(sig),
    }
}

/// "SIGINT", "SIGTERM" or "signal N".
pub fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGINT => "SIGINT".into(),
        libc::SIGTERM => "SIGTERM".into(),
        _ => format!("signal {sig}"),
    }
}

/// Whether a process exists, and signalling one: the host toolkit's.
pub use multios_host::process::{kill_pid, pid_alive};

/// Writes `bytes` to an already-open file descriptor with a single write(2): usable between
/// fork and exec (async-signal-safe), e.g. to move the child into a cgroup by writing "0".
pub fn write_fd(fd: i32, bytes: &[u8]) -> io::Result<()> {
    // SAFETY: `bytes` is valid for `bytes.len()` bytes; `fd` is owned by the caller.
    let r = unsafe { libc::write(fd, bytes.as_ptr().cast(), bytes.len()) };
    if r == bytes.len() as isize {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Adds a hook to `cmd` that runs in the child between fork and exec: it asks for SIGTERM when the parent
/// dies (so a SIGKILLed tool, which cannot clean up, does not leave the load running: the load's shell
/// traps it and kills its process group, see `load.rs`), pins the child to
/// `cpus` (inherited by all its descendants) and, with `cgroup_procs_fd`, moves it into that cgroup.
pub fn pre_exec_place(
    cmd: &mut std::process::Command,
    cpus: Option<&[usize]>,
    cgroup_procs_fd: Option<i32>,
) -> io::Result<()> {
    use std::os::unix::process::CommandExt;
    let set = cpus
        .map(|c| c.iter().copied().collect::<multios_host::CpuSet>().to_libc())
        .transpose()?;
    // SAFETY: getpid has no arguments and no memory effects.
    let parent = unsafe { libc::getpid() };
    let hook = move || -> io::Result<()> {
        // The parent died before the prctl: ESRCH, so no orphan starts.
        multios_host::process::die_with_parent(parent, libc::SIGTERM)?;
        if let Some(fd) = cgroup_procs_fd {
            write_fd(fd, b"0")?;
        }
        if let Some(set) = &set {
            multios_host::cpus::pin_thread_to_mask(0, set)?;
        }
        Ok(())
    };
    // SAFETY: the hook only issues prctl(2), getppid(2), write(2) and sched_setaffinity(2), all
    // async-signal-safe, and allocates nothing, so it is sound to run between fork and
    // exec.
    unsafe { cmd.pre_exec(hook) };
    Ok(())
}

/// CPU time (user + system) of the calling process's waited-for children, in ns
/// (`getrusage(RUSAGE_CHILDREN)`): the difference around a child's run is that child's CPU time.
pub fn children_cpu_ns() -> u64 {
    // SAFETY: an all-zero rusage is a valid value of this plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage; RUSAGE_CHILDREN is a constant Linux provides.
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Clock ticks per second of /proc/stat (USER_HZ).
pub fn user_hz() -> f64 {
    // SAFETY: sysconf only reads a system constant.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 {
        v as f64
    } else {
        100.0
    }
}
