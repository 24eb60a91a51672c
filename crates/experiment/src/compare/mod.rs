//! `multios emulate --compare` (issue #15): the program run natively and emulated in pairs, in ABBA
//! order (native, emulated, emulated, native, …), every run alike — the same stdin replayed from a
//! file, its own captured stdout/stderr, a fresh copy of `--workdir`, `--setup`/`--cleanup` around
//! it — and the measured speedup taken as the median of the paired ratios T_native / T_emulated
//! with its distribution-free interval ([`crate::stats::paired`]), against the naïve and refined
//! projections ([`crate::predict`]).
//!
//! A pair whose two runs end differently is not a measurement of the same work: it invalidates
//! the comparison. Outputs that differ between runs are reported (stream, run, first differing
//! byte), not hidden; the first native run's output is the one shown.

pub mod capture;
mod verdict;
pub mod workdir;

pub use capture::{CaptureError, Stdin};
pub use verdict::{verdict, Verdict, WIDE};

use crate::predict::{self, Comparison};
use multios_emulate::{Config, Exit, Interception, Report, RunIo};
use std::path::PathBuf;

/// The default number of pairs: 6, the fewest whose median has a 95 % interval (5 pairs' widest
/// interval, their minimum to their maximum, covers 93.8 %).
pub const DEFAULT_PAIRS: usize = 6;

/// The most of multios's stdin captured for replay (256 MiB); beyond it the runs read a prefix.
pub const STDIN_CAP: u64 = 256 << 20;

/// What can stop a comparison.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error("--runs {0}: need at least 1 pair (6 or more for a 95 % interval)")]
    Runs(usize),
    #[error("the comparison stopped before any emulated run: {0}")]
    Stopped(String),
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error(transparent)]
    Emulate(#[from] multios_emulate::EmulateError),
    #[error(transparent)]
    Model(#[from] multios_model::ModelError),
    /// A [`PairHook`] could not do its part (its message names what).
    #[error("{0}")]
    Hook(String),
}

/// Called around each pair's runs (`multios validate --suite`'s cross-CPU guard,
/// `validate::real::level`): [`PairHook::start`] before the pair's first run,
/// [`PairHook::between`] after each of its two runs, and [`PairHook::keep`] decides whether the
/// pair stands or is run again (same order, same index). A pair run again is left out of the
/// measurement; its runs' outputs are still compared.
pub trait PairHook {
    fn start(&mut self, pair: usize) -> Result<(), String>;
    fn between(&mut self) -> Result<(), String>;
    fn keep(&mut self, pair: usize, native_secs: f64, emulated_secs: f64) -> bool;
}

/// The hook of a plain comparison: every pair stands.
pub struct NoHook;

impl PairHook for NoHook {
    fn start(&mut self, _: usize) -> Result<(), String> {
        Ok(())
    }
    fn between(&mut self) -> Result<(), String> {
        Ok(())
    }
    fn keep(&mut self, _: usize, _: f64, _: f64) -> bool {
        true
    }
}

/// A comparison's setup: the emulated run's configuration and how the runs are made alike.
#[derive(Debug, Clone)]
pub struct Setup<'a> {
    pub emulate: &'a Config,
    pub interception: Interception,
    /// Pairs of runs (each a native and an emulated run).
    pub pairs: usize,
    /// Copied afresh for every run; the program runs inside the copy.
    pub workdir: Option<PathBuf>,
    /// Shell command run before every run (in the run's directory).
    pub setup: Option<String>,
    /// Shell command run after every run (in the run's directory).
    pub cleanup: Option<String>,
}

/// Which way a run went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Native,
    Emulated,
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::Native => "native",
            Side::Emulated => "emulated",
        })
    }
}

/// One pair of runs.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Pair {
    /// "NE" (native first) or "EN".
    pub order: &'static str,
    pub native_secs: f64,
    pub emulated_secs: f64,
    /// native_secs / emulated_secs.
    pub speedup: f64,
    pub native_exit: Exit,
    pub emulated_exit: Exit,
}

/// An output of a run that differs from the first native run's.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Difference {
    /// 0-based index of the run, in the order the runs were made.
    pub run: usize,
    pub side: Side,
    pub stream: &'static str,
    /// The first byte at which it differs from the first native run's.
    pub offset: u64,
}

