//! `multios lwk conformance` (issue #14): suites nobody here wrote, natively and in the LWK, side
//! by side. CPython's own regression tests (`python3.11 -m test -v MODULE --junit-xml FILE`,
//! Debian's libpython3.11-testsuite), module by module, and stress-ng's stressors
//! (`stress-ng --STRESSOR 1 -t 2s --verify --metrics-brief`), each run once natively and once
//! under `multios lwk run`, with a time limit that kills the whole process tree. Every test or
//! stressor whose outcome differs is a difference; each gets its cause from the known-limits
//! table ([`limits`]), and one without an entry is "unexplained".

pub mod junit;
pub mod limits;
mod python;
mod runner;
mod stress;
pub mod stressng;
mod sys;

use crate::{ExperimentError, Progress};
pub use junit::Outcome;
pub use limits::{Cause, Limits};
pub use python::{ModuleResult, PySide};
pub use runner::Ran;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::Duration;
pub use stress::{StressSide, StressorResult};

/// The CPython modules of issue #14.
pub const MODULES: [&str; 18] = [
    "test_os",
    "test_posix",
    "test_signal",
    "test_mmap",
    "test_threading",
    "test_subprocess",
    "test_select",
    "test_selectors",
    "test_socket",
    "test_fcntl",
    "test_time",
    "test_tempfile",
    "test_shutil",
    "test_io",
    "test_file",
    "test_pty",
    "test_resource",
    "test_faulthandler",
];

/// stress-ng stressors from the classes os, memory, interrupt, pipe and scheduler: those that
/// exercise the system-call interface and finish in their time on a 2-CPU VM, without root-only
/// or machine-wide effects (no oom, swap, reboot, kvm, module loading, raw sockets, CPU hotplug).
pub const STRESSORS: [&str; 60] = [
    "access",
    "alarm",
    "brk",
    "chdir",
    "chmod",
    "clock",
    "clone",
    "close",
    "dentry",
    "dir",
    "dup",
    "epoll",
    "eventfd",
    "exec",
    "fcntl",
    "fifo",
    "flock",
    "fork",
    "fstat",
    "futex",
    "get",
    "getdent",
    "getrandom",
    "itimer",
    "kill",
    "link",
    "lockf",
    "madvise",
    "malloc",
    "memfd",
    "mincore",
    "mmap",
    "mprotect",
    "mremap",
    "msg",
    "msync",
    "nanosleep",
    "nice",
    "open",
    "pipe",
    "poll",
    "prctl",
    "pthread",
    "pty",
    "rename",
    "rlimit",
    "seek",
    "sem",
    "shm",
    "sigchld",
    "signal",
    "sigpending",
    "sigq",
    "sigsegv",
    "sleep",
    "switch",
    "timer",
    "vfork",
    "wait",
    "yield",
];

/// Tests left out by default (`python -m test -i PATTERN`): they hang natively on this VM
/// (ThreadedVSOCKSocketStreamTest.testStream waited over ten minutes in connect: the VM has a
/// vsock device with nothing listening behind it), so neither side can be compared.
pub const IGNORED: [&str; 1] = ["*VSOCK*"];

/// `--quick`: two modules and three stressors (the integration test's subset).
pub const QUICK_MODULES: [&str; 2] = ["test_fcntl", "test_select"];
pub const QUICK_STRESSORS: [&str; 3] = ["pipe", "fstat", "yield"];

/// What to run.
#[derive(Debug, Clone)]
pub struct Config {
    /// The interpreter (Debian's /usr/bin/python3.11, whose test package is the suite).
    pub python: PathBuf,
    pub stress_ng: PathBuf,
    pub modules: Vec<String>,
    /// Test-id patterns left out on both sides (`python -m test -i PATTERN`).
    pub ignore: Vec<String>,
    pub stressors: Vec<String>,
    /// `-t` of each stressor run.
    pub stress_seconds: u64,
    /// The time limit of one module's run (each side).
    pub module_timeout: Duration,
    /// The `multios` binary whose `lwk run` runs the LWK side.
    pub launcher: PathBuf,
    /// Extra flags for `multios lwk run`.
    pub lwk_args: Vec<String>,
    /// Where logs and JUnit files are kept (None: a scratch directory, removed at the end).
    pub out_dir: Option<PathBuf>,
    pub limits: Limits,
}

