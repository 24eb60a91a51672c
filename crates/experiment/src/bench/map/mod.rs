//! `multios bench map` (issue #12): everything NetworkedOS claims that can be measured on this
//! machine, side by side in one run, with its targets.
//!
//! 1. The cost model calibrated from microbenchmarks ([`calibrate`]), measured before and after the
//!    rest and once after each IPC configuration and program (the machine's load drifts; every
//!    round counts).
//! 2. The IPC microbenchmark of seed 001 §III ([`ipc`]): pairs exchanging 1–64 KiB messages, 2 to 32
//!    processes, under Linux's placement, round-robin pinning and `multios map run`, interleaved;
//!    the model's prediction of the two pinned placements beside the measurement.
//! 3. Real programs ([`programs`]): a pipeline, `make -j4`, a producer/consumer over futexes and
//!    LAMMPS on two MPI ranks with the rankfile, each against Linux's placement in ABBA pairs.
//! 4. Every calibration run is probed for the cross-CPU level around it ([`levels`]); each row is
//!    predicted by the calibration of the level probed around it, beside the calibration of every
//!    run whatever its level (the fit before) and a line in the round trip ([`predict`]).
//! 5. The projection to 16-, 64- and 128-core described machines ([`projection`]): HOP_BYTE of the
//!    mapping against the TreeMatch-style baseline's, and the model's times. The per-hop cost beyond
//!    two cores of one cache cannot be measured on 2 CPUs: it is an assumption, printed as such.

pub mod busy;
pub mod calibrate;
pub mod ipc;
pub mod levels;
pub mod overhead;
pub mod predict;
pub mod programs;
pub mod projection;

use crate::progress::Progress;
use multios_map::project::HopModel;
use multios_map::{record, Topology};
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

pub use programs::Program;

