//! `multios noise fwq|ftq|selfish|suite`: the noise benchmarks on chosen CPUs, idle or next to a
//! load (with its isolation), repeated in rounds, natively, in the LWK (next to the same program on
//! Linux) or under mpirun; reports per run and medians over rounds, optionally written to files.
//! The measurement primitives are crates/noise's; this is the experiment that combines them.

use crate::noise_guests::{GuestDir, LwkGuest};
use crate::{ExperimentError, Progress};
use multios_noise::clock::Clock;
use multios_noise::load::LoadSpec;
use multios_noise::measure::{self, Kind, Series, Settings};
use multios_noise::report::{self, Aggregate, Report};
use multios_noise::session::{self, Case, Outcome};
use std::path::PathBuf;
use std::time::Duration;

/// What to measure (the CLI's flags, parsed: CPU lists are lists).
#[derive(Debug, Clone)]
pub struct Config {
    pub kind: Kind,
    /// The measured CPUs (online).
    pub cpus: Vec<usize>,
    pub online: Vec<usize>,
    pub quantum_ns: f64,
    pub duration_ns: f64,
    pub threshold: f64,
    /// The suite: idle and `compare`'s command under each isolation, on one CPU.
    pub compare: Option<String>,
    /// Without `compare`: the load to run next to the benchmark, if any.
    pub load: Option<LoadSpec>,
    /// Time for the load to start before measuring.
    pub settle: Duration,
    /// Rounds over the cases.
    pub repeat: usize,
    /// Run the benchmark natively and in the LWK on each CPU.
    pub lwk: bool,
    /// Run the benchmark on this many ranks under mpirun.
    pub mpirun: Option<usize>,
    /// Write the series, reports and figures here.
    pub out: Option<PathBuf>,
}

/// What the rounds measured (`--json` prints it; fields in the JSON's order).
#[derive(Debug, Clone, serde::Serialize)]
pub struct Measured {
    pub cases: Vec<Case>,
    pub clock: Clock,
    pub files: Vec<String>,
    pub medians: Vec<Aggregate>,
    pub reports: Vec<Report>,
    pub settings: Settings,
    /// Each case's load cpusets as the kernel reported them.
    #[serde(skip)]
    pub outcomes: Vec<Outcome>,
}

fn run_err(e: impl std::fmt::Display) -> ExperimentError {
    ExperimentError::Run(e.to_string())
}

/// The label of a load's case.
pub fn case_label(load: &Option<LoadSpec>) -> String {
    use multios_noise::load::Isolation;
    match load {
        None => "idle".to_string(),
        Some(l) => format!(
            "load, isolate {}",
            match l.isolation {
                Isolation::None => "none".to_string(),
                Isolation::Affinity =>
                    format!("affinity (CPU {})", multios_noise::cpus::format_list(&l.cpus)),
                Isolation::Cpuset => format!("cpuset (CPU {})", multios_noise::cpus::format_list(&l.cpus)),
            }
        ),
    }
}

