//! The eBPF backend: loads `bpf/profiler.bpf.c` (compiled by build.rs), attaches it to the
//! sys_enter/sys_exit/sched_process_fork/sched_process_exec/sched_process_exit BTF tracepoints, calibrates the probe
//! bias and reads the per-CPU statistics back.

use crate::error::ProfilerError;
use crate::raw::{Raw, RawAnon, RawCall, RawCode, RawExec, RawProcCall, RawThread};
use crate::sys;
use libbpf_rs::{Link, Map, MapCore, MapFlags, Object, ObjectBuilder};
use multios_profile::{AnonMaps, ANON_BUCKETS};
use std::collections::BTreeMap;
use std::os::fd::AsRawFd;

static BPF_OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/profiler.bpf.o"));
/// The cost-floor variants of floor.bpf.c: 0 empty, 1 clock reads, 2 task-storage miss.
static FLOOR_OBJECTS: [&[u8]; 4] = [
    include_bytes!(concat!(env!("OUT_DIR"), "/floor0.bpf.o")),
    include_bytes!(concat!(env!("OUT_DIR"), "/floor1.bpf.o")),
    include_bytes!(concat!(env!("OUT_DIR"), "/floor2.bpf.o")),
    include_bytes!(concat!(env!("OUT_DIR"), "/floor3.bpf.o")),
];

/// Programs loaded and attached for as long as this lives.
pub struct Attached {
    obj: Object,
    _links: Vec<Link>,
}

/// Opens a compiled eBPF object, loads it and attaches every program in it; `err` turns a libbpf
/// error at a named step into the caller's error. libbpf's own messages (feature probes, verifier
/// logs) are printed only with MULTIOS_BPF_DEBUG set. Shared with `multios map record`.
pub fn load_and_attach<E>(
    bytes: &[u8],
    err: impl Fn(&str, libbpf_rs::Error) -> E,
) -> Result<(Object, Vec<Link>), E> {
    if std::env::var_os("MULTIOS_BPF_DEBUG").is_none() {
        libbpf_rs::set_print(None);
    }
    let open = ObjectBuilder::default()
        .open_memory(bytes)
        .map_err(|e| err("opening the object", e))?;
    let obj = open
        .load()
        .map_err(|e| err("loading the programs (verifier or permissions)", e))?;
    let mut links = Vec::new();
    for prog in obj.progs_mut() {
        let name = prog.name().to_string_lossy().into_owned();
        links.push(prog.attach().map_err(|e| err(&format!("attaching {name}"), e))?);
    }
    Ok((obj, links))
}

/// Loads `bytes` and attaches every program in it.
fn attach_object(bytes: &[u8]) -> Result<Attached, ProfilerError> {
    let (obj, links) = load_and_attach(bytes, ebpf_err)?;
    Ok(Attached { obj, _links: links })
}

/// Attaches cost-floor variant `v` (0 empty programs, 1 clock reads, 2 task-storage miss).
pub fn attach_floor(v: usize) -> Result<Attached, ProfilerError> {
    let bytes = FLOOR_OBJECTS.get(v).ok_or_else(|| ProfilerError::Ebpf {
        what: "floor variant".into(),
        msg: format!("{v} does not exist (0..=2)"),
    })?;
    attach_object(bytes)
}

/// Must match `MAX_NR`, `HIST_BUCKETS` and the structs in profiler.bpf.c.
const MAX_NR: u32 = 512;
/// Must match `MAX_THREADS` in profiler.bpf.c.
pub const MAX_THREADS: usize = 65536;
/// Must match `MAX_EXECS` in profiler.bpf.c.
pub const MAX_EXECS: usize = 8192;
const HIST_BUCKETS: usize = 40;
const TASK_STATE_LEN: usize = 8 * 8;
/// `struct thread_rec`: tgid, ptgid, four u64s, comm[16], status, pad.
const THREAD_REC_LEN: usize = 8 + 4 * 8 + 16 + 8;
/// `struct thread_key`: tid, pad, start_ns.
const THREAD_KEY_LEN: usize = 16;
/// `struct sc_stats`: five counters, the per-call times' buckets and the gaps' buckets.
const SC_STATS_WORDS: usize = 5 + 2 * HIST_BUCKETS;
/// `struct exec_key` (tgid, pad, ns) and `struct exec_rec` (ino, size, path[PATH_LEN]).
const EXEC_KEY_LEN: usize = 16;
const EXEC_REC_LEN: usize = 16 + 256;

