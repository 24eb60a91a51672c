//! What else ran on the two CPUs during a calibration run, and what the hypervisor took: /proc/stat's
//! busy and steal time of both CPUs over the run ([`multios_noise::cpustat`]), less the run's own
//! CPU time. Its ticks are 10 ms, coarse for one run of 10–150 ms: read it as a mean over many
//! runs (`levels::Halves`), not run by run.

use multios_noise::cpustat::{self, Snapshot};
use std::time::Instant;

/// Both CPUs' counters at the start of a run.
pub struct Busy {
    at: Vec<Option<Snapshot>>,
    cpus: [u32; 2],
    since: Instant,
}

/// Counters of `cpus` now.
pub fn start(cpus: [u32; 2]) -> Busy {
    Busy {
        at: cpus
            .iter()
            .map(|&c| cpustat::snapshot_with(c as usize, 0.0))
            .collect(),
        cpus,
        since: Instant::now(),
    }
}

/// (the others' CPU time, the steal time), each a share of the two CPUs' elapsed time since
/// `b`, the run's own CPU time `own_ns` taken off the first; None when /proc/stat was unreadable.
pub fn end(b: Busy, own_ns: f64) -> Option<(f64, f64)> {
    let wall = b.since.elapsed().as_secs_f64() * 1e9;
    let (mut busy, mut steal) = (0.0, 0.0);
    for (k, &c) in b.cpus.iter().enumerate() {
        let now = cpustat::snapshot_with(c as usize, 0.0)?;
        let u = cpustat::usage(b.at.get(k)?.as_ref()?, &now)?;
        busy += u.others_pct / 100.0 * wall;
        steal += u.steal_pct / 100.0 * wall;
    }
    let n = b.cpus.len() as f64 * wall;
    (wall > 0.0).then(|| (((busy - own_ns) / n).clamp(0.0, 1.0), steal / n))
}
