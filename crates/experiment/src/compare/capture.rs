//! The plumbing that makes the runs of a comparison alike (issue #15): multios's stdin captured once
//! and replayed to every run, each run's output captured and compared with the first run's, a fresh
//! copy of a working directory per run ([`super::workdir`]), and the user's setup/cleanup shell
//! commands.

use std::io::{IsTerminal, Read, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

pub use super::workdir::{copy_tree, fresh_copy, WorkdirError};

/// What can go wrong preparing, capturing or comparing the runs.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("{what}: {source}")]
    Io { what: String, source: std::io::Error },
    #[error(
        "{flag} '{cmd}' failed before run {run} ({status}): the runs would not start alike; \
         fix the command or leave {flag} out"
    )]
    Hook {
        flag: &'static str,
        cmd: String,
        run: usize,
        status: String,
    },
    #[error(transparent)]
    Workdir(#[from] WorkdirError),
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> CaptureError {
    let what = what.into();
    move |source| CaptureError::Io { what, source }
}

/// A scratch directory removed when dropped (captured stdin, outputs, working copies):
/// `$TMPDIR/multios-compare-PID-NANOS`.
#[derive(Debug)]
pub struct Scratch(pub PathBuf);

const SCRATCH_PREFIX: &str = "multios-compare-";

impl Scratch {
    pub fn new() -> Result<Scratch, CaptureError> {
        remove_stale_scratches(&std::env::temp_dir());
        let d = std::env::temp_dir().join(format!(
            "{SCRATCH_PREFIX}{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&d).map_err(io(format!("creating {}", d.display())))?;
        Ok(Scratch(d))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.0).ok();
    }
}

/// Removes the scratch directories in `tmp` of multios processes that no longer exist: a SIGINT or
/// SIGTERM that comes between two runs (while a working directory is copied, a `--setup` runs, the
/// outputs are compared) ends multios as the signal does, before the directory's guard could run
/// (one that comes during a run is forwarded to the program, and the comparison ends normally).
/// Only directories named exactly `multios-compare-PID-NANOS`.
fn remove_stale_scratches(tmp: &Path) {
    let Ok(dir) = std::fs::read_dir(tmp) else {
        return;
    };
    for e in dir.flatten() {
        let name = e.file_name();
        let Some((pid, nanos)) = name
            .to_str()
            .and_then(|n| n.strip_prefix(SCRATCH_PREFIX))
            .and_then(|r| r.split_once('-'))
        else {
            continue;
        };
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let Ok(pid) = pid.parse::<i32>() else {
            continue;
        };
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if pid > 0 && digits(nanos) && is_dir && !multios_host::process::pid_alive(pid) {
            std::fs::remove_dir_all(e.path()).ok();
        }
    }
}

/// What every run reads on stdin.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Stdin {
    /// The file replayed to each run (`/dev/null` when multios's stdin is a terminal).
    #[serde(skip)]
    pub file: PathBuf,
    /// Bytes captured, `None` when stdin is a terminal (not captured: the runs read nothing).
    pub bytes: Option<u64>,
    /// The capture stopped at the cap: the runs read only its first `bytes` bytes.
    pub truncated: bool,
}

/// Captures `input` into `dir/stdin`, at most `cap` bytes, unless `is_tty`.
pub fn capture_stdin(
    input: &mut dyn Read,
    is_tty: bool,
    dir: &Path,
    cap: u64,
) -> Result<Stdin, CaptureError> {
    if is_tty {
        return Ok(Stdin {
            file: PathBuf::from("/dev/null"),
            bytes: None,
            truncated: false,
        });
    }
    let file = dir.join("stdin");
    let mut out = std::fs::File::create(&file).map_err(io(format!("creating {}", file.display())))?;
    let n = std::io::copy(&mut input.take(cap), &mut out).map_err(io("capturing stdin"))?;
    // One byte more tells whether the cap cut the input.
    let mut one = [0u8; 1];
    let truncated = n == cap && input.read(&mut one).map_err(io("capturing stdin"))? > 0;
    Ok(Stdin {
        file,
        bytes: Some(n),
        truncated,
    })
}

/// [`capture_stdin`] of multios's own stdin.
pub fn capture_own_stdin(dir: &Path, cap: u64) -> Result<Stdin, CaptureError> {
    let stdin = std::io::stdin();
    let tty = stdin.is_terminal();
    capture_stdin(&mut stdin.lock(), tty, dir, cap)
}

/// The first offset where the files `a` and `b` differ (the shorter one's length when one is a
/// prefix of the other), `None` when they are equal.
pub fn first_difference(a: &Path, b: &Path) -> Result<Option<u64>, CaptureError> {
    let read = |p: &Path| std::fs::read(p).map_err(io(format!("reading {}", p.display())));
    let (x, y) = (read(a)?, read(b)?);
    let common = x.iter().zip(&y).take_while(|(p, q)| p == q).count();
    Ok((common < x.len().max(y.len())).then_some(common as u64))
}

/// Runs `cmd` with `sh -c` in `cwd` (or multios's directory) before or after run `run`; its stdout
/// goes to multios's stderr, so the program's stdout carries only the program's output.
pub fn hook(flag: &'static str, cmd: &str, cwd: Option<&Path>, run: usize) -> Result<(), CaptureError> {
    let mut c = std::process::Command::new("/bin/sh");
    c.arg("-c").arg(cmd).stdin(std::process::Stdio::null());
    if let Ok(fd) = std::io::stderr().as_fd().try_clone_to_owned() {
        c.stdout(fd);
    }
    if let Some(d) = cwd {
        c.current_dir(d);
    }
    let st = c
        .status()
        .map_err(io(format!("{flag} '{cmd}': starting /bin/sh")))?;
    if st.success() {
        return Ok(());
    }
    Err(CaptureError::Hook {
        flag,
        cmd: cmd.to_string(),
        run,
        status: st.to_string(),
    })
}

/// Copies the file `p` to `out` (the program's captured output shown once).
pub fn replay(p: &Path, out: &mut dyn Write) -> Result<(), CaptureError> {
    let mut f = std::fs::File::open(p).map_err(io(format!("opening {}", p.display())))?;
    std::io::copy(&mut f, out).map_err(io(format!("writing the output captured in {}", p.display())))?;
    out.flush().map_err(io("flushing the program's output"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_15_stdin_is_captured_and_the_cap_is_noticed() {
        let s = Scratch::new().expect("scratch");
        let st = capture_stdin(&mut &b"a\nb\nc\n"[..], false, &s.0, 1 << 20).expect("capture");
        assert_eq!((st.bytes, st.truncated), (Some(6), false));
        assert_eq!(std::fs::read(&st.file).ok().as_deref(), Some(&b"a\nb\nc\n"[..]));
        let st = capture_stdin(&mut &b"abcdef"[..], false, &s.0, 4).expect("capture");
        assert_eq!((st.bytes, st.truncated), (Some(4), true));
        let st = capture_stdin(&mut &b"abcd"[..], false, &s.0, 4).expect("capture");
        assert_eq!((st.bytes, st.truncated), (Some(4), false));
        let st = capture_stdin(&mut &b"x"[..], true, &s.0, 4).expect("capture");
        assert_eq!((st.bytes, st.file), (None, PathBuf::from("/dev/null")));
    }

    #[test]
    fn issue_15_first_difference_finds_the_offset() {
        let s = Scratch::new().expect("scratch");
        let f = |name: &str, b: &[u8]| {
            let p = s.0.join(name);
            std::fs::write(&p, b).expect("write");
            p
        };
        let (a, b, c) = (f("a", b"hello"), f("b", b"help!"), f("c", b"hello world"));
        assert_eq!(first_difference(&a, &a).ok(), Some(None));
        assert_eq!(first_difference(&a, &b).ok(), Some(Some(3)));
        assert_eq!(first_difference(&a, &c).ok(), Some(Some(5)));
    }

    #[test]
    fn issue_15_a_failing_hook_is_named() {
        let e = hook("--setup", "exit 3", None, 2)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("--setup 'exit 3'") && e.contains("run 2"), "{e}");
        assert!(hook("--setup", "true", None, 0).is_ok());
    }
}
