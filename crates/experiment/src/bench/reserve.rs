//! `multios bench reserve` (issue #14): what `lwk run --reserve` (IHK's reserve cpu/mem) changes,
//! measured side by side in one run on the LWK's CPU:
//!
//! * FWQ (the noise tools' fixed-work-quantum program, `multios noise fwq --lwk`'s guest) in the
//!   LWK without and with the reservation, alternated ABBA: the share of time lost to noise, the
//!   slowest quantum against the fastest, p99 against the median;
//! * the compute-bound loop (`bench lwk`'s program) natively, natively on the reserved CPU (the
//!   same reservation, the process entering it before exec: Linux with an isolated cpuset, the
//!   paper's "Linux+cgroup+isolcpus"), in the LWK and in the reserved LWK, the four rotated round
//!   by round; γ = native / LWK pair by pair, unreserved and reserved.
//!
//! Each LWK run is a `multios lwk run [--reserve] --cpus C --proxy-cpu P` of its own, as a user
//! would start it. What reservation cannot change on a nested VM — the host's interrupts and its
//! scheduling of this VM's vCPUs — stays in both sides (docs/LWK.md, "Reserved partitions").

use crate::{ExperimentError, Progress};
use multios_lwk::bench::{self, Sample};
use multios_noise::clock::Clock;
use multios_noise::measure::Kind;
use multios_noise::stats::Summary;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What to run (the CLI's flags).
#[derive(Debug, Clone)]
pub struct Config {
    /// Rounds: each runs FWQ unreserved and reserved (ABBA) and the compute program natively,
    /// in the LWK and reserved (rotated). At least 6 for a 95 % interval.
    pub rounds: usize,
    /// FWQ's work quantum, µs, and the length of one FWQ run, s.
    pub fwq_quantum_us: f64,
    pub fwq_seconds: f64,
    /// Iterations of the compute-bound program.
    pub compute_iters: u64,
    /// The LWK's CPU and the proxy's (None: the last available CPU and the first).
    pub cpu: Option<usize>,
    pub proxy_cpu: Option<usize>,
    /// The `multios` executable whose `lwk run` runs the LWK side.
    pub multios: PathBuf,
}

/// One FWQ run in the LWK.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FwqRun {
    pub round: usize,
    pub reserved: bool,
    /// Order statistics of the ns per work quantum.
    pub summary: Summary,
}

/// One FWQ measure, unreserved against reserved.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FwqRow {
    pub measure: String,
    pub unreserved: f64,
    pub reserved: f64,
    /// Median of the paired ratios reservedᵢ / unreservedᵢ, and its 95 % interval.
    pub ratio: f64,
    pub ci95: Option<(f64, f64)>,
}

/// One compute round: loop times natively, natively on the reserved CPU, in the LWK, in the
/// reserved LWK.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct ComputeRound {
    pub native_s: f64,
    pub native_reserved_s: f64,
    pub lwk_s: f64,
    pub reserved_s: f64,
}

/// γ pair by pair: the median of nativeᵢ / LWKᵢ and its 95 % interval.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Gamma {
    pub median: f64,
    pub ci95: Option<(f64, f64)>,
}

/// What the benchmark measured (`--json` prints it as is).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    pub cpu: usize,
    pub proxy_cpu: usize,
    /// The reservation, as the LWK reported it on the last reserved run.
    pub reservation: String,
    pub fwq_quantum_us: f64,
    pub fwq_seconds: f64,
    pub fwq: Vec<FwqRun>,
    pub fwq_rows: Vec<FwqRow>,
    pub compute: Vec<ComputeRound>,
    pub gamma_unreserved: Gamma,
    pub gamma_reserved: Gamma,
}

/// The columns of [`fwq_rows`]'s table.
pub const FWQ_HEADER: [&str; 5] = [
    "measure",
    "unreserved",
    "reserved",
    "reserved/unreserved",
    "interval",
];

fn run_err(e: impl std::fmt::Display) -> ExperimentError {
    ExperimentError::Run(e.to_string())
}

/// `multios lwk run [--reserve] --cpus C --proxy-cpu P --mem-mib 64 --` (the program follows).
fn lwk_prefix(cfg: &Config, cpu: usize, proxy: usize, reserved: bool) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec![
        cfg.multios.clone().into(),
        "lwk".into(),
        "run".into(),
        "--cpus".into(),
        cpu.to_string().into(),
        "--proxy-cpu".into(),
        proxy.to_string().into(),
        "--mem-mib".into(),
        "64".into(),
    ];
    if reserved {
        v.push("--reserve".into());
    }
    v.push("--".into());
    v
}

