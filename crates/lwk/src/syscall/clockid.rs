//! Clock ids that name a thread (the kernel's per-thread CPU clocks), shared by the dispatch in
//! `mod.rs` (which thread must make a call) and `cpus.rs` (which host thread a clock names).

/// The thread a per-thread CPU clock id names (the kernel's MAKE_THREAD_CPUCLOCK: `~tid << 3`,
/// the per-thread bit 4, a clock kind 0–2; 0 is the calling thread); None for any other clock.
pub(super) fn thread_clock_tid(id: i32) -> Option<i32> {
    (id < 0 && id & 3 != 3 && id & 4 != 0).then_some(!(id >> 3))
}

#[cfg(test)]
mod tests {
    use super::thread_clock_tid;

    #[test]
    fn issue_16_thread_clock_ids_name_their_thread() {
        let make = |tid: i32, which: i32| (!tid << 3) | 4 | which;
        assert_eq!(thread_clock_tid(make(4242, 2)), Some(4242));
        assert_eq!(thread_clock_tid(make(0, 2)), Some(0));
        assert_eq!(thread_clock_tid(make(7, 0)), Some(7));
        // A process clock (no per-thread bit), an fd clock, and the plain clocks are not.
        assert_eq!(thread_clock_tid(!4242 << 3 | 2), None);
        assert_eq!(thread_clock_tid(!3 << 3 | 3), None);
        assert_eq!(thread_clock_tid(libc::CLOCK_THREAD_CPUTIME_ID), None);
        assert_eq!(thread_clock_tid(libc::CLOCK_MONOTONIC), None);
    }
}
