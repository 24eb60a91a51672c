//! `multios bench multiverse` (issue #13): Multiverse's evaluation (seed 002 §V) rebuilt on Racket.
//! The paper's Computer Language Benchmarks Game programs (written for multios:
//! `crates/experiment/racket/`) run natively, in the LWK, and in the LWK with function overrides
//! (by default the clock family; `--overrides FILE`), rotated round by round, with identical
//! output required:
//!
//! * Fig. 9: per benchmark, system calls, user/sys time, peak RSS, page faults and context switches
//!   natively, and the events the LWK forwarded to Linux;
//! * Fig. 10: LWK / native and LWK+overrides / native, median of the paired ratios with the 95 %
//!   interval;
//! * Fig. 11: mmap+munmap natively and in the LWK (which serves them itself), and the cycles a
//!   forwarded call adds over a native one (`multiverse/micro.rs`);
//! * Fig. 12: n-body and spectral-norm with the `mmap` prefault override, natively and in the LWK
//!   (`multiverse/extra.rs`);
//! * the projection of the overhead from every kind of event the run had (calls, doorbell exits,
//!   KVM's shadow faults, first touches, start-up), each priced by a microbenchmark, and the two
//!   terms that are not events (the proxy polling beside the guest's CPU, priced by γ; the vCPU's
//!   measured extra wait for its CPU), next to the measured overhead (`multiverse/model.rs`; the
//!   paper's spectral-norm estimate is the template);
//! * where the time goes (on unless `--no-causes`): the native program also pinned to the
//!   vCPU's CPU (like with like: the LWK pins its vCPU) and pinned there beside a thread spinning
//!   on the proxy's CPU (the busy sibling on the real workload), in the same rotation;
//! * thread create+join natively / in the LWK / with the lwk-threads override, CPython's threads
//!   across the LWK's CPUs with pthread_create overridden, what `--trace` costs, and the hot-spot
//!   loop (trace → hotspots → override file → fewer events) on Racket and CPython.

mod extra;
pub mod level;
mod micro;
mod model;
pub mod verdict;

pub use extra::{Cpython, HotspotLoop, Prefault, TraceRun};
pub use micro::Micro;
pub use model::{Counts, EventCosts, ImageFixed, PaperModel, Projection, Terms};
pub use verdict::{Decision, Outlier, Verdict};

use crate::{ExperimentError, Progress};
use multios_host::usage::{self, Usage};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// A benchmark: name, source, argument for the full and the quick size, and a trivial size (the
/// same program and libraries, next to no work: the image's fixed cost, `model::image_fixed`).
struct Program {
    name: &'static str,
    source: &'static str,
    full: u32,
    quick: u32,
    tiny: u32,
}

const PROGRAMS: [Program; 7] = [
    Program {
        name: "binary-trees",
        source: include_str!("../../racket/binary-trees.rkt"),
        full: 16,
        quick: 10,
        tiny: 1,
    },
    Program {
        name: "fannkuch-redux",
        source: include_str!("../../racket/fannkuch-redux.rkt"),
        full: 10,
        quick: 8,
        tiny: 3,
    },
    Program {
        name: "fasta",
        source: include_str!("../../racket/fasta.rkt"),
        full: 1_000_000,
        quick: 20_000,
        tiny: 1,
    },
    Program {
        name: "fasta-3",
        source: include_str!("../../racket/fasta-3.rkt"),
        full: 1_000_000,
        quick: 20_000,
        tiny: 1,
    },
    Program {
        name: "mandelbrot",
        source: include_str!("../../racket/mandelbrot.rkt"),
        full: 2000,
        quick: 200,
        tiny: 8,
    },
    Program {
        name: "n-body",
        source: include_str!("../../racket/n-body.rkt"),
        full: 1_000_000,
        quick: 10_000,
        tiny: 1,
    },
    Program {
        name: "spectral-norm",
        source: include_str!("../../racket/spectral-norm.rkt"),
        full: 1000,
        quick: 100,
        tiny: 1,
    },
];

/// Measured passes per benchmark at least and at most, when the budget decides.
pub const MIN_PASSES: usize = 12;
pub const MAX_PASSES: usize = 40;
/// Passes of the parts beyond the Racket table (Fig. 12, CPython, `--trace`) when `runs` is None.
pub const EXTRA_PASSES: usize = 6;

impl Config {
    /// The passes of the parts beyond the Racket table.
    fn extra_passes(&self) -> usize {
        self.runs.unwrap_or(EXTRA_PASSES)
    }

    /// The argument `p` runs with.
    fn arg(&self, p: &Program) -> u32 {
        self.args
            .iter()
            .rev()
            .find(|(n, _)| n == p.name)
            .map(|(_, a)| *a)
            .unwrap_or(if self.quick { p.quick } else { p.full })
    }
}

/// The names of the benchmarks, in the paper's order.
pub fn names() -> Vec<&'static str> {
    PROGRAMS.iter().map(|p| p.name).collect()
}

