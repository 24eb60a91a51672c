//! `multios validate --workload NAME -- CMD …` and `--suite FILE` (issue #15): the models checked on
//! real programs. For each workload:
//!
//! 1. **profile** it once natively with the profiler (`multios profile --per-process`, eBPF as
//!    root) on the compute CPUs, in a fresh copy of its working directory (or the caller's, like
//!    every other run of it, when it has none); a run that does not end with its exit code stops it;
//! 2. **estimate** the model's parameters apart from the runs it predicts: per mechanism and f_c, the
//!    mechanism's own round trip measured in the same minutes (the Table 3 getppid, as the synthetic
//!    `validate` does), so the model's f_c is f_c + ½·round trip; in the LWK, f_c is half of
//!    (delegated getppid − native getppid) from `multios lwk fc`; γ is the stated prior 1 (both sides
//!    compute on the same Linux CPUs: the emulator does not speed computation up, the LWK's guest
//!    runs at native speed) — never fitted to the run being predicted; with the cross-CPU guard
//!    ([`level`], the default) f_c is measured at the start of every pair, in the same group of
//!    probes of the compute ↔ control round trip as the pair's runs, and a pair whose probes
//!    disagree is run again (bounded);
//! 3. **measure** with the paired comparison of `emulate --compare` ([`crate::compare`]: ABBA
//!    pairs, outputs captured, a fresh working copy per run, median of the paired speedups with its
//!    interval) for each mechanism × policy × f_c, and in the LWK (`multios lwk run --policy P`,
//!    paired with native runs the same way) for each policy;
//! 4. **score**: accuracy = 100 − MAPE of the refined projection against the measured speedups, per
//!    workload and target (emulator per mechanism, LWK), with estimated parameters and — the paper's
//!    second column — with γ fitted to the workload's own measurements ([`super::fit`]); and, with
//!    `--terms`, the estimated projection with each named correction term alone and with all of them
//!    ([`micro`] measures them, [`score`] scores them, [`table`] lays them out).

pub mod fc;
pub mod gaps;
pub mod images;
pub mod level;
pub mod memcalls;
pub mod micro;
pub mod score;
pub mod table;
pub mod touch;

use crate::compare::{self, capture, PairHook};
use crate::{ExperimentError, Progress};
use level::{FcProbe, Guard, Levels, LEVEL_BUDGET_PER_PAIR, LEVEL_RETRIES};
use micro::{Target, TermCache};
use multios_emulate::{CostModel, CpuSet, Interception, Mechanism};
use multios_model::{self as model, Params, Policy, ProcessTree, Term};
use multios_units::Duration;
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub use micro::{Measurement, STARTUP_PAIRS};
pub use score::overall;
pub use table::{accuracy_header, accuracy_rows, point_header, point_rows};

/// One real program to validate on.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Workload {
    pub name: String,
    /// The program and its arguments, passed to exec as given (any bytes; shown lossily).
    #[serde(serialize_with = "serialize_lossy")]
    pub argv: Vec<OsString>,
    /// Copied afresh for every run (the program runs inside the copy); `None`: every run — the
    /// profiled ones, the native, emulated and LWK ones — runs in the caller's working directory,
    /// as `emulate --compare` without `--workdir` does.
    pub workdir: Option<PathBuf>,
    /// The exit code every run must end with (a suite's `[workload.check] exit`, else 0): a
    /// profiled run that ends otherwise stops the workload, a measured pair that does marks its
    /// point invalid.
    pub exit: i32,
    /// Shell commands run before/after every run, in the run's directory.
    pub setup: Option<String>,
    pub cleanup: Option<String>,
    /// How to run it in the LWK when it is not `multios lwk run --policy P -- ARGV` (MPI ranks:
    /// `mpirun … {multios} lwk run --policy {policy} -- lmp …`, the runtime's daemons on Linux);
    /// `{multios}` and `{policy}` are replaced.
    pub lwk_argv: Option<Vec<String>>,
    /// The workload's own program doing nothing (same binary, libraries and interpreter
    /// start-up, no work; `perl -e 1`), run in the run's copy: the `startup-own` term's program.
    pub startup_argv: Option<Vec<String>>,
    /// How to run `startup_argv` in the LWK when it is not `multios lwk run -- STARTUP_ARGV`
    /// (`lwk_argv`'s form: MPI ranks each in an LWK under a Linux `mpirun`).
    pub startup_lwk_argv: Option<Vec<String>>,
    /// A file every run of the workload reads on stdin (the profiled, native, emulated and LWK
    /// runs alike; `multios validate --workload` captures its own stdin into one, a suite names a
    /// file of the workload's directory). `None`: the runs read `/dev/null`.
    pub stdin: Option<PathBuf>,
}

/// `argv` as text (an argument that is not UTF-8 has U+FFFD where its bad bytes were).
pub fn lossy<S: AsRef<OsStr>>(argv: &[S]) -> Vec<String> {
    argv.iter()
        .map(|a| a.as_ref().to_string_lossy().into_owned())
        .collect()
}

fn serialize_lossy<S: serde::Serializer>(argv: &[OsString], s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&lossy(argv), s)
}

impl Workload {
    /// A workload of `argv` run in the caller's working directory, nothing around it, expected
    /// to exit with 0.
    pub fn command<A: Into<OsString>>(name: &str, argv: Vec<A>) -> Workload {
        Workload {
            name: name.into(),
            argv: argv.into_iter().map(Into::into).collect(),
            workdir: None,
            exit: 0,
            setup: None,
            cleanup: None,
            lwk_argv: None,
            startup_argv: None,
            startup_lwk_argv: None,
            stdin: None,
        }
    }

    /// The command line as text, for messages.
    pub fn shown(&self) -> String {
        lossy(&self.argv).join(" ")
    }

    /// The command of an LWK run under `policy`.
    fn in_lwk(&self, exe: &Path, policy: &str) -> Vec<OsString> {
        match &self.lwk_argv {
            Some(v) => v
                .iter()
                .map(|a| {
                    a.replace("{multios}", &exe.display().to_string())
                        .replace("{policy}", policy)
                        .into()
                })
                .collect(),
            // Open MPI's daemons on Linux (an MPI singleton's `orted`), as under mpirun: the
            // suite's programs are multios's own benchmarks, trusted (not the LWK's default).
            None => [
                exe.as_os_str().to_os_string(),
                "lwk".into(),
                "run".into(),
                "--linux-exec".into(),
                multios_lwk::config::MPI_DAEMONS.join(",").into(),
                "--policy".into(),
            ]
            .into_iter()
            .chain([policy.into(), "--".into()])
            .chain(self.argv.iter().cloned())
            .collect(),
        }
    }
}

