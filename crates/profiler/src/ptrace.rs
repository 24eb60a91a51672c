//! The ptrace backend, for when eBPF is not allowed: like `strace --seccomp-bpf`, the target runs
//! under a seccomp filter that returns SECCOMP_RET_TRACE for every call, so each call stops once at
//! entry (seccomp stop); the tracer then asks for the syscall-exit stop of that call only. The time
//! between the two stops includes two stop/resume round trips: that cost `B` is calibrated on the
//! null system call in a traced child and replaced by the untraced entry/exit cost `E`, as in the
//! eBPF backend. Stops cost tens of µs with a large spread here, so the profile says `accuracy: low`.

use crate::assemble::{assemble, RunFacts};
use crate::calibrate;
use crate::error::ProfilerError;
use crate::raw::{Raw, RawCall, RawProcCall, RawThread};
use crate::spawn::{PreExec, Stopped};
use crate::sys::{self, PTRACE_CONT, PTRACE_SEIZE, PTRACE_SYSCALL};
use multios_profile::import::CallRecord;
use multios_profile::Profile;
use std::collections::HashMap;
use std::ffi::OsStr;

const O_TRACESYSGOOD: usize = 0x1;
const O_TRACEFORK: usize = 0x2;
const O_TRACEVFORK: usize = 0x4;
const O_TRACECLONE: usize = 0x8;
const O_TRACEEXEC: usize = 0x10;
const O_TRACESECCOMP: usize = 0x80;
const O_EXITKILL: usize = 0x10_0000;
const EVENT_FORK: i32 = 1;
const EVENT_VFORK: i32 = 2;
const EVENT_CLONE: i32 = 3;
const EVENT_EXEC: i32 = 4;
const EVENT_SECCOMP: i32 = 7;
const EVENT_STOP: i32 = 128;
const NR_EXECVE: u64 = 59;
const NR_EXECVEAT: u64 = 322;
const MAX_NR: usize = 512;

/// `tid`'s command name from /proc, cached; `fresh` re-reads it (after an exec).
fn comm_of(cache: &mut HashMap<u32, String>, tid: u32, fresh: bool) -> String {
    if fresh || !cache.contains_key(&tid) {
        let c = std::fs::read_to_string(format!("/proc/{tid}/comm"))
            .map_or_else(|_| String::new(), |c| c.trim_end().to_string());
        cache.insert(tid, c);
    }
    cache.get(&tid).cloned().unwrap_or_default()
}

fn pt_err(what: &str, e: std::io::Error) -> ProfilerError {
    ProfilerError::Ptrace {
        what: what.into(),
        source: e,
    }
}

#[derive(Debug, Default)]
struct Task {
    tgid: u32,
    /// The process that forked it (its own for a thread), 0 for the root.
    ptgid: u32,
    entry: Option<(u64, u64)>,
    start_ns: u64,
    calls: u64,
    syscall_ns: u64,
}

/// What one traced run produced: raw per-call durations (uncorrected) go through `correct`.
struct Tracer {
    /// Syscall-stop mode (PTRACE_SYSCALL, two stops per call) for attaching, where no seccomp
    /// filter can be installed; otherwise seccomp mode.
    plain: bool,
    started: bool,
    correction: i64,
    calls: Vec<RawCall>,
    tasks: HashMap<u32, Task>,
    done: Vec<RawThread>,
    durations_of: Option<(u64, Vec<u64>)>,
    /// Every call (thread, entry time, corrected duration), when `profile --trace` asks for them.
    records: Option<Vec<CallRecord>>,
    /// Each traced thread's command name (read once, and again after an exec), for the records.
    comms: HashMap<u32, String>,
    /// Per (process, number): n and g in ns (`--per-process`).
    per_process: Option<HashMap<(u32, u32), (u64, u64)>>,
    /// Per process, its new anonymous ranges (`--per-process`; `anon.rs`).
    anon: Option<crate::anon::Tracker>,
}

