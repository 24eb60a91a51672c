//! Real multi-process programs, each under Linux's default placement and under its placement —
//! `multios map run --graph G` for a pipeline, a parallel build and a producer/consumer over
//! futexes, the rankfile `map place --rankfile` writes for an MPI program (LAMMPS) — in paired runs
//! alternating ABBA, with the model's prediction of the placed run from the recorded graph.

use super::{median, Context, MapBenchError};
use multios_host::cpus::CpuSet;
use multios_map::decide::{self, Decision, Plan};
use multios_map::partition::Weights;
use multios_map::place;
use multios_map::run::{self as maprun};
use multios_map::{export, project, record, Graph};
use multios_stats::Paired;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Program {
    /// `cat big | gzip -1 | sha256sum` on a 64 MB file.
    Pipeline,
    /// `make -j4` of a generated C project of 16 files.
    Make,
    /// A producer and a consumer thread over a bounded queue (futexes).
    Prodcons,
    /// LAMMPS (Lennard-Jones melt) on 2 MPI ranks exchanging ghost atoms every step.
    Mpi,
}

impl Program {
    pub const ALL: [Program; 4] = [Program::Pipeline, Program::Make, Program::Prodcons, Program::Mpi];

    pub fn name(self) -> &'static str {
        match self {
            Program::Pipeline => "pipeline",
            Program::Make => "make",
            Program::Prodcons => "prodcons",
            Program::Mpi => "mpi",
        }
    }

    pub fn parse(s: &str) -> Option<Program> {
        Program::ALL.into_iter().find(|p| p.name() == s)
    }
}

/// One program: medians, the paired ratio and the prediction.
#[derive(Debug, Clone, Serialize)]
pub struct ProgramRow {
    pub program: Program,
    /// What ran (the placed variant differs for MPI: the rankfile).
    pub command: String,
    pub placed_command: String,
    pub linux_s: f64,
    pub map_s: f64,
    /// map / Linux per pair of runs: median, 95 % interval, fastest / fastest.
    pub map_vs_linux: Paired,
    /// The prediction of the placed run: Linux's measured time × the model's ratio of the placed
    /// run to Linux's (`model_map_s` / `model_linux_s`). The recorded graph holds the threads' CPU
    /// time and interactions, not what the kernel does for them outside (exec, page faults, the
    /// start-up of short-lived children, the balancing itself), so the model projects the change
    /// a placement makes to the run it measured under Linux's placement.
    pub predicted_map_s: f64,
    /// The model's own time of the placed run from the recorded graph …
    pub model_map_s: f64,
    /// … and of the same graph with every node free (Linux balances all of them).
    pub model_linux_s: f64,
    /// Where the placed run puts each recorded thread ("gzip→0", "sha256sum→0-1": free).
    pub placement: Vec<String>,
    /// Whether the placed run applied the placement or kept Linux's (nothing pinned: the placed
    /// run is then the plain program, under `map run` or, for MPI, mpirun without a rankfile),
    /// with the model's times of both.
    pub decision: Decision,
    /// Placed runs in which map run released a CPU's pinned groups (other programs took the CPU).
    pub released_runs: usize,
    /// The cross-CPU round trip probed before and after the program's pairs of runs (median, ns;
    /// None: not probed), and whether the probes agreed: the level its prediction is made at.
    pub level_ns: Option<f64>,
    pub level_steady: bool,
    /// The recorded graph and the PU of each of its nodes, for the model (in the JSON, so that a
    /// changed model can be replayed on a run's own numbers).
    pub graph: Graph,
    pub pus: Vec<usize>,
    /// Whether the placement leaves each node free (Linux balances it).
    pub free: Vec<bool>,
}

/// The model's times (s) of `r`'s recorded graph: (placed, every node free).
pub fn model_times(ctx: &Context, r: &ProgramRow) -> (f64, f64) {
    let w = Weights::new(&r.graph, &ctx.hop.cost);
    let placed = project::bounds(&w, &ctx.here, &r.pus, &r.free, &ctx.hop).ns / 1e9;
    let linux = project::bounds(&w, &ctx.here, &r.pus, &vec![true; r.pus.len()], &ctx.hop).ns / 1e9;
    (placed, linux)
}

/// The prediction of the placed run from Linux's measured time and the model's two times (the
/// model's own time when it has none for Linux's placement).
pub fn anchored(linux_s: f64, model_map_s: f64, model_linux_s: f64) -> f64 {
    if model_linux_s > 0.0 && linux_s > 0.0 {
        linux_s * model_map_s / model_linux_s
    } else {
        model_map_s
    }
}

/// Fills `r`'s model times and prediction.
pub fn predict(ctx: &Context, r: &mut ProgramRow) {
    (r.model_map_s, r.model_linux_s) = model_times(ctx, r);
    r.predicted_map_s = anchored(r.linux_s, r.model_map_s, r.model_linux_s);
}

