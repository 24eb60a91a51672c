//! The raw system calls of this crate.

use std::os::fd::{FromRawFd, OwnedFd};

/// pidfd_open(2); `thread` asks for a thread's pidfd (PIDFD_THREAD, Linux 6.9).
pub fn pidfd_open(tid: u32, thread: bool) -> std::io::Result<OwnedFd> {
    const PIDFD_THREAD: libc::c_uint = libc::O_EXCL as libc::c_uint;
    let flags = if thread { PIDFD_THREAD } else { 0 };
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or −1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, tid as libc::pid_t, flags) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned this descriptor to us and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// The page size in bytes.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

/// A pipe (read end, write end), close-on-exec.
pub fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel just returned these descriptors and nothing else owns them.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Makes `cmd`'s child wait, between fork and exec, until one byte arrives on (or the write end of)
/// `hold` closes: the recorder registers the child with the probes in that window.
pub fn hold_before_exec(cmd: &mut std::process::Command, hold: OwnedFd) -> std::os::fd::RawFd {
    use std::os::fd::IntoRawFd;
    use std::os::unix::process::CommandExt;
    let fd = hold.into_raw_fd();
    // SAFETY: the closure runs in the child between fork and exec and only calls read(2), which is
    // async-signal-safe; the descriptor stays open in the parent until dropped there.
    unsafe {
        cmd.pre_exec(move || {
            let mut b = 0u8;
            let _ = libc::read(fd, (&mut b as *mut u8).cast(), 1);
            Ok(())
        });
    }
    fd
}

/// Closes a raw descriptor kept by [`hold_before_exec`] in the parent.
pub fn close(fd: std::os::fd::RawFd) {
    // SAFETY: the caller owns `fd` and never uses it again.
    unsafe { libc::close(fd) };
}
