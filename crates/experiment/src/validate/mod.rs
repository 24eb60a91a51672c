//! `multios validate` (issue #4): the paper's synthetic benchmark (§4.1) under emulation, swept over
//! γ × policy × f_c, measured speedups next to the naïve and refined predictions, with figures like
//! the paper's Fig. 11 (speedup vs f_c) and Fig. 13 (accuracy with min/median/mean f_c).
//! γ is emulated by shrinking the computation by γ; each configuration's predictions are made from
//! the native run's own profile (C, n(s), g(s), timed in-process).

pub mod fit;
mod plots;
pub mod real;
pub mod realplots;
mod score;

pub use score::{
    mechanism_round_trip, mechanism_round_trip_at, mechanism_round_trip_spaced, score, Point, RoundTrip,
};

use crate::synth::{self, Mix, SynthRun};
use crate::{ExperimentError, Progress};
use multios_emulate::{CpuSet, Delegation, Mechanism};
use multios_units::{format_secs, Duration};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Getppid trials of the mechanism's round trip measured right before each run of a configuration.
const RT_TRIALS_PER_RUN: usize = 200;

/// Calls per phase of a mix taken from a profile.
const PROFILE_MIX_CALLS: u64 = 260;

/// What to sweep and how (the CLI's flags, resolved: policies are [`Delegation`]s, CPUs are sets).
#[derive(Debug, Clone)]
pub struct Config {
    pub mechanism: Mechanism,
    /// Compute speedups γ ≥ 1 (the computation is shrunk by γ).
    pub gammas: Vec<f64>,
    /// Each policy's label and its delegation.
    pub policies: Vec<(String, Delegation)>,
    /// One-way forwarding costs.
    pub fcs: Vec<Duration>,
    /// Monte Carlo samples per compute phase at γ = 1.
    pub iters: u64,
    pub phases: u64,
    /// Runs per configuration (and of the native baseline); the median run is used.
    pub repeat: usize,
    /// Use the round trip measured at f_c = 0 for every f_c (the paper's approach).
    pub rt_at_zero: bool,
    /// Measure the native baseline once before the sweep, not next to each configuration.
    pub baseline_once: bool,
    pub mix: Mix,
    /// Run the benchmark under SCHED_FIFO.
    pub realtime_app: bool,
    pub compute: CpuSet,
    pub control: CpuSet,
    /// Directory for the figures (PNG, SVG, CSV).
    pub out: PathBuf,
}

