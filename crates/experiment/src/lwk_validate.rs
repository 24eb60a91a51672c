//! `multios lwk validate`: the refined model against the real LWK (issue #5's "projection next to
//! the measured time", made systematic). The synthetic benchmark of paper §4.1 ([`crate::synth`]:
//! Monte Carlo π phases alternating with a system-call mix, everything timed in-process with
//! rdtsc) runs natively and in the LWK at several call intensities. Every model input is measured
//! apart from the runs it predicts, like the paper's Table 3 microbenchmarks:
//!
//! - γ from the benchmark with no system calls (native compute time / LWK compute time);
//! - per system call, its cost in the LWK t'(s) from the benchmark with no computation (calls
//!   only, the same mix, alternated with the point's own runs because this VM's call costs drift):
//!   a delegated call's 2·f_c(s) = t'(s) − its native per-call time, an LWK-local call's
//!   g'(s) = n(s)·t'(s);
//! - C, n(s), g(s) from the native run at the same intensity.
//!
//! What the points then test is the model's composition: that compute phases and system calls
//! add up (no proxy wake-ups after long compute phases, no cache interference…). The measured
//! speedup T_native / T_LWK is set beside the naïve S_n(p, γ) and the refined S_r;
//! accuracy = 100 − |S_model − S_measured| / S_measured · 100, summarised as 100 − MAPE.

use crate::synth::{self, SynthRun};
use crate::{ExperimentError, Progress};
use multios_lwk::bench::{self, Program};
use multios_stats::median;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The synthetic benchmark, built statically for the LWK.
const SYNTH: Program = Program {
    name: "synth",
    source: synth::SOURCE,
};

/// Calls per phase at intensity 1. getpid/getppid are left out: synth makes them through the
/// generic `syscall()` function, whose site is not rewritten (it would time the trap path).
pub const MIX: [(&str, u64); 9] = [
    ("read", 20),
    ("write", 20),
    ("fstat", 10),
    ("uname", 10),
    ("lseek", 20),
    ("openat", 10),
    ("close", 10),
    ("mmap", 10),
    ("munmap", 10),
];

/// The sweep (the CLI's `--intensity`, `--iters`, `--phases`, `--repeat`).
#[derive(Debug, Clone)]
pub struct Config {
    /// Multiples of the per-phase [`MIX`].
    pub intensities: Vec<f64>,
    /// Monte Carlo samples per phase.
    pub iters: u64,
    pub phases: u64,
    /// Alternating native/LWK runs per point (medians are compared).
    pub repeat: usize,
}

impl Config {
    /// Checks the ranges; the error names the flag at fault.
    pub fn check(&self) -> Result<(), ExperimentError> {
        if self.repeat < 1 {
            return Err(ExperimentError::Config("--repeat must be at least 1".into()));
        }
        if !self.intensities.iter().all(|k| k.is_finite() && *k > 0.0) {
            return Err(ExperimentError::Config(
                "--intensity: every value must be a positive number (0 is measured anyway, for γ)".into(),
            ));
        }
        Ok(())
    }
}

/// One intensity's measurement and predictions.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Point {
    pub intensity: f64,
    pub p: f64,
    /// Median total of the native runs, interrupted phases replaced (see [`synth::INTERRUPT_FACTOR`]).
    pub native_s: f64,
    pub lwk_s: f64,
    /// The median of the paired ratios native/LWK (runs in ABBA order), interrupted phases replaced.
    pub measured: f64,
    /// The same without replacing interrupted phases (the raw in-process totals).
    pub measured_raw: f64,
    /// Per cent of phase parts (compute, calls) found interrupted and replaced, native and LWK runs.
    pub interrupted_native_pct: f64,
    pub interrupted_lwk_pct: f64,
    pub naive: f64,
    pub refined: f64,
    pub accuracy_naive: f64,
    pub accuracy_refined: f64,
}

/// The per-call costs an intensity's predictions were made from.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Inputs {
    pub intensity: f64,
    pub per_call_lwk_s: BTreeMap<String, f64>,
    pub per_call_native_s: BTreeMap<String, f64>,
}

/// What the sweep measured (`multios lwk validate --json` prints it as is; fields in the order the
/// JSON has always had them).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    pub accuracy_naive: f64,
    pub accuracy_refined: f64,
    /// The refined model's accuracy against `measured_raw` (interrupted phases kept).
    pub accuracy_refined_raw: f64,
    pub gamma: f64,
    pub inputs: Vec<Inputs>,
    pub points: Vec<Point>,
}

/// Where and how synth runs.
struct Runner<'a> {
    exe: &'a Path,
    dir: &'a Path,
    cpu: usize,
}

