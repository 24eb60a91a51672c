//! The three benchmarks as stand-alone static C programs (`guest/fwq.c`, `guest/ftq.c`,
//! `guest/selfish.c`), so that the very same code runs on a Linux CPU and as a guest of the LWK
//! (`multios noise fwq|ftq|selfish --lwk`). Built with gcc at run time. Each writes its samples in
//! TSC ticks to a file, after `# key value` header lines; [`read_series`] converts them.

use crate::clock::Clock;
use crate::measure::{Kind, Series, Settings};
use crate::sys;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The FWQ program's source.
pub const FWQ_C: &str = include_str!("../guest/fwq.c");
/// The FTQ program's source.
pub const FTQ_C: &str = include_str!("../guest/ftq.c");
/// The selfish-detour program's source.
pub const SELFISH_C: &str = include_str!("../guest/selfish.c");
/// What the three programs share (work chain, its calibration, the rank-aware output file).
const COMMON_H: &str = include_str!("../guest/common.h");

/// An error building, running or reading the guest program.
#[derive(Debug, thiserror::Error)]
pub enum GuestError {
    #[error(
        "cannot build the {0} guest program with gcc ({1}): install gcc and the static glibc (libc6-dev)"
    )]
    Build(&'static str, String),
    #[error("the {0} program failed: {1}")]
    Run(&'static str, String),
    #[error("{path}:{line}: bad guest program output line '{text}'")]
    Output { path: String, line: usize, text: String },
}

/// The program's name and source for a benchmark.
fn program(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::Fwq => ("fwq", FWQ_C),
        Kind::Ftq => ("ftq", FTQ_C),
        Kind::Selfish => ("selfish", SELFISH_C),
    }
}

/// Compiles `fwq.c` statically into `dir`; returns the executable.
pub fn build(dir: &Path) -> Result<PathBuf, GuestError> {
    build_for(dir, Kind::Fwq)
}