/// How to validate (the CLI's flags, resolved).
#[derive(Debug, Clone)]
pub struct Config {
    /// The multios binary: the profile and LWK runs are `multios profile` / `multios lwk run`
    /// child processes, so that their stdin, outputs and working directory are the run's own.
    pub exe: PathBuf,
    pub mechanisms: Vec<Mechanism>,
    pub policies: Vec<String>,
    pub fcs: Vec<Duration>,
    /// Pairs per measured configuration (6 or more for a 95 % interval).
    pub pairs: usize,
    /// Also measure in the LWK.
    pub lwk: bool,
    pub compute: CpuSet,
    pub control: CpuSet,
    /// The named correction terms turned on (`--terms`; empty: the paper's model alone).
    pub terms: Vec<model::Term>,
    /// The emulator's supervisors and delegate threads run SCHED_FIFO (the default); false
    /// (`--no-realtime`) keeps the caller's scheduling class, for a machine shared with others.
    pub realtime: bool,
    /// Repeat a pair whose probes of the cross-CPU round trip disagree, and measure each pair's
    /// f_c in the same group ([`level`]; `--level-guard`). False (the default): the levels are
    /// only recorded, f_c measured once per configuration.
    pub level_guard: bool,
    /// Profiled runs per workload (`--profile-runs`); the one whose t_nd = C + Σg is the median
    /// is projected from ([`profile_median`]).
    pub profile_runs: usize,
}

impl Config {
    /// How the emulator's supervisors and delegates wait (`Wait::default()`, SCHED_FIFO unless
    /// `realtime` is off).
    pub fn wait(&self) -> multios_emulate::Wait {
        multios_emulate::Wait {
            realtime: self.realtime,
            ..multios_emulate::Wait::default()
        }
    }
}

/// One measured configuration.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Point {
    pub workload: String,
    /// "emulate:shm", "emulate:proxy", "emulate:migrate" or "lwk".
    pub target: String,
    pub policy: String,
    /// The requested one-way f_c (the emulator's spin; 0 in the LWK).
    pub fc_s: f64,
    /// The model's one-way f_c: requested + ½ · the mechanism's round trip, measured in the same minutes.
    pub fc_model_s: f64,
    /// Delegated calls in the profile under the policy.
    pub delegated_calls: u64,
    /// Median of the paired speedups T_native / T_target.
    pub measured: f64,
    pub measured_ci: Option<(f64, f64)>,
    pub native_s: f64,
    pub target_s: f64,
    /// The paper's refined projection with the estimated parameters (γ = 1).
    pub projected: f64,
    /// The refined projection with γ fitted to this workload's measurements on this target.
    pub fitted: f64,
    /// The estimated projection with every `--terms` correction (`None` with `--terms none`).
    pub with_terms: Option<f64>,
    /// The estimated projection with each `--terms` correction alone, by term name.
    pub per_term: BTreeMap<String, f64>,
    /// The estimated projection with every `--terms` correction but one, by the name of the one
    /// left out: each term's effect on top of the others (`with_terms` against this), on the
    /// same measured pairs.
    pub without_term: BTreeMap<String, f64>,
    /// The projection with every `--terms` correction and γ fitted to this workload's points on
    /// this target (`None` with `--terms none`): the corrected model's best with one free parameter.
    pub fitted_with_terms: Option<f64>,
    /// The terms' measured values used for `with_terms`.
    pub terms: model::Terms,
    /// With the `cache` term: the γ for delegation it amounts to here, C / (C − S).
    pub gamma_delegation: Option<f64>,
    /// With `procs` and a profile of several processes: the projection with every process's delay
    /// added up (as if they ran one after another), beside the composed one.
    pub procs_serial: Option<f64>,
    /// Why the measurement is not valid (a pair that ended differently, outputs that differ).
    pub invalid: Option<String>,
    /// Pairs measured.
    pub pairs: usize,
    /// ln of the ratio of each two runs of the same side that came one after the other (the A/A
    /// pairs of the ABBA order, `multios_stats::same_side_log_ratios`): the machine's run-to-run noise.
    pub aa_log_ratios: Vec<f64>,
    /// The relative error a perfect projection would have against this point's measurement on
    /// average, from the A/A pairs of its workload and target (`multios_stats::ceiling_error`).
    pub ceiling_error: Option<f64>,
    /// The cross-CPU guard was on ([`level`]): pairs whose probes disagreed were run again, each
    /// pair's f_c measured in its group.
    pub level_guard: bool,
    /// The cross-CPU round trip the kept pairs saw (median of their levels, ns).
    pub level_ns: Option<f64>,
    /// The level the f_c estimate was measured in (ns): with the guard, the pairs' own; without,
    /// the probes around the one estimate.
    pub fc_level_ns: Option<f64>,
    /// Tries run again because their probes disagreed.
    pub level_repeats: usize,
    /// Kept pairs whose probes still disagreed when the retries ran out.
    pub level_unsteady: usize,
    /// Every pair with its probes, and the tries run again.
    pub levels: Levels,
}

/// One workload's results.
#[derive(Debug, Clone, serde::Serialize)]
pub struct WorkloadResult {
    pub name: String,
    pub argv: Vec<String>,
    /// Profile summary: compute time C (s), p = 1 − Σg/t_nd, system calls.
    pub c_s: f64,
    pub p: f64,
    pub calls: u64,
    /// Processes in the profile (`multios profile --per-process`).
    pub processes: usize,
    /// The profile's wall time, against t_nd = C + Σg (their gap: processes side by side).
    pub wall_s: f64,
    pub points: Vec<Point>,
    /// Per target: accuracy with estimated and fitted parameters, and the fitted γ.
    pub accuracy: Vec<Accuracy>,
    pub notes: Vec<String>,
}

/// Accuracy (100 − MAPE) on one target, over the points that are valid.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Accuracy {
    pub workload: String,
    pub target: String,
    pub points: usize,
    pub estimated: f64,
    pub fitted: f64,
    pub fitted_gamma: f64,
    /// Accuracy of the estimated projection with every `--terms` correction.
    pub with_terms: Option<f64>,
    /// Accuracy with every `--terms` correction and one γ fitted to the workload's points on the
    /// target (the paper's "fitted" on top of the corrected model, anchored t_nd with `anchor`),
    /// and that γ; `None` with `--terms none`. `fitted` stays the paper's model's.
    pub fitted_with_terms: Option<f64>,
    pub fitted_with_terms_gamma: Option<f64>,
    /// The accuracy a perfect model would reach against these measurements (100 − the mean of the
    /// points' `ceiling_error`): what the machine's run-to-run noise leaves to be judged.
    pub noise_ceiling: Option<f64>,
    /// Accuracy with each `--terms` correction alone, by term name.
    pub per_term: BTreeMap<String, f64>,
    /// Accuracy with every `--terms` correction but one, by the name of the one left out.
    pub without_term: BTreeMap<String, f64>,
}

/// A child process's end, as text for errors.
fn status_text(s: std::process::ExitStatus) -> String {
    s.to_string()
}

