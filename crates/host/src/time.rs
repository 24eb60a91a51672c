//! Clocks in nanoseconds: monotonic wall time and the CPU time of this thread.

use crate::sys;

/// CLOCK_MONOTONIC in nanoseconds.
pub fn monotonic_ns() -> u64 {
    sys::clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time consumed by the calling thread, in nanoseconds (CLOCK_THREAD_CPUTIME_ID).
pub fn thread_cpu_ns() -> u64 {
    sys::clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

#[cfg(test)]
mod tests {
    #[test]
    fn monotonic_time_never_goes_back() {
        let a = super::monotonic_ns();
        let b = super::monotonic_ns();
        assert!(b >= a);
    }
}
