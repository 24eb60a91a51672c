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

/// The suite's load when `--with` is not given.
pub const DEFAULT_COMPARE_LOAD: &str = "stress-ng --cpu 1 --quiet";

/// What runs next to the benchmark, from the flags: the suite's command (`compare`: `with` or
/// [`DEFAULT_COMPARE_LOAD`]), or the load `with` under `isolation` on `load_cpus` (a CPU list;
/// default: none without isolation, else every online CPU that is not measured).
pub fn load_from(
    compare: bool,
    with: Option<&str>,
    load_cpus: Option<&str>,
    isolation: multios_noise::load::Isolation,
    cpus: &[usize],
    online: &[usize],
) -> Result<(Option<String>, Option<LoadSpec>), ExperimentError> {
    use multios_noise::load::Isolation;
    if compare {
        return Ok((Some(with.unwrap_or(DEFAULT_COMPARE_LOAD).to_string()), None));
    }
    let Some(cmd) = with else {
        return Ok((None, None));
    };
    let lc = match (load_cpus, isolation) {
        (Some(l), _) => multios_noise::cpus::parse_list(l)
            .map_err(|e| ExperimentError::Config(format!("--load-cpus: {e}")))?,
        (None, Isolation::None) => Vec::new(),
        (None, _) => multios_noise::cpus::others(cpus, online).map_err(run_err)?,
    };
    Ok((
        None,
        Some(LoadSpec {
            command: cmd.to_string(),
            isolation,
            cpus: lc,
        }),
    ))
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

/// Runs the rounds; one progress step per case and round (and per guest run in the LWK).
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
    // One step per case and round, and, in the LWK, one per guest run within it.
    let per_case = 1 + lwk.as_ref().map_or(0, LwkGuest::steps);
    progress.start(
        (cfg.repeat * cases.len()) as u64 * per_case,
        "noise: cases × rounds",
    );
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
                    let two = session::with_load(case, cfg.settle, |cpuset| {
                        g.run(case, &settings, &clock, cpuset, &mut *progress)
                    });
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

    #[test]
    fn issue_17_the_suite_runs_its_default_load_unless_told() {
        use multios_noise::load::Isolation;
        let (c, l) = load_from(true, None, None, Isolation::Affinity, &[1], &[0, 1]).expect("suite");
        assert_eq!(c.as_deref(), Some(DEFAULT_COMPARE_LOAD));
        assert!(l.is_none());
        let (c, _) = load_from(true, Some("yes"), None, Isolation::None, &[1], &[0, 1]).expect("suite");
        assert_eq!(c.as_deref(), Some("yes"));
    }

    #[test]
    fn issue_17_a_load_goes_to_the_unmeasured_cpus_when_isolated() {
        use multios_noise::load::Isolation;
        let (c, l) =
            load_from(false, Some("yes"), None, Isolation::Affinity, &[1], &[0, 1, 2]).expect("load");
        assert!(c.is_none());
        let l = l.expect("a load");
        assert_eq!((l.command.as_str(), l.cpus), ("yes", vec![0, 2]));
        let (_, l) = load_from(false, Some("yes"), None, Isolation::None, &[1], &[0, 1]).expect("load");
        assert!(l.expect("a load").cpus.is_empty());
        let (_, l) =
            load_from(false, Some("yes"), Some("2-3"), Isolation::None, &[1], &[0, 1]).expect("load");
        assert_eq!(l.expect("a load").cpus, vec![2, 3]);
        assert!(load_from(false, None, None, Isolation::None, &[1], &[0, 1])
            .expect("idle")
            .1
            .is_none());
    }

    #[test]
    fn issue_17_load_errors_name_the_flag() {
        use multios_noise::load::Isolation;
        let e =
            load_from(false, Some("yes"), Some("x"), Isolation::None, &[1], &[0, 1]).expect_err("bad list");
        assert!(e.to_string().starts_with("--load-cpus: CPU list "), "{e}");
        let e =
            load_from(false, Some("yes"), None, Isolation::Cpuset, &[0, 1], &[0, 1]).expect_err("none left");
        assert!(
            e.to_string().contains("pass --load-cpus or --isolate none"),
            "{e}"
        );
    }
}