/// Runs the rounds; one progress step per case and round.
pub fn run(cfg: &Config, progress: &mut dyn Progress) -> Result<Measured, ExperimentError> {
    let clock = Clock::calibrate(50);
    let mut settings = Settings {
        kind: cfg.kind,
        quantum_ns: cfg.quantum_ns,
        duration_ns: cfg.duration_ns,
        threshold: cfg.threshold,
        iters_per_tick: None,
    };
    settings.validate(&clock).map_err(run_err)?;
    let cases = match &cfg.compare {
        Some(cmd) => {
            let cpu = match cfg.cpus.as_slice() {
                [c] => *c,
                _ => {
                    return Err(ExperimentError::Config(
                        "--compare/suite measures one CPU: pass a single --cpus".into(),
                    ))
                }
            };
            // one work quantum for every configuration, calibrated before any load runs
            settings.iters_per_tick = Some(measure::calibrate_on(cpu).map_err(run_err)?);
            session::compare_cases(cmd, cpu, &cfg.online).map_err(run_err)?
        }
        None => vec![Case {
            label: case_label(&cfg.load),
            load: cfg.load.clone(),
        }],
    };
    let lwk = if cfg.lwk {
        Some(LwkGuest::prepare(cfg.kind, &cfg.cpus, &cfg.online)?)
    } else {
        None
    };
    let mpi = match cfg.mpirun {
        Some(n) => Some((n, GuestDir::build(cfg.kind)?)),
        None => None,
    };
    fn in_case(label: &str) -> impl FnOnce(ExperimentError) -> ExperimentError + '_ {
        move |e| ExperimentError::Run(format!("{label}: {e}"))
    }
    let mut outcomes: Vec<Outcome> = Vec::new();
    progress.start((cfg.repeat * cases.len()) as u64, "noise: cases × rounds");
    for round in 0..cfg.repeat {
        for case in &cases {
            progress.advance(&format!(
                "measuring: {} (run {}/{})",
                case.label,
                round + 1,
                cfg.repeat
            ));
            if let Some((n, g)) = &mpi {
                let all = session::with_load(case, cfg.settle, |cpuset| {
                    g.mpirun(*n, case, &settings, &clock, cpuset)
                });
                outcomes.extend(all.map_err(in_case(&case.label))?);
                continue;
            }
            match &lwk {
                Some(g) => {
                    let two =
                        session::with_load(case, cfg.settle, |cpuset| g.run(case, &settings, &clock, cpuset));
                    outcomes.extend(two.map_err(in_case(&case.label))?);
                }
                None => {
                    let o = session::run_case(case, &cfg.cpus, &settings, &clock, cfg.settle)
                        .map_err(|e| ExperimentError::Run(format!("{}: {e}", case.label)))?;
                    outcomes.push(o);
                }
            }
        }
    }
    progress.finish();
    let runs: Vec<(String, Series)> = outcomes
        .iter()
        .flat_map(|o| o.series.iter().map(|s| (o.case.label.clone(), s.clone())))
        .collect();
    let reports: Vec<Report> = runs.iter().map(|(l, s)| report::report(l, s)).collect();
    let medians = report::aggregate(&reports);
    let files = match &cfg.out {
        Some(dir) => multios_noise::files::write(dir, cfg.kind, &runs, &reports, &clock)
            .map_err(run_err)?
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        None => Vec::new(),
    };
    Ok(Measured {
        cases,
        clock,
        files,
        medians,
        reports,
        settings,
        outcomes,
    })
}

/// The definition line under the table: what noise % means for `kind`.
pub fn definition(kind: Kind) -> &'static str {
    match kind {
        Kind::Fwq => "noise % = Σ(t − t_min)/Σt; others % = CPU time of other tasks on the measured CPU",
        Kind::Ftq => "noise % = Σ(c_max − c)/(n·c_max), c = work units per slot",
        Kind::Selfish => {
            "samples are gaps > threshold × the shortest iteration; noise % = Σ detours / elapsed"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use multios_noise::load::Isolation;

    #[test]
    fn case_labels_name_the_isolation_and_its_cpus() {
        assert_eq!(case_label(&None), "idle");
        let l = |isolation, cpus: Vec<usize>| {
            Some(LoadSpec {
                command: "x".into(),
                isolation,
                cpus,
            })
        };
        assert_eq!(case_label(&l(Isolation::None, vec![])), "load, isolate none");
        assert_eq!(
            case_label(&l(Isolation::Affinity, vec![1, 2, 3])),
            "load, isolate affinity (CPU 1-3)"
        );
        assert!(case_label(&l(Isolation::Cpuset, vec![2])).starts_with("load, isolate cpuset (CPU 2"));
    }

    #[test]
    fn every_kind_defines_its_noise() {
        for k in [Kind::Fwq, Kind::Ftq, Kind::Selfish] {
            assert!(definition(k).contains("noise %"));
        }
    }
}
