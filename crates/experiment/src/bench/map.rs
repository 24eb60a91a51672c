//! `multios bench map` (issue #12): the IPC microbenchmark of seed 001 §III rebuilt on Linux pipes —
//! pairs of processes exchanging 1–64 KiB messages, 2 to 32 processes — under Linux's default
//! placement, round-robin pinning and `multios map run` (the affinity placement of a recorded run),
//! interleaved in one run; then the calibration of the cost model (same CPU vs two CPUs, pairs of
//! processes alone) and the projection of the benchmark to 16-, 64- and 128-core described topologies.
//!
//! Round-robin and map run apply their placement the same way (`map run`'s polling), so they differ
//! only in where the processes go. On this 2-CPU machine, the per-hop cost beyond one hop cannot be
//! measured: the projection's `per_hop` is an assumption, printed as such.

use crate::progress::Progress;
use multios_map::partition::{greedy, CostModel, Weights};
use multios_map::place::{self, Strategy};
use multios_map::project::{self, HopModel};
use multios_map::run::{self as maprun, Rule};
use multios_map::{record, Edge, EdgeKind, Families, Graph, Node, Topology};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum MapBenchError {
    #[error("the IPC benchmark: {0}")]
    Program(String),
    #[error("writing the IPC benchmark into {dir}: {source}")]
    Install { dir: String, source: std::io::Error },
    #[error(transparent)]
    Record(#[from] record::RecordError),
    #[error(transparent)]
    Run(#[from] maprun::RunError),
    #[error(transparent)]
    Topology(#[from] multios_map::topology::TopologyError),
}

#[derive(Debug, Clone)]
pub struct Config {
    pub procs: Vec<usize>,
    pub sizes: Vec<usize>,
    pub rounds: u64,
    pub repeats: usize,
    pub poll: Duration,
    /// Projection: extra cost per hop beyond the first (assumed).
    pub per_hop: f64,
    pub workdir: PathBuf,
}

/// One configuration, three placements: medians of the time per exchange.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub procs: usize,
    pub size: usize,
    pub linux_us: f64,
    pub round_robin_us: f64,
    pub map_us: f64,
    /// map / linux per repeat, median; < 1 means map run was faster.
    pub map_vs_linux: f64,
    pub round_robin_vs_linux: f64,
    /// The placement map run applied: CPU per process (root first).
    pub map_cpus: Vec<u32>,
    /// The cost model's prediction for the round-robin and map placements (µs per exchange: the
    /// busiest CPU's load for one round of every pair, over the pairs).
    pub predicted_round_robin_us: f64,
    pub predicted_map_us: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    pub size: usize,
    pub same_cpu_us: f64,
    pub two_cpus_us: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Projection {
    pub topology: String,
    pub procs: usize,
    pub size: usize,
    pub strategy: String,
    pub hop_byte: f64,
    pub hop_byte_vs_treematch: f64,
    pub predicted_us: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub rows: Vec<Row>,
    pub calibration: Vec<Calibration>,
    /// Fitted: two-CPU time per exchange = ns_per_event + ns_per_byte · size; local_factor = median
    /// of same-CPU / two-CPU.
    pub cost: CostModel,
    pub per_hop_assumed: f64,
    pub projection: Vec<Projection>,
    /// |predicted − measured| / measured over the round-robin and map rows, median and largest.
    pub prediction_error_median: f64,
    pub prediction_error_max: f64,
    pub poll_us: u64,
}

fn median(v: &mut [f64]) -> f64 {
    multios_stats::median(v).unwrap_or(f64::NAN)
}

/// Runs the program directly (Linux's placement): µs per exchange.
fn linux(prog: &Path, procs: usize, size: usize, rounds: u64) -> Result<f64, MapBenchError> {
    let out = Command::new(prog)
        .args([procs.to_string(), size.to_string(), rounds.to_string()])
        .output()
        .map_err(|e| MapBenchError::Program(e.to_string()))?;
    per_exchange(&String::from_utf8_lossy(&out.stdout), out.status.success())
}

fn per_exchange(stdout: &str, ok: bool) -> Result<f64, MapBenchError> {
    match multios_map::ipcbench::parse(stdout) {
        Some((ns, ex)) if ok && ex > 0 => Ok(ns as f64 / 1e3 / (ex as f64)),
        _ => Err(MapBenchError::Program(format!(
            "failed or printed '{}'",
            stdout.trim()
        ))),
    }
}

/// Runs it under `map run` with `rules`: µs per exchange (the program's wall time over the exchanges
/// of all pairs, as for [`linux`]).
fn placed(
    prog: &Path,
    dir: &Path,
    procs: usize,
    size: usize,
    rounds: u64,
    rules: &[Rule],
    poll: Duration,
) -> Result<f64, MapBenchError> {
    let out = dir.join("ipc.out");
    let cmd = vec![
        "/bin/sh".to_string(),
        "-c".to_string(),
        format!(
            "exec {} {procs} {size} {rounds} > {}",
            prog.display(),
            out.display()
        ),
    ];
    let rep = maprun::run(&cmd, rules, poll)?;
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    per_exchange(&text, rep.exit_code == Some(0))
}

/// The program's name as the kernel shows it (comm: 15 bytes).
fn comm() -> String {
    "multios-ipcbench".chars().take(15).collect()
}

/// Rules: the k-th process (root first) on `cpus[k]`.
fn rules(cpus: &[u32]) -> Vec<Rule> {
    cpus.iter()
        .enumerate()
        .map(|(k, &cpu)| Rule {
            comm: comm(),
            ordinal: k,
            cpu,
        })
        .collect()
}

/// The benchmark's graph: root, then pairs (1,2), (3,4), … exchanging `rounds` messages of `size`
/// bytes and one-byte answers; no work (the programs only communicate).
fn bench_graph(procs: usize, size: usize, rounds: u64) -> Graph {
    let mut nodes = vec![node(1)];
    let mut edges = Vec::new();
    for k in 0..procs as u32 {
        nodes.push(node(2 + k));
    }
    for p in 0..(procs / 2) as u32 {
        let (a, b) = (2 + 2 * p, 3 + 2 * p);
        edges.push(Edge {
            from: a,
            to: b,
            kind: EdgeKind::Pipe,
            bytes: size as u64 * rounds,
            count: rounds,
        });
        edges.push(Edge {
            from: b,
            to: a,
            kind: EdgeKind::Pipe,
            bytes: rounds,
            count: rounds,
        });
    }
    Graph::new(nodes, edges)
}

fn node(id: u32) -> Node {
    Node {
        id,
        tgid: id,
        parent: None,
        comm: comm(),
        cpu_ns: 0,
        syscalls: Families::default(),
        rss_pages: 0,
        rank: None,
    }
}

pub fn run(cfg: &Config, progress: &mut dyn Progress) -> Result<Report, MapBenchError> {
    std::fs::create_dir_all(&cfg.workdir).map_err(|source| MapBenchError::Install {
        dir: cfg.workdir.display().to_string(),
        source,
    })?;
    let prog = multios_map::ipcbench::install(&cfg.workdir).map_err(|source| MapBenchError::Install {
        dir: cfg.workdir.display().to_string(),
        source,
    })?;
    let here = Topology::from_sysfs()?;
    let ncpu = here.len().max(1);
    let cpu_list: Vec<u32> = {
        let mut v: Vec<u32> = here.pus.iter().map(|p| p.os).collect();
        v.sort_unstable();
        v
    };
    // 1. Calibration: one pair alone, on one CPU and on two.
    progress.start(
        cfg.sizes.len() as u64,
        "calibrating: a pair on one CPU and on two",
    );
    let mut calibration = Vec::new();
    for &size in &cfg.sizes {
        let (mut same, mut two) = (Vec::new(), Vec::new());
        let c0 = cpu_list[0];
        let c1 = cpu_list[1 % cpu_list.len()];
        for _ in 0..cfg.repeats {
            same.push(placed(
                &prog,
                &cfg.workdir,
                2,
                size,
                cfg.rounds,
                &rules(&[c0, c0, c0]),
                cfg.poll,
            )?);
            two.push(placed(
                &prog,
                &cfg.workdir,
                2,
                size,
                cfg.rounds,
                &rules(&[c0, c0, c1]),
                cfg.poll,
            )?);
        }
        let c = Calibration {
            size,
            same_cpu_us: median(&mut same),
            two_cpus_us: median(&mut two),
        };
        progress.advance(&format!(
            "{size} B: one CPU {:.2} µs, two CPUs {:.2} µs",
            c.same_cpu_us, c.two_cpus_us
        ));
        calibration.push(c);
    }
    progress.finish();
    // least squares: two_cpus_ns = 2·ns_per_event + ns_per_byte·(size+1)
    let n = calibration.len() as f64;
    let xs: Vec<f64> = calibration.iter().map(|c| c.size as f64 + 1.0).collect();
    let ys: Vec<f64> = calibration.iter().map(|c| c.two_cpus_us * 1e3).collect();
    let (mx, my) = (xs.iter().sum::<f64>() / n, ys.iter().sum::<f64>() / n);
    let sxx: f64 = xs.iter().map(|x| (x - mx).powi(2)).sum();
    let sxy: f64 = xs.iter().zip(&ys).map(|(x, y)| (x - mx) * (y - my)).sum();
    let slope = if sxx > 0.0 { (sxy / sxx).max(0.0) } else { 0.0 };
    let intercept = (my - slope * mx).max(0.0);
    let mut ratios: Vec<f64> = calibration
        .iter()
        .map(|c| c.same_cpu_us / c.two_cpus_us)
        .collect();
    let cost = CostModel {
        ns_per_byte: slope,
        ns_per_event: intercept / 2.0,
        ns_per_shared_page: CostModel::default().ns_per_shared_page,
        local_factor: median(&mut ratios),
    };
    progress.note(&format!(
        "calibrated here: {:.1} ns per message + {:.4} ns per byte between CPUs; one CPU costs {:.2}× two",
        cost.ns_per_event, cost.ns_per_byte, cost.local_factor
    ));
    let pu_of_cpu = |cpu: u32| here.pus.iter().position(|p| p.os == cpu).unwrap_or(0);
    let ref_hops = here
        .hops(pu_of_cpu(cpu_list[0]), pu_of_cpu(cpu_list[1 % cpu_list.len()]))
        .max(1);
    let hop = HopModel {
        cost,
        per_hop: cfg.per_hop,
        ref_hops,
    };
    // 2. The microbenchmark under three placements.
    let total = (cfg.procs.len() * cfg.sizes.len()) as u64;
    progress.start(total, "IPC microbenchmark: Linux, round-robin, map run");
    let mut rows = Vec::new();
    let mut errors = Vec::new();
    for &procs in &cfg.procs {
        for &size in &cfg.sizes {
            // learn: record a short run, place it with the calibrated costs
            let rec = record::record(&record::Options {
                command: vec![
                    "/bin/sh".into(),
                    "-c".into(),
                    format!(
                        "exec {} {procs} {size} {} > /dev/null",
                        prog.display(),
                        (cfg.rounds / 10).max(10)
                    ),
                ],
                pid: None,
                duration: None,
                sample_every: Duration::from_millis(50),
                topology: None,
            })?;
            let g = rec.graph;
            let w = Weights::new(&g, &cost);
            let part = greedy::partition(&w, &cost, Some(ncpu), 1).partition;
            let placement = place::place(&g, &part, &here, &cost, Strategy::Affinity);
            let map_rules = maprun::rules(&placement);
            let mut map_cpus: Vec<(u32, u32)> = placement.nodes.iter().map(|n| (n.id, n.cpu)).collect();
            map_cpus.sort_unstable();
            let rr_cpus: Vec<u32> = (0..=procs).map(|k| cpu_list[k % ncpu]).collect();
            let rr_rules = rules(&rr_cpus);
            let (mut l, mut r, mut m) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..cfg.repeats {
                l.push(linux(&prog, procs, size, cfg.rounds)?);
                r.push(placed(
                    &prog,
                    &cfg.workdir,
                    procs,
                    size,
                    cfg.rounds,
                    &rr_rules,
                    cfg.poll,
                )?);
                m.push(placed(
                    &prog,
                    &cfg.workdir,
                    procs,
                    size,
                    cfg.rounds,
                    &map_rules,
                    cfg.poll,
                )?);
            }
            let mut mr: Vec<f64> = m.iter().zip(&l).map(|(a, b)| a / b).collect();
            let mut rrr: Vec<f64> = r.iter().zip(&l).map(|(a, b)| a / b).collect();
            // predictions: the benchmark's graph under each placement, per exchange of one pair
            let bg = bench_graph(procs, size, 1);
            let bw = Weights::new(&bg, &cost);
            let rr_pu: Vec<usize> = rr_cpus.iter().map(|&c| pu_of_cpu(c)).collect();
            let map_pu: Vec<usize> = map_cpus
                .iter()
                .map(|&(_, c)| pu_of_cpu(c))
                .chain(std::iter::repeat(0))
                .take(procs + 1)
                .collect();
            // one round of every pair at once, divided over the pairs: time per exchange as measured
            let pairs = (procs / 2).max(1) as f64;
            let pr = project::predict(&bw, &here, &rr_pu, &hop) / 1e3 / pairs;
            let pm = project::predict(&bw, &here, &map_pu, &hop) / 1e3 / pairs;
            let row = Row {
                procs,
                size,
                linux_us: median(&mut l),
                round_robin_us: median(&mut r),
                map_us: median(&mut m),
                map_vs_linux: median(&mut mr),
                round_robin_vs_linux: median(&mut rrr),
                map_cpus: map_cpus.iter().map(|c| c.1).collect(),
                predicted_round_robin_us: pr,
                predicted_map_us: pm,
            };
            errors.push((pr - row.round_robin_us).abs() / row.round_robin_us);
            errors.push((pm - row.map_us).abs() / row.map_us);
            progress.advance(&format!(
                "{procs} procs, {size} B: Linux {:.2} µs, round-robin {:.2} µs, map {:.2} µs per exchange",
                row.linux_us, row.round_robin_us, row.map_us
            ));
            rows.push(row);
        }
    }
    progress.finish();
    errors.sort_by(f64::total_cmp);
    // 3. Projection to described machines.
    let mut projection = Vec::new();
    let big = *cfg.procs.iter().max().unwrap_or(&2);
    let size = *cfg.sizes.first().unwrap_or(&1024);
    for spec in [
        "pack:1 core:16 pu:1",
        "pack:2 core:32 pu:1",
        "pack:2 core:64 pu:1",
    ] {
        let topo = Topology::synthetic(spec)?;
        for procs in [big, topo.len()] {
            let g = bench_graph(procs, size, cfg.rounds);
            let w = Weights::new(&g, &cost);
            let part = greedy::partition(&w, &cost, Some(topo.len()), 1).partition;
            let ps: Vec<_> = Strategy::ALL
                .iter()
                .map(|&s| place::place(&g, &part, &topo, &cost, s))
                .collect();
            let tm = ps
                .iter()
                .find(|p| p.strategy == Strategy::Treematch)
                .map_or(0.0, |p| p.costs.hop_byte);
            for p in ps {
                let pu: Vec<usize> = p.nodes.iter().map(|n| n.pu).collect();
                projection.push(Projection {
                    topology: spec.into(),
                    procs,
                    size,
                    strategy: p.strategy.name().into(),
                    hop_byte: p.costs.hop_byte,
                    hop_byte_vs_treematch: if tm > 0.0 { p.costs.hop_byte / tm } else { 1.0 },
                    predicted_us: project::predict(&w, &topo, &pu, &hop)
                        / 1e3
                        / cfg.rounds as f64
                        / (procs / 2).max(1) as f64,
                });
            }
        }
    }
    Ok(Report {
        rows,
        calibration,
        cost,
        per_hop_assumed: cfg.per_hop,
        projection,
        prediction_error_median: errors.get(errors.len() / 2).copied().unwrap_or(f64::NAN),
        prediction_error_max: errors.last().copied().unwrap_or(f64::NAN),
        poll_us: cfg.poll.as_micros() as u64,
    })
}
