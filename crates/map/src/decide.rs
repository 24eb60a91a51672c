//! Whether `map run` applies a placement: only when its own model predicts that the placement beats
//! Linux's by more than a stated margin.
//!
//! The model is the projection's ([`crate::project::bounds`]). Linux's placement, as that model
//! sees it, is the graph with every node free (Linux balances each thread over the machine's CPUs):
//! what `map run` gets by pinning nothing, which costs nothing (the program is only spawned and
//! waited for). The placement's prediction is the same model with the placement's pins. The
//! placement is applied when Linux's predicted time exceeds the placement's by more than
//! [`MARGIN`] (linux / placed > 1 + margin); otherwise nothing is pinned and Linux places every
//! thread. A placement that pins nothing is Linux's already. `force` applies the placement whatever
//! the model says (the decision records what the model predicted).
//!
//! Since h-map4 the model also carries the calibration's spread (each measurement's median's 95 %
//! interval over its rounds, [`HopModel::spread`]), and the decision reports the same comparison
//! at the ends least favourable to the placement — Linux's own placement of pairs at the low end
//! of its interval, every arrangement the placement pins at the high end — as
//! `least_favourable_speedup`, flagged when the placement is more than [`TOLERANCE`] slower there.
//! It is evidence for the reader, not a gate: tried as one, it threw away real gains under load
//! (docs/BENCHMARKS.md, h-map4).
//!
//! The quiet run of 2026-11-26 08:50 (docs/BENCHMARKS.md) is why: the affinity rule pinned the
//! producer and the consumer of `multios-prodcons` to one CPU (eq. 1 charges a pair apart an idle
//! wake-up per hand-off), while the projection, which charges pairs with free ends between busy
//! CPUs, predicted that placement 0.179 s against 0.110 s left to Linux — and it ran 1.18× slower.

use crate::graph::Graph;
use crate::partition::{greedy, Weights};
use crate::place::{self, Placement, Strategy};
use crate::project::{self, HopModel};
use crate::run::{self, Rule};
use crate::topology::Topology;
use serde::{Deserialize, Serialize};

/// The placement must be predicted this much faster than Linux's (linux / placed > 1 + MARGIN):
/// the model's error on the 2-CPU runs is about 10 % at the median (docs/BENCHMARKS.md, #12), and a
/// placement that wins by less than its own error is a coin toss that pins threads for nothing.
pub const MARGIN: f64 = 0.10;

/// With the calibration's spread ([`HopModel::spread`]) the decision also reports the model's
/// ratio at the ends of its measurements least favourable to the placement
/// ([`HopModel::least_favourable`]) and says when it is below 1 / (1 + TOLERANCE) (the placement
/// more than 3 % slower there: the predicted gain is within the calibration's own spread). It
/// does not decide: as a gate, with `bench map`'s 3-round first half on a loaded VM, it kept
/// Linux's placement in 8 of the 9 IPC rows the margin would have placed, where the margin's
/// placements had run 0.32–1.02× Linux's time in the run before.
pub const TOLERANCE: f64 = 0.03;

/// Which placement a run gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Choice {
    /// The placement's pins are applied.
    Placement,
    /// Linux's placement: nothing pinned.
    Linux,
}

/// What was chosen and why: the model's time of both placements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    pub choice: Choice,
    /// Applied because the caller forced it, whatever the model predicted.
    pub forced: bool,
    /// Nodes the placement pins, of all its nodes.
    pub pinned: usize,
    pub nodes: usize,
    /// The model's time of the placement (s) …
    pub placed_s: f64,
    /// … and of Linux's placement (every node free, s).
    pub linux_s: f64,
    /// linux_s / placed_s: how much faster the model predicts the placement (below 1: slower).
    pub predicted_speedup: f64,
    /// The placement is applied only when `predicted_speedup` > 1 + margin.
    pub margin: f64,
    /// The same ratio at the ends of the calibration's measurements least favourable to the
    /// placement (since h-map4, reported, not deciding; below 1 / (1 + [`TOLERANCE`]) the
    /// predicted gain is within the calibration's own spread; None: no spread in the model).
    #[serde(default)]
    pub least_favourable_speedup: Option<f64>,
    /// The same in words.
    pub reason: String,
}

