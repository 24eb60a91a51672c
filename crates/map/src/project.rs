//! The projection to machines larger than this one: a calibrated cost model predicts the run time of
//! a graph under a placement on a described topology. Each PU's time is the work placed on it plus,
//! for every pair with an end on it, the pair's cost scaled by distance: local_factor on one PU,
//! 1 up to the calibrated distance `ref_hops`, 1 + per_hop · (h − ref_hops) further out; the run
//! takes as long as the busiest PU. On 2 CPUs only two distances exist (same CPU, the other CPU), so
//! `per_hop` cannot be measured here; `multios bench map` says which numbers it measured and which it
//! assumed.

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
}

impl HopModel {
    /// The factor on a pair's one-hop cost at `hops`.
    pub fn factor(&self, hops: u32) -> f64 {
        match hops {
            0 => self.cost.local_factor,
            h => 1.0 + self.per_hop * h.saturating_sub(self.ref_hops) as f64,
        }
    }
}

/// Predicted run time (ns) of `w` with node i on PU `pu_of[i]`.
pub fn predict(w: &Weights, topo: &Topology, pu_of: &[usize], m: &HopModel) -> f64 {
    let mut load = vec![0.0; topo.len().max(1)];
    for (i, &p) in pu_of.iter().enumerate() {
        load[p] += w.work[i];
    }
    for &(i, j, c) in &w.pairs {
        let (a, b) = (pu_of[i], pu_of[j]);
        let cost = c * m.factor(if topo.is_empty() { 0 } else { topo.hops(a, b) });
        load[a] += cost;
        if b != a {
            load[b] += cost;
        }
    }
    load.into_iter().fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busiest_pu_decides() {
        let topo = Topology::synthetic("pack:2 core:2").expect("topology");
        let w = Weights::from_pairs(vec![1, 2], vec![10.0, 20.0], vec![(0, 1, 100.0)]);
        let m = HopModel {
            cost: CostModel::default(),
            per_hop: 0.5,
            ref_hops: 2,
        };
        assert_eq!(predict(&w, &topo, &[0, 0], &m), 30.0 + 50.0);
        // pu 0 and 1: two cores of a package, 2 hops, the calibrated distance
        assert_eq!(predict(&w, &topo, &[0, 1], &m), 20.0 + 100.0);
        // pu 0 and 2: across packages, 3 hops
        assert_eq!(predict(&w, &topo, &[0, 2], &m), 20.0 + 150.0);
    }
}
