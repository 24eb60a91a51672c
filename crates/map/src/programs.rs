//! The benchmark programs `multios bench map` runs (built by build.rs, embedded here and written out
//! to run): the IPC microbenchmark (`csrc/ipcbench.c`) and the producer/consumer over futexes
//! (`csrc/prodcons.c`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

static IPCBENCH: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/multios-ipcbench"));
static PRODCONS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/multios-prodcons"));

fn write(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    let path = dir.join(name);
    std::fs::write(&path, bytes)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path)
}

/// Writes the IPC microbenchmark into `dir` (executable) and returns its path.
pub fn install_ipcbench(dir: &Path) -> std::io::Result<PathBuf> {
    write(dir, "multios-ipcbench", IPCBENCH)
}

/// Writes the producer/consumer program into `dir` (executable) and returns its path.
pub fn install_prodcons(dir: &Path) -> std::io::Result<PathBuf> {
    write(dir, "multios-prodcons", PRODCONS)
}

/// One run of the IPC microbenchmark as it prints it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IpcRun {
    pub wall_ns: u64,
    pub exchanges: u64,
    /// CPU time of the pairs' processes (user + system), ns.
    pub cpu_ns: u64,
    /// Exchanges whose two ends were on one CPU at the hand-off (None from an older build that
    /// printed three fields).
    pub together: Option<u64>,
}

impl IpcRun {
    /// The share of the exchanges whose two ends were on different CPUs (the pairs Linux or a
    /// placement split), when the run says.
    pub fn split_share(&self) -> Option<f64> {
        let t = self.together?;
        (self.exchanges > 0).then(|| 1.0 - t.min(self.exchanges) as f64 / self.exchanges as f64)
    }
}

/// Parses the IPC microbenchmark's output "NS EXCHANGES CPU_NS [TOGETHER]".
pub fn parse(stdout: &str) -> Option<IpcRun> {
    let mut it = stdout.split_whitespace();
    Some(IpcRun {
        wall_ns: it.next()?.parse().ok()?,
        exchanges: it.next()?.parse().ok()?,
        cpu_ns: it.next()?.parse().ok()?,
        together: it.next().and_then(|t| t.parse().ok()),
    })
}