#[derive(Debug, thiserror::Error)]
pub enum MapBenchError {
    #[error("the benchmark program: {0}")]
    Program(String),
    #[error("writing {dir}: {source}")]
    Install { dir: String, source: std::io::Error },
    #[error("this machine has {0} CPU(s) this process may use; the benchmark compares one CPU with two")]
    OneCpu(usize),
    #[error(transparent)]
    Record(#[from] record::RecordError),
    #[error(transparent)]
    Run(#[from] multios_map::run::RunError),
    #[error(transparent)]
    Topology(#[from] multios_map::topology::TopologyError),
    /// The cross-CPU probe between runs (`crosslink`).
    #[error("probing the cross-CPU round trip: {0}")]
    Probe(Box<crate::ExperimentError>),
}

impl From<crate::ExperimentError> for MapBenchError {
    fn from(e: crate::ExperimentError) -> Self {
        MapBenchError::Probe(Box::new(e))
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub procs: Vec<usize>,
    pub sizes: Vec<usize>,
    /// Exchanges per pair and IPC run.
    pub rounds: u64,
    /// Runs of each placement per IPC configuration.
    pub repeats: usize,
    /// Calibration rounds, before and after the rest (each); one more runs after each IPC
    /// configuration and each program.
    pub calibration_rounds: usize,
    /// Real programs and their ABBA pairs of runs.
    pub programs: Vec<Program>,
    pub pairs: usize,
    /// ABBA pairs per short program and mode in the section on map run's own cost (0: skipped).
    pub overhead_pairs: usize,
    /// map run's contention check of pinned groups.
    pub sweep: Duration,
    /// Projection: extra cost per hop beyond the calibrated distance (assumed).
    pub per_hop: f64,
    pub workdir: PathBuf,
}

/// What every part of the benchmark shares.
#[derive(Clone)]
pub struct Context {
    pub here: Topology,
    /// This process's CPUs in OS order.
    pub cpus: Vec<u32>,
    pub hop: HopModel,
    pub ipcbench: PathBuf,
    pub prodcons: PathBuf,
    pub workdir: PathBuf,
    pub sweep: Duration,
}

impl Context {
    pub fn pu_of_cpu(&self, cpu: u32) -> usize {
        self.here.pus.iter().position(|p| p.os == cpu).unwrap_or(0)
    }
}

/// How predictions compare with measurements.
#[derive(Debug, Clone, Serialize)]
pub struct Accuracy {
    /// |predicted − measured| / measured: median and largest, over the rows compared.
    pub median_error: f64,
    pub max_error: f64,
    /// (predicted − measured) / measured, median: below 0 the model predicts too little.
    pub median_bias: f64,
    /// Rows within ±10 %.
    pub within_10pct: usize,
    pub compared: usize,
}

/// The model of a calibration: its curves and stretches, `per_hop` assumed.
pub fn model(c: &calibrate::Calibration, per_hop: f64, ref_hops: u32) -> HopModel {
    HopModel {
        cost: c.cost,
        per_hop,
        ref_hops,
        cpu_share: c.cpu_share,
        curves: c.curves,
        stretch_one: c.stretch_one,
        stretch_parallel: c.stretch_parallel,
        parallel_ipc: c.parallel_ipc,
        spread: c.spread,
        recorded: None,
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Verdicts {
    /// Rows (IPC and programs) whose map/Linux interval lies at or under 1.03, whose median does
    /// (the interval reaches above), whose median is above 1.03 with the interval reaching 1.03 or
    /// below (undecided: not shown slower; with the IPC rows' A/A beside), and whose whole interval
    /// lies above 1.03 (slower). Until h-map4 every row with its median above 1.03 was "slower".
    pub not_slower: usize,
    pub not_slower_median_only: usize,
    pub undecided: Vec<String>,
    pub slower: Vec<String>,
    /// IPC rows whose map/Linux median lies within the spread of Linux against itself on the same
    /// row (the A/A interval), of the IPC rows with an A/A.
    pub within_aa: usize,
    pub aa_rows: usize,
    /// IPC rows at least 1.3× faster than Linux (median map/Linux ≤ 1/1.3), of all IPC rows.
    pub faster_1_3: usize,
    pub ipc_rows: usize,
    /// The IPC rows where keeping communicating tasks together can matter: Linux's own placement
    /// was at least [`OFF_IDEAL_MATTERS`] from the best placement of pairs (split, moved or
    /// uneven; medians over its runs in this run of the benchmark); of those, the rows at least
    /// 1.3× faster. Where Linux's placement already was the best one (every pair together, none
    /// moved, spread evenly), a placement can at best tie it on 2 CPUs: those rows are judged by
    /// "not slower" only (`kept_together`).
    pub matters_rows: usize,
    pub faster_1_3_where_matters: usize,
    pub kept_together: Vec<String>,
    /// Rows (IPC and programs) where `map run` kept Linux's placement (pinned nothing): both sides
    /// ran Linux's placement, so their ratio is the run-to-run noise of one placement (and of how
    /// the two sides were started), not a placement's effect; still judged by "not slower". A row
    /// among them at ≥ 1.3× is not counted in `faster_1_3_where_matters` (nothing was placed).
    pub linux_kept: Vec<String>,
    /// IPC rows whose program did not report where the pairs were (counted in neither).
    pub split_unknown: usize,
    /// The prediction within 10 % (median error of the IPC rows and of the programs, each).
    pub prediction_within_10pct: bool,
    /// At 128 cores, affinity's HOP_BYTE ≤ 1.05 × TreeMatch-style's, per workload.
    pub hop_byte_128: Vec<(String, f64)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub calibration: calibrate::Calibration,
    pub hop: HopModel,
    pub ipc: Vec<ipc::Row>,
    pub programs: Vec<programs::ProgramRow>,
    /// map run's own cost on short programs (nothing pinned, everything pinned).
    pub overhead: Vec<overhead::OverheadRow>,
    pub projection: Vec<projection::Projection>,
    /// IPC rows (round-robin and map; then each alone) and programs (placed run).
    pub accuracy_ipc: Accuracy,
    pub accuracy_ipc_round_robin: Accuracy,
    pub accuracy_ipc_map: Accuracy,
    /// The model's time of Linux's placement (every process free) against Linux's rows: what
    /// `map run` compares its placement with (not judged).
    pub accuracy_ipc_linux: Accuracy,
    pub accuracy_programs: Accuracy,
    /// The model's own times of the placed programs (not anchored at Linux's measured time).
    pub accuracy_programs_model: Accuracy,
    /// How far the calibration's rounds before and after the rest differ: median over
    /// arrangements and sizes of |wall₁ − wall₂| / mean — the run's own noise, a floor under the
    /// prediction's error.
    pub calibration_drift: f64,
    /// Every calibration run with the cross-CPU level probed around it.
    pub calibration_runs: CalibrationRuns,
    /// The levels the calibration saw, the calibration fitted at each, and the halves compared
    /// within one level. The accuracies above are the per-level calibration's …
    pub levels: LevelsReport,
    /// … and these the same rows' with the calibration of every run whatever its level (the fit
    /// before the level was known) and with the calibration as a line in the round trip.
    pub accuracy_pooled: predict::Accuracies,
    pub accuracy_linear: predict::Accuracies,
    /// The same rows by the calibration per level of the crossing arrangements only (a pair on
    /// each CPU, packed pairs and compute loops from every level).
    pub accuracy_crossing: predict::Accuracies,
    pub verdicts: Verdicts,
    pub per_hop_assumed: f64,
    pub sweep_ms: f64,
}

/// The calibration's rounds: before the rest, one after each IPC configuration and program, after.
#[derive(Debug, Clone, Serialize)]
pub struct CalibrationRuns {
    pub before: Vec<calibrate::Round>,
    pub middle: Vec<calibrate::Round>,
    pub after: Vec<calibrate::Round>,
}

#[derive(Debug, Clone, Serialize)]
pub struct LevelsReport {
    /// The cross-CPU levels seen in the calibration's steady runs, ns.
    pub levels_ns: Vec<f64>,
    pub fits: Vec<levels::LevelFit>,
    /// The rounds before against the rounds after, overall and within one level.
    pub halves: levels::Halves,
    /// Calibration runs whose probes before and after disagreed (left out of the per-level fits).
    pub unsteady_runs: usize,
}

pub(crate) fn median(v: &[f64]) -> f64 {
    multios_stats::median(v).unwrap_or(f64::NAN)
}

pub fn accuracy(pairs: &[(f64, f64)]) -> Accuracy {
    let signed: Vec<f64> = pairs
        .iter()
        .filter(|(p, m)| *m > 0.0 && m.is_finite() && p.is_finite())
        .map(|(p, m)| (p - m) / m)
        .collect();
    let mut e: Vec<f64> = signed.iter().map(|x| x.abs()).collect();
    e.sort_by(f64::total_cmp);
    Accuracy {
        median_error: median(&e),
        max_error: e.last().copied().unwrap_or(f64::NAN),
        median_bias: median(&signed),
        within_10pct: e.iter().filter(|&&x| x <= 0.10).count(),
        compared: e.len(),
    }
}

/// A row where Linux's placement of the pairs was at least this far from the best one (a share of
/// the exchanges split over two CPUs, made after the pair moved, or carried by the busiest CPU
/// beyond its even share: [`multios_map::programs::OffIdeal`]) is one where keeping communicating
/// tasks together can matter.
pub const OFF_IDEAL_MATTERS: f64 = 0.05;

/// Whether keeping the pairs together can matter in `r`, from where Linux put them in this run:
/// None when the program did not say.
pub fn placement_can_matter(r: &ipc::Row) -> Option<bool> {
    r.linux_off.map(|o| o.worst() >= OFF_IDEAL_MATTERS)
}

/// Where a paired map/Linux comparison stands against "never more than 3 % slower" (since h-map4 a
/// row is slower only when its interval says so).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    /// The whole interval at or under 1.03.
    NotSlower,
    /// The median at or under 1.03, the interval reaching above.
    MedianOnly,
    /// The median above 1.03, the interval reaching 1.03 or below (or no interval: fewer than 6
    /// pairs): not shown slower. Compare it with the row's A/A (Linux against itself).
    Undecided,
    /// The whole interval above 1.03.
    Slower,
}

impl Standing {
    pub fn of(p: &multios_stats::Paired) -> Standing {
        let (m, ci) = p.ratio();
        match ci {
            Some((_, hi)) if hi <= 1.03 => Standing::NotSlower,
            Some((lo, _)) if lo > 1.03 => Standing::Slower,
            _ if m <= 1.03 => Standing::MedianOnly,
            _ => Standing::Undecided,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Standing::NotSlower => "≤ 1.03",
            Standing::MedianOnly => "median ≤ 1.03",
            Standing::Undecided => "undecided",
            Standing::Slower => "SLOWER",
        }
    }
}

/// A paired ratio as "median [low, high]" (the median alone without an interval).
pub fn ratio_text(p: &multios_stats::Paired) -> String {
    let (m, ci) = p.ratio();
    match ci {
        Some((lo, hi)) => format!("{m:.3} [{lo:.3}, {hi:.3}]"),
        None => format!("{m:.3}"),
    }
}

/// Whether a row's map/Linux median lies within the spread of Linux against itself on the same
/// row (its A/A interval; without one, within |A/A median − 1| of 1): None without an A/A.
pub fn within_aa(map: &multios_stats::Paired, aa: &multios_stats::Paired) -> Option<bool> {
    if aa.pairs == 0 || !aa.median.is_finite() {
        return None;
    }
    let (m, _) = map.ratio();
    let (a, ci) = aa.ratio();
    let (lo, hi) = ci.unwrap_or_else(|| {
        let d = (a - 1.0).abs();
        (1.0 - d, 1.0 + d)
    });
    Some(m >= lo.min(1.0) && m <= hi.max(1.0))
}

pub fn run(cfg: &Config, progress: &mut dyn Progress) -> Result<Report, MapBenchError> {
    std::fs::create_dir_all(&cfg.workdir).map_err(|source| MapBenchError::Install {
        dir: cfg.workdir.display().to_string(),
        source,
    })?;
    let install = |source| MapBenchError::Install {
        dir: cfg.workdir.display().to_string(),
        source,
    };
    let ipcbench = multios_map::programs::install_ipcbench(&cfg.workdir).map_err(install)?;
    let prodcons = multios_map::programs::install_prodcons(&cfg.workdir).map_err(install)?;
    let here = Topology::from_sysfs()?;
    let allowed = multios_host::cpus::CpuSet::allowed();
    let mut cpus: Vec<u32> = here
        .pus
        .iter()
        .map(|p| p.os)
        .filter(|&c| allowed.contains(c as usize))
        .collect();
    cpus.sort_unstable();
    if cpus.len() < 2 {
        return Err(MapBenchError::OneCpu(cpus.len()));
    }
    let (c0, c1) = (cpus[0], cpus[1]);
    let link = crate::crosslink::Link(c0 as usize, c1 as usize);
    let cal_rounds = cfg.rounds.max(200);
    let calibrate =
        |progress: &mut dyn Progress, what: &str| -> Result<Vec<calibrate::Round>, MapBenchError> {
            progress.start(cfg.calibration_rounds as u64, what);
            let mut v = Vec::new();
            for _ in 0..cfg.calibration_rounds {
                let mut probe = link;
                v.push(calibrate::round(&ipcbench, c0, c1, cal_rounds, &mut probe)?);
                progress.advance("a round of the calibration microbenchmarks");
            }
            progress.finish();
            Ok(v)
        };
    let mut rounds = calibrate(progress, "calibration: microbenchmarks (before)")?;
    let first = calibrate::fit(&rounds, cal_rounds, cpus.len());
    let before = rounds.len();
    let pu = |cpu: u32| here.pus.iter().position(|p| p.os == cpu).unwrap_or(0);
    let ref_hops = here.hops(pu(c0), pu(c1)).max(1);
    let mut ctx = Context {
        here: here.clone(),
        cpus: cpus.clone(),
        hop: model(&first, cfg.per_hop, ref_hops),
        ipcbench: ipcbench.clone(),
        prodcons,
        workdir: cfg.workdir.clone(),
        sweep: cfg.sweep,
    };
    progress.note(&format!(
        "calibrated (first half): {:.0} ns per message + {:.3} ns/B between CPUs, {:.0} ns + {:.3} ns/B on one, {:.0} ns per idle wake-up, {:.0} ns per shared page; CPU share {:.2}",
        first.cost.ns_per_event,
        first.cost.ns_per_byte,
        first.cost.local_ns_per_event,
        first.cost.local_ns_per_byte,
        first.cost.ns_per_idle_wake,
        first.cost.ns_per_shared_page,
        first.cpu_share
    ));
    // a calibration round after each IPC configuration and each program: the calibration then
    // sees the machine's load as the rows do (it drifts while other programs come and go)
    let mut middle: Vec<calibrate::Round> = Vec::new();
    let mut between = || -> Result<(), MapBenchError> {
        let mut probe = link;
        middle.push(calibrate::round(&ipcbench, c0, c1, cal_rounds, &mut probe)?);
        Ok(())
    };
    let mut ipc = ipc::rows(
        &ctx,
        &cfg.procs,
        &cfg.sizes,
        cfg.rounds,
        cfg.repeats,
        progress,
        &mut between,
    )?;
    let mut progs = Vec::new();
    if !cfg.programs.is_empty() {
        progress.start(
            cfg.programs.len() as u64,
            "real programs: Linux vs placed, ABBA pairs",
        );
        for &p in &cfg.programs {
            let mut probe = link;
            let mut w = crate::crosslink::Watch::start(&mut probe)?;
            let mut row = programs::measure(&ctx, p, cfg.pairs, progress)?;
            w.mark()?;
            (row.level_ns, row.level_steady) = (Some(w.level_ns()).filter(|x| x.is_finite()), w.steady());
            progs.push(row);
            between()?;
        }
        progress.finish();
    }
    let overhead = if cfg.overhead_pairs > 0 {
        overhead::rows(&ctx, cfg.overhead_pairs, progress)?
    } else {
        Vec::new()
    };
    let after = calibrate(progress, "calibration: microbenchmarks (after)")?;
    let calibration_drift = calibrate::drift(&rounds[..before], &after);
    let first_half = rounds.clone();
    rounds.extend(middle.iter().cloned());
    rounds.extend(after.iter().cloned());
    let calibration = calibrate::fit(&rounds, cal_rounds, cpus.len());
    ctx.hop = model(&calibration, cfg.per_hop, ref_hops);
    // the levels the calibration saw, the calibration at each, every row predicted three ways
    let probes: Vec<f64> = rounds
        .iter()
        .flatten()
        .filter_map(calibrate::Run::steady_level)
        .collect();
    let levels_ns = levels::levels(&probes);
    let fit_by = |by: levels::ByLevel| levels::per_level(&rounds, &levels_ns, cal_rounds, cpus.len(), by);
    let (fits, crossing) = (
        fit_by(calibrate::Arrangement::uses_both_cpus),
        fit_by(calibrate::Arrangement::crosses),
    );
    let models = |f: &[levels::LevelFit]| -> Vec<HopModel> {
        f.iter()
            .map(|f| model(&f.calibration, cfg.per_hop, ref_hops))
            .collect()
    };
    let cal = predict::Calibrations {
        rounds: &rounds,
        per_run: cal_rounds,
        cpus: cpus.len(),
        per_hop: cfg.per_hop,
        ref_hops,
        pooled: ctx.hop,
        levels: levels_ns.clone(),
        per_level: models(&fits),
        per_level_crossing: models(&crossing),
    };
    let accuracy_pooled = predict::apply(&ctx, &cal, predict::Variant::Pooled, &mut ipc, &mut progs);
    let accuracy_linear = predict::apply(&ctx, &cal, predict::Variant::Linear, &mut ipc, &mut progs);
    let accuracy_crossing = predict::apply(
        &ctx,
        &cal,
        predict::Variant::PerLevelCrossing,
        &mut ipc,
        &mut progs,
    );
    let per_level = predict::apply(&ctx, &cal, predict::Variant::PerLevel, &mut ipc, &mut progs);
    let levels = LevelsReport {
        halves: levels::halves(&first_half, &after, &levels_ns),
        unsteady_runs: rounds.iter().flatten().filter(|r| !r.steady).count(),
        levels_ns,
        fits,
    };
    let calibration_runs = CalibrationRuns {
        before: first_half,
        middle,
        after,
    };
    let predict::Accuracies {
        ipc: accuracy_ipc,
        ipc_round_robin: accuracy_ipc_round_robin,
        ipc_map: accuracy_ipc_map,
        ipc_linux: accuracy_ipc_linux,
        programs: accuracy_programs,
        programs_model: accuracy_programs_model,
    } = per_level;
    let big = cfg.procs.iter().copied().max().unwrap_or(2);
    let size = cfg.sizes.first().copied().unwrap_or(1024);
    let projection = projection::rows(&ctx, big, size, cfg.rounds)?;
    let mut verdicts = Verdicts {
        not_slower: 0,
        not_slower_median_only: 0,
        undecided: Vec::new(),
        slower: Vec::new(),
        within_aa: ipc
            .iter()
            .filter(|r| within_aa(&r.map_vs_linux, &r.linux_vs_linux) == Some(true))
            .count(),
        aa_rows: ipc
            .iter()
            .filter(|r| within_aa(&r.map_vs_linux, &r.linux_vs_linux).is_some())
            .count(),
        faster_1_3: ipc
            .iter()
            .filter(|r| r.map_vs_linux.ratio().0 <= 1.0 / 1.3)
            .count(),
        ipc_rows: ipc.len(),
        matters_rows: ipc
            .iter()
            .filter(|r| placement_can_matter(r) == Some(true))
            .count(),
        faster_1_3_where_matters: ipc
            .iter()
            .filter(|r| {
                placement_can_matter(r) == Some(true)
                    && r.map_decision.applies()
                    && r.map_vs_linux.ratio().0 <= 1.0 / 1.3
            })
            .count(),
        kept_together: ipc
            .iter()
            .filter(|r| placement_can_matter(r) == Some(false))
            .map(|r| format!("{} procs {} B", r.procs, r.size))
            .collect(),
        linux_kept: ipc
            .iter()
            .filter(|r| !r.map_decision.applies())
            .map(|r| format!("ipc {} procs {} B", r.procs, r.size))
            .chain(
                progs
                    .iter()
                    .filter(|r| !r.decision.applies())
                    .map(|r| r.program.name().to_string()),
            )
            .collect(),
        split_unknown: ipc.iter().filter(|r| placement_can_matter(r).is_none()).count(),
        prediction_within_10pct: accuracy_ipc.median_error <= 0.10
            && (accuracy_programs.compared == 0 || accuracy_programs.median_error <= 0.10),
        hop_byte_128: projection
            .iter()
            .filter(|p| p.topology == "pack:2 core:64 pu:1" && p.strategy == "affinity" && p.procs == 128)
            .map(|p| (p.workload.clone(), p.hop_byte_vs_treematch))
            .collect(),
    };
    let judged = ipc
        .iter()
        .map(|r| {
            (
                format!("ipc {} procs {} B", r.procs, r.size),
                &r.map_vs_linux,
                Some(&r.linux_vs_linux),
            )
        })
        .chain(
            progs
                .iter()
                .map(|r| (r.program.name().to_string(), &r.map_vs_linux, None)),
        );
    for (name, p, aa) in judged {
        let aa = aa
            .filter(|a| a.pairs > 0)
            .map(|a| format!(" (Linux/Linux {})", ratio_text(a)))
            .unwrap_or_default();
        match Standing::of(p) {
            Standing::NotSlower => verdicts.not_slower += 1,
            Standing::MedianOnly => verdicts.not_slower_median_only += 1,
            Standing::Undecided => verdicts.undecided.push(format!("{name}: {}{aa}", ratio_text(p))),
            Standing::Slower => verdicts.slower.push(format!("{name}: {}{aa}", ratio_text(p))),
        }
    }
    Ok(Report {
        calibration,
        hop: ctx.hop,
        ipc,
        programs: progs,
        overhead,
        projection,
        accuracy_ipc,
        accuracy_ipc_round_robin,
        accuracy_ipc_map,
        accuracy_ipc_linux,
        accuracy_programs,
        accuracy_programs_model,
        calibration_drift,
        calibration_runs,
        levels,
        accuracy_pooled,
        accuracy_linear,
        accuracy_crossing,
        verdicts,
        per_hop_assumed: cfg.per_hop,
        sweep_ms: cfg.sweep.as_secs_f64() * 1e3,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Paired ratios map/Linux (or Linux/Linux) from per-repeat times.
    fn ratios(r: &[f64]) -> multios_stats::Paired {
        let base = vec![1.0; r.len()];
        multios_stats::paired(&base, r).expect("equal lengths")
    }

    #[test]
    fn issue_12_a_row_is_slower_only_when_its_whole_interval_is_above_1_03() {
        // six repeats: the interval is the smallest and the largest ratio
        let s = |r: &[f64]| Standing::of(&ratios(r));
        assert_eq!(s(&[0.97, 0.98, 0.99, 1.0, 1.01, 1.02]), Standing::NotSlower);
        assert_eq!(s(&[0.95, 0.98, 0.99, 1.0, 1.01, 1.08]), Standing::MedianOnly);
        // the 19:28 quiet run's kind of row: median 1.06, interval reaching below 1
        assert_eq!(s(&[0.93, 1.02, 1.05, 1.07, 1.09, 1.12]), Standing::Undecided);
        assert_eq!(s(&[1.04, 1.05, 1.06, 1.07, 1.09, 1.12]), Standing::Slower);
        // fewer than 6 pairs: no interval, never shown slower
        assert_eq!(s(&[1.2, 1.3]), Standing::Undecided);
        assert_eq!(s(&[1.0, 1.01]), Standing::MedianOnly);
    }

    #[test]
    fn issue_12_a_ratio_inside_linuxs_own_spread_is_within_the_aa() {
        let aa = ratios(&[0.92, 0.97, 1.0, 1.02, 1.05, 1.09]);
        assert_eq!(
            within_aa(&ratios(&[1.0, 1.05, 1.06, 1.07, 1.08, 1.1]), &aa),
            Some(true)
        );
        assert_eq!(
            within_aa(&ratios(&[1.1, 1.12, 1.13, 1.14, 1.15, 1.2]), &aa),
            Some(false)
        );
        assert_eq!(
            within_aa(&ratios(&[0.5, 0.6, 0.7, 0.7, 0.8, 0.9]), &aa),
            Some(false)
        );
        // an A/A without an interval: within |median − 1| of 1
        let short = ratios(&[1.04, 1.06]);
        assert_eq!(within_aa(&ratios(&[1.03, 1.04]), &short), Some(true));
        assert_eq!(within_aa(&ratios(&[1.08, 1.1]), &short), Some(false));
        let none = multios_stats::Paired {
            pairs: 0,
            median: f64::NAN,
            ci: None,
            ci_coverage: None,
            fastest: f64::NAN,
        };
        assert_eq!(within_aa(&aa, &none), None);
    }
}
