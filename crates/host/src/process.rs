//! Child processes tied to the multios process that started them.

/// In a child between fork and exec: ask the kernel to send `sig` when the thread that forked it
/// ends (a SIGKILLed multios included), and fail with ESRCH if that already happened — the
/// parent is no longer `parent` (its pid, read before the fork) — so no orphan starts.
/// Async-signal-safe: two system calls, no allocation. The death signal survives execve.
pub fn die_with_parent(parent: libc::pid_t, sig: i32) -> std::io::Result<()> {
    crate::sys::die_with_parent(parent, sig)
}