/// Runs `args` (a child of `exe` or a program) in `cwd` (`None`: the caller's working directory)
/// with stdin from `stdin` (a file opened afresh for the run; `None`: /dev/null) and outputs to
/// `out` with the extensions `.out` and `.err`; returns its exit status and wall time.
fn timed(
    cmd: &mut Command,
    cwd: Option<&Path>,
    out: &Path,
    stdin: Option<&Path>,
) -> Result<(std::process::ExitStatus, f64), ExperimentError> {
    let file = |p: PathBuf| {
        std::fs::File::create(&p).map_err(ExperimentError::io(format!("creating {}", p.display())))
    };
    let input = match stdin {
        Some(p) => Stdio::from(std::fs::File::open(p).map_err(ExperimentError::io(format!(
            "opening the stdin file {}",
            p.display()
        )))?),
        None => Stdio::null(),
    };
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    cmd.stdin(input)
        .stdout(file(out.with_extension("out"))?)
        .stderr(file(out.with_extension("err"))?);
    let t = std::time::Instant::now();
    let st = cmd
        .status()
        .map_err(ExperimentError::io(format!("starting {:?}", cmd.get_program())))?;
    Ok((st, t.elapsed().as_secs_f64()))
}

/// [`timed`], and the minor page faults of the child and the descendants it waited for (the
/// difference of `getrusage(RUSAGE_CHILDREN)` around the run: runs are made one at a time).
fn timed_faults(
    cmd: &mut Command,
    cwd: Option<&Path>,
    out: &Path,
    stdin: Option<&Path>,
) -> Result<(std::process::ExitStatus, f64, f64), ExperimentError> {
    use nix::sys::resource::{getrusage, UsageWho};
    let faults = || getrusage(UsageWho::RUSAGE_CHILDREN).map_or(f64::NAN, |u| u.minor_page_faults() as f64);
    let before = faults();
    let (st, secs) = timed(cmd, cwd, out, stdin)?;
    Ok((st, secs, faults() - before))
}

/// Where one run of a workload runs: a fresh copy of its directory inside `scratch` (removed by
/// [`done`]), or, without one, `None`: the caller's own working directory, left as it is. Every
/// run of a workload — profiled, native, emulated, LWK — runs in the same kind of directory, as
/// the paired runs of [`compare`] do (until this was fixed, issue #15, the profiled and LWK
/// runs of a workload without a directory ran in an empty scratch directory while its emulator
/// pairs ran in the caller's: `cat localfile` failed in the profile and was projected from that
/// failure, and `-- ./prog` was not found).
fn fresh(w: &Workload, scratch: &Path, k: usize) -> Result<Option<PathBuf>, ExperimentError> {
    let d = match &w.workdir {
        Some(src) => {
            Some(capture::fresh_copy(src, scratch).map_err(|e| ExperimentError::Run(e.to_string()))?)
        }
        None => None,
    };
    if let Some(c) = &w.setup {
        capture::hook("--setup", c, d.as_deref(), k).map_err(|e| ExperimentError::Run(e.to_string()))?;
    }
    Ok(d)
}

/// After run `k` in `dir` ([`fresh`]): the workload's cleanup, and the copy removed (never the
/// caller's directory).
fn done(w: &Workload, dir: Option<&Path>, k: usize) -> Result<(), ExperimentError> {
    if let Some(c) = &w.cleanup {
        capture::hook("--cleanup", c, dir, k).map_err(|e| ExperimentError::Run(e.to_string()))?;
    }
    if let Some(d) = dir {
        std::fs::remove_dir_all(d).ok();
    }
    Ok(())
}

/// [`done`] without removing the copy (a profiled run's, which its caller removes).
fn done_keep(w: &Workload, dir: Option<&Path>, k: usize) -> Result<(), ExperimentError> {
    match &w.cleanup {
        Some(c) => capture::hook("--cleanup", c, dir, k).map_err(|e| ExperimentError::Run(e.to_string())),
        None => Ok(()),
    }
}

/// The last `n` lines of the file `p` (a run's captured stderr), without multios's own lines.
fn last_lines(p: &Path, n: usize) -> String {
    let text = std::fs::read(p).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with("profile written to "))
        .collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// How a run ended, as the profile recorded it.
fn profile_exit_text(e: Option<&multios_profile::Exit>) -> String {
    match e {
        Some(multios_profile::Exit { code: Some(c), .. }) => format!("exit code {c}"),
        Some(multios_profile::Exit { signal: Some(s), .. }) => format!("signal {s}"),
        _ => "an unknown status".into(),
    }
}

/// Profiles `w` once (`multios profile -o … -- argv` in a fresh copy, or in the caller's
/// directory without one); returns the profile, its file, and the run's copy (kept for the
/// suite's output checks; the caller removes it), `None` when it ran in the caller's directory.
pub fn profile(
    cfg: &Config,
    w: &Workload,
    scratch: &Path,
) -> Result<(multios_profile::Profile, PathBuf, Option<PathBuf>), ExperimentError> {
    profile_run(cfg, w, scratch, 0, 1)
}

/// Profiles `w` `cfg.profile_runs` times and keeps the run whose t_nd = C + Σg is the median
/// (the lower middle one of an even number): one profiled run's t_nd was 3 % below to 18 % above
/// the median of the native runs measured after it on a quiet VM (sqlite3 +6 %, xz +12 %; by
/// hand, sqlite3's first of five profiled runs +11 %, the other four within 2 %), and the
/// projection moves with it. Three runs did not raise the suite's accuracy in the one quiet
/// comparison (perl's three profiled runs were all 1.67× its native runs: the slowness is
/// correlated), so the default stays one (2026-11-27, docs/BENCHMARKS.md). Returns the kept
/// profile, its file and every run's t_nd in order.
pub fn profile_median(
    cfg: &Config,
    w: &Workload,
    scratch: &Path,
) -> Result<(multios_profile::Profile, PathBuf, Vec<f64>), ExperimentError> {
    let mut runs = Vec::new();
    let n = cfg.profile_runs.max(1);
    for k in 0..n {
        let (p, file, dir) = profile_run(cfg, w, scratch, k, n)?;
        if let Some(d) = dir {
            std::fs::remove_dir_all(d).ok();
        }
        let t_nd = model::Workload::from_profile(&p).t_nd();
        runs.push((p, file, t_nd));
    }
    let t_nds: Vec<f64> = runs.iter().map(|r| r.2).collect();
    let (p, file, _) = runs.swap_remove(median_index(&t_nds));
    Ok((p, file, t_nds))
}

/// The index of the median of `v` (the lower middle one of an even count; NaN sorts last).
fn median_index(v: &[f64]) -> usize {
    let mut order: Vec<usize> = (0..v.len()).collect();
    order.sort_by(|&a, &b| v[a].total_cmp(&v[b]));
    order.get(v.len().saturating_sub(1) / 2).copied().unwrap_or(0)
}

