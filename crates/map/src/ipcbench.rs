//! The IPC microbenchmark program (`csrc/ipcbench.c`, built by build.rs), written out to run.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

static IPCBENCH: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/multios-ipcbench"));

/// Writes the program into `dir` (executable) and returns its path.
pub fn install(dir: &Path) -> std::io::Result<PathBuf> {
    let path = dir.join("multios-ipcbench");
    std::fs::write(&path, IPCBENCH)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path)
}

/// Parses the program's output "NS EXCHANGES".
pub fn parse(stdout: &str) -> Option<(u64, u64)> {
    let mut it = stdout.split_whitespace();
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}