/// The 64 MB input of the pipeline: pseudo-random bytes (xorshift), written once.
fn pipeline_input(dir: &Path) -> Result<PathBuf, MapBenchError> {
    let path = dir.join("pipeline-64M.bin");
    if std::fs::metadata(&path).is_ok_and(|m| m.len() == 64 << 20) {
        return Ok(path);
    }
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut buf = vec![0u8; 64 << 20];
    for chunk in buf.chunks_exact_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes());
    }
    std::fs::write(&path, buf).map_err(|source| MapBenchError::Install {
        dir: path.display().to_string(),
        source,
    })?;
    Ok(path)
}

/// A C project of 16 files of 20 arithmetic-heavy functions each and a Makefile (`prog`).
fn make_project(dir: &Path) -> Result<PathBuf, MapBenchError> {
    let root = dir.join("make-project");
    let io = |source| MapBenchError::Install {
        dir: root.display().to_string(),
        source,
    };
    std::fs::create_dir_all(&root).map_err(io)?;
    let files = 16;
    for f in 0..files {
        let mut s = String::from("#include <stdint.h>\n");
        for k in 0..20 {
            let _ = writeln!(s, "uint64_t f{f}_{k}(uint64_t x) {{\n  uint64_t a = x;");
            for j in 0..12 {
                let _ = writeln!(
                    s,
                    "  for (int i = 0; i < {}; i++) a = a * {} + (a >> {}) ^ {};",
                    3 + j,
                    2 * j + 3,
                    j % 7 + 1,
                    k * 31 + j
                );
            }
            s.push_str("  return a;\n}\n");
        }
        std::fs::write(root.join(format!("m{f}.c")), s).map_err(io)?;
    }
    let mut main = String::from("#include <stdio.h>\n#include <stdint.h>\n");
    for f in 0..files {
        let _ = writeln!(main, "uint64_t f{f}_0(uint64_t);");
    }
    main.push_str("int main(void) {\n  uint64_t s = 0;\n");
    for f in 0..files {
        let _ = writeln!(main, "  s += f{f}_0({f});");
    }
    main.push_str("  printf(\"%llu\\n\", (unsigned long long)s);\n  return 0;\n}\n");
    std::fs::write(root.join("main.c"), main).map_err(io)?;
    let objs: Vec<String> = (0..files).map(|f| format!("m{f}.o")).collect();
    let makefile = format!(
        "prog: main.o {}\n\t$(CC) -o $@ $^\n%.o: %.c\n\t$(CC) -O2 -c -o $@ $<\n",
        objs.join(" ")
    );
    std::fs::write(root.join("Makefile"), makefile).map_err(io)?;
    Ok(root)
}

/// LAMMPS's Lennard-Jones melt input (8×8×8 fcc cells, 2048 atoms, 600 steps).
fn lammps_input(dir: &Path) -> Result<PathBuf, MapBenchError> {
    let path = dir.join("in.lj");
    let text = "units lj\natom_style atomic\nlattice fcc 0.8442\nregion box block 0 8 0 8 0 8\n\
                create_box 1 box\ncreate_atoms 1 box\nmass 1 1.0\nvelocity all create 3.0 87287 loop geom\n\
                pair_style lj/cut 2.5\npair_coeff 1 1 1.0 1.0 2.5\nneighbor 0.3 bin\n\
                neigh_modify every 20 delay 0 check no\nfix 1 all nve\nrun 600\n";
    std::fs::write(&path, text).map_err(|source| MapBenchError::Install {
        dir: path.display().to_string(),
        source,
    })?;
    Ok(path)
}