/// Compiles the program of `kind` statically into `dir`; returns the executable.
pub fn build_for(dir: &Path, kind: Kind) -> Result<PathBuf, GuestError> {
    let (name, source) = program(kind);
    let err = |e: String| GuestError::Build(name, e);
    std::fs::create_dir_all(dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
    let src = dir.join(format!("{name}.c"));
    let exe = dir.join(format!("multios-noise-{name}"));
    std::fs::write(&src, source).map_err(|e| err(format!("{}: {e}", src.display())))?;
    let header = dir.join("common.h");
    std::fs::write(&header, COMMON_H).map_err(|e| err(format!("{}: {e}", header.display())))?;
    let out = Command::new("gcc")
        .args(["-O2", "-static", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .map_err(|e| err(format!("gcc: {e}")))?;
    if !out.status.success() {
        return Err(err(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    Ok(exe)
}

/// The FWQ program's arguments for a quantum and duration: QUANTUM_TICKS SAMPLES OUTFILE.
pub fn args(quantum_ns: f64, duration_ns: f64, clock: &Clock, out_file: &Path) -> Vec<String> {
    let samples = (duration_ns / quantum_ns).floor().max(1.0) as u64;
    vec![
        clock.to_ticks(quantum_ns).max(1).to_string(),
        samples.to_string(),
        out_file.display().to_string(),
    ]
}

/// The arguments of the program of `s.kind`: FWQ and FTQ `QUANTUM_TICKS COUNT OUTFILE`, selfish
/// `THRESHOLD DURATION_TICKS OUTFILE`.
pub fn args_for(s: &Settings, clock: &Clock, out_file: &Path) -> Vec<String> {
    match s.kind {
        Kind::Fwq | Kind::Ftq => args(s.quantum_ns, s.duration_ns, clock, out_file),
        Kind::Selfish => vec![
            s.threshold.to_string(),
            clock.to_ticks(s.duration_ns).max(1).to_string(),
            out_file.display().to_string(),
        ],
    }
}

/// Runs the FWQ program natively, pinned to `cpu`, and reads its samples.
pub fn run_native(
    exe: &Path,
    cpu: usize,
    args: &[String],
    clock: &Clock,
    quantum_ns: f64,
) -> Result<Series, GuestError> {
    run_native_kind(Kind::Fwq, exe, cpu, args, clock, quantum_ns)
}

/// Runs the program of `kind` natively, pinned to `cpu`, and reads its samples. The series gets
/// the other tasks' share of the CPU meanwhile (`usage`; the program's own CPU time is its
/// rusage).
pub fn run_native_kind(
    kind: Kind,
    exe: &Path,
    cpu: usize,
    args: &[String],
    clock: &Clock,
    quantum_ns: f64,
) -> Result<Series, GuestError> {
    let name = program(kind).0;
    let mut cmd = Command::new(exe);
    cmd.args(args);
    sys::pre_exec_place(&mut cmd, Some(&[cpu]), None).map_err(|e| GuestError::Run(name, e.to_string()))?;
    let before = crate::cpustat::snapshot_with(cpu, sys::children_cpu_ns() as f64);
    let out = cmd
        .output()
        .map_err(|e| GuestError::Run(name, format!("{}: {e}", exe.display())))?;
    let after = crate::cpustat::snapshot_with(cpu, sys::children_cpu_ns() as f64);
    if !out.status.success() {
        return Err(GuestError::Run(
            name,
            format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr).trim()),
        ));
    }
    let file = Path::new(args.last().map(String::as_str).unwrap_or(""));
    let mut s = read_series(kind, file, clock, quantum_ns, cpu)?;
    s.usage = before.zip(after).and_then(|(b, a)| crate::cpustat::usage(&b, &a));
    Ok(s)
}

/// Reads the FWQ program's output file into a FWQ series (ticks converted with `clock`).
pub fn read_output(path: &Path, clock: &Clock, quantum_ns: f64, cpu: usize) -> Result<Series, GuestError> {
    read_series(Kind::Fwq, path, clock, quantum_ns, cpu)
}

/// Reads the output file of the program of `kind` into a series, with its detours derived as in
/// the in-process benchmarks (docs/NOISE.md).
pub fn read_series(
    kind: Kind,
    path: &Path,
    clock: &Clock,
    quantum_ns: f64,
    cpu: usize,
) -> Result<Series, GuestError> {
    let p = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| GuestError::Run(program(kind).0, format!("{p}: {e}")))?;
    let mut raw: Vec<(u64, u64)> = Vec::new();
    let (mut ran_on, mut elapsed, mut unit_ticks, mut min_step) = (None, None, 0.0, 0.0);
    for (i, line) in text.lines().enumerate() {
        let bad = || GuestError::Output {
            path: p.clone(),
            line: i + 1,
            text: line.to_string(),
        };
        if let Some(h) = line.strip_prefix('#') {
            let mut w = h.split_whitespace();
            let (key, value) = (w.next(), w.next());
            match (key, value) {
                (Some("cpu"), Some(v)) => ran_on = v.parse::<usize>().ok(),
                (Some("elapsed"), Some(v)) => elapsed = Some(v.parse::<u64>().map_err(|_| bad())?),
                (Some("unit_ticks"), Some(v)) => unit_ticks = v.parse::<f64>().map_err(|_| bad())?,
                (Some("min_step"), Some(v)) => min_step = v.parse::<f64>().map_err(|_| bad())?,
                _ => {}
            }
            continue;
        }
        if line.trim().is_empty() {
            continue;
        }
        let (a, b) = line.split_once(' ').ok_or_else(bad)?;
        let a: u64 = a.parse().map_err(|_| bad())?;
        let b: u64 = b.trim().parse().map_err(|_| bad())?;
        raw.push((a, b));
    }
    let floor = |min: f64| (0.01 * min).max(10.0 * clock.resolution_ns);
    let mut s = Series {
        kind,
        cpu,
        quantum_ns,
        unit_ns: 0.0,
        min_iteration_ns: 0.0,
        elapsed_ns: 0.0,
        samples: Vec::new(),
        detours: Vec::new(),
        ran_on,
        usage: None,
    };
    match kind {
        Kind::Fwq => {
            s.samples = raw
                .iter()
                .map(|&(a, b)| (clock.to_ns(a), clock.to_ns(b)))
                .collect();
            let min = s.samples.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
            s.detours = s
                .samples
                .iter()
                .filter(|x| x.1 - min > floor(min))
                .map(|&(t, d)| (t + min, d - min))
                .collect();
            s.elapsed_ns = s.samples.last().map(|x| x.0 + x.1).unwrap_or(0.0);
        }
        Kind::Ftq => {
            s.unit_ns = unit_ticks / clock.ticks_per_ns;
            s.samples = raw.iter().map(|&(a, c)| (clock.to_ns(a), c as f64)).collect();
            let max = s.samples.iter().map(|x| x.1).fold(0.0, f64::max);
            if max > 0.0 {
                s.detours = s
                    .samples
                    .iter()
                    .map(|&(t, c)| (t, (max - c) / max * quantum_ns))
                    .filter(|d| d.1 > floor(quantum_ns))
                    .collect();
            }
        }
        Kind::Selfish => {
            s.quantum_ns = 0.0;
            s.min_iteration_ns = clock.to_ns(min_step as u64);
            s.samples = raw
                .iter()
                .map(|&(a, g)| (clock.to_ns(a), clock.to_ns(g)))
                .collect();
            s.detours = s
                .samples
                .iter()
                .map(|&(t, g)| (t, g - s.min_iteration_ns))
                .collect();
        }
    }
    if let Some(e) = elapsed {
        s.elapsed_ns = clock.to_ns(e);
    }
    Ok(s)
}

/// Runs the FWQ program on `ranks` processes under Open MPI's `mpirun`, one per core
/// (`--bind-to core`), and reads every rank's samples (the CPU each rank ran on is in `ran_on`).
pub fn run_mpirun(
    exe: &Path,
    ranks: usize,
    args: &[String],
    clock: &Clock,
    quantum_ns: f64,
) -> Result<Vec<Series>, GuestError> {
    run_mpirun_kind(Kind::Fwq, exe, ranks, args, clock, quantum_ns)
}

/// As [`run_mpirun`], for the program of `kind`.
pub fn run_mpirun_kind(
    kind: Kind,
    exe: &Path,
    ranks: usize,
    args: &[String],
    clock: &Clock,
    quantum_ns: f64,
) -> Result<Vec<Series>, GuestError> {
    // The options are Open MPI's: prefer its own launcher when MPICH is installed beside it.
    let launcher = if Path::new("/usr/bin/mpirun.openmpi").exists() {
        "/usr/bin/mpirun.openmpi"
    } else {
        "mpirun"
    };
    let out = Command::new(launcher)
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
        .map_err(|e| GuestError::Run("fwq", format!("mpirun: {e} (install openmpi-bin)")))?;
    if !out.status.success() {
        return Err(GuestError::Run(
            "fwq",
            format!(
                "mpirun: {}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    let base = args.last().map(String::as_str).unwrap_or("");
    (0..ranks)
        .map(|r| {
            let file = PathBuf::from(format!("{base}.{r}"));
            let s = read_series(kind, &file, clock, quantum_ns, r);
            let _ = std::fs::remove_file(&file);
            s.map(|mut s| {
                s.cpu = s.ran_on.unwrap_or(r);
                s
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock() -> Clock {
        Clock {
            ticks_per_ns: 2.0,
            resolution_ns: 10.0,
        }
    }

    fn read(kind: Kind, text: &str, quantum_ns: f64) -> Result<Series, GuestError> {
        let p = std::env::temp_dir().join(format!("multios-noise-read-{kind:?}-{}", std::process::id()));
        std::fs::write(&p, text).map_err(|e| GuestError::Run("test", e.to_string()))?;
        let s = read_series(kind, &p, &clock(), quantum_ns, 3);
        let _ = std::fs::remove_file(&p);
        s
    }

    #[test]
    fn ftq_output_with_headers() {
        let s = read(
            Kind::Ftq,
            "# unit_ticks 8.0\n# elapsed 6000\n# cpu 1\n0 100\n2000 50\n4000 100\n",
            1000.0,
        )
        .expect("parses");
        assert_eq!((s.unit_ns, s.elapsed_ns, s.ran_on), (4.0, 3000.0, Some(1)));
        assert_eq!(s.samples, vec![(0.0, 100.0), (1000.0, 50.0), (2000.0, 100.0)]);
        assert_eq!(s.detours, vec![(1000.0, 500.0)]);
    }

    #[test]
    fn selfish_output_with_headers() {
        let s = read(
            Kind::Selfish,
            "# min_step 40\n# elapsed 20000\n# cpu 0\n100 1000\n",
            0.0,
        )
        .expect("parses");
        assert_eq!((s.min_iteration_ns, s.elapsed_ns), (20.0, 10000.0));
        assert_eq!(s.samples, vec![(50.0, 500.0)]);
        assert_eq!(s.detours, vec![(50.0, 480.0)]);
    }

    #[test]
    fn a_bad_line_names_its_number() {
        let e = read(Kind::Fwq, "# cpu 0\n1 2\nthree 4\n", 1.0)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.ends_with(":3: bad guest program output line 'three 4'"), "{e}");
    }
}
