//! One measurement with its optional in-situ load, and the side-by-side comparison suite
//! (idle, load elsewhere, load on the same CPU, under each isolation option).

use crate::clock::Clock;
use crate::cpus;
use crate::load::{Isolation, Load, LoadError, LoadSpec};
use crate::measure::{self, MeasureError, Series, Settings};
use serde::Serialize;
use std::time::Duration;

/// An error of a measurement with load.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Load(#[from] LoadError),
    #[error(transparent)]
    Measure(#[from] MeasureError),
    #[error(transparent)]
    Cpu(#[from] cpus::CpuError),
}

/// One configuration: a name and the load (if any).
#[derive(Debug, Clone, Serialize)]
pub struct Case {
    pub label: String,
    pub load: Option<LoadSpec>,
}

/// What one configuration gave, on each measured CPU.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub case: Case,
    pub series: Vec<Series>,
    /// The load's cpuset as the kernel reports it, for `cpuset` isolation.
    pub cpuset_cpus: Option<String>,
}

/// Runs the benchmark on `cpus` while the case's load runs; the load is stopped (and its cgroup
/// removed) whatever happens.
pub fn run_case(
    case: &Case,
    cpus: &[usize],
    s: &Settings,
    clock: &Clock,
    settle: Duration,
) -> Result<Outcome, SessionError> {
    with_load(case, settle, |cpuset_cpus| {
        let series = measure::run_on(cpus, s, clock)?;
        Ok(Outcome {
            case: case.clone(),
            series,
            cpuset_cpus,
        })
    })
}

/// Runs `f` while the case's load runs (`f` gets the load's effective cpuset, if any); the load is
/// stopped and its cgroup removed whatever `f` returns.
pub fn with_load<T, E: From<LoadError>>(
    case: &Case,
    settle: Duration,
    f: impl FnOnce(Option<String>) -> Result<T, E>,
) -> Result<T, E> {
    let load = case
        .load
        .as_ref()
        .map(|spec| Load::start(spec, settle))
        .transpose()?;
    let cpuset_cpus = load.as_ref().and_then(Load::cpuset_cpus);
    let result = f(cpuset_cpus);
    if let Some(l) = load {
        l.stop()?;
    }
    result
}

/// The comparison of issue #6 for the measured CPU `cpu`: idle; the load placed by the scheduler;
/// the load on the other CPUs and on the same CPU, each by affinity and by a cpuset cgroup.
pub fn compare_cases(load_cmd: &str, cpu: usize, online: &[usize]) -> Result<Vec<Case>, cpus::CpuError> {
    let others = cpus::others(&[cpu], online)?;
    let on = |label: String, isolation: Isolation, cpus: Vec<usize>| Case {
        label,
        load: Some(LoadSpec {
            command: load_cmd.to_string(),
            isolation,
            cpus,
        }),
    };
    let other = cpus::format_list(&others);
    Ok(vec![
        Case {
            label: "idle".to_string(),
            load: None,
        },
        on("load, isolate none".to_string(), Isolation::None, Vec::new()),
        on(
            format!("load on CPU {other}, affinity"),
            Isolation::Affinity,
            others.clone(),
        ),
        on(format!("load on CPU {other}, cpuset"), Isolation::Cpuset, others),
        on(
            format!("load on CPU {cpu} (same), affinity"),
            Isolation::Affinity,
            vec![cpu],
        ),
        on(
            format!("load on CPU {cpu} (same), cpuset"),
            Isolation::Cpuset,
            vec![cpu],
        ),
    ])
}

/// The benchmark on `ranks` ranks under mpirun (the program `exe` from [`crate::guest::build_for`]): one outcome
/// per rank and, for FWQ, one with all ranks merged, labelled after `case`.
pub fn mpirun_outcomes(
    exe: &std::path::Path,
    out_file: &std::path::Path,
    ranks: usize,
    case: &Case,
    s: &Settings,
    clock: &Clock,
    cpuset_cpus: Option<String>,
) -> Result<Vec<Outcome>, crate::guest::GuestError> {
    let args = crate::guest::args_for(s, clock, out_file);
    let series = crate::guest::run_mpirun_kind(s.kind, exe, ranks, &args, clock, s.quantum_ns)?;
    let outcome = |label: String, series: Series| Outcome {
        case: Case {
            label,
            load: case.load.clone(),
        },
        series: vec![series],
        cpuset_cpus: cpuset_cpus.clone(),
    };
    let mut v: Vec<Outcome> = series
        .iter()
        .enumerate()
        .map(|(r, s)| outcome(format!("{} · rank {r}", case.label), s.clone()))
        .collect();
    // merged FTQ slots or selfish gaps of several ranks would mix grids (spectrum) or elapsed times
    // (noise %): only FWQ gets the merged row
    if let Some(m) = crate::report::merge(&series).filter(|_| s.kind == crate::measure::Kind::Fwq) {
        v.push(outcome(format!("{} · all {ranks} ranks", case.label), m));
    }
    Ok(v)
}
