//! Issue #12: the partitioner and the placements on known small graphs, and property tests: every
//! node is covered, T is what eq. 1–4 say, the greedy answer is never worse than one cluster or
//! singletons (both are states it considers).
// The reference computation indexes clusters by number as the equations do.
#![allow(clippy::needless_range_loop)]

use multios_map::partition::{greedy, louvain, CostModel, Partition, Weights};
use multios_map::place::{self, costs, Strategy as Placing};
use multios_map::{Edge, EdgeKind, Graph, Node, Topology};
use proptest::prelude::*;

/// T recomputed from the equations, independently of `Partition::quality`.
fn t_by_the_equations(p: &Partition, w: &Weights, cores: usize) -> (f64, f64, f64, f64) {
    let k = p.clusters.len();
    let inside = |c: usize, v: usize| p.clusters[c].members.contains(&v);
    let mut wu = vec![0.0; k];
    let mut su = vec![0.0; k];
    for c in 0..k {
        for &m in &p.clusters[c].members {
            wu[c] += w.work[m];
        }
    }
    for pair in &w.detail {
        let (i, j, x) = (pair.i, pair.j, pair.apart);
        let shared: Vec<usize> = (0..k).filter(|&c| inside(c, i) && inside(c, j)).collect();
        if shared.is_empty() {
            for c in 0..k {
                if inside(c, i) {
                    su[c] += x;
                }
                if inside(c, j) {
                    su[c] += x;
                }
            }
        }
        for c in shared {
            wu[c] += pair.together;
        }
    }
    let (mut seq, mut par) = (0.0, 0.0);
    for c in 0..k {
        let same_depth = p
            .clusters
            .iter()
            .filter(|o| o.depth == p.clusters[c].depth)
            .count();
        if same_depth == 1 {
            seq += wu[c];
        } else {
            par += wu[c];
        }
    }
    let wc: f64 = su.iter().sum();
    let n = k.min(cores).max(1) as f64;
    (seq + par / n + wc / n, seq, par, wc)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0)
}

fn weights() -> impl Strategy<Value = Weights> {
    (2usize..12).prop_flat_map(|n| {
        (
            proptest::collection::vec(0.0f64..1e6, n),
            proptest::collection::vec((0..n, 0..n, 0.0f64..1e6), 0..30),
        )
            .prop_map(move |(work, pairs)| Weights::from_pairs((0..n as u32).collect(), work, pairs))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn issue_12_greedy_covers_every_node_and_t_follows_the_equations(w in weights(), cores in 1usize..8, seed in 0u64..4) {
        let out = greedy::partition(&w, Some(cores), seed);
        for v in 0..w.len() {
            prop_assert!(out.partition.clusters.iter().any(|c| c.members.contains(&v)), "node {v} uncovered");
        }
        let (t, seq, par, wc) = t_by_the_equations(&out.partition, &w, cores);
        prop_assert!(close(out.quality.t, t), "T {} vs {}", out.quality.t, t);
        prop_assert!(close(out.quality.w_seq, seq) && close(out.quality.w_par, par) && close(out.quality.w_c, wc));
        let one = Partition::flat(vec![(0..w.len()).collect()], 0).quality(&w, Some(cores));
        let single = Partition::flat((0..w.len()).map(|i| vec![i]).collect(), 0).quality(&w, Some(cores));
        prop_assert!(out.quality.t <= one.t + 1e-6 && out.quality.t <= single.t + 1e-6);
    }

    #[test]
    fn issue_12_louvain_is_a_partition(w in weights(), seed in 0u64..4) {
        let p = louvain::partition(&w, seed);
        let mut seen = vec![0; w.len()];
        for c in &p.clusters {
            for &m in &c.members {
                seen[m] += 1;
            }
        }
        prop_assert!(seen.iter().all(|&s| s == 1), "{seen:?}");
    }

    #[test]
    fn issue_12_t_of_any_overlapping_state(w in weights(), groups in proptest::collection::vec(proptest::collection::vec(0usize..12, 1..5), 1..5), depths in proptest::collection::vec(0u32..2, 5)) {
        let mut p = Partition::flat(
            groups.into_iter().map(|g| g.into_iter().filter(|&m| m < w.len()).collect()).collect(), 0);
        for (c, d) in p.clusters.iter_mut().zip(depths) {
            c.depth = d;
        }
        let q = p.quality(&w, None);
        let (t, _, _, _) = t_by_the_equations(&p, &w, usize::MAX);
        prop_assert!(close(q.t, t), "T {} vs {}", q.t, t);
    }
}

fn node(id: u32, cpu_ms: u64) -> Node {
    Node::process(id, &format!("p{id}"), cpu_ms * 1_000_000)
}

fn pipe(from: u32, to: u32, bytes: u64) -> Edge {
    Edge {
        from,
        to,
        kind: EdgeKind::Pipe,
        bytes,
        count: bytes / 4096,
        across: None,
    }
}

/// The paper's IPC microbenchmark shape: 8 processes, pairs (0,1), (2,3), … exchanging heavily.
fn pairs_graph() -> Graph {
    let nodes = (0..8).map(|i| node(100 + i, 1)).collect();
    let edges = (0..4)
        .flat_map(|k| {
            [
                pipe(100 + 2 * k, 101 + 2 * k, 1 << 30),
                pipe(101 + 2 * k, 100 + 2 * k, 1 << 20),
            ]
        })
        .collect();
    Graph::new(nodes, edges)
}

#[test]
fn issue_12_partition_finds_the_pairs() {
    let g = pairs_graph();
    let cost = CostModel::default();
    let w = Weights::new(&g, &cost);
    let out = greedy::partition(&w, Some(4), 3);
    let mut groups: Vec<Vec<usize>> = out.partition.clusters.iter().map(|c| c.members.clone()).collect();
    groups.sort();
    assert_eq!(
        groups,
        vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]],
        "levels {:?}",
        out.levels
    );
    let l = louvain::partition(&w, 3);
    assert_eq!(l.clusters.len(), 4);
}

