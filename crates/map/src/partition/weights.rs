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
    /// Wake-ups between the two, both directions.
    #[serde(default)]
    pub wakeups: f64,
    /// Of those, the ones after which the woken end first ran on another CPU than its waker's (how
    /// often Linux's placement split the pair's hand-offs in the recorded run); None: not recorded
    /// (graphs before version 3, written by hand).
    #[serde(default)]
    pub across: Option<f64>,
}

impl Traffic {
    /// The share of the wake-ups that crossed CPUs in the recorded run (None: not recorded, or no
    /// wake-ups).
    pub fn crossed_share(&self) -> Option<f64> {
        let a = self.across?;
        (self.wakeups > 0.0).then(|| (a / self.wakeups).clamp(0.0, 1.0))
    }
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

/// Per direction of a pair: messages, futex wakes, wake-ups; and signals, bytes and the wake-ups
/// that crossed CPUs (None: not recorded).
#[derive(Default, Clone, Copy)]
struct Directed {
    messages: [u64; 2],
    futex: [u64; 2],
    wakeups: [u64; 2],
    signals: u64,
    bytes: u64,
    across: Option<u64>,
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
            EdgeKind::Wakeup => {
                x.wakeups[dir] += e.count;
                if let Some(a) = e.across {
                    x.across = Some(x.across.unwrap_or(0) + a);
                }
            }
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
                    wakeups: (x.wakeups[0] + x.wakeups[1]) as f64,
                    across: x.across.map(|a| a as f64),
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
            let e = match m.entry((i, j)) {
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(Pair { i, j, ..p });
                    continue;
                }
                std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
            };
            e.apart += p.apart;
            e.together += p.together;
            e.traffic.bytes += p.traffic.bytes;
            e.traffic.events += p.traffic.events;
            e.traffic.round_trips += p.traffic.round_trips;
            e.traffic.pages += p.traffic.pages;
            e.traffic.wakeups += p.traffic.wakeups;
            // the share crossed is known only if it is known for every part
            e.traffic.across = e.traffic.across.zip(p.traffic.across).map(|(a, b)| a + b);
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
        // written by hand: the crossings are not known
        assert_eq!((t.wakeups, t.across, t.crossed_share()), (199.0, None, None));
    }

    #[test]
    fn issue_12_the_wakeups_that_crossed_cpus_make_a_share_of_the_pairs_wakeups() {
        let mut down = edge(1, 2, EdgeKind::Wakeup, 0, 100);
        down.across = Some(30);
        let mut up = edge(2, 1, EdgeKind::Wakeup, 0, 100);
        up.across = Some(50);
        let g = Graph::new(
            vec![node(1), node(2)],
            vec![edge(1, 2, EdgeKind::Pipe, 1000, 100), down, up],
        );
        let t = traffic(&g)[&(1, 2)];
        assert_eq!((t.wakeups, t.across), (200.0, Some(80.0)));
        assert_eq!(t.crossed_share(), Some(0.4));
        // duplicates merge their counts; the share stays known only if known for both parts
        let p = Pair {
            i: 0,
            j: 1,
            apart: 1.0,
            together: 1.0,
            traffic: t,
        };
        let w = Weights::from_detail(vec![1, 2], vec![0.0; 2], vec![p, Pair { i: 1, j: 0, ..p }]);
        assert_eq!(w.detail[0].traffic.across, Some(160.0));
        assert_eq!(w.detail[0].traffic.crossed_share(), Some(0.4));
        let mut blind = p;
        blind.traffic.across = None;
        let w = Weights::from_detail(vec![1, 2], vec![0.0; 2], vec![p, blind]);
        assert_eq!(w.detail[0].traffic.crossed_share(), None);
    }
}
