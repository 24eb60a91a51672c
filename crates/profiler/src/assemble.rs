//! Turning what a backend collected into a profile: names, C, per-thread rates.

use crate::raw::Raw;
use multios_profile::{Exit, Log2Histogram, Profile, SyscallStats, ThreadStats};

/// How the run went, besides the counts.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    pub command: Vec<String>,
    pub tool: String,
    pub accuracy: String,
    /// From the target's exec to the last traced exit (or the end of attaching), ns.
    pub wall_ns: u64,
    pub exit: Option<Exit>,
    pub partial: bool,
    pub bias_ns: Option<f64>,
    pub notes: Vec<String>,
    /// What the backend did not see of the run (empty: every call of every traced task was counted).
    pub misses: Vec<String>,
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// Builds the profile. C = Σ over traced threads of (exit − start) − Σ g(s), where a thread starts at
/// its fork (the root: at its exec) and g(s) already carries the bias correction.
pub fn assemble(raw: &Raw, facts: RunFacts) -> Profile {
    let mut p = Profile::new(facts.command, &facts.tool, &facts.accuracy);
    p.collection.bias_ns_subtracted = facts.bias_ns;
    p.collection.partial = facts.partial;
    p.collection.notes = facts.notes;
    p.collection.coverage = Some(multios_profile::Coverage {
        complete: facts.misses.is_empty(),
        misses: facts.misses,
        not_recorded: Vec::new(),
    });
    p.exit = facts.exit;
    p.wall_time_s = secs(facts.wall_ns);
    let mut unknown = 0u64;
    for c in &raw.calls {
        let Some(name) = multios_syscalls::by_number(c.nr) else {
            unknown += c.count;
            continue;
        };
        let hist = Log2Histogram(c.hist.clone());
        p.syscalls.push(SyscallStats {
            name: name.to_string(),
            nr: c.nr,
            count: c.count,
            total_s: secs(c.total_ns),
            errors: c.errors,
            min_s: Some(secs(c.min_ns)),
            median_s: hist
                .quantile_ns(0.5)
                .map(|ns| (ns * 1e-9).clamp(secs(c.min_ns), secs(c.max_ns))),
            max_s: Some(secs(c.max_ns)),
            hist_log2_ns: hist,
            placement: None,
        });
    }
    if unknown > 0 {
        p.collection.notes.push(format!(
            "{unknown} calls to numbers missing from the x86_64 table were left out"
        ));
    }
    p.sort();
    let g = p.syscall_time_s();
    let lifetimes: u64 = raw
        .threads
        .iter()
        .map(|t| t.end_ns.saturating_sub(t.start_ns))
        .sum();
    p.compute_time_s = if raw.threads.is_empty() {
        (p.wall_time_s - g).max(0.0)
    } else {
        (secs(lifetimes) - g).max(0.0)
    };
    p.threads = raw
        .threads
        .iter()
        .map(|t| ThreadStats {
            tid: t.tid,
            pid: Some(t.tgid),
            rank: None,
            syscalls: t.calls,
            syscall_time_s: secs(t.syscall_ns),
            lifetime_s: secs(t.end_ns.saturating_sub(t.start_ns)),
        })
        .collect();
    p
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::{RawCall, RawThread};

    #[test]
    fn c_is_lifetimes_minus_g() {
        let mut read = RawCall {
            nr: 0,
            ..Default::default()
        };
        read.record(1_000, false);
        read.record(3_000, true);
        let raw = Raw {
            calls: vec![read],
            threads: vec![
                RawThread {
                    tid: 10,
                    tgid: 10,
                    start_ns: 0,
                    end_ns: 10_000,
                    calls: 1,
                    syscall_ns: 1_000,
                },
                RawThread {
                    tid: 11,
                    tgid: 10,
                    start_ns: 2_000,
                    end_ns: 8_000,
                    calls: 1,
                    syscall_ns: 3_000,
                },
            ],
        };
        let p = assemble(
            &raw,
            RunFacts {
                wall_ns: 10_000,
                tool: "t".into(),
                accuracy: "high".into(),
                ..Default::default()
            },
        );
        assert!((p.compute_time_s - 12e-6).abs() < 1e-12, "{}", p.compute_time_s);
        let s = p.syscall("read").expect("read is there");
        assert_eq!((s.count, s.errors), (2, 1));
        assert_eq!(s.min_s, Some(1e-6));
        assert_eq!(p.threads.len(), 2);
        assert!((p.threads[1].rate_hz() - 1.0 / 6e-6).abs() < 1.0);
    }
}
