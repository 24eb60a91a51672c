//! Partitioning the interaction layer into clusters (the paper's §II-B): the quality function T of
//! eq. 1–4, the overlapping greedy hierarchical partitioner that minimizes it ([`greedy`]) and a
//! non-overlapping Louvain baseline ([`louvain`]); [`flat`] keeps T up to date for the greedy
//! partitioner's candidates.
//!
//! T(s) = W_seq + W_par/N + W_c/N, with (eq. 2–4), for clusters u of the state s:
//! - W_u = Σ work of u's members + Σ cost *together* of the pairs with both ends in u (what their
//!   interactions cost on one CPU; a cut pair costs its cost *apart*, see [`CostModel`]);
//! - W_seq = Σ W_u over the clusters alone at their depth d_u; W_par = Σ W_u over the others;
//! - S_u = Σ cost of the cut pairs with an end in u (a pair is cut when no cluster holds both ends,
//!   so a node replicated into a second cluster makes its pairs there local); W_c = Σ_u S_u;
//! - N = the number of clusters, capped at the number of PUs when a topology is given (N clusters
//!   cannot run in parallel on fewer cores).

pub mod flat;
pub mod greedy;
pub mod louvain;
mod weights;

pub use weights::{traffic, CostModel, Pair, Traffic, Weights};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One cluster: members as indices into [`Weights::ids`], and its depth in the hierarchy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cluster {
    pub members: Vec<usize>,
    pub depth: u32,
}

/// A partition state s: possibly overlapping clusters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Partition {
    pub clusters: Vec<Cluster>,
}

/// T and its terms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Quality {
    pub t: f64,
    pub w_seq: f64,
    pub w_par: f64,
    pub w_c: f64,
    /// Number of clusters.
    pub n: usize,
    /// The divisor used: N, or min(N, PUs).
    pub n_eff: usize,
    /// Nodes held by more than one cluster.
    pub replicated: usize,
}

impl Partition {
    /// Clusters of `members` lists, all at `depth`.
    pub fn flat(groups: Vec<Vec<usize>>, depth: u32) -> Partition {
        Partition {
            clusters: groups
                .into_iter()
                .filter(|g| !g.is_empty())
                .map(|mut members| {
                    members.sort_unstable();
                    members.dedup();
                    Cluster { members, depth }
                })
                .collect(),
        }
    }

    /// Which clusters hold each node (0..n).
    pub fn holders(&self, n: usize) -> Vec<Vec<usize>> {
        let mut h = vec![Vec::new(); n];
        for (c, cl) in self.clusters.iter().enumerate() {
            for &m in &cl.members {
                if m < n {
                    h[m].push(c);
                }
            }
        }
        h
    }

    /// Every node's first cluster (its home), or None for a node no cluster holds.
    pub fn home(&self, n: usize) -> Vec<Option<usize>> {
        self.holders(n).into_iter().map(|h| h.first().copied()).collect()
    }

    /// T of this state (eq. 1–4) on `w`; `cores` caps N.
    pub fn quality(&self, w: &Weights, cores: Option<usize>) -> Quality {
        let n_nodes = w.len();
        let holders = self.holders(n_nodes);
        let k = self.clusters.len();
        let mut wu = vec![0.0; k];
        let mut su = vec![0.0; k];
        for (c, cl) in self.clusters.iter().enumerate() {
            wu[c] = cl
                .members
                .iter()
                .filter(|&&m| m < n_nodes)
                .map(|&m| w.work[m])
                .sum();
        }
        for p in &w.detail {
            let (i, j, cost_ij) = (p.i, p.j, p.apart);
            let common: Vec<usize> = holders[i]
                .iter()
                .filter(|c| holders[j].contains(c))
                .copied()
                .collect();
            if common.is_empty() {
                for &c in holders[i].iter().chain(&holders[j]) {
                    su[c] += cost_ij;
                }
            } else {
                for c in common {
                    wu[c] += p.together;
                }
            }
        }
        let (mut w_seq, mut w_par) = (0.0, 0.0);
        // clusters per depth counted once (counting them per cluster was O(k²))
        let mut at_depth: BTreeMap<u32, usize> = BTreeMap::new();
        for cl in &self.clusters {
            *at_depth.entry(cl.depth).or_default() += 1;
        }
        for (c, cl) in self.clusters.iter().enumerate() {
            let peers = at_depth.get(&cl.depth).copied().unwrap_or(0);
            if peers > 1 {
                w_par += wu[c];
            } else {
                w_seq += wu[c];
            }
        }
        // from +0.0: f64's `sum` of nothing is −0.0, which printed as "-0.000" for an empty graph
        let w_c: f64 = su.iter().fold(0.0, |a, b| a + b);
        let n_eff = cores.map_or(k, |p| k.min(p.max(1))).max(1);
        Quality {
            t: w_seq + w_par / n_eff as f64 + w_c / n_eff as f64,
            w_seq,
            w_par,
            w_c,
            n: k,
            n_eff,
            replicated: holders.iter().filter(|h| h.len() > 1).count(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_16_an_empty_graph_costs_zero_not_negative_zero() {
        // `map partition` printed "W_c -0.000" for a graph with no nodes
        let w = Weights::from_pairs(Vec::new(), Vec::new(), Vec::new());
        for p in [Partition::default(), Partition::flat(vec![vec![0]], 0)] {
            let q = p.quality(&w, Some(2));
            for v in [q.t, q.w_seq, q.w_par, q.w_c] {
                assert!(v == 0.0 && v.is_sign_positive(), "{q:?}");
            }
        }
    }

    #[test]
    fn two_pairs_on_two_cores() {
        // 0-1 and 2-3 talk a lot; 1-2 a little.
        let w = Weights::from_pairs(
            vec![10, 11, 12, 13],
            vec![100.0; 4],
            vec![(0, 1, 1000.0), (2, 3, 1000.0), (1, 2, 10.0)],
        );
        let good = Partition::flat(vec![vec![0, 1], vec![2, 3]], 0).quality(&w, Some(2));
        assert_eq!(good.w_seq, 0.0);
        assert_eq!(good.w_par, 400.0 + 0.5 * 2000.0); // together: half the cost apart
        assert_eq!(good.w_c, 20.0);
        assert_eq!(good.t, (good.w_par + good.w_c) / 2.0);
        let one = Partition::flat(vec![vec![0, 1, 2, 3]], 0).quality(&w, Some(2));
        assert_eq!(one.w_seq, 400.0 + 0.5 * 2010.0);
        assert_eq!(one.t, one.w_seq);
        assert!(good.t < one.t);
        // Replicating 1 into {2,3} makes 1-2 local there.
        let rep = Partition::flat(vec![vec![0, 1], vec![1, 2, 3]], 0).quality(&w, Some(2));
        assert_eq!(rep.w_c, 0.0);
        assert_eq!(rep.replicated, 1);
    }
}
