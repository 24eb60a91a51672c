//! Facts about the machine a profile is taken on, read from /proc and uname.

use crate::format::Machine;

impl Machine {
    /// Reads CPU model, online CPU count, kernel release and host name of this machine.
    pub fn probe() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split_once(':'))
                    .map(|(_, v)| v.trim())
            })
            .unwrap_or("unknown")
            .to_string();
        let cores = std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1);
        let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string()).ok();
        Machine {
            cpu_model,
            cores,
            kernel: read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
            hostname: read("/proc/sys/kernel/hostname"),
        }
    }
}
