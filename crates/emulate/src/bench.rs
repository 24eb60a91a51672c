//! `multios bench emulate`: the targets, each measured side by side in one run.
//! - delivered f_c vs requested, 0.5 µs … 10 ms, timed with CLOCK_MONOTONIC (independent of the TSC
//!   calibration being checked);
//! - the forwarding floor of each mechanism next to the cache-line round trip;
//! - pass-through overhead (policy none) on bzip2 and on a 2 M-syscall workload.

use crate::cost::CostModel;
use crate::cpus::{pin_current_thread, CpuSet};
use crate::report::Summary;
use crate::{tsc, Config, Delegation, EmulateError, Exit, Mechanism};
use std::time::Instant;

/// One delivered-f_c check.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SpinCheck {
    pub requested: f64,
    pub delivered: Summary,
    /// |median − requested| / requested, percent.
    pub error_pct: f64,
    /// Within 2 % or 50 ns.
    pub ok: bool,
}

/// Spins `requested` seconds `n` times on `cpu`, timing each with `Instant`.
pub fn spin_accuracy(requested: &[f64], cpu: usize) -> Result<Vec<SpinCheck>, EmulateError> {
    pin_current_thread(&CpuSet([cpu].into())).map_err(|cause| EmulateError::Io {
        what: format!("pinning to CPU {cpu}"),
        cause,
    })?;
    // Like the emulator's own spinners: SCHED_FIFO when allowed, so other processes do not
    // stretch a spin (restored below).
    let fifo = crate::sys::set_fifo(50);
    let cal = tsc::calibration();
    let mut out = Vec::new();
    for &r in requested {
        let n = ((0.2 / r) as usize).clamp(20, 5000);
        let ticks = cal.ticks(r);
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let t0 = Instant::now();
            tsc::spin(ticks);
            v.push(t0.elapsed().as_secs_f64());
        }
        // Subtract the cost of the two clock reads, measured the same way.
        let mut empty: Vec<f64> = (0..1000)
            .map(|_| {
                let t0 = Instant::now();
                t0.elapsed().as_secs_f64()
            })
            .collect();
        let clock = Summary::of(&mut empty).map(|s| s.median).unwrap_or(0.0);
        let mut v: Vec<f64> = v.into_iter().map(|x| x - clock).collect();
        let Some(s) = Summary::of(&mut v) else { continue };
        let err = (s.median - r).abs();
        out.push(SpinCheck {
            requested: r,
            delivered: s,
            error_pct: 100.0 * err / r,
            ok: err <= (0.02 * r).max(50e-9),
        });
    }
    if fifo {
        crate::sys::set_other();
    }
    pin_current_thread(&CpuSet::available()).ok();
    Ok(out)
}

/// Pass-through overhead of one mechanism on one workload: CPU time (user + system of the program,
/// robust to other processes on a shared machine) and wall time, medians of alternating runs.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Overhead {
    pub workload: String,
    pub mechanism: String,
    pub native_cpu: f64,
    pub emulated_cpu: f64,
    pub cpu_overhead_pct: f64,
    /// From the fastest run of each side: interference from other processes only adds time, so
    /// on a shared machine the minima are the steadier estimate of a fixed per-call cost.
    pub cpu_overhead_min_pct: f64,
    pub native_wall: f64,
    pub emulated_wall: f64,
    pub wall_overhead_pct: f64,
    pub runs: usize,
    /// shm/migrate: how the emulated runs above intercepted (eager, SUD off, unless it fell back).
    pub interception: Option<String>,
    /// shm/migrate: the same workload under the lazy interception (SUD on), run in the same
    /// alternation (native, eager, lazy): the before/after of the SUD-off mode, side by side.
    pub lazy: Option<LazySide>,
}

/// The lazy-interception side of a pass-through measurement.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LazySide {
    pub emulated_cpu: f64,
    pub cpu_overhead_pct: f64,
    pub cpu_overhead_min_pct: f64,
    pub emulated_wall: f64,
    pub wall_overhead_pct: f64,
}

fn median(v: &mut [f64]) -> f64 {
    Summary::of(v).map(|s| s.median).unwrap_or(f64::NAN)
}

/// Runs `argv` natively and under `m` with policy none, alternating, `runs` times each; for shm
/// and migrate both interceptions (eager, then lazy) in the same alternation.
pub fn passthrough(
    workload: &str,
    argv: &[String],
    m: Mechanism,
    compute: &CpuSet,
    control: &CpuSet,
    runs: usize,
) -> Result<Overhead, EmulateError> {
    let cfg = Config {
        mechanism: m,
        delegation: Delegation::none(),
        cost: CostModel::constant(0.0),
        compute: compute.clone(),
        control: control.clone(),
        argv: argv.to_vec(),
        allow_below_floor: true,
        wait: Default::default(),
        rewrite: true,
    };
    let in_process = m != Mechanism::Proxy;
    let (mut nc, mut ec, mut nw, mut ew) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut lc, mut lw) = (Vec::new(), Vec::new());
    let mut interception = None;
    for _ in 0..runs {
        let n = crate::run_native(argv, compute, &cfg.wait)?;
        check_exit(workload, "natively", n.exit)?;
        nc.push(n.cpu_secs);
        nw.push(n.wall_secs);
        let r = crate::run_with(&cfg, crate::Interception::Eager)?;
        check_exit(workload, m.name(), r.exit)?;
        ec.push(r.cpu_secs);
        ew.push(r.wall_secs);
        interception = r.interception;
        if in_process {
            let r = crate::run_with(&cfg, crate::Interception::Lazy)?;
            check_exit(workload, m.name(), r.exit)?;
            lc.push(r.cpu_secs);
            lw.push(r.wall_secs);
        }
    }
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    let cpu_overhead_min_pct = 100.0 * (min(&ec) / min(&nc) - 1.0);
    let lazy_min_pct = 100.0 * (min(&lc) / min(&nc) - 1.0);
    let (nc, ec, nw, ew) = (median(&mut nc), median(&mut ec), median(&mut nw), median(&mut ew));
    let lazy = in_process.then(|| {
        let (lc, lw) = (median(&mut lc), median(&mut lw));
        LazySide {
            emulated_cpu: lc,
            cpu_overhead_pct: 100.0 * (lc / nc - 1.0),
            cpu_overhead_min_pct: lazy_min_pct,
            emulated_wall: lw,
            wall_overhead_pct: 100.0 * (lw / nw - 1.0),
        }
    });
    Ok(Overhead {
        workload: workload.into(),
        mechanism: m.name().into(),
        native_cpu: nc,
        emulated_cpu: ec,
        cpu_overhead_pct: 100.0 * (ec / nc - 1.0),
        cpu_overhead_min_pct,
        native_wall: nw,
        emulated_wall: ew,
        wall_overhead_pct: 100.0 * (ew / nw - 1.0),
        runs,
        interception,
        lazy,
    })
}

fn check_exit(workload: &str, how: &str, e: Exit) -> Result<(), EmulateError> {
    if e == Exit::Code(0) {
        Ok(())
    } else {
        Err(EmulateError::Supervisor(format!(
            "benchmark workload '{workload}' ended with {e} when run {how}"
        )))
    }
}
