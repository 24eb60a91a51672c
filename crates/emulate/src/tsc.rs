//! A calibrated time-stamp-counter clock and the busy-wait ("spin") that delivers a forwarding cost.
//!
//! The TSC is read with `rdtsc`; its rate is calibrated once against `CLOCK_MONOTONIC` (which the
//! kernel itself derives from the TSC here, so the two agree to a few ppm after a 20 ms window).
//! A spin waits until the counter passes a deadline computed up front, so per-call overhead is one
//! multiply and a few `rdtsc` reads (≈ 10–20 ns), independent of the requested duration.

use std::sync::OnceLock;
use std::time::Instant;

/// Reads the time-stamp counter.
#[inline(always)]
pub fn now() -> u64 {
    // SAFETY: `rdtsc` has no memory effects and is available on every x86_64 CPU.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// The TSC rate in ticks per second, measured on first use.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Calibration {
    pub hz: f64,
}

impl Calibration {
    /// Ticks for `secs` seconds (rounded to the nearest tick).
    pub fn ticks(self, secs: f64) -> u64 {
        (secs * self.hz).round().max(0.0) as u64
    }
    /// Seconds in `ticks` ticks.
    pub fn secs(self, ticks: u64) -> f64 {
        ticks as f64 / self.hz
    }
}

/// The process-wide calibration (measured once, ≈ 15 ms of sleeping).
pub fn calibration() -> Calibration {
    static C: OnceLock<Calibration> = OnceLock::new();
    *C.get_or_init(|| calibrate(std::time::Duration::from_millis(5)))
}

/// Measures the TSC rate over `window` against the monotonic clock: median of three windows, each
/// bracketed tightly (the pair of clock reads with the smallest gap wins). The TSC is invariant, so
/// the window is slept through, not spun: only its two ends are measured (a pair of reads is
/// ≈ 50 ns apart, 1e-5 of a 5 ms window).
pub fn calibrate(window: std::time::Duration) -> Calibration {
    let mut rates = Vec::new();
    for _ in 0..3 {
        let (t0, c0) = paired();
        std::thread::sleep(window);
        let (t1, c1) = paired();
        let secs = (t1 - t0).as_secs_f64();
        rates.push((c1.wrapping_sub(c0)) as f64 / secs);
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

/// Busy-waits `ticks` TSC ticks from `start`; returns the TSC value at the end.
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
        for ns in [0.0, 500e-9, 5e-6] {
            let want = c.ticks(ns);
            assert!(spin(want) >= want);
        }
    }

    #[test]
    fn tick_conversions_round_trip() {
        let c = Calibration { hz: 2.0e9 };
        assert_eq!(c.ticks(1e-6), 2000);
        assert!((c.secs(2000) - 1e-6).abs() < 1e-15);
    }
}
