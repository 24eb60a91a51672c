//! The bodies of `multios bench …`: benchmarks that measure the things compared side by side in
//! one run and judge them against their targets (this machine is a noisy shared VM: medians and
//! ratios, not single times).

pub mod aam;
pub mod aam_model;
pub mod aam_timeline;
pub mod emulate;
pub mod hpcc;
pub mod hrt;
pub mod lwk;
pub mod map;
pub mod multiverse;
pub mod noise;
pub mod profiler;
