//! Loads `bpf/map.bpf.c` (compiled by build.rs), attaches it, seeds tasks and reads the maps back.

use super::assemble::{Flow, RawNode};
use super::RecordError;
use crate::graph::EdgeKind;
use crate::sys;
use libbpf_rs::{Link, Map, MapCore, MapFlags, Object};
use std::os::fd::AsRawFd;

static BPF_OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/map.bpf.o"));

/// Must match `struct task_state` in map.bpf.c.
const TASK_STATE_LEN: usize = 8 + 4 * 4 + 8 + 8 + 4 + 4 + 8 + 8 + 4 + 4;
const ONCPU_OFFSET: usize = 8 + 4 * 4 + 8;
const WAIT_OFFSET: usize = 8 + 4 * 4 + 8 + 8 + 4 + 4 + 8;
/// `KIND_WAKEUP_ACROSS` in map.bpf.c: counted in the edges map, not an edge kind of the graph.
const KIND_WAKEUP_ACROSS: u32 = 7;
/// `struct node_rec`: its `wait_ns` follows the 16 bytes of comm.
const NODE_WAIT_OFFSET: usize = 48;

/// The attached probes; detached when dropped.
pub struct Probe {
    obj: Object,
    _links: Vec<Link>,
}

fn ebpf_err(what: &str, e: libbpf_rs::Error) -> RecordError {
    let msg = format!("{e:#}");
    if matches!(e.kind(), libbpf_rs::ErrorKind::PermissionDenied)
        || msg.contains("Operation not permitted")
        || msg.contains("Permission denied")
    {
        RecordError::Permission {
            what: what.into(),
            detail: msg,
        }
    } else {
        RecordError::Ebpf {
            what: what.into(),
            msg,
        }
    }
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    b.get(off..off + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u32::from_ne_bytes)
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    b.get(off..off + 8)
        .and_then(|s| s.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

fn kind_of(k: u32) -> Option<EdgeKind> {
    match k {
        0 => Some(EdgeKind::Pipe),
        1 => Some(EdgeKind::Unix),
        2 => Some(EdgeKind::Wakeup),
        3 => Some(EdgeKind::Futex),
        4 => Some(EdgeKind::Signal),
        5 => Some(EdgeKind::Tcp),
        6 => Some(EdgeKind::Udp),
        _ => None,
    }
}

impl Probe {
    pub fn load() -> Result<Probe, RecordError> {
        let (obj, links) = multios_profiler::ebpf::load_and_attach(BPF_OBJECT, ebpf_err)?;
        Ok(Probe { obj, _links: links })
    }

    fn map(&self, name: &str) -> Result<Map<'_>, RecordError> {
        self.obj
            .maps()
            .find(|m| m.name() == name)
            .ok_or_else(|| RecordError::Ebpf {
                what: format!("map {name}"),
                msg: "missing from the object".into(),
            })
    }

    /// Names the recorder's own process, whose threads are not counted as other load.
    pub fn set_recorder(&self, tgid: u32) -> Result<(), RecordError> {
        self.map("config")?
            .update(&0u32.to_ne_bytes(), &tgid.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| ebpf_err("naming the recorder", e))
    }

    /// The time other tasks ran on the CPUs since the probes were attached, ns (every CPU's sum).
    pub fn others_ns(&self) -> Result<u64, RecordError> {
        let per_cpu = self
            .map("cpu_time")?
            .lookup_percpu(&0u32.to_ne_bytes(), MapFlags::ANY)
            .map_err(|e| ebpf_err("reading the other tasks' CPU time", e))?
            .unwrap_or_default();
        Ok(per_cpu.iter().map(|v| u64_at(v, 8)).sum())
    }

    /// Starts tracing thread `tid` of process `tgid` (and what it creates from now on).
    pub fn seed(&self, tid: u32, tgid: u32) -> Result<(), RecordError> {
        let fd = sys::pidfd_open(tid, tid != tgid).map_err(|e| match e.raw_os_error() {
            Some(libc::ESRCH) => RecordError::NoSuchPid(tid),
            Some(libc::EPERM) => RecordError::NotPermitted(tid),
            _ => RecordError::Os {
                what: format!("pidfd_open({tid})"),
                source: e,
            },
        })?;
        let state = [0u8; TASK_STATE_LEN];
        self.map("tasks")?
            .update(&fd.as_raw_fd().to_ne_bytes(), &state, MapFlags::ANY)
            .map_err(|e| ebpf_err(&format!("registering task {tid}"), e))
    }

    /// Time on a CPU and time waiting for one (ns) of a live traced thread, if it is traced.
    pub fn live_times(&self, tid: u32, tgid: u32) -> Option<(u64, u64)> {
        let fd = sys::pidfd_open(tid, tid != tgid).ok()?;
        let v = self
            .map("tasks")
            .ok()?
            .lookup(&fd.as_raw_fd().to_ne_bytes(), MapFlags::ANY)
            .ok()??;
        Some((u64_at(&v, ONCPU_OFFSET), u64_at(&v, WAIT_OFFSET)))
    }

    /// The nodes created or ended during the run: (tid, node).
    pub fn nodes(&self) -> Result<Vec<(RawNode, bool)>, RecordError> {
        let m = self.map("nodes")?;
        let mut out = Vec::new();
        for k in m.keys() {
            let Ok(Some(v)) = m.lookup(&k, MapFlags::ANY) else {
                continue;
            };
            let comm = v.get(32..48).unwrap_or(&[]);
            let end = comm.iter().position(|&c| c == 0).unwrap_or(comm.len());
            let ptid = u32_at(&v, 4);
            let ended = u64_at(&v, 16) != 0;
            out.push((
                RawNode {
                    tid: u32_at(&k, 0),
                    tgid: u32_at(&v, 0),
                    parent: (ptid != 0).then_some(ptid),
                    comm: String::from_utf8_lossy(&comm[..end]).into_owned(),
                    oncpu_ns: u64_at(&v, 24),
                    wait_ns: u64_at(&v, NODE_WAIT_OFFSET),
                },
                ended,
            ));
        }
        Ok(out)
    }

    pub fn flows(&self) -> Result<Vec<Flow>, RecordError> {
        let m = self.map("flows")?;
        let mut out = Vec::new();
        for k in m.keys() {
            let Ok(Some(v)) = m.lookup(&k, MapFlags::ANY) else {
                continue;
            };
            let io_kind = u32_at(&k, 12);
            let Some(kind) = kind_of(io_kind & 0xff) else {
                continue;
            };
            out.push(Flow {
                chan: u64_at(&k, 0),
                tid: u32_at(&k, 8),
                write: io_kind >> 8 == 1,
                kind,
                bytes: u64_at(&v, 0),
                calls: u64_at(&v, 8),
            });
        }
        Ok(out)
    }

    pub fn events(&self) -> Result<Vec<(u32, u32, EdgeKind, u64)>, RecordError> {
        let m = self.map("edges")?;
        let mut out = Vec::new();
        for k in m.keys() {
            let Ok(Some(v)) = m.lookup(&k, MapFlags::ANY) else {
                continue;
            };
            if let Some(kind) = kind_of(u32_at(&k, 8)) {
                out.push((u32_at(&k, 0), u32_at(&k, 4), kind, u64_at(&v, 0)));
            }
        }
        Ok(out)
    }

    /// (waker, wakee, count): the wake-ups after which the wakee first ran on another CPU than the
    /// one its waker woke it on (`KIND_WAKEUP_ACROSS` in map.bpf.c).
    pub fn across(&self) -> Result<Vec<(u32, u32, u64)>, RecordError> {
        let m = self.map("edges")?;
        let mut out = Vec::new();
        for k in m.keys() {
            if u32_at(&k, 8) != KIND_WAKEUP_ACROSS {
                continue;
            }
            if let Ok(Some(v)) = m.lookup(&k, MapFlags::ANY) {
                out.push((u32_at(&k, 0), u32_at(&k, 4), u64_at(&v, 0)));
            }
        }
        Ok(out)
    }

    pub fn calls(&self) -> Result<Vec<(u32, u32, u64)>, RecordError> {
        let m = self.map("calls")?;
        let mut out = Vec::new();
        for k in m.keys() {
            let Ok(Some(v)) = m.lookup(&k, MapFlags::ANY) else {
                continue;
            };
            out.push((u32_at(&k, 0), u32_at(&k, 4), u64_at(&v, 0)));
        }
        Ok(out)
    }
}
