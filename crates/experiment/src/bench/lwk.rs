//! `multios bench lwk` (issue #5): the delegation round trip, static hello world end to end, and γ
//! (native time / LWK time) on a compute-bound and a TLB-bound program, all side by side in one
//! run, with the refined model's projection of each LWK run set next to the measured time. Issue
//! #14 adds a row of mprotect calls (the cost of enforcing page protections: its γ is native time
//! / LWK time of the same calls), and rows for kernel-shared mappings (setup of MAP_SHARED, io_uring
//! and perf rings; steady-state access to shared memory and to an io_uring's rings).

use crate::{ExperimentError, Progress};
use multios_lwk::bench::{self, Sample};
use multios_lwk::fc::{self, Mechanism};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What to run (the CLI's flags).
#[derive(Debug, Clone)]
pub struct Config {
    /// Native/LWK pairs of runs per program, alternated ABBA.
    pub runs: usize,
    /// System calls timed per round-trip mechanism.
    pub calls: u32,
    /// Array size of the TLB-bound program, MiB.
    pub tlb_mib: u64,
    /// Dependent random accesses of the TLB-bound program.
    pub tlb_steps: u64,
    /// Iterations of the compute-bound program.
    pub compute_iters: u64,
    /// The `multios` executable, whose `lwk run --profile` runs the LWK side.
    pub multios: PathBuf,
}

/// One round-trip mechanism's per-call times.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RoundTrip {
    pub mechanism: String,
    pub summary: fc::Summary,
}

/// One program's runs.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    pub name: String,
    pub native: Vec<Sample>,
    pub lwk: Vec<Sample>,
}

/// γ of one program pair by pair: the median of nativeᵢ / LWKᵢ and its 95 % interval.
#[derive(Debug, Clone, serde::Serialize)]
pub struct GammaPaired {
    pub ci95: Option<(f64, f64)>,
    pub median: Option<f64>,
    pub program: String,
}

/// What the benchmark measured (`--json` prints it as is; fields in the order the JSON has always
/// had them). The projections are not in the JSON.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    pub gamma_compute: f64,
    pub gamma_paired: Vec<GammaPaired>,
    pub programs: Vec<Row>,
    pub round_trips: Vec<RoundTrip>,
    /// Per program: the projected LWK time with the compute-bound γ and with its own γ.
    #[serde(skip)]
    pub projected: Vec<(Option<f64>, Option<f64>)>,
}

/// mprotect calls per run of the mprotect row (half take write access away, half give it back).
pub const MPROTECT_CALLS: u64 = 400;
/// The name of the mprotect row.
pub const MPROTECT_ROW: &str = "mprotect RW<->R (400 calls)";

/// The kernel-shared mapping rows (issue #14, `maps.c`): (row name, arguments). Setup rows time
/// N set-ups (their loop time / N is the cost of one, forwarded calls included); the access and
/// NOP rows are the steady state (target: γ ≥ 0.95, within 5 % of native).
pub const MAPPING_ROWS: [(&str, &[&str]); 5] = [
    (
        "MAP_SHARED memfd 64 MiB, 8 read+write passes",
        &["access", "8", "64"],
    ),
    ("io_uring NOPs, 32 per enter (64000)", &["nop", "64000"]),
    ("mmap+munmap MAP_SHARED memfd 1 MiB (200)", &["file", "200"]),
    ("io_uring setup+ring mmaps+close (100)", &["uring", "100"]),
    ("perf_event_open+ring mmap+close (100)", &["perf", "100"]),
];

/// The header of the round-trip table.
pub const ROUND_TRIP_HEADER: [&str; 5] = ["mechanism", "calls", "min_ns", "median_ns", "p99_ns"];

/// The header of the programs table.
pub const PROGRAM_HEADER: [&str; 10] = [
    "program",
    "runs",
    "native_loop_s",
    "lwk_loop_s",
    "gamma",
    "gamma_paired",
    "native_wall_s",
    "lwk_wall_s",
    "projected_gamma_compute_s",
    "projected_own_gamma_s",
];

/// Runs the benchmark (needs /dev/kvm); `progress` gets one step per mechanism and per program.
pub fn run(cfg: &Config, progress: &mut dyn Progress) -> Result<Outcome, ExperimentError> {
    if cfg.runs < 1 {
        return Err(ExperimentError::Config("--runs must be at least 1".into()));
    }
    // 0 calls per round trip would time nothing, and waited for ever.
    if cfg.calls < 1 {
        return Err(ExperimentError::Config("--calls must be at least 1".into()));
    }
    multios_lwk::check_kvm().map_err(|e| ExperimentError::Run(e.to_string()))?;
    let dir = std::env::temp_dir().join(format!("multios-bench-lwk-{}", std::process::id()));
    let r = measure(cfg, &dir, progress);
    let _ = std::fs::remove_dir_all(&dir);
    r
}

