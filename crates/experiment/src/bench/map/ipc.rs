//! The IPC microbenchmark of seed 001 §III on pipes: pairs of processes exchanging messages under
//! Linux's default placement, round-robin pinning and `multios map run` (the affinity placement of a
//! recorded run), interleaved, with the model's prediction of the two pinned placements.

use super::{median, Context, MapBenchError};
use crate::crosslink::{self, Level};
use multios_map::decide::{self, Decision};
use multios_map::partition::Weights;
use multios_map::programs::{parse, OffIdeal};
use multios_map::project;
use multios_map::run::{self as maprun, Rule};
use multios_map::{record, Edge, EdgeKind, Graph, Node};
use multios_stats::Paired;
use serde::Serialize;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// One configuration, three placements: medians of the time per exchange.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub procs: usize,
    pub size: usize,
    pub linux_us: f64,
    pub round_robin_us: f64,
    pub map_us: f64,
    /// map / Linux per run (paired by repeat): median, interval, fastest / fastest.
    pub map_vs_linux: Paired,
    /// Linux against itself (A/A): a second run of Linux's placement in each repeat, ÷ the first
    /// (paired by repeat). The spread of one placement run twice on this row: a map/Linux ratio
    /// inside it is not a placement's effect (since h-map4).
    pub linux_vs_linux: Paired,
    pub round_robin_vs_linux: Paired,
    /// Where Linux put the pairs, as the program counted it: how far from the best placement of
    /// pairs (each on one CPU, never moved, spread evenly), each share the median over Linux's
    /// runs; the smallest and largest over those runs of the worst of the three; the same medians
    /// for map run. None when the program did not say (an older build). Where Linux's placement
    /// already was the best one, no placement can do better on this machine.
    pub linux_off: Option<OffIdeal>,
    pub linux_worst_range: (f64, f64),
    pub map_off: Option<OffIdeal>,
    /// The CPUs map run gave each process (root first; "0-1": free).
    pub map_cpus: Vec<String>,
    /// Whether map run applied its placement or kept Linux's, and the model's times of both.
    pub map_decision: Decision,
    /// map runs in which a CPU's pinned groups were released (other programs took the CPU).
    pub map_released_runs: usize,
    /// The cross-CPU level each repeat saw (`crosslink`; a repeat whose probes disagreed was run
    /// again, up to [`LEVEL_RETRIES`] times).
    pub levels: Vec<Level>,
    /// Each repeat's time per exchange (µs) under Linux's placement, round-robin and map run.
    pub linux_runs_us: Vec<f64>,
    /// The second Linux run of each repeat (the A/A side).
    pub linux_aa_runs_us: Vec<f64>,
    pub round_robin_runs_us: Vec<f64>,
    pub map_runs_us: Vec<f64>,
    /// The model's time per exchange for the round-robin and map placements …
    pub predicted_round_robin_us: f64,
    pub predicted_map_us: f64,
    /// … and for Linux's placement (every process free): with each repeat predicted by the
    /// calibration of the cross-CPU level it saw (`levels`), the median over the repeats.
    pub predicted_linux_us: f64,
    /// The same from the calibration fitted on every run whatever its level (the fit before the
    /// calibration was tagged by level) …
    pub predicted_pooled: Predicted,
    /// … from the calibration per level of the crossing arrangements only (`Arrangement::crosses`) …
    pub predicted_crossing: Predicted,
    /// … and from the calibration as a line in the round trip (`levels::at_round_trip`).
    pub predicted_linear: Predicted,
    /// The PU of each process (root first) under each placement, for the model.
    #[serde(skip_serializing)]
    pub rr_pu: Vec<usize>,
    #[serde(skip_serializing)]
    pub map_pu: Vec<usize>,
    /// Whether map run leaves each process free (Linux balances it).
    #[serde(skip_serializing)]
    pub map_free: Vec<bool>,
}

/// The model's time per exchange of a row under its three placements, µs.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Predicted {
    pub round_robin_us: f64,
    pub map_us: f64,
    pub linux_us: f64,
}

/// How many times a repeat whose runs saw different cross-CPU levels is run again before it is
/// kept anyway (marked `steady: false`).
pub const LEVEL_RETRIES: usize = 3;

