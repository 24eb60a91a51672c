//! The cross-CPU level of `bench multiverse`'s passes (issue #13).
//!
//! This VM's two vCPUs are placed by the outer hypervisor, and the cache-line round trip between
//! them moves among levels (≈ 60, ≈ 140 and ≈ 540–740 ns quiet) from one stretch of seconds to
//! the next. Every call the LWK forwards crosses the CPUs, and the LWK keeps both busy where the
//! native program uses one, so a pass whose LWK runs saw another level than its native runs
//! compares the machine, not the LWK. The bench probes the round trip before a pass and after
//! every run of it; a pass whose probes do not all sit on one level is run again (at most
//! [`MAX_REPEATS`] times, then kept and marked), and every pass reports its level.
//!
//! The probe: two threads pinned to the two CPUs bounce one cache line; the median of the
//! batches' mean round trips, in ns (≈ 1–3 ms).

use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};

/// Probes whose largest is at most this times the smallest sit on one level (the levels are
/// ≥ 2.3 × apart; a loaded machine spreads one level's probes by ≈ 1.3 ×).
pub const LEVEL_FACTOR: f64 = 1.6;
/// How often a pass that saw two levels is run again before it is kept as it is.
pub const MAX_REPEATS: usize = 3;

const BATCHES: usize = 25;
const PER_BATCH: u64 = 200;

#[repr(align(128))]
struct Line(AtomicU64);

/// The cache-line round trip between CPUs `a` and `b` now, ns (None: a CPU cannot be used).
pub fn probe(a: usize, b: usize) -> Option<f64> {
    if a == b {
        return None;
    }
    let pin = |c: usize| multios_host::cpus::pin_current_thread(&multios_host::CpuSet([c].into()));
    let line = Line(AtomicU64::new(0));
    let total = BATCHES as u64 * PER_BATCH;
    std::thread::scope(|s| {
        let other = s.spawn(|| {
            if pin(b).is_err() {
                line.0.store(u64::MAX, Ordering::Release);
                return;
            }
            for i in 1..=total {
                while line.0.load(Ordering::Acquire) != 2 * i - 1 {
                    if line.0.load(Ordering::Acquire) == u64::MAX {
                        return;
                    }
                    std::hint::spin_loop();
                }
                line.0.store(2 * i, Ordering::Release);
            }
        });
        let mine = s.spawn(|| {
            pin(a).ok()?;
            let mut means = Vec::with_capacity(BATCHES);
            let mut k = 0u64;
            for _ in 0..BATCHES {
                let t0 = std::time::Instant::now();
                for _ in 0..PER_BATCH {
                    k += 1;
                    if line
                        .0
                        .compare_exchange(2 * k - 2, 2 * k - 1, Ordering::AcqRel, Ordering::Acquire)
                        .is_err()
                    {
                        // The other thread could not pin itself.
                        return None;
                    }
                    while line.0.load(Ordering::Acquire) != 2 * k {
                        std::hint::spin_loop();
                    }
                }
                means.push(t0.elapsed().as_nanos() as f64 / PER_BATCH as f64);
            }
            multios_stats::median(&means)
        });
        let r = mine.join().ok().flatten();
        if r.is_none() {
            line.0.store(u64::MAX, Ordering::Release);
        }
        let _ = other.join();
        r
    })
}

/// Whether `probes` (ns) sit on one level: the largest at most [`LEVEL_FACTOR`] × the smallest.
pub fn one_level(probes: &[f64]) -> bool {
    let (lo, hi) = probes
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(lo, hi), &p| (lo.min(p), hi.max(p)));
    probes.is_empty() || hi <= lo * LEVEL_FACTOR
}

/// One pass's level: the median of its probes, their range, whether they sat on one level, and
/// how many times the pass was run before it was kept.
#[derive(Debug, Clone, Serialize)]
pub struct PassLevel {
    pub level_ns: f64,
    pub min_ns: f64,
    pub max_ns: f64,
    pub one_level: bool,
    pub tries: usize,
}

impl PassLevel {
    pub fn of(probes: &[f64], tries: usize) -> PassLevel {
        let min_ns = probes.iter().copied().fold(f64::INFINITY, f64::min);
        let max_ns = probes.iter().copied().fold(0.0, f64::max);
        PassLevel {
            level_ns: multios_stats::median(probes).unwrap_or(f64::NAN),
            min_ns,
            max_ns,
            one_level: one_level(probes),
            tries,
        }
    }
}

/// The passes grouped by level: each group's passes (indices into `levels`), by rising level;
/// a pass joins the group below when its level is within [`LEVEL_FACTOR`] of that group's lowest.
pub fn groups(levels: &[f64]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..levels.len()).filter(|&i| levels[i].is_finite()).collect();
    order.sort_by(|&a, &b| levels[a].total_cmp(&levels[b]));
    let mut out: Vec<Vec<usize>> = Vec::new();
    for i in order {
        match out.last_mut() {
            Some(g) if levels[i] <= levels[g[0]] * LEVEL_FACTOR => g.push(i),
            _ => out.push(vec![i]),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_13_probes_on_one_level_and_across_two() {
        assert!(one_level(&[140.0, 150.0, 190.0]));
        assert!(!one_level(&[140.0, 600.0]));
        assert!(!one_level(&[60.0, 140.0]));
        assert!(one_level(&[]));
        let p = PassLevel::of(&[600.0, 140.0, 150.0], 2);
        assert_eq!((p.level_ns, p.min_ns, p.max_ns), (150.0, 140.0, 600.0));
        assert!(!p.one_level);
        assert_eq!(p.tries, 2);
    }

    #[test]
    fn issue_13_passes_group_by_level() {
        let levels = [610.0, 62.0, 145.0, 700.0, 58.0, f64::NAN, 150.0];
        assert_eq!(groups(&levels), vec![vec![4, 1], vec![2, 6], vec![0, 3]]);
        assert!(groups(&[]).is_empty());
    }

    #[test]
    fn issue_13_the_probe_measures_a_round_trip_between_the_two_cpus() {
        let (a, b) = super::super::micro::lwk_cpus();
        let ns = probe(a, b).expect("both CPUs usable");
        assert!(ns > 0.0 && ns.is_finite(), "{ns}");
        // A CPU that does not exist, or one CPU twice: no number, no hang.
        assert_eq!(probe(a, 4096), None);
        assert_eq!(probe(a, a), None);
    }
}
