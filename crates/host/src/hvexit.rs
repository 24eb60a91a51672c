//! Exits to the hypervisor from a thread that polls, so that interrupts meant for its CPU arrive
//! (issues #13, #15).
//!
//! On this kind of VM an interrupt for a virtual CPU that is busy running code is delivered only
//! at that CPU's next exit to the hypervisor beneath: a thread that spins on one CPU gets the
//! TLB-flush IPIs of its process 1–3 ms late, and the CPU that sent them waits as long. Measured
//! natively (`crates/lwk/scripts/ipi.c spin E`; docs/BENCHMARKS.md, "Exits to the hypervisor"):
//! with a second thread of the process polling on the other CPU, an mprotect that takes write
//! access away cost 1.45–1.78 ms a pair instead of 5 µs, and a write to a page that had read the
//! zero page 0.59–1.06 ms instead of 2.5 µs. `cpuid` always exits to the hypervisor (≈ 7 µs
//! here); a poller that runs it every `E` µs receives the IPIs within ≈ `E` µs (E = 5: 29–44 µs a
//! pair, 14–16 µs a page; E = 20: 56–57 and 20–28 µs; E = 100: 207–215 and 106–108 µs). On bare metal there is no hypervisor: the interrupt arrives at once and `cpuid` is an
//! ordinary instruction of ≈ 100–200 cycles, so the pacing costs little there.
//!
//! [`HvExit`] is the pacing a polling loop uses: it exits only once the poller has been idle for
//! the period (a burst of calls is served by pure polling) and then once per period.

use std::time::{Duration, Instant};

/// The default period between exits of an idle poller.
pub const DEFAULT_EVERY: Duration = Duration::from_micros(20);

/// Leaves the CPU to the hypervisor for an instant (`cpuid` exits unconditionally under VMX and
/// SVM); interrupts pending for this virtual CPU are delivered on the way back.
pub fn exit_to_hypervisor() {
    // cpuid leaf 0 only reads identification registers; it has no side effect but the exit.
    let _ = std::arch::x86_64::__cpuid(0);
}

/// The period from `MULTIOS_HV_EXIT_US`: a number of µs, `off` (or 0) for never, unset or
/// unreadable for [`DEFAULT_EVERY`].
pub fn period_from_env() -> Option<Duration> {
    parse_period(std::env::var("MULTIOS_HV_EXIT_US").ok().as_deref())
}

fn parse_period(v: Option<&str>) -> Option<Duration> {
    match v.map(str::trim) {
        None => Some(DEFAULT_EVERY),
        Some("off") | Some("0") => None,
        Some(s) => Some(
            s.parse::<u64>()
                .map(Duration::from_micros)
                .unwrap_or(DEFAULT_EVERY),
        ),
    }
}

/// When an idle poller exits to the hypervisor.
#[derive(Debug, Clone)]
pub struct HvExit {
    every: Option<Duration>,
    last: Instant,
    exits: u64,
}

impl HvExit {
    /// Exits once per `every` of idleness; `None` never exits.
    pub fn new(every: Option<Duration>) -> Self {
        HvExit {
            every,
            last: Instant::now(),
            exits: 0,
        }
    }

    /// The period from the environment ([`period_from_env`]).
    pub fn from_env() -> Self {
        Self::new(period_from_env())
    }

    /// Whether an exit is due: the poller has been idle for `idle` (since its last served call)
    /// and the last exit is at least one period old.
    pub fn due(&self, idle: Duration, now: Instant) -> bool {
        self.every
            .is_some_and(|e| idle >= e && now.saturating_duration_since(self.last) >= e)
    }

    /// Exits if [`due`](Self::due); returns whether it did.
    pub fn tick(&mut self, idle: Duration) -> bool {
        let now = Instant::now();
        if !self.due(idle, now) {
            return false;
        }
        exit_to_hypervisor();
        self.last = Instant::now();
        self.exits += 1;
        true
    }

    /// Exits made so far.
    pub fn exits(&self) -> u64 {
        self.exits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const US: Duration = Duration::from_micros(1);

    #[test]
    fn the_period_reads_microseconds_off_and_falls_back_to_the_default() {
        assert_eq!(parse_period(None), Some(DEFAULT_EVERY));
        assert_eq!(parse_period(Some("50")), Some(50 * US));
        assert_eq!(parse_period(Some("off")), None);
        assert_eq!(parse_period(Some("0")), None);
        assert_eq!(parse_period(Some("soon")), Some(DEFAULT_EVERY));
    }

    #[test]
    fn a_poller_busy_with_calls_never_exits() {
        let h = HvExit::new(Some(20 * US));
        let later = h.last + Duration::from_millis(5);
        assert!(!h.due(19 * US, later));
        assert!(h.due(20 * US, later));
    }

    #[test]
    fn an_idle_poller_exits_once_a_period() {
        let h = HvExit::new(Some(20 * US));
        assert!(!h.due(Duration::from_millis(1), h.last + 10 * US));
        assert!(h.due(Duration::from_millis(1), h.last + 20 * US));
        assert!(!HvExit::new(None).due(Duration::from_secs(1), h.last + Duration::from_secs(1)));
    }

    #[test]
    fn an_exit_returns() {
        let mut h = HvExit::new(Some(Duration::ZERO));
        assert!(h.tick(Duration::ZERO));
        assert_eq!(h.exits(), 1);
    }
}
