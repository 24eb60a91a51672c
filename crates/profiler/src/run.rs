//! One profiling run: start (or attach to) the target, trace it to the end, assemble the profile.

use crate::assemble::{assemble, RunFacts};
use crate::calibrate;
use crate::ebpf::Probe;
use crate::error::ProfilerError;
use crate::raw::RawThread;
use crate::spawn::{PreExec, Stopped};
use crate::sys;
use multios_profile::{Exit, Profile};
use std::time::Duration;

/// Which tracing mechanism to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Ebpf,
    Ptrace,
}

/// What to profile and how.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// None: eBPF when privileged (root), ptrace otherwise.
    pub backend: Option<Backend>,
    /// Program and arguments (ignored with `attach`).
    /// Passed to exec as given (bytes, not necessarily UTF-8); the profile records it lossily.
    pub command: Vec<std::ffi::OsString>,
    /// Attach to this running process instead of starting one.
    pub attach: Option<u32>,
    /// With `attach`: how long to trace (until the process exits if None).
    pub duration: Option<Duration>,
    /// Also record each process's own calls, parent and span (`processes[]`, schema 3) and, with
    /// the eBPF backend, the lengths the memory calls ask for (`memory_bytes`, schema 4); with
    /// either backend, each process's new anonymous ranges (`processes[].anon_maps`, schema 6);
    /// with the eBPF backend, the gaps between each thread's calls (`syscalls[].gap_hist_log2_ns`,
    /// schema 7).
    pub per_process: bool,
}

/// `command` as text, for the profile's `command` (an argument that is not UTF-8 has U+FFFD
/// where its bad bytes were; the program itself got them as they were).
pub(crate) fn lossy<S: AsRef<std::ffi::OsStr>>(command: &[S]) -> Vec<String> {
    command
        .iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect()
}

/// Profiles according to `opts`.
pub fn profile(opts: &Options) -> Result<Profile, ProfilerError> {
    let root = sys::is_root();
    let backend = opts
        .backend
        .unwrap_or(if root { Backend::Ebpf } else { Backend::Ptrace });
    if let Some(pid) = opts.attach {
        check_process(pid)?;
    }
    match (backend, opts.attach) {
        (Backend::Ebpf, None) => launch_ebpf(&opts.command, opts.per_process),
        (Backend::Ebpf, Some(pid)) => attach_ebpf(pid, opts.duration, opts.per_process),
        (Backend::Ptrace, None) => crate::ptrace::launch(&opts.command, opts.per_process),
        (Backend::Ptrace, Some(pid)) => crate::ptrace::attach(pid, opts.duration, opts.per_process),
    }
}

/// Refuses `-p` of a task that is not a process: a thread's id named its process's threads (ptrace)
/// or "process N does not exist" (eBPF: pidfd_open refuses a thread).
fn check_process(pid: u32) -> Result<(), ProfilerError> {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).map_err(|_| ProfilerError::PidGone(pid))?;
    let tgid = status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:")?.trim().parse::<u32>().ok());
    match tgid {
        Some(process) if process != pid => Err(ProfilerError::NotAProcess { tid: pid, process }),
        _ => Ok(()),
    }
}

/// Profiles `opts.command` and records every call (thread, entry time, duration) for
/// `multios profile --trace`. Only ptrace sees each call in user space (eBPF aggregates in the
/// kernel, inproc in the preload library), so the backend must be ptrace (the default here).
pub fn profile_traced(
    opts: &Options,
) -> Result<(Profile, Vec<multios_profile::import::CallRecord>), ProfilerError> {
    match (opts.backend, opts.attach) {
        (None | Some(Backend::Ptrace), None) => crate::ptrace::launch_traced(&opts.command),
        _ => Err(ProfilerError::Unsupported(
            "--trace records each call with the ptrace backend, starting the command itself: use --backend ptrace without -p"
                .into(),
        )),
    }
}

/// Loads the probes and calibrates: returns them with (B, E) in ns.
fn ready_probe() -> Result<(Probe, f64, f64), ProfilerError> {
    let e = calibrate::untraced_null_ns();
    let probe = Probe::load()?;
    let b = calibrate::probe_bias_ns(&probe)?;
    probe.set_correction((e - b).round() as i64)?;
    Ok((probe, b, e))
}

fn bias_notes(b: f64, e: f64) -> Vec<String> {
    vec![format!(
        "per-call correction: probe bias B = {b:.0} ns subtracted (traced null system call), kernel entry/exit cost E = {e:.0} ns added (untraced null system call round trip)"
    )]
}

