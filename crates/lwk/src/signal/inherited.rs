//! The signal dispositions the VMM process was started with, read before anything in it changed
//! them: Rust's runtime sets SIGPIPE to SIG_IGN before `main`, and the VMM then installs its own
//! handlers (SIGUSR2 for its kicks, the fault signals for its fault reports). A program started
//! with a signal ignored keeps it ignored across exec — `nohup`, a non-interactive shell's
//! background job, a parent that ignores SIGPIPE — and the guest is such a program. Before, the
//! guest inherited the ignores of the "followable" signals only: a program started with SIGPIPE
//! ignored was killed by SIGPIPE in the LWK where natively its write returned EPIPE (found
//! 2026-11-28; `issue_16_inherited_ignores`).
//!
//! The snapshot is taken by a function in `.init_array`, which the C runtime calls before `main`
//! (and so before Rust's runtime initialisation) in every binary the LWK is linked into.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Bit sig-1: SIG_IGN at start.
static IGNORED: AtomicU64 = AtomicU64::new(0);
static TAKEN: AtomicBool = AtomicBool::new(false);

extern "C" fn take_snapshot() {
    let mut bits = 0u64;
    for sig in 1..=64 {
        if crate::sys::signal_handler_raw(sig) == Some(libc::SIG_IGN as u64) {
            bits |= 1 << (sig - 1);
        }
    }
    IGNORED.store(bits, Ordering::Release);
    TAKEN.store(true, Ordering::Release);
}

/// Run by the C runtime before `main` (ELF `.init_array`).
#[used]
#[link_section = ".init_array"]
static TAKE_SNAPSHOT: extern "C" fn() = take_snapshot;

/// True when `sig` was ignored when this process started; None when the snapshot was not taken
/// (a binary where the constructor did not run).
pub fn ignored_at_start(sig: i32) -> Option<bool> {
    // Naming the constructor's slot keeps its object file in every link that uses this function.
    std::hint::black_box(&TAKE_SNAPSHOT);
    if !TAKEN.load(Ordering::Acquire) || !(1..=64).contains(&sig) {
        return None;
    }
    Some(IGNORED.load(Ordering::Acquire) & (1 << (sig - 1)) != 0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_snapshot_is_taken_before_main() {
        // Rust's runtime had already set SIGPIPE to SIG_IGN when tests run: the snapshot is older.
        assert!(super::ignored_at_start(libc::SIGPIPE).is_some());
        assert_eq!(super::ignored_at_start(0), None);
        assert_eq!(super::ignored_at_start(65), None);
    }
}
