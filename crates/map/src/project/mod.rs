//! The projection to machines larger than this one: a calibrated model predicts the wall time of a
//! graph under a placement on a described topology (docs/NETWORKEDOS.md, "Projection").
//!
//! What the model charges (with [`Curves`], the times `multios bench map` measures; without them, the
//! linear [`CostModel`] of the `map` commands' flags, divided by the CPU share):
//! - **compute**: a node's recorded CPU time less the CPU its messages took (the recorded time
//!   includes them; half of each pair's cost on one CPU is taken from each end), stretched by the wall
//!   time per CPU-second the calibration's compute loops got: alone on one CPU, or with every CPU
//!   computing (on this VM two busy vCPUs each run slower than one);
//! - **a pair on one PU**: its exchanges at the one-CPU time for their size and for the number of
//!   pairs pinned on that PU (more pairs on one run queue cost more per exchange: measured with 1,
//!   3 and 6), × the measured slowdown of a pair on one CPU while a pair runs on the other CPU, when
//!   more than one PU is busy;
//! - **a pair on two PUs**: its exchanges at the time of one of k pairs split over the same two CPUs
//!   (k = the busy nodes on the less busy of its PUs: a lone pair waits for an idle CPU at every
//!   hand-off, more pairs keep the CPUs awake, many crowd them: measured with 1, 2, 6 and 12), on
//!   both PUs' timelines, × the distance factor;
//! - **free nodes** (Linux balances them over the domain): each pair with a free end costs its CPU
//!   between busy CPUs, half on each end; a pair with both ends free, one of k such pairs, at most
//!   what Linux's placement of k pairs took per exchange here ([`HopModel::linux_ns`]: with every
//!   CPU busy Linux wakes a partner on its waker's CPU, so many pairs stay together).
//!
//! The run takes as long as the largest of three bounds: the busiest pinned PU (`load_ns`); the
//! paper's quality function T(s) = W_seq + W_par/N + W_c/N for the free nodes as singletons at one
//! depth with the pinned PUs' loads as work (W_seq = 0, N = PUs: every node's time spread evenly,
//! `balance_ns`); the longest free node by itself (a thread runs on one CPU at a time, `chain_ns`).
//!
//! The distance scaling: 1 up to the calibrated distance `ref_hops` (the hops between the two CPUs
//! the costs were measured on), 1 + per_hop · (h − ref_hops) further out. On 2 CPUs only two
//! distances exist (same CPU, the other CPU), so `per_hop` cannot be measured here; `multios bench
//! map` says which numbers it measured and which it assumed.

mod curves;

pub use curves::{
    interpolate, non_decreasing, power_interpolate, Curves, CROWD, LINUX, PACKED, POINTS, SPREAD,
};

use crate::partition::{CostModel, Pair, Partition, Weights};
use crate::topology::Topology;
use serde::{Deserialize, Serialize};

/// The calibrated model: the cost model, the measured curves and stretches, the distance scaling.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HopModel {
    pub cost: CostModel,
    /// Extra cost per hop beyond `ref_hops`, as a fraction of the calibrated cost.
    pub per_hop: f64,
    /// The distance (hops) between the two CPUs the cost model was calibrated on: 2 for two cores of
    /// one cache or package (core and PU levels), as on this machine.
    pub ref_hops: u32,
    /// The share of a CPU the calibration runs got (1 on a quiet machine); divides the linear
    /// model's times (the curves, measured in wall time, hold it already).
    #[serde(default = "one")]
    pub cpu_share: f64,
    /// Wall ns per exchange measured at a few sizes; None: the linear `cost` alone.
    #[serde(default)]
    pub curves: Option<Curves>,
    /// Wall ns per ns of CPU time of a compute loop alone on one CPU (1 on a quiet machine) …
    #[serde(default = "one")]
    pub stretch_one: f64,
    /// … and of compute loops on every CPU at once.
    #[serde(default = "one")]
    pub stretch_parallel: f64,
    /// Wall time of a pair on one CPU while a pair runs on the other, ÷ alone (1: no slowdown).
    #[serde(default = "one")]
    pub parallel_ipc: f64,
    /// The curves at the ends of each measurement's interval over the calibration's rounds (since
    /// h-map4): `map run` reports its decision also at the ends least favourable to the placement
    /// ([`HopModel::least_favourable`]). None: not measured (a model written before, or the linear
    /// model).
    #[serde(default)]
    pub spread: Option<CurveSpread>,
    /// The curves a recorded run's messages are priced with ([`HopModel::recorded_ns`]) when
    /// they are not `curves`: the least favourable model ([`HopModel::least_favourable`]) prices
    /// Linux's placement at the low end of its spread, but a recording is what Linux's placement
    /// did in that run, read with the medians. Not written.
    #[serde(skip)]
    pub recorded: Option<Curves>,
}

fn one() -> f64 {
    1.0
}

/// The calibration's curves at the low and the high end of each median's 95 % interval over its
/// rounds (with fewer than 6 rounds: the smallest and the largest run).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CurveSpread {
    pub low: Curves,
    pub high: Curves,
    /// Rounds of the calibration the ends come from.
    pub rounds: usize,
}

