//! The time base: the time-stamp counter calibrated to nanoseconds, and its measured resolution.

use crate::sys;
use serde::Serialize;

/// Time-stamp counter ticks per nanosecond and the smallest step the timer shows.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Clock {
    pub ticks_per_ns: f64,
    /// The smallest non-zero difference between two back-to-back reads, in ns.
    pub resolution_ns: f64,
}

impl Clock {
    /// Calibrates against CLOCK_MONOTONIC over `window_ms` and measures the resolution.
    pub fn calibrate(window_ms: u64) -> Clock {
        let (m0, t0) = (sys::monotonic_ns(), sys::ticks());
        let target = m0 + window_ms.max(1) * 1_000_000;
        let mut m1 = m0;
        while m1 < target {
            m1 = sys::monotonic_ns();
        }
        let t1 = sys::ticks();
        let ticks_per_ns = (t1.wrapping_sub(t0)) as f64 / (m1 - m0) as f64;
        let ticks_per_ns = if ticks_per_ns > 0.0 { ticks_per_ns } else { 1.0 };
        let mut min_step = u64::MAX;
        let mut prev = sys::ticks();
        for _ in 0..100_000 {
            let now = sys::ticks();
            let d = now.wrapping_sub(prev);
            if d > 0 && d < min_step {
                min_step = d;
            }
            prev = now;
        }
        let resolution_ns = if min_step == u64::MAX {
            1.0
        } else {
            min_step as f64 / ticks_per_ns
        };
        Clock {
            ticks_per_ns,
            resolution_ns,
        }
    }

    pub fn to_ns(&self, ticks: u64) -> f64 {
        ticks as f64 / self.ticks_per_ns
    }

    pub fn to_ticks(&self, ns: f64) -> u64 {
        (ns * self.ticks_per_ns).round() as u64
    }
}
