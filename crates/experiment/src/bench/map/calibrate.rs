//! The cost model measured here, from microbenchmarks that are not the runs it predicts: the IPC
//! program with each process pinned by itself (`multios-ipcbench … CPUS`), at message sizes the
//! rows do not use ([`SIZES`]), in these arrangements:
//! - **same**: one pair on one CPU — an exchange when both ends share a CPU;
//! - **split**: two pairs, each split over the two CPUs — an exchange between CPUs that the other
//!   pair keeps partly busy, and (CPU time) what an exchange between CPUs costs;
//! - **alone**: one pair split over the two CPUs with nothing else — every hand-off wakes an idle
//!   CPU (on this VM a halt exit);
//! - **parallel**: a pair on each CPU — what a pair on one CPU loses while the other CPU works;
//! - **pages**: same and split again with 64 shared pages written by each side between messages —
//!   what a shared page costs per round trip when the sharers run apart (cache lines that move);
//! - **compute**: two compute loops on one CPU, then one on each CPU — the wall time per CPU-second
//!   of work alone and with both CPUs busy (two vCPUs of this VM do not give twice one's speed);
//! - **crowd**: 3 and 6 pairs on one CPU — what an exchange costs when more processes share the
//!   CPU's run queue and caches (one pair alone hands the CPU straight to its partner);
//! - **spread**: 6 and 12 pairs, each split over the two CPUs — the cross-CPU exchange when the
//!   CPUs are kept busy and crowded (the two-pair arrangement still waits for idle CPUs);
//! - **linux**: 1, 2, 6 and 12 pairs with nothing pinned — what Linux's own placement of pairs
//!   costs (a lone pair split at every hand-off, many pairs kept together but spread unevenly or
//!   moved): the model's time of "leave it to Linux", which `map run` compares a placement with;
//! - **packed**: 2 and 6 pairs on *each* CPU, each pair's ends together — the placement `map run`
//!   applies to many pairs, measured as it runs (both CPUs busy, crowded run queues) rather than
//!   composed from the one-CPU crowding and the one-pair-per-CPU slowdown.
//!
//! The largest size, 60 KiB, stays below the pipe's 64 KiB capacity: a longer message fills the
//! pipe and costs extra hand-offs, a different regime from the rows' sizes (≤ 64 KiB); and close
//! to it, so that a 64 KiB row extends the last segment by a little, not by its own length (at
//! idle priority a 32 → 48 KiB slope extended to 64 KiB doubled its noise).
//!
//! The model's curves are wall times per exchange at each size (what the rows measure, in the same
//! conditions: the machine's load is in both); the linear [`CostModel`] (CPU times, a line over the
//! sizes) is what the partitioner and the placement use, and what `--costs` writes.

use super::MapBenchError;
use crate::crosslink::{self, Prober};
use multios_map::partition::CostModel;
use multios_map::programs::{parse, IpcRun};
use multios_map::project::{CurveSpread, Curves, CROWD, LINUX, PACKED, POINTS, SPREAD};
use serde::Serialize;
use std::path::Path;
use std::process::Command;

/// Message sizes of the calibration runs (the rows use 1–64 KiB, powers of 4 from 1 KiB).
pub const SIZES: [usize; POINTS] = [256, 2048, 8192, 32768, 61440];
/// Shared pages written per hand-off in the `pages` runs.
pub const PAGES: usize = 64;
/// Multiply-adds per round of the compute loops.
pub const COMPUTE_UNIT: usize = 40_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arrangement {
    Same,
    Split,
    Alone,
    Parallel,
    SamePages,
    SplitPages,
    ComputeOne,
    ComputeBoth,
    /// `CROWD[0]` pairs on one CPU.
    CrowdFew,
    /// `CROWD[1]` pairs on one CPU.
    CrowdMany,
    /// `SPREAD[0]` pairs, each split over the two CPUs.
    SpreadFew,
    /// `SPREAD[1]` pairs, each split over the two CPUs.
    SpreadMany,
    /// `LINUX[0..4]` pairs with nothing pinned (Linux's placement).
    LinuxOne,
    LinuxTwo,
    LinuxFew,
    LinuxMany,
    /// `PACKED[0]` pairs on each of the two CPUs, each pair's ends together.
    PackedFew,
    /// `PACKED[1]` pairs on each of the two CPUs.
    PackedMany,
}