/// What to run (the CLI's flags).
#[derive(Debug, Clone)]
pub struct Config {
    /// Measured passes per benchmark; each runs every variant once, forward then reversed in the
    /// next (a round of two passes is ABBA). None: as many as fill `budget_s` (at least
    /// [`MIN_PASSES`], at most [`MAX_PASSES`]), timed by the warm-up pass.
    pub runs: Option<usize>,
    /// Seconds of measured passes per benchmark when `runs` is None.
    pub budget_s: f64,
    /// Run every variant once before the measured passes and discard it (the first LWK run
    /// after a pause is slower: the warm-up run is reported, not paired).
    pub warmup: bool,
    /// Small sizes (for tests).
    pub quick: bool,
    /// Per-benchmark arguments that replace the default (or quick) size: (name, argument).
    pub args: Vec<(String, u32)>,
    /// Benchmarks to run (empty: all).
    pub only: Vec<String>,
    /// The `multios` executable, whose `lwk run` runs the LWK side.
    pub multios: PathBuf,
    /// The Racket interpreter.
    pub racket: PathBuf,
    /// The Python interpreter of the second runtime (None: not run).
    pub python: Option<PathBuf>,
    /// The overrides of the "LWK + overrides" variant (None: the clock family).
    pub overrides: Option<PathBuf>,
    /// Also run the native program pinned to the vCPU's CPU, alone and beside a spinner on the
    /// proxy's CPU, in every round (where the LWK's time goes).
    pub causes: bool,
    /// The LWK's `--proxy-idle-us` (None: its default): how long the proxy polls after a call.
    pub proxy_idle_us: Option<u64>,
    /// Extra `lwk run` flags of an "LWK alt" variant run in every pass and paired against the
    /// plain LWK (empty: no such variant), e.g. `--populate ahead`.
    pub alt: Vec<OsString>,
    /// The projection's terms that are not events.
    pub terms: Terms,
}

/// Medians of one variant's runs.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Medians {
    pub wall_s: f64,
    pub user_s: f64,
    pub sys_s: f64,
    pub max_rss_kib: f64,
    pub page_faults: f64,
    pub context_switches: f64,
}

/// One benchmark's results.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Row {
    pub name: String,
    pub arg: u32,
    /// Every run's output equals the first native run's.
    pub identical_output: bool,
    /// System calls the program made (counted by the LWK).
    pub syscalls: u64,
    /// Calls the LWK forwarded to Linux (without and with the overrides).
    pub forwarded: u64,
    pub forwarded_with_overrides: u64,
    pub native: Medians,
    pub lwk: Medians,
    pub lwk_overrides: Medians,
    /// LWK / native wall time: median of the paired ratios and its 95 % interval.
    pub lwk_ratio: f64,
    pub lwk_ci: Option<(f64, f64)>,
    pub overrides_ratio: f64,
    pub overrides_ci: Option<(f64, f64)>,
    /// LWK + overrides / LWK wall time, paired (the issue's "overrides at least as fast as
    /// without": ≤ 1).
    pub overrides_vs_lwk: f64,
    pub overrides_vs_lwk_ci: Option<(f64, f64)>,
    /// The same counts for the overrides variant's runs (medians): what the overrides changed in
    /// the LWK's work (forwarded calls, doorbells, the proxy's parking, the vCPU's time).
    pub counts_overrides: Counts,
    /// The projected overhead (the sum of `projection`'s terms) and the measured one (LWK −
    /// native median wall), seconds.
    pub projected_overhead_s: Option<f64>,
    pub measured_overhead_s: f64,
    /// The events the LWK runs had (medians over the rounds) and the projection from them.
    pub counts: Counts,
    pub projection: Projection,
    /// The projection's event terms alone (without the sibling and wait terms).
    pub projected_events_s: f64,
    /// The measured overhead paired: the median of LWK − native per pass, and its 95 % interval
    /// (what the projection verdicts are decided against).
    pub overhead_paired_s: f64,
    pub overhead_ci: Option<(f64, f64)>,
    /// Multiverse's model (forwarded × per-event cost) with the fixed per-run cost beside it.
    pub paper: PaperModel,
    /// The image's fixed cost, from the program at its trivial size paired in the same passes:
    /// the refined projection's fixed term.
    pub image: ImageFixed,
    /// With `--alt`: the LWK with those flags against the plain LWK, paired.
    pub alt: Option<Alt>,
    /// The γ the busy-sibling term used: the workload's own (1 / beside-spinner over pinned,
    /// paired) with the causes on, else the microbenchmark's.
    pub gamma: f64,
    /// Passes run again because their runs saw two cross-CPU levels (`level.rs`).
    pub repeated: usize,
    /// Every measured pass: its level, the native and LWK walls, what the LWK run did.
    pub per_pass: Vec<PassRecord>,
    /// The passes grouped by level, LWK / native within each.
    pub by_level: Vec<LevelRow>,
    /// The fixed per-run cost over native's wall: the LWK / native ratio cannot be below
    /// 1 + this, so "within 2 %" is out of reach at this size when it exceeds 0.02.
    pub fixed_share: f64,
    /// Measured passes, and the warm-up runs (discarded): (variant, wall s).
    pub passes: usize,
    pub warmup: Vec<(String, f64)>,
    /// Runs slower than 1.25 × their variant's median.
    pub outliers: Vec<Outlier>,
    /// The targets on this benchmark, decided from the paired intervals.
    pub verdicts: Vec<Verdict>,
    pub runs: Vec<[Usage; 3]>,
    /// Unless `--no-causes`: the native program pinned to the vCPU's CPU, alone and beside a
    /// spinner on the proxy's CPU; pinned / native and beside / pinned (1 / γ of this
    /// workload), paired.
    pub causes: Option<Causes>,
}

