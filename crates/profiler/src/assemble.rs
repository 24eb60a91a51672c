//! Turning what a backend collected into a profile: names, C, per-thread rates.

use crate::raw::Raw;
use multios_profile::{
    Exit, Log2Histogram, MemoryBytes, ProcessCall, ProcessStats, Profile, SyscallStats, ThreadStats,
};
use std::collections::BTreeMap;

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
    /// Write `processes[]` (the run was profiled per process).
    pub per_process: bool,
    /// The run's start on the threads' clock (ns): `processes[]` times count from it.
    pub origin_ns: u64,
    /// The directory the traced program started in: a relative name it exec'd is read from there.
    pub cwd: Option<std::path::PathBuf>,
}

/// `v` without its trailing empty buckets.
fn trimmed(v: &[u64]) -> Vec<u64> {
    let n = v.iter().rposition(|&c| c > 0).map_or(0, |i| i + 1);
    v[..n].to_vec()
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
    p.memory_bytes = raw.mem_bytes.map(
        |[mmap, munmap, mremap_old, mremap_new, mmap_file_calls, mmap_file]| MemoryBytes {
            mmap,
            munmap,
            mremap_old,
            mremap_new,
            mmap_file_calls,
            mmap_file,
        },
    );
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
            // With the per-process record only: a profile without it stays readable by older readers.
            gap_hist_log2_ns: if facts.per_process {
                Log2Histogram(trimmed(&c.gaps))
            } else {
                Log2Histogram::default()
            },
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
    let warnings = c_warnings(raw, lifetimes, g);
    if !warnings.is_empty() {
        if let Some(c) = &mut p.collection.coverage {
            c.complete = false;
            c.misses.extend(warnings);
        }
    }
    if facts.per_process {
        p.processes = processes(raw, facts.origin_ns);
        add_images(&mut p, raw, facts.origin_ns, facts.cwd.as_deref());
        let per: u64 = p
            .processes
            .iter()
            .flat_map(|q| &q.syscalls)
            .map(|c| c.count)
            .sum();
        let all = p.syscall_count();
        if per < all {
            let miss = format!(
                "{} of {all} calls in processes[] (the per-process table was full)",
                all - per
            );
            if let Some(c) = &mut p.collection.coverage {
                c.complete = false;
                c.misses.push(miss);
            }
        }
    }
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

/// What makes C doubtful, said rather than hidden (issue #3): `threads[]` holding other calls than
/// `syscalls[]` (a thread's record lost: C misses its lifetime, or counts it without its calls),
/// and Σ lifetimes below Σg, which makes C 0. A thread that exec'd lost the record of the leader
/// it replaced, and C was silently 0.
fn c_warnings(raw: &Raw, lifetimes_ns: u64, g: f64) -> Vec<String> {
    if raw.threads.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let calls: u64 = raw.calls.iter().map(|c| c.count).sum();
    let ns: u64 = raw.calls.iter().map(|c| c.total_ns).sum();
    let t_calls: u64 = raw.threads.iter().map(|t| t.calls).sum();
    let t_ns: u64 = raw.threads.iter().map(|t| t.syscall_ns).sum();
    if (t_calls, t_ns) != (calls, ns) {
        out.push(format!(
            "threads[] hold {t_calls} calls and {:.6} s in calls where syscalls[] has {calls} and {:.6} s: \
             some thread's record is missing or wrong, and C (Σ lifetimes − Σg) with it",
            secs(t_ns),
            secs(ns)
        ));
    }
    if secs(lifetimes_ns) < g {
        out.push(format!(
            "C: the threads' lifetimes add up to {:.6} s, less than Σg = {g:.6} s; C set to 0",
            secs(lifetimes_ns)
        ));
    }
    out
}

/// Each process's execs (their files' sizes read back, `images.rs`) and executable file
/// mappings; a note for the images whose sizes are unknown.
fn add_images(p: &mut Profile, raw: &Raw, origin: u64, cwd: Option<&std::path::Path>) {
    let mut unknown = Vec::new();
    for q in &mut p.processes {
        q.images = raw
            .execs
            .iter()
            .filter(|e| e.tgid == q.pid)
            .map(|e| crate::images::exec_image(e, origin, cwd))
            .collect();
        q.code_mappings = raw
            .code
            .iter()
            .find(|c| c.tgid == q.pid)
            .map(|c| multios_profile::CodeMappings {
                calls: c.calls,
                bytes: c.bytes,
            });
        for i in &q.images {
            let files = std::iter::once(&i.image).chain(&i.interp);
            unknown.extend(files.filter_map(|f| f.unknown.clone()));
        }
    }
    if !unknown.is_empty() {
        unknown.dedup();
        p.collection.notes.push(format!(
            "the sizes of {} exec'd image(s) are unknown (processes[].images[].unknown), e.g. {}",
            unknown.len(),
            unknown[0]
        ));
    }
}

fn secs_since(ns: u64, origin: u64) -> f64 {
    secs(ns.saturating_sub(origin))
}

/// One entry per traced process (thread group): its threads' span and lifetimes, its parent (the
/// leader's), its name (the leader's at exit) and its own calls; sorted by start.
fn processes(raw: &Raw, origin: u64) -> Vec<ProcessStats> {
    let mut by_pid: BTreeMap<u32, Vec<&crate::raw::RawThread>> = BTreeMap::new();
    for t in &raw.threads {
        by_pid.entry(t.tgid).or_default().push(t);
    }
    let mut out: Vec<ProcessStats> = by_pid
        .into_iter()
        .map(|(pid, threads)| {
            let leader = threads
                .iter()
                .find(|t| t.tid == pid)
                .or_else(|| threads.iter().min_by_key(|t| t.start_ns))
                .copied();
            let start = threads.iter().map(|t| t.start_ns).min().unwrap_or(origin);
            let end = threads.iter().map(|t| t.end_ns).max().unwrap_or(start);
            let lifetime: u64 = threads.iter().map(|t| t.end_ns.saturating_sub(t.start_ns)).sum();
            let mut syscalls: Vec<ProcessCall> = raw
                .proc_calls
                .iter()
                .filter(|c| c.tgid == pid)
                .filter_map(|c| {
                    Some(ProcessCall {
                        name: multios_syscalls::by_number(c.nr)?.to_string(),
                        count: c.count,
                        total_s: secs(c.total_ns),
                    })
                })
                .collect();
            syscalls.sort_by(|a, b| b.total_s.total_cmp(&a.total_s).then_with(|| a.name.cmp(&b.name)));
            let g: f64 = syscalls.iter().map(|c| c.total_s).sum();
            ProcessStats {
                pid,
                ppid: leader.map(|l| l.ptgid).filter(|&pp| pp != 0 && pp != pid),
                rank: None,
                name: leader.map(|l| l.comm.clone()).unwrap_or_default(),
                start_s: secs_since(start, origin),
                end_s: secs_since(end, origin).max(secs_since(start, origin)),
                threads: threads.len() as u32,
                lifetime_s: secs(lifetime),
                compute_time_s: (secs(lifetime) - g).max(0.0),
                syscalls,
                images: Vec::new(),
                code_mappings: None,
                anon_maps: raw.anon.iter().find(|a| a.tgid == pid).map(|a| a.maps.clone()),
            }
        })
        .collect();
    out.sort_by(|a, b| a.start_s.total_cmp(&b.start_s).then(a.pid.cmp(&b.pid)));
    out
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
            mem_bytes: None,
            calls: vec![read],
            threads: vec![
                RawThread {
                    tid: 10,
                    tgid: 10,
                    ptgid: 0,
                    comm: "a".into(),
                    start_ns: 0,
                    end_ns: 10_000,
                    calls: 1,
                    syscall_ns: 1_000,
                    exit_status: None,
                },
                RawThread {
                    tid: 11,
                    tgid: 10,
                    ptgid: 10,
                    comm: "a".into(),
                    start_ns: 2_000,
                    end_ns: 8_000,
                    calls: 1,
                    syscall_ns: 3_000,
                    exit_status: None,
                },
            ],
            proc_calls: Vec::new(),
            ..Raw::default()
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

    #[test]
    fn issue_3_threads_missing_calls_and_c_clamped_are_coverage_misses() {
        let mut sleep = RawCall {
            nr: 230,
            ..Default::default()
        };
        sleep.record(9_000, false);
        sleep.record(9_000, false);
        // Only one of the two sleeping threads was recorded: Σ lifetimes < Σg.
        let raw = Raw {
            calls: vec![sleep],
            threads: vec![RawThread {
                tid: 10,
                tgid: 10,
                start_ns: 0,
                end_ns: 10_000,
                calls: 1,
                syscall_ns: 9_000,
                ..RawThread::default()
            }],
            ..Raw::default()
        };
        let p = assemble(&raw, RunFacts::default());
        assert_eq!(p.compute_time_s, 0.0);
        let c = p.collection.coverage.expect("coverage");
        assert!(!c.complete);
        assert!(
            c.misses[0].starts_with("threads[] hold 1 calls"),
            "{:?}",
            c.misses
        );
        assert!(c.misses[1].contains("C set to 0"), "{:?}", c.misses);
    }

    #[test]
    fn issue_15_processes_group_threads_and_take_their_own_calls() {
        let t = |tid, tgid, ptgid, comm: &str, start_ns, end_ns| RawThread {
            tid,
            tgid,
            ptgid,
            comm: comm.into(),
            start_ns,
            end_ns,
            calls: 0,
            syscall_ns: 0,
            exit_status: None,
        };
        let raw = Raw {
            mem_bytes: None,
            calls: Vec::new(),
            threads: vec![
                t(100, 100, 0, "sh", 1_000, 11_000),
                t(101, 101, 100, "sort", 2_000, 6_000),
                t(102, 101, 101, "sort", 3_000, 5_000),
                t(103, 103, 100, "uniq", 2_500, 10_000),
            ],
            proc_calls: vec![
                crate::raw::RawProcCall {
                    tgid: 101,
                    nr: 0,
                    count: 3,
                    total_ns: 1_000,
                },
                crate::raw::RawProcCall {
                    tgid: 100,
                    nr: 61,
                    count: 2,
                    total_ns: 8_000,
                },
            ],
            ..Raw::default()
        };
        let ps = processes(&raw, 1_000);
        assert_eq!(ps.iter().map(|p| p.pid).collect::<Vec<_>>(), [100, 101, 103]);
        assert_eq!((ps[0].ppid, ps[0].name.as_str()), (None, "sh"));
        assert_eq!((ps[1].ppid, ps[1].threads), (Some(100), 2));
        assert!((ps[1].start_s - 1e-6).abs() < 1e-15 && (ps[1].end_s - 5e-6).abs() < 1e-15);
        assert!((ps[1].lifetime_s - 6e-6).abs() < 1e-15);
        assert!(
            (ps[1].compute_time_s - 5e-6).abs() < 1e-15,
            "{}",
            ps[1].compute_time_s
        );
        assert_eq!(ps[1].syscalls[0].name, "read");
        assert_eq!(ps[0].syscalls[0].name, "wait4");
        assert!(ps[2].syscalls.is_empty());
    }
}
