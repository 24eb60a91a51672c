//! The check execve makes of a program file before it reads it, on a descriptor that never waited:
//! Linux's `may_open` with MAY_EXEC.

use std::io;

/// Why execve refuses the file open as O_PATH descriptor `fd` (None: it may run it), as Linux's
/// `may_open` with MAY_EXEC decides: anything but a regular file is EACCES — a directory, a FIFO,
/// a socket, a device — and so is a regular file the caller may not execute (no x bit for the
/// effective ids, or a noexec mount: faccessat2's X_OK with AT_EACCESS).
pub fn exec_denied(fd: i32) -> Option<i32> {
    // SAFETY: `st` is a zeroed, writable stat that fstat fills; nothing else is touched.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above; fstat only writes `st`.
    if unsafe { libc::fstat(fd, &mut st) } != 0 {
        return Some(io::Error::last_os_error().raw_os_error().unwrap_or(libc::EACCES));
    }
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Some(libc::EACCES);
    }
    let empty = c"";
    let r = super::process::raw_syscall(
        libc::SYS_faccessat2 as u64,
        [
            fd as u64,
            empty.as_ptr() as u64,
            libc::X_OK as u64,
            (libc::AT_EMPTY_PATH | libc::AT_EACCESS) as u64,
            0,
            0,
        ],
    );
    match r {
        0 => None,
        // A kernel before 5.8: the same check through the descriptor's procfs link.
        r if r == -(libc::ENOSYS as i64) => {
            let link = std::ffi::CString::new(format!("/proc/self/fd/{fd}")).ok()?;
            // SAFETY: `link` is a valid NUL-terminated path that faccessat only reads.
            let ok = unsafe { libc::faccessat(libc::AT_FDCWD, link.as_ptr(), libc::X_OK, libc::AT_EACCESS) };
            (ok != 0).then_some(libc::EACCES)
        }
        _ => Some(libc::EACCES),
    }
}