impl HopModel {
    /// The linear model of `cost` (no curves, no stretch: what the `map` commands' flags give).
    pub fn linear(cost: CostModel, per_hop: f64, ref_hops: u32) -> HopModel {
        HopModel {
            cost,
            per_hop,
            ref_hops,
            cpu_share: 1.0,
            curves: None,
            stretch_one: 1.0,
            stretch_parallel: 1.0,
            parallel_ipc: 1.0,
            spread: None,
            recorded: None,
        }
    }

    /// The model at the ends of its measurements least favourable to a placement: Linux's own
    /// placement of pairs (`curves.linux`) and the CPU an exchange between busy CPUs takes (the
    /// cap on it, `busy`) at the low ends of their intervals, every arrangement a placement pins
    /// (one CPU, crowded, packed, split) at the high ends. None without [`HopModel::spread`].
    /// Everything else (the cost model, the stretches) is the model's own, and a recording's
    /// messages are still read with the medians (`recorded`): a lone pair recorded at 24 µs of CPU
    /// per exchange was split by Linux in that run, whatever Linux's best rounds did.
    pub fn least_favourable(&self) -> Option<HopModel> {
        let s = self.spread?;
        let mut c = s.high;
        c.linux = s.low.linux;
        c.busy = s.low.busy;
        c.linux_cpus = s.low.linux_cpus;
        Some(HopModel {
            curves: Some(c),
            spread: None,
            recorded: self.curves,
            ..*self
        })
    }

    /// The factor on a pair's cost apart at `hops` (≥ 1).
    pub fn factor(&self, hops: u32) -> f64 {
        1.0 + self.per_hop * hops.saturating_sub(self.ref_hops) as f64
    }

    fn share(&self) -> f64 {
        if self.cpu_share > 0.0 {
            self.cpu_share
        } else {
            1.0
        }
    }

    /// Wall ns per ns of recorded CPU time, with one PU busy or several.
    pub fn stretch(&self, parallel: bool) -> f64 {
        match (self.curves.is_some(), parallel) {
            (false, _) => 1.0 / self.share(),
            (true, false) => self.stretch_one.max(0.0),
            (true, true) => self.stretch_parallel.max(0.0),
        }
    }

    /// A pair's exchanges and bytes per exchange (an exchange: two events).
    fn exchanges(p: &Pair) -> (f64, f64) {
        let x = (p.traffic.events / 2.0).max(0.0);
        let b = if x > 0.0 { p.traffic.bytes / x } else { 0.0 };
        (x, b)
    }

    fn pages(&self, p: &Pair) -> f64 {
        p.traffic.pages * p.traffic.round_trips.max(1.0) * self.cost.ns_per_shared_page
    }

    /// Wall ns a pair's interactions take with both ends on one CPU (the other CPU idle).
    pub fn local_ns(&self, p: &Pair) -> f64 {
        match &self.curves {
            Some(c) => {
                let (x, b) = Self::exchanges(p);
                x * c.together(b)
            }
            None => p.together / self.share(),
        }
    }

    /// Wall ns a pair's interactions take on one CPU shared with `m` − 1 other such pairs (the
    /// crowding the calibration measured with 3 and 6 pairs on one CPU; m = 1: [`Self::local_ns`]).
    pub fn crowded_ns(&self, p: &Pair, m: f64) -> f64 {
        match &self.curves {
            Some(c) if m > 1.0 => {
                let (x, b) = Self::exchanges(p);
                x * c.together_k(b, m)
            }
            _ => self.local_ns(p),
        }
    }

    /// Wall ns a pair's interactions take on one CPU shared with `m` − 1 other such pairs while
    /// another CPU runs pairs too ([`Curves::packed_k`], measured with 2 and 6 pairs on each of two
    /// CPUs); None without that measurement (then [`Self::crowded_ns`] × `parallel_ipc`).
    pub fn packed_ns(&self, p: &Pair, m: f64) -> Option<f64> {
        let c = self.curves.as_ref()?;
        let (x, b) = Self::exchanges(p);
        Some(x * c.packed_k(b, m, self.parallel_ipc.max(0.0))?)
    }

    /// CPU ns a pair's interactions took in a recorded run, which pins nothing. When the recording
    /// counted the hand-offs that crossed CPUs ([`crate::partition::Traffic::crossed_share`]): those at the
    /// cross-CPU price, the rest at the one-CPU price ([`Curves::recorded`]; the linear model: its
    /// busy cost apart and its cost together). Otherwise what Linux's
    /// placement of `k` such pairs costs here ([`Self::linux_ns`], the CPU time of its messages:
    /// a lone pair split over an idle CPU pays the cross-CPU wake-ups, many pairs kept together
    /// the crowded one-CPU cost), never less than the pair's cost on one CPU; without the curve
    /// (or on another number of CPUs), its cost on one CPU.
    pub fn recorded_ns(&self, p: &Pair, k: f64, cpus: usize) -> f64 {
        if let Some(c) = self.recorded {
            // the least favourable model: the recording read with the medians
            let m = HopModel {
                curves: Some(c),
                recorded: None,
                ..*self
            };
            return m.recorded_ns(p, k, cpus);
        }
        // what the recording saw: its hand-offs that crossed CPUs at the cross-CPU price, the rest
        // at the one-CPU price
        if let Some(f) = p.traffic.crossed_share() {
            return match &self.curves {
                Some(c) => {
                    let (x, b) = Self::exchanges(p);
                    x * c.recorded(b, f, k) + f * self.pages(p)
                }
                None => ((1.0 - f) * p.together + f * self.cost.busy_apart(&p.traffic)) / self.share(),
            };
        }
        let local = self.local_ns(p);
        self.linux_ns(p, k, cpus).map_or(local, |t| t.max(local))
    }

