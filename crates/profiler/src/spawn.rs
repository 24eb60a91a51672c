//! Starting the target stopped: fork, let the child wait on a pipe until the tracer has registered
//! it, then exec, so that the program's start-up system calls are seen too.

use crate::error::ProfilerError;
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
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
    go: Option<File>,
    err: File,
}

/// Resolves `program` like execvp would: a name with a slash as is, otherwise the first executable
/// file of that name in `$PATH`.
pub fn resolve(program: impl AsRef<OsStr>) -> Result<PathBuf, ProfilerError> {
    let program = program.as_ref();
    if program.is_empty() {
        return Err(ProfilerError::NoCommand);
    }
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if program.as_bytes().contains(&b'/') {
        let p = PathBuf::from(program);
        return if p.exists() {
            Ok(p)
        } else {
            Err(ProfilerError::CommandNotFound(
                program.to_string_lossy().into_owned(),
            ))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/usr/local/bin:/usr/bin:/bin"));
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| executable(p))
        .ok_or_else(|| ProfilerError::CommandNotFound(program.to_string_lossy().into_owned()))
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
    multios_host::process::pipe_cloexec().map_err(|e| ProfilerError::os("pipe2", e))
}

impl Stopped {
    /// Forks a child that will exec `command` (program resolved through `$PATH`) once released.
    pub fn spawn<S: AsRef<OsStr>>(command: &[S], pre: PreExec) -> Result<Stopped, ProfilerError> {
        let program = command.first().ok_or(ProfilerError::NoCommand)?;
        let path = resolve(program)?;
        let c_path = cstring(path.as_os_str(), "program path")?;
        let argv: Vec<CString> = command
            .iter()
            .map(|a| cstring(a.as_ref(), "argument"))
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
        let image = multios_host::process::ExecImage::new(c_path, argv, envp);
        let (go_r, go_w) = pipe()?;
        let (err_r, err_w) = pipe()?;
        let parent = std::process::id() as libc::pid_t;
        let pid = crate::sys::fork_stopped(&image, pre, parent, [&go_r, &go_w], [&err_r, &err_w])
            .map_err(|e| ProfilerError::os("fork", e))?;
        drop(go_r);
        drop(err_w);
        Ok(Stopped {
            pid,
            path,
            go: Some(File::from(go_w)),
            err: File::from(err_r),
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
        if let Some(mut go) = self.go.take() {
            go.write_all(b"g")
                .map_err(|e| ProfilerError::os("releasing the child", e))?;
        }
        Ok(())
    }

    /// Waits until the child has exec'd (or exited); the error if its exec failed.
    pub fn exec_result(&mut self) -> Result<(), ProfilerError> {
        let mut buf = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            match self.err.read(&mut buf[got..]) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Ok(0) | Err(_) => break,
                Ok(n) => got += n,
            }
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
