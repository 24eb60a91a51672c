//! The time-stamp counter as a clock: reads, the calibration of its rate, and busy-waits.
//!
//! The TSC is invariant on every machine multios targets and Linux itself derives
//! `CLOCK_MONOTONIC` from it here, so its rate is measured once against that clock: the median
//! of three windows, each bracketed tightly (of five back-to-back pairs of reads, the pair with
//! the smallest gap). The window is slept through, not spun: only its two ends are measured, and
//! a pair of reads is ≈ 50 ns apart, 1e-5 of a 5 ms window.

use crate::sys;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Reads the time-stamp counter.
#[inline(always)]
pub fn now() -> u64 {
    sys::rdtsc()
}

/// The TSC rate in ticks per second.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Calibration {
    pub hz: f64,
}

impl Calibration {
    /// Ticks for `secs` seconds (rounded to the nearest tick; never negative).
    pub fn ticks(self, secs: f64) -> u64 {
        (secs * self.hz).round().max(0.0) as u64
    }
    /// Seconds in `ticks` ticks.
    pub fn secs(self, ticks: u64) -> f64 {
        ticks as f64 / self.hz
    }
    /// Ticks per nanosecond.
    pub fn ticks_per_ns(self) -> f64 {
        self.hz / 1e9
    }
}

/// The process-wide calibration, measured on first use (≈ 15 ms of sleeping).
pub fn calibration() -> Calibration {
    static C: OnceLock<Calibration> = OnceLock::new();
    *C.get_or_init(|| calibrate(Duration::from_millis(5)))
}

/// Measures the TSC rate over three windows of `window` (see the module comment).
pub fn calibrate(window: Duration) -> Calibration {
    let mut rates = [0.0f64; 3];
    for r in &mut rates {
        let (t0, c0) = paired();
        std::thread::sleep(window.max(Duration::from_micros(100)));
        let (t1, c1) = paired();
        *r = c1.wrapping_sub(c0) as f64 / (t1 - t0).as_secs_f64();
    }
    rates.sort_by(f64::total_cmp);
    Calibration { hz: rates[1] }
}

/// An `Instant` and a TSC value taken as close together as possible.
fn paired() -> (Instant, u64) {
    let mut best = (Instant::now(), now(), u64::MAX);
    for _ in 0..5 {
        let a = now();
        let t = Instant::now();
        let b = now();
        if b.wrapping_sub(a) < best.2 {
            best = (t, a / 2 + b / 2 + (a % 2 + b % 2) / 2, b.wrapping_sub(a));
        }
    }
    (best.0, best.1)
}

/// The smallest non-zero difference between two back-to-back reads, in ticks (the timer's
/// resolution as a program sees it), over `reads` reads; None if every difference was zero.
pub fn min_step(reads: usize) -> Option<u64> {
    let mut min = u64::MAX;
    let mut prev = now();
    for _ in 0..reads {
        let t = now();
        let d = t.wrapping_sub(prev);
        if d > 0 && d < min {
            min = d;
        }
        prev = t;
    }
    (min != u64::MAX).then_some(min)
}

/// Busy-waits until `ticks` ticks have passed since `start`; returns the TSC value at the end.
#[inline]
pub fn spin_until(start: u64, ticks: u64) -> u64 {
    loop {
        let t = now();
        if t.wrapping_sub(start) >= ticks {
            return t;
        }
        std::hint::spin_loop();
    }
}

/// Busy-waits `ticks` ticks from now; returns the ticks actually spent.
#[inline]
pub fn spin(ticks: u64) -> u64 {
    let s = now();
    spin_until(s, ticks).wrapping_sub(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calibration_is_plausible() {
        let c = calibration();
        assert!(c.hz > 1e8 && c.hz < 1e10, "TSC rate {} Hz is implausible", c.hz);
    }

    #[test]
    fn spin_never_undershoots() {
        let c = calibration();
        for secs in [0.0, 500e-9, 5e-6] {
            let want = c.ticks(secs);
            assert!(spin(want) >= want);
        }
    }

    #[test]
    fn tick_conversions_round_trip() {
        let c = Calibration { hz: 2.0e9 };
        assert_eq!(c.ticks(1e-6), 2000);
        assert_eq!(c.ticks(-1.0), 0);
        assert!((c.secs(2000) - 1e-6).abs() < 1e-15);
        assert!((c.ticks_per_ns() - 2.0).abs() < 1e-12);
    }

    #[test]
    fn the_counter_moves() {
        assert!(min_step(1000).is_some());
    }
}