impl Decision {
    /// Whether the placement's pins are applied.
    pub fn applies(&self) -> bool {
        self.choice == Choice::Placement
    }
}

/// Decides between `placement` (of the graph whose weights are `w`) and Linux's placement with
/// `model` on `topo`.
pub fn decide(
    w: &Weights,
    topo: &Topology,
    placement: &Placement,
    model: &HopModel,
    margin: f64,
    force: bool,
) -> Decision {
    let pus: Vec<usize> = placement.nodes.iter().map(|n| n.pu).collect();
    let free: Vec<bool> = placement.nodes.iter().map(|n| !n.pinned).collect();
    let pinned = free.iter().filter(|f| !**f).count();
    let all_free = vec![true; pus.len()];
    let times = |m: &HopModel| {
        (
            project::bounds(w, topo, &pus, &free, m).ns / 1e9,
            project::bounds(w, topo, &pus, &all_free, m).ns / 1e9,
        )
    };
    let (placed_s, linux_s) = times(model);
    // a graph the model sees no time in (no work, no traffic) gains nothing from a placement
    let speedup = |placed: f64, linux: f64| if placed > 0.0 { linux / placed } else { 1.0 };
    let predicted_speedup = speedup(placed_s, linux_s);
    let least_favourable_speedup = model.least_favourable().map(|m| {
        let (p, l) = times(&m);
        speedup(p, l)
    });
    let margin = if margin.is_finite() {
        margin.max(0.0)
    } else {
        MARGIN
    };
    let times = format!(
        "the model predicts {placed_s:.3} s with the placement and {linux_s:.3} s under Linux's placement ({predicted_speedup:.2}×)"
    );
    let wins = predicted_speedup > 1.0 + margin;
    // the calibration's rounds least favourable to the placement: still no more than 3 % slower?
    // Reported, not deciding (measured: as a gate it kept Linux's placement in 8 of the 9 loaded
    // rows the margin would have placed; the margin's placements had run 0.32–1.02× before;
    // docs/BENCHMARKS.md, h-map4)
    let holds = least_favourable_speedup.is_none_or(|x| x >= 1.0 / (1.0 + TOLERANCE));
    let edges = match least_favourable_speedup {
        Some(x) => format!(
            "; at the ends of the calibration's rounds least favourable to it {x:.2}×{}",
            if holds {
                ""
            } else {
                " (more than 3 % slower there: the gain is within the calibration's own spread)"
            }
        ),
        None => String::new(),
    };
    let (choice, reason) = if pinned == 0 {
        (
            Choice::Linux,
            format!("the placement pins nothing: Linux places every thread; {times}"),
        )
    } else if force {
        (
            Choice::Placement,
            format!(
                "forced: {pinned} of {} threads pinned whatever the model says; {times}{}{edges}",
                pus.len(),
                if wins {
                    ""
                } else {
                    ", not more than the margin faster"
                }
            ),
        )
    } else if wins {
        (
            Choice::Placement,
            format!(
                "{pinned} of {} threads pinned: {times}, more than the {:.0} % margin faster{edges}",
                pus.len(),
                100.0 * margin
            ),
        )
    } else {
        (
            Choice::Linux,
            format!(
                "Linux's placement kept (nothing pinned): {times}, not more than the {:.0} % margin faster{edges}",
                100.0 * margin
            ),
        )
    };
    Decision {
        choice,
        forced: force && pinned > 0,
        pinned,
        nodes: pus.len(),
        placed_s,
        linux_s,
        predicted_speedup,
        margin,
        least_favourable_speedup,
        reason,
    }
}

/// A placement of a graph and whether a run applies it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub placement: Placement,
    pub decision: Decision,
}

