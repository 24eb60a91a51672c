//! The paper's run-time mapping (§II-C) with its three observations:
//! 1. processes that share data go to one core, when eq. 1 says that is faster: pairs in order of
//!    what sharing a CPU saves are joined into groups while the joined group's work is less than the
//!    larger group's work plus the cost of their interactions apart, by a margin (W_a + W_b + l <
//!    [`JOIN_GAIN`] · (max(W_a, W_b) + c), with l the cost together and c apart) and the saving is at
//!    least [`PIN_SHARE`] of the larger work; a group shares one PU. The margin keeps a close call
//!    (a pipeline whose stages both compute) apart: the model's error there is larger than the gain;
//! 2. communicating processes go to adjacent cores: a cluster gets a contiguous block of PUs in tree
//!    order, right after the block of the cluster it is most linked to, and its members are visited
//!    in the order of a walk along their heaviest links; a group goes to the PU of its block where
//!    the busiest PU's load (work plus pair costs) ends lowest;
//! 3. independent processes go far apart: a cluster with no link to those placed before it starts in
//!    the least loaded top-level domain (the first level with more than one object: packages, NUMA
//!    nodes, caches or cores).
//!
//! The members of a group are *pinned* to its PU. Every other node is *free*: the placement names a
//! PU for it (its scores and the projection use it) but `map run` lets Linux balance it over its
//! package, because pinning work that does not communicate gains nothing and loses the scheduler's
//! balancing when other load comes and goes; its work counts evenly on the PUs of its block.
//!
//! Each node is handled once, with its already-placed neighbours and the PUs of its block:
//! O(P · (B + E) + E log E) for P nodes, E pairs, blocks of B PUs (plus one scan of the PUs per
//! independent cluster).

use super::tree_order;
use crate::partition::{Partition, Weights};
use crate::topology::Topology;
use std::collections::BTreeSet;

/// Where the nodes go.
#[derive(Debug, Clone, PartialEq)]
pub struct Mapped {
    /// Node index → PU index.
    pub pu_of: Vec<usize>,
    /// Whether the node shares its PU with a partner it communicates with (pin it there).
    pub pinned: Vec<bool>,
}

/// The affinity placement of `w`'s nodes.
pub fn place(w: &Weights, partition: &Partition, topo: &Topology) -> Mapped {
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
    let mut load = vec![0.0f64; topo.len().max(1)]; // ns per PU index
    let mut named = vec![0.0f64; topo.len().max(1)];
    let mut pu_of = vec![0; n];
    let mut placed = vec![false; n];
    let group = groups(w);
    let mut group_size = vec![0usize; n];
    for &g in &group {
        group_size[g] += 1;
    }
    let mut group_pu = vec![None; n];
    let mut cursor = 0usize;
    for &(c, linked) in &chain {
        let members = walk(w, &clusters[c]);
        let size = members.len().clamp(1, p);
        let start = if linked {
            cursor
        } else {
            // the least loaded region, then the block in it (of the cluster's size) with the least
            // load (the first such), so a new cluster does not land on PUs already used
            let mut best: Option<(f64, usize, usize)> = None; // (load, first position, end)
            let mut k = 0;
            while k < p {
                let region = topo.pus[pus[k]].path[level];
                let first = k;
                let mut l = 0.0;
                while k < p && topo.pus[pus[k]].path[level] == region {
                    l += load[pus[k]] + named[pus[k]];
                    k += 1;
                }
                if best.is_none_or(|(bl, _, _)| l < bl) {
                    best = Some((l, first, k));
                }
            }
            let (first, end) = best.map_or((0, p), |b| (b.1, b.2));
            let block_load = |s: usize| -> f64 {
                (0..size)
                    .map(|j| {
                        let q = pus[(s + j) % p];
                        load[q] + named[q]
                    })
                    .sum()
            };
            (first..end)
                .min_by(|&a, &b| block_load(a).total_cmp(&block_load(b)))
                .unwrap_or(first)
        };
        let block: Vec<usize> = (0..size).map(|k| (start + k) % p).collect();
        let block_pus: Vec<usize> = block.iter().map(|&k| pus[k]).collect();
        let mut f = Fill {
            w,
            group: &group,
            size: &group_size,
            group_pu: &mut group_pu,
            pu_of: &mut pu_of,
            placed: &mut placed,
            load: &mut load,
            named: &mut named,
        };
        f.fill(&members, &block_pus);
        cursor = (start + size) % p;
    }
    let pinned = group.iter().map(|&g| group_size[g] > 1).collect();
    Mapped { pu_of, pinned }
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

/// The least saving, as a share of the larger work of a pair, for which two nodes are joined to
/// share a PU.
pub const PIN_SHARE: f64 = 0.05;

/// The predicted gain a join must show: the joined group's time at most this share of the time
/// apart.
pub const JOIN_GAIN: f64 = 0.9;

/// Groups of nodes that share a PU (observation 1, eq. 1): a group number per node.
fn groups(w: &Weights) -> Vec<usize> {
    let n = w.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut v: usize) -> usize {
        while parent[v] != v {
            parent[v] = parent[parent[v]];
            v = parent[v];
        }
        v
    }
    // a group's work: its members' work and the cost together of its inner pairs
    let mut work: Vec<f64> = w.work.clone();
    let mut order: Vec<&crate::partition::Pair> = w.detail.iter().collect();
    order.sort_by(|a, b| (b.apart - b.together).total_cmp(&(a.apart - a.together)));
    for pair in order {
        let (gi, gj) = (root(&mut parent, pair.i), root(&mut parent, pair.j));
        if gi == gj {
            continue;
        }
        let saving = pair.apart - pair.together;
        if saving < PIN_SHARE * w.work[pair.i].max(w.work[pair.j]) {
            continue;
        }
        // every pair between the two groups: apart now, together once joined
        let (mut apart, mut together) = (0.0, 0.0);
        for p in &w.detail {
            let (a, b) = (root(&mut parent, p.i), root(&mut parent, p.j));
            if (a == gi && b == gj) || (a == gj && b == gi) {
                apart += p.apart;
                together += p.together;
            }
        }
        let joined = work[gi] + work[gj] + together;
        if joined < JOIN_GAIN * (work[gi].max(work[gj]) + apart) {
            parent[gj] = gi;
            work[gi] = joined;
        }
    }
    (0..n).map(|v| root(&mut parent, v)).collect()
}