/// One measured pass: its cross-CPU level and what its native and plain LWK runs did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PassRecord {
    /// The pass's cross-CPU level (its probes, the median, whether they agreed, retries).
    pub level: crate::crosslink::Level,
    pub native_s: f64,
    pub lwk_s: f64,
    /// The native run's user + sys time, and the LWK run's vCPU and proxy times (schedstat).
    pub native_cpu_s: f64,
    pub lwk_vcpu_run_s: f64,
    pub lwk_vcpu_wait_s: f64,
    pub lwk_proxy_run_s: f64,
    pub lwk_proxy_wakes: f64,
    pub lwk_doorbells: f64,
    /// The run as `lwk run` timed it (start-up to the guest's end).
    pub lwk_run_wall_s: f64,
    /// With the causes: the native program pinned to the vCPU's CPU, alone and beside a spinner.
    pub pinned_s: Option<f64>,
    pub beside_s: Option<f64>,
}

/// The passes of one cross-CPU level.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LevelRow {
    /// The median of its passes' levels, ns.
    pub level_ns: f64,
    pub passes: usize,
    /// LWK / native within these passes, paired (an interval from 6 passes on).
    pub lwk_ratio: f64,
    pub lwk_ci: Option<(f64, f64)>,
    /// Medians over these passes.
    pub native_s: f64,
    pub lwk_s: f64,
    pub native_cpu_s: f64,
    pub lwk_vcpu_run_s: f64,
    pub lwk_proxy_run_s: f64,
}

/// The LWK with other `lwk run` flags (`--alt`, e.g. `--populate ahead`) against the plain LWK,
/// in the same passes.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Alt {
    pub flags: Vec<String>,
    pub lwk: Medians,
    pub alt: Medians,
    /// alt / plain LWK wall, paired: median and 95 % interval.
    pub ratio: f64,
    pub ci: Option<(f64, f64)>,
    /// Met: the whole interval at or below 1 (faster); not met: wholly above (slower).
    pub faster: Decision,
    /// The alt runs' counts (medians).
    pub counts: Counts,
}

/// Where the time goes: the native program on the vCPU's CPU alone and beside a spinner.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Causes {
    pub vcpu_cpu: usize,
    pub proxy_cpu: usize,
    pub pinned: Medians,
    pub beside: Medians,
    pub pinned_ratio: f64,
    pub pinned_ci: Option<(f64, f64)>,
    pub beside_ratio: f64,
    pub beside_ci: Option<(f64, f64)>,
    /// LWK / native pinned (like with like), paired.
    pub lwk_pinned_ratio: f64,
    pub lwk_pinned_ci: Option<(f64, f64)>,
    pub runs: Vec<[Usage; 2]>,
}

/// What the benchmark measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    pub racket: String,
    /// The whole command's time, seconds.
    pub elapsed_s: f64,
    /// The functions of the "LWK + overrides" variant.
    pub overrides: Vec<String>,
    pub rows: Vec<Row>,
    pub micro: Micro,
    pub prefault: Vec<Prefault>,
    pub cpython: Option<Cpython>,
    pub trace_run: Option<TraceRun>,
    pub hotspots: Vec<HotspotLoop>,
}

