//! `multios map record`: the graph of one run, from eBPF on BTF tracepoints (`bpf/map.bpf.c`) and
//! periodic /proc/PID/pagemap samples.

mod assemble;
mod bpf;
pub mod families;
pub mod pagemap;

pub use assemble::{assemble, Flow, Raw, RawNode};

use crate::graph::Graph;
use crate::topology::Topology;
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::time::{Duration, Instant};

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("nothing to record: give a command after `--` or a process with -p PID")]
    Nothing,
    #[error("process {0} does not exist (check the PID with `ps -p {0}`)")]
    NoSuchPid(u32),
    #[error("process {0} ended before the recording began (between the check that it exists and the seeding of its threads in the probe): nothing was recorded; record a process that keeps running, or run the program under `map record -- CMD`")]
    EndedBeforeRecording(u32),
    #[error("process {0} may not be traced by this user (run as root or with CAP_BPF and CAP_PERFMON)")]
    NotPermitted(u32),
    #[error("process {pid} ({comm}) is a kernel thread: it runs no program to record; give the PID of a user process")]
    KernelThread { pid: u32, comm: String },
    #[error("eBPF: {what}: permission denied ({detail}); run as root or with CAP_BPF and CAP_PERFMON")]
    Permission { what: String, detail: String },
    #[error("eBPF: {what}: {msg}")]
    Ebpf { what: String, msg: String },
    #[error("cannot start '{program}': {source}")]
    Spawn { program: String, source: std::io::Error },
    #[error(transparent)]
    Program(#[from] crate::program::ProgramError),
    #[error("{what}: {source}")]
    Os { what: String, source: std::io::Error },
}

/// What to record. The command's words are `String`s or, for any bytes, `OsString`s.
#[derive(Debug, Clone)]
pub struct Options<C = String> {
    /// The command to run (empty with `pid`), passed to exec unchanged.
    pub command: Vec<C>,
    /// An existing process to attach to instead.
    pub pid: Option<u32>,
    /// With `pid`: stop after this long (else when the process exits).
    pub duration: Option<Duration>,
    /// How often the page samples are taken.
    pub sample_every: Duration,
    /// The architecture layer stored in the graph.
    pub topology: Option<Topology>,
}

/// The exit status of the recorded command, if one was run (128 + the signal when one ended it).
#[derive(Debug, Clone)]
pub struct Recorded {
    pub graph: Graph,
    pub exit_code: Option<i32>,
}

/// Whether process `pid` has ended: gone, or a zombie its parent has not reaped yet.
fn ended(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // the state follows the command name in parentheses, which may itself hold ") "
        Ok(stat) => stat
            .rsplit_once(") ")
            .is_none_or(|(_, rest)| rest.starts_with('Z') || rest.starts_with('X')),
        Err(_) => true,
    }
}

