//! `multios validate --workload NAME -- CMD …` and `--suite FILE` (issue #15): the models checked on
//! real programs. For each workload:
//!
//! 1. **profile** it once natively with the profiler (`multios profile`, eBPF as root), in a fresh
//!    copy of its working directory;
//! 2. **estimate** the model's parameters apart from the runs it predicts: per mechanism and f_c, the
//!    mechanism's own round trip measured in the same minutes (the Table 3 getppid, as the synthetic
//!    `validate` does), so the model's f_c is f_c + ½·round trip; in the LWK, f_c is half of
//!    (delegated getppid − native getppid) from `multios lwk fc`; γ is the stated prior 1 (both sides
//!    compute on the same Linux CPUs: the emulator does not speed computation up, the LWK's guest
//!    runs at native speed) — never fitted to the run being predicted;
//! 3. **measure** with the paired comparison of `emulate --compare` ([`crate::compare`]: ABBA
//!    pairs, outputs captured, a fresh working copy per run, median of the paired speedups with its
//!    interval) for each mechanism × policy × f_c, and in the LWK (`multios lwk run --policy P`,
//!    paired with native runs the same way) for each policy;
//! 4. **score**: accuracy = 100 − MAPE of the refined projection against the measured speedups, per
//!    workload and target (emulator per mechanism, LWK), with estimated parameters and — the paper's
//!    second column — with γ fitted to the workload's own measurements ([`super::fit`]).

use super::fit;
use crate::compare::{self, capture};
use crate::{ExperimentError, Progress};
use multios_emulate::{CostModel, CpuSet, Interception, Mechanism};
use multios_model::{self as model, Params, Policy};
use multios_units::Duration;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// One real program to validate on.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Workload {
    pub name: String,
    pub argv: Vec<String>,
    /// Copied afresh for every run (the program runs inside the copy); `None`: a fresh empty directory.
    pub workdir: Option<PathBuf>,
    /// Shell commands run before/after every run, in the run's directory.
    pub setup: Option<String>,
    pub cleanup: Option<String>,
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
}

/// Pairs of the start-up microbenchmark (an empty program natively and intercepted).
pub const STARTUP_PAIRS: usize = 8;

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
    /// The estimated projection with the `--terms` corrections (`None` with `--terms none`).
    pub with_terms: Option<f64>,
    /// The terms' measured values used for `with_terms`.
    pub terms: model::Terms,
    /// Why the measurement is not valid (a pair that ended differently, outputs that differ).
    pub invalid: Option<String>,
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
    /// Accuracy of the estimated projection with the `--terms` corrections.
    pub with_terms: Option<f64>,
}

/// A child process's end, as text for errors.
fn status_text(s: std::process::ExitStatus) -> String {
    s.to_string()
}

/// Runs `args` (a child of `exe` or a program) in `cwd` with stdin from /dev/null and outputs to
/// files in `dir`; returns its exit status and wall time.
fn timed(
    cmd: &mut Command,
    cwd: &Path,
    out: &Path,
) -> Result<(std::process::ExitStatus, f64), ExperimentError> {
    let file = |p: PathBuf| {
        std::fs::File::create(&p).map_err(ExperimentError::io(format!("creating {}", p.display())))
    };
    cmd.current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(file(out.with_extension("out"))?)
        .stderr(file(out.with_extension("err"))?);
    let t = std::time::Instant::now();
    let st = cmd
        .status()
        .map_err(ExperimentError::io(format!("starting {:?}", cmd.get_program())))?;
    Ok((st, t.elapsed().as_secs_f64()))
}

/// A fresh working copy for one run (of the workload's directory, or empty) inside `scratch`.
fn fresh(w: &Workload, scratch: &Path, k: usize) -> Result<PathBuf, ExperimentError> {
    let d = match &w.workdir {
        Some(src) => capture::fresh_copy(src, scratch).map_err(|e| ExperimentError::Run(e.to_string()))?,
        None => {
            let d = scratch.join(format!("empty-{k}"));
            std::fs::create_dir_all(&d).map_err(ExperimentError::io(format!("creating {}", d.display())))?;
            d
        }
    };
    if let Some(c) = &w.setup {
        capture::hook("--setup", c, Some(&d), k).map_err(|e| ExperimentError::Run(e.to_string()))?;
    }
    Ok(d)
}