fn measure(cfg: &Config, dir: &Path, progress: &mut dyn Progress) -> Result<Outcome, ExperimentError> {
    let hello = bench::build(dir, bench::HELLO)?;
    let compute = bench::build(dir, bench::COMPUTE)?;
    let tlb = bench::build(dir, bench::TLB)?;
    let mprotect = bench::build(dir, bench::MPROTECT)?;
    let maps = bench::build(dir, bench::MAPS)?;
    let profile = dir.join("lwk-profile.json");
    let lwk_prefix: Vec<OsString> = vec![
        cfg.multios.clone().into(),
        "lwk".into(),
        "run".into(),
        "--profile".into(),
        profile.clone().into(),
        "--".into(),
    ];
    progress.start(
        (Mechanism::ALL.len() + 4 + MAPPING_ROWS.len()) as u64,
        "bench lwk: round trips and programs",
    );

    // 1. Round trips (the bench process is pinned like the LWK's vCPU thread: the default partition's).
    let mut ring_delegated_ns = f64::NAN;
    let mut round_trips = Vec::new();
    for m in Mechanism::ALL {
        let n = if m == Mechanism::ExitDelegated {
            cfg.calls.min(2000)
        } else {
            cfg.calls
        };
        let s = fc::measure(m, n, true).map_err(|e| ExperimentError::Run(format!("{}: {e}", m.name())))?;
        if m == Mechanism::RingDelegated {
            ring_delegated_ns = s.median_ns;
        }
        progress.advance(&format!("round trip {}", m.name()));
        round_trips.push(RoundTrip {
            mechanism: m.name().to_string(),
            summary: s,
        });
    }

    // 2. Programs, native and LWK alternately.
    let compute_args = [cfg.compute_iters.to_string()];
    let tlb_args = [cfg.tlb_mib.to_string(), cfg.tlb_steps.to_string()];
    let mprotect_args = [MPROTECT_CALLS.to_string()];
    let mut programs: Vec<(&str, &Path, Vec<&str>)> = vec![
        ("static hello world", &hello, vec![]),
        (
            "compute-bound",
            &compute,
            compute_args.iter().map(String::as_str).collect(),
        ),
        (
            "TLB-bound random walk",
            &tlb,
            tlb_args.iter().map(String::as_str).collect(),
        ),
        (
            MPROTECT_ROW,
            &mprotect,
            mprotect_args.iter().map(String::as_str).collect(),
        ),
    ];
    programs.extend(
        MAPPING_ROWS
            .iter()
            .map(|(name, a)| (*name, maps.as_path(), a.to_vec())),
    );
    // Natively on the CPU where `multios lwk run` puts its vCPU 0: the first of the default
    // partition's (the proxy takes the CPU with the device interrupts; `multios_host::irqs`).
    let (_, lwk_cpus) = multios_lwk::default_partition(&multios_lwk::available_cpus());
    let vcpu_cpu = lwk_cpus.first().copied().unwrap_or(0);
    let mut rows = Vec::new();
    let mut profiles = Vec::new();
    for (name, exe, a) in &programs {
        let reps = if *name == "static hello world" {
            cfg.runs * 4
        } else {
            cfg.runs
        };
        let mut row = Row {
            name: name.to_string(),
            native: Vec::new(),
            lwk: Vec::new(),
        };
        for i in 0..reps {
            // ABBA order, so neither side always runs right after the other.
            if i % 2 == 0 {
                row.native.push(bench::run_native(exe, a, vcpu_cpu)?);
            }
            row.lwk.push(bench::run(&lwk_prefix, exe, a)?);
            if i % 2 == 1 {
                row.native.push(bench::run_native(exe, a, vcpu_cpu)?);
            }
        }
        profiles.push(multios_profile::load(&profile)?);
        rows.push(row);
        progress.advance(name);
    }
    progress.finish();

    let gamma_compute = gamma_of(&rows[1]);
    // γ pair by pair: the median of nativeᵢ / LWKᵢ with its 95 % order-statistic interval
    // (multios_stats), which a drift of the shared machine does not bias.
    let loops = |v: &[Sample]| {
        v.iter()
            .map(|s| s.kernel_s.unwrap_or(f64::NAN))
            .collect::<Vec<_>>()
    };
    let gamma_paired: Vec<GammaPaired> = rows
        .iter()
        .map(|r| {
            let g = multios_stats::paired(&loops(&r.lwk), &loops(&r.native))
                .filter(|p| p.median.is_finite())
                .map(|p| p.ratio());
            GammaPaired {
                ci95: g.and_then(|g| g.1),
                median: g.map(|g| g.0),
                program: r.name.clone(),
            }
        })
        .collect();
    let fc = ring_delegated_ns * 0.5e-9;
    let projected = rows
        .iter()
        .zip(&profiles)
        .map(|(r, p)| {
            let native_wall = med(&r.native, |s| Some(s.wall_s));
            let g = gamma_of(r);
            (
                project(p, native_wall, gamma_compute, fc),
                project(p, native_wall, if g.is_finite() { g } else { gamma_compute }, fc),
            )
        })
        .collect();
    Ok(Outcome {
        gamma_compute,
        gamma_paired,
        programs: rows,
        round_trips,
        projected,
    })
}

