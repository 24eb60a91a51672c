//! A TreeMatch-style baseline (Jeannot and Mercier's algorithm, re-implemented here from its
//! description, greedy grouping instead of its exhaustive one): from the leaves up, the entities of
//! each level (tasks, then groups of tasks) are gathered into groups of the level's arity so that
//! communication stays inside groups; the final nesting is laid onto the PUs in tree order.

use super::tree_order;
use crate::partition::Weights;
use crate::topology::Topology;
use std::collections::BTreeMap;

/// Node index → PU index.
///
/// Sparse, and the same arithmetic as the dense first version: a sum of traffic is taken in the
/// same order with the zero terms left out (adding +0.0 changes no sum), so the groups, ties
/// included, are the same; graphs of thousands of threads no longer take O(n³) (3 000 nodes: 29 s
/// before).
pub fn place(w: &Weights, topo: &Topology) -> Vec<usize> {
    let n = w.len();
    let pus = tree_order(topo);
    let p = pus.len().max(1);
    // comm between tasks: each task's partners in index order (duplicates summed in pair order)
    let mut comm: Vec<BTreeMap<usize, f64>> = vec![BTreeMap::new(); n];
    for &(i, j, c) in &w.pairs {
        *comm[i].entry(j).or_insert(0.0) += c;
        *comm[j].entry(i).or_insert(0.0) += c;
    }
    let mut entities: Vec<Vec<usize>> = (0..n).map(|v| vec![v]).collect();
    for level in topo.levels.iter().rev() {
        let a = level.arity.max(1) as usize;
        if a == 1 || entities.len() <= 1 {
            continue;
        }
        entities = group_level(&comm, &entities, a);
    }
    let order: Vec<usize> = entities.concat();
    let mut pu_of = vec![0; n];
    for (k, &v) in order.iter().enumerate() {
        pu_of[v] = pus[k % p];
    }
    pu_of
}