/// Runs the benchmark (needs /dev/kvm and Racket).
pub fn run(cfg: &Config, progress: &mut dyn Progress) -> Result<Outcome, ExperimentError> {
    multios_lwk::check_kvm().map_err(|e| ExperimentError::Run(e.to_string()))?;
    if cfg.runs == Some(0) {
        return Err(ExperimentError::Config("--runs must be at least 1".into()));
    }
    if !(cfg.budget_s > 0.0 && cfg.budget_s.is_finite()) {
        return Err(ExperimentError::Config(format!(
            "--budget-s {}: must be a positive number of seconds",
            cfg.budget_s
        )));
    }
    for (name, _) in &cfg.args {
        if !PROGRAMS.iter().any(|p| p.name == name) {
            return Err(ExperimentError::Config(format!(
                "--arg {name}=…: no such benchmark (one of {})",
                names().join(", ")
            )));
        }
    }
    for o in &cfg.only {
        if !PROGRAMS.iter().any(|p| p.name == o) {
            return Err(ExperimentError::Config(format!(
                "--only {o}: no such benchmark (one of {})",
                names().join(", ")
            )));
        }
    }
    if Command::new(&cfg.racket).arg("--version").output().is_err() {
        return Err(ExperimentError::Run(format!(
            "{}: Racket is not installed (apt-get install racket)",
            cfg.racket.display()
        )));
    }
    let dir = std::env::temp_dir().join(format!("multios-bench-multiverse-{}", std::process::id()));
    let r = measure(cfg, &dir, progress);
    let _ = std::fs::remove_dir_all(&dir);
    r
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> ExperimentError {
    move |e| ExperimentError::Run(format!("{what}: {e}"))
}

fn measure(cfg: &Config, dir: &Path, progress: &mut dyn Progress) -> Result<Outcome, ExperimentError> {
    let t0 = Instant::now();
    std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    let chosen: Vec<&Program> = PROGRAMS
        .iter()
        .filter(|p| cfg.only.is_empty() || cfg.only.iter().any(|o| o == p.name))
        .collect();
    let overrides = match &cfg.overrides {
        Some(f) => f.clone(),
        None => {
            let f = dir.join("clocks.yaml");
            std::fs::write(
                &f,
                multios_lwk::overrides::Overrides::file_text(&["clock_gettime", "gettimeofday", "time"]),
            )
            .map_err(io(format!("writing {}", f.display())))?;
            f
        }
    };
    let functions: Vec<String> = multios_lwk::overrides::Overrides::load(&overrides)
        .map_err(|e| ExperimentError::Config(e.to_string()))?
        .functions()
        .map(str::to_string)
        .collect();
    progress.start(
        chosen.len() as u64 + 4,
        "bench multiverse: Racket natively and in the LWK",
    );

    let micro = micro::measure(&cfg.multios, dir, cfg.quick)?;
    progress.advance("microbenchmarks (Fig. 11, per-event costs, threads, trace)");
    let mut rows = Vec::new();
    for p in chosen.iter().copied() {
        rows.push(bench_one(cfg, dir, p, &overrides, &micro)?);
        progress.advance(p.name);
    }
    let mut prefault = Vec::new();
    for p in chosen
        .iter()
        .filter(|p| ["n-body", "spectral-norm"].contains(&p.name))
    {
        let argv = prepare(cfg, dir, p)?;
        prefault.push(extra::prefault(
            &cfg.multios,
            dir,
            p.name,
            &argv,
            cfg.extra_passes(),
        )?);
    }
    progress.advance("Fig. 12: the mmap prefault override");
    let cpython = match &cfg.python {
        Some(py) => Some(extra::cpython(
            &cfg.multios,
            dir,
            py,
            cfg.quick,
            cfg.extra_passes(),
        )?),
        None => None,
    };
    progress.advance("CPython's threads with pthread_create overridden");
    let first = chosen.first().copied();
    let trace_run = match first {
        Some(p) => {
            let argv = prepare(cfg, dir, p)?;
            Some(extra::trace_run(
                &cfg.multios,
                dir,
                p.name,
                &argv,
                cfg.extra_passes().max(3),
            )?)
        }
        None => None,
    };
    let mut hotspots = Vec::new();
    if let Some(p) = first {
        let argv = prepare(cfg, dir, p)?;
        hotspots.push(extra::hotspot_loop(&cfg.multios, dir, p.name, &argv)?);
    }
    if let Some(py) = &cfg.python {
        let script = dir.join("threads.py");
        let argv: Vec<OsString> = vec![py.into(), script.into(), "4".into(), "10".into()];
        hotspots.push(extra::hotspot_loop(&cfg.multios, dir, "cpython-threads", &argv)?);
    }
    progress.advance("--trace's cost and the hot-spot loop");
    progress.finish();
    let version = Command::new(&cfg.racket)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    Ok(Outcome {
        racket: version,
        elapsed_s: t0.elapsed().as_secs_f64(),
        overrides: functions,
        rows,
        micro,
        prefault,
        cpython,
        trace_run,
        hotspots,
    })
}

/// One run of `argv` with stdout to `out`: its usage (the child is reaped with wait4).
fn run_once(argv: &[OsString], out: &Path) -> Result<Usage, ExperimentError> {
    let what = format!("{argv:?}");
    let (prog, rest) = argv
        .split_first()
        .ok_or_else(|| ExperimentError::Run("empty command".into()))?;
    let file = std::fs::File::create(out).map_err(io(format!("creating {}", out.display())))?;
    let t0 = Instant::now();
    let child = Command::new(prog)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(Stdio::null())
        .spawn()
        .map_err(io(what.clone()))?;
    let u = usage::wait(child, t0).map_err(io(what.clone()))?;
    if !u.exit_status().success() {
        return Err(ExperimentError::Run(format!(
            "{what} failed: {:?}",
            u.exit_status()
        )));
    }
    Ok(u)
}

/// The medians of `runs`' usage.
fn medians_of<'a>(runs: impl Iterator<Item = &'a Usage> + Clone) -> Medians {
    let med = |f: fn(&Usage) -> f64| {
        multios_stats::median(&runs.clone().map(f).collect::<Vec<_>>()).unwrap_or(f64::NAN)
    };
    Medians {
        wall_s: med(|u| u.wall_s),
        user_s: med(|u| u.user_s),
        sys_s: med(|u| u.sys_s),
        max_rss_kib: med(|u| u.max_rss_kib as f64),
        page_faults: med(|u| u.page_faults as f64),
        context_switches: med(|u| u.context_switches as f64),
    }
}

/// `b / a`, paired: the median of the per-round ratios and its 95 % interval.
fn paired_ratio(a: &[f64], b: &[f64]) -> (f64, Option<(f64, f64)>) {
    multios_stats::paired(a, b)
        .map(|p| p.ratio())
        .unwrap_or((f64::NAN, None))
}

