//! The paper's greedy hierarchical, overlapping partitioning (§II-B). Level 0 starts from singletons;
//! nodes, taken in a random order, move to the neighbouring cluster that lowers T most (ΔT < 0),
//! until no move helps; then a node may be replicated into a neighbouring cluster when that lowers T
//! (the overlap). At each following level the clusters are merged as super-nodes the same way; when
//! no merge lowers T, the two most strongly connected clusters are merged anyway, so the hierarchy
//! goes on to a single cluster. Every level's state is kept; the answer is the one with the lowest
//! T, and N (its number of clusters) is an output.
//!
//! Each ΔT comes from the incremental evaluator of [`super::flat`]: a move or a replica costs
//! O(degree), a merge O(Σ degree of the merged cluster's members), with the cluster-to-cluster
//! connection summed from the adjacency, so a 3000-node graph takes a fraction of a second (it was a
//! full evaluation of T on a cloned state per candidate, O(E + n + k²), roughly cubic overall:
//! 15 min; issue #12). Candidates are taken in the same order and from the same random sequence as
//! before; when two values of T are within rounding of each other (1e-9 relative) the comparison
//! falls back to evaluating both states in full, as every comparison did before, so near-ties
//! resolve as they did and the results are the same bit for bit (docs/BENCHMARKS.md).

use super::flat::{Change, Flat};
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

/// T at every level so far, and the first level with the lowest T.
#[derive(Default)]
struct Levels {
    qualities: Vec<Quality>,
    best: Option<(usize, Partition, Quality)>,
}

impl Levels {
    /// Records the state as the next level (its T evaluated in full, which also drops the
    /// rounding the incremental updates accumulated).
    fn keep(&mut self, s: &mut Flat) {
        let part = s.partition(0);
        let q = part.quality(s.weights(), s.cores());
        s.resync();
        let level = self.qualities.len();
        self.qualities.push(q);
        if self
            .best
            .as_ref()
            .is_none_or(|(_, _, b)| q.t.total_cmp(&b.t).is_lt())
        {
            self.best = Some((level, part, q));
        }
    }

    fn finish(self) -> Outcome {
        let (level, mut partition, quality) = self.best.unwrap_or_else(|| {
            let empty = Partition::default();
            let q = empty.quality(&Weights::from_pairs(Vec::new(), Vec::new(), Vec::new()), None);
            (0, empty, q)
        });
        for c in &mut partition.clusters {
            c.depth = level as u32;
        }
        Outcome {
            partition,
            quality,
            levels: self
                .qualities
                .iter()
                .enumerate()
                .map(|(i, q)| Level {
                    level: i as u32,
                    quality: *q,
                })
                .collect(),
        }
    }
}

/// A candidate: its change, ΔT from the incremental evaluator and, once needed, its T in full.
struct Candidate {
    change: Change,
    dt: f64,
    full: Option<f64>,
}

impl Candidate {
    fn new(change: Change, dt: f64) -> Candidate {
        Candidate {
            change,
            dt,
            full: None,
        }
    }
}

/// Compares candidates as the partitioner did when it evaluated each in full: by ΔT when the two
/// values are further apart than rounding could move them, else (a near-tie, which rounding
/// decided) by the full evaluations, so a near-tie resolves as it always did.
struct Judge<'s, 'w> {
    state: &'s Flat<'w>,
    current: Option<f64>,
    tol: f64,
}

impl<'s, 'w> Judge<'s, 'w> {
    fn new(state: &'s Flat<'w>) -> Judge<'s, 'w> {
        Judge {
            state,
            current: None,
            tol: 1e-9 * state.t().abs().max(1.0),
        }
    }

    fn full(&self, c: &mut Candidate) -> f64 {
        *c.full.get_or_insert_with(|| self.state.t_full_after(c.change))
    }

    /// T after `c` < T now − 1e-9.
    fn improves(&mut self, c: &mut Candidate) -> bool {
        let x = c.dt + 1e-9;
        if x.abs() > self.tol {
            return x < 0.0;
        }
        let now = *self.current.get_or_insert_with(|| self.state.t_full());
        self.full(c) < now - 1e-9
    }