/// Notes the signal multios received and forwarded to the target, if any; the profile is partial
/// when the run was interrupted or the target was killed by a signal.
pub(crate) fn note_interruption(interrupted: Option<i32>, exit: &Exit, notes: &mut Vec<String>) -> bool {
    if let Some(sig) = interrupted {
        notes.push(format!(
            "interrupted by signal {sig}, which was forwarded to the target"
        ));
    }
    interrupted.is_some() || exit.signal.is_some()
}

/// How a waited-for process ended.
pub(crate) fn exit_of(status: i32) -> Exit {
    if libc::WIFSIGNALED(status) {
        Exit {
            code: None,
            signal: Some(libc::WTERMSIG(status)),
        }
    } else {
        Exit {
            code: Some(libc::WEXITSTATUS(status)),
            signal: None,
        }
    }
}

/// Waits for `root` and then for every orphaned descendant (we are their subreaper); returns the
/// root's wait status.
fn wait_tree(root: u32) -> Result<i32, ProfilerError> {
    let mut root_status = None;
    loop {
        match sys::wait_any() {
            Ok((pid, status)) if pid == root => root_status = Some(status),
            Ok(_) => {}
            Err(e) => match e.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::ECHILD) => break,
                _ => return Err(ProfilerError::os("waitpid", e)),
            },
        }
    }
    root_status
        .ok_or_else(|| ProfilerError::os("waitpid", std::io::Error::other("the target vanished unwaited")))
}

fn launch_ebpf<S: AsRef<std::ffi::OsStr>>(
    command: &[S],
    per_process: bool,
) -> Result<Profile, ProfilerError> {
    let mut child = Stopped::spawn(command, PreExec::None)?;
    let prepared = ready_probe().and_then(|(probe, b, e)| {
        probe.set_per_process(per_process)?;
        probe.seed(child.pid, child.pid, true).map(|()| (probe, b, e))
    });
    let (probe, b, e) = match prepared {
        Ok(x) => x,
        Err(err) => {
            sys::kill_and_reap(child.pid);
            return Err(err);
        }
    };
    sys::become_subreaper();
    let fwd = sys::Forwarder::install(child.pid as i32);
    if let Err(e) = child.release() {
        sys::reap(child.pid); // it failed to exec
        return Err(e);
    }
    let status = wait_tree(child.pid)?;
    let interrupted = fwd.interrupted();
    drop(fwd);
    let mut raw = probe.collect()?;
    drop(probe);
    // The memory calls' lengths (schema 4) come with the detailed, per-process profile only, so
    // that a plain profile stays a version-2 file.
    if !per_process {
        raw.mem_bytes = None;
    }
    let start = raw
        .threads
        .iter()
        .find(|t| t.tid == child.pid)
        .or_else(|| raw.threads.iter().min_by_key(|t| t.start_ns))
        .map_or(0, |t| t.start_ns);
    let end = raw.threads.iter().map(|t| t.end_ns).max().unwrap_or(start);
    let exit = exit_of(status);
    let mut notes = bias_notes(b, e);
    let mut misses = Vec::new();
    if raw.threads.len() >= crate::ebpf::MAX_THREADS {
        misses.push(format!(
            "threads[] entries and their share of C beyond {} exited tasks",
            crate::ebpf::MAX_THREADS
        ));
        notes.push(format!(
            "more than {} tasks exited: the per-thread table was full, so threads[] and C miss some of them",
            crate::ebpf::MAX_THREADS
        ));
    }
    if per_process && raw.execs.len() >= crate::ebpf::MAX_EXECS {
        misses.push(format!(
            "processes[].images beyond {} execs",
            crate::ebpf::MAX_EXECS
        ));
    }
    let partial = note_interruption(interrupted, &exit, &mut notes);
    Ok(assemble(
        &raw,
        RunFacts {
            command: lossy(command),
            tool: "multios-ebpf".into(),
            accuracy: "high".into(),
            wall_ns: end.saturating_sub(start),
            exit: Some(exit),
            partial,
            bias_ns: Some(b),
            notes,
            misses,
            per_process,
            origin_ns: start,
            // The child was started in ours: a relative name it exec'd is read from here.
            cwd: std::env::current_dir().ok(),
        },
    ))
}

/// The thread ids of process `pid`.
fn tids_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Every (tid, tgid) on the system.
fn all_tasks() -> Vec<(u32, u32)> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .flat_map(|pid| tids_of(pid).into_iter().map(move |t| (t, pid)))
        .collect()
}