/// One level: the entities gathered into groups of `a`, each seeded by the entity with the most
/// communication to the rest left, then grown by the entity that talks most with the group.
fn group_level(comm: &[BTreeMap<usize, f64>], entities: &[Vec<usize>], a: usize) -> Vec<Vec<usize>> {
    let m = entities.len();
    // Each task's entity and its place in it.
    let mut owner = vec![(0usize, 0usize); comm.len()];
    for (x, e) in entities.iter().enumerate() {
        for (k, &t) in e.iter().enumerate() {
            owner[t] = (x, k);
        }
    }
    // inner[t]: for each entity y that task t talks to, Σ over y's tasks (in order) of comm[t][·].
    let inner: Vec<Vec<(usize, f64)>> = comm
        .iter()
        .map(|partners| {
            let mut nb: Vec<(usize, usize, f64)> = partners
                .iter()
                .map(|(&j, &c)| (owner[j].0, owner[j].1, c))
                .collect();
            nb.sort_by_key(|&(y, k, _)| (y, k));
            let mut out: Vec<(usize, f64)> = Vec::new();
            for (y, _, c) in nb {
                match out.last_mut() {
                    Some((ly, s)) if *ly == y => *s += c,
                    _ => out.push((y, 0.0 + c)),
                }
            }
            out
        })
        .collect();
    // between(x, y) = Σ over x's tasks (in order) of inner[t][y], for every y x talks to.
    let ent: Vec<BTreeMap<usize, f64>> = entities
        .iter()
        .map(|tasks| {
            let mut row = BTreeMap::new();
            for &t in tasks {
                for &(y, s) in &inner[t] {
                    *row.entry(y).or_insert(0.0) += s;
                }
            }
            row
        })
        .collect();
    let mut alive = vec![true; m];
    let mut left: Vec<usize> = (0..m).collect();
    let mut acc = vec![0.0f64; m];
    let mut seen = vec![false; m];
    let mut groups: Vec<Vec<usize>> = Vec::new();
    // The last of the best (as `Iterator::max_by` picks among equals).
    let last_best = |left: &[usize], score: &dyn Fn(usize) -> f64| -> usize {
        let mut best = (0usize, f64::NEG_INFINITY);
        for (k, &e) in left.iter().enumerate() {
            let v = score(e);
            if k == 0 || v.total_cmp(&best.1).is_ge() {
                best = (k, v);
            }
        }
        best.0
    };
    while !left.is_empty() {
        // seed: the entity with the most communication to the rest
        let si = last_best(&left, &|e| {
            ent[e]
                .iter()
                .filter(|&(&o, _)| o != e && alive[o])
                .fold(0.0, |s, (_, &c)| s + c)
        });
        let seed = left.remove(si);
        alive[seed] = false;
        let mut group = vec![seed];
        let mut members: Vec<usize> = entities[seed].clone();
        // acc[y]: Σ over the group's tasks (in order) of inner[t][y]; `touched` lists the y set.
        let mut touched: Vec<usize> = Vec::new();
        let add = |tasks: &[usize], acc: &mut Vec<f64>, touched: &mut Vec<usize>, seen: &mut Vec<bool>| {
            for &t in tasks {
                for &(y, s) in &inner[t] {
                    if !seen[y] {
                        seen[y] = true;
                        touched.push(y);
                    }
                    acc[y] += s;
                }
            }
        };
        add(&entities[seed], &mut acc, &mut touched, &mut seen);
        while group.len() < a && !left.is_empty() {
            let bi = last_best(&left, &|e| acc[e]);
            let e = left.remove(bi);
            alive[e] = false;
            add(&entities[e], &mut acc, &mut touched, &mut seen);
            members.extend(&entities[e]);
            group.push(e);
        }
        for y in touched {
            acc[y] = 0.0;
            seen[y] = false;
        }
        groups.push(members);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The first, dense version (O(n³)), kept as the reference the sparse one must equal.
    fn dense_reference(w: &Weights, topo: &Topology) -> Vec<usize> {
        let n = w.len();
        let pus = tree_order(topo);
        let p = pus.len().max(1);
        // comm between tasks (dense; graphs are small)
        let mut comm = vec![vec![0.0; n]; n];
        for &(i, j, c) in &w.pairs {
            comm[i][j] += c;
            comm[j][i] += c;
        }
        let mut entities: Vec<Vec<usize>> = (0..n).map(|v| vec![v]).collect();
        for level in topo.levels.iter().rev() {
            let a = level.arity.max(1) as usize;
            if a == 1 || entities.len() <= 1 {
                continue;
            }
            let between = |x: &[usize], y: &[usize]| -> f64 {
                x.iter()
                    .map(|&i| y.iter().map(|&j| comm[i][j]).sum::<f64>())
                    .sum()
            };
            let mut left: Vec<usize> = (0..entities.len()).collect();
            let mut groups: Vec<Vec<usize>> = Vec::new();
            while !left.is_empty() {
                // seed: the entity with the most communication to the rest
                let (si, _) = left
                    .iter()
                    .enumerate()
                    .map(|(k, &e)| {
                        (
                            k,
                            left.iter()
                                .map(|&o| {
                                    if o == e {
                                        0.0
                                    } else {
                                        between(&entities[e], &entities[o])
                                    }
                                })
                                .sum::<f64>(),
                        )
                    })
                    .max_by(|a, b| a.1.total_cmp(&b.1))
                    .unwrap_or((0, 0.0));
                let seed = left.remove(si);
                let mut group = vec![seed];
                let mut members: Vec<usize> = entities[seed].clone();
                while group.len() < a && !left.is_empty() {
                    let (bi, _) = left
                        .iter()
                        .enumerate()
                        .map(|(k, &e)| (k, between(&members, &entities[e])))
                        .max_by(|x, y| x.1.total_cmp(&y.1))
                        .unwrap_or((0, 0.0));
                    let e = left.remove(bi);
                    members.extend(&entities[e]);
                    group.push(e);
                }
                groups.push(members);
            }
            entities = groups;
        }
        let order: Vec<usize> = entities.concat();
        let mut pu_of = vec![0; n];
        for (k, &v) in order.iter().enumerate() {
            pu_of[v] = pus[k % p];
        }
        pu_of
    }

    #[test]
    fn issue_12_the_sparse_treematch_groups_as_the_dense_one_did() {
        use rand::{Rng, SeedableRng};
        for seed in 0..40u64 {
            let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let n = r.gen_range(2..60usize);
            let mut pairs = Vec::new();
            for i in 0..n {
                for _ in 0..r.gen_range(0..4usize) {
                    let j = r.gen_range(0..n);
                    // integral costs (exact ties) and fractional ones (rounding)
                    let c = if r.gen_bool(0.5) {
                        r.gen_range(1..4u32) as f64
                    } else {
                        r.gen::<f64>() * 1e6
                    };
                    if i != j {
                        pairs.push((i, j, c));
                    }
                }
            }
            let w = Weights::from_pairs((1..=n as u32).collect(), vec![0.0; n], pairs);
            for t in ["pack:2 core:2 pu:1", "pack:2 core:4 pu:2", "pack:4 core:3 pu:1"] {
                let topo = Topology::synthetic(t).expect("topology");
                assert_eq!(place(&w, &topo), dense_reference(&w, &topo), "seed {seed}, {t}");
            }
        }
    }

    #[test]
    fn talkers_share_a_package() {
        let topo = Topology::synthetic("pack:2 core:2 pu:1").expect("topology");
        // 0-2 and 1-3 talk; round-robin would split both pairs across packages.
        let w = Weights::from_pairs(vec![1, 2, 3, 4], vec![0.0; 4], vec![(0, 2, 10.0), (1, 3, 10.0)]);
        let pu = place(&w, &topo);
        assert_eq!(topo.hops(pu[0], pu[2]), 2);
        assert_eq!(topo.hops(pu[1], pu[3]), 2);
    }
}
