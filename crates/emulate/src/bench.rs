//! `multios bench emulate`: the targets, each measured side by side in one run.
//! - delivered f_c vs requested, 0.5 µs … 10 ms, timed with CLOCK_MONOTONIC (independent of the TSC
//!   calibration being checked);
//! - the forwarding floor of each mechanism next to the cache-line round trip;
//! - pass-through overhead (policy none) on bzip2 and on a 2 M-syscall workload;
//! - a process pipeline with every call delegated at f_c = 0 (issue #16).

use crate::cost::CostModel;
use crate::cpus::{pin_current_thread, CpuSet};
use crate::report::Summary;
use crate::{tsc, Config, Delegation, EmulateError, Exit, Mechanism};
use multios_stats::{paired, paired_diff, Paired};
use std::time::Instant;

/// The workload the exponential f_c is checked on (`multios bench emulate`'s "exponential f_c"
/// row and the emulator's mechanism tests): dd copying 2 000 single bytes, a read and a write each,
/// so every run delegates thousands of calls.
pub const DD_SINGLE_BYTES: [&str; 6] = [
    "dd",
    "if=/dev/zero",
    "of=/dev/null",
    "bs=1",
    "count=2000",
    "status=none",
];

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
    pin_current_thread(&CpuSet::allowed()).ok();
    Ok(out)
}

/// Pass-through overhead of one mechanism on one workload: CPU time (user + system of the program,
/// robust to other processes on a shared machine) and wall time, compared run by run
/// ([`multios_stats::paired`]).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Overhead {
    pub workload: String,
    pub mechanism: String,
    /// Medians of each side (seconds), for scale.
    pub native_cpu: f64,
    pub emulated_cpu: f64,
    pub native_wall: f64,
    pub emulated_wall: f64,
    pub cpu: Paired,
    pub wall: Paired,
    /// The CPU-time comparison as differences (seconds) instead of ratios.
    pub cpu_diff: Paired,
    /// System calls the program made in the last emulated run (shm/migrate count them; `None`
    /// under proxy, which lets them run in the kernel unseen).
    pub calls: Option<u64>,
    /// shm/migrate: how the emulated runs above intercepted (eager, SUD off, unless it fell back).
    pub interception: Option<String>,
    /// shm/migrate with `lazy`: the same workload under the lazy interception (SUD on), in the
    /// same alternation: the before/after of the SUD-off mode, side by side.
    pub lazy: Option<LazySide>,
}

/// The lazy-interception side of a pass-through measurement.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LazySide {
    pub emulated_cpu: f64,
    pub cpu: Paired,
    pub wall: Paired,
}

fn median(v: &mut [f64]) -> f64 {
    multios_stats::median(v).unwrap_or(f64::NAN)
}

/// One run's CPU and wall time.
struct Times {
    cpu: Vec<f64>,
    wall: Vec<f64>,
}

impl Times {
    fn new() -> Times {
        Times {
            cpu: Vec::new(),
            wall: Vec::new(),
        }
    }
    fn push(&mut self, cpu: f64, wall: f64) {
        self.cpu.push(cpu);
        self.wall.push(wall);
    }
    /// CPU time and wall time as paired ratios, and CPU time as paired differences.
    fn against(&self, native: &Times) -> Result<(Paired, Paired, Paired), EmulateError> {
        let none = || EmulateError::Supervisor("pass-through: no complete pair of runs".into());
        Ok((
            paired(&native.cpu, &self.cpu).ok_or_else(none)?,
            paired(&native.wall, &self.wall).ok_or_else(none)?,
            paired_diff(&native.cpu, &self.cpu).ok_or_else(none)?,
        ))
    }
}

/// Runs `argv` natively and under `m` with policy none, `runs` times each, alternating in ABBA
/// order (odd rounds start with the emulated run, so neither side always runs on a cache the other
/// warmed); with `lazy`, shm and migrate also run under the lazy interception in each round.
pub fn passthrough(
    workload: &str,
    argv: &[String],
    m: Mechanism,
    compute: &CpuSet,
    control: &CpuSet,
    runs: usize,
    lazy: bool,
) -> Result<Overhead, EmulateError> {
    side_by_side(
        workload,
        argv,
        m,
        Delegation::none(),
        compute,
        control,
        runs,
        lazy,
    )
}

