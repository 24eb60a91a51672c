//! OS noise for multios (issue #6).
//!
//! - Measurements on Linux CPUs: FWQ (fixed work quantum), FTQ (fixed time quantum) and the
//!   selfish-detour loop ([`measure`]), pinned to chosen CPUs, with an optional in-situ load
//!   started and stopped by the tool under an isolation option ([`load`], [`cgroup`]).
//! - Their statistics ([`stats`]), spectrum ([`spectrum`]) and LogGOPSim-style traces ([`trace`]).
//! - A bulk-synchronous scale simulation that replays a trace on up to millions of ranks ([`scale`]).
//!
//! See docs/NOISE.md for the methods and definitions.

pub mod cgroup;
pub mod clock;
pub mod cpus;
pub mod cpustat;
pub mod figures;
pub mod files;
pub mod goal;
pub mod guest;
pub mod load;
pub mod measure;
pub mod replay;
pub mod report;
pub mod scale;
pub mod session;
pub mod spectrum;
pub mod stats;
pub mod sys;
pub mod trace;
pub mod work;

pub use trace::{NoiseTrace, TraceError};