fn attach_ebpf(pid: u32, duration: Option<Duration>, per_process: bool) -> Result<Profile, ProfilerError> {
    let command = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map_err(|_| ProfilerError::PidGone(pid))?
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect::<Vec<_>>();
    let pidfd = sys::pidfd_open(pid, false).map_err(|_| ProfilerError::PidGone(pid))?;
    let (probe, b, e) = ready_probe()?;
    probe.set_per_process(per_process)?;
    let seeded = tids_of(pid);
    for &tid in &seeded {
        // A thread may exit meanwhile; that is fine.
        let _ = probe.seed(tid, pid, false);
    }
    let start = sys::monotonic_ns();
    let fwd = sys::Forwarder::install(0);
    let deadline = duration.map(|d| std::time::Instant::now() + d);
    let mut exited = false;
    while fwd.interrupted().is_none() {
        let left = deadline.map(|d| d.saturating_duration_since(std::time::Instant::now()));
        if left == Some(Duration::ZERO) {
            break;
        }
        let ms = left.map_or(200, |l| l.as_millis().clamp(1, 200) as i32);
        if sys::poll_readable(std::os::fd::AsFd::as_fd(&pidfd), ms) {
            exited = true;
            break;
        }
    }
    let interrupted = fwd.interrupted();
    drop(fwd);
    let end = sys::monotonic_ns();
    probe.stop_counting(per_process)?;
    let mut raw = probe.collect()?;
    if !per_process {
        raw.mem_bytes = None;
    }
    // Tasks still alive: read their state in place.
    for (tid, tgid) in all_tasks() {
        if let Some((s, calls, ns)) = probe.live_thread(tid, tgid) {
            let start_ns = if seeded.contains(&tid) || s == 0 { start } else { s };
            raw.threads.push(RawThread {
                tid,
                tgid,
                ptgid: if tgid == pid { 0 } else { parent_of(tgid) },
                comm: comm_of(tid),
                start_ns,
                end_ns: end,
                calls,
                syscall_ns: ns,
                exit_status: None,
            });
        }
    }
    for t in raw.threads.iter_mut().filter(|t| seeded.contains(&t.tid)) {
        t.start_ns = start;
    }
    let mut notes = bias_notes(b, e);
    notes.extend(attach_notes(pid, interrupted));
    let exit = exited.then(|| leader_exit(&raw.threads, pid)).flatten();
    Ok(assemble(
        &raw,
        RunFacts {
            command,
            tool: "multios-ebpf".into(),
            accuracy: "high".into(),
            wall_ns: end.saturating_sub(start),
            partial: !exited || exit.as_ref().is_some_and(|x| x.signal.is_some()),
            exit,
            bias_ns: Some(b),
            notes,
            misses: attach_misses(!exited),
            per_process,
            origin_ns: start,
            cwd: std::fs::read_link(format!("/proc/{pid}/cwd")).ok(),
        },
    ))
}

/// How process `pid` ended: the wait status its leader tid last exited with (a thread that exec'd
/// took that tid and exited later than the leader it replaced).
fn leader_exit(threads: &[RawThread], pid: u32) -> Option<Exit> {
    threads
        .iter()
        .filter(|t| t.tid == pid && t.tgid == pid)
        .max_by_key(|t| t.end_ns)?
        .exit_status
        .map(exit_of)
}

/// The parent process of live process `pid` (0 when it is gone), from /proc/PID/stat.
pub(crate) fn parent_of(pid: u32) -> u32 {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            // "pid (comm) state ppid …": the comm may hold spaces and parentheses.
            let rest = &s[s.rfind(')')? + 1..];
            rest.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

/// The command name of live task `tid` (empty when it is gone).
pub(crate) fn comm_of(tid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{tid}/comm"))
        .map_or_else(|_| String::new(), |c| c.trim_end().to_string())
}

/// What a profile taken by attaching misses: the calls before the attach and, when the process was still
/// running at the end (`running`), those after.
pub(crate) fn attach_misses(running: bool) -> Vec<String> {
    let mut m = vec!["calls the process made before multios attached (-p)".to_string()];
    if running {
        m.push("calls after tracing stopped (--duration or a signal)".into());
    }
    m
}

/// The notes of a profile taken by attaching to running process `pid`.
pub(crate) fn attach_notes(pid: u32, interrupted: Option<i32>) -> Vec<String> {
    let mut notes = vec![format!(
        "attached to running process {pid}; calls in flight at attach time are not counted"
    )];
    if let Some(sig) = interrupted {
        notes.push(format!("stopped by signal {sig}"));
    }
    notes
}
