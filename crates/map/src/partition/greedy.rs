//! The paper's greedy hierarchical, overlapping partitioning (§II-B). Level 0 starts from singletons;
//! nodes, taken in a random order, move to the neighbouring cluster that lowers T most (ΔT < 0),
//! until no move helps; then a node may be replicated into a neighbouring cluster when that lowers T
//! (the overlap). At each following level the clusters are merged as super-nodes the same way; when
//! no merge lowers T, the two most strongly connected clusters are merged anyway, so the hierarchy
//! goes on to a single cluster. Every level's state is kept; the answer is the one with the lowest
//! T, and N (its number of clusters) is an output. Each ΔT is a full evaluation of T (O(E + n)),
//! which is fine for the hundreds of threads of a program.

use super::{Partition, Quality, Weights};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// One level of the hierarchy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Level {
    pub level: u32,
    pub quality: Quality,
}

/// The chosen state, its T, and T at every level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub partition: Partition,
    pub quality: Quality,
    pub levels: Vec<Level>,
}

type State = Vec<BTreeSet<usize>>;

fn to_partition(s: &State, depth: u32) -> Partition {
    Partition::flat(s.iter().map(|c| c.iter().copied().collect()).collect(), depth)
}

struct Eval<'a> {
    w: &'a Weights,
    cores: Option<usize>,
}

impl Eval<'_> {
    fn t(&self, s: &State) -> f64 {
        to_partition(s, 0).quality(self.w, self.cores).t
    }
}

/// Runs the partitioner; `seed` fixes the random node order.
pub fn partition(w: &Weights, cores: Option<usize>, seed: u64) -> Outcome {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let ev = Eval { w, cores };
    let n = w.len();
    let mut state: State = (0..n).map(|i| BTreeSet::from([i])).collect();
    let mut levels: Vec<(State, Quality)> = Vec::new();
    let keep = |s: &State, levels: &mut Vec<(State, Quality)>| {
        let q = to_partition(s, 0).quality(w, cores);
        levels.push((s.clone(), q));
    };
    keep(&state, &mut levels);
    if n == 0 {
        return finish(levels);
    }
    move_nodes(&ev, &mut state, &mut rng);
    replicate(&ev, &mut state);
    keep(&state, &mut levels);
    while state.len() > 1 {
        if !merge_clusters(&ev, &mut state, &mut rng) {
            force_merge(w, &mut state);
        }
        keep(&state, &mut levels);
    }
    finish(levels)
}

fn finish(levels: Vec<(State, Quality)>) -> Outcome {
    let best = levels
        .iter()
        .enumerate()
        .min_by(|a, b| a.1 .1.t.total_cmp(&b.1 .1.t))
        .map(|(i, _)| i)
        .unwrap_or(0);
    let chosen = levels.get(best).map(|(s, q)| (to_partition(s, best as u32), *q));
    let (partition, quality) = chosen.unwrap_or_else(|| {
        let empty = Partition::default();
        let q = empty.quality(&Weights::from_pairs(Vec::new(), Vec::new(), Vec::new()), None);
        (empty, q)
    });
    Outcome {
        partition,
        quality,
        levels: levels
            .iter()
            .enumerate()
            .map(|(i, (_, q))| Level {
                level: i as u32,
                quality: *q,
            })
            .collect(),
    }
}