/// Runs `argv` as `run_once` does, pinned to `cpu` when given (the child inherits the affinity
/// of the thread that spawns it) and, when `spin_on` is given, with a thread spinning on that CPU
/// for the child's whole life (a busy sibling, as the polling proxy).
fn run_placed(
    argv: &[OsString],
    out: &Path,
    cpu: Option<usize>,
    spin_on: Option<usize>,
) -> Result<Usage, ExperimentError> {
    let stop = AtomicBool::new(false);
    std::thread::scope(|sc| {
        let spinner = spin_on.map(|c| {
            let stop = &stop;
            sc.spawn(move || {
                let _ = multios_host::cpus::pin_current_thread(&multios_host::CpuSet([c].into()));
                while !stop.load(Ordering::Relaxed) {
                    std::hint::spin_loop();
                }
            })
        });
        let r = sc
            .spawn(|| {
                if let Some(c) = cpu {
                    pin_retrying(c).map_err(io(format!("pinning the native run to CPU {c}")))?;
                }
                run_once(argv, out)
            })
            .join()
            .unwrap_or_else(|_| Err(ExperimentError::Run("the run's thread panicked".into())));
        stop.store(true, Ordering::Relaxed);
        if let Some(h) = spinner {
            let _ = h.join();
        }
        r
    })
}

/// Pins the calling thread to `cpu`. A CPU another program has taken into an exclusive cpuset
/// partition for a while (the tests of reserved partitions do) refuses with EINVAL: wait for it
/// up to 10 s rather than lose the whole benchmark to it.
fn pin_retrying(cpu: usize) -> std::io::Result<()> {
    let set = multios_host::CpuSet([cpu].into());
    let mut tries = 0;
    loop {
        match multios_host::cpus::pin_current_thread(&set) {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && tries < 40 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(250));
            }
            r => return r,
        }
    }
}

/// Writes `p`'s source into `dir`, compiles it once (raco make: every run loads the same
/// bytecode instead of compiling) and returns the command that runs it.
fn prepare(cfg: &Config, dir: &Path, p: &Program) -> Result<Vec<OsString>, ExperimentError> {
    let src = dir.join(format!("{}.rkt", p.name));
    std::fs::write(&src, p.source).map_err(io(format!("writing {}", src.display())))?;
    let raco = cfg.racket.with_file_name("raco");
    let ok = Command::new(&raco)
        .arg("make")
        .arg(&src)
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Err(ExperimentError::Run(format!(
            "{} make {} failed",
            raco.display(),
            src.display()
        )));
    }
    let arg = cfg.arg(p);
    Ok(vec![
        cfg.racket.clone().into(),
        src.into(),
        arg.to_string().into(),
    ])
}

/// The variants of a pass, in forward order. The fixed-cost pair (`/bin/true` natively and in the
/// LWK) sits between the LWK runs and the causes so each compared pair stays adjacent.
/// The pair of the program at its trivial size (`Program::tiny`) follows: the fixed cost of this
/// image (its start-up, loading and exit), measured beside the runs it is a part of.
const NATIVE: usize = 0;
const LWK: usize = 1;
const OVR: usize = 2;
const TRUE_NATIVE: usize = 3;
const TRUE_LWK: usize = 4;
const TINY_NATIVE: usize = 5;
const TINY_LWK: usize = 6;
/// The LWK with `--alt`'s extra flags (when given), paired against the plain LWK.
const ALT: usize = 7;
const PINNED: usize = 8;
const BESIDE: usize = 9;
const VARIANT_NAMES: [&str; 10] = [
    "native",
    "lwk",
    "lwk+overrides",
    "true",
    "lwk true",
    "tiny",
    "lwk tiny",
    "lwk alt",
    "native pinned",
    "native beside spinner",
];
/// The program of the fixed-cost pair.
const TRUE: &str = "/bin/true";

