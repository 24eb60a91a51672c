//! Issue #12: `map partition` was roughly cubic in the number of nodes (every candidate move was a
//! full evaluation of T on a cloned state). The greedy partitioner now scores candidates with an
//! incremental evaluator; these tests hold it to `Partition::quality` after random sequences of
//! moves, replications and merges, and partition a graph of 2000 nodes (which took many minutes
//! before; not timed here, docs/BENCHMARKS.md has the times).

use multios_map::partition::flat::Flat;
use multios_map::partition::{greedy, Pair, Partition, Traffic, Weights};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};

fn close(a: f64, b: f64, scale: f64) -> bool {
    (a - b).abs() <= 1e-9 * scale.max(1.0)
}

fn weights() -> impl Strategy<Value = Weights> {
    (2usize..14).prop_flat_map(|n| {
        (
            proptest::collection::vec(prop_oneof![Just(0.0), 0.0f64..1e6], n),
            proptest::collection::vec((0..n, 0..n, 0.0f64..1e6, 0.0f64..1.5), 0..40),
        )
            .prop_map(move |(work, pairs)| {
                let detail = pairs
                    .into_iter()
                    .map(|(i, j, apart, f)| Pair {
                        i,
                        j,
                        apart,
                        together: apart * f,
                        traffic: Traffic::default(),
                    })
                    .collect();
                Weights::from_detail((0..n as u32).collect(), work, detail)
            })
    })
}

/// One step: (kind, node or cluster, target), the numbers taken modulo what exists.
fn ops() -> impl Strategy<Value = Vec<(u8, usize, usize)>> {
    proptest::collection::vec((0u8..3, 0usize..64, 0usize..64), 0..40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn issue_12_the_incremental_t_is_the_full_evaluation(w in weights(), cores in 1usize..6, steps in ops()) {
        let full = |s: &Flat| s.partition(0).quality(&w, Some(cores)).t;
        let mut s = Flat::singletons(&w, Some(cores));
        prop_assert!(close(s.t(), full(&s), full(&s)));
        for (kind, x, y) in steps {
            let before = full(&s);
            let slots = s.slots();
            let predicted = match kind {
                0 => {
                    // move node x out of one of its clusters to a neighbouring one
                    let v = x % w.len();
                    let h = s.holders(v).to_vec();
                    let from = h[y % h.len()];
                    let targets = s.move_deltas(v, from);
                    if targets.is_empty() {
                        continue;
                    }
                    let (to, dt) = targets[y % targets.len()];
                    s.apply_move(v, from, to);
                    dt
                }
                1 => {
                    // replicate node x into any cluster
                    let v = x % w.len();
                    let c = slots[y % slots.len()];
                    if s.holders(v).contains(&c) {
                        continue;
                    }
                    let dt = s.add_delta(v, c);
                    s.apply_add(v, c);
                    dt
                }
                _ => {
                    // merge a cluster into one it shares a pair with
                    let a = slots[x % slots.len()];
                    let into = s.merge_deltas(a);
                    if into.is_empty() {
                        continue;
                    }
                    let m = into[y % into.len()];
                    s.apply_merge(a, m.into);
                    m.dt
                }
            };
            let after = full(&s);
            let scale = before.abs().max(after.abs());
            prop_assert!(close(s.t(), after, scale), "kept T {} != full T {after}", s.t());
            prop_assert!(close(predicted, after - before, scale), "predicted ΔT {predicted} != {}", after - before);
            prop_assert_eq!(s.k(), s.partition(0).clusters.len());
        }
    }
}

#[test]
fn issue_12_a_2000_node_graph_is_partitioned() {
    // random: 4 pairs per node with random costs, as a thousand-thread program's recording gives
    let n = 2000;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(12);
    let work: Vec<f64> = (0..n).map(|_| rng.gen_range(1e6..1e8)).collect();
    let mut pairs = Vec::new();
    for i in 0..n {
        for _ in 0..4 {
            pairs.push((i, rng.gen_range(0..n), rng.gen_range(1e5..1e7)));
        }
    }
    let w = Weights::from_pairs((0..n as u32).collect(), work, pairs);
    let cores = Some(8);
    let out = greedy::partition(&w, cores, 1);
    for v in 0..n {
        assert!(
            out.partition.clusters.iter().any(|c| c.members.contains(&v)),
            "node {v} uncovered"
        );
    }
    let q = out.partition.quality(&w, cores);
    assert_eq!(q, out.quality);
    let one = Partition::flat(vec![(0..n).collect()], 0).quality(&w, cores);
    let alone = Partition::flat((0..n).map(|i| vec![i]).collect(), 0).quality(&w, cores);
    assert!(q.t <= one.t && q.t <= alone.t, "{q:?} {one:?} {alone:?}");
    assert_eq!(out.levels.last().map(|l| l.quality.n), Some(1));
}