/// Level 0: single nodes move to the neighbouring cluster with the best ΔT < 0.
fn move_nodes(ev: &Eval, state: &mut State, rng: &mut rand_chacha::ChaCha8Rng) {
    let n = ev.w.len();
    for _pass in 0..32 {
        let mut moved = false;
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(rng);
        for v in order {
            let Some(from) = state.iter().position(|c| c.contains(&v)) else {
                continue;
            };
            let current = ev.t(state);
            let targets: BTreeSet<usize> = ev.w.adj[v]
                .iter()
                .filter_map(|&(u, _)| state.iter().position(|c| c.contains(&u)))
                .filter(|&c| c != from)
                .collect();
            let mut best: Option<(f64, State)> = None;
            for to in targets {
                let mut cand = state.clone();
                cand[from].remove(&v);
                cand[to].insert(v);
                cand.retain(|c| !c.is_empty());
                let t = ev.t(&cand);
                if t < current - 1e-9 && best.as_ref().is_none_or(|(bt, _)| t < *bt) {
                    best = Some((t, cand));
                }
            }
            if let Some((_, s)) = best {
                *state = s;
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
}

/// The overlap: a node joins a neighbouring cluster as a replica when that lowers T.
fn replicate(ev: &Eval, state: &mut State) {
    for v in 0..ev.w.len() {
        let neighbours: BTreeSet<usize> = ev.w.adj[v]
            .iter()
            .flat_map(|&(u, _)| {
                state
                    .iter()
                    .enumerate()
                    .filter(move |(_, c)| c.contains(&u))
                    .map(|(i, _)| i)
            })
            .collect();
        for c in neighbours {
            if state[c].contains(&v) {
                continue;
            }
            let current = ev.t(state);
            let mut cand = state.clone();
            cand[c].insert(v);
            if ev.t(&cand) < current - 1e-9 {
                *state = cand;
            }
        }
    }
}

fn connected(w: &Weights, a: &BTreeSet<usize>, b: &BTreeSet<usize>) -> f64 {
    w.pairs
        .iter()
        .filter(|(i, j, _)| (a.contains(i) && b.contains(j)) || (a.contains(j) && b.contains(i)))
        .map(|p| p.2)
        .sum()
}

/// A higher level: clusters merge with the neighbour that lowers T most; true if any merged.
fn merge_clusters(ev: &Eval, state: &mut State, rng: &mut rand_chacha::ChaCha8Rng) -> bool {
    let mut any = false;
    loop {
        let current = ev.t(state);
        let mut order: Vec<usize> = (0..state.len()).collect();
        order.shuffle(rng);
        let mut best: Option<(f64, State)> = None;
        for a in order {
            for b in 0..state.len() {
                if a == b || connected(ev.w, &state[a], &state[b]) <= 0.0 {
                    continue;
                }
                let mut cand = state.clone();
                let moved = std::mem::take(&mut cand[a]);
                cand[b].extend(moved);
                cand.retain(|c| !c.is_empty());
                let t = ev.t(&cand);
                if t < current - 1e-9 && best.as_ref().is_none_or(|(bt, _)| t < *bt) {
                    best = Some((t, cand));
                }
            }
            if best.is_some() {
                break;
            }
        }
        match best {
            Some((_, s)) => {
                *state = s;
                any = true;
            }
            None => return any,
        }
    }
}

/// Merges the two most strongly connected clusters (or the two lightest when none are connected).
fn force_merge(w: &Weights, state: &mut State) {
    let mut best: Option<(f64, usize, usize)> = None;
    for a in 0..state.len() {
        for b in a + 1..state.len() {
            let c = connected(w, &state[a], &state[b]);
            if best.is_none_or(|(bc, _, _)| c > bc) {
                best = Some((c, a, b));
            }
        }
    }
    if let Some((_, a, b)) = best {
        let moved = std::mem::take(&mut state[b]);
        state[a].extend(moved);
        state.retain(|c| !c.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_two_pairs() {
        let w = Weights::from_pairs(
            vec![1, 2, 3, 4],
            vec![1e6; 4],
            vec![(0, 1, 1e6), (2, 3, 1e6), (1, 2, 10.0)],
        );
        let out = partition(&w, Some(2), 1);
        let mut groups: Vec<Vec<usize>> = out.partition.clusters.iter().map(|c| c.members.clone()).collect();
        groups.sort();
        assert_eq!(groups, vec![vec![0, 1], vec![2, 3]]);
        assert_eq!(out.quality.n, 2);
    }
}
