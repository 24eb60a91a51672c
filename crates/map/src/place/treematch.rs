//! A TreeMatch-style baseline (Jeannot and Mercier's algorithm, re-implemented here from its
//! description, greedy grouping instead of its exhaustive one): from the leaves up, the entities of
//! each level (tasks, then groups of tasks) are gathered into groups of the level's arity so that
//! communication stays inside groups; the final nesting is laid onto the PUs in tree order.

use super::tree_order;
use crate::partition::Weights;
use crate::topology::Topology;

/// Node index → PU index.
pub fn place(w: &Weights, topo: &Topology) -> Vec<usize> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