#[test]
fn issue_12_affinity_beats_round_robin_on_hop_bytes() {
    let g = pairs_graph();
    let cost = CostModel::default();
    let w = Weights::new(&g, &cost);
    let topo = Topology::synthetic("pack:2 core:8 pu:1").expect("topology");
    let part = greedy::partition(&w, Some(topo.len()), 1).partition;
    let aff = place::place(&g, &part, &topo, &cost, Placing::Affinity);
    let rr = place::place(&g, &part, &topo, &cost, Placing::RoundRobin);
    let tm = place::place(&g, &part, &topo, &cost, Placing::Treematch);
    assert!(
        aff.costs.hop_byte <= tm.costs.hop_byte * 1.05,
        "affinity {:?} treematch {:?}",
        aff.costs,
        tm.costs
    );
    assert!(aff.costs.hop_byte <= rr.costs.hop_byte);
    // recomputing the scores from the placement gives the same numbers
    let pu: Vec<usize> = aff.nodes.iter().map(|n| n.pu).collect();
    assert_eq!(costs(&w, &topo, &pu), aff.costs);
    // every pair sits in one package
    for k in 0..4 {
        let (a, b) = (aff.nodes[2 * k].pu, aff.nodes[2 * k + 1].pu);
        assert_eq!(topo.pus[a].path[0], topo.pus[b].path[0]);
    }
}

#[test]
fn issue_12_placement_exports() {
    let g = pairs_graph();
    let cost = CostModel::default();
    let topo = Topology::synthetic("pack:1 core:4").expect("topology");
    let part = greedy::partition(&Weights::new(&g, &cost), Some(4), 1).partition;
    let p = place::place(&g, &part, &topo, &cost, Placing::Affinity);
    let ts = multios_map::export::placement::taskset(&p);
    assert_eq!(ts.lines().filter(|l| l.starts_with("taskset -pc ")).count(), 8);
    let rf = multios_map::export::placement::rankfile(&p);
    assert!(rf.starts_with("rank 0=localhost slot="), "{rf}");
    assert_eq!(rf.lines().count(), 8);
    let cs = multios_map::export::placement::cpuset(&p);
    assert!(cs.contains("cpuset.cpus="));
    let dot = multios_map::export::graph::dot(&g, &[vec![100, 101]], &[(100, 0)]);
    assert!(dot.contains("subgraph cluster_0") && dot.contains("CPU 0"));
    let gml = multios_map::export::graph::graphml(&g, &[]);
    assert_eq!(gml.matches("<edge ").count(), g.edges.len());
    assert!(
        !gml.contains("<data key=\"across\">"),
        "written by hand: not known"
    );
    // a recorded wake-up edge carries its crossings in both renderings
    let mut gx = g.clone();
    let mut wake = Edge::new(100, 101, EdgeKind::Wakeup, 0, 40);
    wake.across = Some(30);
    gx.edges.push(wake);
    let gml = multios_map::export::graph::graphml(&gx, &[]);
    assert!(gml.contains("<data key=\"across\">30</data></edge>"), "{gml}");
    let dot = multios_map::export::graph::dot(&gx, &[], &[]);
    assert!(dot.contains("wakeup ×40 (30 across CPUs)"), "{dot}");
    let dir = std::env::temp_dir().join(format!("multios-map-pic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    for (name, svg) in [("g.svg", true), ("g.png", false)] {
        let pic = multios_map::export::picture::layout(&g, &[vec![100, 101]], &p, &cost, "pairs");
        multios_map::export::picture::write(pic, &dir.join(name), svg).expect("drawn");
    }
    let svg = std::fs::read_to_string(dir.join("g.svg")).expect("svg");
    assert!(
        svg.contains("<svg") && svg.contains("CPU") && svg.contains("cluster 0"),
        "{svg}"
    );
    let png = std::fs::read(dir.join("g.png")).expect("png");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let _ = std::fs::remove_dir_all(&dir);
}
