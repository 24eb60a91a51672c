//! `multios map run`: runs a program with a placement applied as its processes and threads appear.
//!
//! Mechanism: polling. The program starts held between fork and exec; its first thread is pinned
//! before it execs; then, every `poll` interval, the process tree is walked through
//! /proc/PID/task/TID/children and every thread not seen before (or whose command name changed, as
//! after an exec) is matched to the placement and pinned with sched_setaffinity. A thread therefore
//! runs unplaced for at most one interval plus one walk; `RunReport` gives the walk times measured.
//! Threads are matched by command name and order of appearance: the k-th thread named `gzip` gets
//! the CPU of the k-th node named `gzip` in the recorded graph (tids differ between runs).

use crate::place::Placement;
use multios_host::cpus::CpuSet;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("nothing to run: give a command after `--`")]
    NoCommand,
    #[error("the placement puts {what} on CPU {cpu}, which this process may not use (allowed: {allowed}); place on this machine's topology (omit --topology) or restrict with --cpus")]
    CpuNotAllowed { what: String, cpu: u32, allowed: String },
    #[error("cannot start '{program}': {source}")]
    Spawn { program: String, source: std::io::Error },
    #[error("{what}: {source}")]
    Os { what: String, source: std::io::Error },
}

/// The k-th thread named `comm` goes on `cpu`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    pub comm: String,
    pub ordinal: usize,
    pub cpu: u32,
}

/// Rules from a placement: per command name, nodes in tid order.
pub fn rules(p: &Placement) -> Vec<Rule> {
    let mut nodes: Vec<_> = p.nodes.iter().collect();
    nodes.sort_by_key(|n| n.id);
    let mut count: BTreeMap<&str, usize> = BTreeMap::new();
    nodes
        .into_iter()
        .map(|n| {
            let k = count.entry(n.comm.as_str()).or_default();
            *k += 1;
            Rule {
                comm: n.comm.clone(),
                ordinal: *k - 1,
                cpu: n.cpu,
            }
        })
        .collect()
}

/// Checks that every rule names a CPU this process may use.
pub fn check_allowed(rules: &[Rule]) -> Result<(), RunError> {
    let allowed = CpuSet::allowed();
    for r in rules {
        if !allowed.contains(r.cpu as usize) {
            return Err(RunError::CpuNotAllowed {
                what: format!("'{}' #{}", r.comm, r.ordinal),
                cpu: r.cpu,
                allowed: allowed.to_string(),
            });
        }
    }
    Ok(())
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Applied {
    pub tid: u32,
    pub comm: String,
    pub cpu: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    pub exit_code: Option<i32>,
    pub wall_s: f64,
    pub applied: Vec<Applied>,
    /// Threads seen that no rule matched (left where Linux put them).
    pub unmatched: usize,
    pub poll_us: u64,
    /// Median and largest time of one walk of the process tree, µs.
    pub walk_median_us: f64,
    pub walk_max_us: f64,
}

fn children(tid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{tid}/task"))
        .map(|d| {
            d.flatten()
                .flat_map(|t| {
                    std::fs::read_to_string(t.path().join("children"))
                        .unwrap_or_default()
                        .split_whitespace()
                        .filter_map(|c| c.parse().ok())
                        .collect::<Vec<u32>>()
                })
                .collect()
        })
        .unwrap_or_default()
}

fn comm(tid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{tid}/comm"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Runs `command` with `rules` applied; `root_cpu` pins the first thread before exec.
pub fn run(command: &[String], rules: &[Rule], poll: Duration) -> Result<RunReport, RunError> {
    let Some(program) = command.first() else {
        return Err(RunError::NoCommand);
    };
    check_allowed(rules)?;
    let started = Instant::now();
    let (hold_r, hold_w) = crate::sys::pipe().map_err(|source| RunError::Os {
        what: "pipe".into(),
        source,
    })?;
    let spawned = crate::sys::held_command(command, &hold_r).spawn();
    drop(hold_r);
    let mut child = spawned.map_err(|source| RunError::Spawn {
        program: program.clone(),
        source,
    })?;
    let root = child.id();
    let mut seen: BTreeMap<u32, String> = BTreeMap::new();
    let mut used: BTreeMap<String, usize> = BTreeMap::new();
    let mut applied = Vec::new();
    let mut unmatched = 0usize;
    let root_name = std::path::Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().chars().take(15).collect::<String>())
        .unwrap_or_default();
    let mut assign = |tid: u32, name: &str, applied: &mut Vec<Applied>, unmatched: &mut usize| {
        let k = used.entry(name.to_string()).or_default();
        match rules.iter().find(|r| r.comm == name && r.ordinal == *k) {
            Some(r) => {
                *k += 1;
                let set = CpuSet(BTreeSet::from([r.cpu as usize]));
                if multios_host::cpus::pin_thread(tid as i32, &set).is_ok() {
                    applied.push(Applied {
                        tid,
                        comm: name.to_string(),
                        cpu: r.cpu,
                    });
                }
            }
            None => *unmatched += 1,
        }
    };
    // The root, under the name it will have after exec.
    assign(root, &root_name, &mut applied, &mut unmatched);
    seen.insert(root, root_name.clone());
    let mut w = std::fs::File::from(hold_w);
    let _ = w.write_all(b"go\n");
    drop(w);
    let mut walks: Vec<f64> = Vec::new();
    let exit_code = loop {
        let t0 = Instant::now();
        let mut stack = vec![root];
        let mut procs = BTreeSet::new();
        while let Some(p) = stack.pop() {
            if procs.insert(p) {
                stack.extend(children(p));
            }
        }
        for p in procs {
            for tid in crate::procfs::threads_of(p) {
                let Some(name) = comm(tid) else { continue };
                if seen.get(&tid) != Some(&name) {
                    seen.insert(tid, name.clone());
                    assign(tid, &name, &mut applied, &mut unmatched);
                }
            }
        }
        walks.push(t0.elapsed().as_secs_f64() * 1e6);
        match child.try_wait() {
            Ok(Some(status)) => break status.code(),
            Ok(None) => {}
            Err(source) => {
                return Err(RunError::Os {
                    what: "waiting for the command".into(),
                    source,
                })
            }
        }
        std::thread::sleep(poll);
    };
    walks.sort_by(f64::total_cmp);
    Ok(RunReport {
        exit_code,
        wall_s: started.elapsed().as_secs_f64(),
        applied,
        unmatched,
        poll_us: poll.as_micros() as u64,
        walk_median_us: walks.get(walks.len() / 2).copied().unwrap_or(0.0),
        walk_max_us: walks.last().copied().unwrap_or(0.0),
    })
}
