//! `multios bench hpcc` (issue #5): HPC Challenge natively and in the LWK, runs alternated ABBA,
//! γ per kernel (LWK rate / native rate) pair by pair with a 95 % order-statistic interval.

use crate::output::{Format, Out, Table};
use multios_lwk::bench::{hpcc, median};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Native/LWK pairs of runs (at least 6 for a 95 % interval)
    #[arg(long, default_value_t = 7)]
    runs: usize,
    /// HPL's matrix order N (the other kernels size themselves from it; RandomAccess's table is
    /// about N²·4 bytes)
    #[arg(long, default_value_t = 2000)]
    n: u32,
    /// HPL's block size
    #[arg(long, default_value_t = 80)]
    nb: u32,
    /// The MPI launcher (Open MPI's, which Debian's hpcc is linked with)
    #[arg(long, default_value = "mpirun.openmpi")]
    mpirun: String,
}

#[derive(serde::Serialize)]
struct Row {
    metric: String,
    native: Vec<f64>,
    lwk: Vec<f64>,
    gamma_median: f64,
    gamma_ci95: Option<(f64, f64)>,
}

pub fn run(args: Args, out: &Out) -> crate::cmd::Exit {
    multios_lwk::check_kvm()?;
    anyhow::ensure!(args.runs >= 1, "--runs must be at least 1");
    anyhow::ensure!(
        args.n >= 100 && args.nb >= 1,
        "--n must be at least 100 and --nb at least 1"
    );
    let dir = std::env::temp_dir().join(format!("multios-bench-hpcc-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    std::fs::write(dir.join("hpccinf.txt"), hpcc::input(args.n, args.nb))?;
    let me = std::env::current_exe()?;
    let lwk: Vec<OsString> = vec![me.into(), "lwk".into(), "run".into(), "--".into()];
    let (mut native, mut guest) = (Vec::new(), Vec::new());
    for i in 0..args.runs {
        // ABBA, so neither side always runs right after the other.
        if i % 2 == 0 {
            native.push(hpcc::run_once(&dir, &args.mpirun, None)?);
        }
        guest.push(hpcc::run_once(&dir, &args.mpirun, Some(&lwk))?);
        if i % 2 == 1 {
            native.push(hpcc::run_once(&dir, &args.mpirun, None)?);
        }
        if out.progress {
            eprintln!("hpcc: {} of {} pairs", i + 1, args.runs);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);

    let series = |runs: &[BTreeMap<String, f64>], k: &str| -> Vec<f64> {
        runs.iter()
            .map(|r| r.get(k).copied().unwrap_or(f64::NAN))
            .collect()
    };
    let mut rows = Vec::new();
    for (key, label) in hpcc::METRICS {
        let (n, l) = (series(&native, key), series(&guest, key));
        // Rates: γ = LWK / native, i.e. the paired ratio of the LWK side over the native one.
        let (gamma_median, gamma_ci95) =
            multios_stats::paired(&n, &l).map_or((f64::NAN, None), |p| p.ratio());
        rows.push(Row {
            metric: label.to_string(),
            gamma_median,
            gamma_ci95,
            native: n,
            lwk: l,
        });
    }
    if out.format == Format::Json {
        out.json(&rows)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new([
        "kernel",
        "pairs",
        "native (median)",
        "LWK (median)",
        "γ = LWK / native [95 % CI]",
    ]);
    for r in &rows {
        t.row([
            r.metric.clone(),
            r.native.len().to_string(),
            format!("{:.4}", median(&r.native)),
            format!("{:.4}", median(&r.lwk)),
            match r.gamma_ci95 {
                Some((lo, hi)) => format!("{:.3} [{lo:.3}, {hi:.3}]", r.gamma_median),
                None => format!("{:.3}", r.gamma_median),
            },
        ]);
    }
    t.print(out);
    if out.format == Format::Table {
        println!(
            "hpcc -n 1 under {} (OPENBLAS_NUM_THREADS=1), HPL N = {}, NB = {}; γ is the median of the per-pair ratios",
            args.mpirun, args.n, args.nb
        );
    }
    Ok(ExitCode::SUCCESS)
}