    /// CPU ns a pair's interactions take between two busy CPUs (both ends together).
    pub fn busy_ns(&self, p: &Pair) -> f64 {
        match &self.curves {
            Some(c) => {
                let (x, b) = Self::exchanges(p);
                x * c.busy(b) + self.pages(p)
            }
            None => self.cost.busy_apart(&p.traffic) / self.share(),
        }
    }

    /// Ns of CPU (all `cpus` CPUs' worth) a pair with both ends left to Linux takes, one of `k`
    /// such pairs: its exchanges at the time per exchange Linux's placement of k pairs took here
    /// ([`Curves::linux_k`], wall time of all of them) × the CPUs — the balance bound spreads it
    /// back over them — but never more than its CPU time between busy CPUs ([`Self::busy_ns`]): the
    /// measured pairs do nothing else, so one or two of them find idle CPUs at their hand-offs,
    /// while ends that also compute keep the CPUs busy. None without that curve, or on a machine
    /// of another number of CPUs.
    ///
    /// A lone pair (k < 1.5) whose recording counted the hand-offs that crossed CPUs
    /// ([`crate::partition::Traffic::crossed_share`]) costs what the recording saw instead
    /// ([`Curves::recorded_wall`]): Linux splits a lone pair in some runs and keeps it together in
    /// others (on this VM 4.7 or 35 µs per exchange of 1 KiB), so the calibration's median can land
    /// on either, while the recording is this program's own run under Linux's placement (the
    /// decision of `map run --learn` is made from it). Not capped at the CPU time between busy
    /// CPUs: the recording says how often the hand-offs crossed, and a lone pair has no other
    /// work beside it to keep the other CPU awake (the producer/consumer pair, whose ends compute,
    /// measured 0.11–0.12 s under Linux's placement where the cap gave 0.055 s).
    pub fn linux_ns(&self, p: &Pair, k: f64, cpus: usize) -> Option<f64> {
        let c = self.curves.as_ref()?;
        let (x, b) = Self::exchanges(p);
        if let Some(f) = p
            .traffic
            .crossed_share()
            .filter(|_| k < 1.5 && cpus == c.linux_cpus)
        {
            // the least favourable model prices the placement at the high ends of the curves:
            // Linux's side at no more than the medians (`recorded`) then
            let per = c.recorded_wall(b, f);
            let per = self.recorded.map_or(per, |r| per.min(r.recorded_wall(b, f)));
            return Some(x * per * cpus as f64 + f * self.pages(p));
        }
        let per = c.linux_k(b, k, cpus)?;
        Some((x * per * cpus as f64 + self.pages(p)).min(self.busy_ns(p)))
    }

    /// Wall ns a pair split over two PUs keeps each of them occupied, one of `k` such pairs.
    pub fn split_ns(&self, p: &Pair, k: usize) -> f64 {
        match &self.curves {
            Some(c) => {
                let (x, b) = Self::exchanges(p);
                x * c.split_k(b, k) + self.pages(p)
            }
            None if k <= 1 => {
                (self.cost.busy_apart(&p.traffic) + 2.0 * p.traffic.round_trips * self.cost.ns_per_idle_wake)
                    / self.share()
            }
            None => self.cost.busy_apart(&p.traffic) / 2.0 / self.share(),
        }
    }
}

/// How many pairs `pairs` are, counted by their exchanges: (Σx)² / Σx² — k equal pairs count k,
/// one busy pair beside a few messages ≈ 1 (at least 1).
fn pair_count<'a>(pairs: impl Iterator<Item = &'a Pair>) -> f64 {
    let (sum, squares) = pairs.fold((0.0, 0.0), |(s, q), p| {
        let x = HopModel::exchanges(p).0;
        (s + x, q + x * x)
    });
    if squares > 0.0 {
        (sum * sum / squares).max(1.0)
    } else {
        1.0
    }
}

/// A prediction and its three bounds (ns).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct Prediction {
    pub ns: f64,
    /// The busiest PU with its pinned nodes.
    pub load_ns: f64,
    /// Everything spread evenly over the PUs (the paper's T with N = PUs).
    #[serde(default)]
    pub balance_ns: f64,
    /// The longest free node by itself.
    pub chain_ns: f64,
}