/// One profiled run of `w` (the `k`-th of `of`: its own profile file and working copy). A run
/// that does not end with the workload's exit code (`w.exit`) is an error naming the run, how
/// it ended and the end of its stderr: the model would be projected from a failure.
fn profile_run(
    cfg: &Config,
    w: &Workload,
    scratch: &Path,
    k: usize,
    of: usize,
) -> Result<(multios_profile::Profile, PathBuf, Option<PathBuf>), ExperimentError> {
    let dir = fresh(w, scratch, k)?;
    let name = if k == 0 { String::new() } else { format!(".{k}") };
    let file = scratch.join(format!("{}.profile{name}.json", w.name));
    // On the compute CPUs, as the runs it predicts (a parallel build on one CPU is not the same
    // tree of processes as on two).
    let mut cmd = Command::new("taskset");
    cmd.arg("-c")
        .arg(cfg.compute.to_string())
        .arg(&cfg.exe)
        .arg("profile")
        .arg("--per-process")
        .arg("-o")
        .arg(&file)
        .arg("--")
        .args(&w.argv);
    let st = timed(
        &mut cmd,
        dir.as_deref(),
        &scratch.join("profile-run"),
        w.stdin.as_deref(),
    );
    let st = match st {
        Ok((st, _)) => st,
        Err(e) => {
            done(w, dir.as_deref(), k).ok();
            return Err(e);
        }
    };
    done_keep(w, dir.as_deref(), k)?;
    let err = scratch.join("profile-run.err");
    let wherein = match &dir {
        Some(_) => format!(
            "a fresh copy of {}",
            w.workdir.as_deref().unwrap_or(Path::new("?")).display()
        ),
        None => std::env::current_dir()
            .map_or_else(|_| "the current directory".into(), |d| d.display().to_string()),
    };
    // `multios profile` exits as the program did; a missing profile is its own failure.
    if !file.is_file() {
        if let Some(d) = &dir {
            std::fs::remove_dir_all(d).ok();
        }
        return Err(ExperimentError::Run(format!(
            "workload '{}': profiling `{}` in {wherein} failed ({}): {}",
            w.name,
            w.shown(),
            status_text(st),
            last_lines(&err, 20)
        )));
    }
    let p = multios_profile::load(&file)?;
    let code = p.exit.as_ref().and_then(|e| e.code);
    if code != Some(w.exit) {
        if let Some(d) = &dir {
            std::fs::remove_dir_all(d).ok();
        }
        let tail = last_lines(&err, 10);
        return Err(ExperimentError::Run(format!(
            "workload '{}' is not validated: its profiled run {} of {of} (`{}` in {wherein}) ended with {}, expected exit code {}; the model would be projected from a failed run{}",
            w.name,
            k + 1,
            w.shown(),
            profile_exit_text(p.exit.as_ref()),
            w.exit,
            if tail.is_empty() {
                ", which wrote nothing on stderr".to_string()
            } else {
                format!(". The end of its stderr:\n{tail}")
            }
        )));
    }
    Ok((p, file, dir))
}

/// Getppid trials of the mechanism's round trip behind a point's f_c, each
/// [`gaps::PROBE_GAP_NS`] after the previous one.
const RT_TRIALS: usize = 300;

/// `measure` with probes of the cross-CPU round trip before and after it: its value and the
/// level it was measured in (the median probe, ns; `None` on one CPU).
fn in_level(
    cfg: &Config,
    measure: impl FnOnce() -> Result<f64, ExperimentError>,
) -> Result<(f64, Option<f64>), ExperimentError> {
    let mut link = level::link(&cfg.compute, &cfg.control);
    let mut w = crate::crosslink::Watch::start(&mut link)?;
    let v = measure()?;
    w.mark()?;
    Ok((v, multios_stats::median(w.probes())))
}

/// Independent `multios lwk fc` runs behind the LWK's f_c in a projection
/// ([`micro::TermCache::lwk_fc`], [`fc::polling_one_way_s`]). One run alone came out 22–26 µs in 3 of the 12
/// invocations of the quiet suite of 2026-11-26 (pass 3) against 16.3–17.0 µs in the others: a
/// single run's outlier moved a whole workload's projections (awk's LWK points by 12 %).
pub const LWK_FC_RUNS: usize = 3;

/// The LWK's one-way f_c: half of (delegated getppid through a rewritten site − native getppid),
/// medians from `multios lwk fc` ([`fc`]: the path a program's calls take).
pub fn lwk_fc(exe: &Path) -> Result<f64, ExperimentError> {
    lwk_fc_rows(exe).map(|r| r.one_way_s())
}

/// The rows of one `multios --json lwk fc` run that a projection uses.
pub fn lwk_fc_rows(exe: &Path) -> Result<fc::FcRows, ExperimentError> {
    let out = Command::new(exe)
        .args(["--json", "lwk", "fc", "--calls", "5000"])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(ExperimentError::io("running multios lwk fc"))?;
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        ExperimentError::Run(format!(
            "multios lwk fc --json: {e} (did it run? is /dev/kvm there?)"
        ))
    })?;
    fc::parse_fc_rows(&v)
}

/// Native and LWK run times (seconds, in pair order) and why the pairs are invalid, if they are.
type LwkPairs = (Vec<f64>, Vec<f64>, Option<String>);

/// [`LwkPairs`] and the minor page faults of each native run.
type LwkPairsCounted = (Vec<f64>, Vec<f64>, Option<String>, Vec<f64>);

/// The paired native/LWK runs of `w` under `policy`, ABBA; returns (native, LWK) times and why
/// they are invalid, if they are.
fn lwk_pairs(cfg: &Config, w: &Workload, policy: &str, scratch: &Path) -> Result<LwkPairs, ExperimentError> {
    lwk_pairs_counted(cfg, w, policy, scratch).map(|(n, l, why, _)| (n, l, why))
}

/// [`lwk_pairs`], and the minor page faults of each native run (the `touch` term's count).
fn lwk_pairs_counted(
    cfg: &Config,
    w: &Workload,
    policy: &str,
    scratch: &Path,
) -> Result<LwkPairsCounted, ExperimentError> {
    lwk_pairs_hooked(cfg, w, policy, scratch, &mut compare::NoHook)
}