    /// T after `c` < T after `b`.
    fn beats(&self, c: &mut Candidate, b: &mut Candidate) -> bool {
        let x = c.dt - b.dt;
        if x.abs() > self.tol {
            return x < 0.0;
        }
        self.full(c) < self.full(b)
    }

    /// Whether `c` improves T and beats the best so far; if so it becomes the best.
    fn consider(&mut self, mut c: Candidate, best: &mut Option<Candidate>) {
        if !self.improves(&mut c) {
            return;
        }
        let better = match best.as_mut() {
            None => true,
            Some(b) => self.beats(&mut c, b),
        };
        if better {
            *best = Some(c);
        }
    }
}

/// Runs the partitioner; `seed` fixes the random node order.
pub fn partition(w: &Weights, cores: Option<usize>, seed: u64) -> Outcome {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let n = w.len();
    let mut state = Flat::singletons(w, cores);
    let mut levels = Levels::default();
    levels.keep(&mut state);
    if n == 0 {
        return levels.finish();
    }
    move_nodes(&mut state, &mut rng);
    replicate(&mut state);
    levels.keep(&mut state);
    while state.k() > 1 {
        if !merge_clusters(&mut state, &mut rng) {
            force_merge(&mut state);
        }
        levels.keep(&mut state);
    }
    levels.finish()
}

/// Level 0: single nodes move to the neighbouring cluster with the best ΔT < 0.
fn move_nodes(state: &mut Flat, rng: &mut rand_chacha::ChaCha8Rng) {
    let n = state.weights().len();
    for _pass in 0..32 {
        let mut moved = false;
        let mut order: Vec<usize> = (0..n).collect();
        order.shuffle(rng);
        for v in order {
            let Some(&from) = state.holders(v).first() else {
                continue;
            };
            let mut best = None;
            let mut judge = Judge::new(state);
            for (to, dt) in state.move_deltas(v, from) {
                judge.consider(Candidate::new(Change::Move { v, from, to }, dt), &mut best);
            }
            if let Some(b) = best {
                state.apply(b.change);
                moved = true;
            }
        }
        if !moved {
            break;
        }
    }
}

/// The overlap: a node joins a neighbouring cluster as a replica when that lowers T.
fn replicate(state: &mut Flat) {
    for v in 0..state.weights().len() {
        let neighbours: BTreeSet<usize> = state
            .neighbours(v)
            .flat_map(|u| state.holders(u).iter().copied())
            .collect();
        for c in neighbours {
            if state.holders(v).contains(&c) {
                continue;
            }
            let mut cand = Candidate::new(Change::Add { v, c }, state.add_delta(v, c));
            if Judge::new(state).improves(&mut cand) {
                state.apply(cand.change);
            }
        }
    }
}

/// A higher level: clusters merge with the neighbour that lowers T most; true if any merged.
fn merge_clusters(state: &mut Flat, rng: &mut rand_chacha::ChaCha8Rng) -> bool {
    let mut any = false;
    loop {
        let slots = state.slots();
        let mut order: Vec<usize> = (0..slots.len()).collect();
        order.shuffle(rng);
        let mut best = None;
        let mut judge = Judge::new(state);
        for a in order.into_iter().map(|i| slots[i]) {
            for m in state.merge_deltas(a) {
                if m.connection <= 0.0 {
                    continue;
                }
                judge.consider(Candidate::new(Change::Merge { a, into: m.into }, m.dt), &mut best);
            }
            if best.is_some() {
                break;
            }
        }
        match best {
            Some(b) => {
                state.apply(b.change);
                any = true;
            }
            None => return any,
        }
    }
}

/// Merges the two most strongly connected clusters (the first two when none are connected).
fn force_merge(state: &mut Flat) {
    let slots = state.slots();
    let (Some(&first), Some(&second)) = (slots.first(), slots.get(1)) else {
        return;
    };
    // the first pair in the state's order with the largest connection: the pairs that share no
    // pair of nodes have none (costs are not negative), so they win only when nothing connects
    let mut best = (0.0, first, second);
    for &a in &slots {
        for m in state.merge_deltas(a) {
            if m.into > a && m.connection > best.0 {
                best = (m.connection, a, m.into);
            }
        }
    }
    let (_, a, b) = best;
    state.apply_merge(b, a);
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
