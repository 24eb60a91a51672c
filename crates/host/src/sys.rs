//! The raw system interfaces of the host toolkit; every `unsafe` block of the crate is here.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// A `cpu_set_t` with the given CPUs; CPUs at or beyond CPU_SETSIZE are an error.
pub fn cpu_set<'a>(cpus: impl IntoIterator<Item = &'a usize>) -> io::Result<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is a plain bit array; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &c in cpus {
        if c >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {c} is beyond CPU_SETSIZE ({})", libc::CPU_SETSIZE),
            ));
        }
        // SAFETY: `c` < CPU_SETSIZE was checked above, so the bit lies inside `set`.
        unsafe { libc::CPU_SET(c, &mut set) };
    }
    Ok(set)
}

/// The CPUs set in `set`, ascending.
pub fn cpus_of(set: &libc::cpu_set_t) -> Vec<usize> {
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: CPU_ISSET only reads inside `set`, and `c` < CPU_SETSIZE.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, set) })
        .collect()
}

/// sched_getaffinity of thread `tid` (0: the calling thread).
pub fn get_affinity(tid: i32) -> io::Result<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is plain data and sched_getaffinity writes at most the size passed.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            Ok(set)
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

/// sched_setaffinity of thread `tid` (0: the calling thread). Async-signal-safe (one system
/// call, no allocation): usable between fork and exec.
pub fn set_affinity(tid: i32, set: &libc::cpu_set_t) -> io::Result<()> {
    // SAFETY: `set` is a valid cpu_set_t and the size passed is its size.
    let r = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), set) };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The CPU the calling thread runs on now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and touches no memory of ours.
    let c = unsafe { libc::sched_getcpu() };
    usize::try_from(c).ok()
}

/// Reads clock `id` in nanoseconds; `id` must be a clock Linux always provides.
pub fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; callers pass constant clock ids Linux provides.
    unsafe { libc::clock_gettime(id, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Reads the time-stamp counter.
#[inline(always)]
pub fn rdtsc() -> u64 {
    // SAFETY: RDTSC has no memory effects and every x86_64 CPU implements it.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// PR_SET_PDEATHSIG(`sig`), then ESRCH if the parent is no longer `parent`. Async-signal-safe.
pub fn die_with_parent(parent: libc::pid_t, sig: i32) -> std::io::Result<()> {
    // SAFETY: prctl with integer arguments touches no memory.
    if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: getppid has no preconditions.
    if unsafe { libc::getppid() } != parent {
        return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
    }
    Ok(())
}

/// execve of `image`; returns its errno (it returns only on failure). Async-signal-safe.
pub fn execve(image: &crate::process::ExecImage) -> i32 {
    // SAFETY: `image` owns its path (a C string) and both NULL-terminated arrays of C strings,
    // which live as long as the borrow.
    unsafe { libc::execve(image.path_ptr(), image.argv_ptr(), image.envp_ptr()) };
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// A close-on-exec pipe: (read end, write end).
pub fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` is a writable array of two ints, as pipe2 requires.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The real user id.
pub fn uid() -> u32 {
    // SAFETY: getuid has no preconditions and cannot fail.
    unsafe { libc::getuid() }
}

/// wait4(2) for `pid`: its wait status and resource usage.
pub fn wait4(pid: libc::pid_t) -> io::Result<(i32, libc::rusage)> {
    let mut status = 0;
    // SAFETY: rusage is plain old data; zeroed is a valid value for wait4 to overwrite.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `status` and `ru` are valid, writable and live for the call.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            return Ok((status, ru));
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
}

/// Whether process `pid` exists (kill with signal 0; EPERM still means it exists).
pub fn pid_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill(2) with signal 0 only checks for the process; no memory is touched.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Sends `sig` to one process; a process that is already gone is not an error.
pub fn kill_pid(pid: i32, sig: i32) -> io::Result<()> {
    if pid <= 1 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("refusing to signal pid {pid}"),
        ));
    }
    // SAFETY: kill(2) with a positive pid touches no memory.
    let r = unsafe { libc::kill(pid, sig) };
    if r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The calling thread's id.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// Whether `fd` is an open descriptor (F_GETFD succeeds). Async-signal-safe and usable before
/// `main` (no allocation).
pub fn fd_is_open(fd: i32) -> bool {
    // SAFETY: F_GETFD only reads the descriptor's flags.
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

/// Whether `fd` is open on the null device (character device 1:3).
pub fn is_dev_null(fd: i32) -> bool {
    // SAFETY: `st` is plain data that fstat fills in; a failure leaves it unread.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        libc::fstat(fd, &mut st) == 0
            && st.st_mode & libc::S_IFMT == libc::S_IFCHR
            && st.st_rdev == libc::makedev(1, 3)
    }
}

/// Sets FD_CLOEXEC on `fd`.
pub fn set_cloexec(fd: i32) -> io::Result<()> {
    // SAFETY: F_GETFD/F_SETFD only read and change the descriptor's flags.
    let r = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags < 0 {
            flags
        } else {
            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC)
        }
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
