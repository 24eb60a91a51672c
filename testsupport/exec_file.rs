//! Making files that a test then executes, without ever holding them open for writing.
//!
//! A test that writes a program with `std::fs::write` or `std::fs::copy` holds a descriptor open
//! for writing on it for a moment; a test on another thread that forks in that moment carries the
//! descriptor into its child until the child's exec, and executing the file meanwhile fails with
//! ETXTBSY ("Text file busy"; CI of 7e883e6, `issue_3_ptrace_backend_keeps_setgid_programs_…`).
//! Here the final file is written by install(1), in another process.
//!
//! Test files include it with `#[path = "…/testsupport/exec_file.rs"] mod exec_file;`.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// Copies `from` to `to` with permission bits `mode` (e.g. 0o755, 0o2755), by install(1).
pub fn copy(from: &Path, to: &Path, mode: u32) {
    let status = Command::new("install")
        .arg("-m")
        .arg(format!("{mode:o}"))
        .arg("--")
        .arg(from)
        .arg(to)
        .status()
        .unwrap_or_else(|e| panic!("cannot run install(1): {e}"));
    assert!(
        status.success(),
        "install -m {mode:o} {} {}: {status}",
        from.display(),
        to.display()
    );
}

/// Writes `bytes` to `path` with permission bits `mode`: to a staging file first (which this
/// process may have held open), then to `path` by install(1).
pub fn write(path: &Path, bytes: impl AsRef<[u8]>, mode: u32) {
    let mut staging = path.as_os_str().to_owned();
    staging.push(".staging");
    let staging = Path::new(&staging);
    std::fs::write(staging, bytes).unwrap_or_else(|e| panic!("writing {}: {e}", staging.display()));
    copy(staging, path, mode);
    let _ = std::fs::remove_file(staging);
}
