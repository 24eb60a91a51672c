//! Benchmark workloads for `multios bench lwk`: small C programs built with gcc at run time,
//! run natively and in the LWK side by side. Each reports its own kernel-loop time
//! (`kernel_ns N`), so γ compares the loops, not process start-up.

pub mod hpcc;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// Errors of the benchmark helpers.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("building {name} with gcc: {detail} (apt-get install gcc libc6-dev)")]
    Build { name: String, detail: String },
    #[error("running {what}: {detail}")]
    Run { what: String, detail: String },
}

/// A benchmark program.
#[derive(Debug, Clone, Copy)]
pub struct Program {
    pub name: &'static str,
    pub source: &'static str,
}

pub const HELLO: Program = Program {
    name: "hello",
    source: include_str!("hello.c"),
};
pub const COMPUTE: Program = Program {
    name: "compute",
    source: include_str!("compute.c"),
};
pub const TLB: Program = Program {
    name: "tlb",
    source: include_str!("tlb.c"),
};
/// mprotect toggles on one page (issue #14: the cost of a page-table edit and CR3 reload).
pub const MPROTECT: Program = Program {
    name: "mprotect",
    source: include_str!("mprotect.c"),
};

/// Kernel-shared mappings (issue #14): setup costs of MAP_SHARED, io_uring and perf rings, and
/// steady-state access to shared memory and to an io_uring's rings (`maps.c` names the modes).
pub const MAPS: Program = Program {
    name: "maps",
    source: include_str!("maps.c"),
};

/// Builds `p` with `gcc -O2 -static` in `dir`.
pub fn build(dir: &Path, p: Program) -> Result<PathBuf, BenchError> {
    let err = |detail: String| BenchError::Build {
        name: p.name.to_string(),
        detail,
    };
    std::fs::create_dir_all(dir).map_err(|e| err(format!("{}: {e}", dir.display())))?;
    let src = dir.join(format!("{}.c", p.name));
    std::fs::write(&src, p.source).map_err(|e| err(format!("{}: {e}", src.display())))?;
    let exe = dir.join(p.name);
    let o = Command::new("gcc")
        .args(["-O2", "-static", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .map_err(|e| err(e.to_string()))?;
    if !o.status.success() {
        return Err(err(String::from_utf8_lossy(&o.stderr).into_owned()));
    }
    Ok(exe)
}

/// One run: wall time of the process and the loop time it printed.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Sample {
    pub wall_s: f64,
    pub kernel_s: Option<f64>,
}

/// Runs `exe args…` natively, pinned to `cpu` (the CPU the LWK gives its vCPU).
pub fn run_native(exe: &Path, args: &[&str], cpu: usize) -> Result<Sample, BenchError> {
    let saved = crate::sys::affinity();
    let _ = crate::sys::pin_to_cpu(cpu);
    let r = run(&[], exe, args);
    if let Some(a) = &saved {
        crate::sys::set_affinity(a);
    }
    r
}

/// Runs `prefix… exe args…` and parses its `kernel_ns`.
pub fn run(prefix: &[OsString], exe: &Path, args: &[&str]) -> Result<Sample, BenchError> {
    let mut cmd = match prefix.split_first() {
        Some((p, rest)) => {
            let mut c = Command::new(p);
            c.args(rest).arg(exe);
            c
        }
        None => Command::new(exe),
    };
    cmd.args(args);
    let what = format!("{:?}", cmd);
    let t0 = Instant::now();
    let o = cmd.output().map_err(|e| BenchError::Run {
        what: what.clone(),
        detail: e.to_string(),
    })?;
    let wall_s = t0.elapsed().as_secs_f64();
    if !o.status.success() {
        return Err(BenchError::Run {
            what,
            detail: String::from_utf8_lossy(&o.stderr).into_owned(),
        });
    }
    let out = String::from_utf8_lossy(&o.stdout);
    let kernel_s = out
        .split_whitespace()
        .skip_while(|w| *w != "kernel_ns")
        .nth(1)
        .and_then(|v| v.parse::<f64>().ok())
        .map(|ns| ns * 1e-9);
    Ok(Sample { wall_s, kernel_s })
}

/// The median of the finite values of `v` (multios-stats' rule), NaN when there are none.
pub fn median(v: &[f64]) -> f64 {
    multios_stats::median(v).unwrap_or(f64::NAN)
}