impl Runner<'_> {
    /// Runs synth once at intensity `k`, natively pinned to the LWK's CPU or in the LWK.
    fn once(&self, k: f64, iters: u64, phases: u64, lwk: bool) -> Result<SynthRun, ExperimentError> {
        let mix = self.dir.join(format!("mix-{k}"));
        let text: String = MIX
            .iter()
            .map(|(n, c)| format!("{n} {}\n", (*c as f64 * k).round() as u64))
            .collect();
        std::fs::write(&mix, text).map_err(ExperimentError::io(format!("writing {}", mix.display())))?;
        let out = self.dir.join(if lwk { "lwk.out" } else { "native.out" });
        let _ = std::fs::remove_file(&out);
        let args = [
            iters.to_string(),
            phases.to_string(),
            out.display().to_string(),
            mix.display().to_string(),
        ];
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        if lwk {
            let mut cfg = multios_lwk::Config::new(&self.exe.display().to_string(), &argv);
            cfg.quiet = true;
            let o =
                multios_lwk::run(&cfg).map_err(|e| ExperimentError::Run(format!("synth in the LWK: {e}")))?;
            if o.code() != 0 {
                return Err(ExperimentError::Run(format!(
                    "synth in the LWK exited with {}",
                    o.code()
                )));
            }
        } else {
            bench::run_native(self.exe, &argv, self.cpu)
                .map_err(|e| ExperimentError::Run(format!("synth natively: {e}")))?;
        }
        let text = std::fs::read_to_string(&out).map_err(ExperimentError::io(format!(
            "reading {} (synth's output)",
            out.display()
        )))?;
        Ok(synth::parse(&text))
    }
}

/// 100 − the absolute percentage error of one prediction.
fn accuracy(model: f64, measured: f64) -> Result<f64, ExperimentError> {
    Ok(multios_model::accuracy(&[(model, measured)])?)
}

/// The median per-call time of each call over `runs`.
pub fn per_call(runs: &[SynthRun]) -> BTreeMap<String, f64> {
    let mut m: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in runs {
        for c in &r.calls {
            m.entry(c.name.clone()).or_default().push(c.g / c.n.max(1) as f64);
        }
    }
    m.into_iter()
        .map(|(k, v)| (k, median(&v).unwrap_or(f64::NAN)))
        .collect()
}

/// Runs the sweep (needs /dev/kvm); `progress` gets one step per intensity.
pub fn run(a: &Config, progress: &mut dyn Progress) -> Result<Outcome, ExperimentError> {
    multios_lwk::check_kvm().map_err(|e| ExperimentError::Run(e.to_string()))?;
    a.check()?;
    let dir = std::env::temp_dir().join(format!("multios-lwk-validate-{}", std::process::id()));
    let exe = bench::build(&dir, SYNTH)?;
    // The CPU the LWK's vCPU 0 runs on: the native runs use the same one.
    let (_, lwk_cpus) = multios_lwk::default_partition(&multios_lwk::available_cpus());
    let r = Runner {
        exe: &exe,
        dir: &dir,
        cpu: lwk_cpus.first().copied().unwrap_or(0),
    };
    let outcome = measure(a, &r, progress);
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}

/// Counts the phase parts a run's filter replaced.
#[derive(Default)]
struct Tally {
    replaced: usize,
    parts: usize,
}

impl Tally {
    fn clean(&mut self, r: SynthRun) -> (SynthRun, SynthRun) {
        let (f, n) = r.without_interruptions();
        self.replaced += n;
        self.parts += 2 * r.phases.len();
        (f, r)
    }

    fn pct(&self) -> f64 {
        100.0 * self.replaced as f64 / self.parts.max(1) as f64
    }
}

