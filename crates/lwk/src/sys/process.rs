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

/// The VMM's real and effective user and group ids: (uid, euid, gid, egid).
pub fn credentials() -> (u32, u32, u32, u32) {
    // SAFETY: these identity getters have no arguments and cannot fail.
    unsafe { (libc::getuid(), libc::geteuid(), libc::getgid(), libc::getegid()) }
}

/// getrusage(RUSAGE_SELF): the whole VMM's usage so far.
pub fn rusage_self() -> io::Result<libc::rusage> {
    // SAFETY: rusage is plain data for which all-zero bytes are valid; getrusage fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a live, writable rusage.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ru)
}