fn done(w: &Workload, dir: &Path, k: usize) -> Result<(), ExperimentError> {
    if let Some(c) = &w.cleanup {
        capture::hook("--cleanup", c, Some(dir), k).map_err(|e| ExperimentError::Run(e.to_string()))?;
    }
    std::fs::remove_dir_all(dir).ok();
    Ok(())
}

/// Profiles `w` once (`multios profile -o … -- argv` in a fresh copy); returns the profile, its
/// file, and the run's directory (kept for the suite's output checks; the caller removes it).
pub fn profile(
    cfg: &Config,
    w: &Workload,
    scratch: &Path,
) -> Result<(multios_profile::Profile, PathBuf, PathBuf), ExperimentError> {
    let dir = fresh(w, scratch, 0)?;
    let file = scratch.join(format!("{}.profile.json", w.name));
    let mut cmd = Command::new(&cfg.exe);
    cmd.arg("profile").arg("-o").arg(&file).arg("--").args(&w.argv);
    let (st, _) = timed(&mut cmd, &dir, &scratch.join("profile-run"))?;
    // `multios profile` exits as the program did; only a missing profile is a failure.
    if !file.is_file() {
        let err = std::fs::read_to_string(scratch.join("profile-run.err")).unwrap_or_default();
        return Err(ExperimentError::Run(format!(
            "workload '{}': profiling `{}` failed ({}): {}",
            w.name,
            w.argv.join(" "),
            status_text(st),
            err.trim()
        )));
    }
    Ok((multios_profile::load(&file)?, file, dir))
}

/// The LWK's one-way f_c: half of (delegated getppid − native getppid), medians from `multios lwk fc`.
pub fn lwk_fc(exe: &Path) -> Result<f64, ExperimentError> {
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
    let median = |prefix: &str| {
        v.as_array()?
            .iter()
            .find(|r| r["mechanism"].as_str().is_some_and(|m| m.starts_with(prefix)))?["summary"]["median_ns"]
            .as_f64()
    };
    match (median("delegated getppid"), median("native getppid")) {
        (Some(d), Some(n)) => Ok(((d - n) / 2.0).max(0.0) * 1e-9),
        _ => Err(ExperimentError::Run(
            "multios lwk fc --json has no 'delegated getppid' or 'native getppid' row".into(),
        )),
    }
}

/// Native and LWK run times (seconds, in pair order) and why the pairs are invalid, if they are.
type LwkPairs = (Vec<f64>, Vec<f64>, Option<String>);

/// The paired native/LWK runs of `w` under `policy`, ABBA; returns (native, LWK) times and why
/// they are invalid, if they are.
fn lwk_pairs(cfg: &Config, w: &Workload, policy: &str, scratch: &Path) -> Result<LwkPairs, ExperimentError> {
    let (mut native, mut lwk) = (Vec::new(), Vec::new());
    let mut k = 1000;
    for i in 0..cfg.pairs {
        let order = if i % 2 == 0 { [false, true] } else { [true, false] };
        let mut ends = Vec::new();
        for in_lwk in order {
            k += 1;
            let dir = fresh(w, scratch, k)?;
            let mut cmd = if in_lwk {
                let mut c = Command::new(&cfg.exe);
                c.args(["lwk", "run", "--policy", policy, "--"]).args(&w.argv);
                c
            } else {
                let mut c = Command::new(&w.argv[0]);
                c.args(&w.argv[1..]);
                c
            };
            let (st, secs) = timed(&mut cmd, &dir, &scratch.join(format!("lwk-{k}")))?;
            done(w, &dir, k)?;
            if in_lwk {
                lwk.push(secs);
            } else {
                native.push(secs);
            }
            ends.push(st.code());
        }
        if ends[0] != ends[1] {
            return Ok((
                native,
                lwk,
                Some(format!(
                    "LWK pair {} is invalid: the runs ended with {:?} and {:?} (see `multios lwk run --policy {policy} -- {}`)",
                    i + 1,
                    ends[0],
                    ends[1],
                    w.argv.join(" ")
                )),
            ));
        }
    }
    Ok((native, lwk, None))
}