impl Tracer {
    fn new(started: bool, correction: i64) -> Tracer {
        Tracer {
            plain: false,
            started,
            correction,
            calls: (0..MAX_NR as u32)
                .map(|nr| RawCall {
                    nr,
                    ..RawCall::default()
                })
                .collect(),
            tasks: HashMap::new(),
            done: Vec::new(),
            durations_of: None,
            records: None,
            comms: HashMap::new(),
            per_process: None,
            anon: None,
        }
    }

    /// Counts per process (`--per-process`): the calls and the new anonymous ranges.
    fn count_per_process(&mut self) {
        self.per_process = Some(HashMap::new());
        self.anon = Some(crate::anon::Tracker::default());
    }

    /// After the exit stop of call `nr` of process `tgid` (what [`Tracer::account`] closed): an
    /// mmap's or brk's new anonymous range, an exec's new break (`--per-process`).
    fn note_anon(&mut self, tid: u32, closed: Option<(u64, u32)>) {
        let (Some(anon), Some((nr, tgid))) = (self.anon.as_mut(), closed) else {
            return;
        };
        if ![crate::anon::NR_MMAP, crate::anon::NR_BRK, NR_EXECVE, NR_EXECVEAT].contains(&nr) {
            return;
        }
        // The task may be gone (killed meanwhile): nothing to read.
        let Ok(([len, prot, flags], ret)) = sys::ptrace_exit_args(tid) else {
            return;
        };
        match nr {
            crate::anon::NR_MMAP => anon.mmap(tgid, len, prot, flags, ret),
            crate::anon::NR_BRK => anon.brk(tgid, ret as u64),
            _ if ret == 0 => anon.exec(tgid),
            _ => {}
        }
    }

    /// The per-process counts gathered, as raw rows.
    fn proc_calls(&self) -> Vec<RawProcCall> {
        let mut v: Vec<RawProcCall> = self
            .per_process
            .iter()
            .flatten()
            .map(|(&(tgid, nr), &(count, total_ns))| RawProcCall {
                tgid,
                nr,
                count,
                total_ns,
            })
            .collect();
        v.sort_by_key(|c| (c.tgid, c.nr));
        v
    }

    /// Moves task `tid`, which ended at `now`, to the finished threads.
    fn finish(&mut self, tid: u32, now: u64) {
        if let Some(t) = self.tasks.remove(&tid) {
            let comm = self.comms.remove(&tid).unwrap_or_default();
            self.done.push(RawThread {
                tid,
                tgid: t.tgid,
                ptgid: t.ptgid,
                comm,
                start_ns: t.start_ns,
                end_ns: now,
                calls: t.calls,
                syscall_ns: t.syscall_ns,
                exit_status: None,
            });
        }
    }

    /// At the exec event of `tid`, which was task `former` before the exec: when a thread other
    /// than the leader exec'd, it took the leader's tid, and the leader, killed by the exec, is
    /// never reported as exited. Closes the leader's record (and the call it was in) at `now` and
    /// goes on with the thread's under the leader's tid. The thread's record stayed open under
    /// its former tid and was lost, and the leader's went on with the thread's later calls.
    fn exec_by_thread(&mut self, former: u32, tid: u32, now: u64) {
        if former == tid {
            return;
        }
        let Some(thread) = self.tasks.remove(&former) else {
            return;
        };
        let _ = self.account(tid, now, None);
        self.finish(tid, now);
        if let Some(c) = self.comms.remove(&former) {
            self.comms.insert(tid, c);
        }
        self.tasks.insert(tid, thread);
    }