/// The model's time per exchange of `r`'s configuration under round-robin, under map's placement
/// and under Linux's (every process free).
pub fn predict(ctx: &Context, r: &Row) -> (f64, f64, f64) {
    let rounds = 1000;
    let bw = Weights::new(&bench_graph(r.procs, r.size, rounds), &ctx.hop.cost);
    let per_ex = |pu: &[usize], free: &[bool]| {
        let pu: Vec<usize> = pu
            .iter()
            .copied()
            .chain(std::iter::repeat(0))
            .take(r.procs + 1)
            .collect();
        project::bounds(&bw, &ctx.here, &pu, free, &ctx.hop).ns
            / 1e3
            / (rounds as f64 * (r.procs / 2).max(1) as f64)
    };
    (
        per_ex(&r.rr_pu, &[]),
        per_ex(&r.map_pu, &r.map_free),
        per_ex(&r.map_pu, &vec![true; r.procs + 1]),
    )
}

/// The program's name as the kernel shows it (comm: 15 bytes).
fn comm() -> String {
    "multios-ipcbench".chars().take(15).collect()
}

/// µs per exchange and where the pairs ran (`procs` processes).
fn per_exchange(
    stdout: &str,
    ok: bool,
    what: &str,
    procs: usize,
) -> Result<(f64, Option<OffIdeal>), MapBenchError> {
    match parse(stdout) {
        Some(r) if ok && r.exchanges > 0 => Ok((
            r.wall_ns as f64 / 1e3 / r.exchanges as f64,
            r.off_ideal((procs / 2) as u64),
        )),
        _ => Err(MapBenchError::Program(format!(
            "{what}: failed or printed '{}'",
            stdout.trim()
        ))),
    }
}

/// Runs the program directly (Linux's placement): µs per exchange, where the pairs ran.
fn linux(
    prog: &Path,
    procs: usize,
    size: usize,
    rounds: u64,
) -> Result<(f64, Option<OffIdeal>), MapBenchError> {
    let out = Command::new(prog)
        .args([procs.to_string(), size.to_string(), rounds.to_string()])
        .output()
        .map_err(|e| MapBenchError::Program(e.to_string()))?;
    per_exchange(
        &String::from_utf8_lossy(&out.stdout),
        out.status.success(),
        "Linux run",
        procs,
    )
}

/// Runs it under `map run` with `rules`: µs per exchange, where the pairs ran.
fn placed(
    ctx: &Context,
    procs: usize,
    size: usize,
    rounds: u64,
    rules: &[Rule],
) -> Result<((f64, Option<OffIdeal>), maprun::RunReport), MapBenchError> {
    let out = ctx.workdir.join("ipc.out");
    let cmd = vec![
        "/bin/sh".to_string(),
        "-c".to_string(),
        format!(
            "exec {} {procs} {size} {rounds} > {}",
            ctx.ipcbench.display(),
            out.display()
        ),
    ];
    let rep = maprun::run(&cmd, rules, ctx.sweep)?;
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    Ok((
        per_exchange(&text, rep.exit_code == Some(0), "map run", procs)?,
        rep,
    ))
}

/// The medians of each share over the runs that said where their pairs ran (None if none did).
fn summarize(runs: &[Option<OffIdeal>]) -> Option<OffIdeal> {
    let said: Vec<&OffIdeal> = runs.iter().flatten().collect();
    if said.is_empty() {
        return None;
    }
    let med = |f: fn(&OffIdeal) -> f64| median(&said.iter().map(|o| f(o)).collect::<Vec<_>>());
    Some(OffIdeal {
        split: med(|o| o.split),
        moved: med(|o| o.moved),
        excess: med(|o| o.excess),
    })
}

/// Rules: the k-th process (root first) on `cpus[k]`.
fn rules(cpus: &[u32]) -> Vec<Rule> {
    cpus.iter()
        .enumerate()
        .map(|(k, &cpu)| Rule::pin(&comm(), k, cpu))
        .collect()
}

