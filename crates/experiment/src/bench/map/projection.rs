//! The projection to described machines (16, 64 and 128 cores): two graphs placed by the three
//! strategies and scored by HOP_BYTE and the calibrated model —
//! - **ipc**: the IPC benchmark's pairs (no work besides the messages: the model puts each pair on
//!   one core, so its HOP_BYTE is 0);
//! - **stencil**: a halo exchange of one rank per core on a 2-D grid (16 × cores/16), each rank with
//!   1 s of work and a message to each neighbour per step — work that must spread, so the
//!   mapping's HOP_BYTE measures how near it keeps neighbours. Ranks are numbered in a shuffled
//!   order (as processes appear, not as the grid is laid out), so tree order alone does not help.
//!
//! Only the model is exercised: this machine has two CPUs, one hop apart.

use super::{ipc::bench_graph, Context, MapBenchError};
use multios_map::partition::{greedy, Weights};
use multios_map::place::{self, Strategy};
use multios_map::{project, Edge, EdgeKind, Graph, Node, Topology};
use serde::Serialize;

#[derive(Debug, Clone, Serialize)]
pub struct Projection {
    pub topology: String,
    pub workload: String,
    pub procs: usize,
    pub strategy: String,
    pub hop_byte: f64,
    /// HOP_BYTE / the TreeMatch-style baseline's (≤ 1.05 is the target for affinity).
    pub hop_byte_vs_treematch: f64,
    /// The model's run time, ms.
    pub predicted_ms: f64,
}

/// A 2-D halo exchange on a `cols` × `rows` grid, rank ids shuffled by `seed`.
pub fn stencil_graph(cols: usize, rows: usize, steps: u64, seed: u64) -> Graph {
    let n = cols * rows;
    let mut ids: Vec<u32> = (0..n as u32).map(|k| 1000 + k).collect();
    // Fisher–Yates with a xorshift generator: the same order for the same seed
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for k in (1..n).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ids.swap(k, (x % (k as u64 + 1)) as usize);
    }
    let nodes = ids
        .iter()
        .map(|&id| Node::process(id, "rank", 1_000_000_000))
        .collect();
    let mut edges = Vec::new();
    let at = |c: usize, r: usize| ids[r * cols + c];
    for r in 0..rows {
        for c in 0..cols {
            let mut link = |a: u32, b: u32| {
                for (from, to) in [(a, b), (b, a)] {
                    edges.push(Edge {
                        from,
                        to,
                        kind: EdgeKind::Unix,
                        bytes: 64 * 1024 * steps,
                        count: steps,
                        across: None,
                    });
                    edges.push(Edge {
                        from,
                        to,
                        kind: EdgeKind::Wakeup,
                        bytes: 0,
                        count: steps,
                        across: None,
                    });
                }
            };
            if c + 1 < cols {
                link(at(c, r), at(c + 1, r));
            }
            if r + 1 < rows {
                link(at(c, r), at(c, r + 1));
            }
        }
    }
    Graph::new(nodes, edges)
}

pub fn rows(
    ctx: &Context,
    ipc_procs: usize,
    size: usize,
    rounds: u64,
) -> Result<Vec<Projection>, MapBenchError> {
    let mut out = Vec::new();
    for spec in [
        "pack:1 core:16 pu:1",
        "pack:2 core:32 pu:1",
        "pack:2 core:64 pu:1",
    ] {
        let topo = Topology::synthetic(spec)?;
        let p = topo.len();
        let workloads = [
            ("ipc", ipc_procs, bench_graph(ipc_procs, size, rounds)),
            ("ipc", p, bench_graph(p, size, rounds)),
            ("stencil", p, stencil_graph(16, p / 16, 1000, 7)),
        ];
        for (name, procs, g) in workloads {
            let w = Weights::new(&g, &ctx.hop.cost);
            let part = greedy::partition(&w, Some(p), 1).partition;
            let ps: Vec<_> = Strategy::ALL
                .iter()
                .map(|&s| place::place(&g, &part, &topo, &ctx.hop.cost, s))
                .collect();
            let tm = ps
                .iter()
                .find(|x| x.strategy == Strategy::Treematch)
                .map_or(0.0, |x| x.costs.hop_byte);
            for x in ps {
                let pu: Vec<usize> = x.nodes.iter().map(|n| n.pu).collect();
                let free: Vec<bool> = x.nodes.iter().map(|n| !n.pinned).collect();
                out.push(Projection {
                    topology: spec.into(),
                    workload: name.into(),
                    procs,
                    strategy: x.strategy.name().into(),
                    hop_byte: x.costs.hop_byte,
                    hop_byte_vs_treematch: if tm > 0.0 { x.costs.hop_byte / tm } else { 1.0 },
                    predicted_ms: project::bounds(&w, &topo, &pu, &free, &ctx.hop).ns / 1e6,
                });
            }
        }
    }
    Ok(out)
}
