//! `multios map run`: runs a program with a placement applied as its processes and threads appear.
//!
//! Mechanism: the kernel's process events (the proc connector, [`crate::procevents`]). The program
//! starts held between fork and exec; its first thread is placed before it execs; then every fork,
//! exec and command-name change of a process in the program's tree arrives as an event, and the
//! thread concerned is matched to the placement and given its CPUs with sched_setaffinity. Nothing
//! runs between events: the runner sleeps in poll(2) on the event socket and on a pidfd of the
//! program (so it costs no CPU while the program runs, unlike a /proc walk on a timer). A walk of
//! the tree through /proc/PID/task/TID/children is kept as a safety net: every `sweep` interval, and
//! at once when the event socket overflowed. A new thread runs where its parent's affinity lets it
//! until its event is handled; `RunReport` gives the delays measured.
//!
//! A pinned group whose CPU goes to other programs while its threads wait is released to every CPU
//! the program may use for the rest of the run ([`contention`]).
//!
//! Threads are matched by command name and order of appearance: the k-th thread named `gzip` gets
//! the CPUs of the k-th node named `gzip` in the recorded graph (tids differ between runs). A
//! pinned node gets one CPU; a free node its domain (Linux balances it there); a thread no rule
//! matches gets every CPU this process may use (it would otherwise keep a pinned parent's CPU).

mod contention;

pub use contention::Released;

use crate::place::Placement;
use crate::procevents::{Event, Listener};
use multios_host::cpus::CpuSet;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("nothing to run: give a command after `--`")]
    NoCommand,
    #[error("the placement puts {what} on CPU {cpu}, which this process may not use (allowed: {allowed}); place on this machine's topology (omit --topology), or run where those CPUs are allowed (taskset, cgroup cpuset)")]
    CpuNotAllowed { what: String, cpu: u32, allowed: String },
    #[error("cannot listen to process events (the proc connector needs root or CAP_NET_ADMIN): {0}")]
    Events(std::io::Error),
    #[error("cannot start '{program}': {source}")]
    Spawn { program: String, source: std::io::Error },
    #[error("{what}: {source}")]
    Os { what: String, source: std::io::Error },
}

/// The k-th thread named `comm` may run on `cpus` (one CPU: pinned).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    pub comm: String,
    pub ordinal: usize,
    pub cpus: Vec<u32>,
}

impl Rule {
    /// The k-th thread named `comm` pinned to `cpu`.
    pub fn pin(comm: &str, ordinal: usize, cpu: u32) -> Rule {
        Rule {
            comm: comm.to_string(),
            ordinal,
            cpus: vec![cpu],
        }
    }
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
                cpus: n.cpus(),
            }
        })
        .collect()
}