/// The median of one field over the samples that have it.
fn med(v: &[Sample], f: fn(&Sample) -> Option<f64>) -> f64 {
    bench::median(&v.iter().filter_map(f).collect::<Vec<_>>())
}

/// γ = median native loop time / median LWK loop time.
fn gamma_of(r: &Row) -> f64 {
    med(&r.native, |s| s.kernel_s) / med(&r.lwk, |s| s.kernel_s)
}

/// The round-trip table's rows.
pub fn round_trip_rows(o: &Outcome) -> Vec<[String; 5]> {
    o.round_trips
        .iter()
        .map(|r| {
            let s = &r.summary;
            [
                r.mechanism.clone(),
                s.calls.to_string(),
                format!("{:.0}", s.min_ns),
                format!("{:.0}", s.median_ns),
                format!("{:.0}", s.p99_ns),
            ]
        })
        .collect()
}

/// The programs table's rows.
pub fn program_rows(o: &Outcome) -> Vec<[String; 10]> {
    o.programs
        .iter()
        .zip(&o.gamma_paired)
        .zip(&o.projected)
        .map(|((r, pg), (projected, projected_own))| {
            [
                r.name.clone(),
                r.native.len().to_string(),
                fmt(med(&r.native, |s| s.kernel_s), 4),
                fmt(med(&r.lwk, |s| s.kernel_s), 4),
                fmt(gamma_of(r), 3),
                match (pg.median, pg.ci95) {
                    (Some(m), Some((lo, hi))) => format!("{m:.3} [{lo:.3}, {hi:.3}]"),
                    (Some(m), None) => format!("{m:.3}"),
                    (None, _) => "-".into(),
                },
                fmt(med(&r.native, |s| Some(s.wall_s)), 4),
                fmt(med(&r.lwk, |s| Some(s.wall_s)), 4),
                projected.map_or("-".into(), |t| fmt(t, 4)),
                projected_own.map_or("-".into(), |t| fmt(t, 4)),
            ]
        })
        .collect()
}

fn fmt(v: f64, digits: usize) -> String {
    if v.is_finite() {
        format!("{v:.digits$}")
    } else {
        "-".into()
    }
}

/// The refined model's projected LWK time for a program whose native run took `native_wall`.
fn project(p: &multios_profile::Profile, native_wall: f64, gamma: f64, fc: f64) -> Option<f64> {
    if !(gamma.is_finite() && gamma > 0.0 && fc.is_finite()) {
        return None;
    }
    let mut w = multios_model::Workload::from_profile(p);
    w.c = (native_wall - w.sum_g()).max(0.0);
    let delegated: BTreeSet<String> = p
        .syscalls
        .iter()
        .filter(|s| s.placement.as_ref().is_some_and(|pl| pl.delegated_count > 0))
        .map(|s| s.name.clone())
        .collect();
    multios_model::refined(&w, &delegated, &multios_model::Params::new(gamma, fc))
        .ok()
        .map(|r| r.t_d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(wall_s: f64, kernel_s: f64) -> Sample {
        Sample {
            wall_s,
            kernel_s: Some(kernel_s),
        }
    }

    #[test]
    fn a_program_row_shows_gamma_and_dashes_for_what_is_missing() {
        let o = Outcome {
            gamma_compute: 2.0,
            gamma_paired: vec![GammaPaired {
                ci95: None,
                median: Some(2.0),
                program: "compute-bound".into(),
            }],
            programs: vec![Row {
                name: "compute-bound".into(),
                native: vec![sample(1.0, 0.8), sample(1.2, 0.8)],
                lwk: vec![sample(0.6, 0.4)],
            }],
            round_trips: Vec::new(),
            projected: vec![(None, Some(0.5))],
        };
        let r = &program_rows(&o)[0];
        assert_eq!(r[1], "2");
        assert_eq!(r[4], "2.000");
        assert_eq!(r[5], "2.000");
        assert_eq!(r[6], "1.1000");
        assert_eq!(r[8], "-");
        assert_eq!(r[9], "0.5000");
    }

    #[test]
    fn no_projection_without_a_finite_positive_gamma() {
        let p = multios_profile::Profile::new(vec!["x".into()], "test", "high");
        assert!(project(&p, 1.0, f64::NAN, 1e-6).is_none());
        assert!(project(&p, 1.0, 0.0, 1e-6).is_none());
        assert!(project(&p, 1.0, 1.0, f64::NAN).is_none());
    }
}