/// The outcome of a comparison.
#[derive(Debug, serde::Serialize)]
pub struct Outcome {
    /// Measured speedup (median of the paired ratios), projections, median native and emulated
    /// times (the fields of a single-run comparison).
    #[serde(flatten)]
    pub comparison: Comparison,
    pub pairs: Vec<Pair>,
    /// 95 % (or more) interval of the median paired speedup; `None` with fewer than 6 pairs.
    pub speedup_ci: Option<(f64, f64)>,
    pub ci_coverage: Option<f64>,
    pub verdict: Verdict,
    pub output_differences: Vec<Difference>,
    pub stdin: Stdin,
    /// Why the measurement is invalid (a pair whose runs ended differently, an interrupted run).
    pub invalid: Option<String>,
    /// The first emulated run's report (its counts feed the projections).
    #[serde(skip)]
    pub report: Report,
    #[serde(skip)]
    reference: [PathBuf; 2],
    #[serde(skip)]
    _scratch: capture::Scratch,
}

impl Outcome {
    /// Writes the first native run's captured stdout and stderr to `out` and `err`: the program's
    /// output, shown once.
    pub fn show_output(
        &self,
        out: &mut dyn std::io::Write,
        err: &mut dyn std::io::Write,
    ) -> Result<(), CaptureError> {
        capture::replay(&self.reference[0], out)?;
        capture::replay(&self.reference[1], err)
    }
}

/// Runs the comparison, replaying multios's own stdin to every run.
pub fn run(s: &Setup<'_>) -> Result<Outcome, CompareError> {
    let scratch = capture::Scratch::new()?;
    let stdin = capture::capture_own_stdin(&scratch.0, STDIN_CAP)?;
    run_with_stdin(s, scratch, stdin, &mut NoHook)
}

/// Runs the comparison with every run reading `stdin` (a file), or nothing (`/dev/null`) — for
/// callers that captured the program's stdin themselves (`multios validate --workload`) or name a
/// file for it (a suite's `stdin`).
pub fn run_with_input(s: &Setup<'_>, stdin: Option<&std::path::Path>) -> Result<Outcome, CompareError> {
    run_hooked(s, stdin, &mut NoHook)
}

/// [`run_with_input`] with `hook` called around each pair's runs, deciding which pairs stand.
pub fn run_hooked(
    s: &Setup<'_>,
    stdin: Option<&std::path::Path>,
    hook: &mut dyn PairHook,
) -> Result<Outcome, CompareError> {
    let scratch = capture::Scratch::new()?;
    let file = stdin.map_or_else(|| PathBuf::from("/dev/null"), std::path::Path::to_path_buf);
    let bytes = std::fs::metadata(&file)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    let stdin = Stdin {
        file,
        bytes,
        truncated: false,
    };
    run_with_stdin(s, scratch, stdin, hook)
}

fn run_with_stdin(
    s: &Setup<'_>,
    scratch: capture::Scratch,
    stdin: Stdin,
    hook: &mut dyn PairHook,
) -> Result<Outcome, CompareError> {
    if s.pairs == 0 {
        return Err(CompareError::Runs(0));
    }
    let mut runs = Runs {
        s,
        dir: scratch.0.clone(),
        stdin: stdin.file.clone(),
        n: 0,
        reference: None,
        differences: Vec::new(),
    };
    let mut pairs = Vec::new();
    let mut first_report: Option<Report> = None;
    let mut invalid = None;
    let mut i = 0;
    while i < s.pairs {
        let order = if i % 2 == 0 {
            [Side::Native, Side::Emulated]
        } else {
            [Side::Emulated, Side::Native]
        };
        let mut native = None;
        let mut emulated = None;
        hook.start(i).map_err(CompareError::Hook)?;
        for side in order {
            match side {
                Side::Native => {
                    let (exit, secs, sig) = runs.native()?;
                    native = Some((exit, secs));
                    if sig.is_some() {
                        invalid = Some(format!("run {} (native) was interrupted", runs.n));
                    }
                }
                Side::Emulated => {
                    let r = runs.emulated()?;
                    emulated = Some((r.exit, r.wall_secs));
                    if r.interrupted.is_some() {
                        invalid = Some(format!("run {} (emulated) was interrupted", runs.n));
                    }
                    first_report.get_or_insert(r);
                }
            }
            if invalid.is_some() {
                break;
            }
            hook.between().map_err(CompareError::Hook)?;
        }
        let (Some((ne, ns)), Some((ee, es))) = (native, emulated) else {
            break;
        };
        // A pair that ended differently or was interrupted stands (it invalidates the comparison).
        if invalid.is_none() && ne == ee && !hook.keep(i, ns, es) {
            continue;
        }
        pairs.push(Pair {
            order: if i % 2 == 0 { "NE" } else { "EN" },
            native_secs: ns,
            emulated_secs: es,
            speedup: ns / es,
            native_exit: ne,
            emulated_exit: ee,
        });
        if ne != ee {
            invalid = Some(format!(
                "pair {} is invalid: the native run ended with {ne}, the emulated one with {ee}; the two runs \
                 did not do the same work (a side effect of an earlier run? use --workdir or --setup/--cleanup \
                 so that every run starts alike)",
                i + 1
            ));
        }
        if invalid.is_some() {
            break;
        }
        i += 1;
    }
    let report = first_report
        .ok_or_else(|| CompareError::Stopped(invalid.clone().unwrap_or_else(|| "no pair was run".into())))?;
    let native: Vec<f64> = pairs.iter().map(|p| p.native_secs).collect();
    let emulated: Vec<f64> = pairs.iter().map(|p| p.emulated_secs).collect();
    let med = |v: &[f64]| crate::stats::median(v).unwrap_or(f64::NAN);
    let mut typical = report.clone();
    typical.wall_secs = med(&emulated);
    let mut comparison = predict::compare(med(&native), &typical, &s.emulate.cost)?;
    // The speedup of each pair, native over emulated: paired() compares its second series with
    // its first, so the emulated times are the base.
    let p = crate::stats::paired(&emulated, &native);
    let (speedup, ci) = match &p {
        Some(p) => p.ratio(),
        None => (f64::NAN, None),
    };
    if speedup.is_finite() {
        comparison.measured_speedup = speedup;
    }
    Ok(Outcome {
        verdict: verdict(&comparison, ci, pairs.len()),
        comparison,
        pairs,
        speedup_ci: ci,
        ci_coverage: p.and_then(|p| p.ci_coverage),
        output_differences: runs.differences,
        stdin,
        invalid,
        report,
        reference: runs.reference.unwrap_or_default(),
        _scratch: scratch,
    })
}