/// The refined projection of `w` under `policy` at γ and the model's f_c.
fn project(w: &model::Workload, policy: &str, gamma: f64, fc: f64) -> Result<(f64, u64), ExperimentError> {
    let pr = projection(w, policy, gamma, fc)?;
    Ok((pr.speedup, pr.delegated_calls))
}

fn projection(
    w: &model::Workload,
    policy: &str,
    gamma: f64,
    fc: f64,
) -> Result<model::Projection, ExperimentError> {
    let d = Policy::parse(policy)?.delegated(w);
    Ok(model::refined(w, &d, &Params::new(gamma, fc))?)
}

/// The estimated projection with `terms` applied (`None` when every term is off).
fn with_terms(
    w: &model::Workload,
    policy: &str,
    fc: f64,
    terms: &model::Terms,
) -> Result<Option<f64>, ExperimentError> {
    if terms.is_none() {
        return Ok(None);
    }
    Ok(Some(model::corrected(&projection(w, policy, 1.0, fc)?, terms)))
}

/// The median paired difference (seconds) between `argv` intercepted under mechanism `m`,
/// delegating every call at no added cost, and run natively (`STARTUP_PAIRS` pairs).
fn emulated_extra(cfg: &Config, m: Mechanism, argv: Vec<String>) -> Result<f64, ExperimentError> {
    let c = multios_emulate::Config {
        mechanism: m,
        delegation: multios_emulate::Delegation::all(),
        cost: CostModel::constant(0.0),
        compute: cfg.compute.clone(),
        control: cfg.control.clone(),
        argv,
        allow_below_floor: true,
        rewrite: true,
        wait: multios_emulate::Wait::default(),
    };
    let s = compare::Setup {
        emulate: &c,
        interception: Interception::Eager,
        pairs: STARTUP_PAIRS,
        workdir: None,
        setup: None,
        cleanup: None,
    };
    let o = compare::run_with_input(&s, None).map_err(|e| ExperimentError::Run(e.to_string()))?;
    let native: Vec<f64> = o.pairs.iter().map(|p| p.native_secs).collect();
    let emulated: Vec<f64> = o.pairs.iter().map(|p| p.emulated_secs).collect();
    Ok(crate::stats::paired_diff(&native, &emulated).map_or(0.0, |p| p.median))
}

/// The `startup` term under mechanism `m`: the median paired difference (seconds) between an
/// empty program (`true`) intercepted, delegating every call, and run natively.
pub fn startup_emulated(cfg: &Config, m: Mechanism) -> Result<f64, ExperimentError> {
    Ok(emulated_extra(cfg, m, vec!["true".into()])?.max(0.0))
}

/// The `wakeup` microbenchmark's source (`csrc/gaps.c`), its calls and their spacing.
pub const GAPS_SOURCE: &str = include_str!("../../csrc/gaps.c");
pub const GAPS_CALLS: u64 = 2000;
pub const GAPS_NS: u64 = 100_000;

