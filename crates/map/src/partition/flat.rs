//! The greedy partitioner's state and its incremental evaluator of T (issue #12: each candidate was
//! a full evaluation of T on a cloned state, O(E + n + k²), which made `map partition` roughly
//! cubic in the number of nodes).
//!
//! Every cluster of this state is at depth 0, so [`Partition::quality`] reduces to
//! T = (Σ W_u + W_c) / N_eff with N_eff = min(k, cores).max(1) (W_seq when k = 1, W_par otherwise):
//! - Σ W_u = Σ over nodes of work × |holders| + Σ over pairs whose ends share clusters of
//!   `together` × |common clusters|;
//! - W_c = Σ over pairs whose ends share no cluster of `apart` × (|holders_i| + |holders_j|).
//!
//! Both sums are kept up to date together with each node's holders, each cluster's members and k,
//! so a candidate (move a node, replicate it, merge two clusters) changes only the pairs with an
//! end in what moves and is scored in O(Σ degree of the moved nodes) without touching the rest.
//! Clusters live in slots that never move: the clusters alive, in slot order, are the state's
//! clusters in the order the full evaluation saw them (a cluster that empties is dropped, nothing
//! is inserted before another), so candidates and ties are taken in the same order as before.

use super::{Pair, Partition, Weights};
use std::collections::{BTreeMap, BTreeSet};

/// A cluster id for "a cluster that holds neither end" (a target not among the pair's holders).
const FRESH: usize = usize::MAX;

/// A pair's share of (Σ W_u, W_c) when its ends are held by `hi` and `hj`.
fn pair_cost(p: &Pair, hi: &[usize], hj: &[usize]) -> (f64, f64) {
    let common = hi.iter().filter(|c| hj.contains(c)).count();
    if common > 0 {
        (p.together * common as f64, 0.0)
    } else {
        (0.0, p.apart * (hi.len() + hj.len()) as f64)
    }
}

/// `h` with `from` (when present) replaced by `to`, without duplicates.
fn replaced(h: &[usize], from: usize, to: usize) -> Vec<usize> {
    if !h.contains(&from) {
        return h.to_vec();
    }
    let mut out: Vec<usize> = h.iter().copied().filter(|&c| c != from).collect();
    if !out.contains(&to) {
        out.push(to);
    }
    out
}

/// What merging one cluster into another changes: the connection (Σ cost apart of the pairs
/// between them) and the change of Σ W_u and W_c.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MergeDelta {
    pub into: usize,
    pub connection: f64,
    pub dt: f64,
}

/// One candidate change of the state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Node `v` leaves cluster `from` for cluster `to`.
    Move { v: usize, from: usize, to: usize },
    /// Node `v` joins cluster `c` (a replica).
    Add { v: usize, c: usize },
    /// Cluster `a` merges into cluster `into`.
    Merge { a: usize, into: usize },
}

/// The partition state of the greedy partitioner with T kept up to date.
pub struct Flat<'a> {
    w: &'a Weights,
    cores: Option<usize>,
    /// Per node, its pairs (indices into `w.detail`).
    pairs_of: Vec<Vec<usize>>,
    /// Per node, the slots of the clusters that hold it, ascending.
    holders: Vec<Vec<usize>>,
    /// Per slot, its cluster's members (empty: no cluster in this slot any more).
    members: Vec<BTreeSet<usize>>,
    k: usize,
    /// Σ W_u and W_c.
    wu: f64,
    wc: f64,
}

