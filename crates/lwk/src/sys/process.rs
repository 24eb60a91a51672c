//! The VMM process: raw system calls, fork, exit, identity.

use std::io;

/// Performs system call `nr` with `args` on behalf of the guest; returns the Linux convention
/// (negative errno on failure). Pointer arguments must have been checked by `syscall::check`.
pub fn raw_syscall(nr: u64, a: [u64; 6]) -> i64 {
    // SAFETY: the delegation layer only calls this for system calls whose argument layout it knows
    // and whose pointers it has checked to lie inside the guest window (memory that this process
    // owns and never holds Rust references into) or point at copies it owns for the duration of
    // the call (`check::Checked`), so the kernel can only touch guest memory or those copies.
    let r = unsafe { libc::syscall(nr as libc::c_long, a[0], a[1], a[2], a[3], a[4], a[5]) };
    if r == -1 {
        -(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO) as i64)
    } else {
        r
    }
}

/// fork(2) of the VMM (for a guest's fork). Returns the child's pid in the parent, 0 in the child.
pub fn fork() -> io::Result<i32> {
    // SAFETY: fork has no memory-safety preconditions of its own. In the child only the calling
    // thread survives; the LWK calls this with a single-threaded guest, from the vCPU thread, holding
    // no lock, while the proxy and the signal pump are idle (see machine/fork.rs).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(pid)
}

/// Kills forked child `pid` and reaps it (a clone the LWK could not finish: no child is left).
pub fn kill_and_reap(pid: i32) {
    // SAFETY: kill and waitpid take no pointers but the null status.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
        // A signal for this thread (the VMM's kick) can end the wait early: the child would be
        // left for the guest's own wait to find (issue_16_clone_flags… failed so once under load).
        while libc::waitpid(pid, std::ptr::null_mut(), libc::__WALL) < 0
            && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
    }
}

/// The process (thread group) pidfd `fd` names, from PIDFD_GET_INFO (Linux 6.13); None for a
/// thread's pidfd (PIDFD_THREAD, i.e. O_EXCL), another kind of file, or an older kernel.
pub fn pidfd_process(fd: i32) -> Option<i32> {
    /// _IOWR(0xFF, 11, struct pidfd_info) with its first published size, 64 bytes.
    const PIDFD_GET_INFO: u64 = 0xC040_FF0B;
    let mut info = [0u64; 8];
    // SAFETY: F_GETFL takes and returns integers; the ioctl writes at most the 64 bytes its
    // number encodes into `info`, which lives across the call.
    let (fl, r) = unsafe {
        (
            libc::fcntl(fd, libc::F_GETFL),
            libc::ioctl(fd, PIDFD_GET_INFO as _, info.as_mut_ptr()),
        )
    };
    if fl < 0 || fl & libc::O_EXCL != 0 || r < 0 {
        return None;
    }
    // struct pidfd_info: mask, cgroupid, then pid and tgid (u32 each).
    Some(info[2] as u32 as i32)
}

/// Ends the process at once with `code` (after flushing stdout), running no destructors.
pub fn exit_now(code: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // SAFETY: _exit never returns and touches no Rust state.
    unsafe { libc::_exit(code) }
}

/// Ends the process by signal `sig` with its default action (as the guest was), or with 128 + sig
/// if the signal does not end it.
pub fn die_by_signal(sig: i32) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    // SAFETY: resetting a disposition, unblocking and raising a signal have no memory effects.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        libc::raise(sig);
    }
    exit_now(128 + sig)
}

/// setuid/setgid/setreuid/setregid/setresuid/setresgid through glibc, which applies the change to
/// every thread of the VMM (the kernel keeps credentials per thread). Linux's return convention.
pub fn set_ids(nr: u64, a: [u64; 6]) -> i64 {
    let (x, y, z) = (a[0] as u32, a[1] as u32, a[2] as u32);
    // SAFETY: these functions take plain integers.
    let r = unsafe {
        match nr as i64 {
            libc::SYS_setuid => libc::setuid(x),
            libc::SYS_setgid => libc::setgid(x),
            libc::SYS_setreuid => libc::setreuid(x, y),
            libc::SYS_setregid => libc::setregid(x, y),
            libc::SYS_setresuid => libc::setresuid(x, y, z),
            libc::SYS_setresgid => libc::setresgid(x, y, z),
            _ => return -(libc::ENOSYS as i64),
        }
    };
    if r == 0 {
        0
    } else {
        -(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EPERM) as i64)
    }
}

/// setgroups through glibc (every VMM thread, as [`set_ids`]).
pub fn set_groups(groups: &[u32]) -> i64 {
    // SAFETY: the pointer and length describe `groups`, which setgroups only reads.
    let r = unsafe { libc::setgroups(groups.len(), groups.as_ptr()) };
    if r == 0 {
        0
    } else {
        -(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EPERM) as i64)
    }
}