impl Arrangement {
    pub const ALL: [Arrangement; 18] = [
        Arrangement::Same,
        Arrangement::Split,
        Arrangement::Alone,
        Arrangement::Parallel,
        Arrangement::SamePages,
        Arrangement::SplitPages,
        Arrangement::ComputeOne,
        Arrangement::ComputeBoth,
        Arrangement::CrowdFew,
        Arrangement::CrowdMany,
        Arrangement::SpreadFew,
        Arrangement::SpreadMany,
        Arrangement::LinuxOne,
        Arrangement::LinuxTwo,
        Arrangement::LinuxFew,
        Arrangement::LinuxMany,
        Arrangement::PackedFew,
        Arrangement::PackedMany,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Arrangement::Same => "one pair, one CPU",
            Arrangement::Split => "two pairs, each split over two CPUs",
            Arrangement::Alone => "one pair split over two otherwise idle CPUs",
            Arrangement::Parallel => "a pair on each CPU",
            Arrangement::SamePages => "one pair, one CPU, 64 shared pages written per hand-off",
            Arrangement::SplitPages => "two split pairs, 64 shared pages written per hand-off",
            Arrangement::ComputeOne => "two compute loops on one CPU",
            Arrangement::ComputeBoth => "a compute loop on each CPU",
            Arrangement::CrowdFew => "3 pairs on one CPU",
            Arrangement::CrowdMany => "6 pairs on one CPU",
            Arrangement::SpreadFew => "6 pairs, each split over two CPUs",
            Arrangement::SpreadMany => "12 pairs, each split over two CPUs",
            Arrangement::LinuxOne => "1 pair, nothing pinned (Linux)",
            Arrangement::LinuxTwo => "2 pairs, nothing pinned (Linux)",
            Arrangement::LinuxFew => "6 pairs, nothing pinned (Linux)",
            Arrangement::LinuxMany => "12 pairs, nothing pinned (Linux)",
            Arrangement::PackedFew => "2 pairs on each CPU, each pair together",
            Arrangement::PackedMany => "6 pairs on each CPU, each pair together",
        }
    }

    /// Pairs in the run (each runs its own exchanges).
    pub fn pairs(self) -> usize {
        match self {
            Arrangement::Same
            | Arrangement::SamePages
            | Arrangement::Alone
            | Arrangement::ComputeOne
            | Arrangement::ComputeBoth => 1,
            Arrangement::Split | Arrangement::SplitPages | Arrangement::Parallel => 2,
            Arrangement::CrowdFew => CROWD[0],
            Arrangement::CrowdMany => CROWD[1],
            Arrangement::SpreadFew => SPREAD[0],
            Arrangement::SpreadMany => SPREAD[1],
            Arrangement::LinuxOne => LINUX[0],
            Arrangement::LinuxTwo => LINUX[1],
            Arrangement::LinuxFew => LINUX[2],
            Arrangement::LinuxMany => LINUX[3],
            Arrangement::PackedFew => 2 * PACKED[0],
            Arrangement::PackedMany => 2 * PACKED[1],
        }
    }

    /// Process count and the CPU of each process (c0, c1: two CPUs of this machine; none: nothing
    /// pinned).
    fn layout(self, c0: u32, c1: u32) -> (usize, Vec<u32>) {
        match self {
            Arrangement::Same | Arrangement::SamePages | Arrangement::ComputeOne => (2, vec![c0, c0]),
            Arrangement::Split | Arrangement::SplitPages => (4, vec![c0, c1, c0, c1]),
            Arrangement::Parallel => (4, vec![c0, c0, c1, c1]),
            Arrangement::Alone | Arrangement::ComputeBoth => (2, vec![c0, c1]),
            Arrangement::CrowdFew | Arrangement::CrowdMany => (2 * self.pairs(), vec![c0; 2 * self.pairs()]),
            Arrangement::SpreadFew | Arrangement::SpreadMany => (
                2 * self.pairs(),
                std::iter::repeat_n([c0, c1], self.pairs()).flatten().collect(),
            ),
            Arrangement::LinuxOne
            | Arrangement::LinuxTwo
            | Arrangement::LinuxFew
            | Arrangement::LinuxMany => (2 * self.pairs(), Vec::new()),
            // pair p on c0 when p is even, on c1 when odd: both ends of each pair on one CPU
            Arrangement::PackedFew | Arrangement::PackedMany => (
                2 * self.pairs(),
                std::iter::repeat_n([c0, c0, c1, c1], self.pairs() / 2)
                    .flatten()
                    .collect(),
            ),
        }
    }

    /// Whether the run uses both CPUs (pinned on both, or nothing pinned): what the cross-CPU
    /// level can move — a crossing pays the round trip, and at the lowest level (≈ 60 ns) the two
    /// vCPUs share a core, so two busy CPUs slow each other more. The one-CPU arrangements cannot
    /// see it.
    pub fn uses_both_cpus(self) -> bool {
        let (_, cpus) = self.layout(0, 1);
        cpus.is_empty() || (cpus.contains(&0) && cpus.contains(&1))
    }

    /// Whether a pair's two ends may run on different CPUs (pinned apart, or nothing pinned): the
    /// runs whose exchanges pay the round trip itself. A pair on each CPU, pairs packed on each
    /// CPU and a compute loop on each use both CPUs without crossing.
    pub fn crosses(self) -> bool {
        matches!(
            self,
            Arrangement::Split
                | Arrangement::Alone
                | Arrangement::SplitPages
                | Arrangement::SpreadFew
                | Arrangement::SpreadMany
        ) || self.is_linux()
    }

    /// Whether nothing is pinned (Linux's placement, which varies from run to run by itself).
    pub fn is_linux(self) -> bool {
        matches!(
            self,
            Arrangement::LinuxOne | Arrangement::LinuxTwo | Arrangement::LinuxFew | Arrangement::LinuxMany
        )
    }

    /// The IPC program's fifth argument.
    fn extra(self) -> Option<String> {
        match self {
            Arrangement::SamePages | Arrangement::SplitPages => Some(format!("pages={PAGES}")),
            Arrangement::ComputeOne | Arrangement::ComputeBoth => Some("compute".into()),
            _ => None,
        }
    }

    /// The sizes (for compute: the unit of work) it runs at.
    pub fn sizes(self) -> &'static [usize] {
        match self {
            Arrangement::SamePages | Arrangement::SplitPages => &SIZES[..1],
            Arrangement::ComputeOne | Arrangement::ComputeBoth => &[COMPUTE_UNIT],
            _ => &SIZES,
        }
    }
}

