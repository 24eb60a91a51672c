//! The few raw host calls the VMM needs, each wrapped once with its safety argument, one file per
//! concern; every function is re-exported here, so callers write `crate::sys::name`.

mod cpu;
mod exe;
mod fd;
mod file;
pub mod kvm;
mod lowfds;
mod mem;
mod mount;
mod process;
mod procmount;
mod region;
mod signal;
mod thread;

pub use cpu::*;
pub use exe::*;
pub use fd::*;
pub use file::*;
pub use lowfds::low_fds;
pub use mem::*;
pub use mount::*;
pub use process::*;
pub use procmount::*;
pub use region::*;
pub use signal::*;
pub use thread::*;
