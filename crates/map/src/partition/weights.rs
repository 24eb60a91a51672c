//! The weighted, undirected view of a graph the partitioners, the placement and the projection work
//! on: per node its work (ns on a CPU), per pair what its interactions cost when the two run on
//! different CPUs and on one CPU, under a [`CostModel`], and the traffic those costs come from.

use crate::graph::{EdgeKind, Graph};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What interactions cost. The defaults are rounded from one `multios bench map` calibration on
/// this 2-vCPU VM (software-nested KVM guest, so wake-ups across vCPUs are dear); `bench map`
/// measures them afresh and prints them in this form, and every `map` command takes them as flags.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// Two CPUs: ns of CPU per message (the sender's and the receiver's together; a wake-up, a futex
    /// wake or a signal counts as a message) …
    pub ns_per_event: f64,
    /// … and per byte moved (pipes, sockets).
    pub ns_per_byte: f64,
    /// One CPU: the same two costs when both ends share the CPU (a context switch instead of a
    /// cross-CPU wake-up).
    #[serde(default = "default_local_event")]
    pub local_ns_per_event: f64,
    #[serde(default = "default_local_byte")]
    pub local_ns_per_byte: f64,
    /// The latency a blocking wake-up adds when the woken task's CPU has nothing else to run (the
    /// idle CPU must wake; on this VM a halt exit), per wake-up.
    #[serde(default)]
    pub ns_per_idle_wake: f64,
    /// ns per shared resident page and round trip when the sharers run apart (coherence misses).
    pub ns_per_shared_page: f64,
}

fn default_local_event() -> f64 {
    CostModel::default().local_ns_per_event
}

fn default_local_byte() -> f64 {
    CostModel::default().local_ns_per_byte
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            ns_per_event: 10_000.0,
            ns_per_byte: 0.3,
            local_ns_per_event: 3_500.0,
            local_ns_per_byte: 0.2,
            ns_per_idle_wake: 100_000.0,
            ns_per_shared_page: 100.0,
        }
    }
}

/// What passed between two nodes (both directions).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Traffic {
    pub bytes: f64,
    /// Messages: per direction the largest of its messages, futex wakes and wake-ups (a message
    /// that wakes its reader is one event, not two), plus signals.
    pub events: f64,
    /// Round trips: blocking hand-offs back and forth, the smaller of the two directions' wake-ups
    /// (their messages when no wake-up was recorded).
    pub round_trips: f64,
    /// Resident pages both map (the physical-frame layer).
    pub pages: f64,
}

impl CostModel {
    /// What `t` costs when the two ends run on different CPUs (the idle wake-ups included: when
    /// apart, each hand-off of a round trip may find the other CPU idle).
    pub fn apart(&self, t: &Traffic) -> f64 {
        self.busy_apart(t) + 2.0 * t.round_trips * self.ns_per_idle_wake
    }

    /// What `t` costs in CPU time when the two ends run on different busy CPUs.
    pub fn busy_apart(&self, t: &Traffic) -> f64 {
        t.events * self.ns_per_event
            + t.bytes * self.ns_per_byte
            + t.pages * t.round_trips.max(1.0) * self.ns_per_shared_page
    }

    /// What `t` costs when both ends share one CPU.
    pub fn together(&self, t: &Traffic) -> f64 {
        t.events * self.local_ns_per_event + t.bytes * self.local_ns_per_byte
    }
}

/// One pair: its nodes (i < j), its cost apart and together, and its traffic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pair {
    pub i: usize,
    pub j: usize,
    pub apart: f64,
    pub together: f64,
    pub traffic: Traffic,
}

/// Node work and pair costs, indexed 0..n in the graph's node order.
#[derive(Debug, Clone, PartialEq)]
pub struct Weights {
    pub ids: Vec<u32>,
    pub work: Vec<f64>,
    /// Undirected pairs (i < j) with their cost apart; every pair once.
    pub pairs: Vec<(usize, usize, f64)>,
    /// The same pairs, in the same order, with their cost together and their traffic.
    pub detail: Vec<Pair>,
    /// Neighbours of each node with the pair cost apart.
    pub adj: Vec<Vec<(usize, f64)>>,
}

/// Per direction of a pair: messages, futex wakes, wake-ups; and signals and bytes.
#[derive(Default, Clone, Copy)]
struct Directed {
    messages: [u64; 2],
    futex: [u64; 2],
    wakeups: [u64; 2],
    signals: u64,
    bytes: u64,
}

