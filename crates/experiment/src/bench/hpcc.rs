//! `multios bench hpcc` (issue #5): HPC Challenge natively and in the LWK, runs alternated ABBA,
//! γ per kernel (LWK rate / native rate) pair by pair with a 95 % order-statistic interval.

use crate::{ExperimentError, Progress};
use multios_lwk::bench::{hpcc, median};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What to run (the CLI's flags).
#[derive(Debug, Clone)]
pub struct Config {
    /// Native/LWK pairs of runs.
    pub runs: usize,
    /// HPL's matrix order N.
    pub n: u32,
    /// HPL's block size.
    pub nb: u32,
    /// The MPI launcher.
    pub mpirun: String,
    /// The `multios` executable, whose `lwk run` runs the LWK side.
    pub multios: PathBuf,
}

impl Config {
    /// Checks the ranges; the error names the flag at fault.
    pub fn check(&self) -> Result<(), ExperimentError> {
        if self.runs < 1 {
            return Err(ExperimentError::Config("--runs must be at least 1".into()));
        }
        if self.n < 100 || self.nb < 1 {
            return Err(ExperimentError::Config(
                "--n must be at least 100 and --nb at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// One HPCC metric's runs and γ (`--json` prints the rows as is).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    pub metric: String,
    pub native: Vec<f64>,
    pub lwk: Vec<f64>,
    pub gamma_median: f64,
    pub gamma_ci95: Option<(f64, f64)>,
}

/// The table's header.
pub const HEADER: [&str; 5] = [
    "kernel",
    "pairs",
    "native (median)",
    "LWK (median)",
    "γ = LWK / native [95 % CI]",
];

/// One HPCC run's metrics by key.
pub type Metrics = BTreeMap<String, f64>;

/// The runs of each side, native and in the LWK, in the order they were taken.
pub type Runs = (Vec<Metrics>, Vec<Metrics>);

/// Runs HPCC `cfg.runs` times each side (needs /dev/kvm, hpcc and mpirun); one progress step per pair.
pub fn run(cfg: &Config, progress: &mut dyn Progress) -> Result<Vec<Row>, ExperimentError> {
    multios_lwk::check_kvm().map_err(|e| ExperimentError::Run(e.to_string()))?;
    cfg.check()?;
    let dir = std::env::temp_dir().join(format!("multios-bench-hpcc-{}", std::process::id()));
    let r = measure(cfg, &dir, progress);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(rows(&r?))
}

fn measure(cfg: &Config, dir: &Path, progress: &mut dyn Progress) -> Result<Runs, ExperimentError> {
    std::fs::create_dir_all(dir).map_err(ExperimentError::io(format!("creating {}", dir.display())))?;
    let input = dir.join("hpccinf.txt");
    std::fs::write(&input, hpcc::input(cfg.n, cfg.nb))
        .map_err(ExperimentError::io(format!("writing {}", input.display())))?;
    let lwk: Vec<OsString> = vec![
        cfg.multios.clone().into(),
        "lwk".into(),
        "run".into(),
        "--".into(),
    ];
    let (mut native, mut guest) = (Vec::new(), Vec::new());
    progress.start(cfg.runs as u64, "bench hpcc: native/LWK pairs");
    for i in 0..cfg.runs {
        // ABBA, so neither side always runs right after the other.
        if i % 2 == 0 {
            native.push(hpcc::run_once(dir, &cfg.mpirun, None)?);
        }
        guest.push(hpcc::run_once(dir, &cfg.mpirun, Some(&lwk))?);
        if i % 2 == 1 {
            native.push(hpcc::run_once(dir, &cfg.mpirun, None)?);
        }
        progress.advance(&format!("hpcc: {} of {} pairs", i + 1, cfg.runs));
    }
    progress.finish();
    Ok((native, guest))
}

/// γ per metric from the runs of each side (in the order they were taken).
pub fn rows((native, guest): &Runs) -> Vec<Row> {
    let series = |runs: &[Metrics], k: &str| -> Vec<f64> {
        runs.iter()
            .map(|r| r.get(k).copied().unwrap_or(f64::NAN))
            .collect()
    };
    hpcc::METRICS
        .iter()
        .map(|(key, label)| {
            let (n, l) = (series(native, key), series(guest, key));
            // Rates: γ = LWK / native, i.e. the paired ratio of the LWK side over the native one.
            let (gamma_median, gamma_ci95) =
                multios_stats::paired(&n, &l).map_or((f64::NAN, None), |p| p.ratio());
            Row {
                metric: label.to_string(),
                gamma_median,
                gamma_ci95,
                native: n,
                lwk: l,
            }
        })
        .collect()
}

/// The table's rows.
pub fn table_rows(rows: &[Row]) -> Vec<[String; 5]> {
    rows.iter()
        .map(|r| {
            [
                r.metric.clone(),
                r.native.len().to_string(),
                format!("{:.4}", median(&r.native)),
                format!("{:.4}", median(&r.lwk)),
                match r.gamma_ci95 {
                    Some((lo, hi)) => format!("{:.3} [{lo:.3}, {hi:.3}]", r.gamma_median),
                    None => format!("{:.3}", r.gamma_median),
                },
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gamma_is_the_paired_ratio_of_lwk_over_native_rates() {
        let (key, label) = hpcc::METRICS[0];
        let run = |v: f64| BTreeMap::from([(key.to_string(), v)]);
        let native: Vec<_> = (1..=6).map(|i| run(i as f64)).collect();
        let lwk: Vec<_> = (1..=6).map(|i| run(1.1 * i as f64)).collect();
        let rows = rows(&(native, lwk));
        assert_eq!(rows[0].metric, label);
        assert!((rows[0].gamma_median - 1.1).abs() < 1e-9, "{:?}", rows[0]);
        assert!(rows[0].gamma_ci95.is_some());
        // A metric no run printed: no γ.
        assert!(rows.iter().skip(1).all(|r| r.gamma_median.is_nan()));
        let t = table_rows(&rows);
        assert_eq!(t[0][1], "6");
        assert!(t[0][4].starts_with("1.100 ["));
    }

    #[test]
    fn small_matrices_are_refused_naming_the_flag() {
        let c = Config {
            runs: 1,
            n: 10,
            nb: 1,
            mpirun: "mpirun".into(),
            multios: PathBuf::from("multios"),
        };
        assert!(c.check().expect_err("refused").to_string().starts_with("--n"));
    }
}
