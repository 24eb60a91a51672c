//! Per-call records (one line per system call with its thread, start and duration) and the profile
//! they add up to. Importers of traces (`perf trace` without `-s`) produce them; exporters (Chrome
//! trace JSON) consume them.

use crate::error::ProfileError;
use crate::format::{Profile, SyscallStats, ThreadStats};
use crate::hist::Log2Histogram;
use std::collections::BTreeMap;

/// One system call as a tracer recorded it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CallRecord {
    pub tid: u32,
    /// The process, where the tracer names it.
    pub pid: Option<u32>,
    /// The thread's command name.
    pub comm: String,
    pub name: String,
    pub nr: u32,
    /// Entry time, seconds from the trace's start.
    pub start_s: f64,
    pub duration_s: f64,
    /// The call returned an error (-4095..-1).
    pub error: bool,
}

/// The profile of `records` (from `origin`, written by `tool`): n(s), g(s), min/median/max and
/// histogram per call, per-thread counts and lifetimes; the wall time is first entry to last exit.
pub fn profile_of(
    origin: &str,
    tool: &str,
    command: Vec<String>,
    records: &[CallRecord],
) -> Result<Profile, ProfileError> {
    if records.is_empty() {
        return Err(ProfileError::Import {
            path: origin.into(),
            line: 1,
            msg: format!("no system-call records in this {tool} output"),
        });
    }
    let mut per_call: BTreeMap<&str, (u32, Vec<f64>, u64)> = BTreeMap::new();
    let mut threads: BTreeMap<u32, (Option<u32>, u64, f64, f64, f64)> = BTreeMap::new();
    let (mut first, mut last) = (f64::INFINITY, f64::NEG_INFINITY);
    for r in records {
        let e = per_call.entry(&r.name).or_insert((r.nr, Vec::new(), 0));
        e.1.push(r.duration_s);
        e.2 += u64::from(r.error);
        let end = r.start_s + r.duration_s;
        let t = threads.entry(r.tid).or_insert((r.pid, 0, 0.0, r.start_s, end));
        t.1 += 1;
        t.2 += r.duration_s;
        t.3 = t.3.min(r.start_s);
        t.4 = t.4.max(end);
        first = first.min(r.start_s);
        last = last.max(end);
    }
    let mut p = Profile::new(command, tool, "imported");
    p.collection.source = Some(origin.to_string());
    p.collection.wall_clock_syscall_times = true;
    p.collection.notes.push(format!(
        "imported from {} per-call records of {tool}; wall time = first entry to last exit; C = wall − Σg",
        records.len()
    ));
    for (name, (nr, mut d, errors)) in per_call {
        d.sort_by(f64::total_cmp);
        let mut hist = Log2Histogram::default();
        for x in &d {
            hist.record((x * 1e9).round() as u64);
        }
        p.syscalls.push(SyscallStats {
            name: name.to_string(),
            nr,
            count: d.len() as u64,
            total_s: d.iter().fold(0.0, |a, b| a + b),
            errors,
            min_s: d.first().copied(),
            median_s: multios_stats::median(&d),
            max_s: d.last().copied(),
            hist_log2_ns: hist,
            gap_hist_log2_ns: Log2Histogram::default(),
            placement: None,
        });
    }
    p.threads = threads
        .into_iter()
        .map(|(tid, (pid, n, g, s, e))| ThreadStats {
            tid,
            pid,
            rank: None,
            syscalls: n,
            syscall_time_s: g,
            lifetime_s: (e - s).max(0.0),
        })
        .collect();
    p.wall_time_s = (last - first).max(0.0);
    let g = p.syscall_time_s();
    if g > p.wall_time_s {
        p.collection.notes.push(format!(
            "Σg = {g:.6} s exceeds the wall time {:.6} s (calls of several threads overlap); C set to 0",
            p.wall_time_s
        ));
    }
    p.compute_time_s = (p.wall_time_s - g).max(0.0);
    p.sort();
    crate::load::validate(origin, &p)?;
    Ok(p)
}
