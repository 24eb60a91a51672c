//! Where a run's standard streams go and in which directory it runs (issue #15: `emulate --compare`
//! replays one stdin to every run, captures each run's output and can give each run its own copy
//! of a working directory). The default inherits all of it from multios, as a single run does.

use crate::EmulateError;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::PathBuf;

/// The stdin file, the stdout/stderr files and the working directory of one run; `None` inherits
/// multios's own.
#[derive(Debug, Clone, Default)]
pub struct RunIo {
    pub stdin: Option<PathBuf>,
    pub stdout: Option<PathBuf>,
    pub stderr: Option<PathBuf>,
    pub cwd: Option<PathBuf>,
}

/// The files of a [`RunIo`], opened (stdin for reading, the outputs created or truncated).
pub(crate) struct Opened {
    pub stdin: Option<OwnedFd>,
    pub stdout: Option<OwnedFd>,
    pub stderr: Option<OwnedFd>,
}

impl RunIo {
    pub(crate) fn open(&self) -> Result<Opened, EmulateError> {
        let open = |p: &Option<PathBuf>, write: bool| -> Result<Option<OwnedFd>, EmulateError> {
            let Some(p) = p else { return Ok(None) };
            let f = if write { File::create(p) } else { File::open(p) };
            f.map(|f| Some(OwnedFd::from(f)))
                .map_err(|cause| EmulateError::Io {
                    what: format!(
                        "{} {} for the program's {}",
                        if write { "creating" } else { "opening" },
                        p.display(),
                        if write { "output" } else { "stdin" }
                    ),
                    cause,
                })
        };
        if let Some(d) = &self.cwd {
            if !d.is_dir() {
                return Err(EmulateError::NoSuchFile(d.display().to_string()));
            }
        }
        Ok(Opened {
            stdin: open(&self.stdin, false)?,
            stdout: open(&self.stdout, true)?,
            stderr: open(&self.stderr, true)?,
        })
    }

    /// Sets `cmd`'s streams and directory (for the launchers built on `std::process::Command`).
    pub(crate) fn apply(&self, cmd: &mut std::process::Command) -> Result<(), EmulateError> {
        let o = self.open()?;
        if let Some(f) = o.stdin {
            cmd.stdin(f);
        }
        if let Some(f) = o.stdout {
            cmd.stdout(f);
        }
        if let Some(f) = o.stderr {
            cmd.stderr(f);
        }
        if let Some(d) = &self.cwd {
            cmd.current_dir(d);
        }
        Ok(())
    }

    /// The working directory as a C string (for the proxy's forked child), if one is set.
    pub(crate) fn cwd_cstring(&self) -> Result<Option<std::ffi::CString>, EmulateError> {
        self.cwd.as_deref().map(crate::launch::cstring).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_15_a_missing_stdin_file_is_named() {
        let io = RunIo {
            stdin: Some("/no/such/stdin".into()),
            ..RunIo::default()
        };
        let e = io.open().err().map(|e| e.to_string()).unwrap_or_default();
        assert!(e.contains("/no/such/stdin") && e.contains("stdin"), "{e}");
    }
}
