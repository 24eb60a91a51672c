//! Merging per-rank profiles into one, keeping per-rank detail.

use crate::error::ProfileError;
use crate::format::{Coverage, Profile, RankSummary};

/// Merges `(rank, source, profile)` triples. Syscall counts and times add up; C adds up; the wall time
/// is the longest rank's; min/max combine; a merged median is re-estimated from the merged histogram.
pub fn merge(parts: Vec<(u32, String, Profile)>) -> Result<Profile, ProfileError> {
    let Some((_, _, first)) = parts.first() else {
        return Err(ProfileError::Merge("no profiles given".into()));
    };
    let mut out = first.clone();
    out.syscalls.clear();
    out.threads.clear();
    out.ranks.clear();
    out.processes.clear();
    out.wall_time_s = 0.0;
    out.compute_time_s = 0.0;
    out.collection.partial = false;
    out.collection
        .notes
        .push(format!("merged from {} rank profiles", parts.len()));
    // complete only if every rank's is; unknown if any rank's is
    let mut coverage = Some(Coverage::complete());
    for (_, _, p) in &parts {
        coverage = match (coverage, &p.collection.coverage) {
            (Some(mut all), Some(c)) => {
                all.complete &= c.complete;
                for m in &c.misses {
                    if !all.misses.contains(m) {
                        all.misses.push(m.clone());
                    }
                }
                for n in &c.not_recorded {
                    if !all.not_recorded.contains(n) {
                        all.not_recorded.push(n.clone());
                    }
                }
                Some(all)
            }
            _ => None,
        };
    }
    for (rank, source, p) in parts {
        if p.command != out.command {
            out.collection.notes.push(format!(
                "rank {rank} ran a different command: {}",
                p.command.join(" ")
            ));
        }
        out.wall_time_s = out.wall_time_s.max(p.wall_time_s);
        out.compute_time_s += p.compute_time_s;
        out.collection.partial |= p.collection.partial;
        out.ranks.push(RankSummary {
            rank,
            source: source.clone(),
            wall_time_s: p.wall_time_s,
            compute_time_s: p.compute_time_s,
            syscall_time_s: p.syscall_time_s(),
            syscalls: p.syscall_count(),
            partial: p.collection.partial,
        });
        for mut t in p.threads {
            t.rank = Some(rank);
            out.threads.push(t);
        }
        // Each rank's process tree, side by side (their times are each from their own start).
        for mut q in p.processes {
            q.rank = Some(rank);
            out.processes.push(q);
        }
        for s in p.syscalls {
            match out.syscalls.iter_mut().find(|o| o.name == s.name) {
                None => out.syscalls.push(s),
                Some(o) => {
                    let overflow = |field: &str| {
                        ProfileError::Merge(format!(
                            "rank {rank} ({source}): the merged '{}' {field} exceeds 2^64 - 1: a count in \
                             the input profiles is corrupt",
                            s.name
                        ))
                    };
                    o.count = o.count.checked_add(s.count).ok_or_else(|| overflow("count"))?;
                    o.errors = o.errors.checked_add(s.errors).ok_or_else(|| overflow("errors"))?;
                    o.total_s += s.total_s;
                    o.min_s = combine(o.min_s, s.min_s, f64::min);
                    o.max_s = combine(o.max_s, s.max_s, f64::max);
                    o.hist_log2_ns = o
                        .hist_log2_ns
                        .checked_merge(&s.hist_log2_ns)
                        .ok_or_else(|| overflow("hist_log2_ns"))?;
                    // Gaps only where every rank has them: a partial histogram would not sum to count.
                    o.gap_hist_log2_ns = if o.gap_hist_log2_ns.0.is_empty() || s.gap_hist_log2_ns.0.is_empty()
                    {
                        crate::Log2Histogram::default()
                    } else {
                        o.gap_hist_log2_ns
                            .checked_merge(&s.gap_hist_log2_ns)
                            .ok_or_else(|| overflow("gap_hist_log2_ns"))?
                    };
                    o.median_s = None;
                }
            }
        }
    }
    for s in &mut out.syscalls {
        if s.median_s.is_none() {
            s.median_s = s.hist_log2_ns.quantile_ns(0.5).map(|ns| ns * 1e-9);
        }
    }
    out.collection.coverage = coverage;
    out.ranks.sort_by_key(|r| r.rank);
    out.sort();
    // The sums of large finite times can be inf, which JSON saves as null and no load reads back.
    crate::load::validate(&format!("the merged profile of {} ranks", out.ranks.len()), &out)
        .map_err(|e| ProfileError::Merge(e.to_string()))?;
    Ok(out)
}

fn combine(a: Option<f64>, b: Option<f64>, f: fn(f64, f64) -> f64) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(f(x, y)),
        (x, None) => x,
        (None, y) => y,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::SyscallStats;

    #[test]
    fn merges_counts_and_keeps_ranks() {
        let mk = |n: u64, t: f64| {
            let mut p = Profile::new(vec!["a.out".into()], "t", "high");
            p.wall_time_s = t * 10.0;
            p.compute_time_s = t * 9.0;
            p.syscalls.push(SyscallStats {
                name: "write".into(),
                nr: 1,
                count: n,
                total_s: t,
                min_s: Some(t / n as f64),
                max_s: Some(t),
                ..Default::default()
            });
            p
        };
        let m = merge(vec![(1, "b".into(), mk(4, 2.0)), (0, "a".into(), mk(2, 1.0))]).ok();
        let m = m.as_ref();
        assert_eq!(m.map(|m| m.syscalls[0].count), Some(6));
        assert_eq!(m.map(|m| m.wall_time_s), Some(20.0));
        assert_eq!(
            m.map(|m| m.ranks.iter().map(|r| r.rank).collect::<Vec<_>>()),
            Some(vec![0, 1])
        );
        assert_eq!(m.and_then(|m| m.syscalls[0].min_s), Some(0.5));
    }

    /// Gaps add up where every rank has them; one rank without them leaves none (a partial
    /// histogram would not add up to the merged count).
    #[test]
    fn issue_15_gaps_merge_only_where_every_rank_has_them() {
        let mk = |n: u64, gaps: Vec<u64>| {
            let mut p = Profile::new(vec!["a.out".into()], "t", "high");
            p.syscalls.push(SyscallStats {
                name: "write".into(),
                nr: 1,
                count: n,
                gap_hist_log2_ns: crate::Log2Histogram(gaps),
                ..Default::default()
            });
            p
        };
        let both = merge(vec![
            (0, "a".into(), mk(2, vec![0, 2])),
            (1, "b".into(), mk(3, vec![1, 0, 2])),
        ])
        .expect("merge");
        assert_eq!(both.syscalls[0].gap_hist_log2_ns.0, vec![1, 2, 2]);
        let one = merge(vec![
            (0, "a".into(), mk(2, vec![0, 2])),
            (1, "b".into(), mk(3, vec![])),
        ])
        .expect("merge");
        assert!(one.syscalls[0].gap_hist_log2_ns.0.is_empty());
        assert_eq!(one.syscalls[0].count, 5);
    }
}