/// One arrangement at one size: medians per exchange over the rounds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Sample {
    pub arrangement: Arrangement,
    pub size: usize,
    pub wall_us: f64,
    pub cpu_us: f64,
    /// The wall time's median's 95 % interval over the rounds ([`median_interval`]: with fewer
    /// than 6 rounds the smallest and largest run): how far the median could be from this
    /// measurement's own rounds (since h-map4; `map run` reports its decision at the ends least
    /// favourable to a placement).
    pub wall_low_us: f64,
    pub wall_high_us: f64,
}

/// The 95 % interval of the median of `v` (distribution-free, order statistics); with fewer than
/// 6 values, where no such interval reaches 95 %, the smallest and the largest.
pub fn median_interval(v: &[f64]) -> (f64, f64) {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if s.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    s.sort_by(f64::total_cmp);
    let k = multios_stats::median_ci_rank(s.len(), 0.95).map_or(1, |(k, _)| k);
    (s[k - 1], s[s.len() - k])
}

#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    pub samples: Vec<Sample>,
    pub cost: CostModel,
    /// CPU time / wall time of the `same` runs (about 0.9 on a quiet machine: a context switch is
    /// partly charged to no process).
    pub cpu_share: f64,
    /// Wall times per exchange at each size, made non-decreasing in the size (None when an
    /// arrangement is missing).
    pub curves: Option<Curves>,
    /// Wall / CPU time of compute loops alone on one CPU, and with both CPUs computing.
    pub stretch_one: f64,
    pub stretch_parallel: f64,
    /// A pair on one CPU while a pair runs on the other: wall per exchange ÷ alone (median over
    /// the sizes).
    pub parallel_ipc: f64,
    /// Exchanges per calibration run.
    pub rounds: u64,
    /// The curves at the low and at the high end of each median's interval over the rounds
    /// ([`Sample::wall_low_us`], `wall_high_us`), each made non-decreasing in the size: what
    /// `map run` reports its decision with at the ends least favourable to a placement (since
    /// h-map4).
    pub spread: Option<CurveSpread>,
}