    /// Closes the call in flight of `tid` at `now`; returns its number and process.
    fn account(&mut self, tid: u32, now: u64, ret: Option<i64>) -> Option<(u64, u32)> {
        let t = self.tasks.get_mut(&tid)?;
        let (nr, t0) = t.entry.take()?;
        let raw = now.saturating_sub(t0);
        if let Some((want, v)) = &mut self.durations_of {
            if *want == nr {
                v.push(raw);
            }
        }
        let d = (raw as i64 + self.correction).max(0) as u64;
        t.calls += 1;
        t.syscall_ns += d;
        let tgid = t.tgid;
        if let Some(m) = &mut self.per_process {
            let e = m.entry((tgid, nr as u32)).or_default();
            e.0 += 1;
            e.1 += d;
            // The name the process ends with: read again after each exec.
            if nr == NR_EXECVE || nr == NR_EXECVEAT || !self.comms.contains_key(&tid) {
                comm_of(&mut self.comms, tid, true);
            }
        }
        if let Some(records) = &mut self.records {
            let error = ret.is_some_and(|r| (-4095..0).contains(&r));
            records.push(CallRecord {
                tid,
                pid: Some(t.tgid),
                comm: comm_of(&mut self.comms, tid, nr == NR_EXECVE || nr == NR_EXECVEAT),
                name: multios_syscalls::by_number(nr as u32)
                    .unwrap_or("unknown")
                    .to_string(),
                nr: nr as u32,
                start_s: t0 as f64 * 1e-9,
                duration_s: d as f64 * 1e-9,
                error,
            });
        }
        if let Some(c) = self.calls.get_mut(nr as usize) {
            c.record(d, ret.is_some_and(|r| (-4095..0).contains(&r)));
        }
        Some((nr, tgid))
    }

    fn task(&mut self, tid: u32, tgid: u32, now: u64) -> &mut Task {
        self.tasks.entry(tid).or_insert_with(|| Task {
            tgid,
            start_ns: now,
            ..Task::default()
        })
    }

    /// Resumes `tid`: to its syscall-exit stop if a call is in flight, else to its next seccomp stop.
    fn resume(&self, tid: u32, sig: i32) {
        let pending = self.tasks.get(&tid).is_some_and(|t| t.entry.is_some());
        let req = if pending || self.plain {
            PTRACE_SYSCALL
        } else {
            PTRACE_CONT
        };
        // ESRCH: the task was killed meanwhile; its exit status follows.
        let _ = sys::ptrace(req, tid, sig as usize);
    }

    /// Traces until no traced task is left; returns the root's wait status.
    fn run(&mut self, root: u32) -> Result<i32, ProfilerError> {
        self.task(root, root, sys::monotonic_ns());
        self.run_until(root, &|| false)?
            .ok_or_else(|| pt_err("waitpid", std::io::Error::other("the target vanished unwaited")))
    }

