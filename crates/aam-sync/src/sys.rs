//! The futex system calls the parker sleeps and wakes with (every `unsafe` of the crate's
//! system calls is here).

use std::sync::atomic::AtomicU32;

/// Sleeps while `*word == expected` (returns at once if it differs, on a wake-up, or spuriously).
pub fn futex_wait(word: &AtomicU32, expected: u32) {
    // SAFETY: FUTEX_WAIT only reads the aligned u32 behind `word`, which outlives the call; a null
    // timeout means no timeout. Errors (EAGAIN when the value differs, EINTR) are benign: every
    // caller re-checks the word in a loop.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            std::ptr::null::<libc::timespec>(),
        );
    }
}

/// Wakes up to `n` threads sleeping on `word`; returns how many woke.
pub fn futex_wake(word: &AtomicU32, n: i32) -> i64 {
    // SAFETY: FUTEX_WAKE does not touch memory; the address only names the wait queue.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            n,
        )
    }
}
