//! The host toolkit shared by every part of multios: one owner for each small thing the
//! profiler, the emulator, the LWK and the noise tools all need.
//!
//! - [`cpus`]: CPU lists (`0`, `0-3,6`) parsed and formatted, the online and allowed CPUs, pinning;
//! - [`tsc`]: the time-stamp counter, its calibration against `CLOCK_MONOTONIC`, busy-waits;
//! - [`time`]: monotonic and CPU-time clocks in nanoseconds;
//! - [`process`]: children that die with multios, programs prepared for exec, close-on-exec pipes;
//! - [`output`]: output files checked before a run;
//! - [`embed`]: files embedded in a binary, written out once per content;
//! - [`hvexit`]: exits to the hypervisor from a polling thread, so that its CPU's IPIs arrive;
//! - [`irqs`]: which CPUs take the device interrupts (the LWK leaves them to Linux);
//! - [`usage`]: a child's resource usage (wait4);
//! - [`stdio`]: standard streams closed when multios started, kept closed for the programs it runs;
//! - [`cgroup`]: cpuset cgroups — the noise tools' cpuset for an in-situ load, and the LWK's
//!   reserved partition of CPUs (`multios lwk run --reserve`), with the sweep of those a killed
//!   multios left behind.
//!
//! Every `unsafe` block and raw system call of the crate lives in [`sys`].

pub mod cgroup;
pub mod cpus;
pub mod embed;
pub mod hvexit;
pub mod input;
pub mod irqs;
pub mod output;
pub mod process;
pub mod stdio;
mod sys;
pub mod time;
pub mod tsc;
pub mod usage;

pub use cpus::{CpuListError, CpuSet};
