//! Forwarded-event traces (`multios lwk run --trace FILE`, issue #13; Multiverse §II: "the runtime
//! developer can examine traces of these forwarded events, identify hot spots").
//!
//! While a run is traced, every delegated system call and every CPU exception the LWK turns into a
//! signal is written as one line: when it started (ns since the run began), the vCPU, the call,
//! how long the VMM took, the result, the guest address it returned to and the caller found on the
//! guest's stack (`caller.rs`). The run's `/proc/self/maps` is written at the end, so that
//! [`hotspots`] can name the functions offline, with the run's own libraries.
//!
//! The format (`FORMAT`, version [`VERSION`]) is JSON Lines: a header object, event objects, and a
//! footer object holding the maps; see docs/LWK.md ("Forwarded-event traces").

mod caller;
pub mod format;
pub(crate) mod hooks;
pub mod hotspots;
mod symbolize;
pub(crate) mod writer;

pub use caller::caller_of;
pub use format::{Event, Header, Kind, Trace, TraceError, FORMAT, VERSION};
pub use hotspots::{hotspots, overrides_for, Hotspot, Hotspots};
pub use writer::{child_path, Tracer};