/// The benchmark's graph: root, then pairs (1,2), (3,4), … exchanging `rounds` messages of `size`
/// bytes and one-byte answers, each message waking its reader; no work besides (the processes only
/// communicate; what that costs is the model's).
pub fn bench_graph(procs: usize, size: usize, rounds: u64) -> Graph {
    let node = |id: u32| Node::process(id, &comm(), 0);
    let mut nodes = vec![node(1)];
    let mut edges = Vec::new();
    for k in 0..procs as u32 {
        nodes.push(node(2 + k));
    }
    let edge = |from, to, kind, bytes, count| Edge {
        from,
        to,
        kind,
        bytes,
        count,
        across: None,
    };
    for p in 0..(procs / 2) as u32 {
        let (a, b) = (2 + 2 * p, 3 + 2 * p);
        edges.push(edge(a, b, EdgeKind::Pipe, size as u64 * rounds, rounds));
        edges.push(edge(b, a, EdgeKind::Pipe, rounds, rounds));
        edges.push(edge(a, b, EdgeKind::Wakeup, 0, rounds));
        edges.push(edge(b, a, EdgeKind::Wakeup, 0, rounds));
    }
    Graph::new(nodes, edges)
}

/// What `map run` applies to one configuration: its rules, each process's CPUs (root first, as
/// shown) and PU index (for the model), and whether it applied its placement at all.
struct Learned {
    rules: Vec<Rule>,
    cpus: Vec<String>,
    pus: Vec<usize>,
    free: Vec<bool>,
    decision: Decision,
}

/// Records a run of the configuration as the rows run it (as many exchanges: `map run` decides
/// from the model's time of the whole recorded program, and a run of a tenth of the exchanges made
/// the parent's start-up look like most of it — the first run with the decision kept Linux's
/// placement for the lone pair that way), places it with the calibrated model as `map run` does.
fn learn(ctx: &Context, procs: usize, size: usize, rounds: u64) -> Result<Learned, MapBenchError> {
    let rec = record::record(&record::Options {
        command: vec![
            "/bin/sh".into(),
            "-c".into(),
            format!(
                "exec {} {procs} {size} {rounds} > /dev/null",
                ctx.ipcbench.display(),
            ),
        ],
        pid: None,
        duration: None,
        sample_every: Duration::from_millis(50),
        topology: None,
    })?;
    // placed as `map run` places it: the affinity placement, applied only when the model predicts
    // it faster than Linux's placement by more than the margin
    let plan = decide::plan(&rec.graph, &ctx.here, &ctx.hop, decide::Options::default());
    let apply = plan.decision.applies();
    let mut by_id: Vec<_> = plan.placement.nodes.iter().collect();
    by_id.sort_by_key(|n| n.id);
    let all: Vec<usize> = ctx.cpus.iter().map(|&c| c as usize).collect();
    let cpus = by_id
        .iter()
        .map(|n| {
            let cpus: Vec<usize> = if apply {
                n.cpus().iter().map(|&c| c as usize).collect()
            } else {
                all.clone()
            };
            multios_host::cpus::format_list(&cpus)
        })
        .collect();
    let pus = by_id.iter().map(|n| n.pu).collect();
    let free = by_id.iter().map(|n| !apply || !n.pinned).collect();
    Ok(Learned {
        rules: plan.rules(),
        cpus,
        pus,
        free,
        decision: plan.decision,
    })
}

