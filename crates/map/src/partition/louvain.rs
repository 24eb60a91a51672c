//! The non-overlapping baseline: Louvain modularity maximization (Blondel et al. 2008) on the
//! undirected pair costs, written here (local moves by ΔQ, then aggregation, until nothing moves).
//! Node work is ignored, as a plain graph partitioner would.

use super::{Partition, Weights};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::BTreeMap;

/// Communities of `w` as a flat partition (depth 0).
pub fn partition(w: &Weights, seed: u64) -> Partition {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let n = w.len();
    // community of each original node
    let mut membership: Vec<usize> = (0..n).collect();
    // the current (aggregated) graph: adjacency with self-loops
    let mut adj: Vec<BTreeMap<usize, f64>> = vec![BTreeMap::new(); n];
    for &(i, j, c) in &w.pairs {
        *adj[i].entry(j).or_default() += c;
        *adj[j].entry(i).or_default() += c;
    }
    loop {
        let m = adj.len();
        let degree: Vec<f64> = adj.iter().map(|a| a.values().sum()).collect();
        let two_m: f64 = degree.iter().sum();
        if two_m <= 0.0 {
            break;
        }
        let mut comm: Vec<usize> = (0..m).collect();
        let mut tot: Vec<f64> = degree.clone();
        let mut improved = false;
        for _pass in 0..64 {
            let mut moved = false;
            let mut order: Vec<usize> = (0..m).collect();
            order.shuffle(&mut rng);
            for v in order {
                let cv = comm[v];
                let mut links: BTreeMap<usize, f64> = BTreeMap::new();
                for (&u, &c) in &adj[v] {
                    if u != v {
                        *links.entry(comm[u]).or_default() += c;
                    }
                }
                tot[cv] -= degree[v];
                let gain = |c: usize, k_in: f64| k_in - tot[c] * degree[v] / two_m;
                let mut best = (cv, gain(cv, links.get(&cv).copied().unwrap_or(0.0)));
                for (&c, &k_in) in &links {
                    let g = gain(c, k_in);
                    if g > best.1 + 1e-12 {
                        best = (c, g);
                    }
                }
                tot[best.0] += degree[v];
                if best.0 != cv {
                    comm[v] = best.0;
                    moved = true;
                    improved = true;
                }
            }
            if !moved {
                break;
            }
        }
        if !improved {
            break;
        }
        // renumber and aggregate
        let mut renum: BTreeMap<usize, usize> = BTreeMap::new();
        for &c in &comm {
            let next = renum.len();
            renum.entry(c).or_insert(next);
        }
        for mbr in membership.iter_mut() {
            *mbr = renum[&comm[*mbr]];
        }
        let mut next: Vec<BTreeMap<usize, f64>> = vec![BTreeMap::new(); renum.len()];
        for (v, a) in adj.iter().enumerate() {
            for (&u, &c) in a {
                *next[renum[&comm[v]]].entry(renum[&comm[u]]).or_default() += c;
            }
        }
        adj = next;
    }
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (v, &c) in membership.iter().enumerate() {
        groups.entry(c).or_default().push(v);
    }
    Partition::flat(groups.into_values().collect(), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_cliques() {
        let mut pairs = Vec::new();
        for (a, b) in [(0, 1), (0, 2), (1, 2), (3, 4), (3, 5), (4, 5)] {
            pairs.push((a, b, 10.0));
        }
        pairs.push((2, 3, 1.0));
        let w = Weights::from_pairs((0..6).collect(), vec![0.0; 6], pairs);
        let p = partition(&w, 7);
        let mut groups: Vec<Vec<usize>> = p.clusters.iter().map(|c| c.members.clone()).collect();
        groups.sort();
        assert_eq!(groups, vec![vec![0, 1, 2], vec![3, 4, 5]]);
    }
}
