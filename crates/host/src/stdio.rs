//! Standard streams that were closed when multios started.
//!
//! Rust's runtime opens `/dev/null` on each of fds 0–2 that is closed before `main` runs (so that
//! the process's own later `open` cannot become its stdout). A program multios runs must still
//! find such a stream closed, as it would natively (`prog >&-`: a write fails with EBADF, the next
//! `open` returns 1). So the closed streams are recorded here before the runtime's `main` (an
//! `.init_array` entry, run by the C library before `main`), and:
//!
//! - [`hide_placeholders`] (called first thing in `main`) makes each of the runtime's `/dev/null`
//!   placeholders close-on-exec: every program multios starts (profile, emulate, map, validate)
//!   sees that stream closed, while multios itself keeps the number occupied;
//! - the LWK, whose guest uses the VMM's own fds 0–2, closes the placeholders before the guest
//!   runs ([`closed_at_start`]).

use std::sync::atomic::{AtomicU8, Ordering};

/// Bit `fd` set: fd 0, 1 or 2 was closed before `main`; bit 7: the record was taken.
static CLOSED: AtomicU8 = AtomicU8::new(0);
const RECORDED: u8 = 0x80;

extern "C" fn record() {
    let mut mask = RECORDED;
    for fd in 0..3 {
        if !crate::sys::fd_is_open(fd) {
            mask |= 1 << fd;
        }
    }
    CLOSED.store(mask, Ordering::Relaxed);
}

// The C library calls every function of `.init_array` before `main` (and so before Rust's
// runtime replaces a closed standard stream by /dev/null). `#[used]` keeps the entry although
// nothing refers to it.
#[used]
#[link_section = ".init_array"]
static RECORD_BEFORE_MAIN: extern "C" fn() = record;

/// Whether standard stream `fd` (0, 1 or 2) was closed when the process started. `None` when no
/// record was taken (a binary whose C library did not run `.init_array`).
pub fn closed_at_start(fd: i32) -> Option<bool> {
    let mask = CLOSED.load(Ordering::Relaxed);
    if mask & RECORDED == 0 || !(0..3).contains(&fd) {
        return None;
    }
    Some(mask & (1 << fd) != 0)
}

/// The standard streams that were closed at start and still hold the runtime's `/dev/null`.
pub fn placeholders() -> Vec<i32> {
    (0..3)
        .filter(|&fd| closed_at_start(fd) == Some(true) && crate::sys::is_dev_null(fd))
        .collect()
}

/// Makes the runtime's placeholders close-on-exec, so that the programs multios starts see
/// those streams closed as they would natively. Returns the streams concerned.
pub fn hide_placeholders() -> Vec<i32> {
    let fds = placeholders();
    for &fd in &fds {
        // Best effort: without it the child sees /dev/null, as before.
        let _ = crate::sys::set_cloexec(fd);
    }
    fds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_is_taken_before_main() {
        // The test harness starts with its streams open (cargo gives it pipes or a terminal).
        assert!(closed_at_start(0).is_some(), "the .init_array entry did not run");
        assert_eq!(closed_at_start(3), None);
    }
}
