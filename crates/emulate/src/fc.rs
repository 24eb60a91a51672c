//! `multios fc`: the paper's Table 3 microbenchmarks (write to a file, fstat, uname, write to
//! /dev/null as the console stand-in, a raw `syscall` getppid), run natively and under each
//! mechanism with every call delegated at f_c = 0, next to a cross-core cache-line round trip
//! measured in the same run.

use crate::cpus::{pin_current_thread, CpuSet};
use crate::report::Summary;
use crate::{tsc, Delegation, EmulateError, Exit, Mechanism};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const BENCH: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/multios-fcbench"));

/// The calls, in the order the benchmark runs them, with what each stands for in the paper.
pub const CALLS: [(&str, &str); 5] = [
    ("write_file", "write 64 B to a file (pwrite at offset 0)"),
    ("fstat", "fstat of that file"),
    ("uname", "uname"),
    ("write_devnull", "write 64 B to the console (here /dev/null)"),
    ("raw_getppid", "raw `syscall` instruction: getppid"),
];

/// One measured cell: a call under one mechanism (or natively).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Cell {
    pub call: String,
    /// "native" or the mechanism name.
    pub mode: String,
    /// Per-call time, seconds.
    pub time: Summary,
}

/// Everything `multios fc` measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct FcReport {
    pub trials: usize,
    pub compute_cpu: usize,
    pub control_cpu: usize,
    pub cells: Vec<Cell>,
    /// Cross-core cache-line round trip, seconds.
    pub cacheline: Summary,
}

impl FcReport {
    pub fn get(&self, call: &str, mode: &str) -> Option<&Summary> {
        self.cells
            .iter()
            .find(|c| c.call == call && c.mode == mode)
            .map(|c| &c.time)
    }
}

/// Cache-line ping-pong between `a` and `b`: `trials` round trips timed on `a`.
pub fn pingpong(a: usize, b: usize, trials: usize) -> Result<Summary, EmulateError> {
    #[repr(align(128))]
    struct Line(AtomicU64);
    let ping = Arc::new(Line(AtomicU64::new(0)));
    let pong = Arc::new(Line(AtomicU64::new(0)));
    let (p2, q2) = (ping.clone(), pong.clone());
    let total = (trials + 1000) as u64;
    // The caller's own mask, given back at the end (read before pinning: afterwards the thread's
    // allowed set is `{a}`).
    let callers = CpuSet::allowed();
    let echo = std::thread::spawn(move || {
        let pinned = pin_current_thread(&CpuSet([b].into()));
        for i in 1..=total {
            while p2.0.load(Ordering::Acquire) != i {
                std::hint::spin_loop();
            }
            q2.0.store(i, Ordering::Release);
        }
        pinned
    });
    pin_current_thread(&CpuSet([a].into())).map_err(|cause| EmulateError::Io {
        what: format!("pinning to CPU {a}"),
        cause,
    })?;
    let cal = tsc::calibration();
    let mut v = Vec::with_capacity(trials);
    for i in 1..=total {
        let t0 = tsc::now();
        ping.0.store(i, Ordering::Release);
        while pong.0.load(Ordering::Acquire) != i {
            std::hint::spin_loop();
        }
        let t1 = tsc::now();
        if i > 1000 {
            v.push(cal.secs(t1 - t0));
        }
    }
    echo.join()
        .map_err(|_| EmulateError::Supervisor("the ping-pong thread panicked".into()))?
        .map_err(|cause| EmulateError::Io {
            what: format!("pinning to CPU {b}"),
            cause,
        })?;
    pin_current_thread(&callers).ok();
    Summary::of(&mut v).ok_or_else(|| EmulateError::Supervisor("no ping-pong samples".into()))
}

fn parse(text: &str, mode: &str, cal: tsc::Calibration) -> Vec<Cell> {
    text.lines()
        .filter_map(|l| {
            let mut it = l.split(' ');
            let call = it.next()?.to_string();
            let mut v: Vec<f64> = it
                .filter_map(|t| t.parse::<u64>().ok())
                .map(|t| cal.secs(t))
                .collect();
            Some(Cell {
                call,
                mode: mode.to_string(),
                time: Summary::of(&mut v)?,
            })
        })
        .collect()
}

