//! How long the proxy keeps polling after the last call before it parks (issue #13), adapted to
//! the guest's rhythm as KVM adapts its halt polling.
//!
//! A parked proxy costs the guest's next call a doorbell exit (≈ 33 µs here) and a wake-up, and
//! the calls right after it ring too until the woken proxy runs; a polling proxy costs only CPU
//! time on its own CPU. Racket's scheduler makes a clock read and an `epoll_wait` every 0.4–2 ms
//! of compute: with a fixed 1 ms threshold `n-body` (a pair every ≈ 1.8 ms) parked and rang
//! ≈ 330 times a run (docs/BENCHMARKS.md). So the threshold grows when a park ends in a doorbell
//! soon after the last call — to twice that gap, at most [`CAP`] — and falls back to the base
//! when a park ends without one (the guest went quiet for the whole park). Guests whose calls
//! are further apart than the cap keep parking: one doorbell per 10 ms or more is under 1 % of
//! the vCPU's time.

use std::time::Duration;

/// The most the threshold grows to: a guest quiet for longer parks the proxy.
pub const CAP: Duration = Duration::from_millis(10);

/// The proxy's idle threshold: `base` (`--proxy-idle-us`) grown up to `max(base, CAP)`; a base of
/// 0 (park at once) does not adapt.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdleSpin {
    base: Duration,
    max: Duration,
    now: Duration,
}

impl IdleSpin {
    /// The proxy's threshold from `--proxy-idle-us`. `MULTIOS_LWK_PROXY_IDLE=fixed` keeps it at the
    /// base (the behaviour before, for measurements side by side).
    pub fn new(base: Duration) -> Self {
        let fixed = std::env::var_os("MULTIOS_LWK_PROXY_IDLE").is_some_and(|v| v == "fixed");
        Self::with_cap(base, if fixed { base } else { CAP })
    }

    /// The threshold starting at `base` and growing up to `max(base, cap)` (a base of 0 stays 0).
    pub fn with_cap(base: Duration, cap: Duration) -> Self {
        let max = if base.is_zero() { base } else { base.max(cap) };
        IdleSpin { base, max, now: base }
    }

    /// How long to poll after the last call before parking.
    pub fn current(&self) -> Duration {
        self.now
    }

    /// A park ended. `rung`: a doorbell ended it (the guest called); `gap`: the time from the
    /// last call served before the park to its end. A doorbell within the cap grows the threshold
    /// to twice the gap (polling that long would have caught the call); a park that nothing ended
    /// sets it back to the base.
    pub fn park_ended(&mut self, rung: bool, gap: Duration) {
        if !rung {
            self.now = self.base;
        } else if gap < self.max {
            self.now = self.now.max(gap.saturating_mul(2)).min(self.max);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_call_every_1_8_ms_stops_the_parking_after_one_doorbell() {
        let mut s = IdleSpin::with_cap(MS, CAP);
        assert_eq!(s.current(), MS);
        // Parked 1 ms after the last call, rung 0.8 ms later: 1.8 ms apart.
        s.park_ended(true, MS * 18 / 10);
        assert_eq!(s.current(), MS * 36 / 10);
        assert!(
            s.current() > MS * 18 / 10,
            "the next gap of 1.8 ms is polled through"
        );
    }

    #[test]
    fn the_threshold_is_capped_and_never_shrinks_on_a_doorbell() {
        let mut s = IdleSpin::with_cap(MS, CAP);
        s.park_ended(true, MS * 4);
        assert_eq!(s.current(), MS * 8);
        s.park_ended(true, MS * 7);
        assert_eq!(s.current(), CAP);
        // A shorter gap after a longer one keeps the longer threshold.
        s.park_ended(true, MS * 2);
        assert_eq!(s.current(), CAP);
        // A doorbell beyond the cap (the guest computes 50 ms between calls) changes nothing.
        let mut t = IdleSpin::with_cap(MS, CAP);
        t.park_ended(true, MS * 50);
        assert_eq!(t.current(), MS);
    }

    #[test]
    fn a_quiet_park_resets_to_the_base_and_zero_never_adapts() {
        let mut s = IdleSpin::with_cap(MS, CAP);
        s.park_ended(true, MS * 3);
        assert_eq!(s.current(), MS * 6);
        s.park_ended(false, MS * 26);
        assert_eq!(s.current(), MS);
        let mut z = IdleSpin::with_cap(Duration::ZERO, CAP);
        z.park_ended(true, Duration::from_micros(100));
        assert_eq!(z.current(), Duration::ZERO);
        // A base above the cap is its own maximum.
        let mut big = IdleSpin::with_cap(MS * 40, CAP);
        let mut fixed = IdleSpin::with_cap(MS, MS);
        fixed.park_ended(true, MS * 18 / 10);
        assert_eq!(fixed.current(), MS);
        big.park_ended(true, MS * 30);
        assert_eq!(big.current(), MS * 40);
    }
}