impl Plan {
    /// The rules a run applies: the placement's when the decision applies it, none otherwise (no
    /// rule: every thread keeps the CPUs it inherits, Linux's placement; `map run` then only
    /// spawns the program and waits).
    pub fn rules(&self) -> Vec<Rule> {
        if self.decision.applies() {
            run::rules(&self.placement)
        } else {
            Vec::new()
        }
    }

    /// Each node's PU and whether it is free, as the run applies them (every node free when
    /// Linux's placement was kept).
    pub fn applied(&self) -> (Vec<usize>, Vec<bool>) {
        let apply = self.decision.applies();
        self.placement
            .nodes
            .iter()
            .map(|n| (n.pu, !apply || !n.pinned))
            .unzip()
    }
}

/// How a plan is made.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    pub strategy: Strategy,
    /// Seed of the partitioner's random node order.
    pub seed: u64,
    /// See [`MARGIN`].
    pub margin: f64,
    /// Apply the placement whatever the model predicts.
    pub force: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            strategy: Strategy::Affinity,
            seed: 1,
            margin: MARGIN,
            force: false,
        }
    }
}

/// Partitions `g` (the overlapping greedy partitioner), places it with `o.strategy` on `topo` and
/// decides with `model` whether a run applies the placement.
pub fn plan(g: &Graph, topo: &Topology, model: &HopModel, o: Options) -> Plan {
    let w = Weights::new(g, &model.cost);
    let part = greedy::partition(&w, Some(topo.len()), o.seed).partition;
    let placement = place::place(g, &part, topo, &model.cost, o.strategy);
    let decision = decide(&w, topo, &placement, model, o.margin, o.force);
    Plan { placement, decision }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{Edge, EdgeKind, Node};
    use crate::partition::CostModel;

    fn model() -> HopModel {
        HopModel::linear(CostModel::default(), 0.5, 2)
    }

    fn two_cpus() -> Topology {
        Topology::synthetic("pack:1 core:2 pu:1").expect("topology")
    }

    fn edge(from: u32, to: u32, kind: EdgeKind, bytes: u64, count: u64) -> Edge {
        Edge::new(from, to, kind, bytes, count)
    }

    /// A producer and a consumer thread that each compute `work_ms` and hand `wakes` items back and
    /// forth over futexes (each wake-up a hand-off), as `multios-prodcons` records.
    fn prodcons(work_ms: u64, wakes: u64) -> Graph {
        let mut a = Node::process(10, "prodcons", work_ms * 1_000_000);
        let mut b = Node::process(11, "prodcons", work_ms * 1_000_000);
        a.tgid = 10;
        b.tgid = 10;
        Graph::new(
            vec![a, b],
            vec![
                edge(10, 11, EdgeKind::Futex, 0, wakes),
                edge(11, 10, EdgeKind::Futex, 0, wakes),
                edge(10, 11, EdgeKind::Wakeup, 0, wakes),
                edge(11, 10, EdgeKind::Wakeup, 0, wakes),
            ],
        )
    }

    /// `pairs` pairs of processes that only exchange `rounds` messages of `size` bytes each way
    /// (the IPC microbenchmark's graph), each message waking its reader.
    fn pipe_pairs(pairs: u32, size: u64, rounds: u64) -> Graph {
        let mut nodes = Vec::new();
        let mut edges = Vec::new();
        for p in 0..pairs {
            let (a, b) = (2 + 2 * p, 3 + 2 * p);
            nodes.push(Node::process(a, "ipc", 0));
            nodes.push(Node::process(b, "ipc", 0));
            edges.push(edge(a, b, EdgeKind::Pipe, size * rounds, rounds));
            edges.push(edge(b, a, EdgeKind::Pipe, rounds, rounds));
            edges.push(edge(a, b, EdgeKind::Wakeup, 0, rounds));
            edges.push(edge(b, a, EdgeKind::Wakeup, 0, rounds));
        }
        Graph::new(nodes, edges)
    }

    #[test]
    fn issue_12_a_placement_the_model_predicts_slower_than_linux_pins_nothing() {
        // The affinity rule pins the two computing threads together (apart, eq. 1 charges every
        // hand-off an idle wake-up); the projection sees both CPUs busy computing and predicts
        // the pinned pair slower than Linux's placement: nothing is pinned.
        let g = prodcons(60, 2000);
        let plan = plan(&g, &two_cpus(), &model(), Options::default());
        assert!(
            plan.placement.nodes.iter().all(|n| n.pinned),
            "the affinity rule pins the pair: {:?}",
            plan.placement
        );
        let d = &plan.decision;
        assert_eq!(d.choice, Choice::Linux, "{d:?}");
        assert!(d.linux_s < d.placed_s, "{d:?}");
        assert!(!d.forced && d.pinned == 2 && d.nodes == 2, "{d:?}");
        assert!(plan.rules().is_empty(), "nothing pinned: {:?}", plan.rules());
        let (_, free) = plan.applied();
        assert_eq!(free, [true, true]);
        assert!(d.reason.contains("Linux's placement kept"), "{}", d.reason);
    }

    #[test]
    fn issue_12_pipe_pairs_are_placed() {
        // pairs that only exchange messages: each pair on one CPU, far faster by the model
        let g = pipe_pairs(2, 4096, 2000);
        let plan = plan(&g, &two_cpus(), &model(), Options::default());
        let d = &plan.decision;
        assert_eq!(d.choice, Choice::Placement, "{d:?}");
        assert!(d.predicted_speedup > 1.0 + MARGIN, "{d:?}");
        assert_eq!(d.pinned, 4, "{d:?}");
        let rules = plan.rules();
        assert_eq!(rules.len(), 4);
        assert!(rules.iter().all(|r| r.cpus.len() == 1), "{rules:?}");
        // each pair's two ends on one CPU, the two pairs on different CPUs
        let cpu = |k: usize| rules[k].cpus[0];
        assert_eq!(cpu(0), cpu(1));
        assert_eq!(cpu(2), cpu(3));
        assert_ne!(cpu(0), cpu(2));
    }

    #[test]
    fn issue_12_forcing_applies_a_placement_the_model_predicts_slower() {
        let g = prodcons(60, 2000);
        let o = Options {
            force: true,
            ..Options::default()
        };
        let plan = plan(&g, &two_cpus(), &model(), o);
        let d = &plan.decision;
        assert_eq!(d.choice, Choice::Placement, "{d:?}");
        assert!(d.forced && d.predicted_speedup < 1.0, "{d:?}");
        assert_eq!(plan.rules().len(), 2);
        assert!(d.reason.starts_with("forced"), "{}", d.reason);
    }

    #[test]
    fn issue_12_the_margin_decides_a_close_call() {
        let g = pipe_pairs(2, 4096, 2000);
        let topo = two_cpus();
        let w = Weights::new(&g, &model().cost);
        let p = plan(&g, &topo, &model(), Options::default()).placement;
        let s = decide(&w, &topo, &p, &model(), MARGIN, false).predicted_speedup;
        // a margin just under the predicted gain applies it, one just over keeps Linux's
        assert!(decide(&w, &topo, &p, &model(), s - 1.0 - 1e-6, false).applies());
        assert!(!decide(&w, &topo, &p, &model(), s - 1.0 + 1e-6, false).applies());
    }

    /// The model `multios bench map` calibrated on the quiet VM (2026-11-26 08:50, rounded; its
    /// Linux curve from that run's Linux rows at 2–32 processes).
    fn measured() -> HopModel {
        use crate::project::{Curves, POINTS};
        let mut m = model();
        let row = |v: [f64; POINTS]| v.map(|x| x * 1e3);
        m.curves = Some(Curves {
            bytes: [257.0, 2049.0, 8193.0, 32769.0, 61441.0],
            together: row([8.25, 8.27, 8.83, 16.01, 23.10]),
            alone: row([64.99, 66.11, 70.21, 89.93, 105.29]),
            split: row([29.89, 31.17, 31.17, 39.18, 46.73]),
            busy: row([24.81, 25.47, 27.20, 40.39, 52.93]),
            crowd: Some([
                row([9.00, 9.24, 9.64, 16.18, 23.95]),
                row([11.18, 11.42, 12.18, 19.72, 27.68]),
            ]),
            spread: Some([
                row([13.09, 13.09, 13.30, 19.99, 26.75]),
                row([10.48, 10.93, 11.06, 18.85, 27.43]),
            ]),
            linux: Some([
                row([40.6, 40.6, 40.6, 60.0, 124.2]),
                row([7.08, 7.08, 7.08, 12.0, 18.25]),
                row([5.5, 5.9, 7.0, 12.0, 15.6]),
                row([5.8, 6.0, 7.4, 12.5, 15.6]),
            ]),
            linux_cpus: 2,
            packed: None,
            alone_cpu: None,
        });
        m.stretch_parallel = 1.02;
        m.parallel_ipc = 1.09;
        m
    }

    #[test]
    fn issue_12_many_pipe_pairs_linux_keeps_together_are_left_to_linux() {
        // 16 pairs (the benchmark's 32 processes, 1 KiB): the placement puts 8 pairs on each CPU;
        // Linux's own placement of that many pairs, measured, keeps them together too (every CPU
        // busy, a partner is woken on its waker's CPU): no gain predicted, nothing pinned
        let topo = two_cpus();
        let m = measured();
        let many = plan(&pipe_pairs(16, 1024, 2000), &topo, &m, Options::default());
        assert_eq!(many.decision.choice, Choice::Linux, "{:?}", many.decision);
        assert!(many.decision.pinned == 32, "{:?}", many.decision);
        // one pair: Linux splits it over the two CPUs; together it is faster: placed
        let one = plan(&pipe_pairs(1, 1024, 2000), &topo, &m, Options::default());
        assert_eq!(one.decision.choice, Choice::Placement, "{:?}", one.decision);
        // two pairs, which Linux stacked on one CPU here: a pair on each CPU is placed
        let two = plan(&pipe_pairs(2, 1024, 2000), &topo, &m, Options::default());
        assert_eq!(two.decision.choice, Choice::Placement, "{:?}", two.decision);
    }

    /// [`pipe_pairs`] as a recording sees them: the recording pins nothing, so each end's CPU time
    /// is its half of what an exchange cost in CPU under Linux's placement (`cpu_us`, both ends).
    fn recorded_pairs(pairs: u32, size: u64, rounds: u64, cpu_us: f64) -> Graph {
        let mut g = pipe_pairs(pairs, size, rounds);
        for n in &mut g.nodes {
            n.cpu_ns = (cpu_us * 1e3 / 2.0 * rounds as f64) as u64;
        }
        g
    }

    #[test]
    fn issue_12_a_lone_pair_linux_split_while_recorded_is_placed() {
        // The 11:38 quiet run: Linux split the lone pair at every size (52–100 % of the exchanges),
        // and its recording's ends each held half of ≈ 22–25 µs of CPU per exchange (cross-CPU
        // wake-ups). The model took only the one-CPU cost (≈ 8 µs) off that, kept the rest as
        // compute, put both ends' "compute" on one CPU and predicted the placement 0.71–0.76×
        // Linux's: nothing was pinned. The recorded messages now cost what Linux's placement of
        // one pair costs in CPU: the placement is predicted well faster and applied.
        let g = recorded_pairs(1, 1024, 2000, 24.0);
        let plan = plan(&g, &two_cpus(), &measured(), Options::default());
        let d = &plan.decision;
        assert_eq!(d.choice, Choice::Placement, "{d:?}");
        assert!(d.predicted_speedup > 1.3, "{d:?}");
        let rules = plan.rules();
        assert_eq!(rules.len(), 2, "{rules:?}");
        assert!(
            rules.iter().all(|r| r.cpus.len() == 1 && r.cpus == rules[0].cpus),
            "{rules:?}"
        );
    }

    /// [`measured`] with the packed arrangements (2 and 6 pairs on each CPU, each pair together):
    /// the 6-per-CPU time is Linux's 12-pair time ÷ `linux_over_packed`.
    fn measured_packed(linux_over_packed: f64) -> HopModel {
        let mut m = measured();
        let mut c = m.curves.expect("curves");
        let linux12 = c.linux.expect("linux")[3];
        c.packed = Some([
            [4.6, 4.7, 4.9, 8.5, 12.5].map(|x| x * 1e3),
            linux12.map(|x| x / linux_over_packed),
        ]);
        m.curves = Some(c);
        m
    }

    #[test]
    fn issue_12_sixteen_pairs_of_64_kib_go_where_the_calibration_measured_them_faster() {
        // The 11:38 quiet run's 32 × 64 KiB row: Linux kept its 16 pairs together and even (split
        // 3 %, busiest CPU 2 % over its share), the model kept Linux's placement, and the row was
        // Linux's placement against itself (1.095 [1.031, 1.176]: docs/BENCHMARKS.md, h-map3).
        // The recording's ends hold half of Linux's CPU per exchange (both CPUs busy: 2 × its wall
        // time per exchange of all pairs). The placement of many pairs is now priced by the packed
        // arrangement, measured in the same calibration rounds as Linux's 12 pairs, so the decision
        // is the measured comparison of the two, extended from 12 to 16 pairs.
        let topo = two_cpus();
        let g = recorded_pairs(16, 65536, 2000, 2.0 * 16.0);
        // Linux's 12 pairs as fast as 6 on each CPU (the quiet VM): no gain, nothing pinned
        let even = plan(&g, &topo, &measured_packed(1.0), Options::default());
        assert_eq!(even.decision.choice, Choice::Linux, "{:?}", even.decision);
        assert_eq!(even.decision.pinned, 32, "{:?}", even.decision);
        assert!(
            even.decision.predicted_speedup < 1.0 + MARGIN,
            "{:?}",
            even.decision
        );
        // Linux's 12 pairs 1.5× slower (it stacked them: the loaded runs, busiest CPU 18–50 % over
        // its share): placed, 8 pairs on each CPU
        let stacked = plan(&g, &topo, &measured_packed(1.5), Options::default());
        assert_eq!(
            stacked.decision.choice,
            Choice::Placement,
            "{:?}",
            stacked.decision
        );
        let rules = stacked.rules();
        let on = |cpu: u32| rules.iter().filter(|r| r.cpus == [cpu]).count();
        assert_eq!((on(0), on(1)), (16, 16), "{rules:?}");
    }

    /// `m` with a calibration spread: every curve × `low` and × `high` at the two ends.
    fn with_spread(m: HopModel, low: f64, high: f64) -> HopModel {
        use crate::project::{CurveSpread, Curves};
        let c = m.curves.expect("curves");
        let scale = |f: f64| {
            let r = |v: [f64; crate::project::POINTS]| v.map(|x| x * f);
            let mut out: Curves = c;
            out.together = r(c.together);
            out.alone = r(c.alone);
            out.split = r(c.split);
            out.busy = r(c.busy);
            out.crowd = c.crowd.map(|k| k.map(r));
            out.spread = c.spread.map(|k| k.map(r));
            out.linux = c.linux.map(|k| k.map(r));
            out.packed = c.packed.map(|k| k.map(r));
            out
        };
        HopModel {
            spread: Some(CurveSpread {
                low: scale(low),
                high: scale(high),
                rounds: 3,
            }),
            ..m
        }
    }

    #[test]
    fn issue_12_a_gain_within_the_calibrations_own_spread_is_reported_not_decided() {
        // 16 pairs of 64 KiB, the calibration's medians 1.2× in favour of the packed placement
        // (the margin passed), its rounds spread ±15 %: at the ends least favourable to the
        // placement it is more than 3 % slower — reported and said, the margin decides
        let topo = two_cpus();
        let g = recorded_pairs(16, 65536, 2000, 2.0 * 16.0);
        let wide = plan(
            &g,
            &topo,
            &with_spread(measured_packed(1.2), 0.85, 1.15),
            Options::default(),
        );
        let d = &wide.decision;
        assert!(d.predicted_speedup > 1.0 + MARGIN, "{d:?}");
        let lf = d.least_favourable_speedup.expect("spread");
        assert!(lf < 1.0 / (1.0 + TOLERANCE), "{d:?}");
        assert_eq!(d.choice, Choice::Placement, "{d:?}");
        assert!(
            d.reason.contains("least favourable") && d.reason.contains("within the calibration's own spread"),
            "{}",
            d.reason
        );
        // measured tightly (±1 %): the least favourable ends still faster, nothing flagged
        let tight = plan(
            &g,
            &topo,
            &with_spread(measured_packed(1.2), 0.99, 1.01),
            Options::default(),
        );
        let t = &tight.decision;
        assert!(
            t.least_favourable_speedup.is_some_and(|x| x > 1.0 + MARGIN),
            "{t:?}"
        );
        assert!(!t.reason.contains("own spread"), "{}", t.reason);
        // without a spread (a model written before): nothing reported
        let before = plan(&g, &topo, &measured_packed(1.2), Options::default());
        assert_eq!(before.decision.least_favourable_speedup, None);
        assert!(!before.decision.reason.contains("least favourable"));
    }

    #[test]
    fn issue_12_a_lone_pair_linux_split_in_every_round_is_still_placed() {
        // the lone pair's gain (Linux splits it: its exchanges cost their CPU between busy CPUs,
        // ≈ 25 µs, against ≈ 8 together; the model predicts 1.52×) is beyond a ±10 % spread
        // (1.24× at the least favourable ends): placed
        let g = recorded_pairs(1, 1024, 2000, 24.0);
        let plan = plan(
            &g,
            &two_cpus(),
            &with_spread(measured(), 0.9, 1.1),
            Options::default(),
        );
        let d = &plan.decision;
        assert_eq!(d.choice, Choice::Placement, "{d:?}");
        assert!(d.least_favourable_speedup.is_some_and(|x| x > 1.2), "{d:?}");
        // a calibration round in which Linux kept the lone pair together (its low end the one-CPU
        // time): pinning it together is Linux's best round, not slower — still placed, and the
        // recording (24 µs of CPU per exchange: split in that run) is read with the medians
        let mut m = with_spread(measured(), 1.0, 1.0);
        if let Some(s) = m.spread.as_mut() {
            let mut linux = s.low.linux.expect("linux");
            linux[0] = s.low.together;
            s.low.linux = Some(linux);
        }
        let plan = super::plan(&g, &two_cpus(), &m, Options::default());
        let d = &plan.decision;
        assert_eq!(d.choice, Choice::Placement, "{d:?}");
        assert!(
            d.least_favourable_speedup
                .is_some_and(|x| (1.0 / (1.0 + TOLERANCE)..1.1).contains(&x)),
            "{d:?}"
        );
    }

    #[test]
    fn issue_12_a_placement_that_pins_nothing_is_linuxs() {
        // one process talking to nobody: free, nothing to decide
        let g = Graph::new(vec![Node::process(7, "sh", 1_000_000)], Vec::new());
        let o = Options {
            force: true,
            ..Options::default()
        };
        let plan = plan(&g, &two_cpus(), &model(), o);
        assert_eq!(plan.decision.choice, Choice::Linux);
        assert!(!plan.decision.forced && plan.rules().is_empty());
        assert!((plan.decision.predicted_speedup - 1.0).abs() < 1e-12);
    }
}