/// Builds the `wakeup` microbenchmark (dynamically linked: the emulator preloads its library).
pub fn build_gaps(dir: &Path) -> Result<PathBuf, ExperimentError> {
    let src = dir.join("gaps.c");
    std::fs::write(&src, GAPS_SOURCE).map_err(ExperimentError::io(format!("writing {}", src.display())))?;
    let exe = dir.join("gaps");
    let o = Command::new("gcc")
        .args(["-O2", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .map_err(ExperimentError::io(
            "running gcc (apt-get install build-essential)",
        ))?;
    if !o.status.success() {
        return Err(ExperimentError::Run(format!(
            "building the wakeup microbenchmark: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )));
    }
    Ok(exe)
}

/// The gaps program's argv, with or without its calls.
fn gaps_argv(exe: &Path, calls: bool) -> Vec<String> {
    let mut v = vec![
        exe.display().to_string(),
        GAPS_CALLS.to_string(),
        GAPS_NS.to_string(),
    ];
    if calls {
        v.push("call".into());
    }
    v
}

/// The `wakeup` term under mechanism `m` (seconds per delegated call): the paired extra time of the
/// gaps program with its calls, less that of the same program without them, per call, less the
/// back-to-back round trip `rt` (already in the model's f_c).
pub fn wakeup_emulated(cfg: &Config, m: Mechanism, gaps: &Path, rt: f64) -> Result<f64, ExperimentError> {
    let extra = |calls: bool| emulated_extra(cfg, m, gaps_argv(gaps, calls));
    let per_call = (extra(true)? - extra(false)?) / GAPS_CALLS as f64;
    Ok((per_call - rt).max(0.0))
}

/// The `wakeup` term in the LWK: as [`wakeup_emulated`] with `multios lwk run --policy all`.
pub fn wakeup_lwk(cfg: &Config, gaps: &Path, scratch: &Path, rt: f64) -> Result<f64, ExperimentError> {
    let extra = |calls: bool| -> Result<f64, ExperimentError> {
        let w = Workload {
            name: "gaps".into(),
            argv: gaps_argv(gaps, calls),
            workdir: None,
            setup: None,
            cleanup: None,
        };
        let c = Config {
            pairs: STARTUP_PAIRS,
            ..cfg.clone()
        };
        let (native, lwk, _) = lwk_pairs(&c, &w, "all", scratch)?;
        let n = native.len().min(lwk.len());
        Ok(crate::stats::paired_diff(&native[..n], &lwk[..n]).map_or(0.0, |p| p.median))
    };
    let per_call = (extra(true)? - extra(false)?) / GAPS_CALLS as f64;
    Ok((per_call - rt).max(0.0))
}

/// The `startup` term in the LWK: as [`startup_emulated`], with `multios lwk run -- true`.
pub fn startup_lwk(cfg: &Config, scratch: &Path) -> Result<f64, ExperimentError> {
    let w = Workload {
        name: "startup".into(),
        argv: vec!["true".into()],
        workdir: None,
        setup: None,
        cleanup: None,
    };
    let c = Config {
        pairs: STARTUP_PAIRS,
        ..cfg.clone()
    };
    let (native, lwk, _) = lwk_pairs(&c, &w, "all", scratch)?;
    let n = native.len().min(lwk.len());
    Ok(crate::stats::paired_diff(&native[..n], &lwk[..n]).map_or(0.0, |p| p.median.max(0.0)))
}

/// Validates one workload on every target.
pub fn run_workload(
    cfg: &Config,
    w: &Workload,
    progress: &mut dyn Progress,
) -> Result<WorkloadResult, ExperimentError> {
    if w.argv.is_empty() {
        return Err(ExperimentError::Config(format!(
            "workload '{}': empty command",
            w.name
        )));
    }
    let scratch = capture::Scratch::new().map_err(|e| ExperimentError::Run(e.to_string()))?;
    let (prof, prof_file, dir) = profile(cfg, w, &scratch.0)?;
    std::fs::remove_dir_all(&dir).ok();
    let mw = model::Workload::from_profile(&prof);
    let mut notes = Vec::new();
    let mut points = Vec::new();
    let wait = multios_emulate::Wait::default();
    let startup_on = cfg.terms.contains(&model::Term::Startup);
    let gaps = if cfg.terms.contains(&model::Term::Wakeup) {
        Some(build_gaps(&scratch.0)?)
    } else {
        None
    };
    for &m in &cfg.mechanisms {
        let wakeup_s = match &gaps {
            Some(g) => {
                let rt = super::mechanism_round_trip_at(m, 0.0, 300, &cfg.compute, &cfg.control, wait)?;
                Some(wakeup_emulated(cfg, m, g, rt.median)?)
            }
            None => None,
        };
        let terms = model::Terms {
            startup_s: if startup_on {
                Some(startup_emulated(cfg, m)?)
            } else {
                None
            },
            wakeup_s,
            share: None,
        };
        for fc in &cfg.fcs {
            let rt = super::mechanism_round_trip_at(m, fc.secs(), 300, &cfg.compute, &cfg.control, wait)?;
            let fc_model = fc.secs() + rt.median / 2.0;
            for pol in &cfg.policies {
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
                let o = compare::run_with_input(&s, None).map_err(|e| ExperimentError::Run(e.to_string()))?;
                let (projected, delegated_calls) = project(&mw, pol, 1.0, fc_model)?;
                let mut invalid = o.invalid.clone();
                if invalid.is_none() && !o.output_differences.is_empty() {
                    let d = &o.output_differences[0];
                    invalid = Some(format!(
                        "the {} of run {} ({}) differs from the first native run's at byte {}",
                        d.stream, d.run, d.side, d.offset
                    ));
                }
                let target = format!("emulate:{}", m.name());
                progress.advance(&format!(
                    "{} {target} {pol} f_c {fc}: measured {:.4}, projected {projected:.4}",
                    w.name, o.comparison.measured_speedup
                ));
                points.push(Point {
                    workload: w.name.clone(),
                    target,
                    policy: pol.clone(),
                    fc_s: fc.secs(),
                    fc_model_s: fc_model,
                    delegated_calls,
                    measured: o.comparison.measured_speedup,
                    measured_ci: o.speedup_ci,
                    native_s: o.comparison.native_secs,
                    target_s: o.comparison.emulated_secs,
                    projected,
                    fitted: f64::NAN,
                    with_terms: with_terms(&mw, pol, fc_model, &terms)?,
                    terms: terms.clone(),
                    invalid,
                });
            }
        }
    }
    if cfg.lwk {
        let fc = lwk_fc(&cfg.exe)?;
        let wakeup_s = match &gaps {
            Some(g) => Some(wakeup_lwk(cfg, g, &scratch.0, 2.0 * fc)?),
            None => None,
        };
        let terms = model::Terms {
            startup_s: if startup_on {
                Some(startup_lwk(cfg, &scratch.0)?)
            } else {
                None
            },
            wakeup_s,
            share: None,
        };
        for pol in &cfg.policies {
            let (native, lwk, invalid) = lwk_pairs(cfg, w, pol, &scratch.0)?;
            let n = native.len().min(lwk.len());
            let p = crate::stats::paired(&lwk[..n], &native[..n]);
            let (measured, ci) = p.as_ref().map_or((f64::NAN, None), |p| p.ratio());
            let (projected, delegated_calls) = project(&mw, pol, 1.0, fc)?;
            progress.advance(&format!(
                "{} lwk {pol}: measured {measured:.4}, projected {projected:.4}",
                w.name
            ));
            points.push(Point {
                workload: w.name.clone(),
                target: "lwk".into(),
                policy: pol.clone(),
                fc_s: 0.0,
                fc_model_s: fc,
                delegated_calls,
                measured,
                measured_ci: ci,
                native_s: model::median(&native).unwrap_or(f64::NAN),
                target_s: model::median(&lwk).unwrap_or(f64::NAN),
                projected,
                fitted: f64::NAN,
                with_terms: with_terms(&mw, pol, fc, &terms)?,
                terms: terms.clone(),
                invalid,
            });
        }
    }
    let accuracy = score(&mw, &w.name, &mut points, &mut notes)?;
    Ok(WorkloadResult {
        name: w.name.clone(),
        argv: w.argv.clone(),
        c_s: mw.c,
        p: mw.p(),
        calls: mw.calls.iter().map(|c| c.n).sum(),
        points,
        accuracy,
        notes,
    })
}

/// Fits γ per target, fills each point's fitted projection, returns the accuracies.
fn score(
    mw: &model::Workload,
    name: &str,
    points: &mut [Point],
    notes: &mut Vec<String>,
) -> Result<Vec<Accuracy>, ExperimentError> {
    let mut targets: Vec<String> = points.iter().map(|p| p.target.clone()).collect();
    targets.dedup();
    let mut out = Vec::new();
    for t in targets {
        let valid = |p: &Point| p.target == t && p.invalid.is_none() && p.measured.is_finite();
        let sel: Vec<(String, f64, f64)> = points
            .iter()
            .filter(|p| valid(p))
            .map(|p| (p.policy.clone(), p.fc_model_s, p.measured))
            .collect();
        let skipped = points.iter().filter(|p| p.target == t && !valid(p)).count();
        if skipped > 0 {
            notes.push(format!(
                "{t}: {skipped} invalid point(s) left out of the accuracy"
            ));
        }
        if sel.is_empty() {
            continue;
        }
        let predict = |g: f64| -> Result<Vec<(f64, f64)>, ExperimentError> {
            sel.iter()
                .map(|(pol, fc, m)| Ok((project(mw, pol, g, *fc)?.0, *m)))
                .collect()
        };
        let estimated = model::accuracy(&predict(1.0)?)?;
        let corrected = terms_accuracy(points.iter().filter(|p| valid(p)))?;
        let gamma = fit::best_gamma(|g| predict(g).ok().and_then(|v| model::accuracy(&v).ok()));
        let fitted = model::accuracy(&predict(gamma)?)?;
        for p in points.iter_mut().filter(|p| p.target == t) {
            p.fitted = project(mw, &p.policy, gamma, p.fc_model_s)?.0;
        }
        out.push(Accuracy {
            workload: name.to_string(),
            target: t,
            points: sel.len(),
            estimated,
            fitted,
            fitted_gamma: gamma,
            with_terms: corrected,
        });
    }
    Ok(out)
}

/// Accuracy of the points' projections with terms, `None` when the terms are off.
fn terms_accuracy<'p>(points: impl Iterator<Item = &'p Point>) -> Result<Option<f64>, ExperimentError> {
    let pairs: Option<Vec<(f64, f64)>> = points.map(|p| p.with_terms.map(|t| (t, p.measured))).collect();
    match pairs {
        Some(v) if !v.is_empty() => Ok(Some(model::accuracy(&v)?)),
        _ => Ok(None),
    }
}

/// Accuracy over every workload per target: 100 − MAPE over all their valid points (estimated and
/// fitted), with `workload` "(all)".
pub fn overall(results: &[WorkloadResult]) -> Result<Vec<Accuracy>, ExperimentError> {
    let mut targets: Vec<String> = results
        .iter()
        .flat_map(|r| r.points.iter().map(|p| p.target.clone()))
        .collect();
    targets.sort();
    targets.dedup();
    let mut out = Vec::new();
    for t in targets {
        let pts: Vec<&Point> = results
            .iter()
            .flat_map(|r| &r.points)
            .filter(|p| p.target == t && p.invalid.is_none() && p.measured.is_finite())
            .collect();
        if pts.is_empty() {
            continue;
        }
        let est: Vec<(f64, f64)> = pts.iter().map(|p| (p.projected, p.measured)).collect();
        let fit: Vec<(f64, f64)> = pts.iter().map(|p| (p.fitted, p.measured)).collect();
        out.push(Accuracy {
            workload: "(all)".into(),
            target: t,
            points: pts.len(),
            estimated: model::accuracy(&est)?,
            fitted: model::accuracy(&fit)?,
            fitted_gamma: f64::NAN,
            with_terms: terms_accuracy(pts.iter().copied())?,
        });
    }
    Ok(out)
}

/// The per-point table's header and rows.
pub const POINT_HEADER: [&str; 10] = [
    "workload",
    "target",
    "policy",
    "f_c",
    "model f_c",
    "measured",
    "95 % interval",
    "estimated",
    "fitted",
    "with terms",
];

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or_else(|| "—".into(), |v| format!("{v:.prec$}"))
}

pub fn point_rows(results: &[WorkloadResult]) -> Vec<[String; 10]> {
    results
        .iter()
        .flat_map(|r| &r.points)
        .map(|p| {
            [
                p.workload.clone(),
                p.target.clone(),
                p.policy.clone(),
                multios_units::format_secs(p.fc_s),
                multios_units::format_secs(p.fc_model_s),
                match &p.invalid {
                    Some(_) => format!("{:.4} (invalid)", p.measured),
                    None => format!("{:.4}", p.measured),
                },
                p.measured_ci
                    .map_or_else(|| "—".into(), |(lo, hi)| format!("[{lo:.4}, {hi:.4}]")),
                format!("{:.4}", p.projected),
                format!("{:.4}", p.fitted),
                opt(p.with_terms, 4),
            ]
        })
        .collect()
}

/// The accuracy table's header and rows (per workload and target, then overall).
pub const ACCURACY_HEADER: [&str; 7] = [
    "workload",
    "target",
    "points",
    "estimated %",
    "fitted %",
    "fitted γ",
    "with terms %",
];

pub fn accuracy_rows(acc: &[Accuracy]) -> Vec<[String; 7]> {
    acc.iter()
        .map(|a| {
            [
                a.workload.clone(),
                a.target.clone(),
                a.points.to_string(),
                format!("{:.2}", a.estimated),
                format!("{:.2}", a.fitted),
                if a.fitted_gamma.is_finite() {
                    format!("{:.4}", a.fitted_gamma)
                } else {
                    "—".into()
                },
                opt(a.with_terms, 2),
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use multios_model::Call;

    fn point(target: &str, policy: &str, fc: f64, measured: f64) -> Point {
        Point {
            workload: "w".into(),
            target: target.into(),
            policy: policy.into(),
            fc_s: fc,
            fc_model_s: fc,
            delegated_calls: 0,
            measured,
            measured_ci: None,
            native_s: 1.0,
            target_s: 1.0 / measured,
            projected: f64::NAN,
            fitted: f64::NAN,
            with_terms: None,
            terms: model::Terms::none(),
            invalid: None,
        }
    }

    fn workload() -> model::Workload {
        model::Workload {
            c: 1.0,
            calls: vec![Call {
                name: "write".into(),
                n: 10_000,
                g: 0.01,
            }],
        }
    }

    #[test]
    fn issue_15_a_measurement_the_model_makes_exactly_scores_100_and_invalid_points_are_left_out() {
        let w = workload();
        // What the refined model projects at γ = 1 with f_c = 10 µs: t_nd = 1.01, t_d = 1.01 + 0.2.
        let exact = project(&w, "all", 1.0, 10e-6).expect("projects").0;
        assert!((exact - 1.01 / 1.21).abs() < 1e-12, "{exact}");
        let mut pts = vec![
            point("emulate:shm", "all", 10e-6, exact),
            point("emulate:shm", "all", 10e-6, 0.1),
        ];
        pts[1].invalid = Some("pair 1 is invalid".into());
        let mut notes = Vec::new();
        let acc = score(&w, "w", &mut pts, &mut notes).expect("scores");
        assert_eq!(acc.len(), 1);
        assert!((acc[0].estimated - 100.0).abs() < 1e-9, "{acc:?}");
        assert!((acc[0].fitted - 100.0).abs() < 1e-6, "{acc:?}");
        assert_eq!(acc[0].points, 1);
        assert!(notes[0].contains("1 invalid"), "{notes:?}");
    }

    #[test]
    fn issue_15_the_fitted_column_is_at_least_the_estimated_one() {
        let w = workload();
        let mut pts = vec![
            point("lwk", "all", 10e-6, 0.7),
            point("lwk", "mckernel", 10e-6, 0.9),
            point("lwk", "all", 50e-6, 0.4),
        ];
        for p in &mut pts {
            p.projected = project(&w, &p.policy, 1.0, p.fc_model_s).expect("projects").0;
        }
        let acc = score(&w, "w", &mut pts, &mut Vec::new()).expect("scores");
        assert!(acc[0].fitted >= acc[0].estimated - 1e-9, "{acc:?}");
        assert!(pts.iter().all(|p| p.fitted.is_finite()));
        let r = WorkloadResult {
            name: "w".into(),
            argv: vec!["w".into()],
            c_s: 1.0,
            p: 0.01,
            calls: 10_000,
            points: pts,
            accuracy: acc.clone(),
            notes: Vec::new(),
        };
        let all = overall(&[r]).expect("overall");
        assert_eq!((all[0].workload.as_str(), all[0].points), ("(all)", 3));
        assert!((all[0].estimated - acc[0].estimated).abs() < 1e-9);
    }
}