fn comm_of(tgid: u32, tid: u32) -> Option<String> {
    std::fs::read_to_string(format!("/proc/{tgid}/task/{tid}/comm"))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Records one run.
pub fn record<C: AsRef<OsStr>>(opts: &Options<C>) -> Result<Recorded, RecordError> {
    record_io(opts, &crate::ChildIo::default())
}

/// [`record`] with the command's streams set by `io`.
pub fn record_io<C: AsRef<OsStr>>(opts: &Options<C>, io: &crate::ChildIo) -> Result<Recorded, RecordError> {
    if opts.command.is_empty() && opts.pid.is_none() {
        return Err(RecordError::Nothing);
    }
    // a program that is not there is refused before anything is loaded or started
    let cmd = if opts.pid.is_none() {
        Some(crate::program::command(&opts.command)?)
    } else {
        None
    };
    if let Some(pid) = opts.pid {
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            return Err(RecordError::NoSuchPid(pid));
        }
        if crate::procfs::is_kernel_thread(pid) {
            return Err(RecordError::KernelThread {
                pid,
                comm: comm_of(pid, pid).unwrap_or_default(),
            });
        }
    }
    let probe = bpf::Probe::load()?;
    probe.set_recorder(std::process::id())?;
    let started = Instant::now();
    // other tasks' CPU time counts over the recording's window only (it is added up at switches)
    let others_before = probe.others_ns()?;
    let mut seeds: Vec<(u32, u32)> = Vec::new();
    let mut child = None;
    let root = if let Some(pid) = opts.pid {
        for tid in crate::procfs::threads_of(pid) {
            match probe.seed(tid, pid) {
                Ok(()) => seeds.push((tid, pid)),
                Err(RecordError::NoSuchPid(_)) if tid != pid => {} // a thread that just ended
                Err(RecordError::NoSuchPid(_)) => return Err(RecordError::EndedBeforeRecording(pid)),
                Err(e) => return Err(e),
            }
        }
        // The process existed when checked but ended while the probe loaded (tens of ms): no
        // thread was seeded, and the recording was an empty graph with exit status 0.
        if seeds.is_empty() {
            return Err(RecordError::EndedBeforeRecording(pid));
        }
        pid
    } else if let Some(mut cmd) = cmd {
        let spawn_error = |source| RecordError::Spawn {
            program: opts.command[0].as_ref().to_string_lossy().into_owned(),
            source,
        };
        io.apply(&mut cmd).map_err(spawn_error)?;
        // the program runs once its pid is seeded in the probe, not before: from its first
        // instruction on it is recorded
        let c = crate::sys::spawn_held(&mut cmd, |pid| probe.seed(pid, pid)).map_err(|e| match e {
            crate::sys::HeldError::Spawn(source) => spawn_error(source),
            crate::sys::HeldError::Release(e) => e,
        })?;
        let pid = c.id();
        seeds.push((pid, pid));
        child = Some(c);
        pid
    } else {
        return Err(RecordError::Nothing);
    };
    // Sample pages until the root ends.
    let mut raw = Raw::default();
    let mut exit_code = None;
    loop {
        let mut tgids: BTreeSet<u32> = seeds.iter().map(|s| s.1).collect();
        for (n, _) in probe.nodes()? {
            tgids.insert(n.tgid);
        }
        let mut round = Vec::new();
        for t in tgids {
            if let Some(s) = pagemap::sample(t) {
                round.push((t, s));
            }
            if let std::collections::btree_map::Entry::Vacant(v) = raw.ranks.entry(t) {
                if let Some(r) = crate::procfs::mpi_rank(t) {
                    v.insert(r);
                }
            }
        }
        let frames: Vec<(u32, &BTreeSet<u64>)> = round.iter().map(|(t, s)| (*t, &s.1)).collect();
        pagemap::share_round(&frames, &mut raw.shared);
        raw.pages.extend(round);
        let done = match child.as_mut() {
            Some(c) => match c.try_wait() {
                Ok(Some(status)) => {
                    exit_code = crate::shell_status(&status);
                    true
                }
                Ok(None) => false,
                Err(source) => {
                    return Err(RecordError::Os {
                        what: "waiting for the command".into(),
                        source,
                    })
                }
            },
            None => ended(root) || opts.duration.is_some_and(|d| started.elapsed() >= d),
        };
        if done {
            break;
        }
        std::thread::sleep(
            opts.sample_every
                .min(Duration::from_millis(50))
                .max(Duration::from_millis(1)),
        );
    }
    let elapsed = started.elapsed();
    let others = probe.others_ns()?.saturating_sub(others_before);
    // Nodes: those the probes saw fork or exit, plus the seeds; live ones completed from /proc.
    let mut nodes: Vec<RawNode> = Vec::new();
    let mut known = BTreeSet::new();
    for (mut n, ended) in probe.nodes()? {
        if !ended {
            n.comm = comm_of(n.tgid, n.tid).unwrap_or_default();
            (n.oncpu_ns, n.wait_ns) = probe.live_times(n.tid, n.tgid).unwrap_or((0, 0));
        }
        known.insert(n.tid);
        nodes.push(n);
    }
    for &(tid, tgid) in &seeds {
        if known.insert(tid) {
            let (oncpu_ns, wait_ns) = probe.live_times(tid, tgid).unwrap_or((0, 0));
            nodes.push(RawNode {
                tid,
                tgid,
                parent: None,
                comm: comm_of(tgid, tid).unwrap_or_default(),
                oncpu_ns,
                wait_ns,
            });
        }
    }
    raw.nodes = nodes;
    raw.flows = probe.flows()?;
    raw.events = probe.events()?;
    raw.across = probe.across()?;
    raw.crossings_recorded = true;
    raw.calls = probe.calls()?;
    if std::env::var_os("MULTIOS_MAP_DEBUG").is_some() {
        eprintln!("multios map: raw flows {:?}", raw.flows);
    }
    let mut graph = assemble(&raw);
    graph.command = crate::program::lossy(&opts.command);
    if opts.command.is_empty() {
        graph.command = vec![format!("-p {root}")];
    }
    graph.duration_s = elapsed.as_secs_f64();
    graph.topology = opts.topology.clone();
    graph.other_load = Some(crate::graph::OtherLoad {
        cpu_ns: others,
        cpus: crate::sys::cpus_online(),
    });
    Ok(Recorded { graph, exit_code })
}
