//! FWQ as a stand-alone static C program (`guest/fwq.c`), so that the very same code runs on a
//! Linux CPU and as a guest of the LWK (`multios noise fwq --lwk`). Built with gcc at run time.

use crate::clock::Clock;
use crate::measure::{Kind, Series};
use crate::sys;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The program's source.
pub const FWQ_C: &str = include_str!("../guest/fwq.c");

/// An error building, running or reading the guest program.
#[derive(Debug, thiserror::Error)]
pub enum GuestError {
    #[error(
        "cannot build the FWQ guest program with gcc ({0}): install gcc and the static glibc (libc6-dev)"
    )]
    Build(String),
    #[error("the FWQ program failed: {0}")]
    Run(String),
    #[error("{path}:{line}: bad FWQ output line '{text}'")]
    Output { path: String, line: usize, text: String },
}

/// Compiles `fwq.c` statically into `dir`; returns the executable.
pub fn build(dir: &Path) -> Result<PathBuf, GuestError> {
    std::fs::create_dir_all(dir).map_err(|e| GuestError::Build(format!("{}: {e}", dir.display())))?;
    let src = dir.join("fwq.c");
    let exe = dir.join("multios-noise-fwq");
    std::fs::write(&src, FWQ_C).map_err(|e| GuestError::Build(format!("{}: {e}", src.display())))?;
    let out = Command::new("gcc")
        .args(["-O2", "-static", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .map_err(|e| GuestError::Build(format!("gcc: {e}")))?;
    if !out.status.success() {
        return Err(GuestError::Build(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    Ok(exe)
}

/// The program's arguments for a quantum and duration: QUANTUM_TICKS SAMPLES OUTFILE.
pub fn args(quantum_ns: f64, duration_ns: f64, clock: &Clock, out_file: &Path) -> Vec<String> {
    let samples = (duration_ns / quantum_ns).floor().max(1.0) as u64;
    vec![
        clock.to_ticks(quantum_ns).max(1).to_string(),
        samples.to_string(),
        out_file.display().to_string(),
    ]
}

/// Runs the program natively, pinned to `cpu`, and reads its samples.
pub fn run_native(
    exe: &Path,
    cpu: usize,
    args: &[String],
    clock: &Clock,
    quantum_ns: f64,
) -> Result<Series, GuestError> {
    let mut cmd = Command::new(exe);
    cmd.args(args);
    sys::pre_exec_place(&mut cmd, Some(&[cpu]), None).map_err(|e| GuestError::Run(e.to_string()))?;
    let out = cmd
        .output()
        .map_err(|e| GuestError::Run(format!("{}: {e}", exe.display())))?;
    if !out.status.success() {
        return Err(GuestError::Run(format!(
            "{}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let file = Path::new(args.last().map(String::as_str).unwrap_or(""));
    read_output(file, clock, quantum_ns, cpu)
}

/// Reads the program's output file into a FWQ series (ticks converted with `clock`).
pub fn read_output(path: &Path, clock: &Clock, quantum_ns: f64, cpu: usize) -> Result<Series, GuestError> {
    let p = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| GuestError::Run(format!("{p}: {e}")))?;
    let mut samples = Vec::new();
    let mut ran_on = None;
    for (i, line) in text.lines().enumerate() {
        if let Some(c) = line.strip_prefix("# cpu ") {
            ran_on = c.trim().parse::<usize>().ok();
            continue;
        }
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let bad = || GuestError::Output {
            path: p.clone(),
            line: i + 1,
            text: line.to_string(),
        };
        let (a, b) = line.split_once(' ').ok_or_else(bad)?;
        let a: u64 = a.parse().map_err(|_| bad())?;
        let b: u64 = b.trim().parse().map_err(|_| bad())?;
        samples.push((clock.to_ns(a), clock.to_ns(b)));
    }
    let min = samples.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    let floor = (0.01 * min).max(10.0 * clock.resolution_ns);
    let detours = samples
        .iter()
        .filter(|x| x.1 - min > floor)
        .map(|&(t, d)| (t + min, d - min))
        .collect();
    let elapsed_ns = samples.last().map(|x| x.0 + x.1).unwrap_or(0.0);
    Ok(Series {
        kind: Kind::Fwq,
        cpu,
        quantum_ns,
        unit_ns: 0.0,
        min_iteration_ns: 0.0,
        elapsed_ns,
        samples,
        detours,
        ran_on,
        usage: None,
    })
}

/// Runs the program on `ranks` processes under Open MPI's `mpirun`, one per core
/// (`--bind-to core`), and reads every rank's samples (the CPU each rank ran on is in `ran_on`).
pub fn run_mpirun(
    exe: &Path,
    ranks: usize,
    args: &[String],
    clock: &Clock,
    quantum_ns: f64,
) -> Result<Vec<Series>, GuestError> {
    let out = Command::new("mpirun")
        .args([
            "--allow-run-as-root",
            "--bind-to",
            "core",
            "--map-by",
            "core",
            "-np",
        ])
        .arg(ranks.to_string())
        .arg(exe)
        .args(args)
        .output()
        .map_err(|e| GuestError::Run(format!("mpirun: {e} (install openmpi-bin)")))?;
    if !out.status.success() {
        return Err(GuestError::Run(format!(
            "mpirun: {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let base = args.last().map(String::as_str).unwrap_or("");
    (0..ranks)
        .map(|r| {
            let file = PathBuf::from(format!("{base}.{r}"));
            let s = read_output(&file, clock, quantum_ns, r);
            let _ = std::fs::remove_file(&file);
            s.map(|mut s| {
                s.cpu = s.ran_on.unwrap_or(r);
                s
            })
        })
        .collect()
}
