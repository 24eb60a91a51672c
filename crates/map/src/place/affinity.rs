//! The paper's run-time mapping (§II-C) with its three observations:
//! 1. processes that share data go to one core, when eq. 1 says the pair runs faster there than on
//!    two cores (work_a + work_b + λ·c < max(work_a, work_b) + c, λ the local factor, c the pair cost);
//! 2. communicating processes go to adjacent cores: a cluster gets a contiguous block of PUs in tree
//!    order, right after the block of the cluster it is most linked to, and its members fill it in
//!    the order of a walk along their heaviest links;
//! 3. independent processes go far apart: a cluster with no link to those placed before it starts in
//!    the least loaded top-level domain (the first level with more than one object: packages, NUMA
//!    nodes, caches or cores).
//!
//! Each node is handled once, with its already-placed neighbours: O(P + E) for P nodes (plus one
//! scan of the PUs per independent cluster).

use super::tree_order;
use crate::partition::{CostModel, Partition, Weights};
use crate::topology::Topology;
use std::collections::BTreeSet;

/// Node index → PU index.
pub fn place(w: &Weights, partition: &Partition, topo: &Topology, cost: &CostModel) -> Vec<usize> {
    let n = w.len();
    let pus = tree_order(topo);
    // Home cluster: the first holding the node; nodes nobody holds get their own cluster.
    let mut clusters: Vec<Vec<usize>> = Vec::new();
    let mut seen = vec![false; n];
    for c in &partition.clusters {
        let own: Vec<usize> = c.members.iter().copied().filter(|&m| m < n && !seen[m]).collect();
        for &m in &own {
            seen[m] = true;
        }
        if !own.is_empty() {
            clusters.push(own);
        }
    }
    for (v, s) in seen.iter().enumerate() {
        if !s {
            clusters.push(vec![v]);
        }
    }
    let mut cluster_of = vec![0; n];
    for (c, members) in clusters.iter().enumerate() {
        for &m in members {
            cluster_of[m] = c;
        }
    }
    // Chain the clusters: heaviest first, then the one most connected to the last placed.
    let weight = |c: usize| -> f64 {
        clusters[c]
            .iter()
            .map(|&m| w.work[m] + w.adj[m].iter().map(|x| x.1).sum::<f64>())
            .sum()
    };
    let mut left: BTreeSet<usize> = (0..clusters.len()).collect();
    let mut chain: Vec<(usize, bool)> = Vec::new(); // (cluster, linked to the previous one)
    while let Some(&first) = left.iter().max_by(|&&a, &&b| weight(a).total_cmp(&weight(b))) {
        let mut cur = first;
        let mut linked = false;
        loop {
            left.remove(&cur);
            chain.push((cur, linked));
            linked = true;
            let mut link = vec![0.0; clusters.len()];
            for &m in &clusters[cur] {
                for &(u, c) in &w.adj[m] {
                    link[cluster_of[u]] += c;
                }
            }
            match left
                .iter()
                .copied()
                .filter(|&o| link[o] > 0.0)
                .max_by(|&a, &b| link[a].total_cmp(&link[b]))
            {
                Some(next) => cur = next,
                None => break,
            }
        }
    }
    // Blocks of PUs in chain order: a cluster linked to the previous one starts right after it
    // (observation 2); an independent one starts in the least loaded top-level domain (observation 3).
    let p = pus.len().max(1);
    let level = topo.top_domains();
    let mut load = vec![0usize; topo.len().max(1)]; // members per PU index
    let mut pu_of = vec![0; n];
    let mut cursor = 0usize;
    for &(c, linked) in &chain {
        let members = walk(w, &clusters[c]);
        let size = members.len().clamp(1, p);
        let start = if linked {
            cursor
        } else {
            let mut best: Option<(usize, u32, usize)> = None; // (load, region, first position)
            let mut k = 0;
            while k < p {
                let region = topo.pus[pus[k]].path[level];
                let first = k;
                let mut l = 0;
                while k < p && topo.pus[pus[k]].path[level] == region {
                    l += load[pus[k]];
                    k += 1;
                }
                if best.is_none_or(|(bl, _, _)| l < bl) {
                    best = Some((l, region, first));
                }
            }
            best.map_or(0, |b| b.2)
        };
        let block: Vec<usize> = (0..size).map(|k| (start + k) % p).collect();
        let block_pus: Vec<usize> = block.iter().map(|&k| pus[k]).collect();
        fill(w, cost, &members, &block_pus, &mut pu_of, &mut load);
        cursor = (start + size) % p;
    }
    pu_of
}