    /// Traces until no traced task is left or `stop()` says so (checked after each event and after
    /// every interrupted wait); returns the wait status of `root` if it ended.
    fn run_until(&mut self, root: u32, stop: &dyn Fn() -> bool) -> Result<Option<i32>, ProfilerError> {
        let mut root_status = None;
        // Until every traced task is gone (other children of ours, if any, are not waited for).
        while !self.tasks.is_empty() {
            if stop() {
                break;
            }
            let (tid, status) = match sys::wait_any() {
                Ok(x) => x,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) if e.raw_os_error() == Some(libc::ECHILD) => break,
                Err(e) => return Err(pt_err("waitpid", e)),
            };
            let now = sys::monotonic_ns();
            if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                let _ = self.account(tid, now, None); // exit/exit_group, or a call cut short by a kill
                self.finish(tid, now);
                if tid == root {
                    root_status = Some(status);
                }
                continue;
            }
            if !libc::WIFSTOPPED(status) {
                continue;
            }
            let sig = libc::WSTOPSIG(status);
            let event = status >> 16;
            let tgid = self.tasks.get(&tid).map_or(tid, |t| t.tgid);
            self.task(tid, tgid, now);
            match event {
                EVENT_SECCOMP => {
                    let (nr, _) =
                        sys::ptrace_syscall_regs(tid).map_err(|e| pt_err("reading registers", e))?;
                    if !self.started && tid == root && (nr == NR_EXECVE || nr == NR_EXECVEAT) {
                        self.started = true;
                        if let Some(t) = self.tasks.get_mut(&tid) {
                            t.start_ns = now;
                        }
                    }
                    if self.started {
                        if let Some(t) = self.tasks.get_mut(&tid) {
                            t.entry = Some((nr, now));
                        }
                    }
                    self.resume(tid, 0);
                }
                EVENT_FORK | EVENT_VFORK | EVENT_CLONE => {
                    if let Ok(new) = sys::ptrace_eventmsg(tid) {
                        let new_tgid = if event == EVENT_CLONE && is_thread(new as u32, tgid) {
                            tgid
                        } else {
                            new as u32
                        };
                        self.task(new as u32, new_tgid, now).ptgid = tgid;
                    }
                    self.resume(tid, 0);
                }
                0 if sig == (libc::SIGTRAP | 0x80) && self.plain => {
                    match sys::ptrace_syscall_info(tid) {
                        Ok(sys::SyscallStop::Entry { nr }) => {
                            if let Some(t) = self.tasks.get_mut(&tid) {
                                t.entry = Some((nr, now));
                            }
                        }
                        Ok(sys::SyscallStop::Exit { ret }) => {
                            let closed = self.account(tid, now, Some(ret));
                            self.note_anon(tid, closed);
                        }
                        _ => {}
                    }
                    self.resume(tid, 0);
                }
                0 if sig == (libc::SIGTRAP | 0x80) => {
                    // The syscall-exit stop of the call entered at the last seccomp stop.
                    let ret = sys::ptrace_syscall_regs(tid).ok().map(|(_, r)| r);
                    let closed = self.account(tid, now, ret);
                    self.note_anon(tid, closed);
                    self.resume(tid, 0);
                }
                0 => {
                    // Signal-delivery stop: pass the signal on (SIGTRAP of our own making excepted).
                    self.resume(tid, if sig == libc::SIGTRAP { 0 } else { sig });
                }
                EVENT_EXEC => {
                    if let Ok(former) = sys::ptrace_eventmsg(tid) {
                        self.exec_by_thread(former as u32, tid, now);
                    }
                    self.resume(tid, 0);
                }
                EVENT_STOP => self.resume(tid, 0), // new task's first stop, or a group stop
                _ => self.resume(tid, 0),          // exec event and others
            }
        }
        Ok(root_status)
    }

    /// Lets every task still traced go: interrupt, and detach at its next stop. Gives up at
    /// `give_up` (the caller keeps a [`sys::Waker`] running so that waits return).
    fn detach_all(&mut self, now: u64, give_up: std::time::Instant) {
        for &tid in self.tasks.keys() {
            let _ = sys::ptrace(sys::PTRACE_INTERRUPT, tid, 0);
        }
        while !self.tasks.is_empty() && std::time::Instant::now() < give_up {
            let (tid, status) = match sys::wait_any() {
                Ok(x) => x,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(_) => break,
            };
            let gone = libc::WIFEXITED(status) || libc::WIFSIGNALED(status);
            let event = status >> 16;
            if !gone && matches!(event, EVENT_FORK | EVENT_VFORK | EVENT_CLONE) {
                // A task born now is traced too: wait for its first stop to let it go as well.
                if let Ok(new) = sys::ptrace_eventmsg(tid) {
                    let tgid = self.tasks.get(&tid).map_or(tid, |t| t.tgid);
                    self.task(new as u32, tgid, now);
                }
            }
            if !gone && libc::WIFSTOPPED(status) {
                let sig = libc::WSTOPSIG(status);
                let inject = if status >> 16 == 0 && sig != libc::SIGTRAP && sig != (libc::SIGTRAP | 0x80) {
                    sig
                } else {
                    0
                };
                let _ = sys::ptrace(sys::PTRACE_DETACH, tid, inject as usize);
            }
            self.finish(tid, now);
        }
    }
}

/// Whether `tid` is a thread of process `tgid` (read from /proc while it lives).
fn is_thread(tid: u32, tgid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{tid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Tgid:").map(|v| v.trim().parse::<u32>().ok()))
        })
        .flatten()
        == Some(tgid)
}

fn seize(pid: u32) -> Result<(), ProfilerError> {
    let opts = O_TRACESYSGOOD
        | O_TRACEFORK
        | O_TRACEVFORK
        | O_TRACECLONE
        | O_TRACEEXEC
        | O_TRACESECCOMP
        | O_EXITKILL;
    sys::ptrace(PTRACE_SEIZE, pid, opts).map_err(|e| pt_err(&format!("PTRACE_SEIZE of {pid}"), e))
}