/// The state of the placement while members are put onto their blocks.
struct Fill<'a> {
    w: &'a Weights,
    group: &'a [usize],
    /// Members per group.
    size: &'a [usize],
    /// The PU of each group once placed.
    group_pu: &'a mut [Option<usize>],
    pu_of: &'a mut [usize],
    placed: &'a mut [bool],
    /// ns per PU index: work plus pair costs placed so far (a free node's work evenly on its block).
    load: &'a mut [f64],
    /// ns per PU index of the work of the nodes named there (a free node's on its named PU): what
    /// spreads the names of free nodes.
    named: &'a mut [f64],
}

impl Fill<'_> {
    /// Members onto the block. A free member is counted evenly on the block's PUs and named the
    /// least loaded one; the first member of a group places the whole group on the PU where the
    /// busiest affected PU ends lowest (ties: the least loaded, then block order, so a walk's
    /// neighbours sit on adjacent PUs); later members follow their group.
    fn fill(&mut self, members: &[usize], block: &[usize]) {
        for &m in members {
            let g = self.group[m];
            if self.size[g] == 1 {
                self.free(m, block);
                continue;
            }
            let p = match self.group_pu[g] {
                Some(p) => p,
                None => {
                    let p = self.choose(g, block);
                    self.group_pu[g] = Some(p);
                    // the whole group's work and inner pairs now
                    for v in 0..self.w.len() {
                        if self.group[v] == g {
                            self.load[p] += self.w.work[v];
                            self.named[p] += self.w.work[v];
                        }
                    }
                    for pair in &self.w.detail {
                        if self.group[pair.i] == g && self.group[pair.j] == g {
                            self.load[p] += pair.together;
                        }
                    }
                    p
                }
            };
            // pairs with placed nodes outside the group
            for &(u, c) in &self.w.adj[m] {
                if self.placed[u] && self.group[u] != g {
                    let q = self.pu_of[u];
                    if q == p {
                        self.load[p] += self.w.together(m, u);
                    } else {
                        self.load[p] += c;
                        self.load[q] += c;
                    }
                }
            }
            self.pu_of[m] = p;
            self.placed[m] = true;
        }
    }

    /// The PU of `block` for group `g`.
    fn choose(&self, g: usize, block: &[usize]) -> usize {
        let mut gwork = 0.0;
        for v in 0..self.w.len() {
            if self.group[v] == g {
                gwork += self.w.work[v];
            }
        }
        let mut links: Vec<(usize, f64, f64)> = Vec::new(); // (PU of a placed outsider, apart, together)
        for pair in &self.w.detail {
            let (a, b) = (self.group[pair.i] == g, self.group[pair.j] == g);
            if a && b {
                gwork += pair.together;
            } else if a && self.placed[pair.j] {
                links.push((self.pu_of[pair.j], pair.apart, pair.together));
            } else if b && self.placed[pair.i] {
                links.push((self.pu_of[pair.i], pair.apart, pair.together));
            }
        }
        let mut best: Option<(f64, f64, usize)> = None; // (makespan, load, PU)
        for &p in block {
            let mut after = vec![(p, self.load[p] + gwork)];
            for &(q, c, l) in &links {
                if q == p {
                    after[0].1 += l;
                } else {
                    after[0].1 += c;
                    match after.iter_mut().find(|x| x.0 == q) {
                        Some(x) => x.1 += c,
                        None => after.push((q, self.load[q] + c)),
                    }
                }
            }
            let span = after.iter().map(|x| x.1).fold(0.0, f64::max);
            let better = match best {
                None => true,
                Some((bs, bl, _)) => span < bs || (span == bs && self.load[p] < bl),
            };
            if better {
                best = Some((span, self.load[p], p));
            }
        }
        best.map_or(block.first().copied().unwrap_or(0), |b| b.2)
    }

    /// A free node: counted evenly on the block's PUs (Linux balances it there), named the one with
    /// the least work named on it (the first such, in block order).
    fn free(&mut self, m: usize, block: &[usize]) {
        let Some(&p) = block
            .iter()
            .min_by(|&&a, &&b| self.named[a].total_cmp(&self.named[b]))
        else {
            return;
        };
        self.named[p] += self.w.work[m].max(f64::MIN_POSITIVE);
        let share = 1.0 / block.len() as f64;
        for &q in block {
            self.load[q] += self.w.work[m] * share;
        }
        for &(u, c) in &self.w.adj[m] {
            if self.placed[u] {
                self.load[self.pu_of[u]] += c;
                for &q in block {
                    self.load[q] += c * share;
                }
            }
        }
        self.pu_of[m] = p;
        self.placed[m] = true;
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
        let m = place(&w, &part, &topo);
        let pu = &m.pu_of;
        // heavy work: apart is faster, so each pair takes two adjacent PUs, and nothing is pinned
        assert_eq!(topo.hops(pu[0], pu[1]), 2);
        assert_eq!(topo.hops(pu[2], pu[3]), 2);
        assert!(m.pinned.iter().all(|p| !p));
        // light work, heavy communication: each pair shares one PU
        let w = Weights::from_pairs(vec![1, 2, 3, 4], vec![1.0; 4], vec![(0, 1, 1e6), (2, 3, 1e6)]);
        let m = place(&w, &part, &topo);
        let pu = &m.pu_of;
        assert_eq!(pu[0], pu[1]);
        assert_eq!(pu[2], pu[3]);
        assert_ne!(pu[0], pu[2]);
        assert!(m.pinned.iter().all(|p| *p));
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
        let pu = place(&w, &part, &topo).pu_of;
        let pkg = |v: usize| topo.pus[pu[v]].path[0];
        assert_eq!(pkg(0), pkg(1));
        assert_eq!(pkg(1), pkg(2));
        assert_eq!(pkg(3), pkg(5));
        assert_ne!(pkg(0), pkg(3));
        assert!(topo.hops(pu[0], pu[1]) <= 2 && topo.hops(pu[1], pu[2]) <= 2);
    }
}

