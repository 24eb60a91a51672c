//! The weighted, undirected view of a graph the partitioners work on: per node its work (ns on a
//! CPU), per pair the cost (ns) its interactions would have if the two ran on different cores, under
//! a [`CostModel`].

use crate::graph::Graph;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one interaction costs across cores. The defaults are nominal round numbers, not measurements;
/// `multios bench map` measures the per-byte and per-exchange costs of this machine and prints them in
/// this form, and every `map` command takes them as flags.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CostModel {
    /// ns per byte moved between cores (pipes, sockets).
    pub ns_per_byte: f64,
    /// ns per message, wake-up, futex wake or signal between cores.
    pub ns_per_event: f64,
    /// ns per shared resident page when the sharers run apart (coherence, block operations).
    pub ns_per_shared_page: f64,
    /// Fraction of an interaction's cost that remains when both ends are in one cluster.
    pub local_factor: f64,
}

impl Default for CostModel {
    fn default() -> Self {
        CostModel {
            ns_per_byte: 0.1,
            ns_per_event: 1000.0,
            ns_per_shared_page: 100.0,
            local_factor: 0.5,
        }
    }
}

/// Node work and pair costs, indexed 0..n in the graph's node order.
#[derive(Debug, Clone, PartialEq)]
pub struct Weights {
    pub ids: Vec<u32>,
    pub work: Vec<f64>,
    /// Undirected pairs (i < j) with their cost; every pair once.
    pub pairs: Vec<(usize, usize, f64)>,
    /// Neighbours of each node with the pair cost.
    pub adj: Vec<Vec<(usize, f64)>>,
}

impl Weights {
    pub fn new(g: &Graph, cost: &CostModel) -> Weights {
        let ids = g.ids();
        let index: BTreeMap<u32, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
        let work = g.nodes.iter().map(|n| n.cpu_ns as f64).collect();
        let mut m: BTreeMap<(usize, usize), f64> = BTreeMap::new();
        for ((a, b), (bytes, count)) in g.pairs() {
            let (Some(&i), Some(&j)) = (index.get(&a), index.get(&b)) else {
                continue;
            };
            *m.entry((i.min(j), i.max(j))).or_default() +=
                bytes as f64 * cost.ns_per_byte + count as f64 * cost.ns_per_event;
        }
        for s in &g.shared_pages {
            let (Some(&i), Some(&j)) = (index.get(&s.a), index.get(&s.b)) else {
                continue;
            };
            if i != j {
                *m.entry((i.min(j), i.max(j))).or_default() += s.pages as f64 * cost.ns_per_shared_page;
            }
        }
        Weights::from_pairs(ids, work, m.into_iter().map(|((i, j), w)| (i, j, w)).collect())
    }

    /// From explicit work and pairs (i != j; duplicates are summed).
    pub fn from_pairs(ids: Vec<u32>, work: Vec<f64>, pairs: Vec<(usize, usize, f64)>) -> Weights {
        let n = ids.len();
        let mut m: BTreeMap<(usize, usize), f64> = BTreeMap::new();
        for (i, j, w) in pairs {
            if i != j && i < n && j < n {
                *m.entry((i.min(j), i.max(j))).or_default() += w;
            }
        }
        let mut adj = vec![Vec::new(); n];
        let pairs: Vec<(usize, usize, f64)> = m.into_iter().map(|((i, j), w)| (i, j, w)).collect();
        for &(i, j, w) in &pairs {
            adj[i].push((j, w));
            adj[j].push((i, w));
        }
        Weights {
            ids,
            work,
            pairs,
            adj,
        }
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }
}
