//! Child processes tied to the multios process that started them, and what a forked child needs
//! prepared before the fork (it must not allocate).

use std::ffi::CString;
use std::os::fd::OwnedFd;

/// In a child between fork and exec: ask the kernel to send `sig` when the thread that forked it
/// ends (a SIGKILLed multios included), and fail with ESRCH if that already happened — the
/// parent is no longer `parent` (its pid, read before the fork) — so no orphan starts.
/// Async-signal-safe: two system calls, no allocation. The death signal survives execve.
pub fn die_with_parent(parent: libc::pid_t, sig: i32) -> std::io::Result<()> {
    crate::sys::die_with_parent(parent, sig)
}

/// A program with its arguments and environment as execve takes them, built before `fork`:
/// NULL-terminated arrays of pointers into C strings this value owns (their heap buffers do not
/// move with it, so the pointers stay valid as long as the value lives).
pub struct ExecImage {
    path: CString,
    _argv: Vec<CString>,
    argv_ptrs: Vec<*const libc::c_char>,
    _env: Vec<CString>,
    envp_ptrs: Vec<*const libc::c_char>,
}

impl ExecImage {
    pub fn new(path: CString, argv: Vec<CString>, env: Vec<CString>) -> ExecImage {
        let ptrs = |v: &[CString]| {
            let mut p: Vec<*const libc::c_char> = v.iter().map(|a| a.as_ptr()).collect();
            p.push(std::ptr::null());
            p
        };
        ExecImage {
            argv_ptrs: ptrs(&argv),
            envp_ptrs: ptrs(&env),
            path,
            _argv: argv,
            _env: env,
        }
    }

    /// The program's path, a C string.
    pub fn path_ptr(&self) -> *const libc::c_char {
        self.path.as_ptr()
    }

    /// The arguments, a NULL-terminated array of C strings.
    pub fn argv_ptr(&self) -> *const *const libc::c_char {
        self.argv_ptrs.as_ptr()
    }

    /// The environment (`KEY=VALUE`), a NULL-terminated array of C strings.
    pub fn envp_ptr(&self) -> *const *const libc::c_char {
        self.envp_ptrs.as_ptr()
    }

    /// execve(2); returns only when it failed, with the errno. Async-signal-safe.
    pub fn execve(&self) -> i32 {
        crate::sys::execve(self)
    }
}

/// A close-on-exec pipe: (read end, write end).
pub fn pipe_cloexec() -> std::io::Result<(OwnedFd, OwnedFd)> {
    crate::sys::pipe_cloexec()
}

/// Whether process `pid` exists (EPERM still means it exists).
pub fn pid_alive(pid: i32) -> bool {
    crate::sys::pid_alive(pid)
}

/// Sends `sig` to one process (pid > 1); one that is already gone is not an error.
pub fn kill_pid(pid: i32, sig: i32) -> std::io::Result<()> {
    crate::sys::kill_pid(pid, sig)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_failed_execve_returns_its_errno() {
        let c = |s: &str| CString::new(s).expect("no NUL");
        let image = ExecImage::new(c("/nonexistent/multios-test"), vec![c("x")], vec![c("A=1")]);
        assert_eq!(image.execve(), libc::ENOENT);
    }

    #[test]
    fn the_pipe_carries_bytes() {
        let (r, w) = pipe_cloexec().expect("pipe2");
        std::fs::File::from(w).write_all(b"go").expect("write");
        let mut got = String::new();
        std::fs::File::from(r).read_to_string(&mut got).expect("read");
        assert_eq!(got, "go");
    }
}