impl Config {
    /// Checks the ranges the sweep needs; the error names the flag at fault.
    pub fn check(&self) -> Result<(), ExperimentError> {
        if let Some(g) = self.gammas.iter().find(|g| !(**g >= 1.0 && g.is_finite())) {
            return Err(ExperimentError::Config(format!(
                "--gamma {g}: emulation can only shrink the computation, so γ must be ≥ 1"
            )));
        }
        if self.iters == 0 || self.phases == 0 || self.repeat == 0 {
            return Err(ExperimentError::Config(
                "--iters, --phases and --repeat must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// The mix to replay: `profile`'s replayable calls, or the built-in one.
pub fn mix(profile: Option<&Path>) -> Result<Mix, ExperimentError> {
    let Some(p) = profile else {
        return Ok(Mix::default_mix());
    };
    let prof = multios_profile::load(p)?;
    Mix::from_profile(&prof, PROFILE_MIX_CALLS).ok_or_else(|| {
        ExperimentError::Config(format!(
            "{}: none of its calls can be replayed ({})",
            p.display(),
            synth::REPLAYABLE.join(", ")
        ))
    })
}

/// What the sweep measured (`multios validate --json` prints it as is).
#[derive(Debug, serde::Serialize)]
pub struct Outcome {
    pub mechanism: String,
    pub mix: Mix,
    pub native_total_s: f64,
    pub round_trip: RoundTrip,
    pub round_trip_per_fc: Vec<RoundTrip>,
    pub points: Vec<Point>,
    pub accuracy_min: f64,
    pub accuracy_median: f64,
    pub accuracy_mean: f64,
    pub figures: Vec<PathBuf>,
}

/// The runs of one sweep share these.
struct Sweep<'a> {
    cfg: &'a Config,
    dir: PathBuf,
    wait: multios_emulate::Wait,
}

impl Sweep<'_> {
    fn synth(
        &self,
        m: Option<Mechanism>,
        iters: u64,
        d: &Delegation,
        fc: f64,
    ) -> Result<SynthRun, ExperimentError> {
        let c = self.cfg;
        synth::run_synth(
            m, iters, c.phases, &c.mix, d, fc, &c.compute, &c.control, self.wait, &self.dir,
        )
    }

    fn round_trip(&self, fc: f64, trials: usize) -> Result<RoundTrip, ExperimentError> {
        let c = self.cfg;
        mechanism_round_trip_at(c.mechanism, fc, trials, &c.compute, &c.control, self.wait)
    }

    /// The median run of `runs`.
    fn median(runs: Vec<SynthRun>) -> Result<SynthRun, ExperimentError> {
        synth::median_of(runs).ok_or_else(|| ExperimentError::Config("--repeat must be at least 1".into()))
    }
}

/// The calls of `mix` that `d` delegates.
pub fn delegated_calls(mix: &Mix, d: &Delegation) -> BTreeSet<String> {
    mix.0
        .iter()
        .filter(|(n, _)| multios_syscalls::by_name(n).is_some_and(|nr| d.is_delegated(nr)))
        .map(|(n, _)| n.clone())
        .collect()
}

/// Runs the sweep; `progress` gets one step per configuration.
pub fn run(cfg: &Config, progress: &mut dyn Progress) -> Result<Outcome, ExperimentError> {
    cfg.check()?;
    let dir = std::env::temp_dir().join(format!("multios-validate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(ExperimentError::io(format!("creating {}", dir.display())))?;
    let sweep = Sweep {
        cfg,
        dir,
        wait: multios_emulate::Wait {
            app_realtime: cfg.realtime_app,
            ..Default::default()
        },
    };
    let r = measure(&sweep, progress);
    std::fs::remove_dir_all(&sweep.dir).ok();
    r
}

fn measure(s: &Sweep, progress: &mut dyn Progress) -> Result<Outcome, ExperimentError> {
    let cfg = s.cfg;
    let none = Delegation::none();
    // Each measurement: the run with the median total time out of --repeat (at least 3 natively).
    let native = Sweep::median(
        (0..cfg.repeat.max(3))
            .map(|_| s.synth(None, cfg.iters, &none, 0.0))
            .collect::<Result<Vec<_>, _>>()?,
    )?;
    let rt = s.round_trip(0.0, 1000)?;
    progress.note(&format!(
        "native: {} ({} compute, p = {:.3}); {} round trip at f_c = 0: min {} / median {} / mean {}",
        format_secs(native.total),
        format_secs(native.compute),
        native.workload().p(),
        cfg.mechanism.name(),
        format_secs(rt.min),
        format_secs(rt.median),
        format_secs(rt.mean)
    ));
    // The mechanism's own cost grows with f_c on a VM (the waiting side sleeps longer), so unless
    // --rt-at-zero it is measured at each f_c, with the Table 3 getppid, in this run (printed here)
    // and again right before each configuration's runs (used by the model).
    let mut rts = Vec::new();
    for fc in &cfg.fcs {
        let r = if cfg.rt_at_zero {
            rt
        } else {
            let r = s.round_trip(fc.secs(), 300)?;
            progress.note(&format!(
                "{} round trip at f_c = {fc}: median {}",
                cfg.mechanism.name(),
                format_secs(r.median)
            ));
            r
        };
        rts.push(r);
    }
    let total = cfg.gammas.len() * cfg.policies.len() * cfg.fcs.len();
    progress.start(total as u64, "validate: γ × policy × f_c");
    let mut points = Vec::new();
    for &gamma in &cfg.gammas {
        for (label, d) in &cfg.policies {
            let delegated = delegated_calls(&cfg.mix, d);
            for (fc, &rt_fc) in cfg.fcs.iter().zip(&rts) {
                let iters = ((cfg.iters as f64) / gamma).round() as u64;
                // The round trip next to this configuration's runs: on this VM it moves by up to
                // 30 % within minutes, so the value measured at the start of the sweep goes stale.
                // It is measured right before each of the runs and the measurements are combined,
                // so the model's input covers the same minutes as the runs it predicts.
                // Likewise the native baseline (the measured speedup's numerator and the model's
                // C and g(s)): the machine's speed drifts by a few per cent over a sweep, so each
                // emulated run is preceded by a native one unless --baseline-once.
                let mut bracket = Vec::new();
                let mut runs = Vec::new();
                let mut natives = Vec::new();
                for _ in 0..cfg.repeat {
                    if !cfg.baseline_once {
                        natives.push(s.synth(None, cfg.iters, &none, 0.0)?);
                    }
                    if !cfg.rt_at_zero {
                        bracket.push(s.round_trip(fc.secs(), RT_TRIALS_PER_RUN)?);
                    }
                    runs.push(s.synth(Some(cfg.mechanism), iters, d, fc.secs())?);
                }
                let rt = RoundTrip::combine(&bracket).unwrap_or(rt_fc);
                let emu = Sweep::median(runs)?;
                let base = if natives.is_empty() {
                    native.clone()
                } else {
                    Sweep::median(natives)?
                };
                let p = score(&base, &emu, gamma, label, &delegated, fc.secs(), rt)?;
                progress.advance(&format!(
                    "γ {gamma} {label} f_c {fc}: measured {:.3}, refined {:.3}",
                    p.measured, p.refined_median
                ));
                points.push(p);
            }
        }
    }
    progress.finish();
    let acc = |f: fn(&Point) -> f64| -> Result<f64, ExperimentError> {
        let pairs: Vec<(f64, f64)> = points.iter().map(|p| (f(p), p.measured)).collect();
        Ok(multios_model::accuracy(&pairs)?)
    };
    let (a_min, a_med, a_mean) = (
        acc(|p| p.refined_min)?,
        acc(|p| p.refined_median)?,
        acc(|p| p.refined_mean)?,
    );
    let figures = plots::write(cfg, &points)?;
    Ok(Outcome {
        mechanism: cfg.mechanism.name().into(),
        mix: cfg.mix.clone(),
        native_total_s: native.total,
        round_trip: rt,
        round_trip_per_fc: rts,
        points,
        accuracy_min: a_min,
        accuracy_median: a_med,
        accuracy_mean: a_mean,
        figures,
    })
}

/// The table `multios validate` prints: one row per configuration.
pub fn table_rows(points: &[Point]) -> Vec<[String; 7]> {
    points
        .iter()
        .map(|p| {
            [
                format!("{}", p.gamma),
                p.policy.clone(),
                format_secs(p.fc),
                format!("{:.4}", p.measured),
                format!("{:.4}", p.naive),
                format!("{:.4}", p.refined_median),
                format!("{:.2}", p.accuracy),
            ]
        })
        .collect()
}

/// The table's header.
pub const TABLE_HEADER: [&str; 7] = ["γ", "policy", "f_c", "measured", "naive", "refined", "accuracy %"];

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        Config {
            mechanism: Mechanism::Proxy,
            gammas: vec![1.0, 2.0],
            policies: vec![("none".into(), Delegation::none())],
            fcs: Vec::new(),
            iters: 1,
            phases: 1,
            repeat: 1,
            rt_at_zero: false,
            baseline_once: false,
            mix: Mix::default_mix(),
            realtime_app: false,
            compute: CpuSet::allowed(),
            control: CpuSet::allowed(),
            out: PathBuf::from("x"),
        }
    }

    #[test]
    fn gammas_below_one_and_zero_counts_are_refused_naming_the_flag() {
        assert!(config().check().is_ok());
        for g in [0.5, f64::NAN, f64::INFINITY] {
            let c = Config {
                gammas: vec![g],
                ..config()
            };
            let e = c.check().expect_err("refused").to_string();
            assert!(e.starts_with("--gamma"), "{e}");
        }
        let e = Config {
            repeat: 0,
            ..config()
        }
        .check()
        .expect_err("refused")
        .to_string();
        assert!(e.contains("--repeat"), "{e}");
    }

    #[test]
    fn nothing_delegated_under_none() {
        assert!(delegated_calls(&Mix::default_mix(), &Delegation::none()).is_empty());
    }

    #[test]
    fn table_rows_format_each_point() {
        let rt = RoundTrip {
            min: 0.0,
            median: 0.0,
            mean: 0.0,
        };
        let p = Point {
            gamma: 2.0,
            policy: "mos".into(),
            fc: 10e-6,
            measured: 1.5,
            naive: 1.8,
            refined_min: 1.6,
            refined_median: 1.55,
            refined_mean: 1.54,
            accuracy: 96.66666,
            native_s: 1.0,
            native_compute_s: 0.9,
            emulated_s: 0.66,
            emulated_compute_s: 0.45,
            round_trip: rt,
        };
        let rows = table_rows(&[p]);
        assert_eq!(rows[0][0], "2");
        assert_eq!(rows[0][1], "mos");
        assert_eq!(rows[0][3], "1.5000");
        assert_eq!(rows[0][6], "96.67");
    }
}
