//! `multios map run`: runs a program with a placement applied as its processes and threads appear.
//!
//! Whether to apply it at all is decided first ([`crate::decide`]): only when the model predicts the
//! placement faster than Linux's placement (every thread free) by more than a margin; otherwise
//! the run gets no rules, which is Linux's placement. [`run_plan`] runs such a plan and records its
//! decision in the report.
//!
//! Nothing to place: when every rule gives every CPU this process may use (the placement pins
//! nothing; a new thread inherits exactly that from its creator), the program is spawned and waited
//! for, nothing else: no event socket, no watcher, no walk of /proc ([`RunReport::watched`] false).
//!
//! Otherwise the mechanism is the kernel's process events (the proc connector,
//! [`crate::procevents`]). The program is spawned with its first thread's CPUs (inherited from this
//! thread for the moment of the spawn, [`spawn`]); every fork, exec and command-name change of a
//! process in the program's tree then arrives as an event, queued from before the spawn, and the
//! thread concerned is matched to the placement and given its CPUs with sched_setaffinity. Between
//! events the runner sleeps in poll(2) on the event socket and on a pidfd of the program; it wakes
//! on a timer (every `sweep`) only while a pinned group is watched for contention ([`contention`]).
//! A walk of the tree through /proc/PID/task/TID/children makes up for events lost when the socket
//! overflowed. A new thread runs where its creator's affinity lets it until its event is handled;
//! `RunReport` gives the delays measured, the events received (the whole machine's: each woke the
//! runner) and the CPU time the runner used.
//!
//! A pinned group whose CPU goes to other programs while its threads wait is released to every CPU
//! the program may use for the rest of the run ([`contention`]).
//!
//! Threads are matched by command name and order of appearance: the k-th thread named `gzip` gets
//! the CPUs of the k-th node named `gzip` in the recorded graph (tids differ between runs). A
//! pinned node gets one CPU; a free node its domain (Linux balances it there); a thread no rule
//! matches gets every CPU this process may use (it would otherwise keep a pinned parent's CPU).

mod contention;
mod spawn;

pub use contention::Released;
pub use spawn::spawn_on;

use crate::place::Placement;
use crate::procevents::{Event, Listener};
use multios_host::cpus::CpuSet;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsStr;
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
    #[error(transparent)]
    Program(#[from] crate::program::ProgramError),
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
    /// Whether the program was watched: false when the placement pins nothing (every rule gives
    /// every CPU this process may use, which every thread inherits), so it ran as under Linux, with
    /// nothing applied and nothing listening.
    #[serde(default = "yes")]
    pub watched: bool,
    pub applied: Vec<Applied>,
    /// Threads seen that no rule matched (given every allowed CPU).
    pub unmatched: usize,
    /// Process events handled (the program's own) and walks of /proc made.
    pub events: u64,
    pub walks: u64,
    /// Process events received, the whole machine's (the program's and every other process's):
    /// each woke the runner.
    #[serde(default)]
    pub received: u64,
    /// CPU time the runner used from the spawn to the program's end, µs.
    #[serde(default)]
    pub runner_cpu_us: f64,
    /// Times the event socket overflowed (events lost; a walk made up for them).
    pub overflows: u64,
    /// Median and largest delay from the kernel's event (a fork, an exec) to the thread's
    /// placement, µs (the time a new thread runs where its parent's affinity lets it).
    pub apply_median_us: f64,
    pub apply_max_us: f64,
    /// CPUs whose pinned groups were released because other programs took the CPU.
    #[serde(default)]
    pub released: Vec<Released>,
    /// Which placement the run got and why (the model's time of the placement and of Linux's),
    /// when it was run from a plan ([`run_plan`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<crate::decide::Decision>,
}

