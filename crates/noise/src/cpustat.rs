//! Who else used the measured CPU during a run: /proc/stat's per-CPU busy and steal times against
//! the measuring thread's own CPU time. On a shared machine this tells the noise of other tasks
//! (and of the hypervisor: steal) apart from the noise the configuration under test causes.

use crate::sys;
use serde::Serialize;

/// Counters of one CPU at one instant.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot {
    /// user + nice + system + irq + softirq, in ns.
    busy_ns: f64,
    steal_ns: f64,
    /// Time this CPU ran virtual CPUs (the `guest` field, part of user), in ns.
    guest_ns: f64,
    /// The calling thread's CPU time, in ns.
    own_ns: f64,
    wall_ns: f64,
}

/// What the measured CPU did besides the measurement, as shares of the elapsed time.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Usage {
    /// CPU time of every other task (and interrupts) on the CPU / elapsed × 100.
    pub others_pct: f64,
    /// Time the hypervisor ran something else on this vCPU / elapsed × 100.
    pub steal_pct: f64,
}

/// Reads `cpu`'s line of /proc/stat; `None` if it cannot be read or parsed.
pub fn snapshot(cpu: usize) -> Option<Snapshot> {
    snapshot_with(cpu, sys::thread_cpu_ns() as f64)
}

/// As [`snapshot`], with the measurement's own CPU time given by the caller (e.g. the waited-for
/// children's CPU time, [`sys::children_cpu_ns`], around a guest program run natively).
pub fn snapshot_with(cpu: usize, own_ns: f64) -> Option<Snapshot> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    parse(&text, cpu, sys::user_hz(), own_ns, sys::monotonic_ns() as f64)
}

fn parse(text: &str, cpu: usize, hz: f64, own_ns: f64, wall_ns: f64) -> Option<Snapshot> {
    let name = format!("cpu{cpu}");
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name.as_str()))?;
    let f: Vec<f64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    if f.len() < 8 {
        return None;
    }
    let tick = 1e9 / hz;
    // user nice system idle iowait irq softirq steal
    let busy = f[0] + f[1] + f[2] + f[5] + f[6];
    Some(Snapshot {
        busy_ns: busy * tick,
        steal_ns: f[7] * tick,
        guest_ns: f.get(8).copied().unwrap_or(0.0) * tick,
        own_ns,
        wall_ns,
    })
}

/// The usage between two snapshots taken by the measuring thread.
pub fn usage(before: &Snapshot, after: &Snapshot) -> Option<Usage> {
    let wall = after.wall_ns - before.wall_ns;
    if wall <= 0.0 {
        return None;
    }
    let others = (after.busy_ns - before.busy_ns) - (after.own_ns - before.own_ns);
    Some(Usage {
        others_pct: (100.0 * others / wall).clamp(0.0, 100.0),
        steal_pct: (100.0 * (after.steal_ns - before.steal_ns) / wall).clamp(0.0, 100.0),
    })
}

/// The usage between two snapshots around a KVM guest whose vCPU ran on the CPU: the measurement's
/// own time is the CPU's guest time (the vCPU in guest mode), whoever took the snapshots.
pub fn usage_guest(before: &Snapshot, after: &Snapshot) -> Option<Usage> {
    let own = after.guest_ns - before.guest_ns;
    usage(
        &Snapshot {
            own_ns: 0.0,
            ..*before
        },
        &Snapshot {
            own_ns: own,
            ..*after
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn others_and_steal_from_proc_stat() {
        let a = "cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 100 0 50 900 0 0 0 10 0 0\ncpu1 1 1 1 1 1 1 1 1 0 0\n";
        let b = "cpu  1 2 3 4 5 6 7 8 0 0\ncpu0 200 0 70 1000 0 0 10 30 0 0\ncpu1 1 1 1 1 1 1 1 1 0 0\n";
        // 100 ticks/s: 10 ms per tick; 2 s elapsed; the thread itself ran 1.0 s
        let s0 = parse(a, 0, 100.0, 0.0, 0.0).expect("cpu0");
        let s1 = parse(b, 0, 100.0, 1e9, 2e9).expect("cpu0");
        let u = usage(&s0, &s1).expect("elapsed");
        // busy grew by 130 ticks = 1.3 s, of which 1.0 s was the thread: 0.3 s of 2 s = 15 %
        assert!((u.others_pct - 15.0).abs() < 1e-9, "{u:?}");
        assert!((u.steal_pct - 10.0).abs() < 1e-9, "{u:?}");
        assert!(parse(a, 7, 100.0, 0.0, 0.0).is_none());
        // a vCPU ran 1.2 s in guest mode (field 9): own time is that, not the caller's thread
        let c = "cpu0 100 0 50 900 0 0 0 10 0 0\n";
        let d = "cpu0 260 0 50 1000 0 0 0 10 120 0\n";
        let g = usage_guest(
            &parse(c, 0, 100.0, 5e9, 0.0).expect("cpu0"),
            &parse(d, 0, 100.0, 9e9, 2e9).expect("cpu0"),
        )
        .expect("elapsed");
        assert!((g.others_pct - 20.0).abs() < 1e-9, "{g:?}");
    }
}