/// The real user id of the VMM (the sender's uid of a signal the guest sends itself).
pub fn uid() -> u32 {
    // SAFETY: getuid has no arguments and cannot fail.
    unsafe { libc::getuid() }
}

/// The effective uid of this process (0: root, which may raise a hard resource limit).
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The VMM's real and effective user and group ids: (uid, euid, gid, egid).
pub fn credentials() -> (u32, u32, u32, u32) {
    // SAFETY: these identity getters have no arguments and cannot fail.
    unsafe { (libc::getuid(), libc::geteuid(), libc::getgid(), libc::getegid()) }
}

/// The VMM's execution domain (personality(0xffffffff) only reads it), the guest's at start.
pub fn personality_now() -> u64 {
    // SAFETY: personality with 0xffffffff only queries; it has no memory arguments and cannot fail.
    (unsafe { libc::personality(0xffff_ffff) }) as u32 as u64
}

/// getrusage(RUSAGE_SELF): the whole VMM's usage so far.
pub fn rusage_self() -> io::Result<libc::rusage> {
    rusage(libc::RUSAGE_SELF)
}

/// times(2) for the whole VMM: its return value (clock ticks since an arbitrary point) and the
/// buffer it filled.
pub fn times() -> (i64, libc::tms) {
    let mut t = libc::tms {
        tms_utime: 0,
        tms_stime: 0,
        tms_cutime: 0,
        tms_cstime: 0,
    };
    // SAFETY: `t` is a live, writable tms; times has no other argument.
    let r = unsafe { libc::times(&mut t) };
    (r as i64, t)
}

/// The calling thread's resource usage (its own page faults, CPU times).
pub fn rusage_thread() -> io::Result<libc::rusage> {
    rusage(libc::RUSAGE_THREAD)
}

fn rusage(who: i32) -> io::Result<libc::rusage> {
    // SAFETY: rusage is plain data for which all-zero bytes are valid; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a live, writable rusage.
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ru)
}

/// The kernel's `struct sigaction` (what rt_sigaction reads and writes on x86-64).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct KernelSigaction {
    handler: usize,
    flags: u64,
    restorer: usize,
    mask: u64,
}

/// Exchanges host signal `sig`'s disposition for `new` (raw rt_sigaction: glibc refuses its own
/// internal signals 32 and 33); returns the old one, None when the kernel refuses.
fn swap_disposition(sig: i32, new: &KernelSigaction) -> Option<KernelSigaction> {
    let mut old = KernelSigaction::default();
    // SAFETY: both pointers are to live kernel-layout sigaction structs we own; the sigset size is
    // the kernel's (8 bytes on x86-64).
    let r = unsafe {
        libc::syscall(
            libc::SYS_rt_sigaction,
            sig,
            new as *const _,
            &mut old as *mut _,
            8,
        )
    };
    (r == 0).then_some(old)
}

/// Sets the calling thread's signal mask to `mask` (bit s-1: signal s) exactly, glibc's internal
/// signals included; returns the old one.
fn swap_mask(mask: u64) -> u64 {
    let mut old = 0u64;
    // SAFETY: both pointers are to u64s we own, the kernel's 8-byte sigset.
    unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &mask as *const u64,
            &mut old as *mut u64,
            8,
        )
    };
    old
}