/// One run of the IPC program pinned by itself (`cpus` empty: nothing pinned).
pub fn pinned_run(
    prog: &Path,
    procs: usize,
    size: usize,
    rounds: u64,
    cpus: &[u32],
    extra: Option<&str>,
) -> Result<IpcRun, MapBenchError> {
    let list: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
    let out = Command::new(prog)
        .args([procs.to_string(), size.to_string(), rounds.to_string()])
        .args((!list.is_empty()).then(|| list.join(",")))
        .args(extra)
        .output()
        .map_err(|e| MapBenchError::Program(format!("{}: {e}", prog.display())))?;
    let text = String::from_utf8_lossy(&out.stdout);
    match parse(&text) {
        Some(r) if out.status.success() && r.exchanges > 0 => Ok(r),
        _ => Err(MapBenchError::Program(format!(
            "{} {procs} {size} {rounds} {}: {} '{}' {}",
            prog.display(),
            list.join(","),
            out.status,
            text.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
    }
}

/// One calibration run: its per-exchange times and the cross-CPU level probed around it.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Run {
    pub arrangement: Arrangement,
    pub size: usize,
    pub wall_us: f64,
    pub cpu_us: f64,
    /// The round trip between the two CPUs, ns: the mean of the probes just before and just after
    /// the run (None: not probed).
    pub level_ns: Option<f64>,
    /// Whether those two probes saw one level ([`crosslink::steady`]); a run that did not is left
    /// out of the per-level fits (its level changed while it ran).
    pub steady: bool,
    /// Other tasks' CPU time and the hypervisor's steal during the run, each a share of the two
    /// CPUs' time ([`super::busy`]; 10 ms ticks: a mean over many runs tells, one run does not).
    pub others_share: Option<f64>,
    pub steal_share: Option<f64>,
}

impl From<(Arrangement, usize, f64, f64)> for Run {
    /// An unprobed run.
    fn from((arrangement, size, wall_us, cpu_us): (Arrangement, usize, f64, f64)) -> Run {
        Run {
            arrangement,
            size,
            wall_us,
            cpu_us,
            level_ns: None,
            steady: true,
            others_share: None,
            steal_share: None,
        }
    }
}

impl Run {
    /// The level of a steady probed run.
    pub fn steady_level(&self) -> Option<f64> {
        self.level_ns.filter(|_| self.steady)
    }
}

/// The runs of one round.
pub type Round = Vec<Run>;

/// One round of every arrangement at every size, `rounds` exchanges per pair (the IPC rows' own
/// count, whatever the number of pairs), with the cross-CPU round trip probed before the first run
/// and after each (`prober`).
///
/// Until 2026-11-27 the arrangements of 3–12 pairs shared about `rounds` exchanges among their
/// pairs (200 each for 12). A run's time per exchange counts from the common start to the last
/// pair's end, so a short run carries its uneven start and its tail: 6 pairs left to Linux took
/// 4.5–4.9 µs per exchange of 1 KiB at 333 exchanges each and 3.2–3.7 µs at 2 000 (3.4–3.5 at
/// 6 000), 12 pairs 4.5–6.6 at 200 and 4.0–4.2 at 2 000. The curves of many pairs were 20–40 %
/// dear, and the projection of 8–32 processes with them (docs/BENCHMARKS.md, "The calibration's
/// crowded runs at the rows' length").
pub fn round(
    prog: &Path,
    c0: u32,
    c1: u32,
    rounds: u64,
    prober: &mut dyn Prober,
) -> Result<Round, MapBenchError> {
    let mut out = Vec::new();
    let mut before = prober.probe()?;
    for a in Arrangement::ALL {
        let (procs, cpus) = a.layout(c0, c1);
        let extra = a.extra();
        for &size in a.sizes() {
            let busy = super::busy::start([c0, c1]);
            let r = pinned_run(prog, procs, size, rounds, &cpus, extra.as_deref())?;
            let used = super::busy::end(busy, r.cpu_ns as f64);
            let after = prober.probe()?;
            let ex = r.exchanges as f64;
            let mut run = Run::from((a, size, r.wall_ns as f64 / 1e3 / ex, r.cpu_ns as f64 / 1e3 / ex));
            (run.others_share, run.steal_share) = (used.map(|u| u.0), used.map(|u| u.1));
            if let (Some(x), Some(y)) = (before, after) {
                run.level_ns = Some((x + y) / 2.0);
                run.steady = crosslink::steady(&[x, y]);
            }
            out.push(run);
            before = after;
        }
    }
    Ok(out)
}

fn median(v: &[f64]) -> f64 {
    multios_stats::median(v).unwrap_or(f64::NAN)
}

/// A straight line through (x, y) by least squares: (intercept, slope), both ≥ 0.
fn line(points: &[(f64, f64)]) -> (f64, f64) {
    let n = points.len() as f64;
    if points.is_empty() {
        return (0.0, 0.0);
    }
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = if sxx > 0.0 { (sxy / sxx).max(0.0) } else { 0.0 };
    ((my - slope * mx).max(0.0), slope)
}

/// Medians per arrangement and size of `rounds`.
pub fn samples(rounds: &[Round]) -> Vec<Sample> {
    let mut samples = Vec::new();
    for a in Arrangement::ALL {
        for &size in a.sizes() {
            let pick: Vec<&Run> = rounds
                .iter()
                .flatten()
                .filter(|x| x.arrangement == a && x.size == size)
                .collect();
            if pick.is_empty() {
                continue;
            }
            let wall: Vec<f64> = pick.iter().map(|x| x.wall_us).collect();
            let cpu: Vec<f64> = pick.iter().map(|x| x.cpu_us).collect();
            let (wall_low_us, wall_high_us) = median_interval(&wall);
            samples.push(Sample {
                arrangement: a,
                size,
                wall_us: median(&wall),
                cpu_us: median(&cpu),
                wall_low_us,
                wall_high_us,
            });
        }
    }
    samples
}

/// How far two halves of the calibration differ: the median over arrangements and sizes of
/// |wall₁ − wall₂| / their mean (the noise under which a prediction is made). The arrangements with
/// nothing pinned are left out: they measure Linux's choices as well as the machine, and the figure
/// stays comparable with the runs before they were added.
pub fn drift(first: &[Round], second: &[Round]) -> f64 {
    drift_of(first, second, |_| true)
}

/// [`drift`] over the arrangements `keep` accepts.
pub fn drift_of(first: &[Round], second: &[Round], keep: impl Fn(Arrangement) -> bool) -> f64 {
    let (a, b) = (samples(first), samples(second));
    let d: Vec<f64> = a
        .iter()
        .filter(|x| !x.arrangement.is_linux() && keep(x.arrangement))
        .filter_map(|x| {
            let y = b
                .iter()
                .find(|y| y.arrangement == x.arrangement && y.size == x.size)?;
            let mean = (x.wall_us + y.wall_us) / 2.0;
            (mean > 0.0).then(|| (x.wall_us - y.wall_us).abs() / mean)
        })
        .collect();
    median(&d)
}

/// The cost model from rounds of measurements (medians per arrangement and size first); `cpus`:
/// the CPUs the arrangements with nothing pinned could use.
pub fn fit(rounds: &[Round], per_run: u64, cpus: usize) -> Calibration {
    let samples = samples(rounds);
    let get = |a: Arrangement| -> Vec<&Sample> { samples.iter().filter(|s| s.arrangement == a).collect() };
    // An exchange is two messages (SIZE bytes one way, one byte back): 2 events, SIZE + 1 bytes.
    let points = |a: Arrangement| -> Vec<(f64, f64)> {
        get(a)
            .iter()
            .map(|s| ((s.size + 1) as f64, s.cpu_us * 1e3))
            .collect()
    };
    let (local_a, local_b) = line(&points(Arrangement::Same));
    let (cross_a, cross_b) = line(&points(Arrangement::Split));
    let shares: Vec<f64> = rounds
        .iter()
        .flatten()
        .filter(|x| x.arrangement == Arrangement::Same && x.wall_us > 0.0)
        .map(|x| (x.cpu_us / x.wall_us).clamp(0.05, 1.0))
        .collect();
    let cpu_share = if shares.is_empty() { 1.0 } else { median(&shares) };
    // alone: wall = CPU path / share + 2 idle wake-ups per exchange
    let wakes: Vec<f64> = get(Arrangement::Alone)
        .iter()
        .map(|s| {
            let path = cross_a + cross_b * (s.size + 1) as f64;
            ((s.wall_us * 1e3 - path / cpu_share) / 2.0).max(0.0)
        })
        .collect();
    // pages: the extra CPU time of writing them, apart minus together, per page and round trip
    let extra = |with: Arrangement, without: Arrangement| -> Option<f64> {
        let w = get(with).first().map(|s| (s.size, s.cpu_us))?;
        let wo = get(without).iter().find(|s| s.size == w.0).map(|s| s.cpu_us)?;
        Some((w.1 - wo) * 1e3)
    };
    let page = match (
        extra(Arrangement::SplitPages, Arrangement::Split),
        extra(Arrangement::SamePages, Arrangement::Same),
    ) {
        (Some(apart), Some(together)) => ((apart - together) / PAGES as f64).max(0.0),
        _ => CostModel::default().ns_per_shared_page,
    };
    // the curves: wall (busy: CPU) ns per exchange at each size, all five arrangements present
    let at = |a: Arrangement, size: usize| get(a).into_iter().find(|s| s.size == size).copied();
    // which value of a sample a curve takes: the median, or an end of its interval
    #[derive(Clone, Copy)]
    enum End {
        Median,
        Low,
        High,
    }
    let curve_at = |a: Arrangement, cpu: bool, end: End| -> Option<[f64; POINTS]> {
        let mut v = [0.0; POINTS];
        for (k, &size) in SIZES.iter().enumerate() {
            let s = at(a, size)?;
            v[k] = 1e3
                * match (cpu, end) {
                    (true, _) => s.cpu_us,
                    (false, End::Median) => s.wall_us,
                    (false, End::Low) => s.wall_low_us,
                    (false, End::High) => s.wall_high_us,
                };
        }
        Some(v)
    };
    let curves_at = |end: End| {
        let curve = |a: Arrangement, cpu: bool| curve_at(a, cpu, end);
        (|| {
            Some(Curves {
                bytes: SIZES.map(|s| (s + 1) as f64),
                together: curve(Arrangement::Same, false)?,
                alone: curve(Arrangement::Alone, false)?,
                split: curve(Arrangement::Split, false)?,
                busy: curve(Arrangement::Split, true)?,
                crowd: (|| {
                    Some([
                        curve(Arrangement::CrowdFew, false)?,
                        curve(Arrangement::CrowdMany, false)?,
                    ])
                })(),
                spread: (|| {
                    Some([
                        curve(Arrangement::SpreadFew, false)?,
                        curve(Arrangement::SpreadMany, false)?,
                    ])
                })(),
                linux: (|| {
                    Some([
                        curve(Arrangement::LinuxOne, false)?,
                        curve(Arrangement::LinuxTwo, false)?,
                        curve(Arrangement::LinuxFew, false)?,
                        curve(Arrangement::LinuxMany, false)?,
                    ])
                })(),
                linux_cpus: cpus,
                packed: (|| {
                    Some([
                        curve(Arrangement::PackedFew, false)?,
                        curve(Arrangement::PackedMany, false)?,
                    ])
                })(),
                alone_cpu: curve(Arrangement::Alone, true),
            })
        })()
        .map(Curves::monotone)
    };
    let curves = curves_at(End::Median);
    let rounds_seen = rounds.iter().filter(|r| !r.is_empty()).count();
    let spread = match (curves_at(End::Low), curves_at(End::High)) {
        (Some(low), Some(high)) => Some(CurveSpread {
            low,
            high,
            rounds: rounds_seen,
        }),
        _ => None,
    };
    // a pair on each CPU: per pair, twice the wall per exchange (either pair's), ÷ one pair alone
    let slowdowns: Vec<f64> = SIZES
        .iter()
        .filter_map(|&size| {
            let (p, s) = (at(Arrangement::Parallel, size)?, at(Arrangement::Same, size)?);
            (s.wall_us > 0.0).then(|| 2.0 * p.wall_us / s.wall_us)
        })
        .collect();
    let parallel_ipc = if slowdowns.is_empty() {
        1.0
    } else {
        median(&slowdowns)
    };
    // compute: wall per CPU-ns; on each CPU at once, each loop had its CPU for the whole wall time
    let stretch = |a: Arrangement, loops_at_once: f64| -> f64 {
        at(a, COMPUTE_UNIT)
            .filter(|s| s.cpu_us > 0.0)
            .map_or(1.0, |s| loops_at_once * s.wall_us / s.cpu_us)
    };
    let (stretch_one, stretch_parallel) = (
        stretch(Arrangement::ComputeOne, 1.0),
        stretch(Arrangement::ComputeBoth, 2.0),
    );
    Calibration {
        cost: CostModel {
            ns_per_event: cross_a / 2.0,
            ns_per_byte: cross_b,
            local_ns_per_event: local_a / 2.0,
            local_ns_per_byte: local_b,
            ns_per_idle_wake: if wakes.is_empty() {
                CostModel::default().ns_per_idle_wake
            } else {
                median(&wakes)
            },
            ns_per_shared_page: page,
        },
        samples,
        cpu_share,
        curves,
        stretch_one,
        stretch_parallel,
        parallel_ipc,
        rounds: per_run,
        spread,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A round of measurements made from known costs: CPU per exchange same 2·3000 + 0.2·(s+1),
    /// split 2·9000 + 0.5·(s+1); alone adds 2·80 µs of waiting; a quiet machine (wall = CPU on one
    /// CPU); a pair on each CPU runs 1.25× slower; compute loops 1.5× slower on both CPUs; pages
    /// cost 75 ns together, 400 apart, per page.
    fn made_up() -> Round {
        let mut r: Vec<(Arrangement, usize, f64, f64)> = Vec::new();
        for &s in &SIZES {
            let x = (s + 1) as f64;
            let same = (6000.0 + 0.2 * x) / 1e3;
            let split = (18000.0 + 0.5 * x) / 1e3;
            r.push((Arrangement::Same, s, same, same));
            r.push((Arrangement::Split, s, split / 2.0, split));
            r.push((Arrangement::Alone, s, split + 160.0, split + 30.0));
            r.push((Arrangement::Parallel, s, 1.25 * same / 2.0, same));
            r.push((Arrangement::CrowdFew, s, 1.2 * same, same));
            r.push((Arrangement::CrowdMany, s, 1.4 * same, same));
            r.push((Arrangement::SpreadFew, s, 0.4 * split, split));
            r.push((Arrangement::SpreadMany, s, 0.5 * split, split));
            r.push((Arrangement::PackedFew, s, 0.7 * same, same));
            r.push((Arrangement::PackedMany, s, 0.8 * same, same));
            for (k, a) in [
                Arrangement::LinuxOne,
                Arrangement::LinuxTwo,
                Arrangement::LinuxFew,
                Arrangement::LinuxMany,
            ]
            .into_iter()
            .enumerate()
            {
                r.push((a, s, (k + 1) as f64 * same, same));
            }
        }
        let s = SIZES[0];
        let x = (s + 1) as f64;
        r.push((
            Arrangement::SamePages,
            s,
            0.0,
            (6000.0 + 0.2 * x + 64.0 * 75.0) / 1e3,
        ));
        r.push((
            Arrangement::SplitPages,
            s,
            0.0,
            (18000.0 + 0.5 * x + 64.0 * 400.0) / 1e3,
        ));
        r.push((Arrangement::ComputeOne, COMPUTE_UNIT, 20.0, 20.0));
        r.push((Arrangement::ComputeBoth, COMPUTE_UNIT, 15.0, 20.0));
        r.into_iter().map(Run::from).collect()
    }

    #[test]
    fn recovers_the_costs_it_was_given() {
        let c = fit(&[made_up()], 100, 2);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6 * b.abs().max(1.0);
        assert!(close(c.cost.local_ns_per_event, 3000.0), "{:?}", c.cost);
        assert!(close(c.cost.local_ns_per_byte, 0.2));
        assert!(close(c.cost.ns_per_event, 9000.0));
        assert!(close(c.cost.ns_per_byte, 0.5));
        assert!(close(c.cost.ns_per_idle_wake, 80_000.0), "{:?}", c.cost);
        assert!(close(c.cost.ns_per_shared_page, 325.0), "{:?}", c.cost);
        assert!(close(c.cpu_share, 1.0));
        assert!(close(c.parallel_ipc, 1.25), "{}", c.parallel_ipc);
        assert!(close(c.stretch_one, 1.0));
        assert!(close(c.stretch_parallel, 1.5));
        let curves = c.curves.expect("curves");
        assert_eq!(curves.linux_cpus, 2);
        for (k, &s) in SIZES.iter().enumerate() {
            let x = (s + 1) as f64;
            assert!(close(curves.together[k], 6000.0 + 0.2 * x));
            assert!(close(curves.busy[k], 18000.0 + 0.5 * x));
            assert!(close(curves.split[k], (18000.0 + 0.5 * x) / 2.0));
            assert!(close(curves.alone[k], 18000.0 + 0.5 * x + 160_000.0));
            let (crowd, spread) = (curves.crowd.expect("crowd"), curves.spread.expect("spread"));
            assert!(close(crowd[0][k], 1.2 * (6000.0 + 0.2 * x)));
            assert!(close(crowd[1][k], 1.4 * (6000.0 + 0.2 * x)));
            assert!(close(spread[0][k], 0.4 * (18000.0 + 0.5 * x)));
            assert!(close(spread[1][k], 0.5 * (18000.0 + 0.5 * x)));
            let packed = curves.packed.expect("packed");
            assert!(close(packed[0][k], 0.7 * (6000.0 + 0.2 * x)));
            assert!(close(packed[1][k], 0.8 * (6000.0 + 0.2 * x)));
            let linux = curves.linux.expect("linux");
            for (j, curve) in linux.iter().enumerate() {
                assert!(close(curve[k], (j + 1) as f64 * (6000.0 + 0.2 * x)));
            }
        }
    }

    #[test]
    fn issue_12_the_spread_is_each_medians_interval_over_the_rounds() {
        // three rounds: the same costs × 0.9, × 1, × 1.2 (fewer than 6: the ends are the smallest
        // and the largest run)
        let scaled = |f: f64| -> Round {
            made_up()
                .into_iter()
                .map(|r| Run {
                    wall_us: r.wall_us * f,
                    ..r
                })
                .collect()
        };
        let c = fit(&[scaled(0.9), scaled(1.0), scaled(1.2)], 100, 2);
        let (curves, spread) = (c.curves.expect("curves"), c.spread.expect("spread"));
        assert_eq!(spread.rounds, 3);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6 * b.abs().max(1.0);
        for k in 0..POINTS {
            assert!(close(spread.low.together[k], 0.9 * curves.together[k]));
            assert!(close(spread.high.together[k], 1.2 * curves.together[k]));
            let (lo, hi, med) = (
                spread.low.linux.expect("linux"),
                spread.high.linux.expect("linux"),
                curves.linux.expect("linux"),
            );
            assert!(close(lo[3][k], 0.9 * med[3][k]) && close(hi[3][k], 1.2 * med[3][k]));
        }
        // 9 values: the 95 % interval of the median is the 2nd and the 8th
        let v: Vec<f64> = (1..=9).map(f64::from).collect();
        assert_eq!(median_interval(&v), (2.0, 8.0));
        assert_eq!(median_interval(&[3.0, 1.0, 2.0]), (1.0, 3.0));
        assert!(median_interval(&[]).0.is_nan());
    }

    #[test]
    fn halves_that_agree_have_no_drift() {
        let r = made_up();
        assert_eq!(drift(std::slice::from_ref(&r), std::slice::from_ref(&r)), 0.0);
        let slower: Round = r
            .iter()
            .map(|&x| Run {
                wall_us: 1.5 * x.wall_us,
                ..x
            })
            .collect();
        assert!((drift(&[r], &[slower]) - 0.4).abs() < 1e-9);
    }
}
