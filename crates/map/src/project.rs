//! The projection to machines larger than this one: a calibrated cost model predicts the run time of
//! a graph under a placement on a described topology.
//!
//! The run takes as long as the larger of two bounds:
//! - **load**: the busiest PU's time — the work placed on it, plus, for each pair with an end on it,
//!   the pair's CPU cost: its cost together when both ends share the PU, else half its cost apart
//!   (busy CPUs, no idle wake-up) scaled by distance on each end;
//! - **chain**: for each pair apart, the slower end's work plus the pair's CPU cost apart, plus one
//!   idle wake-up per round trip and end whose PU has nothing else to run (no other node placed
//!   there does work or talks): a ping-pong between two otherwise idle CPUs pays the idle CPU's
//!   wake-up at every hand-off, while CPUs kept busy by other work do not.
//!
//! The distance scaling: 1 up to the calibrated distance `ref_hops` (the hops between the two CPUs
//! the costs were measured on), 1 + per_hop · (h − ref_hops) further out. On 2 CPUs only two
//! distances exist (same CPU, the other CPU), so `per_hop` cannot be measured here; `multios bench
//! map` says which numbers it measured and which it assumed. Times are divided by `cpu_share`, the
//! share of a CPU the calibration runs got (1 on a quiet machine; less when other programs compete).

use crate::partition::{CostModel, Weights};
use crate::topology::Topology;
use serde::{Deserialize, Serialize};

/// The distance scaling of a pair's cost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HopModel {
    pub cost: CostModel,
    /// Extra cost per hop beyond `ref_hops`, as a fraction of the calibrated cost.
    pub per_hop: f64,
    /// The distance (hops) between the two CPUs the cost model was calibrated on: 2 for two cores of
    /// one cache or package (core and PU levels), as on this machine.
    pub ref_hops: u32,
    /// The share of a CPU the calibration runs got (1 on a quiet machine).
    #[serde(default = "one")]
    pub cpu_share: f64,
}

fn one() -> f64 {
    1.0
}

impl HopModel {
    /// The factor on a pair's cost apart at `hops` (≥ 1).
    pub fn factor(&self, hops: u32) -> f64 {
        1.0 + self.per_hop * hops.saturating_sub(self.ref_hops) as f64
    }
}

/// A prediction and its two bounds (ns).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Prediction {
    pub ns: f64,
    pub load_ns: f64,
    pub chain_ns: f64,
}

/// Predicted run time (ns) of `w` with node i on PU `pu_of[i]`.
pub fn predict(w: &Weights, topo: &Topology, pu_of: &[usize], m: &HopModel) -> f64 {
    bounds(w, topo, pu_of, m).ns
}

/// The prediction with its bounds.
pub fn bounds(w: &Weights, topo: &Topology, pu_of: &[usize], m: &HopModel) -> Prediction {
    let npu = topo.len().max(1);
    let pu = |i: usize| pu_of.get(i).copied().unwrap_or(0).min(npu - 1);
    let hops = |a: usize, b: usize| if topo.is_empty() { 0 } else { topo.hops(a, b) };
    let mut load = vec![0.0; npu];
    // nodes doing something (work or a pair) per PU
    let mut active = vec![0usize; npu];
    let mut talks = vec![false; w.len()];
    for p in &w.detail {
        talks[p.i] = true;
        talks[p.j] = true;
    }
    for i in 0..w.len() {
        load[pu(i)] += w.work[i];
        if w.work[i] > 0.0 || talks[i] {
            active[pu(i)] += 1;
        }
    }
    let mut chain: f64 = 0.0;
    for p in &w.detail {
        let (a, b) = (pu(p.i), pu(p.j));
        if a == b {
            load[a] += p.together;
            continue;
        }
        let busy = m.cost.busy_apart(&p.traffic) * m.factor(hops(a, b));
        load[a] += busy / 2.0;
        load[b] += busy / 2.0;
        let idle_ends = usize::from(active[a] == 1) + usize::from(active[b] == 1);
        let wakes = p.traffic.round_trips * idle_ends as f64 * m.cost.ns_per_idle_wake;
        chain = chain.max(w.work[p.i].max(w.work[p.j]) + busy + wakes);
    }
    let load_ns = load.into_iter().fold(0.0, f64::max);
    let share = if m.cpu_share > 0.0 { m.cpu_share } else { 1.0 };
    Prediction {
        ns: load_ns.max(chain) / share,
        load_ns: load_ns / share,
        chain_ns: chain / share,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition::{Pair, Traffic};

    fn model() -> HopModel {
        HopModel {
            cost: CostModel {
                ns_per_event: 10.0,
                ns_per_byte: 0.0,
                local_ns_per_event: 4.0,
                local_ns_per_byte: 0.0,
                ns_per_idle_wake: 100.0,
                ns_per_shared_page: 0.0,
            },
            per_hop: 0.5,
            ref_hops: 2,
            cpu_share: 1.0,
        }
    }

    /// `k` ping-pong pairs of `rounds` exchanges (2 events, 1 round trip each).
    fn pairs(k: usize, rounds: f64, c: &CostModel) -> Weights {
        let t = Traffic {
            bytes: 0.0,
            events: 2.0 * rounds,
            round_trips: rounds,
            pages: 0.0,
        };
        let detail = (0..k)
            .map(|p| Pair {
                i: 2 * p,
                j: 2 * p + 1,
                apart: c.apart(&t),
                together: c.together(&t),
                traffic: t,
            })
            .collect();
        Weights::from_detail((0..2 * k as u32).collect(), vec![0.0; 2 * k], detail)
    }

    #[test]
    fn a_lone_pair_across_cpus_pays_the_idle_wake_ups() {
        let topo = Topology::synthetic("pack:1 core:2").expect("topology");
        let m = model();
        let w = pairs(1, 10.0, &m.cost);
        // together: 10 exchanges × 2 events × 4 ns
        assert_eq!(predict(&w, &topo, &[0, 0], &m), 80.0);
        // apart and alone: the chain, 10 × (2 × 10 + 2 × 100)
        let b = bounds(&w, &topo, &[0, 1], &m);
        assert_eq!((b.load_ns, b.chain_ns, b.ns), (100.0, 2200.0, 2200.0));
    }

    #[test]
    fn busy_cpus_pay_no_idle_wake_up() {
        let topo = Topology::synthetic("pack:1 core:2").expect("topology");
        let m = model();
        let w = pairs(2, 10.0, &m.cost);
        // each pair split: each CPU does half of both pairs' exchanges, never idle
        let b = bounds(&w, &topo, &[0, 1, 0, 1], &m);
        assert_eq!((b.load_ns, b.chain_ns), (200.0, 200.0));
        // each pair on its own CPU
        assert_eq!(predict(&w, &topo, &[0, 0, 1, 1], &m), 80.0);
        // across packages (3 hops, one beyond the calibrated 2) costs half as much again; each PU
        // has one end of one pair, so each hand-off wakes an idle PU
        let big = Topology::synthetic("pack:2 core:2").expect("topology");
        let b = bounds(&w, &big, &[0, 2, 1, 3], &m);
        assert_eq!((b.load_ns, b.chain_ns), (150.0, 300.0 + 2.0 * 10.0 * 100.0));
    }

    #[test]
    fn a_busier_machine_share_stretches_the_time() {
        let topo = Topology::synthetic("pack:1 core:2").expect("topology");
        let mut m = model();
        m.cpu_share = 0.5;
        let w = pairs(1, 10.0, &m.cost);
        assert_eq!(predict(&w, &topo, &[0, 0], &m), 160.0);
    }
}