impl<'a> Flat<'a> {
    /// Every node alone in its cluster (slot i holds node i).
    pub fn singletons(w: &'a Weights, cores: Option<usize>) -> Flat<'a> {
        let n = w.len();
        let mut pairs_of = vec![Vec::new(); n];
        for (x, p) in w.detail.iter().enumerate() {
            pairs_of[p.i].push(x);
            pairs_of[p.j].push(x);
        }
        let mut s = Flat {
            w,
            cores,
            pairs_of,
            holders: (0..n).map(|i| vec![i]).collect(),
            members: (0..n).map(|i| BTreeSet::from([i])).collect(),
            k: n,
            wu: 0.0,
            wc: 0.0,
        };
        s.resync();
        s
    }

    /// Recomputes Σ W_u and W_c from scratch (drops the rounding the updates accumulated).
    pub fn resync(&mut self) {
        let w = self.w;
        let mut wu: f64 = (0..w.len())
            .map(|m| w.work[m] * self.holders[m].len() as f64)
            .sum();
        let mut wc = 0.0;
        for p in &w.detail {
            let (s, c) = pair_cost(p, &self.holders[p.i], &self.holders[p.j]);
            wu += s;
            wc += c;
        }
        self.wu = wu;
        self.wc = wc;
    }

    pub fn weights(&self) -> &'a Weights {
        self.w
    }

    pub fn cores(&self) -> Option<usize> {
        self.cores
    }

    /// The number of clusters.
    pub fn k(&self) -> usize {
        self.k
    }

    /// N_eff for `k` clusters.
    fn n_eff(&self, k: usize) -> f64 {
        self.cores.map_or(k, |p| k.min(p.max(1))).max(1) as f64
    }

    /// T of the state.
    pub fn t(&self) -> f64 {
        (self.wu + self.wc) / self.n_eff(self.k)
    }

    /// The change of T when Σ W_u + W_c changes by `d` and the state then has `k` clusters.
    fn dt(&self, d: f64, k: usize) -> f64 {
        let (now, then) = (self.n_eff(self.k), self.n_eff(k));
        if now == then {
            d / now
        } else {
            (self.wu + self.wc + d) / then - (self.wu + self.wc) / now
        }
    }

    /// The slots of the clusters, in the state's order.
    pub fn slots(&self) -> Vec<usize> {
        (0..self.members.len())
            .filter(|&c| !self.members[c].is_empty())
            .collect()
    }

    /// The slots of the clusters holding `v`, ascending.
    pub fn holders(&self, v: usize) -> &[usize] {
        &self.holders[v]
    }