fn mpirun(placement: &[&str], input: &Path) -> Vec<String> {
    let mut v: Vec<String> = [
        "mpirun",
        "--allow-run-as-root",
        "--mca",
        "btl",
        "self,vader",
        "-np",
        "2",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.extend(placement.iter().map(|s| s.to_string()));
    v.extend(
        ["lmp", "-in"]
            .iter()
            .map(|s| s.to_string())
            .chain([input.display().to_string()])
            .chain(["-log", "none", "-screen", "none"].iter().map(|s| s.to_string())),
    );
    v
}

/// The command of a program (run directly for Linux's placement).
fn command(ctx: &Context, p: Program) -> Result<Vec<String>, MapBenchError> {
    let sh = |s: String| vec!["/bin/sh".to_string(), "-c".to_string(), s];
    Ok(match p {
        Program::Pipeline => {
            let input = pipeline_input(&ctx.workdir)?;
            sh(format!(
                "cat {} | gzip -1 | sha256sum > /dev/null",
                input.display()
            ))
        }
        Program::Make => {
            let dir = make_project(&ctx.workdir)?;
            vec![
                "make".into(),
                "-s".into(),
                "-B".into(),
                "-j4".into(),
                "-C".into(),
                dir.display().to_string(),
            ]
        }
        Program::Prodcons => vec![ctx.prodcons.display().to_string(), "300000".into(), "100".into()],
        Program::Mpi => {
            let input = lammps_input(&ctx.workdir)?;
            mpirun(&["--bind-to", "none"], &input)
        }
    })
}

/// Runs `cmd` to the end with its output discarded: wall seconds.
fn timed(cmd: &[String]) -> Result<f64, MapBenchError> {
    timed_on(cmd, None)
}

/// [`timed`], the program started on `on` (None: this thread's own CPUs; the affinity is
/// inherited from this thread for the moment of the spawn, as `map run` starts a pinned program).
pub(crate) fn timed_on(cmd: &[String], on: Option<&CpuSet>) -> Result<f64, MapBenchError> {
    let t0 = Instant::now();
    let mut c = Command::new(&cmd[0]);
    c.args(&cmd[1..]).stdout(Stdio::null()).stderr(Stdio::null());
    let status = maprun::spawn_on(&mut c, on)
        .and_then(|mut child| child.wait())
        .map_err(|e| MapBenchError::Program(format!("{}: {e}", cmd[0])))?;
    let s = t0.elapsed().as_secs_f64();
    if !status.success() {
        return Err(MapBenchError::Program(format!(
            "`{}` failed: {status}",
            cmd.join(" ")
        )));
    }
    Ok(s)
}

/// The graph of one run of `cmd`, placed with the calibrated model on this machine as `map run`
/// places it (applied only when the model predicts it faster than Linux's placement). The program's
/// output is discarded as in the timed runs (it went to the benchmark's stdout and broke `--json`):
/// `sh` execs the command with its output on /dev/null, so the recorded process is the command's.
fn learn(ctx: &Context, cmd: &[String]) -> Result<(Graph, Plan), MapBenchError> {
    let mut quiet: Vec<String> = vec![
        "/bin/sh".into(),
        "-c".into(),
        "exec \"$0\" \"$@\" > /dev/null 2>&1".into(),
    ];
    quiet.extend(cmd.iter().cloned());
    let rec = record::record(&record::Options {
        command: quiet,
        pid: None,
        duration: None,
        sample_every: Duration::from_millis(50),
        topology: None,
    })?;
    if rec.exit_code != Some(0) {
        return Err(MapBenchError::Program(format!(
            "recording `{}`: exit {:?}",
            cmd.join(" "),
            rec.exit_code
        )));
    }
    let g = rec.graph;
    let plan = decide::plan(&g, &ctx.here, &ctx.hop, decide::Options::default());
    Ok((g, plan))
}

/// What the placed MPI run applies of a placement (each node's PU and whether it is free): the
/// rankfile binds each ranked process, and with it its threads, to its slot; everything else
/// (mpirun and its threads) runs where Linux puts it. The ranked processes are those
/// [`export::placement::rankfile`] names: those with an MPI rank, or every process when none has.
pub fn rankfile_applied(nodes: &[place::Assigned]) -> (Vec<usize>, Vec<bool>) {
    let procs: Vec<&place::Assigned> = nodes.iter().filter(|n| n.id == n.tgid).collect();
    let any_rank = procs.iter().any(|n| n.rank.is_some());
    let ranked = |tgid: u32| {
        procs
            .iter()
            .find(|n| n.id == tgid && (n.rank.is_some() || !any_rank))
            .copied()
    };
    nodes
        .iter()
        .map(|n| match ranked(n.tgid) {
            Some(proc_) if proc_.pinned => (proc_.pu, false),
            _ => (n.pu, true),
        })
        .unzip()
}

/// One program: learn, then `pairs` pairs of runs in ABBA order.
pub fn measure(
    ctx: &Context,
    p: Program,
    pairs: usize,
    progress: &mut dyn crate::progress::Progress,
) -> Result<ProgramRow, MapBenchError> {
    let cmd = command(ctx, p)?;
    let (g, plan) = learn(ctx, &cmd)?;
    let placement = &plan.placement;
    let apply = plan.decision.applies();
    let (pus, free) = match p {
        Program::Mpi if apply => rankfile_applied(&placement.nodes),
        _ => plan.applied(),
    };
    let all: Vec<usize> = ctx.cpus.iter().map(|&c| c as usize).collect();
    let shown: Vec<String> = placement
        .nodes
        .iter()
        .map(|n| {
            let cpus: Vec<usize> = if apply {
                n.cpus().iter().map(|&c| c as usize).collect()
            } else {
                all.clone()
            };
            format!("{}→{}", n.comm, multios_host::cpus::format_list(&cpus))
        })
        .collect();
    // The placed variant: map run as it decided, or mpirun with the rankfile (without one when
    // the decision kept Linux's placement).
    let placed_cmd: Vec<String> = match p {
        Program::Mpi if apply => {
            let rankfile = ctx.workdir.join("rankfile");
            std::fs::write(&rankfile, export::placement::rankfile(placement)).map_err(|source| {
                MapBenchError::Install {
                    dir: rankfile.display().to_string(),
                    source,
                }
            })?;
            let input = lammps_input(&ctx.workdir)?;
            mpirun(&["--rankfile", &rankfile.display().to_string()], &input)
        }
        _ => cmd.clone(),
    };
    let mut released_runs = 0usize;
    let mut run_placed = || -> Result<f64, MapBenchError> {
        match p {
            Program::Mpi => timed(&placed_cmd),
            _ => {
                // timed from outside, as the Linux run is: map run's set-up and end count
                let t0 = Instant::now();
                let rep = maprun::run_plan(&placed_cmd, &plan, ctx.sweep, true)?;
                let s = t0.elapsed().as_secs_f64();
                if rep.exit_code != Some(0) {
                    return Err(MapBenchError::Program(format!(
                        "`{}` under map run: exit {:?}",
                        placed_cmd.join(" "),
                        rep.exit_code
                    )));
                }
                released_runs += usize::from(!rep.released.is_empty());
                Ok(s)
            }
        }
    };
    let (mut l, mut m) = (Vec::new(), Vec::new());
    for k in 0..pairs {
        // ABBA: Linux first in even pairs, placed first in odd ones
        if k % 2 == 0 {
            l.push(timed(&cmd)?);
            m.push(run_placed()?);
        } else {
            m.push(run_placed()?);
            l.push(timed(&cmd)?);
        }
    }
    let ratio = multios_stats::paired(&l, &m).ok_or_else(|| MapBenchError::Program("no pairs".into()))?;
    let mut row = ProgramRow {
        program: p,
        command: cmd.join(" "),
        placed_command: if p == Program::Mpi {
            placed_cmd.join(" ")
        } else {
            format!("multios map run --graph G -- {}", cmd.join(" "))
        },
        linux_s: median(&l),
        map_s: median(&m),
        map_vs_linux: ratio,
        predicted_map_s: 0.0,
        model_map_s: 0.0,
        model_linux_s: 0.0,
        placement: shown,
        decision: plan.decision.clone(),
        released_runs,
        level_ns: None,
        level_steady: true,
        graph: g,
        pus,
        free,
    };
    predict(ctx, &mut row);
    progress.advance(&format!(
        "{}: Linux {:.3} s, placed {:.3} s (median of {pairs} pairs)",
        p.name(),
        row.linux_s,
        row.map_s
    ));
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: u32, tgid: u32, pu: usize, pinned: bool, rank: Option<u32>) -> place::Assigned {
        place::Assigned {
            id,
            tgid,
            comm: if rank.is_some() { "lmp" } else { "mpirun" }.into(),
            pu,
            cpu: pu as u32,
            pinned,
            domain: if pinned { Vec::new() } else { vec![0, 1] },
            rank,
        }
    }

    #[test]
    fn issue_12_the_mpi_run_applies_only_what_the_rankfile_binds() {
        let nodes = [
            node(10, 10, 0, true, None), // mpirun, pinned by the placement: not by the rankfile
            node(11, 10, 1, true, None), // its thread
            node(20, 20, 0, true, Some(0)), // rank 0 on CPU 0
            node(21, 20, 1, true, None), // rank 0's thread: bound with its process, to CPU 0
            node(30, 30, 1, false, Some(1)), // rank 1 left free: slot=0-1
            node(31, 30, 0, true, None), // its thread, free with it
        ];
        let (pus, free) = rankfile_applied(&nodes);
        assert_eq!(free, [true, true, false, false, true, true]);
        assert_eq!(&pus[2..4], &[0, 0]);
    }

    #[test]
    fn issue_12_a_placement_the_model_cannot_tell_from_linuxs_predicts_linuxs_time() {
        // every node left free: the model's two times agree, the prediction is the measured run
        assert_eq!(anchored(4.0, 2.3, 2.3), 4.0);
        // the model says the placement takes 0.8 of Linux's time: 0.8 of the measured run
        assert!((anchored(4.0, 1.6, 2.0) - 3.2).abs() < 1e-12);
        // no model time for Linux's placement (or no measurement): the model's own time
        assert_eq!(anchored(4.0, 1.5, 0.0), 1.5);
        assert_eq!(anchored(0.0, 1.5, 2.0), 1.5);
    }
}
