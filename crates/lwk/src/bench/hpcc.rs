//! HPC Challenge (Debian's `hpcc`, linked with Open MPI) natively and in the LWK: a real HPC code
//! whose kernels stress different things — HPL and DGEMM the FPU, STREAM memory bandwidth,
//! RandomAccess the TLB, FFT and PTRANS a mix — so γ can be read per kernel.
//!
//! hpcc reads `hpccinf.txt` in its working directory and appends its results to `hpccoutf.txt`
//! as `Name=value` lines. One rank runs under `mpirun -n 1` (a singleton MPI_Init would fork
//! Open MPI's daemon from inside the LWK); OpenBLAS is kept to one thread on both sides.

use super::BenchError;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

/// The results compared, each "higher is better".
pub const METRICS: &[(&str, &str)] = &[
    ("HPL_Tflops", "HPL (Tflop/s)"),
    ("StarDGEMM_Gflops", "DGEMM (Gflop/s)"),
    ("StarSTREAM_Triad", "STREAM triad (GB/s)"),
    ("StarRandomAccess_GUPs", "RandomAccess (GUP/s)"),
    ("StarFFT_Gflops", "FFT (Gflop/s)"),
    ("PTRANS_GBs", "PTRANS (GB/s)"),
];

/// `hpccinf.txt` for one process (P = Q = 1), HPL order `n` with blocks of `nb`; the other
/// kernels size themselves from `n` (RandomAccess: a table of about n²·8/2 bytes).
pub fn input(n: u32, nb: u32) -> String {
    let lines: [(String, &str); 36] = [
        ("HPC Challenge input written by multios bench hpcc".into(), ""),
        ("(HPL's input format, then HPCC's own lines)".into(), ""),
        (
            "HPL.out".into(),
            "output file name (unused: device 8 = hpccoutf.txt)",
        ),
        ("8".into(), "device out"),
        ("1".into(), "number of problem sizes"),
        (n.to_string(), "N"),
        ("1".into(), "number of block sizes"),
        (nb.to_string(), "NB"),
        ("0".into(), "process mapping: row-major"),
        ("1".into(), "number of process grids"),
        ("1".into(), "P"),
        ("1".into(), "Q"),
        ("16.0".into(), "residual threshold"),
        ("1".into(), "number of panel factorizations"),
        ("2".into(), "PFACT: right-looking"),
        ("1".into(), "number of recursion stopping criteria"),
        ("4".into(), "NBMIN"),
        ("1".into(), "number of panel counts in recursion"),
        ("2".into(), "NDIV"),
        ("1".into(), "number of recursive panel factorizations"),
        ("1".into(), "RFACT: Crout"),
        ("1".into(), "number of broadcasts"),
        ("1".into(), "BCAST: increasing ring, modified"),
        ("1".into(), "number of look-ahead depths"),
        ("1".into(), "look-ahead depth"),
        ("2".into(), "SWAP: mix"),
        ("64".into(), "swapping threshold"),
        ("0".into(), "L1 transposed"),
        ("0".into(), "U transposed"),
        ("1".into(), "equilibration"),
        ("8".into(), "memory alignment (doubles)"),
        ("#### line 32: a separator HPCC skips ####".into(), ""),
        ("0".into(), "additional PTRANS problem sizes"),
        ("1200 10000 30000".into(), "PTRANS sizes (unused)"),
        ("0".into(), "additional PTRANS block sizes"),
        ("40 9 8 13 13 20 16 32 64".into(), "PTRANS block sizes (unused)"),
    ];
    lines
        .iter()
        .map(|(v, what)| {
            if what.is_empty() {
                format!("{v}\n")
            } else {
                format!("{v:<24} {what}\n")
            }
        })
        .collect()
}

/// The `Name=value` results of one run (the last value of each name, since hpcc appends).
pub fn parse(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .filter_map(|(k, v)| Some((k.trim().to_string(), v.trim().parse::<f64>().ok()?)))
        .collect()
}

/// Runs hpcc once in `dir` (holding `hpccinf.txt`) under `mpirun`, natively or with `lwk`
/// (the command prefix that runs a program in the LWK), and returns its results.
pub fn run_once(
    dir: &Path,
    mpirun: &str,
    lwk: Option<&[OsString]>,
) -> Result<BTreeMap<String, f64>, BenchError> {
    let out = dir.join("hpccoutf.txt");
    let _ = std::fs::remove_file(&out);
    let mut cmd = Command::new(mpirun);
    cmd.current_dir(dir)
        .args(["--allow-run-as-root", "-n", "1", "-x", "OPENBLAS_NUM_THREADS=1"]);
    if let Some(prefix) = lwk {
        cmd.args(prefix);
    }
    cmd.arg("hpcc");
    let what = format!("{cmd:?} in {}", dir.display());
    let o = cmd.output().map_err(|e| BenchError::Run {
        what: what.clone(),
        detail: format!("{e} (apt-get install hpcc openmpi-bin)"),
    })?;
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    let r = parse(&text);
    if !o.status.success() || r.get("Success") != Some(&1.0) {
        return Err(BenchError::Run {
            what,
            detail: format!(
                "{}; hpccoutf.txt has Success={:?}",
                String::from_utf8_lossy(&o.stderr).trim(),
                r.get("Success")
            ),
        });
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_input_has_hpccs_36_lines_with_n_and_nb_in_place() {
        let t = input(1500, 64);
        let l: Vec<&str> = t.lines().collect();
        assert_eq!(l.len(), 36);
        assert!(l[5].starts_with("1500 "), "{}", l[5]);
        assert!(l[7].starts_with("64 "), "{}", l[7]);
        assert!(l[10].starts_with("1 ") && l[11].starts_with("1 "), "P = Q = 1");
    }

    #[test]
    fn results_are_read_from_name_value_lines() {
        let r = parse("Begin of Summary section.\nHPL_Tflops=0.00448607\nSuccess=1\nsessionStartTime=x\n");
        assert_eq!(r.get("HPL_Tflops"), Some(&0.00448607));
        assert_eq!(r.get("Success"), Some(&1.0));
        assert!(!r.contains_key("sessionStartTime"));
    }
}
