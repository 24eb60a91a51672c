//! The microbenchmarks of the paper's Table 1 and, measured in the same run, the references
//! that make them comparable on this machine. Library functions returning serializable results;
//! nothing here prints.

mod aam;
mod activation;
mod baselines;
pub mod beside;
mod stats;
mod validate;

pub use stats::Stats;

use crate::machine::MachineError;
use multios_host::{tsc, CpuSet};
use std::io;

/// Why a benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Machine(#[from] MachineError),
    #[error("benchmark '{bench}': {source}")]
    Io {
        bench: &'static str,
        #[source]
        source: io::Error,
    },
    #[error("benchmark '{bench}': {what}")]
    Failed { bench: &'static str, what: String },
}

/// Where and how long to measure.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchConfig {
    /// Samples per benchmark (the paper: 10 000).
    pub iterations: usize,
    /// Untimed iterations before the samples.
    pub warmup: usize,
    /// The client's (caller's) CPU and the server's (remote) CPU; equal if only one CPU is usable.
    pub client_cpu: usize,
    pub server_cpu: usize,
}

impl BenchConfig {
    /// The paper's 10 000 samples on the first and the last CPU this process may use.
    pub fn default_here() -> BenchConfig {
        let cpus = CpuSet::allowed().to_vec();
        BenchConfig {
            iterations: 10_000,
            warmup: 1_000,
            client_cpu: cpus.first().copied().unwrap_or(0),
            server_cpu: cpus.last().copied().unwrap_or(0),
        }
    }
}

/// One measured operation.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchResult {
    pub name: String,
    pub what: String,
    pub ns: Stats,
}

/// Everything one run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchReport {
    pub config: BenchConfig,
    pub tsc_hz: f64,
    /// Bytes of a queued no-op task (allocation incl. reference counts; no stack).
    pub noop_task_bytes: usize,
    pub results: Vec<BenchResult>,
}

impl BenchReport {
    pub fn get(&self, name: &str) -> Option<&BenchResult> {
        self.results.iter().find(|r| r.name == name)
    }
}

pub(crate) fn result(name: &str, what: &str, samples_ticks: &[u64], per: f64) -> BenchResult {
    let tpn = tsc::calibration().ticks_per_ns();
    let ns: Vec<f64> = samples_ticks.iter().map(|&t| t as f64 / tpn / per).collect();
    BenchResult {
        name: name.into(),
        what: what.into(),
        ns: Stats::of(&ns),
    }
}

/// Runs every benchmark: the AAM operations, then the references.
pub fn run_all(cfg: &BenchConfig) -> Result<BenchReport, BenchError> {
    let mut results = Vec::new();
    results.extend(aam::local_task(cfg)?);
    results.extend(aam::machine_call(cfg, true)?);
    results.extend(aam::machine_call_woken(cfg)?);
    results.extend(aam::machine_call(cfg, false)?);
    results.extend(aam::core_move(cfg)?);
    results.extend(activation::coreless_call(cfg)?);
    let busy = std::time::Duration::from_millis(2);
    results.push(activation::behind_busy_worker(cfg, true, busy)?);
    results.push(activation::behind_busy_worker(cfg, false, busy)?);
    results.extend(baselines::all(cfg)?);
    Ok(BenchReport {
        config: cfg.clone(),
        tsc_hz: tsc::calibration().hz,
        noop_task_bytes: crate::machine::spawned_task_bytes(async { tsc::now() }),
        results,
    })
}

pub use aam::{core_move, local_task, machine_call, machine_call_woken};
pub use activation::{behind_busy_worker, coreless_call};
pub use baselines::{all as baselines, cache_line};
pub use validate::{project, shaped_call, validate, NullPread, NullPreadClient, ValidateConfig, Validation};