/// Checks that every rule names CPUs this process may use.
pub fn check_allowed(rules: &[Rule]) -> Result<(), RunError> {
    let allowed = CpuSet::allowed();
    for r in rules {
        if let Some(&cpu) = r.cpus.iter().find(|&&c| !allowed.contains(c as usize)) {
            return Err(RunError::CpuNotAllowed {
                what: format!("'{}' #{}", r.comm, r.ordinal),
                cpu,
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
    /// The CPUs given, as a list ("0", "0-1").
    pub cpus: String,
    /// Whether a rule matched (otherwise the thread was given every allowed CPU).
    pub matched: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunReport {
    pub exit_code: Option<i32>,
    pub wall_s: f64,
    pub applied: Vec<Applied>,
    /// Threads seen that no rule matched (given every allowed CPU).
    pub unmatched: usize,
    /// Process events handled (the program's own) and walks of /proc made.
    pub events: u64,
    pub walks: u64,
    /// Times the event socket overflowed (events lost; a walk made up for them).
    pub overflows: u64,
    /// Median and largest delay from the kernel's event (a fork, an exec) to the thread's
    /// placement, µs (the time a new thread runs where its parent's affinity lets it).
    pub apply_median_us: f64,
    pub apply_max_us: f64,
    /// CPUs whose pinned groups were released because other programs took the CPU.
    #[serde(default)]
    pub released: Vec<Released>,
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

/// The rules and what has been applied so far.
struct Applier<'a> {
    rules: &'a [Rule],
    allowed: CpuSet,
    /// tid → the command name it was placed under.
    seen: BTreeMap<u32, String>,
    /// Per command name: the ordinals taken so far (a thread that changes its name again gives its
    /// ordinal back, so a transient name — a shell or a launcher script that execs the program —
    /// does not use up the program's), and the tid holding each.
    taken: BTreeMap<String, BTreeMap<usize, u32>>,
    applied: Vec<Applied>,
    unmatched: usize,
    delays: Vec<f64>,
    watch: contention::Watch,
}

impl Applier<'_> {
    /// Places `tid`, now named `name`, unless it was placed under that name already.
    fn place(&mut self, tid: u32, name: &str) {
        if self.seen.get(&tid).map(String::as_str) == Some(name) {
            return;
        }
        if let Some(old) = self.seen.insert(tid, name.to_string()) {
            if let Some(t) = self.taken.get_mut(&old) {
                t.retain(|_, holder| *holder != tid);
            }
        }
        let t = self.taken.entry(name.to_string()).or_default();
        let k = (0..).find(|k| !t.contains_key(k)).unwrap_or(0);
        t.insert(k, tid);
        let rule = self.rules.iter().find(|r| r.comm == name && r.ordinal == k);
        let set = match rule {
            Some(r) if matches!(r.cpus[..], [cpu] if self.watch.is_released(cpu)) => self.allowed.clone(),
            Some(r) => CpuSet(r.cpus.iter().map(|&c| c as usize).collect()),
            None => {
                self.unmatched += 1;
                self.allowed.clone()
            }
        };
        let cpus: Vec<u32> = set.to_vec().into_iter().map(|c| c as u32).collect();
        self.watch.placed(tid, &cpus);
        if multios_host::cpus::pin_thread(tid as i32, &set).is_ok() {
            self.applied.push(Applied {
                tid,
                comm: name.to_string(),
                cpus: set.to_string(),
                matched: rule.is_some(),
            });
        }
    }

    /// Places `tid` under its current name if it still exists and belongs to a process of the
    /// program's tree (`tree`; never this process: process ids are reused, and a tid seen in an
    /// event may belong to someone else by the time it is handled); `event_ns` is the kernel's time
    /// of the event that announced it (CLOCK_MONOTONIC), when there was one.
    fn visit(&mut self, tid: u32, tree: &BTreeSet<u32>, event_ns: Option<u64>) {
        let ours = crate::procfs::tgid_of(tid)
            .is_some_and(|tgid| tgid != std::process::id() && tree.contains(&tgid));
        if !ours {
            return;
        }
        if let Some(name) = comm(tid) {
            let before = self.applied.len();
            self.place(tid, &name);
            if let (true, Some(t)) = (self.applied.len() > before, event_ns) {
                let now = crate::sys::monotonic_ns();
                self.delays.push(now.saturating_sub(t) as f64 / 1e3);
            }
        }
    }
}

/// The calling thread at real-time priority while it lives.
struct Realtime(bool);

impl Realtime {
    fn on() -> Realtime {
        Realtime(crate::sys::realtime(true).is_ok())
    }
}

impl Drop for Realtime {
    fn drop(&mut self) {
        if self.0 {
            let _ = crate::sys::realtime(false);
        }
    }
}

/// Runs `command` with `rules` applied; the root's rule (its program's name) is applied before it
/// execs. `sweep` is the interval of the safety-net walk of /proc.
pub fn run(command: &[String], rules: &[Rule], sweep: Duration) -> Result<RunReport, RunError> {
    run_with(command, rules, sweep, false)
}

/// [`run`], with the program's standard output and error discarded when `quiet`.
pub fn run_with(
    command: &[String],
    rules: &[Rule],
    sweep: Duration,
    quiet: bool,
) -> Result<RunReport, RunError> {
    let Some(program) = command.first() else {
        return Err(RunError::NoCommand);
    };
    check_allowed(rules)?;
    let mut listener = Listener::new().map_err(RunError::Events)?;
    let started = Instant::now();
    let (hold_r, hold_w) = crate::sys::pipe().map_err(|source| RunError::Os {
        what: "pipe".into(),
        source,
    })?;
    let mut cmd = crate::sys::held_command(command, &hold_r);
    if quiet {
        cmd.stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
    }
    let spawned = cmd.spawn();
    drop(hold_r);
    let mut child = spawned.map_err(|source| RunError::Spawn {
        program: program.clone(),
        source,
    })?;
    let root = child.id();
    let exited: Option<OwnedFd> = crate::sys::pidfd_open(root, false).ok();
    let mut a = Applier {
        rules,
        allowed: CpuSet::allowed(),
        seen: BTreeMap::new(),
        taken: BTreeMap::new(),
        applied: Vec::new(),
        unmatched: 0,
        delays: Vec::new(),
        watch: contention::Watch::new(started),
    };
    let root_name = std::path::Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().chars().take(15).collect::<String>())
        .unwrap_or_default();
    // The root, under the name it will have after exec.
    a.place(root, &root_name);
    let mut tree: BTreeSet<u32> = BTreeSet::from([root]);
    let mut w = std::fs::File::from(hold_w);
    let _ = w.write_all(b"go\n");
    drop(w);
    // Handle events ahead of the program (children never inherit it; dropped on return).
    let _rt = Realtime::on();
    let (mut events, mut walks) = (0u64, 0u64);
    let mut last_walk = Instant::now();
    let sweep_ms = sweep.as_millis().clamp(1, i32::MAX as u128) as i32;
    let exit_code = loop {
        let mut fds = vec![listener.fd()];
        if let Some(e) = &exited {
            fds.push(e);
        }
        let ready = crate::sys::poll_readable(&fds, sweep_ms).map_err(|source| RunError::Os {
            what: "poll".into(),
            source,
        })?;
        let mut lost = false;
        if ready.first().copied().unwrap_or(false) {
            for (t, ev) in listener.drain(&mut lost) {
                match ev {
                    Event::Fork {
                        parent_tgid,
                        child_tid,
                        child_tgid,
                    } if tree.contains(&parent_tgid) => {
                        events += 1;
                        tree.insert(child_tgid);
                        a.visit(child_tid, &tree, Some(t));
                    }
                    Event::Exec { tid, tgid } | Event::Comm { tid, tgid } if tree.contains(&tgid) => {
                        events += 1;
                        a.visit(tid, &tree, Some(t));
                    }
                    Event::Exit { tid, tgid } if tid == tgid && tgid != root => {
                        tree.remove(&tgid);
                    }
                    _ => {}
                }
            }
        }
        if lost || last_walk.elapsed() >= sweep {
            walks += 1;
            last_walk = Instant::now();
            let mut stack = vec![root];
            let mut procs = BTreeSet::new();
            while let Some(p) = stack.pop() {
                if procs.insert(p) {
                    stack.extend(children(p));
                }
            }
            // the tree as it is now: processes that ended (and whose ids may be reused) drop out
            tree = procs;
            tree.insert(root);
            for &p in &tree {
                for tid in crate::procfs::threads_of(p) {
                    a.visit(tid, &tree, None);
                }
            }
            for tid in a.watch.check() {
                let _ = multios_host::cpus::pin_thread(tid as i32, &a.allowed);
            }
        }
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
    };
    let mut d = a.delays.clone();
    d.sort_by(f64::total_cmp);
    Ok(RunReport {
        exit_code,
        wall_s: started.elapsed().as_secs_f64(),
        applied: a.applied,
        unmatched: a.unmatched,
        events,
        walks,
        overflows: listener.overflows,
        apply_median_us: multios_stats::median(&d).unwrap_or(0.0),
        apply_max_us: d.last().copied().unwrap_or(0.0),
        released: a.watch.log,
    })
}
