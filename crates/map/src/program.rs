//! The program a command names, found before anything starts: `map record` and `map run` refuse a
//! program that is not there or cannot be run, as `emulate` and `profile` do, instead of starting
//! (a recording used to run `/bin/sh`, which said "exec: PROG: not found", exited 127 and left a
//! graph of one node behind). The program's name and arguments are taken as given (`OsStr`: any
//! bytes but NUL) and passed to exec unchanged.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Why a command's program cannot be started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProgramError {
    #[error("cannot start '{0}': not found (no executable of that name in PATH)")]
    NotFound(String),
    #[error("cannot start '{0}': not found (no such file)")]
    NoSuchFile(String),
    #[error("cannot start '{0}': it is a directory, not a program")]
    IsDirectory(String),
    #[error(
        "cannot start '{0}': not executable (make it so with chmod +x, or run it through its interpreter)"
    )]
    NotExecutable(String),
}

/// The search path when PATH is not set (execvp's).
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

fn executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Resolves `program` as execvp would: a name with a slash as it is, otherwise the first executable
/// file of that name in PATH (an empty PATH entry is the working directory).
pub fn resolve(program: &OsStr) -> Result<PathBuf, ProgramError> {
    let name = || program.to_string_lossy().into_owned();
    if program.as_bytes().contains(&b'/') {
        let p = PathBuf::from(program);
        return match p.metadata() {
            _ if executable(&p) => Ok(p),
            Ok(m) if m.is_dir() => Err(ProgramError::IsDirectory(name())),
            Ok(_) => Err(ProgramError::NotExecutable(name())),
            Err(_) => Err(ProgramError::NoSuchFile(name())),
        };
    }
    if program.is_empty() {
        return Err(ProgramError::NotFound(name()));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from(DEFAULT_PATH));
    std::env::split_paths(&path)
        .map(|d| {
            if d.as_os_str().is_empty() {
                PathBuf::from(".").join(program)
            } else {
                d.join(program)
            }
        })
        .find(|p| executable(p))
        .ok_or_else(|| ProgramError::NotFound(name()))
}

/// The command `command` (program first) to start: the program resolved ([`resolve`]), its argv[0]
/// as given, the arguments unchanged.
pub fn command<S: AsRef<OsStr>>(command: &[S]) -> Result<std::process::Command, ProgramError> {
    use std::os::unix::process::CommandExt;
    let Some(program) = command.first() else {
        return Err(ProgramError::NotFound(String::new()));
    };
    let path = resolve(program.as_ref())?;
    let mut cmd = std::process::Command::new(path);
    cmd.arg0(program).args(&command[1..]);
    Ok(cmd)
}

/// The command as text, each word lossily (for graphs and messages).
pub fn lossy<S: AsRef<OsStr>>(command: &[S]) -> Vec<String> {
    command
        .iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_16_a_program_is_found_in_path_or_refused_by_name() {
        assert!(resolve(OsStr::new("sh")).is_ok_and(|p| p.is_absolute() && p.ends_with("sh")));
        let e = resolve(OsStr::new("nonexistent_prog_multios")).expect_err("missing");
        assert_eq!(
            e.to_string(),
            "cannot start 'nonexistent_prog_multios': not found (no executable of that name in PATH)"
        );
        let e = resolve(OsStr::new("/nonexistent/prog")).expect_err("missing");
        assert!(e.to_string().contains("'/nonexistent/prog': not found"), "{e}");
        let e = resolve(OsStr::new("/tmp")).expect_err("directory");
        assert!(e.to_string().contains("directory"), "{e}");
        let plain = std::env::temp_dir().join(format!("multios-map-plain-{}", std::process::id()));
        std::fs::write(&plain, "echo hi\n").expect("scratch file");
        let e = resolve(plain.as_os_str()).expect_err("plain file");
        let _ = std::fs::remove_file(&plain);
        assert!(e.to_string().contains("not executable"), "{e}");
        assert!(resolve(OsStr::new("")).is_err());
    }
}
