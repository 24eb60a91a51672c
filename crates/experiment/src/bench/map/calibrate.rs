//! The cost model measured here, from microbenchmarks that are not the runs it predicts: the IPC
//! program with each process pinned by itself (`multios-ipcbench … CPUS`), at message sizes the
//! rows do not use ([`SIZES`]), in four arrangements:
//! - **same**: one pair on one CPU — the CPU cost of a message when both ends share a CPU;
//! - **split**: two pairs, each split over the two CPUs — the CPU cost of a message between CPUs
//!   that are kept busy (the other pair's process is there to run), from the processes' CPU time;
//! - **alone**: one pair split over the two CPUs with nothing else — what is left of its wall time
//!   after the CPU cost is the latency of waking an idle CPU (on this VM a halt exit), per wake-up;
//! - **pages**: same and split again with 64 shared pages written by each side between messages —
//!   what a shared page costs per round trip when the sharers run apart (cache lines that move).
//!
//! CPU times come from the processes' rusage and do not depend on other programs sharing the
//! machine; the share of a CPU the runs got (CPU time / wall time of `same`, 1 on a quiet machine)
//! is measured too, and the prediction divides its times by it.

use super::MapBenchError;
use multios_map::partition::CostModel;
use multios_map::programs::{parse, IpcRun};
use serde::Serialize;
use std::path::Path;
use std::process::Command;

/// Message sizes of the calibration runs (the rows use 1–64 KiB).
pub const SIZES: [usize; 2] = [128, 32768];
/// Shared pages written per hand-off in the `pages` runs.
pub const PAGES: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Arrangement {
    Same,
    Split,
    Alone,
    SamePages,
    SplitPages,
}

impl Arrangement {
    pub const ALL: [Arrangement; 5] = [
        Arrangement::Same,
        Arrangement::Split,
        Arrangement::Alone,
        Arrangement::SamePages,
        Arrangement::SplitPages,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Arrangement::Same => "one pair, one CPU",
            Arrangement::Split => "two pairs, each split over two CPUs",
            Arrangement::Alone => "one pair split over two otherwise idle CPUs",
            Arrangement::SamePages => "one pair, one CPU, 64 shared pages written per hand-off",
            Arrangement::SplitPages => "two split pairs, 64 shared pages written per hand-off",
        }
    }

    /// Process count and the CPU of each process (c0, c1: two CPUs of this machine).
    fn layout(self, c0: u32, c1: u32) -> (usize, Vec<u32>) {
        match self {
            Arrangement::Same | Arrangement::SamePages => (2, vec![c0, c0]),
            Arrangement::Split | Arrangement::SplitPages => (4, vec![c0, c1, c0, c1]),
            Arrangement::Alone => (2, vec![c0, c1]),
        }
    }

    fn pages(self) -> bool {
        matches!(self, Arrangement::SamePages | Arrangement::SplitPages)
    }
}

/// One arrangement at one size: medians per exchange over the rounds.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    pub arrangement: Arrangement,
    pub size: usize,
    pub wall_us: f64,
    pub cpu_us: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    pub samples: Vec<Sample>,
    pub cost: CostModel,
    /// CPU time / wall time of the `same` runs (1 on a quiet machine).
    pub cpu_share: f64,
    /// Exchanges per calibration run.
    pub rounds: u64,
}

/// One run of the IPC program pinned by itself.
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
        .args([
            procs.to_string(),
            size.to_string(),
            rounds.to_string(),
            list.join(","),
        ])
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

/// Raw per-exchange measurements of one round: (arrangement, size, wall µs, CPU µs).
pub type Round = Vec<(Arrangement, usize, f64, f64)>;

/// One round of every arrangement at every size.
pub fn round(prog: &Path, c0: u32, c1: u32, rounds: u64) -> Result<Round, MapBenchError> {
    let mut out = Vec::new();
    for a in Arrangement::ALL {
        let (procs, cpus) = a.layout(c0, c1);
        let pages = format!("pages={PAGES}");
        let sizes: &[usize] = if a.pages() { &SIZES[..1] } else { &SIZES };
        for &size in sizes {
            let r = pinned_run(
                prog,
                procs,
                size,
                rounds,
                &cpus,
                a.pages().then_some(pages.as_str()),
            )?;
            let ex = r.exchanges as f64;
            out.push((a, size, r.wall_ns as f64 / 1e3 / ex, r.cpu_ns as f64 / 1e3 / ex));
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

/// The cost model from rounds of measurements (medians per arrangement and size first).
pub fn fit(rounds: &[Round], per_run: u64) -> Calibration {
    let mut samples = Vec::new();
    for a in Arrangement::ALL {
        for &size in &SIZES {
            let pick: Vec<&(Arrangement, usize, f64, f64)> = rounds
                .iter()
                .flatten()
                .filter(|x| x.0 == a && x.1 == size)
                .collect();
            if pick.is_empty() {
                continue;
            }
            let wall: Vec<f64> = pick.iter().map(|x| x.2).collect();
            let cpu: Vec<f64> = pick.iter().map(|x| x.3).collect();
            samples.push(Sample {
                arrangement: a,
                size,
                wall_us: median(&wall),
                cpu_us: median(&cpu),
            });
        }
    }
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
        .filter(|x| x.0 == Arrangement::Same && x.2 > 0.0)
        .map(|x| (x.3 / x.2).clamp(0.05, 1.0))
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
        rounds: per_run,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_the_costs_it_was_given() {
        // CPU per exchange: same 2·3000 + 0.2·(s+1); split 2·9000 + 0.5·(s+1); alone adds 2·80 µs;
        // a quiet machine (wall = CPU on one CPU); pages cost 75 ns together, 400 apart, per page
        let mut r: Round = Vec::new();
        for &s in &SIZES {
            let x = (s + 1) as f64;
            let same = (6000.0 + 0.2 * x) / 1e3;
            let split = (18000.0 + 0.5 * x) / 1e3;
            r.push((Arrangement::Same, s, same, same));
            r.push((Arrangement::Split, s, split / 2.0, split));
            r.push((Arrangement::Alone, s, split + 160.0, split + 30.0));
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
        let c = fit(&[r], 100);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-6 * b.abs().max(1.0);
        assert!(close(c.cost.local_ns_per_event, 3000.0), "{:?}", c.cost);
        assert!(close(c.cost.local_ns_per_byte, 0.2));
        assert!(close(c.cost.ns_per_event, 9000.0));
        assert!(close(c.cost.ns_per_byte, 0.5));
        assert!(close(c.cost.ns_per_idle_wake, 80_000.0), "{:?}", c.cost);
        assert!(close(c.cost.ns_per_shared_page, 325.0), "{:?}", c.cost);
        assert!(close(c.cpu_share, 1.0));
    }
}
