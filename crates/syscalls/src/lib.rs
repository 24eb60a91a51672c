//! The x86_64 Linux system call table and the named sets of real multi-OS systems.
//!
//! The data lives in `data/` at the top of the repository (plain text, one entry a line, with a
//! provenance header) and is compiled in with `include_str!`, so the binary needs no data files.

mod per_call;
mod sets;
mod table;

pub use per_call::{parse_per_call, per_call_duration, split_per_call, PerCallError};
pub use sets::{parse_list, NamedSet, SetError};
pub use table::{by_name, by_number, closest, names, UnknownSyscall, MAX_NR};