fn yes() -> bool {
    true
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

/// The command name of thread `tid` of process `tgid` (None when it is not, or no longer, one of
/// its threads).
fn comm(tgid: u32, tid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{tgid}/task/{tid}/comm"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Whether `rules` leave nothing to place: every rule gives exactly the CPUs this process may use
/// (`allowed`), which is what a program started from here and every thread it makes inherit as
/// long as nothing is pinned (a thread no rule matches is given the same).
pub fn nothing_to_place(rules: &[Rule], allowed: &CpuSet) -> bool {
    rules.iter().all(|r| {
        let set: CpuSet = r.cpus.iter().map(|&c| c as usize).collect();
        set == *allowed
    })
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
    /// The CPUs of the `k`-th thread named `name`, and whether a rule named them.
    fn cpus_of(&self, name: &str, k: usize) -> (CpuSet, bool) {
        match self.rules.iter().find(|r| r.comm == name && r.ordinal == k) {
            Some(r) if matches!(r.cpus[..], [cpu] if self.watch.is_released(cpu)) => {
                (self.allowed.clone(), true)
            }
            Some(r) => (CpuSet(r.cpus.iter().map(|&c| c as usize).collect()), true),
            None => (self.allowed.clone(), false),
        }
    }

    /// The CPUs the next thread named `name` will get (the program's first thread, before it
    /// starts).
    fn next_cpus(&self, name: &str) -> CpuSet {
        let k = self
            .taken
            .get(name)
            .map_or(0, |t| (0..).find(|k| !t.contains_key(k)).unwrap_or(0));
        self.cpus_of(name, k).0
    }

    /// Places `tid`, now named `name`, unless it was placed under that name already; `inherited`:
    /// the thread has those CPUs already (it was started on them), no system call is needed.
    fn place(&mut self, tid: u32, name: &str, inherited: bool) {
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
        let (set, matched) = self.cpus_of(name, k);
        self.unmatched += usize::from(!matched);
        let cpus: Vec<u32> = set.to_vec().into_iter().map(|c| c as u32).collect();
        self.watch.placed(tid, &cpus);
        if inherited || multios_host::cpus::pin_thread(tid as i32, &set).is_ok() {
            self.applied.push(Applied {
                tid,
                comm: name.to_string(),
                cpus: set.to_string(),
                matched,
            });
        }
    }

    /// Places thread `tid` of process `tgid` under its current name if the process is in the
    /// program's tree (`tree`; never this process) and the thread is still one of its threads:
    /// /proc/TGID/task/TID exists only then, so one read of its `comm` both checks that (thread
    /// ids are reused, and a tid seen in an event may belong to someone else by the time it is
    /// handled) and gives the name. `event_ns` is the kernel's time of the event that announced
    /// it (CLOCK_MONOTONIC), when there was one.
    fn visit(&mut self, tid: u32, tgid: u32, tree: &BTreeSet<u32>, event_ns: Option<u64>) {
        if tgid == std::process::id() || !tree.contains(&tgid) {
            return;
        }
        if let Some(name) = comm(tgid, tid) {
            let before = self.applied.len();
            self.place(tid, &name, false);
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
/// execs. `sweep` is the interval of the contention check of pinned groups.
pub fn run<S: AsRef<OsStr>>(command: &[S], rules: &[Rule], sweep: Duration) -> Result<RunReport, RunError> {
    run_with(command, rules, sweep, false)
}

fn os(what: &str) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| RunError::Os {
        what: what.into(),
        source,
    }
}

/// [`run`], with the program's standard output and error discarded when `quiet`.
pub fn run_with<S: AsRef<OsStr>>(
    command: &[S],
    rules: &[Rule],
    sweep: Duration,
    quiet: bool,
) -> Result<RunReport, RunError> {
    let io = crate::ChildIo { stdin: None, quiet };
    run_with_io(command, rules, sweep, &io)
}

/// [`run_with`] with the program's streams set by `io`.
pub fn run_with_io<S: AsRef<OsStr>>(
    command: &[S],
    rules: &[Rule],
    sweep: Duration,
    io: &crate::ChildIo,
) -> Result<RunReport, RunError> {
    let Some(program) = command.first().map(|p| p.as_ref()) else {
        return Err(RunError::NoCommand);
    };
    check_allowed(rules)?;
    // a program that is not there is refused before anything starts
    let mut cmd = crate::program::command(command)?;
    let allowed = CpuSet::allowed();
    let spawn_error = |source| RunError::Spawn {
        program: program.to_string_lossy().into_owned(),
        source,
    };
    io.apply(&mut cmd).map_err(spawn_error)?;
    if nothing_to_place(rules, &allowed) {
        let started = Instant::now();
        let status = spawn::spawn_on(&mut cmd, None)
            .and_then(|mut c| c.wait())
            .map_err(spawn_error)?;
        return Ok(RunReport {
            exit_code: crate::shell_status(&status),
            wall_s: started.elapsed().as_secs_f64(),
            watched: false,
            applied: Vec::new(),
            unmatched: 0,
            events: 0,
            walks: 0,
            received: 0,
            runner_cpu_us: 0.0,
            overflows: 0,
            apply_median_us: 0.0,
            apply_max_us: 0.0,
            released: Vec::new(),
            decision: None,
        });
    }
    // listening before the spawn: the program's events are queued from its first fork on
    let mut listener = Listener::new().map_err(RunError::Events)?;
    let started = Instant::now();
    let cpu0 = multios_host::time::thread_cpu_ns();
    let mut a = Applier {
        rules,
        allowed,
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
    // the root starts on its CPUs, under the name it has after exec
    let root_cpus = a.next_cpus(&root_name);
    let on = (root_cpus != a.allowed).then_some(&root_cpus);
    let mut child = spawn::spawn_on(&mut cmd, on).map_err(spawn_error)?;
    let root = child.id();
    a.place(root, &root_name, true);
    let exited: Option<OwnedFd> = crate::sys::pidfd_open(root, false).ok();
    let mut tree: BTreeSet<u32> = BTreeSet::from([root]);
    // Handle events ahead of the program (children never inherit it; dropped on return), on the
    // CPUs the placement pins nothing to when there are any: a wake-up for an event (any
    // process's, the machine's) then does not take a pinned thread's CPU.
    let _away = spawn::Away::on(spawn::off_program(rules, &a.allowed).as_ref());
    let _rt = Realtime::on();
    let (mut events, mut walks, mut received) = (0u64, 0u64, 0u64);
    let mut last_check = Instant::now();
    let sweep_ms = sweep.as_millis().clamp(1, i32::MAX as u128) as i32;
    let exit_code = loop {
        // a timer only while pinned groups are watched for contention (or without a pidfd)
        let timeout = if a.watch.watching() || exited.is_none() {
            sweep_ms
        } else {
            -1
        };
        let mut fds = vec![listener.fd()];
        if let Some(e) = &exited {
            fds.push(e);
        }
        let ready = crate::sys::poll_readable(&fds, timeout).map_err(os("poll"))?;
        let mut lost = false;
        if ready.first().copied().unwrap_or(false) {
            for (t, ev) in listener.drain(&mut lost) {
                received += 1;
                match ev {
                    // a new process of the tree's, or a new thread of a process in it (the
                    // kernel reports a thread's parent as its process's parent, which is this
                    // runner for the root's threads: the thread's process decides; the root's
                    // own fork, from this runner, is not a thread and is left alone)
                    Event::Fork {
                        parent_tgid,
                        child_tid,
                        child_tgid,
                    } if tree.contains(&parent_tgid)
                        || (child_tid != child_tgid && tree.contains(&child_tgid)) =>
                    {
                        events += 1;
                        tree.insert(child_tgid);
                        a.visit(child_tid, child_tgid, &tree, Some(t));
                    }
                    Event::Exec { tid, tgid } | Event::Comm { tid, tgid } if tree.contains(&tgid) => {
                        events += 1;
                        a.visit(tid, tgid, &tree, Some(t));
                    }
                    Event::Exit { tid, tgid } if tid == tgid && tgid != root => {
                        tree.remove(&tgid);
                    }
                    _ => {}
                }
            }
        }
        if lost {
            // events were lost: the tree as it is now, and every thread of it
            walks += 1;
            let mut stack = vec![root];
            let mut procs = BTreeSet::new();
            while let Some(p) = stack.pop() {
                if procs.insert(p) {
                    stack.extend(children(p));
                }
            }
            tree = procs;
            tree.insert(root);
            for &p in &tree {
                for tid in crate::procfs::threads_of(p) {
                    a.visit(tid, p, &tree, None);
                }
            }
        }
        if a.watch.watching() && last_check.elapsed() >= sweep {
            last_check = Instant::now();
            for tid in a.watch.check() {
                let _ = multios_host::cpus::pin_thread(tid as i32, &a.allowed);
            }
        }
        match child.try_wait() {
            Ok(Some(status)) => break crate::shell_status(&status),
            Ok(None) => {}
            Err(source) => return Err(os("waiting for the command")(source)),
        }
    };
    let wall_s = started.elapsed().as_secs_f64();
    let runner_cpu_us = multios_host::time::thread_cpu_ns().saturating_sub(cpu0) as f64 / 1e3;
    let mut d = a.delays.clone();
    d.sort_by(f64::total_cmp);
    Ok(RunReport {
        exit_code,
        wall_s,
        watched: true,
        applied: a.applied,
        unmatched: a.unmatched,
        events,
        walks,
        received,
        runner_cpu_us,
        overflows: listener.overflows,
        apply_median_us: multios_stats::median(&d).unwrap_or(0.0),
        apply_max_us: d.last().copied().unwrap_or(0.0),
        released: a.watch.log,
        decision: None,
    })
}

/// Runs `command` as `plan` decided: with its placement's rules when the decision applies it,
/// otherwise with none (Linux's placement: the program is spawned and waited for). The report
/// records the decision. A placement naming CPUs this process may not use is refused either way
/// (it was made for another machine or another cpuset).
pub fn run_plan<S: AsRef<OsStr>>(
    command: &[S],
    plan: &crate::decide::Plan,
    sweep: Duration,
    quiet: bool,
) -> Result<RunReport, RunError> {
    let io = crate::ChildIo { stdin: None, quiet };
    run_plan_io(command, plan, sweep, &io)
}

/// [`run_plan`] with the program's streams set by `io`.
pub fn run_plan_io<S: AsRef<OsStr>>(
    command: &[S],
    plan: &crate::decide::Plan,
    sweep: Duration,
    io: &crate::ChildIo,
) -> Result<RunReport, RunError> {
    check_allowed(&rules(&plan.placement))?;
    let mut rep = run_with_io(command, &plan.rules(), sweep, io)?;
    rep.decision = Some(plan.decision.clone());
    Ok(rep)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_12_a_placement_that_pins_nothing_leaves_nothing_to_place() {
        let all: CpuSet = [0, 1].into_iter().collect();
        let free = |comm: &str| Rule {
            comm: comm.into(),
            ordinal: 0,
            cpus: vec![0, 1],
        };
        assert!(nothing_to_place(&[], &all));
        assert!(nothing_to_place(&[free("a"), free("b")], &all));
        // one pinned thread: watched
        assert!(!nothing_to_place(&[free("a"), Rule::pin("b", 0, 1)], &all));
        // a free node's domain smaller than the allowed CPUs (a package of a larger machine)
        let four: CpuSet = (0..4).collect();
        assert!(!nothing_to_place(&[free("a")], &four));
    }

    #[test]
    fn issue_12_a_thread_is_named_only_under_its_own_process() {
        let me = std::process::id();
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() } as u32;
        assert!(comm(me, tid).is_some_and(|c| !c.is_empty()));
        // the same thread under another process (init's): not found, whatever its name
        assert_eq!(comm(1, tid), None);
    }

    #[test]
    fn issue_12_a_program_left_free_runs_unwatched_with_its_exit_code() {
        let cmd: Vec<String> = ["sh", "-c", "exit 3"].iter().map(|s| s.to_string()).collect();
        let allowed = CpuSet::allowed();
        let rules = vec![Rule {
            comm: "sh".into(),
            ordinal: 0,
            cpus: allowed.to_vec().into_iter().map(|c| c as u32).collect(),
        }];
        let rep = run_with(&cmd, &rules, Duration::from_millis(100), true).expect("runs");
        assert_eq!(rep.exit_code, Some(3));
        assert!(
            !rep.watched && rep.applied.is_empty() && rep.received == 0,
            "{rep:?}"
        );
    }
}