/// [`lwk_pairs_counted`] with `hook` called around each pair's runs, deciding which pairs stand
/// (as [`compare::run_hooked`] does for the emulator's).
fn lwk_pairs_hooked(
    cfg: &Config,
    w: &Workload,
    policy: &str,
    scratch: &Path,
    hook: &mut dyn PairHook,
) -> Result<LwkPairsCounted, ExperimentError> {
    let (mut native, mut lwk, mut faults) = (Vec::new(), Vec::new(), Vec::new());
    let mut k = 1000;
    let mut i = 0;
    while i < cfg.pairs {
        let order = if i % 2 == 0 { [false, true] } else { [true, false] };
        let mut ends = Vec::new();
        let (mut n_secs, mut l_secs, mut n_faults) = (f64::NAN, f64::NAN, f64::NAN);
        let mut native_err = PathBuf::new();
        hook.start(i).map_err(ExperimentError::Run)?;
        for in_lwk in order {
            k += 1;
            let dir = fresh(w, scratch, k)?;
            // Natively on the compute CPUs, as the LWK's program runs on its own.
            let mut cmd = if in_lwk {
                let argv = w.in_lwk(&cfg.exe, policy);
                let mut c = Command::new(&argv[0]);
                c.args(&argv[1..]);
                c
            } else {
                let mut c = Command::new("taskset");
                c.arg("-c").arg(cfg.compute.to_string()).args(&w.argv);
                c
            };
            let out = scratch.join(format!("lwk-{k}"));
            let run = timed_faults(&mut cmd, dir.as_deref(), &out, w.stdin.as_deref());
            done(w, dir.as_deref(), k)?;
            let (st, secs, f) = run?;
            if in_lwk {
                l_secs = secs;
            } else {
                (n_secs, n_faults) = (secs, f);
                native_err = out.with_extension("err");
            }
            ends.push(st.code());
            hook.between().map_err(ExperimentError::Run)?;
        }
        let differ = ends[0] != ends[1];
        // Both ended alike but not as the workload should: they measured a failure.
        let failed = !differ && ends[0] != Some(w.exit);
        if !differ && !failed && !hook.keep(i, n_secs, l_secs) {
            continue;
        }
        native.push(n_secs);
        lwk.push(l_secs);
        faults.push(n_faults);
        i += 1;
        if differ {
            return Ok((
                native,
                lwk,
                Some(format!(
                    "LWK pair {} is invalid: the runs ended with {:?} and {:?} (see `multios lwk run --policy {policy} -- {}`)",
                    i,
                    ends[0],
                    ends[1],
                    w.shown()
                )),
                faults,
            ));
        }
        if failed {
            let tail = last_lines(&native_err, 5);
            return Ok((
                native,
                lwk,
                Some(format!(
                    "LWK pair {i} is invalid: both runs ended with {}, expected exit code {}{}",
                    ends[0].map_or("a signal".to_string(), |c| format!("exit code {c}")),
                    w.exit,
                    if tail.is_empty() {
                        String::new()
                    } else {
                        format!("; the native run's stderr ended: {}", tail.replace('\n', " | "))
                    }
                )),
                faults,
            ));
        }
    }
    Ok((native, lwk, None, faults))
}

/// The calls of `w` that `target` delegates under `policy`: the split each target actually runs,
/// not the list as asked — else a call the target overrides is projected with a cost it does not
/// pay, or without one it pays. The emulator delegates what the policy says except the calls its
/// mechanism always keeps local (`Mechanism::always_local`: clone, execve, signal returns; for shm
/// also futex and the calling thread's identity). The LWK serves some calls itself whatever the
/// policy (mmap, clone, signals: its `MANDATORY_LOCAL`) and has no implementation of others (it
/// delegates read, futex, clock_gettime even where McKernel's list keeps them local): its split is
/// `multios_lwk::policy::LocalSet`'s, whose differences `lwk run` prints as notes.
pub(crate) fn delegated(
    w: &model::Workload,
    target: &str,
    policy: &str,
) -> Result<BTreeSet<String>, ExperimentError> {
    let asked = Policy::parse(policy)?;
    if let Some(m) = target.strip_prefix("emulate:") {
        let m: Mechanism = m.parse().map_err(ExperimentError::Config)?;
        let local = m.always_local();
        let mut d = asked.delegated(w);
        d.retain(|n| !local.contains(&n.as_str()));
        return Ok(d);
    }
    if target != Target::Lwk.name() {
        return Ok(asked.delegated(w));
    }
    let split = multios_lwk::policy::LocalSet::from_delegation(&asked.resolve_workload(w));
    Ok(w.calls
        .iter()
        .filter(|c| split.table().is_delegated_name(&c.name))
        .map(|c| c.name.clone())
        .collect())
}

/// The `wakeup` term per delegated call of `w` on `target` under `policy`, priced gap by gap
/// ([`gaps`]): each bucket of the delegated calls' gaps that holds a share of them measured by
/// `gaps.c` on the target (cached per target and spacing), the rest at the nearest; T_wakeup over
/// the delegated calls, so that the model's n_D·T_wakeup gives T_wakeup back. Notes the sum.
#[allow(clippy::too_many_arguments)]
fn wakeup_from_gaps(
    cfg: &Config,
    cache: &mut TermCache,
    target: Target,
    scratch: &Path,
    w: &model::Workload,
    g: &gaps::Gaps,
    policy: &str,
    notes: &mut Vec<String>,
) -> Result<f64, ExperimentError> {
    let d = delegated(w, &target.name(), policy)?;
    let h = g.of(&d);
    let n: u64 = h.iter().sum();
    if n == 0 {
        return Ok(0.0);
    }
    let mut prices = BTreeMap::new();
    for b in gaps::buckets_to_measure(&h) {
        if let Some(s) = gaps::spacing_of_bucket(b) {
            prices.insert(b, cache.wakeup(cfg, target, scratch, s)?);
        }
    }
    let smooth = gaps::monotone(&prices);
    let total = gaps::price(&h, &smooth).unwrap_or(0.0);
    let apart: u64 = h.iter().skip(gaps::FIRST_BUCKET).sum();
    let list: Vec<String> = prices
        .iter()
        .map(|(b, p)| {
            let m = smooth.get(b).copied().unwrap_or(*p);
            format!(
                "2^{b} ns: {} calls, {:.1} µs → {:.1}",
                h.get(*b).copied().unwrap_or(0),
                p * 1e6,
                m * 1e6
            )
        })
        .collect();
    let note = format!(
        "wakeup on {} under {policy}: {n} delegated calls, {apart} of them ≥ 1 µs after the thread's previous call; priced by their gaps (bucket: calls, measured → made non-decreasing: {}) at {:.3} ms, {:.2} µs a call",
        target.name(),
        if list.is_empty() { "none measured".to_string() } else { list.join("; ") },
        total * 1e3,
        total / n as f64 * 1e6
    );
    if !notes.contains(&note) {
        notes.push(note);
    }
    Ok(total / n as f64)
}

/// The refined projection of `w` on `target` under `policy` at γ and the model's f_c.
fn project(
    w: &model::Workload,
    target: &str,
    policy: &str,
    gamma: f64,
    fc: f64,
) -> Result<(f64, u64), ExperimentError> {
    let pr = projection(w, target, policy, gamma, fc)?;
    Ok((pr.speedup, pr.delegated_calls))
}

fn projection(
    w: &model::Workload,
    target: &str,
    policy: &str,
    gamma: f64,
    fc: f64,
) -> Result<model::Projection, ExperimentError> {
    let d = delegated(w, target, policy)?;
    Ok(model::refined(w, &d, &Params::new(gamma, fc))?)
}

/// What a workload is projected from: the summed profile and, when it was profiled per process,
/// its process tree.
pub struct Model<'a> {
    pub workload: &'a model::Workload,
    pub tree: Option<&'a ProcessTree>,
    /// The CPUs the program's processes share (the compute CPUs).
    pub cpus: usize,
}