fn measure(a: &Config, r: &Runner, progress: &mut dyn Progress) -> Result<Outcome, ExperimentError> {
    // γ from runs without calls.
    let (mut gn, mut gl) = (Vec::new(), Vec::new());
    let mut skip = Tally::default();
    for _ in 0..a.repeat {
        gn.push(skip.clean(r.once(0.0, a.iters, a.phases, false)?).0.compute);
        gl.push(skip.clean(r.once(0.0, a.iters, a.phases, true)?).0.compute);
    }
    let med = |v: &[f64]| median(v).unwrap_or(f64::NAN);
    let gamma = med(&gn) / med(&gl);
    let policy = multios_lwk::LocalSet::mckernel();
    let mut inputs = Vec::new();
    let mut points = Vec::new();
    let mut raw_pairs = Vec::new();
    progress.start(a.intensities.len() as u64, "lwk validate: intensities");
    for &k in &a.intensities {
        // The per-call costs come from runs without computation, alternated with the measured
        // runs: this VM's system-call costs drift by tens of per cent within minutes, so inputs
        // measured once up front would carry that drift into the comparison. Each repeat is a
        // pair in ABBA order (native first, then LWK first, …), and the measured speedup is the
        // median of the pairs' ratios.
        let (mut nat, mut lwk, mut cn, mut cl) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut tn, mut tl) = (Tally::default(), Tally::default());
        let (mut ratios, mut ratios_raw) = (Vec::new(), Vec::new());
        for i in 0..a.repeat {
            let native_first = i % 2 == 0;
            let pair = |lwk_side: bool, iters: u64| r.once(k, iters, a.phases, lwk_side);
            let (n, l) = if native_first {
                let n = pair(false, a.iters)?;
                (n, pair(true, a.iters)?)
            } else {
                let l = pair(true, a.iters)?;
                (pair(false, a.iters)?, l)
            };
            let ((n, n_raw), (l, l_raw)) = (tn.clean(n), tl.clean(l));
            ratios.push(n.total / l.total);
            ratios_raw.push(n_raw.total / l_raw.total);
            nat.push(n);
            lwk.push(l);
            let (c_n, c_l) = if native_first {
                let c_n = pair(false, 0)?;
                (c_n, pair(true, 0)?)
            } else {
                let c_l = pair(true, 0)?;
                (pair(false, 0)?, c_l)
            };
            cn.push(tn.clean(c_n).0);
            cl.push(tl.clean(c_l).0);
        }
        let repeat = || ExperimentError::Config("--repeat must be at least 1".into());
        let nat = synth::median_of(nat).ok_or_else(repeat)?;
        let lwk = synth::median_of(lwk).ok_or_else(repeat)?;
        let (t_native, t_lwk) = (per_call(&cn), per_call(&cl));
        let w = nat.workload();
        let mut params = multios_model::Params::new(gamma, 0.0);
        let mut delegated = BTreeSet::new();
        for c in &w.calls {
            let (Some(&lwk_t), Some(&nat_t)) = (t_lwk.get(&c.name), t_native.get(&c.name)) else {
                continue;
            };
            let local = multios_syscalls::by_name(&c.name).is_some_and(|nr| policy.is_local(nr.into()));
            if local {
                params
                    .g_prime
                    .insert(c.name.clone(), multios_model::GPrime::PerCall(lwk_t));
            } else {
                delegated.insert(c.name.clone());
                params
                    .fc_per_syscall
                    .insert(c.name.clone(), ((lwk_t - nat_t) / 2.0).max(0.0));
            }
        }
        let proj = multios_model::refined(&w, &delegated, &params)?;
        let measured = med(&ratios);
        let measured_raw = med(&ratios_raw);
        raw_pairs.push((proj.speedup, measured_raw));
        points.push(Point {
            intensity: k,
            p: proj.p,
            native_s: nat.total,
            lwk_s: lwk.total,
            measured,
            measured_raw,
            interrupted_native_pct: tn.pct(),
            interrupted_lwk_pct: tl.pct(),
            naive: proj.naive,
            refined: proj.speedup,
            accuracy_naive: accuracy(proj.naive, measured)?,
            accuracy_refined: accuracy(proj.speedup, measured)?,
        });
        inputs.push(Inputs {
            intensity: k,
            per_call_native_s: t_native,
            per_call_lwk_s: t_lwk,
        });
        progress.advance(&format!(
            "measured: intensity {k} ({} alternating runs each)",
            a.repeat
        ));
    }
    progress.finish();
    // 100 − MAPE over the points.
    let over_points = |f: fn(&Point) -> f64| -> Result<f64, ExperimentError> {
        let pairs: Vec<(f64, f64)> = points.iter().map(|p| (f(p), p.measured)).collect();
        Ok(multios_model::accuracy(&pairs)?)
    };
    Ok(Outcome {
        gamma,
        accuracy_naive: over_points(|p| p.naive)?,
        accuracy_refined: over_points(|p| p.refined)?,
        accuracy_refined_raw: multios_model::accuracy(&raw_pairs)?,
        inputs,
        points,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use multios_model::Call;

    #[test]
    fn intensities_must_be_positive_and_repeat_at_least_one() {
        let ok = Config {
            intensities: vec![0.25, 1.0],
            iters: 1,
            phases: 1,
            repeat: 1,
        };
        assert!(ok.check().is_ok());
        for k in [0.0, -1.0, f64::NAN] {
            let c = Config {
                intensities: vec![k],
                ..ok.clone()
            };
            assert!(c
                .check()
                .expect_err("refused")
                .to_string()
                .starts_with("--intensity"));
        }
        let c = Config { repeat: 0, ..ok };
        assert!(c.check().expect_err("refused").to_string().contains("--repeat"));
    }

    #[test]
    fn per_call_costs_are_medians_of_time_per_call() {
        let run = |g: f64| SynthRun {
            compute: 0.0,
            calls: vec![Call {
                name: "read".into(),
                n: 10,
                g,
            }],
            total: g,
            phases: Vec::new(),
        };
        let m = per_call(&[run(1.0), run(3.0)]);
        assert_eq!(m.get("read"), Some(&0.2));
    }
}