/// The result: per module and per stressor, both sides and the differences.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub python: Vec<ModuleResult>,
    pub stress: Vec<StressorResult>,
    /// Differences with a cause from the known-limits table.
    pub explained: usize,
    /// Differences without one (the command then exits non-zero).
    pub unexplained: usize,
    /// Where the logs are (None when they were in a removed scratch directory).
    pub out_dir: Option<PathBuf>,
}

/// A test or stressor whose outcome differs, with its cause when the table has one.
#[derive(Debug, Clone, Serialize)]
pub struct Difference {
    pub id: String,
    pub native: Outcome,
    pub lwk: Outcome,
    /// What happened, when it is not just the outcome (a timeout, a crash, an exit status).
    pub detail: String,
    pub cause: Option<Cause>,
}

impl Config {
    /// Checks what the runs need, naming the flag or package that would fix it.
    pub fn check(&self) -> Result<(), ExperimentError> {
        if !self.modules.is_empty() {
            if !self.python.exists() {
                return Err(ExperimentError::Config(format!(
                    "{} not found: install Debian's python3.11 and libpython3.11-testsuite (scripts/deps.sh)",
                    self.python.display()
                )));
            }
            let lib = Path::new("/usr/lib/python3.11/test/test_os.py");
            if self.python.starts_with("/usr/bin") && !lib.exists() {
                return Err(ExperimentError::Config(format!(
                    "{} not found: CPython's tests come with Debian's libpython3.11-testsuite (scripts/deps.sh)",
                    lib.display()
                )));
            }
        }
        for m in &self.modules {
            if !m.starts_with("test_") || !m.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(ExperimentError::Config(format!(
                    "--python: `{m}` is not a test module name (test_os, test_signal, …)"
                )));
            }
        }
        for s in &self.stressors {
            if s.is_empty() || !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                return Err(ExperimentError::Config(format!(
                    "--stress: `{s}` is not a stressor name (pipe, fork, sigq, …; `stress-ng --class os?` lists them)"
                )));
            }
        }
        if self.stress_seconds == 0 {
            return Err(ExperimentError::Config(
                "--stress-seconds must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// Runs every module and stressor natively and in the LWK.
pub fn run(cfg: &Config, progress: &mut dyn Progress) -> Result<Report, ExperimentError> {
    cfg.check()?;
    if let Err(e) = sys::become_subreaper() {
        progress.note(&format!(
            "cannot become the subreaper ({e}): a test's orphaned daemons may escape the clean-up"
        ));
    }
    let (dir, scratch) = match &cfg.out_dir {
        Some(d) => (d.clone(), false),
        None => (
            std::env::temp_dir().join(format!("multios-conformance-{}", std::process::id())),
            true,
        ),
    };
    std::fs::create_dir_all(&dir).map_err(ExperimentError::io(format!("creating {}", dir.display())))?;
    let total = 2 * (cfg.modules.len() + cfg.stressors.len()) as u64;
    progress.start(total, "conformance");
    let mut python = Vec::new();
    for m in &cfg.modules {
        python.push(python::module(cfg, &dir, m, progress)?);
    }
    let mut stress = Vec::new();
    for s in &cfg.stressors {
        stress.push(stress::stressor(cfg, &dir, s, progress)?);
    }
    progress.finish();
    if scratch {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let diffs = python
        .iter()
        .flat_map(|m| m.differences.iter())
        .chain(stress.iter().filter_map(|s| s.difference.as_ref()));
    let (mut explained, mut unexplained) = (0, 0);
    for d in diffs {
        if d.cause.is_some() {
            explained += 1;
        } else {
            unexplained += 1;
        }
    }
    Ok(Report {
        python,
        stress,
        explained,
        unexplained,
        out_dir: (!scratch).then_some(dir),
    })
}

/// A fresh working directory for one run (its TMPDIR too), so what a run leaves is found.
fn workdir(dir: &Path, name: &str) -> Result<PathBuf, ExperimentError> {
    let w = dir.join(format!("work-{name}"));
    let _ = std::fs::remove_dir_all(&w);
    std::fs::create_dir_all(&w).map_err(ExperimentError::io(format!("creating {}", w.display())))?;
    Ok(w)
}

/// Files and directories a run left in its working directory, then removed.
fn leftover_files(w: &Path) -> usize {
    let n = std::fs::read_dir(w).map(|d| d.count()).unwrap_or(0);
    let _ = std::fs::remove_dir_all(w);
    n
}
