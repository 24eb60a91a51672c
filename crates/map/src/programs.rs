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
    /// Where the pairs ran (None from an older build that printed three fields).
    pub placement: Option<PairPlacement>,
}

/// Where the pairs of one run ran, as the program counted it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairPlacement {
    /// Exchanges whose two ends were on one CPU at the hand-off.
    pub together: u64,
    /// Exchanges after which the sender was on another CPU than after the previous one.
    pub moved: u64,
    /// Exchanges the busiest CPU carried (each counted on its sender's CPU).
    pub busiest: u64,
    /// CPUs the program may use.
    pub cpus: u64,
}

/// How far a run's placement of the pairs was from keeping every pair on one CPU, never moving
/// it, and spreading the pairs evenly — the best a placement can do for pairs. Each a share of
/// the exchanges.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct OffIdeal {
    /// Exchanges whose ends were on different CPUs.
    pub split: f64,
    /// Exchanges after which the pair had moved to another CPU.
    pub moved: f64,
    /// Exchanges the busiest CPU carried beyond its even share (the pairs spread as evenly as
    /// their number allows: ⌈pairs / CPUs⌉ pairs on the busiest).
    pub excess: f64,
}

impl OffIdeal {
    /// The largest of the three.
    pub fn worst(&self) -> f64 {
        self.split.max(self.moved).max(self.excess)
    }
}

impl IpcRun {
    /// How far this run was from the best placement of `pairs` pairs, when the run says.
    pub fn off_ideal(&self, pairs: u64) -> Option<OffIdeal> {
        let w = self.placement?;
        if self.exchanges == 0 || pairs == 0 {
            return None;
        }
        let n = self.exchanges as f64;
        let even = pairs.div_ceil(w.cpus.max(1)) as f64 / pairs as f64 * n;
        Some(OffIdeal {
            split: 1.0 - w.together.min(self.exchanges) as f64 / n,
            moved: w.moved as f64 / n,
            excess: ((w.busiest as f64 - even) / n).max(0.0),
        })
    }
}

/// Parses the IPC microbenchmark's output "NS EXCHANGES CPU_NS [TOGETHER MOVED BUSIEST CPUS]".
pub fn parse(stdout: &str) -> Option<IpcRun> {
    let mut it = stdout.split_whitespace();
    let mut num = || it.next().and_then(|t| t.parse::<u64>().ok());
    let (wall_ns, exchanges, cpu_ns) = (num()?, num()?, num()?);
    let placement = match (num(), num(), num(), num()) {
        (Some(together), Some(moved), Some(busiest), Some(cpus)) => Some(PairPlacement {
            together,
            moved,
            busiest,
            cpus,
        }),
        _ => None,
    };
    Some(IpcRun {
        wall_ns,
        exchanges,
        cpu_ns,
        placement,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_12_where_the_pairs_ran_is_read_and_judged() {
        // 4 pairs on 2 CPUs: all together, none moved, 3 pairs' exchanges on the busiest CPU
        let r = parse("1000 8000 5000 8000 0 6000 2").expect("seven fields");
        let off = r.off_ideal(4).expect("placement");
        assert_eq!(off.split, 0.0);
        assert_eq!(off.moved, 0.0);
        assert!((off.excess - 0.25).abs() < 1e-12, "{off:?}");
        // one pair split in a quarter of its exchanges: its CPU carries them all, as it should
        let one = parse("1000 2000 5000 1500 10 2000 2").expect("seven fields");
        let off = one.off_ideal(1).expect("placement");
        assert!((off.split - 0.25).abs() < 1e-12 && off.excess == 0.0, "{off:?}");
        assert!((off.worst() - 0.25).abs() < 1e-12);
        // an older build's three fields
        assert_eq!(parse("1000 2000 5000").map(|r| r.placement), Some(None));
    }
}
