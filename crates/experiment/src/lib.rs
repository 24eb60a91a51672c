//! multios experiments — the single place a reader finds each one. Every experiment takes a plain
//! config struct (the CLI's flags already resolved: policies are `Delegation`s, CPUs are `CpuSet`s,
//! durations are numbers) and returns a serializable result; the CLI only parses, prints and picks
//! the exit code. Long experiments report to a [`Progress`].
//!
//! - [`synth`]: the synthetic benchmark of paper §4.1 (its C source lives here, csrc/synth.c);
//! - [`validate`]: `multios validate`, the benchmark under emulation against the models;
//! - [`predict`]: an emulated run's measured speedup against the naïve and refined predictions;
//! - [`compare`]: `emulate --compare`, paired ABBA runs made alike (stdin replayed, outputs
//!   captured and compared, fresh working copies) against those predictions;
//! - [`setup`]: the shared flags resolved (policy text → delegation, f_c → cost model, CPU split);
//! - [`table3`]: `multios fc`, the paper's Table 3 microbenchmarks per mechanism;
//! - [`conformance`]: `multios lwk conformance`, CPython's tests and stress-ng natively and in the LWK;
//! - [`lwk_validate`]: `multios lwk validate`, the benchmark natively and in the LWK against the models;
//! - [`noise_measure`]: `multios noise fwq/ftq/selfish/suite`, rounds of cases, reports and medians;
//! - [`noise_guests`]: the noise benchmarks run under mpirun and in the LWK;
//! - [`bench`]: the bodies of `multios bench …` (and of `multios aam …`, in `bench::aam`) with their targets and verdicts;
//! - [`figures`]: the paper's figures from workloads (`multios plot`, the demo);
//! - [`demo`]: the demo pipeline's steps (profile → project → emulate → plots);
//! - [`suite`]: validation suites of real programs (`validate --suite`, the bundled suite);
//! - [`stats`]: the statistics every experiment uses (re-exported from `multios-stats`).

pub mod bench;
pub mod compare;
pub mod conformance;
pub mod crosslink;
pub mod demo;
mod error;
pub mod figures;
pub mod lwk_validate;
pub mod noise_guests;
pub mod noise_measure;
pub mod predict;
mod progress;
pub mod setup;
pub mod suite;
pub mod synth;
pub mod table3;
pub mod validate;

pub use error::{error_chain, ExperimentError};
pub use progress::{Progress, Silent};

/// One median, one paired comparison, one confidence interval (the `multios-stats` crate).
pub use multios_stats as stats;