fn bench_one(
    cfg: &Config,
    dir: &Path,
    p: &Program,
    overrides: &Path,
    micro: &Micro,
) -> Result<Row, ExperimentError> {
    let costs = &micro.costs;
    let program = prepare(cfg, dir, p)?;
    let arg = cfg.arg(p);
    let lwk = |extra: &[OsString], profile: &Path, summary: &Path, argv: &[OsString]| -> Vec<OsString> {
        let mut v: Vec<OsString> = vec![cfg.multios.clone().into(), "lwk".into(), "run".into()];
        v.extend(["--profile".into(), profile.into()]);
        v.extend(["--summary".into(), summary.into()]);
        if let Some(us) = cfg.proxy_idle_us {
            v.extend(["--proxy-idle-us".into(), us.to_string().into()]);
        }
        v.extend_from_slice(extra);
        v.push("--".into());
        v.extend(argv.iter().cloned());
        v
    };
    let (prof_plain, prof_ovr) = (dir.join("plain.json"), dir.join("ovr.json"));
    let (summary_plain, summary_ovr) = (dir.join("summary.json"), dir.join("summary-ovr.json"));
    let (prof_true, summary_true) = (dir.join("true-profile.json"), dir.join("true-summary.json"));
    let (prof_tiny, summary_tiny) = (dir.join("tiny-profile.json"), dir.join("tiny-summary.json"));
    let (prof_alt, summary_alt) = (dir.join("alt-profile.json"), dir.join("alt-summary.json"));
    let truev: Vec<OsString> = vec![TRUE.into()];
    let mut tinyv = program.clone();
    if let Some(last) = tinyv.last_mut() {
        *last = p.tiny.to_string().into();
    }
    let commands: [Vec<OsString>; 8] = [
        program.clone(),
        lwk(&[], &prof_plain, &summary_plain, &program),
        lwk(
            &["--overrides".into(), overrides.into()],
            &prof_ovr,
            &summary_ovr,
            &program,
        ),
        truev.clone(),
        // The same flags as the benchmark's plain LWK runs: the fixed cost they pay.
        lwk(&[], &prof_true, &summary_true, &truev),
        tinyv.clone(),
        lwk(&[], &prof_tiny, &summary_tiny, &tinyv),
        lwk(&cfg.alt, &prof_alt, &summary_alt, &program),
    ];
    let (vcpu_cpu, proxy_cpu) = micro::lwk_cpus();
    // The variants of a pass, in forward order.
    let mut list: Vec<usize> = (NATIVE..=TINY_LWK).collect();
    if !cfg.alt.is_empty() {
        list.push(ALT);
    }
    if cfg.causes {
        list.extend([PINNED, BESIDE]);
    }
    // The LWK runs' summaries: [plain, with the overrides, the trivial size, alt].
    let mut summaries: [Vec<serde_json::Value>; 4] = Default::default();
    // The first native output of the program and of its trivial size: every other run of the
    // same size must print the same.
    let mut reference: Option<Vec<u8>> = None;
    let mut reference_tiny: Option<Vec<u8>> = None;
    let mut identical = true;
    // One run of variant `v`, with its LWK summary (which of `summaries` it goes to, and the
    // summary) when `keep`; its output compared (the Racket variants; `true` prints nothing).
    type Kept = Option<(usize, serde_json::Value)>;
    let mut run_variant = |v: usize, keep: bool| -> Result<(Usage, Kept), ExperimentError> {
        let out = dir.join(format!("out-{v}"));
        let u = match v {
            PINNED => run_placed(&program, &out, Some(vcpu_cpu), None)?,
            BESIDE => run_placed(&program, &out, Some(vcpu_cpu), Some(proxy_cpu))?,
            _ => run_once(&commands[v], &out)?,
        };
        let kept = match v {
            LWK => Some((0, &summary_plain)),
            OVR => Some((1, &summary_ovr)),
            TINY_LWK => Some((2, &summary_tiny)),
            ALT => Some((3, &summary_alt)),
            _ => None,
        };
        let mut summary_of_run = None;
        if let (true, Some((k, summary))) = (keep, kept) {
            let text =
                std::fs::read_to_string(summary).map_err(io(format!("reading {}", summary.display())))?;
            summary_of_run = Some((
                k,
                serde_json::from_str(&text)
                    .map_err(|e| ExperimentError::Run(format!("{}: {e}", summary.display())))?,
            ));
        }
        if v != TRUE_NATIVE && v != TRUE_LWK {
            let bytes = std::fs::read(&out).map_err(io(format!("reading {}", out.display())))?;
            let (first, first_variant) = if v == TINY_NATIVE || v == TINY_LWK {
                (&mut reference_tiny, TINY_NATIVE)
            } else {
                (&mut reference, NATIVE)
            };
            match first {
                None if v == first_variant => *first = Some(bytes),
                None => {}
                Some(r) => identical &= *r == bytes,
            }
        }
        Ok((u, summary_of_run))
    };
    // The warm-up pass (discarded): times one pass for the budget.
    let mut warmup = Vec::new();
    if cfg.warmup {
        for &v in &list {
            let (u, _) = run_variant(v, false)?;
            warmup.push((VARIANT_NAMES[v].to_string(), u.wall_s));
        }
    }
    let pass_s: f64 = warmup.iter().map(|(_, w)| w).sum();
    let npasses = verdict::passes(cfg.runs, cfg.budget_s, pass_s, MIN_PASSES, MAX_PASSES);
    let mut got: Vec<Vec<Usage>> = vec![Vec::new(); VARIANT_NAMES.len()];
    let mut levels: Vec<crate::crosslink::Level> = Vec::new();
    let mut link = crate::crosslink::Link(vcpu_cpu, proxy_cpu);
    for pass in 0..npasses {
        // A round is two passes, forward then reversed: A B C … C B A.
        let mut order = list.clone();
        if pass % 2 == 1 {
            order.reverse();
        }
        // The cross-CPU level before the pass and after each run: a pass that saw two levels is
        // run again (`level.rs`).
        let (runs, seen) = crate::crosslink::guarded(&mut link, level::MAX_REPEATS, |w| {
            let mut runs = Vec::with_capacity(order.len());
            for &v in &order {
                runs.push((v, run_variant(v, true)?));
                w.mark()?;
            }
            Ok::<_, ExperimentError>(runs)
        })?;
        for (v, (u, kept)) in runs {
            got[v].push(u);
            if let Some((k, summary)) = kept {
                summaries[k].push(summary);
            }
        }
        levels.push(seen);
    }
    let plain = multios_profile::load(&prof_plain)?;
    let with_ovr = multios_profile::load(&prof_ovr)?;
    let forwarded = |p: &multios_profile::Profile| -> u64 {
        p.syscalls
            .iter()
            .filter_map(|s| s.placement.as_ref())
            .map(|pl| pl.delegated_count)
            .sum()
    };
    let walls = |v: usize| -> Vec<f64> { got[v].iter().map(|u| u.wall_s).collect() };
    let medians = |v: usize| medians_of(got[v].iter());
    let (lwk_ratio, lwk_ci) = paired_ratio(&walls(NATIVE), &walls(LWK));
    let (overrides_ratio, overrides_ci) = paired_ratio(&walls(NATIVE), &walls(OVR));
    let (native, lwk_m) = (medians(NATIVE), medians(LWK));
    let n_fwd = forwarded(&plain);
    let off_cpu = (native.wall_s - native.user_s - native.sys_s).max(0.0);
    let counts_of = |s: &[serde_json::Value]| {
        Counts::median(
            &s.iter()
                .map(|v| Counts::from_summary(v, native.page_faults, off_cpu))
                .collect::<Vec<_>>(),
        )
    };
    let (counts, counts_overrides) = (counts_of(&summaries[0]), counts_of(&summaries[1]));
    let tiny_native = medians(TINY_NATIVE);
    let tiny_off_cpu = (tiny_native.wall_s - tiny_native.user_s - tiny_native.sys_s).max(0.0);
    let counts_tiny = Counts::median(
        &summaries[2]
            .iter()
            .map(|v| Counts::from_summary(v, tiny_native.page_faults, tiny_off_cpu))
            .collect::<Vec<_>>(),
    );
    let (overrides_vs_lwk, overrides_vs_lwk_ci) = paired_ratio(&walls(LWK), &walls(OVR));
    let diff = |a: &[f64], b: &[f64]| {
        multios_stats::paired_diff(a, b)
            .map(|d| (d.median, d.ci))
            .unwrap_or((f64::NAN, None))
    };
    // The fixed per-run cost, paired in these passes; it replaces the microbenchmark's start-up
    // in this benchmark's projection.
    let (fixed_s, fixed_ci) = diff(&walls(TRUE_NATIVE), &walls(TRUE_LWK));
    let (overhead_paired_s, overhead_ci) = diff(&walls(NATIVE), &walls(LWK));
    // The image's fixed cost (the trivial size's paired overhead less its own events) replaces
    // `true`'s in the refined projection; `true`'s stays the paper's fixed term.
    let (tiny_s, tiny_ci) = diff(&walls(TINY_NATIVE), &walls(TINY_LWK));
    let mut own = costs.clone();
    // The busy sibling priced on this workload: the native program pinned to the vCPU's CPU
    // beside a spinner on the proxy's against alone, paired in these passes (γ = 1 / that
    // ratio), in place of the microbenchmark's compute loop.
    let beside_gamma = cfg.causes.then(|| {
        let (r, _) = paired_ratio(&walls(PINNED), &walls(BESIDE));
        1.0 / r
    });
    if let Some(g) = beside_gamma.filter(|g| g.is_finite() && *g > 0.0) {
        own.gamma = g;
    }
    let image = ImageFixed {
        native_s: tiny_native.wall_s,
        lwk_s: medians(TINY_LWK).wall_s,
        ..model::image_fixed(p.tiny, tiny_s, tiny_ci, counts_tiny, &own, cfg.terms)
    };
    if image.fixed_s.is_finite() {
        own.startup_ns = image.fixed_s * 1e9;
    } else if fixed_s.is_finite() {
        own.startup_ns = fixed_s * 1e9;
    }
    let projection = model::project(&counts, &own, cfg.terms);
    let projected_events_s = model::project(&counts, &own, Terms::EVENTS).total_s;
    let paper = model::paper(
        counts.delegated_calls,
        costs.delegated_ns - costs.native_call_ns,
        micro.tsc_hz,
        fixed_s,
        fixed_ci,
    );
    let mut outliers = Vec::new();
    for &v in &list {
        for (pass, over) in verdict::slow_runs(&walls(v), verdict::OUTLIER_FACTOR) {
            outliers.push(Outlier {
                variant: VARIANT_NAMES[v].to_string(),
                pass,
                wall_s: got[v][pass].wall_s,
                over_median: over,
            });
        }
    }
    let limit = 1.0 + verdict::WITHIN;
    let verdicts = vec![
        verdict::identical(p.name, identical),
        verdict::ratio_at_most(
            p.name,
            "LWK / native ≤ 1.02",
            "LWK within 2 % of native or faster (LWK / native ≤ 1.02)",
            lwk_ratio,
            lwk_ci,
            limit,
        ),
        verdict::ratio_at_most(
            p.name,
            "overrides / LWK ≤ 1.02",
            "overrides at least as fast as without (LWK+overrides / LWK ≤ 1.02)",
            overrides_vs_lwk,
            overrides_vs_lwk_ci,
            limit,
        ),
        verdict::projection(
            p.name,
            "paper + fixed ±10 %",
            "the model's projection within 10 % of the measured overhead (paper: forwarded × per-event cost, + fixed per run)",
            paper.total_s,
            overhead_paired_s,
            overhead_ci,
        ),
        verdict::projection(
            p.name,
            "refined ±10 %",
            "the refined projection (every term) within 10 % of the measured overhead",
            projection.total_s,
            overhead_paired_s,
            overhead_ci,
        ),
    ];
    let runs: Vec<[Usage; 3]> = (0..npasses)
        .map(|i| [got[NATIVE][i], got[LWK][i], got[OVR][i]])
        .collect();
    // Each pass with its level and what its LWK run did; the LWK against native within each
    // level's passes.
    let per_pass: Vec<PassRecord> = levels
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let c = summaries[0]
                .get(i)
                .map(|v| Counts::from_summary(v, native.page_faults, off_cpu))
                .unwrap_or_default();
            PassRecord {
                level: l.clone(),
                native_s: got[NATIVE][i].wall_s,
                lwk_s: got[LWK][i].wall_s,
                native_cpu_s: got[NATIVE][i].user_s + got[NATIVE][i].sys_s,
                lwk_vcpu_run_s: c.vcpu_run_s,
                lwk_vcpu_wait_s: c.vcpu_wait_s,
                lwk_proxy_run_s: c.proxy_run_s,
                lwk_proxy_wakes: c.proxy_wakes,
                lwk_doorbells: c.doorbells,
                lwk_run_wall_s: c.run_wall_s,
                pinned_s: got[PINNED].get(i).map(|u| u.wall_s),
                beside_s: got[BESIDE].get(i).map(|u| u.wall_s),
            }
        })
        .collect();
    let by_level: Vec<LevelRow> = level::groups(&levels.iter().map(|l| l.level_ns).collect::<Vec<_>>())
        .into_iter()
        .map(|g| {
            let pick = |v: usize| -> Vec<f64> { g.iter().map(|&i| got[v][i].wall_s).collect() };
            let (lwk_ratio, lwk_ci) = paired_ratio(&pick(NATIVE), &pick(LWK));
            let med = |f: &dyn Fn(&PassRecord) -> f64| {
                multios_stats::median(&g.iter().map(|&i| f(&per_pass[i])).collect::<Vec<_>>())
                    .unwrap_or(f64::NAN)
            };
            LevelRow {
                level_ns: med(&|r| r.level.level_ns),
                passes: g.len(),
                lwk_ratio,
                lwk_ci,
                native_s: med(&|r| r.native_s),
                lwk_s: med(&|r| r.lwk_s),
                native_cpu_s: med(&|r| r.native_cpu_s),
                lwk_vcpu_run_s: med(&|r| r.lwk_vcpu_run_s),
                lwk_proxy_run_s: med(&|r| r.lwk_proxy_run_s),
            }
        })
        .collect();
    let alt = (!cfg.alt.is_empty()).then(|| {
        let (ratio, ci) = paired_ratio(&walls(LWK), &walls(ALT));
        Alt {
            flags: cfg.alt.iter().map(|f| f.to_string_lossy().into_owned()).collect(),
            lwk: medians(LWK),
            alt: medians(ALT),
            ratio,
            ci,
            faster: verdict::at_most(ci, 1.0),
            counts: counts_of(&summaries[3]),
        }
    });
    let causes = cfg.causes.then(|| {
        let pinned = walls(PINNED);
        let (pinned_ratio, pinned_ci) = paired_ratio(&walls(NATIVE), &pinned);
        let (beside_ratio, beside_ci) = paired_ratio(&pinned, &walls(BESIDE));
        let (lwk_pinned_ratio, lwk_pinned_ci) = paired_ratio(&pinned, &walls(LWK));
        Causes {
            vcpu_cpu,
            proxy_cpu,
            pinned: medians(PINNED),
            beside: medians(BESIDE),
            pinned_ratio,
            pinned_ci,
            beside_ratio,
            beside_ci,
            lwk_pinned_ratio,
            lwk_pinned_ci,
            runs: (0..npasses).map(|i| [got[PINNED][i], got[BESIDE][i]]).collect(),
        }
    });
    Ok(Row {
        name: p.name.to_string(),
        arg,
        identical_output: identical,
        syscalls: plain.syscalls.iter().map(|s| s.count).sum(),
        forwarded: n_fwd,
        forwarded_with_overrides: forwarded(&with_ovr),
        measured_overhead_s: lwk_m.wall_s - native.wall_s,
        fixed_share: fixed_s / native.wall_s,
        native,
        lwk: lwk_m,
        lwk_overrides: medians(OVR),
        lwk_ratio,
        lwk_ci,
        overrides_ratio,
        overrides_ci,
        overrides_vs_lwk,
        overrides_vs_lwk_ci,
        counts_overrides,
        projected_overhead_s: projection.total_s.is_finite().then_some(projection.total_s),
        counts,
        projection,
        projected_events_s,
        overhead_paired_s,
        overhead_ci,
        paper,
        image,
        alt,
        gamma: own.gamma,
        repeated: levels.iter().map(|l| l.retries).sum(),
        per_pass,
        by_level,
        passes: npasses,
        warmup,
        outliers,
        verdicts,
        runs,
        causes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_placed_run_is_pinned_where_asked_and_runs_beside_a_spinner() {
        let dir = std::env::temp_dir().join(format!("multios-mv-placed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        let out = dir.join("out");
        let (vcpu, proxy) = micro::lwk_cpus();
        let argv: Vec<OsString> = ["/bin/sh", "-c", "grep Cpus_allowed_list /proc/self/status"]
            .map(OsString::from)
            .to_vec();
        for spin in [None, Some(proxy)] {
            let u = run_placed(&argv, &out, Some(vcpu), spin).expect("runs");
            assert!(u.exit_status().success());
            let text = std::fs::read_to_string(&out).expect("output");
            assert_eq!(
                text.split_whitespace().last(),
                Some(vcpu.to_string().as_str()),
                "{text}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
