//! The cross-CPU level of `bench multiverse`'s passes (issue #13).
//!
//! This VM's two vCPUs are placed by the outer hypervisor, and the cache-line round trip between
//! them moves among levels (≈ 60, ≈ 140 and ≈ 540–740 ns quiet) from one stretch of seconds to
//! the next (`crosslink.rs`). Every call the LWK forwards crosses the CPUs, and the LWK keeps both
//! busy where the native program uses one, so a pass whose LWK runs saw another level than its
//! native runs compares the machine, not the LWK. The bench runs each pass under a
//! [`crate::crosslink::Watch`] (a probe before the pass and after every run of it); a pass whose
//! probes do not agree is run again (at most [`MAX_REPEATS`] times, then kept and marked), every
//! pass reports its level, and the passes are grouped by level here for the by-level table.

use crate::crosslink::SAME_LEVEL_RATIO;

/// How often a pass that saw two levels is run again before it is kept as it is.
pub const MAX_REPEATS: usize = 3;

/// The passes grouped by level: each group's passes (indices into `levels`, ns), by rising
/// level; a pass joins the group below when its level is within [`SAME_LEVEL_RATIO`] of that
/// group's lowest. Passes without a level (NaN) are left out.
pub fn groups(levels: &[f64]) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..levels.len()).filter(|&i| levels[i].is_finite()).collect();
    order.sort_by(|&a, &b| levels[a].total_cmp(&levels[b]));
    let mut out: Vec<Vec<usize>> = Vec::new();
    for i in order {
        match out.last_mut() {
            Some(g) if levels[i] <= levels[g[0]] * SAME_LEVEL_RATIO => g.push(i),
            _ => out.push(vec![i]),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_13_passes_group_by_level() {
        let levels = [610.0, 62.0, 145.0, 700.0, 58.0, f64::NAN, 150.0];
        assert_eq!(groups(&levels), vec![vec![4, 1], vec![2, 6], vec![0, 3]]);
        assert!(groups(&[]).is_empty());
    }
}