impl Model<'_> {
    /// The estimated projection (γ = 1) with `terms`: composed along the process tree when `procs`
    /// is on and there is a tree, else the summed profile's, corrected.
    pub fn with(
        &self,
        target: &str,
        policy: &str,
        fc: f64,
        terms: &model::Terms,
    ) -> Result<f64, ExperimentError> {
        self.with_gamma(target, policy, fc, 1.0, terms)
    }

    /// [`Self::with`] at compute speed `gamma` (the fitted column on top of the terms).
    pub fn with_gamma(
        &self,
        target: &str,
        policy: &str,
        fc: f64,
        gamma: f64,
        terms: &model::Terms,
    ) -> Result<f64, ExperimentError> {
        let p = projection(self.workload, target, policy, gamma, fc)?;
        match self.tree {
            Some(tree) if terms.procs => {
                let d = delegated(self.workload, target, policy)?;
                let tree = target_tree(tree, target);
                Ok(model::compose(&tree, &d, &Params::new(gamma, fc), terms, self.cpus)?.speedup)
            }
            _ => Ok(model::corrected(&p, terms)),
        }
    }

    /// A point's term columns: every term on, each term alone and every term but one (by name),
    /// the cache's γ for delegation and, with `procs` and a tree, the serial composition.
    fn columns(
        &self,
        target: &str,
        policy: &str,
        fc: f64,
        terms: &model::Terms,
        selected: &[Term],
    ) -> Result<Columns, ExperimentError> {
        if selected.is_empty() {
            return Ok((None, BTreeMap::new(), BTreeMap::new(), None, None));
        }
        let all = self.with(target, policy, fc, terms)?;
        let (mut each, mut without) = (BTreeMap::new(), BTreeMap::new());
        for &t in selected {
            each.insert(
                t.name().to_string(),
                self.with(target, policy, fc, &terms.only(t))?,
            );
            without.insert(
                t.name().to_string(),
                self.with(target, policy, fc, &terms.without(t))?,
            );
        }
        let p = projection(self.workload, target, policy, 1.0, fc)?;
        let gamma_d = terms.cache.map(|c| model::spare::gamma_delegation(&p, &c));
        let serial = match self.tree {
            Some(tree) if terms.procs => {
                let d = delegated(self.workload, target, policy)?;
                let tree = target_tree(tree, target);
                Some(model::compose(&tree, &d, &Params::new(1.0, fc), terms, self.cpus)?.serial_speedup)
            }
            _ => None,
        };
        Ok((Some(all), each, without, gamma_d, serial))
    }
}

/// A point's term columns ([`Model::columns`]).
type Columns = (
    Option<f64>,
    BTreeMap<String, f64>,
    BTreeMap<String, f64>,
    Option<f64>,
    Option<f64>,
);

/// The process tree as `target` runs it: the LWK execs its `--linux-exec` programs (Open MPI's
/// daemons, which the suite names: [`Workload::in_lwk`]) on Linux, where they pay no delegation;
/// the emulator intercepts every process.
fn target_tree(tree: &ProcessTree, target: &str) -> ProcessTree {
    if target == Target::Lwk.name() {
        tree.with_on_linux(multios_lwk::config::MPI_DAEMONS)
    } else {
        tree.clone()
    }
}

/// The point of one measured configuration, its projections filled from `model`.
struct Measured {
    target: String,
    policy: String,
    fc_s: f64,
    fc_model_s: f64,
    measured: f64,
    measured_ci: Option<(f64, f64)>,
    native_s: f64,
    target_s: f64,
    invalid: Option<String>,
    /// The run times, pair by pair in ABBA order (native first in even pairs).
    native_runs: Vec<f64>,
    target_runs: Vec<f64>,
    levels: Levels,
    fc_level_ns: Option<f64>,
}

fn point(
    cfg: &Config,
    name: &str,
    model: &Model<'_>,
    terms: &model::Terms,
    m: Measured,
) -> Result<Point, ExperimentError> {
    let (projected, delegated_calls) = project(model.workload, &m.target, &m.policy, 1.0, m.fc_model_s)?;
    // `anchor`: this point's native runs (the native side of its pairs) give T_n.
    let mut terms = terms.clone();
    if cfg.terms.contains(&Term::Anchor) {
        terms.anchor_native_s = Some(m.native_s).filter(|t| t.is_finite() && *t > 0.0);
    }
    let terms = &terms;
    let (with_terms, per_term, without_term, gamma_delegation, procs_serial) =
        model.columns(&m.target, &m.policy, m.fc_model_s, terms, &cfg.terms)?;
    Ok(Point {
        workload: name.to_string(),
        target: m.target,
        policy: m.policy,
        fc_s: m.fc_s,
        fc_model_s: m.fc_model_s,
        delegated_calls,
        measured: m.measured,
        measured_ci: m.measured_ci,
        native_s: m.native_s,
        target_s: m.target_s,
        projected,
        fitted: f64::NAN,
        with_terms,
        per_term,
        without_term,
        fitted_with_terms: None,
        terms: terms.clone(),
        gamma_delegation,
        procs_serial,
        invalid: m.invalid,
        pairs: m.native_runs.len().min(m.target_runs.len()),
        aa_log_ratios: multios_stats::same_side_log_ratios(&m.native_runs, &m.target_runs),
        ceiling_error: None,
        level_guard: cfg.level_guard,
        level_ns: m.levels.level_ns(),
        fc_level_ns: m.fc_level_ns,
        level_repeats: m.levels.repeated.len(),
        level_unsteady: m.levels.unsteady(),
        levels: m.levels,
    })
}

