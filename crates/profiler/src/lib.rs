//! multios profiler (issue #3): per-system-call n(s), g(s), C, p and per-thread arrival rates of a
//! command's whole process tree, written as a [`multios_profile::Profile`].
//!
//! Two backends:
//! - [`Backend::Ebpf`]: BTF tracepoints on sys_enter/sys_exit with in-kernel aggregation; the probe
//!   bias is calibrated on a null system call and corrected (see [`calibrate`]); `accuracy: high`.
//! - [`Backend::Ptrace`]: seccomp-assisted ptrace for unprivileged users; stop cost calibrated and
//!   corrected, `accuracy: low`.
//!
//! And [`inproc`]: `--backend inproc`, the emulator's preload library timing each call in-process.

mod anon;
mod assemble;
pub mod bench;
pub mod calibrate;
pub mod ebpf;
mod error;
mod images;
pub mod inproc;
mod output_path;
mod ptrace;
mod raw;
mod run;
mod spawn;
mod sys;

pub use assemble::{assemble, RunFacts};
pub use ebpf::{attach_floor, Attached, Probe};
pub use error::ProfilerError;
pub use images::{elf_sizes, ImageError};
pub use output_path::{expand_output, rank_from_env};
pub use raw::{Raw, RawCall, RawThread};
pub use run::{profile, profile_traced, Backend, Options};
pub use spawn::resolve;