/// The members in the order of a walk that always takes the heaviest link out of the visited set.
fn walk(w: &Weights, members: &[usize]) -> Vec<usize> {
    let set: BTreeSet<usize> = members.iter().copied().collect();
    let mut out = Vec::with_capacity(members.len());
    let mut visited = BTreeSet::new();
    while out.len() < members.len() {
        let start = members
            .iter()
            .copied()
            .filter(|m| !visited.contains(m))
            .max_by(|&a, &b| degree(w, a, &set).total_cmp(&degree(w, b, &set)));
        let Some(mut cur) = start else { break };
        loop {
            visited.insert(cur);
            out.push(cur);
            let next = w.adj[cur]
                .iter()
                .filter(|(u, _)| set.contains(u) && !visited.contains(u))
                .max_by(|a, b| a.1.total_cmp(&b.1));
            match next {
                Some(&(u, _)) => cur = u,
                None => break,
            }
        }
    }
    out
}

fn degree(w: &Weights, v: usize, within: &BTreeSet<usize>) -> f64 {
    w.adj[v]
        .iter()
        .filter(|(u, _)| within.contains(u))
        .map(|x| x.1)
        .sum()
}

/// Members onto the block: each goes to the PU of its heaviest placed neighbour when sharing it is
/// faster by eq. 1 (observation 1), otherwise to the least loaded PU of the block (counting what
/// earlier clusters put there; the first such PU, so neighbours in the walk sit on adjacent PUs).
fn fill(
    w: &Weights,
    cost: &CostModel,
    members: &[usize],
    block: &[usize],
    pu_of: &mut [usize],
    load: &mut [usize],
) {
    let mut used: Vec<usize> = block.iter().map(|&p| load[p]).collect();
    let mut slot_of: Vec<Option<usize>> = vec![None; pu_of.len()];
    for &m in members {
        let heaviest = w.adj[m]
            .iter()
            .filter_map(|&(u, c)| slot_of[u].map(|s| (u, s, c)))
            .max_by(|a, b| a.2.total_cmp(&b.2));
        let least = (0..used.len()).min_by_key(|&s| used[s]).unwrap_or(0);
        let slot = match heaviest {
            Some((u, s, c)) => {
                let together = w.work[m] + w.work[u] + cost.local_factor * c;
                let apart = w.work[m].max(w.work[u]) + c;
                if together < apart {
                    s
                } else {
                    least
                }
            }
            None => least,
        };
        used[slot] += 1;
        load[block[slot]] += 1;
        slot_of[m] = Some(slot);
        pu_of[m] = block[slot];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs_share_a_core_or_sit_adjacent() {
        let topo = Topology::synthetic("pack:2 core:4 pu:1").expect("topology");
        let w = Weights::from_pairs(vec![1, 2, 3, 4], vec![1e9; 4], vec![(0, 1, 1e6), (2, 3, 1e6)]);
        let part = Partition::flat(vec![vec![0, 1], vec![2, 3]], 0);
        let pu = place(&w, &part, &topo, &CostModel::default());
        // heavy work: apart is faster, so each pair takes two adjacent PUs
        assert_eq!(topo.hops(pu[0], pu[1]), 2);
        assert_eq!(topo.hops(pu[2], pu[3]), 2);
        // light work, heavy communication: each pair shares one PU
        let w = Weights::from_pairs(vec![1, 2, 3, 4], vec![1.0; 4], vec![(0, 1, 1e6), (2, 3, 1e6)]);
        let pu = place(&w, &part, &topo, &CostModel::default());
        assert_eq!(pu[0], pu[1]);
        assert_eq!(pu[2], pu[3]);
        assert_ne!(pu[0], pu[2]);
    }

    #[test]
    fn independent_pipelines_go_to_different_packages() {
        let topo = Topology::synthetic("pack:2 core:8 pu:1").expect("topology");
        let w = Weights::from_pairs(
            (0..6).collect(),
            vec![1e9; 6],
            vec![(0, 1, 1e6), (1, 2, 1e6), (3, 4, 1e6), (4, 5, 1e6)],
        );
        let part = Partition::flat(vec![vec![0, 1, 2], vec![3, 4, 5]], 0);
        let pu = place(&w, &part, &topo, &CostModel::default());
        let pkg = |v: usize| topo.pus[pu[v]].path[0];
        assert_eq!(pkg(0), pkg(1));
        assert_eq!(pkg(1), pkg(2));
        assert_eq!(pkg(3), pkg(5));
        assert_ne!(pkg(0), pkg(3));
        assert!(topo.hops(pu[0], pu[1]) <= 2 && topo.hops(pu[1], pu[2]) <= 2);
    }
}