/// All rows: for each configuration, `repeats` runs of each placement and a second run of Linux's
/// (the A/A side) in rotating order, then `between` (a round of the calibration, so that it sees
/// the conditions the rows saw).
pub fn rows(
    ctx: &Context,
    procs: &[usize],
    sizes: &[usize],
    rounds: u64,
    repeats: usize,
    progress: &mut dyn crate::progress::Progress,
    between: &mut dyn FnMut() -> Result<(), MapBenchError>,
) -> Result<Vec<Row>, MapBenchError> {
    progress.start(
        (procs.len() * sizes.len()) as u64,
        "IPC microbenchmark: Linux, round-robin, map run",
    );
    let mut rows = Vec::new();
    for &p in procs {
        for &size in sizes {
            let Learned {
                rules: map_rules,
                cpus: map_cpus,
                pus: map_pu,
                free: map_free,
                decision: map_decision,
            } = learn(ctx, p, size, rounds)?;
            let rr_cpus: Vec<u32> = (0..=p).map(|k| ctx.cpus[k % ctx.cpus.len()]).collect();
            let rr_rules = rules(&rr_cpus);
            let (mut l, mut aa, mut r, mut m) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let (mut l_split, mut m_split) = (Vec::new(), Vec::new());
            let mut released = 0usize;
            let mut levels = Vec::new();
            let mut link = crosslink::Link(ctx.cpus[0] as usize, ctx.cpus[1] as usize);
            for k in 0..repeats {
                // One repeat = the three placements and Linux's again, in rotating order, with the cross-CPU round
                // trip probed between them: a pipe pair that Linux splits pays it on every
                // exchange, so a repeat whose runs saw different levels is run again.
                let (runs, level) = crosslink::guarded(&mut link, LEVEL_RETRIES, |w| {
                    let mut lin = None;
                    let mut lin2 = None;
                    let mut rr = None;
                    let mut map = None;
                    // four slots, rotating: Linux, round-robin, map run, Linux again (A/A)
                    for slot in 0..4 {
                        match (k + slot) % 4 {
                            0 => lin = Some(linux(&ctx.ipcbench, p, size, rounds)?),
                            1 => rr = Some(placed(ctx, p, size, rounds, &rr_rules)?.0 .0),
                            2 => map = Some(placed(ctx, p, size, rounds, &map_rules)?),
                            _ => lin2 = Some(linux(&ctx.ipcbench, p, size, rounds)?.0),
                        }
                        w.mark()?;
                    }
                    Ok::<_, MapBenchError>((lin, lin2, rr, map))
                })?;
                let (Some((t, split)), Some(t_aa), Some(t_rr), Some(((t_m, m_sp), rep))) = runs else {
                    unreachable!("each of the four slots runs once per repeat")
                };
                l.push(t);
                l_split.push(split);
                aa.push(t_aa);
                r.push(t_rr);
                released += usize::from(!rep.released.is_empty());
                m.push(t_m);
                m_split.push(m_sp);
                levels.push(level);
            }
            let (l_off, m_off) = (summarize(&l_split), summarize(&m_split));
            let worst: Vec<f64> = l_split.iter().flatten().map(OffIdeal::worst).collect();
            let linux_worst_range = (
                worst.iter().copied().fold(f64::NAN, f64::min),
                worst.iter().copied().fold(f64::NAN, f64::max),
            );
            let rr_pu: Vec<usize> = rr_cpus.iter().map(|&c| ctx.pu_of_cpu(c)).collect();
            let empty = || Paired {
                pairs: 0,
                median: f64::NAN,
                ci: None,
                ci_coverage: None,
                fastest: f64::NAN,
            };
            let mut row = Row {
                procs: p,
                size,
                linux_us: median(&l),
                round_robin_us: median(&r),
                map_us: median(&m),
                map_vs_linux: multios_stats::paired(&l, &m).unwrap_or_else(empty),
                linux_vs_linux: multios_stats::paired(&l, &aa).unwrap_or_else(empty),
                linux_off: l_off,
                linux_worst_range,
                map_off: m_off,
                round_robin_vs_linux: multios_stats::paired(&l, &r).unwrap_or_else(empty),
                map_cpus,
                map_decision,
                map_released_runs: released,
                levels,
                linux_runs_us: l,
                linux_aa_runs_us: aa,
                round_robin_runs_us: r,
                map_runs_us: m,
                predicted_round_robin_us: 0.0,
                predicted_map_us: 0.0,
                predicted_linux_us: 0.0,
                predicted_pooled: Predicted::default(),
                predicted_crossing: Predicted::default(),
                predicted_linear: Predicted::default(),
                rr_pu,
                map_pu,
                map_free,
            };
            (
                row.predicted_round_robin_us,
                row.predicted_map_us,
                row.predicted_linux_us,
            ) = predict(ctx, &row);
            between()?;
            progress.advance(&format!(
                "{p} procs, {size} B: Linux {:.2} µs, round-robin {:.2} µs, map {:.2} µs per exchange",
                row.linux_us, row.round_robin_us, row.map_us
            ));
            rows.push(row);
        }
    }
    progress.finish();
    Ok(rows)
}