/// The runs made so far and what they need.
struct Runs<'s, 'a> {
    s: &'s Setup<'a>,
    dir: PathBuf,
    stdin: PathBuf,
    /// Runs started.
    n: usize,
    /// The first native run's stdout and stderr files.
    reference: Option<[PathBuf; 2]>,
    differences: Vec<Difference>,
}

impl Runs<'_, '_> {
    /// Prepares run `self.n` (working copy, setup), returns its streams.
    fn before(&mut self) -> Result<RunIo, CompareError> {
        let k = self.n;
        let cwd = match &self.s.workdir {
            Some(w) => Some(capture::fresh_copy(w, &self.dir).map_err(CaptureError::from)?),
            None => None,
        };
        if let Some(c) = &self.s.setup {
            capture::hook("--setup", c, cwd.as_deref(), k)?;
        }
        Ok(RunIo {
            stdin: Some(self.stdin.clone()),
            stdout: Some(self.dir.join(format!("run-{k}.out"))),
            stderr: Some(self.dir.join(format!("run-{k}.err"))),
            cwd,
        })
    }

    /// Cleans up after the run, compares its outputs with the reference's.
    fn after(&mut self, side: Side, io: &RunIo) -> Result<(), CompareError> {
        let k = self.n;
        self.n += 1;
        if let Some(c) = &self.s.cleanup {
            capture::hook("--cleanup", c, io.cwd.as_deref(), k)?;
        }
        if let Some(w) = &io.cwd {
            std::fs::remove_dir_all(w).ok();
        }
        let files = [
            io.stdout.clone().unwrap_or_default(),
            io.stderr.clone().unwrap_or_default(),
        ];
        match &self.reference {
            None if side == Side::Native => self.reference = Some(files),
            None => {}
            Some(r) => {
                for ((stream, mine), theirs) in ["stdout", "stderr"].into_iter().zip(&files).zip(r) {
                    if let Some(offset) = capture::first_difference(theirs, mine)? {
                        self.differences.push(Difference {
                            run: k,
                            side,
                            stream,
                            offset,
                        });
                    }
                }
                // Only the reference is shown: the others need not stay.
                for f in &files {
                    if !r.contains(f) {
                        std::fs::remove_file(f).ok();
                    }
                }
            }
        }
        Ok(())
    }

    fn native(&mut self) -> Result<(Exit, f64, Option<i32>), CompareError> {
        let io = self.before()?;
        let c = self.s.emulate;
        let r = multios_emulate::run_native_io(&c.argv, &c.compute, &c.wait, &io)?;
        self.after(Side::Native, &io)?;
        Ok((r.exit, r.wall_secs, r.interrupted))
    }

    fn emulated(&mut self) -> Result<Report, CompareError> {
        let io = self.before()?;
        let r = multios_emulate::run_io(self.s.emulate, self.s.interception, &io)?;
        self.after(Side::Emulated, &io)?;
        Ok(r)
    }
}
