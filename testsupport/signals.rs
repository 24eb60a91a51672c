//! Tests that interrupt a run with SIGINT need SIGINT at its default action in the processes they
//! start. A shell that starts a job in the background without job control (`cmd &` in a script, as a
//! CI harness may) sets SIGINT and SIGQUIT to ignored, and an ignored disposition is inherited across
//! fork and exec: the test would then check its environment, not multios (multios rightly keeps an
//! inherited SIG_IGN for the program it runs).
//!
//! Test files include it with `#[path = "…/testsupport/signals.rs"] mod signals;`.
#![allow(dead_code)]

/// Puts SIGINT and SIGQUIT back to their default action in this test process if they were
/// ignored when it started (handlers that a test installed are left alone).
pub fn interrupts_not_ignored() {
    for sig in [libc::SIGINT, libc::SIGQUIT] {
        // SAFETY: a zeroed sigaction is a valid out-parameter; a null new action only queries.
        let mut old: libc::sigaction = unsafe { std::mem::zeroed() };
        // SAFETY: `old` is valid and writable; the null pointer asks for no change.
        unsafe { libc::sigaction(sig, std::ptr::null(), &mut old) };
        if old.sa_sigaction == libc::SIG_IGN {
            // SAFETY: resets one disposition to SIG_DFL; no memory of ours is involved.
            unsafe { libc::signal(sig, libc::SIG_DFL) };
        }
    }
}