/// The traffic of every pair of `g` (node ids, smaller first).
pub fn traffic(g: &Graph) -> BTreeMap<(u32, u32), Traffic> {
    let mut d: BTreeMap<(u32, u32), Directed> = BTreeMap::new();
    for e in &g.edges {
        if e.from == e.to {
            continue;
        }
        let key = (e.from.min(e.to), e.from.max(e.to));
        let dir = usize::from(e.from > e.to);
        let x = d.entry(key).or_default();
        match e.kind {
            EdgeKind::Pipe | EdgeKind::Unix | EdgeKind::Tcp | EdgeKind::Udp => {
                x.messages[dir] += e.count;
                x.bytes += e.bytes;
            }
            EdgeKind::Futex => x.futex[dir] += e.count,
            EdgeKind::Wakeup => x.wakeups[dir] += e.count,
            EdgeKind::Signal => x.signals += e.count,
        }
    }
    let mut out: BTreeMap<(u32, u32), Traffic> = d
        .into_iter()
        .map(|(k, x)| {
            let per = |k: usize| x.messages[k].max(x.futex[k]).max(x.wakeups[k]) as f64;
            let round_trips = if x.wakeups[0] + x.wakeups[1] > 0 {
                x.wakeups[0].min(x.wakeups[1]) as f64
            } else {
                per(0).min(per(1))
            };
            (
                k,
                Traffic {
                    bytes: x.bytes as f64,
                    events: per(0) + per(1) + x.signals as f64,
                    round_trips,
                    pages: 0.0,
                },
            )
        })
        .collect();
    for s in &g.shared_pages {
        if s.a != s.b {
            out.entry((s.a.min(s.b), s.a.max(s.b))).or_default().pages += s.pages as f64;
        }
    }
    out
}

impl Weights {
    pub fn new(g: &Graph, cost: &CostModel) -> Weights {
        let ids = g.ids();
        let index: BTreeMap<u32, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        let work = g.nodes.iter().map(|n| n.cpu_ns as f64).collect();
        let mut detail = Vec::new();
        for ((a, b), t) in traffic(g) {
            let (Some(&i), Some(&j)) = (index.get(&a), index.get(&b)) else {
                continue;
            };
            detail.push(Pair {
                i: i.min(j),
                j: i.max(j),
                apart: cost.apart(&t),
                together: cost.together(&t),
                traffic: t,
            });
        }
        Weights::from_detail(ids, work, detail)
    }

    /// From explicit work and pair costs apart (i != j; duplicates are summed); each pair's cost
    /// together is half its cost apart, its traffic unknown (zero).
    pub fn from_pairs(ids: Vec<u32>, work: Vec<f64>, pairs: Vec<(usize, usize, f64)>) -> Weights {
        let detail = pairs
            .into_iter()
            .map(|(i, j, c)| Pair {
                i,
                j,
                apart: c,
                together: 0.5 * c,
                traffic: Traffic::default(),
            })
            .collect();
        Weights::from_detail(ids, work, detail)
    }

    /// From explicit pairs (i != j, both < n; duplicates are summed).
    pub fn from_detail(ids: Vec<u32>, work: Vec<f64>, pairs: Vec<Pair>) -> Weights {
        let n = ids.len();
        let mut m: BTreeMap<(usize, usize), Pair> = BTreeMap::new();
        for p in pairs {
            if p.i == p.j || p.i >= n || p.j >= n {
                continue;
            }
            let (i, j) = (p.i.min(p.j), p.i.max(p.j));
            let e = m.entry((i, j)).or_insert(Pair {
                i,
                j,
                apart: 0.0,
                together: 0.0,
                traffic: Traffic::default(),
            });
            e.apart += p.apart;
            e.together += p.together;
            e.traffic.bytes += p.traffic.bytes;
            e.traffic.events += p.traffic.events;
            e.traffic.round_trips += p.traffic.round_trips;
            e.traffic.pages += p.traffic.pages;
        }
        let detail: Vec<Pair> = m.into_values().collect();
        let mut adj = vec![Vec::new(); n];
        for p in &detail {
            adj[p.i].push((p.j, p.apart));
            adj[p.j].push((p.i, p.apart));
        }
        Weights {
            ids,
            work,
            pairs: detail.iter().map(|p| (p.i, p.j, p.apart)).collect(),
            detail,
            adj,
        }
    }

    /// The cost together of the pair of nodes `i` and `j` (0 when they have none).
    pub fn together(&self, i: usize, j: usize) -> f64 {
        let (i, j) = (i.min(j), i.max(j));
        self.detail
            .binary_search_by(|p| (p.i, p.j).cmp(&(i, j)))
            .map_or(0.0, |k| self.detail[k].together)
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Edge, Node};

    fn node(id: u32) -> Node {
        Node::process(id, "n", 0)
    }

    fn edge(from: u32, to: u32, kind: EdgeKind, bytes: u64, count: u64) -> Edge {
        Edge::new(from, to, kind, bytes, count)
    }

    #[test]
    fn a_message_that_wakes_its_reader_is_one_event() {
        // ping-pong: 100 messages each way, each waking the other side
        let g = Graph::new(
            vec![node(1), node(2)],
            vec![
                edge(1, 2, EdgeKind::Pipe, 100_000, 100),
                edge(2, 1, EdgeKind::Pipe, 100, 100),
                edge(1, 2, EdgeKind::Wakeup, 0, 100),
                edge(2, 1, EdgeKind::Wakeup, 0, 99),
            ],
        );
        let t = traffic(&g)[&(1, 2)];
        assert_eq!((t.events, t.round_trips, t.bytes), (200.0, 99.0, 100_100.0));
        let c = CostModel::default();
        let w = Weights::new(&g, &c);
        assert_eq!(w.pairs.len(), 1);
        assert_eq!(w.detail[0].together, c.together(&t));
        assert_eq!(w.together(1, 0), c.together(&t));
        assert!(w.detail[0].apart > w.detail[0].together);
    }
}
