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

/// The command that runs `command` held: `/bin/sh` waits for a line on descriptor 3 (the read end
/// of `hold`, moved there between fork and exec), then execs the command under the same pid. Spawning
/// returns once the shell runs, so the caller can register the pid (probes, affinity) and then write
/// a line to the other end; the caller drops `hold` after spawning. The shell's own `read` is all that runs before the program.
pub fn held_command(command: &[String], hold: &OwnedFd) -> std::process::Command {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c")
        .arg("read -r _ <&3; exec 3<&-; exec \"$@\"")
        .arg("multios-map")
        .args(command);
    let fd = hold.as_raw_fd();
    // SAFETY: the closure runs in the child between fork and exec and calls only dup2(2), which is
    // async-signal-safe, or fcntl(2) when the descriptor already is 3; either way descriptor 3 is
    // left without close-on-exec, the original keeps it.
    unsafe {
        cmd.pre_exec(move || {
            // dup2 onto itself would keep close-on-exec: clear the flag instead
            let r = if fd == 3 {
                libc::fcntl(3, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, 3)
            };
            if r < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    cmd
}