    /// The other end of each of `v`'s pairs.
    pub fn neighbours(&self, v: usize) -> impl Iterator<Item = usize> + '_ {
        self.pairs_of[v].iter().map(move |&x| {
            let p = &self.w.detail[x];
            if p.i == v {
                p.j
            } else {
                p.i
            }
        })
    }

    /// The state as a partition, every cluster at `depth`.
    pub fn partition(&self, depth: u32) -> Partition {
        Partition::flat(
            self.members
                .iter()
                .filter(|m| !m.is_empty())
                .map(|m| m.iter().copied().collect())
                .collect(),
            depth,
        )
    }

    /// T of the state evaluated in full by [`Partition::quality`].
    pub fn t_full(&self) -> f64 {
        self.partition(0).quality(self.w, self.cores).t
    }

    /// T after `change`, evaluated in full by [`Partition::quality`] on the changed state, as the
    /// partitioner evaluated every candidate before the incremental evaluator (O(E + n)).
    pub fn t_full_after(&self, change: Change) -> f64 {
        let mut groups: Vec<Vec<usize>> = Vec::with_capacity(self.k);
        for (c, m) in self.members.iter().enumerate() {
            if m.is_empty() || matches!(change, Change::Merge { a, .. } if a == c) {
                continue;
            }
            let mut g: Vec<usize> = m.iter().copied().collect();
            match change {
                Change::Move { v, from, to } => {
                    if c == from {
                        g.retain(|&x| x != v);
                    }
                    if c == to {
                        g.push(v);
                    }
                }
                Change::Add { v, c: to } if c == to => g.push(v),
                Change::Merge { a, into } if c == into => g.extend(self.members[a].iter()),
                _ => {}
            }
            groups.push(g);
        }
        Partition::flat(groups, 0).quality(self.w, self.cores).t
    }

    /// The change of (Σ W_u, W_c) when `v`'s holders become `h`.
    fn node_change(&self, v: usize, h: &[usize]) -> (f64, f64) {
        let (mut ds, mut dc) = (0.0, 0.0);
        for &x in &self.pairs_of[v] {
            let p = &self.w.detail[x];
            let u = if p.i == v { p.j } else { p.i };
            let before = pair_cost(p, &self.holders[v], &self.holders[u]);
            let after = pair_cost(p, h, &self.holders[u]);
            ds += after.0 - before.0;
            dc += after.1 - before.1;
        }
        let grown = h.len() as f64 - self.holders[v].len() as f64;
        (ds + self.w.work[v] * grown, dc)
    }

    /// ΔT of moving `v` from cluster `from` to each cluster holding one of its neighbours (but
    /// `from`), ascending by slot; O(degree of v) when v is in one cluster. A pair whose other end
    /// is not in the target changes as it would for any such target, so that change is computed
    /// once and each target adds what differs for the pairs it holds.
    pub fn move_deltas(&self, v: usize, from: usize) -> Vec<(usize, f64)> {
        let hv = &self.holders[v];
        let fresh = replaced(hv, from, FRESH);
        // the change if the target held no neighbour, and per target what differs from that
        let (mut d0s, mut d0c) = (0.0, 0.0);
        let mut per: BTreeMap<usize, (f64, f64)> = BTreeMap::new();
        for &x in &self.pairs_of[v] {
            let p = &self.w.detail[x];
            let hu = &self.holders[if p.i == v { p.j } else { p.i }];
            let before = pair_cost(p, hv, hu);
            let dflt = pair_cost(p, &fresh, hu);
            d0s += dflt.0 - before.0;
            d0c += dflt.1 - before.1;
            for &c in hu.iter().filter(|&&c| c != from) {
                let after = pair_cost(p, &replaced(hv, from, c), hu);
                let e = per.entry(c).or_insert((0.0, 0.0));
                e.0 += after.0 - dflt.0;
                e.1 += after.1 - dflt.1;
            }
        }
        let emptied = self.members[from].len() == 1 && self.members[from].contains(&v);
        let k = self.k - usize::from(emptied);
        per.into_iter()
            .map(|(c, (s, d))| {
                if hv.contains(&c) {
                    // v already in c holds one cluster less, which changes all its pairs (never
                    // so in the partitioner, which moves nodes before any is replicated)
                    let (s, d) = self.node_change(v, &replaced(hv, from, c));
                    return (c, self.dt(s + d, k));
                }
                (c, self.dt((d0s + s) + (d0c + d), k))
            })
            .collect()
    }

    /// ΔT of adding `v` to cluster `c` (a replica); O(degree of v).
    pub fn add_delta(&self, v: usize, c: usize) -> f64 {
        let mut h = self.holders[v].clone();
        if !h.contains(&c) {
            h.push(c);
        }
        let (ds, dc) = self.node_change(v, &h);
        self.dt(ds + dc, self.k)
    }

    fn set_holders(&mut self, v: usize, mut h: Vec<usize>) {
        let (ds, dc) = self.node_change(v, &h);
        self.wu += ds;
        self.wc += dc;
        h.sort_unstable();
        for &c in &self.holders[v] {
            self.members[c].remove(&v);
            if self.members[c].is_empty() {
                self.k -= 1;
            }
        }
        for &c in &h {
            if self.members[c].is_empty() {
                self.k += 1;
            }
            self.members[c].insert(v);
        }
        self.holders[v] = h;
    }

    /// Applies `change`.
    pub fn apply(&mut self, change: Change) {
        match change {
            Change::Move { v, from, to } => self.apply_move(v, from, to),
            Change::Add { v, c } => self.apply_add(v, c),
            Change::Merge { a, into } => self.apply_merge(a, into),
        }
    }

    /// Moves `v` from cluster `from` to cluster `to`.
    pub fn apply_move(&mut self, v: usize, from: usize, to: usize) {
        let h = replaced(&self.holders[v], from, to);
        self.set_holders(v, h);
    }

    /// Adds `v` to cluster `c`.
    pub fn apply_add(&mut self, v: usize, c: usize) {
        let mut h = self.holders[v].clone();
        if !h.contains(&c) {
            h.push(c);
            self.set_holders(v, h);
        }
    }

    /// The pairs with an end in cluster `a`, each once, ascending.
    fn pairs_of_cluster(&self, a: usize) -> Vec<usize> {
        let mut ps: Vec<usize> = self.members[a]
            .iter()
            .flat_map(|&x| self.pairs_of[x].iter().copied())
            .collect();
        ps.sort_unstable();
        ps.dedup();
        ps
    }

    /// For every cluster b that holds an end of a pair with an end in cluster `a`: the
    /// connection of a and b and ΔT of merging a into b, ascending by b; O(Σ degree of a's
    /// members). The connection is summed in pair order, as [`Weights::pairs`] lists them.
    pub fn merge_deltas(&self, a: usize) -> Vec<MergeDelta> {
        // per b: the pairs between a and b, Σ W_u and W_c change
        let mut per: BTreeMap<usize, (Vec<usize>, f64, f64)> = BTreeMap::new();
        for x in self.pairs_of_cluster(a) {
            let p = &self.w.detail[x];
            let (hi, hj) = (&self.holders[p.i], &self.holders[p.j]);
            let before = pair_cost(p, hi, hj);
            let (ia, ja) = (hi.contains(&a), hj.contains(&a));
            let mut bs: Vec<usize> = hi.iter().chain(hj).copied().filter(|&b| b != a).collect();
            bs.sort_unstable();
            bs.dedup();
            for b in bs {
                let after = pair_cost(p, &replaced(hi, a, b), &replaced(hj, a, b));
                let e = per.entry(b).or_insert((Vec::new(), 0.0, 0.0));
                if (ia && hj.contains(&b)) || (ja && hi.contains(&b)) {
                    e.0.push(x);
                }
                e.1 += after.0 - before.0;
                e.2 += after.1 - before.1;
            }
        }
        for &m in &self.members[a] {
            for &b in self.holders[m].iter().filter(|&&b| b != a) {
                per.entry(b).or_insert((Vec::new(), 0.0, 0.0)).1 -= self.w.work[m];
            }
        }
        let k = self.k.saturating_sub(1);
        per.into_iter()
            .map(|(b, (between, ds, dc))| MergeDelta {
                into: b,
                connection: between.iter().map(|&x| self.w.pairs[x].2).sum(),
                dt: self.dt(ds + dc, k),
            })
            .collect()
    }

    /// Merges cluster `a` into cluster `b`.
    pub fn apply_merge(&mut self, a: usize, b: usize) {
        if a == b || self.members[a].is_empty() || self.members[b].is_empty() {
            return;
        }
        let (mut ds, mut dc) = (0.0, 0.0);
        for x in self.pairs_of_cluster(a) {
            let p = &self.w.detail[x];
            let (hi, hj) = (&self.holders[p.i], &self.holders[p.j]);
            let before = pair_cost(p, hi, hj);
            let after = pair_cost(p, &replaced(hi, a, b), &replaced(hj, a, b));
            ds += after.0 - before.0;
            dc += after.1 - before.1;
        }
        let moved = std::mem::take(&mut self.members[a]);
        for &m in &moved {
            if self.holders[m].contains(&b) {
                ds -= self.w.work[m];
            }
            let mut h = replaced(&self.holders[m], a, b);
            h.sort_unstable();
            self.holders[m] = h;
        }
        self.members[b].extend(moved);
        self.k -= 1;
        self.wu += ds;
        self.wc += dc;
    }
}
