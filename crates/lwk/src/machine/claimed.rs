//! How a vCPU thread waits for a call the proxy is still serving after the vCPU rang its doorbell
//! (issue #13). The stub spins its budget (≈ 40 µs) and rings; when the proxy has claimed the call
//! meanwhile — a call longer than the budget: an mmap populating its range at map time
//! (`atmap.rs`), a large read — the vCPU's thread waits for its reply. It spins first, for
//! `MULTIOS_LWK_DOORBELL_SPIN_US` (default [`DEFAULT_SPIN`]): the vCPU's CPU has nothing else to
//! run, and a sleep here costs a timer's slack and a wake-up (tens of µs each on this VM), so a
//! call of a few hundred µs was paid ≈ 1.5× before. Then it sleeps, from 20 µs up to 1 ms: the
//! proxy may be in a long blocking call. `costs.doorbell_waits` counts the waits and
//! `doorbell_wait_sleeps` their sleeps.
//!
//! For a call that may wait for another party (`syscall::may_wait_for_another`: reads, writes,
//! waits, polls, opens…), after [`YIELD_AFTER`] the spin yields its CPU at every step
//! (`sched_yield`, which returns at once when nothing else is runnable there). A pipeline's
//! stages run in VMs of their own whose vCPUs share the LWK's CPUs: a reader's call that blocks
//! on its pipe was spun on for 1 ms, on the very CPU the writer needed to fill the pipe —
//! `sh -c "sort | uniq -c | sort -rn"` took 1.24–1.62 s in the LWK against 0.79–0.82 s with a
//! 30 µs spin (2026-11-26 21:22 UTC, loaded VM, 3 pairs). The other calls (mmap, mprotect,
//! exit_group…) keep the CPU for the whole spin: yielding there handed it to whatever else was
//! runnable and cost `true` ≈ 1.3 ms of its ≈ 15 ms (2026-11-27, docs/BENCHMARKS.md).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// How long a waiting vCPU thread spins before it sleeps, by default.
pub const DEFAULT_SPIN: Duration = Duration::from_millis(1);
/// How long the spin keeps its CPU before it yields it at every step.
pub const YIELD_AFTER: Duration = Duration::from_micros(20);

/// The wait of vCPU threads for calls the proxy claimed, and its counts.
#[derive(Debug)]
pub(super) struct Claimed {
    spin: Duration,
    yield_after: Duration,
    waits: AtomicU64,
    sleeps: AtomicU64,
}

impl Claimed {
    /// Spinning for `MULTIOS_LWK_DOORBELL_SPIN_US` µs when set and understood, else
    /// [`DEFAULT_SPIN`].
    pub fn from_env() -> Self {
        let spin = std::env::var("MULTIOS_LWK_DOORBELL_SPIN_US")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(DEFAULT_SPIN, Duration::from_micros);
        let yield_after = std::env::var("MULTIOS_LWK_DOORBELL_YIELD_US")
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map_or(YIELD_AFTER, Duration::from_micros);
        Claimed {
            spin,
            yield_after,
            waits: AtomicU64::new(0),
            sleeps: AtomicU64::new(0),
        }
    }

    /// A wait begins: counted, and its start returned.
    pub fn begin(&self) -> Instant {
        self.waits.fetch_add(1, Relaxed);
        Instant::now()
    }

    /// One step of a wait begun at `since` that has slept `sleeps` times so far, for a call that
    /// may (`yields`) or may not wait for another party.
    pub fn step(&self, since: Instant, yields: bool, sleeps: &mut u32) {
        let yield_after = if yields { self.yield_after } else { self.spin };
        match pause(since.elapsed(), self.spin, yield_after, *sleeps) {
            Step::Spin => std::hint::spin_loop(),
            Step::Yield => std::thread::yield_now(),
            Step::Sleep(d) => {
                *sleeps += 1;
                self.sleeps.fetch_add(1, Relaxed);
                std::thread::sleep(d);
            }
        }
    }

    /// (waits, sleeps) so far.
    pub fn counts(&self) -> (u64, u64) {
        (self.waits.load(Relaxed), self.sleeps.load(Relaxed))
    }
}

/// One step of a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Spin,
    /// Spin, giving the CPU to whatever else is runnable there first.
    Yield,
    Sleep(Duration),
}

/// The next step of a wait `elapsed` into it with `sleeps` sleeps so far: spin within `spin`
/// (yielding after `yield_after`), else sleep, 20 µs more each time up to 1 ms.
fn pause(elapsed: Duration, spin: Duration, yield_after: Duration, sleeps: u32) -> Step {
    if elapsed >= spin {
        Step::Sleep(Duration::from_micros(
            20 * u64::from(sleeps.saturating_add(1).min(50)),
        ))
    } else if elapsed >= yield_after {
        Step::Yield
    } else {
        Step::Spin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_13_a_claimed_call_is_waited_for_spinning_then_sleeping_longer() {
        let ms = Duration::from_millis(1);
        assert_eq!(pause(Duration::from_micros(5), ms, YIELD_AFTER, 0), Step::Spin);
        assert_eq!(
            pause(ms, ms, YIELD_AFTER, 0),
            Step::Sleep(Duration::from_micros(20))
        );
        assert_eq!(
            pause(ms * 3, ms, YIELD_AFTER, 2),
            Step::Sleep(Duration::from_micros(60))
        );
        assert_eq!(
            pause(ms * 90, ms, YIELD_AFTER, 400),
            Step::Sleep(Duration::from_millis(1))
        );
        // No spin: sleeps at once.
        assert_eq!(
            pause(Duration::ZERO, Duration::ZERO, YIELD_AFTER, 0),
            Step::Sleep(Duration::from_micros(20))
        );
    }

    /// Issue #15: past its first 20 µs the spin yields the CPU at every step (a pipeline's
    /// writer may need it), and still does not sleep before the spin is over.
    #[test]
    fn issue_15_the_claimed_call_spin_yields_its_cpu_after_20_us() {
        let ms = Duration::from_millis(1);
        assert_eq!(
            pause(YIELD_AFTER - Duration::from_nanos(1), ms, YIELD_AFTER, 0),
            Step::Spin
        );
        assert_eq!(pause(YIELD_AFTER, ms, YIELD_AFTER, 0), Step::Yield);
        // a call that waits for no other party: `step` puts the yield point at the spin's end
        assert_eq!(pause(Duration::from_micros(300), ms, ms, 0), Step::Spin);
        assert_eq!(pause(Duration::from_micros(300), ms, YIELD_AFTER, 0), Step::Yield);
        assert_eq!(
            pause(ms - Duration::from_nanos(1), ms, YIELD_AFTER, 0),
            Step::Yield
        );
    }
}
