//! The lock of the guest's fd range: one leaf lock that VMM temporaries and number-wise closes
//! share (`fd.rs`, `file.rs` and the callers in `syscall/`, `signal/`, `vm.rs`, `vcpu.rs`).

use std::sync::{Mutex, MutexGuard};

/// Held while a descriptor of the VMM sits in the guest's range (below the floor), and while
/// anything closes guest descriptors by number rather than by what it opened.
///
/// The guest's descriptors are the VMM's own host fds below the floor. The VMM's helper threads
/// (the signal pump, a vCPU thread creating a vCPU, the trace writer…) often get a new descriptor
/// at the lowest free number and move it above the floor; for those few microseconds it is in the
/// guest's range. Without this lock an execve's close-on-exec sweep, or the guest's close_range,
/// could close it, the guest could reopen that number, and the helper's `close` of its temporary
/// would then close the guest's file (issue #15: `as` lost its fd of libbfd when a `make -j2`
/// child exec'd while its new signal pump was opening its signalfd).
///
/// A leaf lock: no other lock is taken while it is held.
static LOW_FDS: Mutex<()> = Mutex::new(());

/// Takes [`LOW_FDS`]; a panic while it was held leaves nothing inconsistent, so poisoning is
/// ignored.
pub fn low_fds() -> MutexGuard<'static, ()> {
    LOW_FDS.lock().unwrap_or_else(|p| p.into_inner())
}