/// execve(2) of the VMM process itself (issue #15: a guest's exec of a program that runs on
/// Linux, outside the LWK), of the file `program` (a descriptor the VMM opened and checked:
/// `execveat(program, "", AT_EMPTY_PATH)`, so that the file cannot be swapped between the check
/// and the exec; issue #16). Before it, what the program must inherit as a process on Linux would:
/// every fd from `fd_floor` up (the VMM's own) becomes close-on-exec, the calling thread's signal
/// mask becomes `mask` and every catchable signal's disposition SIG_IGN where `ignored` has its bit
/// (bit s-1 for signal s), SIG_DFL elsewhere, the thread runs on `affinity`, and each soft limit
/// of `limits` (resource, soft: the guest's, which the LWK keeps) is set, held to the hard one.
/// The guest's fds below the floor are the host's own and keep their flags. Returns only when
/// execve failed, with its errno, the mask, dispositions, affinity and limits as they were.
#[allow(clippy::too_many_arguments)]
pub fn exec_on_host(
    program: std::os::fd::BorrowedFd<'_>,
    argv: &[std::ffi::CString],
    envp: &[std::ffi::CString],
    mask: u64,
    ignored: u64,
    affinity: Option<&libc::cpu_set_t>,
    fd_floor: i32,
    limits: &[(libc::__rlimit_resource_t, u64)],
) -> i32 {
    use std::os::fd::AsRawFd;
    let list = |v: &[std::ffi::CString]| -> Vec<*const libc::c_char> {
        v.iter()
            .map(|s| s.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect()
    };
    let (argv, envp) = (list(argv), list(envp));
    // SAFETY: close_range only changes descriptor flags (CLOSE_RANGE_CLOEXEC closes nothing).
    unsafe {
        libc::syscall(
            libc::SYS_close_range,
            fd_floor as u32,
            u32::MAX,
            libc::CLOSE_RANGE_CLOEXEC,
        )
    };
    let old_affinity = super::thread::affinity();
    if let Some(a) = affinity {
        super::thread::set_affinity(a);
    }
    let mut old = Vec::new();
    for sig in 1..=64 {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        let handler = if ignored & (1 << (sig - 1)) != 0 {
            libc::SIG_IGN
        } else {
            libc::SIG_DFL
        };
        let new = KernelSigaction {
            handler,
            ..Default::default()
        };
        if let Some(o) = swap_disposition(sig, &new) {
            old.push((sig, o));
        }
    }
    let old_limits: Vec<_> = limits
        .iter()
        .filter_map(|&(res, soft)| {
            let mut r = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: getrlimit/setrlimit read and write only the rlimit structs we own.
            unsafe {
                if libc::getrlimit(res, &mut r) != 0 {
                    return None;
                }
                let new = libc::rlimit {
                    rlim_cur: soft.min(r.rlim_max),
                    rlim_max: r.rlim_max,
                };
                (libc::setrlimit(res, &new) == 0).then_some((res, r))
            }
        })
        .collect();
    let old_mask = swap_mask(mask);
    // SAFETY: `program` is an open descriptor, the empty path, `argv` and `envp` are
    // NUL-terminated strings and NULL-terminated arrays of them that live across the call;
    // execveat returns only on failure.
    unsafe {
        libc::syscall(
            libc::SYS_execveat,
            program.as_raw_fd(),
            c"".as_ptr(),
            argv.as_ptr(),
            envp.as_ptr(),
            libc::AT_EMPTY_PATH,
        )
    };
    let e = io::Error::last_os_error().raw_os_error().unwrap_or(libc::ENOEXEC);
    swap_mask(old_mask);
    for (res, r) in old_limits {
        // SAFETY: as above; the limit is put back as it was.
        unsafe { libc::setrlimit(res, &r) };
    }
    for (sig, o) in old {
        swap_disposition(sig, &o);
    }
    if let Some(a) = &old_affinity {
        super::thread::set_affinity(a);
    }
    e
}

/// Opens `path` as an O_PATH descriptor of the VMM (close-on-exec, above `floor`; following
/// symlinks): the file an execve found, to be checked and then exec'd by descriptor.
pub fn open_path_high(path: &std::path::Path, floor: i32) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    let fd = super::fd::create_high(floor, || {
        let r = super::file::openat_raw(libc::AT_FDCWD, &c, libc::O_PATH | libc::O_CLOEXEC, 0);
        if r < 0 {
            Err(io::Error::from_raw_os_error(-r as i32))
        } else {
            Ok(r as i32)
        }
    })?;
    // SAFETY: create_high just made `fd`; nothing else owns it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// Whether this process has capability `cap` (e.g. CAP_SYS_RESOURCE, 24) in its effective set:
/// what lets Linux's setrlimit raise a hard limit (root without it may not; a container's root
/// often lacks it).
pub fn has_capability(cap: u32) -> bool {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut h = Header {
        version: 0x2008_0522, // _LINUX_CAPABILITY_VERSION_3: two Data words
        pid: 0,
    };
    let mut d = [Data::default(); 2];
    // SAFETY: capget writes at most two Data words (version 3) into `d` and may update `h`.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut h as *mut Header, d.as_mut_ptr()) };
    r == 0 && cap < 64 && d[(cap / 32) as usize].effective & (1 << (cap % 32)) != 0
}

/// The real group id and the supplementary groups of this process.
pub fn groups() -> Vec<u32> {
    // SAFETY: getgroups(0, NULL) only counts; the second call writes at most `n` gids into a
    // buffer of that many.
    let mut v = unsafe {
        let n = libc::getgroups(0, std::ptr::null_mut());
        let mut v = vec![0 as libc::gid_t; n.max(0) as usize];
        let m = libc::getgroups(n.max(0), v.as_mut_ptr());
        v.truncate(m.max(0) as usize);
        v
    };
    // SAFETY: getgid has no arguments and cannot fail.
    v.push(unsafe { libc::getgid() });
    v
}

/// What `/proc/PID/stat`, `cmdline` and `environ` say of the program: its code and data ranges,
/// the initial stack pointer, and where its argument and environment strings are (all guest
/// addresses, which are this process's: the window is mapped at the same addresses).
#[derive(Debug, Clone, Copy, Default)]
pub struct MmView {
    pub code: (u64, u64),
    pub data: (u64, u64),
    pub stack: u64,
    pub args: (u64, u64),
    pub env: (u64, u64),
}

/// struct prctl_mm_map (linux/prctl.h).
#[repr(C)]
#[derive(Default)]
struct PrctlMmMap {
    start_code: u64,
    end_code: u64,
    start_data: u64,
    end_data: u64,
    start_brk: u64,
    brk: u64,
    start_stack: u64,
    arg_start: u64,
    arg_end: u64,
    env_start: u64,
    env_end: u64,
    auxv: u64,
    auxv_size: u32,
    exe_fd: u32,
}

/// Makes this process's mm describe the guest's program (PR_SET_MM_MAP, which needs no
/// capability when the executable is left alone): `/proc/PID/cmdline` and `environ` then read the
/// guest's strings live (a program that rewrites its argv is seen as natively), and `stat`'s code,
/// data and stack fields are the guest's, not the VMM's — whose text address a guest read there
/// and used to find the VMM's code (issue #16). The heap fields stay the VMM's own (its allocator
/// grows the heap with brk). Before, PR_SET_MM_ARG_START/… needed CAP_SYS_RESOURCE, which root in
/// a container may lack (this VM: every `cmdline` was the VMM's command line).
pub fn set_mm_view(v: &MmView) -> io::Result<()> {
    let start_brk = vmm_start_brk()?;
    // SAFETY: brk(0) changes nothing and returns the current break.
    let brk = unsafe { libc::syscall(libc::SYS_brk, 0) } as u64;
    let map = PrctlMmMap {
        start_code: v.code.0,
        end_code: v.code.1,
        start_data: v.data.0,
        end_data: v.data.1,
        start_brk,
        brk,
        start_stack: v.stack,
        arg_start: v.args.0,
        arg_end: v.args.1,
        env_start: v.env.0,
        env_end: v.env.1,
        auxv: 0,
        auxv_size: 0,
        exe_fd: u32::MAX,
    };
    // SAFETY: the kernel copies `size_of::<PrctlMmMap>()` bytes from `map`, which lives across the
    // call; with auxv_size 0 and exe_fd -1 it follows no pointer and changes no file.
    let r = unsafe {
        libc::prctl(
            libc::PR_SET_MM,
            libc::PR_SET_MM_MAP as libc::c_ulong,
            &map as *const PrctlMmMap as libc::c_ulong,
            std::mem::size_of::<PrctlMmMap>() as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The VMM's own start of heap (`/proc/self/stat` field 47), read once: it never changes, and the
/// first read is at start-up, before the guest runs (a forked VMM inherits the value). Through
/// the VMM's procfs directory (`open_proc`), never `/proc` by path.
fn vmm_start_brk() -> io::Result<u64> {
    static START_BRK: std::sync::OnceLock<Result<u64, i32>> = std::sync::OnceLock::new();
    let r = START_BRK.get_or_init(|| {
        let fd = super::file::open_proc("self/stat", libc::O_RDONLY)
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
        let stat = super::file::read_all(fd);
        super::fd::close(fd);
        let stat = stat.map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))?;
        stat_field(&stat, 47).ok_or(libc::EINVAL)
    });
    r.map_err(io::Error::from_raw_os_error)
}

/// Field `n` (1-based, as proc(5) numbers them) of a `/proc/PID/stat` line.
fn stat_field(stat: &[u8], n: usize) -> Option<u64> {
    // The command name (field 2) may hold spaces and parentheses: count from its last ')'.
    let close = stat.iter().rposition(|&c| c == b')')?;
    let rest = std::str::from_utf8(stat.get(close + 2..)?).ok()?;
    rest.split(' ').nth(n.checked_sub(3)?)?.trim().parse().ok()
}

/// Names the calling thread as Linux names a task at exec: the last component of the path the
/// program was started by, cut to 15 bytes (`/proc/PID/comm`, `ps`, `pidof`).
pub fn name_thread_after(path: &[u8]) {
    let base = path.rsplit(|&c| c == b'/').next().unwrap_or(path);
    let mut name = [0u8; 16];
    let n = base.len().min(15);
    name[..n].copy_from_slice(&base[..n]);
    // SAFETY: PR_SET_NAME reads at most 16 bytes from `name`, which is NUL-terminated.
    unsafe {
        libc::prctl(
            libc::PR_SET_NAME,
            name.as_ptr() as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
            0 as libc::c_ulong,
        )
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_past_an_odd_command_name() {
        let line = b"42 (a) b) c) S 1 2";
        assert_eq!(stat_field(line, 4), Some(1));
        assert_eq!(stat_field(line, 5), Some(2));
        assert_eq!(stat_field(line, 6), None);
    }
}