/// Runs the benchmark natively and under `mechanisms`.
pub fn run(
    mechanisms: &[Mechanism],
    trials: usize,
    compute: &CpuSet,
    control: &CpuSet,
) -> Result<FcReport, EmulateError> {
    run_at(mechanisms, trials, compute, control, 0.0, Default::default())
}

/// As [`run`], with every delegated call charged `fc` each way (0 measures the mechanism alone).
pub fn run_at(
    mechanisms: &[Mechanism],
    trials: usize,
    compute: &CpuSet,
    control: &CpuSet,
    fc: f64,
    wait: crate::Wait,
) -> Result<FcReport, EmulateError> {
    run_spaced(mechanisms, trials, compute, control, fc, wait, 0)
}

/// As [`run_at`], each call made `gap_ns` after the previous one returned (a busy wait between
/// them; 0: back to back). On this VM the proxy's back-to-back round trip is bimodal — whether
/// the supervisor had gone to sleep before the next notification — and its median flips between
/// ≈ 11 and ≈ 39 µs over f_c from run to run, while calls 1–3 µs apart meet a sleeping supervisor
/// every time (≈ 20 µs over f_c; docs/BENCHMARKS.md, "The proxy's round trip, back to back and
/// spaced").
pub fn run_spaced(
    mechanisms: &[Mechanism],
    trials: usize,
    compute: &CpuSet,
    control: &CpuSet,
    fc: f64,
    wait: crate::Wait,
    gap_ns: u64,
) -> Result<FcReport, EmulateError> {
    let bench = crate::embed::materialize("fcbench", "", BENCH, 0o755)?;
    let cal = tsc::calibration();
    let dir = std::env::temp_dir().join(format!("multios-fc-{}-{}", std::process::id(), tsc::now()));
    std::fs::create_dir_all(&dir).map_err(|cause| EmulateError::Io {
        what: format!("creating {}", dir.display()),
        cause,
    })?;
    let mut cells = Vec::new();
    let mut modes: Vec<Option<Mechanism>> = vec![None];
    modes.extend(mechanisms.iter().copied().map(Some));
    for m in modes {
        let name = m.map(Mechanism::name).unwrap_or("native");
        let out = dir.join(format!("{name}.txt"));
        let mut argv: Vec<String> = vec![
            bench.display().to_string(),
            trials.to_string(),
            out.display().to_string(),
            dir.join("scratch").display().to_string(),
        ];
        if gap_ns > 0 {
            argv.push(gap_ns.to_string());
        }
        let exit = crate::launch::run_at(m, &Delegation::all(), fc, compute, control, argv, wait)?;
        if exit != Exit::Code(0) {
            return Err(EmulateError::Supervisor(format!(
                "the fc benchmark ended with {exit} under {name}"
            )));
        }
        let text = std::fs::read_to_string(&out).map_err(|cause| EmulateError::Io {
            what: format!("reading {}", out.display()),
            cause,
        })?;
        cells.extend(parse(&text, name, cal));
    }
    std::fs::remove_dir_all(&dir).ok();
    let cacheline = pingpong(
        compute.first().unwrap_or(0),
        control.first().unwrap_or(0),
        trials.max(10_000),
    )?;
    Ok(FcReport {
        trials,
        compute_cpu: compute.first().unwrap_or(0),
        control_cpu: control.first().unwrap_or(0),
        cells,
        cacheline,
    })
}

/// Median per-call time of each mode, by call: `by_call[call][mode]`.
pub fn medians(r: &FcReport) -> BTreeMap<String, BTreeMap<String, f64>> {
    let mut m: BTreeMap<String, BTreeMap<String, f64>> = BTreeMap::new();
    for c in &r.cells {
        m.entry(c.call.clone())
            .or_default()
            .insert(c.mode.clone(), c.time.median);
    }
    m
}