/// Runs the rounds; one progress step per program run.
pub fn run(cfg: &Config, progress: &mut dyn Progress) -> Result<Outcome, ExperimentError> {
    // NaN passed `<= 0.0` and inf asked for an endless FWQ run: both are refused.
    let positive = |x: f64| x > 0.0 && x.is_finite();
    if cfg.rounds == 0 || !positive(cfg.fwq_quantum_us) || !positive(cfg.fwq_seconds) {
        return Err(ExperimentError::Config(format!(
            "--rounds, --fwq-quantum-us and --fwq-seconds must be positive finite numbers, got {}, {} and {}",
            cfg.rounds, cfg.fwq_quantum_us, cfg.fwq_seconds
        )));
    }
    multios_lwk::check_kvm().map_err(run_err)?;
    let cpus = multios_lwk::available_cpus();
    let cpu = cfg
        .cpu
        .or(cpus.last().copied())
        .ok_or_else(|| run_err("no CPU available"))?;
    let proxy = cfg
        .proxy_cpu
        .or(cpus.iter().copied().find(|&c| c != cpu))
        .ok_or_else(|| {
            ExperimentError::Config("--reserve needs a second CPU for Linux (the proxy)".into())
        })?;
    let dir = std::env::temp_dir().join(format!("multios-bench-reserve-{}", std::process::id()));
    let _cleanup = Cleanup(dir.clone());
    let fwq = multios_noise::guest::build_for(&dir, Kind::Fwq)?;
    let compute = bench::build(&dir, bench::COMPUTE)?;
    let clock = Clock::calibrate(50);
    let out_file = dir.join("fwq.out");
    let quantum_ns = cfg.fwq_quantum_us * 1e3;
    let fwq_args = multios_noise::guest::args(quantum_ns, cfg.fwq_seconds * 1e9, &clock, &out_file);
    let fwq_argv: Vec<&str> = fwq_args.iter().map(String::as_str).collect();
    let iters = cfg.compute_iters.to_string();
    progress.start(
        cfg.rounds as u64 * 6,
        "bench reserve: FWQ and γ, unreserved and reserved",
    );
    let mut fwq_runs = Vec::new();
    let mut rounds = Vec::new();
    let mut reservation = String::new();
    for round in 0..cfg.rounds {
        // FWQ, ABBA.
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for reserved in order {
            let o = run_lwk(&lwk_prefix(cfg, cpu, proxy, reserved), &fwq, &fwq_argv)?;
            if reserved {
                if let Some(line) = o.lines().find(|l| l.contains("reserved")) {
                    reservation = line.trim_start_matches("multios lwk: ").to_string();
                }
            }
            let series = multios_noise::guest::read_series(Kind::Fwq, &out_file, &clock, quantum_ns, cpu)?;
            let values: Vec<f64> = series.samples.iter().map(|&(_, v)| v).collect();
            let summary = Summary::of(&values).ok_or_else(|| run_err("FWQ wrote no samples"))?;
            let _ = std::fs::remove_file(&out_file);
            progress.advance(&format!(
                "FWQ {}: noise {:.3} %",
                if reserved { "reserved" } else { "unreserved" },
                summary.noise_pct
            ));
            fwq_runs.push(FwqRun {
                round,
                reserved,
                summary,
            });
        }
        // γ: native, native reserved, LWK, reserved LWK, rotated.
        let mut t = [0.0f64; 4];
        for k in 0..4 {
            let which = (round + k) % 4;
            let s: Sample = match which {
                0 => bench::run_native(&compute, &[&iters], cpu)?,
                1 => native_reserved(&compute, &[&iters], cpu)?,
                w => bench::run(&lwk_prefix(cfg, cpu, proxy, w == 3), &compute, &[&iters])?,
            };
            t[which] = s.kernel_s.unwrap_or(f64::NAN);
            progress.advance(&format!(
                "compute {}: {:.3} s",
                [
                    "natively",
                    "natively, reserved",
                    "in the LWK",
                    "in the reserved LWK"
                ][which],
                t[which]
            ));
        }
        rounds.push(ComputeRound {
            native_s: t[0],
            native_reserved_s: t[1],
            lwk_s: t[2],
            reserved_s: t[3],
        });
    }
    progress.finish();
    let gamma = |lwk: Vec<f64>, native: Vec<f64>| {
        // nativeᵢ / LWKᵢ as `paired` computes it: LWK as the base.
        let p = multios_stats::paired(&lwk, &native).map(|p| p.ratio());
        Gamma {
            median: p.map_or(f64::NAN, |p| p.0),
            ci95: p.and_then(|p| p.1),
        }
    };
    Ok(Outcome {
        cpu,
        proxy_cpu: proxy,
        reservation,
        fwq_quantum_us: cfg.fwq_quantum_us,
        fwq_seconds: cfg.fwq_seconds,
        fwq_rows: fwq_rows(&fwq_runs),
        fwq: fwq_runs,
        gamma_unreserved: gamma(
            rounds.iter().map(|r| r.lwk_s).collect(),
            rounds.iter().map(|r| r.native_s).collect(),
        ),
        gamma_reserved: gamma(
            rounds.iter().map(|r| r.reserved_s).collect(),
            rounds.iter().map(|r| r.native_reserved_s).collect(),
        ),
        compute: rounds,
    })
}

