//! From what the probes counted ([`Raw`]) to the graph: nodes, per-channel flows paired into
//! writer → reader edges, wake-up/futex/signal edges, syscall families, and the page samples.

use super::families;
use crate::graph::{Edge, EdgeKind, Families, Graph, Node, SharedPages};
use std::collections::{BTreeMap, BTreeSet};

/// A node as the probes saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawNode {
    pub tid: u32,
    pub tgid: u32,
    pub parent: Option<u32>,
    pub comm: String,
    pub oncpu_ns: u64,
    /// Time runnable but waiting for a CPU.
    pub wait_ns: u64,
}

/// Bytes one thread moved through one channel in one direction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flow {
    pub chan: u64,
    pub tid: u32,
    pub write: bool,
    pub kind: EdgeKind,
    pub bytes: u64,
    pub calls: u64,
}

/// Everything the recorder collected.
#[derive(Debug, Clone, Default)]
pub struct Raw {
    pub nodes: Vec<RawNode>,
    pub flows: Vec<Flow>,
    /// (from, to, kind, count) for wake-ups, futex wakes and signals.
    pub events: Vec<(u32, u32, EdgeKind, u64)>,
    /// (waker, wakee, count): wake-ups after which the wakee first ran on another CPU than the one
    /// its waker woke it on.
    pub across: Vec<(u32, u32, u64)>,
    /// Whether the probes counted `across` (every wake-up edge then carries its count, 0 included).
    pub crossings_recorded: bool,
    /// (tid, syscall number, count).
    pub calls: Vec<(u32, u32, u64)>,
    /// Per process: resident pages and the PFNs of its writable mappings at its last sample.
    pub pages: BTreeMap<u32, (u64, BTreeSet<u64>)>,
    /// Per pair of processes (a < b): the most writable frames both mapped at one sample
    /// (`pagemap::share_round`). The last samples alone lose sharing that ends before the
    /// processes do (Python unmaps an mmap object when it finalizes).
    pub shared: BTreeMap<(u32, u32), u64>,
    /// Per process: its MPI rank, when its environment names one.
    pub ranks: BTreeMap<u32, u32>,
}

/// Writers and readers of one channel paired: each writer's bytes split over the readers in
/// proportion to what each read (exact for one reader); messages likewise.
fn pair_flows(flows: &[Flow]) -> BTreeMap<(u32, u32, EdgeKind), (u64, u64)> {
    let mut by_chan: BTreeMap<(u64, EdgeKind), Vec<&Flow>> = BTreeMap::new();
    for f in flows {
        by_chan.entry((f.chan, f.kind)).or_default().push(f);
    }
    let mut out: BTreeMap<(u32, u32, EdgeKind), (u64, u64)> = BTreeMap::new();
    for ((_, kind), fl) in by_chan {
        let readers: Vec<&&Flow> = fl.iter().filter(|f| !f.write).collect();
        let read_total: u64 = readers.iter().map(|r| r.bytes).sum();
        if read_total == 0 {
            continue;
        }
        for w in fl.iter().filter(|f| f.write) {
            for r in &readers {
                if r.tid == w.tid {
                    continue;
                }
                let share = r.bytes as f64 / read_total as f64;
                let e = out.entry((w.tid, r.tid, kind)).or_default();
                e.0 += (w.bytes as f64 * share).round() as u64;
                e.1 += (w.calls as f64 * share).round() as u64;
            }
        }
    }
    out
}

/// The graph of `raw` (nodes in the order of their tids).
pub fn assemble(raw: &Raw) -> Graph {
    let mut nodes: BTreeMap<u32, Node> = BTreeMap::new();
    for n in &raw.nodes {
        nodes.insert(
            n.tid,
            Node {
                id: n.tid,
                tgid: n.tgid,
                parent: n.parent,
                comm: n.comm.clone(),
                cpu_ns: n.oncpu_ns,
                wait_ns: n.wait_ns,
                syscalls: Families::default(),
                rss_pages: 0,
                rank: None,
            },
        );
    }
    for &(tid, nr, count) in &raw.calls {
        if let Some(n) = nodes.get_mut(&tid) {
            families::add(&mut n.syscalls, nr, count);
        }
    }
    for n in nodes.values_mut() {
        if n.id == n.tgid {
            n.rss_pages = raw.pages.get(&n.tgid).map_or(0, |p| p.0);
            n.rank = raw.ranks.get(&n.tgid).copied();
        }
    }
    let mut edges = Vec::new();
    for ((from, to, kind), (bytes, count)) in pair_flows(&raw.flows) {
        if nodes.contains_key(&from) && nodes.contains_key(&to) {
            edges.push(Edge::new(from, to, kind, bytes, count));
        }
    }
    let mut ev: BTreeMap<(u32, u32, EdgeKind), u64> = BTreeMap::new();
    for &(from, to, kind, count) in &raw.events {
        if from != to && nodes.contains_key(&from) && nodes.contains_key(&to) {
            *ev.entry((from, to, kind)).or_default() += count;
        }
    }
    // wake-ups whose wakee next ran on another CPU than its waker's (recorded since version 3: every
    // wake-up edge of a recording carries the count, 0 included)
    let mut across: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    for &(from, to, count) in &raw.across {
        *across.entry((from, to)).or_default() += count;
    }
    for ((from, to, kind), count) in ev {
        let mut e = Edge::new(from, to, kind, 0, count);
        if kind == EdgeKind::Wakeup && raw.crossings_recorded {
            e.across = Some(across.get(&(from, to)).copied().unwrap_or(0).min(count));
        }
        edges.push(e);
    }
    let shared_pages: Vec<SharedPages> = raw
        .shared
        .iter()
        .filter(|((a, b), _)| nodes.contains_key(a) && nodes.contains_key(b))
        .map(|(&(a, b), &pages)| SharedPages { a, b, pages })
        .collect();
    let mut g = Graph::new(nodes.into_values().collect(), edges);
    g.shared_pages = shared_pages;
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(chan: u64, tid: u32, write: bool, bytes: u64) -> Flow {
        Flow {
            chan,
            tid,
            write,
            kind: EdgeKind::Pipe,
            bytes,
            calls: 1,
        }
    }

    #[test]
    fn pairs_one_writer_with_two_readers() {
        let f = vec![
            flow(7, 1, true, 300),
            flow(7, 2, false, 100),
            flow(7, 3, false, 200),
            flow(8, 9, true, 5),
        ];
        let p = pair_flows(&f);
        assert_eq!(p[&(1, 2, EdgeKind::Pipe)].0, 100);
        assert_eq!(p[&(1, 3, EdgeKind::Pipe)].0, 200);
        assert_eq!(p.len(), 2);
    }
}