/// A process pipeline (e.g. `sh -c 'cat F | gzip | sha256sum'`) natively and under `m` with every
/// call delegated at f_c = 0, `runs` pairs in ABBA order: what the mechanism costs a pipeline of
/// processes sharing the compute and control CPUs (issue #16: `tar czf` ran 6–8× native under shm,
/// its processes' waiting threads and delegates starving each other).
pub fn pipeline(
    workload: &str,
    argv: &[String],
    m: Mechanism,
    compute: &CpuSet,
    control: &CpuSet,
    runs: usize,
) -> Result<Overhead, EmulateError> {
    side_by_side(
        workload,
        argv,
        m,
        Delegation::all(),
        compute,
        control,
        runs,
        false,
    )
}

#[allow(clippy::too_many_arguments)]
fn side_by_side(
    workload: &str,
    argv: &[String],
    m: Mechanism,
    delegation: Delegation,
    compute: &CpuSet,
    control: &CpuSet,
    runs: usize,
    lazy: bool,
) -> Result<Overhead, EmulateError> {
    let cfg = Config {
        mechanism: m,
        delegation,
        cost: CostModel::constant(0.0),
        compute: compute.clone(),
        control: control.clone(),
        argv: argv.iter().map(std::ffi::OsString::from).collect(),
        allow_below_floor: true,
        wait: Default::default(),
        rewrite: true,
    };
    let lazy = lazy && m != Mechanism::Proxy;
    let (mut nat, mut eag, mut laz) = (Times::new(), Times::new(), Times::new());
    let mut interception = None;
    let mut calls = None;
    for round in 0..runs {
        let native = |t: &mut Times| -> Result<(), EmulateError> {
            let n = crate::run_native(argv, compute, &cfg.wait)?;
            check_exit(workload, "natively", n.exit)?;
            t.push(n.cpu_secs, n.wall_secs);
            Ok(())
        };
        if round % 2 == 0 {
            native(&mut nat)?;
        }
        let r = crate::run_with(&cfg, crate::Interception::Eager)?;
        check_exit(workload, m.name(), r.exit)?;
        eag.push(r.cpu_secs, r.wall_secs);
        interception = r.interception;
        calls = r.local_total.map(|l| l + r.delegated_total);
        if lazy {
            let r = crate::run_with(&cfg, crate::Interception::Lazy)?;
            check_exit(workload, m.name(), r.exit)?;
            laz.push(r.cpu_secs, r.wall_secs);
        }
        if round % 2 == 1 {
            native(&mut nat)?;
        }
    }
    let (cpu, wall, cpu_diff) = eag.against(&nat)?;
    let lazy = if lazy {
        let (lc, lw, _) = laz.against(&nat)?;
        Some(LazySide {
            emulated_cpu: median(&mut laz.cpu),
            cpu: lc,
            wall: lw,
        })
    } else {
        None
    };
    Ok(Overhead {
        workload: workload.into(),
        mechanism: m.name().into(),
        native_cpu: median(&mut nat.cpu),
        emulated_cpu: median(&mut eag.cpu),
        native_wall: median(&mut nat.wall),
        emulated_wall: median(&mut eag.wall),
        cpu,
        wall,
        cpu_diff,
        calls,
        interception,
        lazy,
    })
}

/// The fixed (start-up) CPU cost of a mechanism's interception on one program, which a long run's
/// pass-through overhead is made of besides a few ns per call: the program on a tiny input, many
/// pairs, compared as differences (seconds). A start-up of a few ms is resolved to ≈ 0.1 ms here,
/// where a ±2 % run-to-run spread hides it in a 2 s run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FixedCost {
    pub workload: String,
    pub mechanism: String,
    /// Median native CPU time of the short run (seconds).
    pub native_cpu: f64,
    /// emulated − native CPU time (seconds).
    pub cpu: Paired,
    /// System calls of one short run (see [`Overhead::calls`]).
    pub calls: Option<u64>,
}

/// Measures [`FixedCost`]: `argv` natively and under `m` with policy none, ABBA, `runs` pairs.
pub fn fixed_cost(
    workload: &str,
    argv: &[String],
    m: Mechanism,
    compute: &CpuSet,
    control: &CpuSet,
    runs: usize,
) -> Result<FixedCost, EmulateError> {
    let o = passthrough(workload, argv, m, compute, control, runs, false)?;
    Ok(FixedCost {
        workload: workload.into(),
        mechanism: m.name().into(),
        native_cpu: o.native_cpu,
        cpu: o.cpu_diff,
        calls: o.calls,
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