/// Runs `exe args` natively on `cpu` reserved: the same reservation `lwk run --reserve` makes,
/// the child entering it (and pinned to the CPU) between fork and exec.
fn native_reserved(exe: &Path, args: &[&str], cpu: usize) -> Result<Sample, ExperimentError> {
    let r = multios_host::cgroup::reserve::Reservation::isolate(&[cpu]).map_err(run_err)?;
    let admit = std::fs::OpenOptions::new()
        .write(true)
        .open(r.admit_path())
        .map_err(ExperimentError::io(r.admit_path().display().to_string()))?;
    let mut cmd = std::process::Command::new(exe);
    cmd.args(args);
    let fd = std::os::fd::AsRawFd::as_raw_fd(&admit);
    multios_noise::sys::pre_exec_place(&mut cmd, Some(&[cpu]), Some(fd)).map_err(run_err)?;
    let s = bench::run_command(cmd)?;
    drop(r);
    Ok(s)
}

/// Removes the scratch directory.
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `prefix… exe args…` (an LWK run) and returns its stderr (the LWK's notes).
fn run_lwk(prefix: &[OsString], exe: &Path, args: &[&str]) -> Result<String, ExperimentError> {
    let (p, rest) = prefix.split_first().ok_or_else(|| run_err("no command"))?;
    let o = std::process::Command::new(p)
        .args(rest)
        .arg(exe)
        .args(args)
        .output()
        .map_err(ExperimentError::io(format!("running {}", p.to_string_lossy())))?;
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    if !o.status.success() {
        return Err(run_err(format!(
            "{} in the LWK: {} {err}",
            exe.display(),
            o.status
        )));
    }
    Ok(err)
}

/// The FWQ measures, unreserved against reserved, pair by pair (round by round).
pub fn fwq_rows(runs: &[FwqRun]) -> Vec<FwqRow> {
    /// One FWQ measure: its name and how it is read from a run's summary.
    type Measure = (&'static str, fn(&Summary) -> f64);
    let side = |reserved: bool, f: fn(&Summary) -> f64| -> Vec<f64> {
        let mut v: Vec<(usize, f64)> = runs
            .iter()
            .filter(|r| r.reserved == reserved)
            .map(|r| (r.round, f(&r.summary)))
            .collect();
        v.sort_by_key(|x| x.0);
        v.into_iter().map(|x| x.1).collect()
    };
    let measures: [Measure; 4] = [
        ("noise, % of the time", |s| s.noise_pct),
        ("slowest / fastest quantum", |s| s.max_over_min),
        ("p99 / median quantum", |s| s.p99 / s.median),
        ("median quantum, µs", |s| s.median / 1e3),
    ];
    measures
        .iter()
        .map(|(name, f)| {
            let (u, r) = (side(false, *f), side(true, *f));
            let p = multios_stats::paired(&u, &r).map(|p| p.ratio());
            FwqRow {
                measure: name.to_string(),
                unreserved: bench::median(&u),
                reserved: bench::median(&r),
                ratio: p.map_or(f64::NAN, |p| p.0),
                ci95: p.and_then(|p| p.1),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(noise: f64, median: f64) -> Summary {
        Summary {
            n: 10,
            min: median * 0.9,
            median,
            mean: median,
            p99: median * 1.5,
            max: median * 3.0,
            max_over_min: 3.0 / 0.9,
            noise_pct: noise,
        }
    }

    #[test]
    fn fwq_rows_pair_the_runs_of_each_round() {
        let runs = vec![
            FwqRun {
                round: 0,
                reserved: false,
                summary: summary(2.0, 100.0),
            },
            FwqRun {
                round: 0,
                reserved: true,
                summary: summary(1.0, 100.0),
            },
            FwqRun {
                round: 1,
                reserved: true,
                summary: summary(0.5, 100.0),
            },
            FwqRun {
                round: 1,
                reserved: false,
                summary: summary(2.0, 100.0),
            },
        ];
        let rows = fwq_rows(&runs);
        assert_eq!(rows[0].measure, "noise, % of the time");
        // Ratios 0.5 and 0.25: their median 0.375.
        assert!((rows[0].ratio - 0.375).abs() < 1e-9, "{:?}", rows[0]);
        assert_eq!((rows[0].unreserved, rows[0].reserved), (2.0, 0.75));
        assert!((rows[3].unreserved - 0.1).abs() < 1e-12);
    }
}