#[cfg(test)]
mod balance {
    use super::*;

    /// A pipeline whose middle stage does most of the work (cat | gzip | sha256sum): the light
    /// producer shares gzip's CPU when their link costs more than its work (pinned together); the
    /// consumer, whose work outweighs its link, goes to the other CPU and stays free. Loads count
    /// ns, not members: the busiest CPU is never given a second heavy stage.
    #[test]
    fn a_heavy_stage_gets_a_cpu_of_its_own() {
        let topo = Topology::synthetic("pack:1 core:2 pu:1").expect("topology");
        let w = Weights::from_pairs(
            vec![1, 2, 3],
            vec![36e6, 1725e6, 264e6],
            vec![(0, 1, 600e6), (1, 2, 200e6)],
        );
        let part = Partition::flat(vec![vec![0, 1, 2]], 0);
        let m = place(&w, &part, &topo);
        assert_eq!(m.pu_of[0], m.pu_of[1], "cat with gzip");
        assert_ne!(m.pu_of[2], m.pu_of[1], "sha256sum on the other CPU");
        assert_eq!(m.pinned, vec![true, true, false]);
    }

    /// Three independent pairs on two packages of four CPUs: the third pair goes to the least
    /// loaded package and there to its unused CPUs, not to the package's first CPUs again, so all
    /// six threads get a CPU each.
    #[test]
    fn an_independent_cluster_takes_unused_cpus_of_its_package() {
        let topo = Topology::synthetic("pack:2 core:4 pu:1").expect("topology");
        let w = Weights::from_pairs(
            (1..=6).collect(),
            vec![1e9; 6],
            vec![(0, 1, 1e6), (2, 3, 1e6), (4, 5, 1e6)],
        );
        let part = Partition::flat(vec![vec![0, 1], vec![2, 3], vec![4, 5]], 0);
        let pu = place(&w, &part, &topo).pu_of;
        let used: BTreeSet<usize> = pu.iter().copied().collect();
        assert_eq!(used.len(), 6, "one CPU each: {pu:?}");
    }
}