/// The loaded and attached probes.
pub struct Probe {
    attached: Attached,
}

fn ebpf_err(what: &str, e: libbpf_rs::Error) -> ProfilerError {
    let msg = format!("{e:#}");
    if matches!(e.kind(), libbpf_rs::ErrorKind::PermissionDenied)
        || msg.contains("Operation not permitted")
        || msg.contains("Permission denied")
    {
        ProfilerError::EbpfPermission {
            what: what.into(),
            detail: msg,
        }
    } else {
        ProfilerError::Ebpf {
            what: what.into(),
            msg,
        }
    }
}

fn words(bytes: &[u8]) -> impl Iterator<Item = u64> + '_ {
    bytes
        .chunks_exact(8)
        .map(|c| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8])))
}

impl Probe {
    /// Loads and attaches the programs. Nothing is traced until [`Probe::seed`].
    pub fn load() -> Result<Probe, ProfilerError> {
        Ok(Probe {
            attached: attach_object(BPF_OBJECT)?,
        })
    }

    fn map(&self, name: &str) -> Result<Map<'_>, ProfilerError> {
        self.attached
            .obj
            .maps()
            .find(|m| m.name() == name)
            .ok_or_else(|| ProfilerError::Ebpf {
                what: format!("map {name}"),
                msg: "missing from the object".into(),
            })
    }

    /// Starts tracing task `tid` (and, through fork, everything it creates from now on); with
    /// `wait_exec`, only from its next execve on.
    pub fn seed(&self, tid: u32, tgid: u32, wait_exec: bool) -> Result<(), ProfilerError> {
        let fd = sys::pidfd_open(tid, tid != tgid).map_err(|e| match e.raw_os_error() {
            Some(libc::ESRCH) => ProfilerError::PidGone(tid),
            _ => ProfilerError::os(format!("pidfd_open({tid})"), e),
        })?;
        let mut state = [0u8; TASK_STATE_LEN];
        // task_state.nr: WAIT_EXEC, or FIRST_EXIT (the return of a call the task may be blocked in
        // now is not one of its calls; profiler.bpf.c).
        let nr = if wait_exec { u64::MAX } else { u64::MAX - 1 };
        state[8..16].copy_from_slice(&nr.to_ne_bytes());
        self.map("tasks")?
            .update(&fd.as_raw_fd().to_ne_bytes(), &state, MapFlags::ANY)
            .map_err(|e| ebpf_err(&format!("registering task {tid}"), e))
    }

    /// Stops tracing task `tid`.
    pub fn unseed(&self, tid: u32, tgid: u32) -> Result<(), ProfilerError> {
        let fd = sys::pidfd_open(tid, tid != tgid).map_err(|e| ProfilerError::os("pidfd_open", e))?;
        self.map("tasks")?
            .delete(&fd.as_raw_fd().to_ne_bytes())
            .map_err(|e| ebpf_err("unregistering a task", e))
    }

    /// The per-call state of a live task: (start_ns, calls, syscall_ns), if it is traced.
    pub fn live_thread(&self, tid: u32, tgid: u32) -> Option<(u64, u64, u64)> {
        let fd = sys::pidfd_open(tid, tid != tgid).ok()?;
        let v = self
            .map("tasks")
            .ok()?
            .lookup(&fd.as_raw_fd().to_ne_bytes(), MapFlags::ANY)
            .ok()??;
        let w: Vec<u64> = words(&v).collect();
        (w.len() == TASK_STATE_LEN / 8).then(|| (w[2], w[3], w[4]))
    }

    /// Sets the correction (ns, may be negative) added to every raw per-call duration in the kernel.
    pub fn set_correction(&self, ns: i64) -> Result<(), ProfilerError> {
        self.map("config")?
            .update(&0u32.to_ne_bytes(), &ns.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| ebpf_err("setting the bias correction", e))
    }

    /// Counts every call per process too (`--per-process`): one more hash update per call.
    pub fn set_per_process(&self, on: bool) -> Result<(), ProfilerError> {
        self.map("config")?
            .update(&1u32.to_ne_bytes(), &i64::from(on).to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| ebpf_err("turning the per-process counts on", e))
    }

    /// Counts no more calls (the per-process flag is kept): what [`Probe::collect`] and
    /// [`Probe::live_thread`] read afterwards agree, however long the reading takes.
    pub fn stop_counting(&self, per_process: bool) -> Result<(), ProfilerError> {
        let flags = 2 | i64::from(per_process);
        self.map("config")?
            .update(&1u32.to_ne_bytes(), &flags.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| ebpf_err("stopping the counts", e))
    }

    /// The statistics of one system call number, summed over CPUs.
    pub fn call(&self, nr: u32) -> Result<RawCall, ProfilerError> {
        let per_cpu = self
            .map("stats")?
            .lookup_percpu(&nr.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| ebpf_err("reading the statistics", e))?
            .unwrap_or_default();
        let mut total = RawCall {
            nr,
            ..RawCall::default()
        };
        for v in per_cpu {
            let w: Vec<u64> = words(&v).collect();
            if w.len() < SC_STATS_WORDS || w[0] == 0 {
                continue;
            }
            let one = RawCall {
                nr,
                count: w[0],
                total_ns: w[1],
                min_ns: w[2],
                max_ns: w[3],
                errors: w[4],
                hist: w[5..5 + HIST_BUCKETS].to_vec(),
                gaps: w[5 + HIST_BUCKETS..SC_STATS_WORDS].to_vec(),
            };
            total.merge(&one);
        }
        Ok(total)
    }

    /// Zeroes the per-syscall statistics and the thread records (after calibration).
    pub fn clear(&self) -> Result<(), ProfilerError> {
        let ncpu = libbpf_rs::num_possible_cpus().map_err(|e| ebpf_err("counting CPUs", e))?;
        let zero = vec![vec![0u8; SC_STATS_WORDS * 8]; ncpu];
        let stats = self.map("stats")?;
        for nr in 0..MAX_NR {
            stats
                .update_percpu(&nr.to_ne_bytes(), &zero, MapFlags::ANY)
                .map_err(|e| ebpf_err("clearing the statistics", e))?;
        }
        let mem = self.map("mem_bytes")?;
        let zero = vec![vec![0u8; 8]; ncpu];
        for slot in 0..6u32 {
            mem.update_percpu(&slot.to_ne_bytes(), &zero, MapFlags::ANY)
                .map_err(|e| ebpf_err("clearing the memory calls' lengths", e))?;
        }
        for name in [
            "threads",
            "proc_calls",
            "execs",
            "proc_code",
            "proc_anon",
            "proc_brk",
        ] {
            let m = self.map(name)?;
            let keys: Vec<Vec<u8>> = m.keys().collect();
            for k in keys {
                let _ = m.delete(&k);
            }
        }
        Ok(())
    }

    /// The per-process counts, summed over CPUs.
    fn proc_calls(&self) -> Result<Vec<RawProcCall>, ProfilerError> {
        let m = self.map("proc_calls")?;
        let mut out = Vec::new();
        for k in m.keys() {
            if k.len() < 8 {
                continue;
            }
            let Ok(Some(per_cpu)) = m.lookup_percpu(&k, MapFlags::ANY) else {
                continue;
            };
            let mut c = RawProcCall {
                tgid: u32::from_ne_bytes([k[0], k[1], k[2], k[3]]),
                nr: u32::from_ne_bytes([k[4], k[5], k[6], k[7]]),
                ..RawProcCall::default()
            };
            for v in per_cpu {
                let w: Vec<u64> = words(&v).collect();
                if w.len() >= 2 {
                    c.count += w[0];
                    c.total_ns += w[1];
                }
            }
            if c.count > 0 {
                out.push(c);
            }
        }
        out.sort_by_key(|c| (c.tgid, c.nr));
        Ok(out)
    }

    /// The traced processes' execs, in time order.
    fn execs(&self) -> Result<Vec<RawExec>, ProfilerError> {
        let m = self.map("execs")?;
        let mut out = Vec::new();
        for k in m.keys() {
            let Ok(Some(v)) = m.lookup(&k, MapFlags::ANY) else {
                continue;
            };
            if k.len() < EXEC_KEY_LEN || v.len() < EXEC_REC_LEN {
                continue;
            }
            let kw: Vec<u64> = words(&k).collect();
            let vw: Vec<u64> = words(&v[..16]).collect();
            let path = &v[16..EXEC_REC_LEN];
            let path = &path[..path.iter().position(|b| *b == 0).unwrap_or(path.len())];
            out.push(RawExec {
                tgid: (kw[0] & 0xffff_ffff) as u32,
                ns: kw[1],
                path: String::from_utf8_lossy(path).into_owned(),
                ino: vw[0],
                size: vw[1],
            });
        }
        out.sort_by_key(|e| (e.ns, e.tgid));
        Ok(out)
    }

    /// Per process, its executable file mappings.
    fn code(&self) -> Result<Vec<RawCode>, ProfilerError> {
        let m = self.map("proc_code")?;
        let mut out = Vec::new();
        for k in m.keys() {
            let Ok(Some(v)) = m.lookup(&k, MapFlags::ANY) else {
                continue;
            };
            let w: Vec<u64> = words(&v).collect();
            if k.len() < 4 || w.len() < 2 {
                continue;
            }
            out.push(RawCode {
                tgid: u32::from_ne_bytes([k[0], k[1], k[2], k[3]]),
                calls: w[0],
                bytes: w[1],
            });
        }
        out.sort_by_key(|c| c.tgid);
        Ok(out)
    }

    /// Per process, its new anonymous ranges (count and Σ length per log2 bucket of the length).
    fn anon(&self) -> Result<Vec<RawAnon>, ProfilerError> {
        let m = self.map("proc_anon")?;
        let mut by: BTreeMap<u32, ([u64; ANON_BUCKETS], [u64; ANON_BUCKETS])> = BTreeMap::new();
        for k in m.keys() {
            let Ok(Some(v)) = m.lookup(&k, MapFlags::ANY) else {
                continue;
            };
            let w: Vec<u64> = words(&v).collect();
            if k.len() < 8 || w.len() < 2 {
                continue;
            }
            let tgid = u32::from_ne_bytes([k[0], k[1], k[2], k[3]]);
            let b = u32::from_ne_bytes([k[4], k[5], k[6], k[7]]) as usize;
            let e = by.entry(tgid).or_insert(([0; ANON_BUCKETS], [0; ANON_BUCKETS]));
            if let (Some(c), Some(s)) = (e.0.get_mut(b), e.1.get_mut(b)) {
                *c += w[0];
                *s += w[1];
            }
        }
        Ok(by
            .into_iter()
            .map(|(tgid, (c, s))| RawAnon {
                tgid,
                maps: AnonMaps::from_buckets(&c, &s),
            })
            .collect())
    }

    /// Σ of the memory calls' lengths (mmap, munmap, mremap old, mremap new) and the file-backed
    /// mmaps' count and Σ length, summed over CPUs.
    fn mem_bytes(&self) -> Result<[u64; 6], ProfilerError> {
        let m = self.map("mem_bytes")?;
        let mut out = [0u64; 6];
        for (slot, o) in out.iter_mut().enumerate() {
            let per_cpu = m
                .lookup_percpu(&(slot as u32).to_ne_bytes(), MapFlags::ANY)
                .map_err(|e| ebpf_err("reading the memory calls' lengths", e))?
                .unwrap_or_default();
            *o = per_cpu
                .iter()
                .flat_map(|v| words(v))
                .fold(0u64, u64::wrapping_add);
        }
        Ok(out)
    }

    /// Reads everything: per-syscall statistics and the records of exited threads.
    pub fn collect(&self) -> Result<Raw, ProfilerError> {
        let mut raw = Raw::default();
        for nr in 0..MAX_NR {
            let c = self.call(nr)?;
            if c.count > 0 {
                raw.calls.push(c);
            }
        }
        let threads = self.map("threads")?;
        for k in threads.keys() {
            let Ok(Some(v)) = threads.lookup(&k, MapFlags::ANY) else {
                continue;
            };
            let w: Vec<u64> = words(&v).collect();
            if v.len() < THREAD_REC_LEN || k.len() < THREAD_KEY_LEN {
                continue;
            }
            let comm = &v[40..56];
            let comm = &comm[..comm.iter().position(|b| *b == 0).unwrap_or(comm.len())];
            raw.threads.push(RawThread {
                tid: u32::from_ne_bytes([k[0], k[1], k[2], k[3]]),
                tgid: (w[0] & 0xffff_ffff) as u32,
                ptgid: (w[0] >> 32) as u32,
                comm: String::from_utf8_lossy(comm).into_owned(),
                start_ns: w[1],
                end_ns: w[2],
                calls: w[3],
                syscall_ns: w[4],
                exit_status: Some(i32::from_ne_bytes([v[56], v[57], v[58], v[59]])),
            });
        }
        raw.threads.sort_by_key(|t| (t.start_ns, t.tid));
        raw.proc_calls = self.proc_calls()?;
        raw.mem_bytes = Some(self.mem_bytes()?);
        raw.execs = self.execs()?;
        raw.code = self.code()?;
        raw.anon = self.anon()?;
        Ok(raw)
    }
}
