//! Starting the target stopped: fork, let the child wait on a pipe until the tracer has registered
//! it, then exec, so that the program's start-up system calls are seen too.

use crate::error::ProfilerError;
use std::ffi::{CString, OsStr, OsString};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

/// What the child does between being released and exec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PreExec {
    /// Nothing: exec at once (the eBPF backend).
    None,
    /// Install a seccomp filter that returns SECCOMP_RET_TRACE for every call (the ptrace backend).
    SeccompTrace,
    /// As SeccompTrace, then issue [`CALIBRATION_CALLS`] null system calls and exit instead of exec.
    CalibrateNull,
    /// Issue [`CALIBRATION_CALLS`] null system calls and exit, without a filter (syscall-stop tracing).
    CalibratePlain,
}

/// How many null system calls a [`PreExec::CalibrateNull`] child makes.
pub const CALIBRATION_CALLS: usize = 2000;

/// A forked child waiting for [`Stopped::release`] before it execs the target.
#[derive(Debug)]
pub struct Stopped {
    pub pid: u32,
    pub path: PathBuf,
    go: Option<OwnedFd>,
    err: OwnedFd,
}

/// Resolves `program` like execvp would: a name with a slash as is, otherwise the first executable
/// file of that name in `$PATH`.
pub fn resolve(program: &str) -> Result<PathBuf, ProfilerError> {
    if program.is_empty() {
        return Err(ProfilerError::NoCommand);
    }
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return if p.exists() {
            Ok(p)
        } else {
            Err(ProfilerError::CommandNotFound(program.into()))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| executable(p))
        .ok_or_else(|| ProfilerError::CommandNotFound(program.into()))
}

fn cstring(s: &OsStr, what: &str) -> Result<CString, ProfilerError> {
    CString::new(s.as_bytes()).map_err(|_| {
        ProfilerError::os(
            format!("{what} '{}'", s.to_string_lossy()),
            std::io::Error::other("contains a NUL byte"),
        )
    })
}