/// Validates one workload on every target; the terms are measured on each target the first time
/// `cache` is asked for them.
pub fn run_workload(
    cfg: &Config,
    w: &Workload,
    cache: &mut TermCache,
    progress: &mut dyn Progress,
) -> Result<WorkloadResult, ExperimentError> {
    if w.argv.is_empty() {
        return Err(ExperimentError::Config(format!(
            "workload '{}': empty command",
            w.name
        )));
    }
    let scratch = capture::Scratch::new().map_err(|e| ExperimentError::Run(e.to_string()))?;
    let (prof, prof_file, t_nds) = profile_median(cfg, w, &scratch.0)?;
    let mw = model::Workload::from_profile(&prof);
    let tree = ProcessTree::from_profile(&prof);
    let model = Model {
        workload: &mw,
        tree: tree.as_ref(),
        cpus: cfg.compute.len().max(1),
    };
    let mut notes = Vec::new();
    if let Some(f) = &w.stdin {
        let n = std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
        notes.push(format!(
            "stdin: every run (profiled, native, emulated, LWK) read the same {n} bytes"
        ));
    }
    if t_nds.len() > 1 {
        let list: Vec<String> = t_nds.iter().map(|t| format!("{:.4}", t)).collect();
        notes.push(format!(
            "profiled {} times, t_nd = C + Σg {} s: the median run's profile is projected from",
            t_nds.len(),
            list.join(", ")
        ));
    }
    let mut points = Vec::new();
    let wait = cfg.wait();
    // The `wakeup` term: gap by gap from the profile's gaps when it has them, else at the mean spacing.
    let gap_hists = gaps::Gaps::of_profile(&prof);
    let spacing = gap_hists
        .is_none()
        .then(|| micro::Spacing::of_workload(mw.c, mw.calls.iter().map(|c| c.n).sum()));
    let own = cfg.terms.contains(&Term::StartupOwn);
    if own && w.startup_argv.is_none() {
        notes.push("startup-own: the workload names no startup_argv (its program doing nothing); `startup`'s `true` stands".into());
    }
    for &m in &cfg.mechanisms {
        let mut terms = cache.terms(cfg, Target::Emulate(m), &scratch.0, spacing)?;
        if own {
            terms.startup_own_s = cache.startup_own(cfg, Target::Emulate(m), w, &scratch.0)?;
        }
        for fc in &cfg.fcs {
            // Without the guard: one estimate per configuration, the level around it recorded.
            let once = if cfg.level_guard {
                None
            } else {
                let (fc_model, level) = in_level(cfg, || {
                    let rt = super::mechanism_round_trip_spaced(
                        m,
                        fc.secs(),
                        RT_TRIALS,
                        &cfg.compute,
                        &cfg.control,
                        wait,
                        gaps::PROBE_GAP_NS,
                    )?;
                    Ok(fc.secs() + rt.median / 2.0)
                })?;
                Some((fc_model, level))
            };
            for pol in &cfg.policies {
                let mut terms = terms.clone();
                if let Some(g) = gap_hists.as_ref().filter(|_| cfg.terms.contains(&Term::Wakeup)) {
                    let t = Target::Emulate(m);
                    terms.wakeup_s = Some(wakeup_from_gaps(
                        cfg, cache, t, &scratch.0, &mw, g, pol, &mut notes,
                    )?);
                }
                let terms = &terms;
                let delegation = crate::setup::resolve_delegation(pol, Some(&prof_file))?;
                let c = multios_emulate::Config {
                    mechanism: m,
                    delegation,
                    cost: CostModel::constant(fc.secs()),
                    compute: cfg.compute.clone(),
                    control: cfg.control.clone(),
                    argv: w.argv.clone(),
                    allow_below_floor: false,
                    rewrite: true,
                    wait,
                };
                // A mechanism whose floor is above the requested f_c cannot deliver it (migrate's
                // is ≈ 15 µs here): that configuration is left out, with a note.
                if let Err(e) = c.check() {
                    let note = format!("{} f_c {fc}: not measured: {e}", m.name());
                    if !notes.contains(&note) {
                        notes.push(note);
                    }
                    progress.advance(&format!("{} {} f_c {fc}: below the floor", w.name, m.name()));
                    continue;
                }
                let s = compare::Setup {
                    emulate: &c,
                    interception: Interception::Eager,
                    pairs: cfg.pairs,
                    workdir: w.workdir.clone(),
                    setup: w.setup.clone(),
                    cleanup: w.cleanup.clone(),
                };
                let mut guard = match once {
                    Some(_) => Guard::record_only(level::link(&cfg.compute, &cfg.control)),
                    None => {
                        let f = fc.secs();
                        let probe: FcProbe<'_> = Box::new(move || {
                            super::mechanism_round_trip_spaced(
                                m,
                                f,
                                RT_TRIALS,
                                &cfg.compute,
                                &cfg.control,
                                wait,
                                gaps::PROBE_GAP_NS,
                            )
                            .map(|rt| f + rt.median / 2.0)
                            .map_err(|e| format!("{} round trip at f_c {f} s: {e}", m.name()))
                        });
                        Guard::on(
                            level::link(&cfg.compute, &cfg.control),
                            LEVEL_RETRIES,
                            LEVEL_BUDGET_PER_PAIR * cfg.pairs,
                            Some(probe),
                        )
                    }
                };
                let o = compare::run_hooked(&s, w.stdin.as_deref(), &mut guard)
                    .map_err(|e| ExperimentError::Run(e.to_string()))?;
                let levels = guard.levels;
                let (fc_model, fc_level_ns) = match once {
                    Some((f, l)) => (f, l),
                    None => (levels.fc_model_s().unwrap_or(f64::NAN), levels.level_ns()),
                };
                let mut invalid = o.invalid.clone();
                // Pairs whose runs ended alike, but not as the workload should: a failure measured.
                let want = multios_emulate::Exit::Code(w.exit);
                if let Some((k, p)) = o
                    .pairs
                    .iter()
                    .enumerate()
                    .find(|(_, p)| p.native_exit != want || p.emulated_exit != want)
                    .filter(|_| invalid.is_none())
                {
                    let mut err = Vec::new();
                    o.show_output(&mut std::io::sink(), &mut err).ok();
                    let err = String::from_utf8_lossy(&err);
                    let lines: Vec<&str> = err.lines().filter(|l| !l.trim().is_empty()).collect();
                    let tail = lines[lines.len().saturating_sub(5)..].join(" | ");
                    invalid = Some(format!(
                        "pair {} is invalid: the native run ended with {}, the emulated one with {}, expected exit code {}{}",
                        k + 1,
                        p.native_exit,
                        p.emulated_exit,
                        w.exit,
                        if tail.is_empty() {
                            String::new()
                        } else {
                            format!("; the first native run's stderr ended: {tail}")
                        }
                    ));
                }
                if invalid.is_none() && !o.output_differences.is_empty() {
                    let d = &o.output_differences[0];
                    invalid = Some(format!(
                        "the {} of run {} ({}) differs from the first native run's at byte {}",
                        d.stream, d.run, d.side, d.offset
                    ));
                }
                let p = point(
                    cfg,
                    &w.name,
                    &model,
                    terms,
                    Measured {
                        target: Target::Emulate(m).name(),
                        policy: pol.clone(),
                        fc_s: fc.secs(),
                        fc_model_s: fc_model,
                        measured: o.comparison.measured_speedup,
                        measured_ci: o.speedup_ci,
                        native_s: o.comparison.native_secs,
                        target_s: o.comparison.emulated_secs,
                        invalid,
                        native_runs: o.pairs.iter().map(|p| p.native_secs).collect(),
                        target_runs: o.pairs.iter().map(|p| p.emulated_secs).collect(),
                        levels,
                        fc_level_ns,
                    },
                )?;
                progress.advance(&format!(
                    "{} {} {pol} f_c {fc}: measured {:.4}, projected {:.4}{}",
                    w.name,
                    p.target,
                    p.measured,
                    p.projected,
                    p.with_terms
                        .map_or(String::new(), |t| format!(", with terms {t:.4}"))
                ));
                points.push(p);
            }
        }
    }
    if cfg.lwk {
        let mut terms = cache.terms(cfg, Target::Lwk, &scratch.0, spacing)?;
        if own {
            terms.startup_own_s = cache.startup_own(cfg, Target::Lwk, w, &scratch.0)?;
        }
        // The empty run whose start-up is counted: its memory calls and its populated pages are
        // in the start-up term already.
        let base = memcalls::base_for_terms(cfg, w, &terms, &scratch.0)?;
        memcalls::fill_terms(&mut terms, &prof, base.as_ref(), &mut notes);
        images::fill_terms(&mut terms, &prof, &mut notes);
        // Without the guard (the default): the LWK's f_c from LWK_FC_RUNS `lwk fc` runs
        // (`TermCache::lwk_fc`: the rewritten site's row, runs that met a parked proxy left out),
        // the level around them recorded; with it, one `lwk fc` run in each pair's group.
        let once = if cfg.level_guard {
            None
        } else {
            Some(in_level(cfg, || cache.lwk_fc(cfg, &w.name))?)
        };
        let base_faults = cache.base_faults(&terms, w);
        touch::fill_terms(&mut terms, &prof, base.as_ref(), base_faults, &mut notes);
        for pol in &cfg.policies {
            let mut guard = match once {
                Some(_) => Guard::record_only(level::link(&cfg.compute, &cfg.control)),
                None => {
                    let probe: FcProbe<'_> =
                        Box::new(|| lwk_fc(&cfg.exe).map_err(|e| format!("the LWK's f_c: {e}")));
                    Guard::on(
                        level::link(&cfg.compute, &cfg.control),
                        LEVEL_RETRIES,
                        LEVEL_BUDGET_PER_PAIR * cfg.pairs,
                        Some(probe),
                    )
                }
            };
            let (native, lwk, invalid, faults) = lwk_pairs_hooked(cfg, w, pol, &scratch.0, &mut guard)?;
            let levels = guard.levels;
            let (fc, fc_level_ns) = match once {
                Some((f, l)) => (f, l),
                None => (levels.fc_model_s().unwrap_or(f64::NAN), levels.level_ns()),
            };
            let n = native.len().min(lwk.len());
            // `touch`: the pages this point's native runs touched beyond the empty run's.
            let mut terms = terms.clone();
            if let Some(g) = gap_hists.as_ref().filter(|_| cfg.terms.contains(&Term::Wakeup)) {
                terms.wakeup_s = Some(wakeup_from_gaps(
                    cfg,
                    cache,
                    Target::Lwk,
                    &scratch.0,
                    &mw,
                    g,
                    pol,
                    &mut notes,
                )?);
            }
            if let Some(t) = terms.touch.as_mut() {
                t.pages = model::median(&faults).map_or(0.0, |f| f - base_faults);
            }
            let pr = crate::stats::paired(&lwk[..n], &native[..n]);
            let (measured, ci) = pr.as_ref().map_or((f64::NAN, None), |p| p.ratio());
            let p = point(
                cfg,
                &w.name,
                &model,
                &terms,
                Measured {
                    target: Target::Lwk.name(),
                    policy: pol.clone(),
                    fc_s: 0.0,
                    fc_model_s: fc,
                    measured,
                    measured_ci: ci,
                    native_s: model::median(&native).unwrap_or(f64::NAN),
                    target_s: model::median(&lwk).unwrap_or(f64::NAN),
                    invalid,
                    native_runs: native[..n].to_vec(),
                    target_runs: lwk[..n].to_vec(),
                    levels,
                    fc_level_ns,
                },
            )?;
            progress.advance(&format!(
                "{} lwk {pol}: measured {measured:.4}, projected {:.4}",
                w.name, p.projected
            ));
            points.push(p);
        }
    }
    let accuracy = score::score(&model, &w.name, &mut points, &mut notes)?;
    Ok(WorkloadResult {
        name: w.name.clone(),
        argv: lossy(&w.argv),
        c_s: mw.c,
        p: mw.p(),
        calls: mw.calls.iter().map(|c| c.n).sum(),
        processes: prof.processes.len(),
        wall_s: prof.wall_time_s,
        points,
        accuracy,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The profiled run kept is the median one's, not the first's: an outlier first run (a cold
    /// start) no longer sets t_nd.
    #[test]
    fn issue_15_the_median_profiled_run_is_kept() {
        assert_eq!(median_index(&[0.158, 0.142, 0.145]), 2);
        assert_eq!(median_index(&[0.142]), 0);
        assert_eq!(median_index(&[0.3, 0.1, 0.2, 0.4]), 2);
        assert_eq!(median_index(&[0.2, f64::NAN, 0.1]), 0);
        assert_eq!(median_index(&[]), 0);
    }

    #[test]
    fn issue_15_the_lwk_is_projected_with_the_split_it_runs_not_the_list_asked() {
        let call = |name: &str| model::Call {
            name: name.into(),
            n: 1000,
            g: 1e-3,
        };
        let w = model::Workload {
            c: 1.0,
            calls: vec![call("read"), call("mmap"), call("write")],
        };
        let d = |target: &str, policy: &str| delegated(&w, target, policy).expect("a policy");
        // McKernel's list keeps read local; this LWK has no read of its own and delegates it.
        assert!(!d("emulate:shm", "mckernel").contains("read"));
        assert!(d("lwk", "mckernel").contains("read"));
        // "all" delegates mmap on the emulator's proxy (shm keeps it local); the LWK always serves
        // mmap itself.
        assert!(d("emulate:proxy", "all").contains("mmap"));
        assert!(!d("emulate:shm", "all").contains("mmap"));
        assert!(!d("lwk", "all").contains("mmap"));
        assert!(d("lwk", "all").contains("write") && d("lwk", "mckernel").contains("write"));
        // The emulator's mechanisms keep their own calls local: shm keeps futex, proxy nothing.
        let futex = model::Workload {
            c: 1.0,
            calls: vec![call("futex"), call("write")],
        };
        let e = |m: &str| delegated(&futex, m, "all").expect("a policy");
        assert!(!e("emulate:shm").contains("futex") && e("emulate:shm").contains("write"));
        assert!(e("emulate:proxy").contains("futex"));
        // So the LWK's projection under mckernel counts read's delegations.
        let (_, n_emu) = project(&w, "emulate:shm", "mckernel", 1.0, 10e-6).expect("projects");
        let (_, n_lwk) = project(&w, "lwk", "mckernel", 1.0, 10e-6).expect("projects");
        assert_eq!(n_lwk, n_emu + 1000);
    }

    #[test]
    fn issue_15_lwk_argv_replaces_multios_and_policy_and_defaults_to_lwk_run() {
        let exe = Path::new("/opt/multios");
        let w = Workload::command("w", vec!["lmp", "-in", "in.lj"]);
        assert_eq!(
            w.in_lwk(exe, "mckernel"),
            [
                "/opt/multios",
                "lwk",
                "run",
                "--linux-exec",
                "orted,prted",
                "--policy",
                "mckernel",
                "--",
                "lmp",
                "-in",
                "in.lj"
            ]
        );
        let mpi = Workload {
            lwk_argv: Some(
                [
                    "mpirun",
                    "-n",
                    "2",
                    "{multios}",
                    "lwk",
                    "run",
                    "--policy",
                    "{policy}",
                    "--",
                    "lmp",
                ]
                .map(String::from)
                .to_vec(),
            ),
            ..w
        };
        assert_eq!(
            mpi.in_lwk(exe, "mos"),
            [
                "mpirun",
                "-n",
                "2",
                "/opt/multios",
                "lwk",
                "run",
                "--policy",
                "mos",
                "--",
                "lmp"
            ]
        );
    }
}