/// Seizes a running task for syscall-stop tracing (no EXITKILL: we detach at the end) and stops it.
fn seize_running(tid: u32) -> std::io::Result<()> {
    let opts = O_TRACESYSGOOD | O_TRACEFORK | O_TRACEVFORK | O_TRACECLONE | O_TRACEEXEC;
    sys::ptrace(PTRACE_SEIZE, tid, opts)?;
    sys::ptrace(sys::PTRACE_INTERRUPT, tid, 0)
}

/// `B` in syscall-stop mode: the median time between the entry and exit stops of a null call.
fn plain_stop_bias_ns() -> Result<f64, ProfilerError> {
    let child = Stopped::spawn_calibration_plain()?;
    if let Err(e) = seize_running(child.pid) {
        sys::kill_and_reap(child.pid);
        return Err(pt_err("PTRACE_SEIZE of the calibration child", e));
    }
    median_null_call_ns(child, true)
}

/// Attaches to the running process `pid` (all its threads, and what they create from now on) with
/// syscall stops, for `duration` or until it exits or we are interrupted, then detaches.
pub fn attach(
    pid: u32,
    duration: Option<std::time::Duration>,
    per_process: bool,
) -> Result<Profile, ProfilerError> {
    let command: Vec<String> = std::fs::read(format!("/proc/{pid}/cmdline"))
        .map_err(|_| ProfilerError::PidGone(pid))?
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let e = calibrate::untraced_null_ns();
    let b = plain_stop_bias_ns()?;
    let mut tracer = Tracer::new(true, (e - b).round() as i64);
    tracer.plain = true;
    if per_process {
        tracer.count_per_process();
    }
    let start = sys::monotonic_ns();
    let tids: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .map_err(|_| ProfilerError::PidGone(pid))?
        .filter_map(|d| d.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    for &tid in &tids {
        match seize_running(tid) {
            Ok(()) => {
                tracer.task(tid, pid, start);
            }
            Err(err) if err.raw_os_error() == Some(libc::ESRCH) => {}
            Err(err) if tid == pid => {
                return Err(pt_err(
                    &format!("attaching to {pid} (ptrace_scope or permissions?)"),
                    err,
                ))
            }
            Err(_) => {}
        }
    }
    let fwd = sys::Forwarder::install_with_alarm();
    let deadline = duration.map(|d| std::time::Instant::now() + d);
    let waker = sys::Waker::start(std::time::Duration::from_millis(50));
    let stop = || {
        fwd.interrupted().is_some_and(|s| s != libc::SIGALRM)
            || deadline.is_some_and(|d| std::time::Instant::now() >= d)
    };
    let root_status = tracer.run_until(pid, &stop);
    let interrupted = fwd.interrupted().filter(|s| *s != libc::SIGALRM);
    let end = sys::monotonic_ns();
    tracer.detach_all(end, std::time::Instant::now() + std::time::Duration::from_secs(2));
    drop(waker);
    drop(fwd);
    let root_status = root_status?;
    let raw = Raw {
        proc_calls: tracer.proc_calls(),
        calls: tracer.calls.into_iter().filter(|c| c.count > 0).collect(),
        anon: tracer.anon.as_ref().map(|a| a.raw()).unwrap_or_default(),
        threads: tracer.done,
        mem_bytes: None,
        ..Raw::default()
    };
    let mut notes = vec![format!(
        "per-call correction: ptrace syscall-stop cost B = {b:.0} ns subtracted (median over traced null system calls), kernel entry/exit cost E = {e:.0} ns added; stop costs vary widely, so per-call times are approximate"
    )];
    notes.extend(crate::run::attach_notes(pid, interrupted));
    Ok(assemble(
        &raw,
        RunFacts {
            command,
            tool: "multios-ptrace".into(),
            accuracy: "low".into(),
            wall_ns: end.saturating_sub(start),
            exit: root_status.map(crate::run::exit_of),
            // Like a launch: partial when the attach ended first or the process was killed.
            partial: root_status.is_none_or(|s| libc::WIFSIGNALED(s)),
            misses: crate::run::attach_misses(root_status.is_none()),
            bias_ns: Some(b),
            notes,
            per_process,
            origin_ns: start,
            cwd: None,
        },
    ))
}

/// `B` for this backend: the median raw time between the seccomp stop and the exit stop of a null
/// system call, measured on a forked child that runs 2000 of them under the same tracer.
fn stop_bias_ns() -> Result<f64, ProfilerError> {
    let child = Stopped::spawn_calibration()?;
    if let Err(e) = seize(child.pid) {
        sys::kill_and_reap(child.pid);
        return Err(e);
    }
    median_null_call_ns(child, false)
}

/// Releases the seized calibration child and returns the median raw duration the tracer saw for
/// its null system calls (in syscall-stop mode when `plain`, else seccomp stops).
fn median_null_call_ns(mut child: Stopped, plain: bool) -> Result<f64, ProfilerError> {
    child.go()?;
    let mut t = Tracer::new(true, 0);
    t.plain = plain;
    t.durations_of = Some((sys::NULL_SYSCALL as u64, Vec::new()));
    t.run(child.pid)?;
    let v = t.durations_of.map(|(_, v)| v).unwrap_or_default();
    let v: Vec<f64> = v.iter().map(|&ns| ns as f64).collect();
    multios_stats::median(&v).ok_or_else(|| {
        pt_err(
            "calibration",
            std::io::Error::other("no null system call was seen under ptrace"),
        )
    })
}

/// Profiles `command` under seccomp-assisted ptrace.
pub fn launch<S: AsRef<OsStr>>(command: &[S], per_process: bool) -> Result<Profile, ProfilerError> {
    launch_with(command, false, per_process).map(|(p, _)| p)
}

/// Profiles `command` under ptrace and also returns every call as a record, times from the
/// command's start (`multios profile --trace`).
pub fn launch_traced<S: AsRef<OsStr>>(command: &[S]) -> Result<(Profile, Vec<CallRecord>), ProfilerError> {
    launch_with(command, true, false)
}

fn launch_with<S: AsRef<OsStr>>(
    command: &[S],
    trace: bool,
    per_process: bool,
) -> Result<(Profile, Vec<CallRecord>), ProfilerError> {
    let e = calibrate::untraced_null_ns();
    let b = stop_bias_ns()?;
    let mut child = Stopped::spawn(command, PreExec::SeccompTrace)?;
    if let Err(err) = seize(child.pid) {
        sys::kill_and_reap(child.pid);
        return Err(err);
    }
    sys::become_subreaper();
    let fwd = sys::Forwarder::install(child.pid as i32);
    child.go()?;
    let mut tracer = Tracer::new(false, (e - b).round() as i64);
    if trace {
        tracer.records = Some(Vec::new());
    }
    if per_process {
        tracer.count_per_process();
    }
    let status = tracer.run(child.pid)?;
    let mut records = tracer.records.take().unwrap_or_default();
    let interrupted = fwd.interrupted();
    drop(fwd);
    child.exec_result()?;
    let raw = Raw {
        proc_calls: tracer.proc_calls(),
        calls: tracer.calls.into_iter().filter(|c| c.count > 0).collect(),
        anon: tracer.anon.as_ref().map(|a| a.raw()).unwrap_or_default(),
        threads: tracer.done,
        mem_bytes: None,
        ..Raw::default()
    };
    let start = raw
        .threads
        .iter()
        .find(|t| t.tid == child.pid)
        .map_or(0, |t| t.start_ns);
    let end = raw.threads.iter().map(|t| t.end_ns).max().unwrap_or(start);
    let exit = crate::run::exit_of(status);
    let mut notes = vec![format!(
        "per-call correction: ptrace stop cost B = {b:.0} ns subtracted (median over traced null system calls), kernel entry/exit cost E = {e:.0} ns added; stop costs vary widely, so per-call times are approximate"
    )];
    let partial = crate::run::note_interruption(interrupted, &exit, &mut notes);
    for r in &mut records {
        r.start_s -= start as f64 * 1e-9;
    }
    let p = assemble(
        &raw,
        RunFacts {
            command: crate::run::lossy(command),
            tool: "multios-ptrace".into(),
            accuracy: "low".into(),
            wall_ns: end.saturating_sub(start),
            exit: Some(exit),
            partial,
            bias_ns: Some(b),
            notes,
            misses: Vec::new(),
            per_process,
            origin_ns: start,
            cwd: None,
        },
    );
    Ok((p, records))
}
