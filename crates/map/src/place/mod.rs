//! Placing the nodes of a graph on the PUs of a topology (§II-C): the paper's O(P) affinity-aware
//! mapping ([`affinity`]), a TreeMatch-style baseline ([`treematch`]) and round-robin, with the
//! TreeMatch scores of a placement ([`Costs`]).

pub mod affinity;
pub mod treematch;

use crate::graph::Graph;
use crate::partition::{CostModel, Partition, Weights};
use crate::topology::Topology;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// The paper's O(P) affinity-aware mapping of the overlapping partition.
    Affinity,
    /// TreeMatch-style: group the communication matrix bottom-up along the topology's arities.
    Treematch,
    /// Node k on PU k mod P, in OS CPU order (what a `taskset` loop does).
    RoundRobin,
}

impl Strategy {
    pub const ALL: [Strategy; 3] = [Strategy::Affinity, Strategy::Treematch, Strategy::RoundRobin];
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Affinity => "affinity",
            Strategy::Treematch => "treematch",
            Strategy::RoundRobin => "round-robin",
        }
    }
}

/// TreeMatch's scores of a placement, with comm(u, v) = the pair's cost under the cost model:
/// SUM_COM = Σ comm over pairs on different PUs; MAX_COM = the largest Σ comm leaving one PU;
/// HOP_BYTE = Σ comm · hops(PU(u), PU(v)).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Costs {
    pub sum_com: f64,
    pub max_com: f64,
    pub hop_byte: f64,
}

/// One node's place.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assigned {
    pub id: u32,
    pub tgid: u32,
    pub comm: String,
    /// Index into the topology's PUs.
    pub pu: usize,
    /// The OS CPU number of that PU.
    pub cpu: u32,
    /// Whether a run pins the node to `cpu`. A free node (the affinity placement's nodes that share
    /// no PU with a partner) may run on any CPU of `domain`, where Linux balances it.
    #[serde(default = "pinned_by_default")]
    pub pinned: bool,
    /// The OS CPUs of a free node's package (empty for a pinned node).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub domain: Vec<u32>,
    /// The node's MPI rank, when the graph recorded one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
}

fn pinned_by_default() -> bool {
    true
}

impl Assigned {
    /// The CPUs a run lets the node use: its CPU when pinned, its domain when free.
    pub fn cpus(&self) -> Vec<u32> {
        if self.pinned || self.domain.is_empty() {
            vec![self.cpu]
        } else {
            self.domain.clone()
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    pub strategy: Strategy,
    pub topology: String,
    pub nodes: Vec<Assigned>,
    pub costs: Costs,
}

/// The scores of `pu_of` (node index → PU index).
pub fn costs(w: &Weights, topo: &Topology, pu_of: &[usize]) -> Costs {
    let mut c = Costs::default();
    let mut leaving = vec![0.0; topo.len()];
    for &(i, j, comm) in &w.pairs {
        let (a, b) = (pu_of[i], pu_of[j]);
        if a != b {
            c.sum_com += comm;
            leaving[a] += comm;
            leaving[b] += comm;
        }
        c.hop_byte += comm * topo.hops(a, b) as f64;
    }
    c.max_com = leaving.iter().copied().fold(0.0, f64::max);
    c
}

/// Places `g` with `strategy` (`partition` is used by [`Strategy::Affinity`]).
pub fn place(
    g: &Graph,
    partition: &Partition,
    topo: &Topology,
    cost: &CostModel,
    strategy: Strategy,
) -> Placement {
    let w = Weights::new(g, cost);
    let (pu_of, pinned) = if topo.is_empty() {
        (vec![0; w.len()], vec![true; w.len()])
    } else {
        match strategy {
            Strategy::Affinity => {
                let m = affinity::place(&w, partition, topo);
                (m.pu_of, m.pinned)
            }
            Strategy::Treematch => (treematch::place(&w, topo), vec![true; w.len()]),
            Strategy::RoundRobin => {
                let mut order: Vec<usize> = (0..topo.len()).collect();
                order.sort_by_key(|&p| topo.pus[p].os);
                (
                    (0..w.len()).map(|k| order[k % order.len()]).collect(),
                    vec![true; w.len()],
                )
            }
        }
    };
    // a free node's domain: the PUs of its package
    let domain = |pu: usize| -> Vec<u32> {
        let Some(home) = topo.pus.get(pu).and_then(|p| p.path.first()) else {
            return Vec::new();
        };
        let mut d: Vec<u32> = topo
            .pus
            .iter()
            .filter(|p| p.path.first() == Some(home))
            .map(|p| p.os)
            .collect();
        d.sort_unstable();
        d
    };
    let costs = if topo.is_empty() {
        Costs::default()
    } else {
        costs(&w, topo, &pu_of)
    };
    Placement {
        strategy,
        topology: topo.describe(),
        nodes: g
            .nodes
            .iter()
            .zip(pu_of.iter().zip(&pinned))
            .map(|(n, (&pu, &pinned))| Assigned {
                id: n.id,
                tgid: n.tgid,
                comm: n.comm.clone(),
                pu,
                cpu: topo.pus.get(pu).map_or(0, |p| p.os),
                pinned,
                domain: if pinned { Vec::new() } else { domain(pu) },
                rank: n.rank,
            })
            .collect(),
        costs,
    }
}

/// PU indices in tree order (packages, then caches, cores, PUs), the order compact placements fill.
pub(crate) fn tree_order(topo: &Topology) -> Vec<usize> {
    let mut order: Vec<usize> = (0..topo.len()).collect();
    order.sort_by(|&a, &b| topo.pus[a].path.cmp(&topo.pus[b].path));
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_of_a_known_placement() {
        let topo = Topology::synthetic("pack:2 core:2 pu:1").expect("topology");
        let w = Weights::from_pairs(vec![1, 2, 3, 4], vec![0.0; 4], vec![(0, 1, 10.0), (2, 3, 5.0)]);
        // 0,1 on one core's neighbours (1 hop), 2,3 across packages (3 hops).
        let c = costs(&w, &topo, &[0, 1, 0, 2]);
        assert_eq!(c.sum_com, 15.0);
        assert_eq!(c.hop_byte, 10.0 * 2.0 + 5.0 * 3.0);
        assert_eq!(c.max_com, 15.0);
    }
}
