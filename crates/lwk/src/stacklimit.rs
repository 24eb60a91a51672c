//! What RLIMIT_STACK means in the LWK (issue #16): the size of the main thread's stack
//! reservation, and execve's budget for the argument and environment strings.
//!
//! Linux grows the main thread's stack on demand up to the soft RLIMIT_STACK. The LWK reserves
//! the stack at the top of the application window when it loads a program (at start and at every
//! execve), so the reservation is sized from the soft limit then: the limit rounded up to a page,
//! at least [`MIN_RESERVATION`], and at most a quarter of the window or 8 MiB, whichever is more
//! ([`reservation`]). "unlimited" (or any larger limit) gets that cap: a quarter of the window
//! (1 GiB with the default `--mem-mib 4096`) keeps three quarters for the images, the break and
//! mmap, while deep recursion that needs more than 8 MiB runs as it does natively. The
//! reservation is address space of the window only: host pages are made when touched.
//! The guest's setrlimit(RLIMIT_STACK) is delegated (the VMM's limit is the guest's), so an
//! execve after it sees the new limit, as on Linux.

use crate::mm::PAGE;

/// The smallest reservation: Linux's 32 pages of argument strings that every stack may hold
/// (ARG_MAX), plus as much again to run in.
pub const MIN_RESERVATION: u64 = 256 << 10;
/// Linux's `_STK_LIM` (8 MiB), the default limit: the cap never falls below it.
pub const STK_LIM: u64 = 8 << 20;
/// Linux's ARG_MAX (32 pages): the smallest budget for execve's strings.
pub const ARG_MAX: u64 = 32 * PAGE;

/// The stack reservation for soft limit `soft` (RLIM_INFINITY is `u64::MAX`) in a window of
/// `window` bytes.
pub fn reservation(soft: u64, window: u64) -> u64 {
    let cap = (window / 4 / PAGE * PAGE).max(STK_LIM);
    let pages = soft.saturating_add(PAGE - 1) / PAGE * PAGE;
    pages.max(MIN_RESERVATION).min(cap)
}

/// Linux's budget for execve's strings and their pointers (fs/exec.c, `bprm_stack_limits`): a
/// quarter of the soft limit, at most three quarters of `_STK_LIM` (6 MiB), at least ARG_MAX.
pub fn arg_budget(soft: u64) -> u64 {
    (soft / 4).clamp(ARG_MAX, STK_LIM / 4 * 3)
}

/// The soft RLIMIT_STACK of this process (the guest's: its setrlimit is delegated).
pub fn soft_limit() -> u64 {
    crate::sys::rlimit(libc::RLIMIT_STACK).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reservation_follows_the_limit_within_the_window() {
        let w = 4096 << 20;
        assert_eq!(reservation(8 << 20, w), 8 << 20);
        assert_eq!(reservation(64 << 20, w), 64 << 20);
        assert_eq!(reservation(1 << 20, w), 1 << 20);
        assert_eq!(reservation((1 << 20) + 1, w), (1 << 20) + PAGE);
        assert_eq!(reservation(4096, w), MIN_RESERVATION);
        assert_eq!(reservation(u64::MAX, w), 1 << 30);
        // A small window keeps the default 8 MiB, as before.
        assert_eq!(reservation(u64::MAX, 16 << 20), 8 << 20);
    }

    #[test]
    fn the_budget_is_linuxs() {
        assert_eq!(arg_budget(8 << 20), 2 << 20);
        assert_eq!(arg_budget(u64::MAX), 6 << 20);
        assert_eq!(arg_budget(64 << 10), ARG_MAX);
    }
}