/// Predicted run time (ns) of `w` with node i on PU `pu_of[i]`, every node pinned.
pub fn predict(w: &Weights, topo: &Topology, pu_of: &[usize], m: &HopModel) -> f64 {
    bounds(w, topo, pu_of, &[], m).ns
}

/// The prediction with its bounds; `free[i]` marks a node Linux balances over every PU (missing
/// entries: pinned).
pub fn bounds(w: &Weights, topo: &Topology, pu_of: &[usize], free: &[bool], m: &HopModel) -> Prediction {
    let npu = topo.len().max(1);
    let pu = |i: usize| pu_of.get(i).copied().unwrap_or(0).min(npu - 1);
    // On one PU a node Linux balances over every PU is on that PU, as a pinned node is: its pairs
    // cannot be split. (Until the twenty-second session a free pair was priced between busy CPUs
    // there, so on `--topology pack:1` the affinity placement, which leaves a lone cluster free,
    // and Linux's were predicted 10.763 ms where the same nodes pinned on PU 0 gave 8.607 ms.)
    let is_free = |i: usize| npu > 1 && free.get(i).copied().unwrap_or(false);
    let hops = |a: usize, b: usize| if topo.is_empty() { 0 } else { topo.hops(a, b) };
    // compute: the recorded CPU time less half of what each pair's messages took in the recorded
    // run, on each end. The recording pinned nothing, so they took what Linux's placement of that
    // many pairs costs. (Until 2026-11-26 the one-CPU cost was taken off: a lone pair that Linux
    // split while it was recorded kept ≈ 7 µs of cross-CPU wake-ups per exchange and end as
    // "compute", which the placement then put on one CPU, so the model predicted the placement
    // slower (0.71–0.76×) for the pair it makes ≈ 4× faster, and kept Linux's placement; the
    // same phantom compute on every end of 16 pairs hid the placement's real cost there.)
    let recorded_pairs = pair_count(w.detail.iter());
    let mut net = w.work.clone();
    let mut talks = vec![false; w.len()];
    for p in &w.detail {
        let half = m.recorded_ns(p, recorded_pairs, npu) / 2.0;
        net[p.i] -= half;
        net[p.j] -= half;
        talks[p.i] = true;
        talks[p.j] = true;
    }
    for x in &mut net {
        *x = x.max(0.0);
    }
    let active_node = |i: usize| net[i] > 0.0 || talks[i];
    let mut active = vec![0usize; npu];
    let mut free_active = 0usize;
    for i in 0..w.len() {
        if !active_node(i) {
            continue;
        }
        if is_free(i) {
            free_active += 1;
        } else {
            active[pu(i)] += 1;
        }
    }
    let busy_pus = (active.iter().filter(|&&a| a > 0).count() + free_active).min(npu);
    let parallel = busy_pus >= 2;
    let stretch = m.stretch(parallel);
    let ipc = if parallel && m.curves.is_some() {
        m.parallel_ipc.max(0.0)
    } else {
        1.0
    };
    // pairs with both ends pinned on one PU: how many share each PU's run queue, counted by
    // their exchanges (k equal pairs count k; one busy pair beside a few messages counts ≈ 1)
    let mut sum = vec![0.0; npu];
    let mut squares = vec![0.0; npu];
    for p in &w.detail {
        if !is_free(p.i) && !is_free(p.j) && pu(p.i) == pu(p.j) {
            let x = HopModel::exchanges(p).0;
            sum[pu(p.i)] += x;
            squares[pu(p.i)] += x * x;
        }
    }
    let crowd: Vec<f64> = sum
        .iter()
        .zip(&squares)
        .map(|(&s, &q)| if q > 0.0 { (s * s / q).max(1.0) } else { 1.0 })
        .collect();
    // pairs with both ends left to Linux: how many, counted by their exchanges as above
    let linux_pairs = pair_count(w.detail.iter().filter(|p| is_free(p.i) && is_free(p.j)));
    let mut load = vec![0.0; npu];
    let mut own = vec![0.0; w.len()];
    for i in 0..w.len() {
        if is_free(i) {
            own[i] += net[i] * stretch;
        } else {
            load[pu(i)] += net[i] * stretch;
        }
    }
    for p in &w.detail {
        let (a, b) = (pu(p.i), pu(p.j));
        match (is_free(p.i), is_free(p.j)) {
            // several CPUs busy: the packed pairs as measured when there is the measurement
            (false, false) if a == b => {
                load[a] += match (parallel, m.packed_ns(p, crowd[a])) {
                    (true, Some(t)) => t,
                    _ => m.crowded_ns(p, crowd[a]) * ipc,
                }
            }
            (false, false) => {
                let k = active[a].min(active[b]).max(1);
                let t = m.split_ns(p, k) * m.factor(hops(a, b));
                load[a] += t;
                load[b] += t;
            }
            (fi, fj) => {
                let cost = match (fi && fj).then(|| m.linux_ns(p, linux_pairs, npu)) {
                    Some(Some(t)) => t,
                    _ => m.busy_ns(p),
                };
                let half = cost / 2.0;
                for (end, f, at) in [(p.i, fi, a), (p.j, fj, b)] {
                    if f {
                        own[end] += half;
                    } else {
                        load[at] += half;
                    }
                }
            }
        }
    }
    let load_ns = load.iter().copied().fold(0.0, f64::max);
    let chain_ns = own.iter().copied().fold(0.0, f64::max);
    // the paper's T(s) over the PUs' pinned loads and the free nodes, each a cluster of its own
    let units: Vec<f64> = load.iter().chain(&own).copied().filter(|&x| x > 0.0).collect();
    let balance_ns = if free_active > 0 && !units.is_empty() {
        let n = units.len();
        let w = Weights::from_detail((0..n as u32).collect(), units, Vec::new());
        Partition::flat((0..n).map(|k| vec![k]).collect(), 0)
            .quality(&w, Some(npu))
            .t
    } else {
        0.0
    };
    Prediction {
        ns: load_ns.max(balance_ns).max(chain_ns),
        load_ns,
        balance_ns,
        chain_ns,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::partition::{Pair, Traffic};
    use proptest::prelude::*;

    fn model() -> HopModel {
        HopModel::linear(
            CostModel {
                ns_per_event: 10.0,
                ns_per_byte: 0.0,
                local_ns_per_event: 4.0,
                local_ns_per_byte: 0.0,
                ns_per_idle_wake: 100.0,
                ns_per_shared_page: 0.0,
            },
            0.5,
            2,
        )
    }

    fn curved() -> HopModel {
        let mut m = model();
        m.curves = Some(Curves {
            bytes: [257.0, 2049.0, 8193.0, 32769.0, 131073.0],
            together: [7000.0, 7100.0, 8000.0, 14000.0, 40000.0],
            alone: [80000.0, 82000.0, 90000.0, 110000.0, 160000.0],
            split: [25000.0, 26000.0, 30000.0, 40000.0, 70000.0],
            busy: [23000.0, 24000.0, 28000.0, 56000.0, 120000.0],
            crowd: None,
            spread: None,
            linux: None,
            linux_cpus: 0,
            packed: None,
            alone_cpu: None,
        });
        m.stretch_one = 1.1;
        m.stretch_parallel = 1.6;
        m.parallel_ipc = 1.4;
        m
    }

    /// `k` ping-pong pairs of `rounds` exchanges of `size` bytes (and a byte back), nodes 2p, 2p + 1.
    fn pairs_of(k: usize, rounds: f64, size: f64, c: &CostModel) -> Weights {
        let t = Traffic {
            bytes: rounds * (size + 1.0),
            events: 2.0 * rounds,
            round_trips: rounds,
            pages: 0.0,
            wakeups: 2.0 * rounds,
            across: None,
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

    fn pairs(k: usize, rounds: f64, c: &CostModel) -> Weights {
        pairs_of(k, rounds, 0.0, c)
    }

    #[test]
    fn a_lone_pair_across_cpus_pays_the_idle_wake_ups() {
        let topo = Topology::synthetic("pack:1 core:2").expect("topology");
        let m = model();
        let w = pairs(1, 10.0, &m.cost);
        // together: 10 exchanges × 2 events × 4 ns
        assert_eq!(predict(&w, &topo, &[0, 0], &m), 80.0);
        // apart and alone: 10 × (2 × 10 + 2 × 100) on both CPUs' timelines
        let b = bounds(&w, &topo, &[0, 1], &[], &m);
        assert_eq!((b.load_ns, b.chain_ns, b.ns), (2200.0, 0.0, 2200.0));
    }

    #[test]
    fn busy_cpus_pay_no_idle_wake_up() {
        let topo = Topology::synthetic("pack:1 core:2").expect("topology");
        let m = model();
        let w = pairs(2, 10.0, &m.cost);
        // each pair split: each CPU does half of both pairs' exchanges, never idle
        let b = bounds(&w, &topo, &[0, 1, 0, 1], &[], &m);
        assert_eq!(b.ns, 200.0);
        // each pair on its own CPU
        assert_eq!(predict(&w, &topo, &[0, 0, 1, 1], &m), 80.0);
        // across packages (3 hops, one beyond the calibrated 2) costs half as much again; each PU
        // has one end of one pair, so each hand-off wakes an idle PU
        let big = Topology::synthetic("pack:2 core:2").expect("topology");
        let b = bounds(&w, &big, &[0, 2, 1, 3], &[], &m);
        assert_eq!(b.ns, 1.5 * 2200.0);
    }

    #[test]
    fn a_busier_machine_share_stretches_the_time() {
        let topo = Topology::synthetic("pack:1 core:2").expect("topology");
        let mut m = model();
        m.cpu_share = 0.5;
        let w = pairs(1, 10.0, &m.cost);
        assert_eq!(predict(&w, &topo, &[0, 0], &m), 160.0);
    }

    #[test]
    fn the_curves_reproduce_the_arrangements_they_were_measured_in() {
        let topo = Topology::synthetic("pack:1 core:2").expect("topology");
        let m = curved();
        let c = m.curves.expect("curves");
        let size = 8192.0;
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
        // one pair on one CPU: the one-CPU time per exchange
        let w = pairs_of(1, 100.0, size, &m.cost);
        assert!(close(predict(&w, &topo, &[0, 0], &m), 100.0 * 8000.0));
        // a pair on each CPU: both busy, each pair slowed by parallel_ipc
        let w2 = pairs_of(2, 100.0, size, &m.cost);
        assert!(close(
            predict(&w2, &topo, &[0, 0, 1, 1], &m),
            1.4 * 100.0 * 8000.0
        ));
        // one pair split: the lone pair's time; two split pairs: the two-pair time each
        assert!(close(
            predict(&w, &topo, &[0, 1], &m),
            100.0 * c.alone(size + 1.0)
        ));
        assert!(close(
            predict(&w2, &topo, &[0, 1, 0, 1], &m),
            2.0 * 100.0 * c.split(size + 1.0)
        ));
    }

    #[test]
    fn recorded_cpu_time_holds_the_messages_once() {
        let topo = Topology::synthetic("pack:1 core:2").expect("topology");
        let m = curved();
        let mut w = pairs_of(1, 100.0, 8192.0, &m.cost);
        let local = m.local_ns(&w.detail[0]);
        // each end computed 1 ms besides its half of the messages
        w.work = vec![1e6 + local / 2.0, 1e6 + local / 2.0];
        let t = predict(&w, &topo, &[0, 0], &m);
        assert!((t - (2e6 * 1.1 + local)).abs() < 1e-6 * t, "{t}");
        // apart: both CPUs compute, at the parallel stretch
        let b = bounds(&w, &topo, &[0, 1], &[], &m);
        assert!(b.ns >= 1e6 * 1.6);
    }

    #[test]
    fn free_nodes_spread_but_a_thread_runs_on_one_cpu() {
        let topo = Topology::synthetic("pack:1 core:2").expect("topology");
        let m = curved();
        // three free nodes computing 3, 1 and 1 ms, no messages
        let w = Weights::from_detail(vec![1, 2, 3], vec![3e6, 1e6, 1e6], Vec::new());
        let b = bounds(&w, &topo, &[0, 0, 0], &[true; 3], &m);
        assert_eq!(b.chain_ns, 3e6 * 1.6);
        assert_eq!(b.balance_ns, 5e6 * 1.6 / 2.0);
        assert_eq!(b.ns, b.chain_ns);
        // five equal ones: the balance bound
        let w = Weights::from_detail(vec![1, 2, 3, 4, 5], vec![1e6; 5], Vec::new());
        let b = bounds(&w, &topo, &[0; 5], &[true; 5], &m);
        assert_eq!(b.ns, 5e6 * 1.6 / 2.0);
    }

    #[test]
    fn issue_12_pairs_sharing_a_cpu_pay_the_measured_crowding() {
        let topo = Topology::synthetic("pack:1 core:2").expect("topology");
        let mut m = curved();
        let mut c = m.curves.expect("curves");
        c.crowd = Some([[9000.0; POINTS], [10000.0; POINTS]]);
        m.curves = Some(c);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
        let size = 8192.0;
        // 6 pairs on CPU 0: each exchange at the 6-pair time
        let w = pairs_of(6, 100.0, size, &m.cost);
        assert!(close(predict(&w, &topo, &[0; 12], &m), 600.0 * 10000.0));
        // 3 pairs on each CPU: the 3-pair time, slowed by parallel_ipc
        let pus: Vec<usize> = (0..12).map(|i| (i / 2) % 2).collect();
        assert!(close(predict(&w, &topo, &pus, &m), 1.4 * 300.0 * 9000.0));
        // one pair beside a pair of a single exchange: hardly crowded
        let mut w2 = pairs_of(2, 100.0, size, &m.cost);
        w2.detail[1].traffic.events = 2.0;
        w2.detail[1].traffic.bytes = size + 1.0;
        let t = predict(&w2, &topo, &[0; 4], &m);
        assert!(t < 101.0 * 8100.0 && t > 101.0 * 8000.0, "{t}");
    }

    /// [`curved`] with Linux's placement of 1, 2, 6 and 12 pairs measured on 2 CPUs: a lone pair
    /// split (90 µs per exchange, dear), many kept together.
    fn with_linux() -> HopModel {
        let mut m = curved();
        let mut c = m.curves.expect("curves");
        c.linux = Some([
            [90000.0; POINTS],
            [9000.0; POINTS],
            [5000.0; POINTS],
            [4500.0; POINTS],
        ]);
        c.linux_cpus = 2;
        m.curves = Some(c);
        m
    }

    #[test]
    fn issue_12_pairs_left_to_linux_cost_what_linux_took_here_at_most_the_busy_cpu_time() {
        let two = Topology::synthetic("pack:1 core:2").expect("topology");
        let m = with_linux();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
        let size = 8192.0;
        // a lone free pair: Linux's measured 90 µs per exchange × 2 CPUs is more than its CPU
        // time between busy CPUs: that (the model before the curve)
        let w = pairs_of(1, 100.0, size, &m.cost);
        let busy = m.busy_ns(&w.detail[0]);
        assert!(close(m.linux_ns(&w.detail[0], 1.0, 2).expect("curve"), busy));
        assert!(close(bounds(&w, &two, &[0, 0], &[true; 2], &m).ns, busy / 2.0));
        // 12 free pairs: all their exchanges at Linux's 12-pair time
        let w12 = pairs_of(12, 100.0, size, &m.cost);
        let t = bounds(&w12, &two, &[0; 24], &[true; 24], &m).ns;
        assert!(close(t, 1200.0 * 4500.0), "{t}");
        // the curve describes 2 CPUs: on 4 the busy CPU time as before
        let four = Topology::synthetic("pack:1 core:4").expect("topology");
        assert_eq!(m.linux_ns(&w12.detail[0], 12.0, 4), None);
        let t4 = bounds(&w12, &four, &[0; 24], &[true; 24], &m).ns;
        assert!(close(t4, 12.0 * busy / 4.0), "{t4}");
        // a pair with one end pinned is not left to Linux: its CPU between busy CPUs
        let one_pinned = bounds(&w, &two, &[0, 0], &[true, false], &m);
        assert!(close(one_pinned.ns, busy / 2.0), "{one_pinned:?}");
    }

    #[test]
    fn issue_12_pairs_packed_on_both_cpus_cost_what_was_measured() {
        let topo = Topology::synthetic("pack:1 core:2").expect("topology");
        let mut m = curved();
        let size = 8192.0;
        let w = pairs_of(4, 100.0, size, &m.cost);
        let pus = [0, 0, 1, 1, 0, 0, 1, 1];
        // not measured: the one-CPU crowding of two pairs × the one-pair-per-CPU slowdown
        let c = m.curves.expect("curves");
        let composed = 200.0 * c.together_k(size + 1.0, 2.0) * 1.4;
        let t = predict(&w, &topo, &pus, &m);
        assert!((t - composed).abs() < 1e-6 * composed, "{t} {composed}");
        // measured: 2 pairs on each CPU took 9 µs per exchange of all four, so each CPU 18 µs per
        // exchange of its two
        let mut c = c;
        c.packed = Some([[9000.0; POINTS], [12000.0; POINTS]]);
        m.curves = Some(c);
        let t = predict(&w, &topo, &pus, &m);
        assert!((t - 200.0 * 18000.0).abs() < 1e-6 * t, "{t}");
        // two pairs on one CPU, the other idle: the one-CPU crowding, as before
        let t1 = predict(&w, &topo, &[0; 8], &m);
        let four = 400.0 * c.together_k(size + 1.0, 4.0);
        assert!((t1 - four).abs() < 1e-6 * four, "{t1} {four}");
    }

    #[test]
    fn issue_12_a_recorded_cpu_time_loses_what_linuxs_placement_of_its_pairs_took() {
        let two = Topology::synthetic("pack:1 core:2").expect("topology");
        let m = with_linux();
        let mut w = pairs_of(1, 100.0, 8192.0, &m.cost);
        // recorded under Linux's placement: each end's CPU time is half of the pair's CPU time
        // between busy CPUs (the cross-CPU wake-ups), and nothing else
        let busy = m.busy_ns(&w.detail[0]);
        w.work = vec![busy / 2.0; 2];
        // together on one CPU: the one-CPU time of the exchanges only, no "compute" left over
        let local = m.local_ns(&w.detail[0]);
        let t = predict(&w, &two, &[0, 0], &m);
        assert!((t - local).abs() < 1e-6 * local, "{t} {local}");
        // 1 ms of real compute on each end stays
        w.work = vec![busy / 2.0 + 1e6; 2];
        let t = predict(&w, &two, &[0, 0], &m);
        assert!((t - (local + 2e6 * 1.1)).abs() < 1e-6 * t, "{t}");
        // on a machine of another number of CPUs the curve says nothing: the one-CPU cost is
        // taken off, as before
        let four = Topology::synthetic("pack:1 core:4").expect("topology");
        w.work = vec![local / 2.0; 2];
        let t4 = predict(&w, &four, &[0, 0], &m);
        assert!((t4 - local).abs() < 1e-6 * local, "{t4} {local}");
    }

    /// [`with_linux`] whose median lone pair left to Linux was kept together (as good as pinned:
    /// the mode the calibration's median landed on in one 2026-11-27 run), with the lone split
    /// pair's CPU time measured.
    fn lone_pair_kept_together() -> HopModel {
        let mut m = with_linux();
        let mut c = m.curves.expect("curves");
        let together = c.together;
        c.linux.as_mut().expect("linux curve")[0] = together;
        c.alone_cpu = Some([30000.0, 31000.0, 34000.0, 45000.0, 70000.0]);
        m.curves = Some(c);
        m
    }

    #[test]
    fn issue_12_a_recording_that_counted_its_crossings_prices_its_messages_with_them() {
        let two = Topology::synthetic("pack:1 core:2").expect("topology");
        let m = lone_pair_kept_together();
        let c = m.curves.expect("curves");
        let size = 8192.0;
        let b = size + 1.0;
        let mut w = pairs_of(1, 100.0, size, &m.cost);
        // the recording saw 40 % of the hand-offs cross CPUs, and the ends did nothing else
        w.detail[0].traffic.across = Some(0.4 * w.detail[0].traffic.wakeups);
        let cpu = 100.0 * (0.6 * c.together(b) + 0.4 * 34000.0);
        w.work = vec![cpu / 2.0; 2];
        // pinned together: the one-CPU time of the exchanges, no phantom compute (the
        // calibration's median alone would have left the crossings' CPU time as compute)
        let local = m.local_ns(&w.detail[0]);
        let t = predict(&w, &two, &[0, 0], &m);
        assert!((t - local).abs() < 1e-6 * local, "{t} {local}");
        let mut blind = w.clone();
        blind.detail[0].traffic.across = None;
        assert!(predict(&blind, &two, &[0, 0], &m) > 1.2 * local);
        // left to Linux: what the recording saw (40 % at the lone split pair's wall time), not
        // capped at the pair's CPU time between busy CPUs
        let want = 100.0 * c.recorded_wall(b, 0.4);
        assert!(want * 2.0 > m.busy_ns(&w.detail[0]), "the cap would have bitten");
        let free = bounds(&w, &two, &[0, 0], &[true; 2], &m).ns;
        assert!((free - want).abs() < 1e-6 * want, "{free} {want}");
        assert!(
            free > 1.1 * local,
            "the placement is worth it: {free} against {local}"
        );
        // at the ends least favourable to the placement (the curves' high ends), Linux's side of a
        // recorded lone pair stays at the medians, not at the high ends
        let mut spread_m = m;
        let mut high = c;
        high.together = high.together.map(|v| 2.0 * v);
        high.alone = high.alone.map(|v| 2.0 * v);
        spread_m.spread = Some(CurveSpread {
            low: c,
            high,
            rounds: 6,
        });
        let lf = spread_m.least_favourable().expect("a spread");
        assert_eq!(
            lf.linux_ns(&w.detail[0], 1.0, 2),
            m.linux_ns(&w.detail[0], 1.0, 2)
        );
        // a recording that saw no crossing: Linux kept it together, nothing to gain
        w.detail[0].traffic.across = Some(0.0);
        w.work = vec![local / 2.0; 2];
        let free = bounds(&w, &two, &[0, 0], &[true; 2], &m).ns;
        assert!((free - local).abs() < 1e-6 * local, "{free} {local}");
        // several pairs: the calibration's Linux curve as before, the crossings priced between
        // busy CPUs
        let w2 = pairs_of(2, 100.0, size, &m.cost);
        let mut w2c = w2.clone();
        for p in &mut w2c.detail {
            p.traffic.across = Some(0.5 * p.traffic.wakeups);
        }
        assert_eq!(
            bounds(&w2, &two, &[0; 4], &[true; 4], &m).ns,
            bounds(&w2c, &two, &[0; 4], &[true; 4], &m).ns
        );
        assert!((m.recorded_ns(&w2c.detail[0], 2.0, 2) - 100.0 * c.recorded(b, 0.5, 2.0)).abs() < 1e-6);
        assert!(
            (c.recorded(b, 0.5, 2.0) - (0.5 * c.together(b) + 0.5 * c.busy(b))).abs() < 1e-9,
            "two pairs: crossings between busy CPUs"
        );
    }

    proptest! {
        #[test]
        fn more_work_never_shortens_the_run(
            work in proptest::collection::vec(0.0f64..1e7, 4),
            extra in 0.0f64..1e7,
            node in 0usize..4,
            pus in proptest::collection::vec(0usize..2, 4),
            free in proptest::collection::vec(proptest::bool::ANY, 4),
        ) {
            let topo = Topology::synthetic("pack:1 core:2").expect("topology");
            let m = curved();
            let mut w = pairs_of(2, 50.0, 4096.0, &m.cost);
            w.work = work.clone();
            let before = bounds(&w, &topo, &pus, &free, &m).ns;
            w.work[node] += extra;
            let after = bounds(&w, &topo, &pus, &free, &m).ns;
            prop_assert!(after >= before - 1e-6 * before.max(1.0), "{before} → {after}");
        }

        #[test]
        fn the_run_is_never_shorter_than_its_compute_spread_over_the_cpus(
            work in proptest::collection::vec(0.0f64..1e7, 4),
            pus in proptest::collection::vec(0usize..2, 4),
            free in proptest::collection::vec(proptest::bool::ANY, 4),
        ) {
            let topo = Topology::synthetic("pack:1 core:2").expect("topology");
            let m = curved();
            let w = Weights::from_detail((0..4).collect(), work.clone(), Vec::new());
            let t = bounds(&w, &topo, &pus, &free, &m).ns;
            let floor = work.iter().sum::<f64>() * m.stretch_one.min(m.stretch_parallel) / 2.0;
            prop_assert!(t >= floor - 1e-6 * floor.max(1.0));
        }
    }
}