fn pipe() -> Result<(OwnedFd, OwnedFd), ProfilerError> {
    let mut fds = [0i32; 2];
    // SAFETY: `fds` is a writable array of two ints, as pipe2 requires.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(ProfilerError::os("pipe2", std::io::Error::last_os_error()));
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

impl Stopped {
    /// Forks a child that will exec `command` (program resolved through `$PATH`) once released.
    pub fn spawn(command: &[String], pre: PreExec) -> Result<Stopped, ProfilerError> {
        let program = command.first().ok_or(ProfilerError::NoCommand)?;
        let path = resolve(program)?;
        let c_path = cstring(path.as_os_str(), "program path")?;
        let argv: Vec<CString> = command
            .iter()
            .map(|a| cstring(OsStr::new(a), "argument"))
            .collect::<Result<_, _>>()?;
        let envp: Vec<CString> = std::env::vars_os()
            .map(|(k, v)| {
                let mut kv = k.into_vec();
                kv.push(b'=');
                kv.extend(v.into_vec());
                CString::new(kv)
                    .map_err(|_| ProfilerError::os("environment", std::io::Error::other("NUL byte")))
            })
            .collect::<Result<_, _>>()?;
        let mut argv_p: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
        argv_p.push(std::ptr::null());
        let mut envp_p: Vec<*const libc::c_char> = envp.iter().map(|a| a.as_ptr()).collect();
        envp_p.push(std::ptr::null());
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

        let (go_r, go_w) = pipe()?;
        let (err_r, err_w) = pipe()?;
        // SAFETY: getpid has no arguments and no memory effects.
        let parent = unsafe { libc::getpid() };
        // SAFETY: the child below only calls async-signal-safe functions (read, prctl, syscall,
        // execve, write, _exit) on data prepared before the fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(ProfilerError::os("fork", std::io::Error::last_os_error()));
        }
        if pid == 0 {
            // SAFETY: see above; every pointer refers to memory that the fork copied.
            unsafe {
                libc::close(go_w.as_raw_fd());
                libc::close(err_r.as_raw_fd());
                child(
                    (go_r.as_raw_fd(), err_w.as_raw_fd()),
                    parent,
                    pre,
                    &prog,
                    &c_path,
                    &argv_p,
                    &envp_p,
                )
            }
        }
        drop(go_r);
        drop(err_w);
        Ok(Stopped {
            pid: pid as u32,
            path,
            go: Some(go_w),
            err: err_r,
        })
    }

    /// A child that, once released, runs null system calls under a SECCOMP_RET_TRACE filter and exits.
    pub fn spawn_calibration() -> Result<Stopped, ProfilerError> {
        Self::spawn(&["/proc/self/exe".to_string()], PreExec::CalibrateNull)
    }

    /// A child that, once released, runs null system calls (no filter) and exits.
    pub fn spawn_calibration_plain() -> Result<Stopped, ProfilerError> {
        Self::spawn(&["/proc/self/exe".to_string()], PreExec::CalibratePlain)
    }

    /// Lets the child exec; returns once the exec has succeeded, or the reason it failed.
    pub fn release(&mut self) -> Result<(), ProfilerError> {
        self.go()?;
        self.exec_result()
    }

    /// Lets the child go on to exec, without waiting (a ptraced child stops on the way).
    pub fn go(&mut self) -> Result<(), ProfilerError> {
        if let Some(go) = self.go.take() {
            // SAFETY: writes one byte from a valid buffer to a descriptor we own.
            let n = unsafe { libc::write(go.as_raw_fd(), b"g".as_ptr().cast(), 1) };
            if n != 1 {
                return Err(ProfilerError::os(
                    "releasing the child",
                    std::io::Error::last_os_error(),
                ));
            }
        }
        Ok(())
    }

    /// Waits until the child has exec'd (or exited); the error if its exec failed.
    pub fn exec_result(&mut self) -> Result<(), ProfilerError> {
        let mut buf = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            // SAFETY: reads into the unfilled tail of a valid local buffer.
            let n = unsafe { libc::read(self.err.as_raw_fd(), buf[got..].as_mut_ptr().cast(), 4 - got) };
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            if n <= 0 {
                break;
            }
            got += n as usize;
        }
        if got == 4 {
            let errno = i32::from_ne_bytes(buf);
            return Err(ProfilerError::Exec {
                path: self.path.clone(),
                source: std::io::Error::from_raw_os_error(errno),
            });
        }
        Ok(())
    }
}

/// The forked child: wait for the go byte, optionally install the seccomp filter, exec.
///
/// # Safety
/// Must only be called in the child of a fork, with pointers valid in its copy of memory.
/// `pipes` are (the go pipe's read end, the exec-error pipe's write end); `parent` is the profiler's pid.
unsafe fn child(
    (go, err): (i32, i32),
    parent: libc::pid_t,
    pre: PreExec,
    prog: &libc::sock_fprog,
    path: &CString,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
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
        // SAFETY: plain prctl/seccomp calls; `prog` points to a valid one-instruction filter.
        unsafe {
            libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
            libc::syscall(
                libc::SYS_seccomp,
                libc::SECCOMP_SET_MODE_FILTER,
                0,
                prog as *const libc::sock_fprog,
            );
        }
    }
    if pre == PreExec::CalibrateNull || pre == PreExec::CalibratePlain {
        for _ in 0..CALIBRATION_CALLS {
            crate::sys::null_syscall();
        }
        // SAFETY: _exit is always safe to call.
        unsafe { libc::_exit(0) };
    }
    // SAFETY: path, argv and envp are NUL-terminated arrays of C strings prepared before the fork.
    unsafe { libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
    // SAFETY: errno is thread-local; write sends 4 bytes from a local; _exit never returns.
    unsafe {
        let e = (*libc::__errno_location()).to_ne_bytes();
        libc::write(err, e.as_ptr().cast(), 4);
        libc::_exit(127)
    }
}
