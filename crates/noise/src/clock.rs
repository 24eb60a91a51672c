//! The time base: the time-stamp counter calibrated to nanoseconds, and its measured resolution.

use serde::Serialize;

/// Time-stamp counter ticks per nanosecond and the smallest step the timer shows.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Clock {
    pub ticks_per_ns: f64,
    /// The smallest non-zero difference between two back-to-back reads, in ns.
    pub resolution_ns: f64,
}

impl Clock {
    /// Calibrates against CLOCK_MONOTONIC (three windows of `window_ms` / 3, see
    /// `multios_host::tsc`) and measures the resolution.
    pub fn calibrate(window_ms: u64) -> Clock {
        let window = std::time::Duration::from_micros(window_ms.max(1) * 1000 / 3);
        let ticks_per_ns = multios_host::tsc::calibrate(window).ticks_per_ns();
        let ticks_per_ns = if ticks_per_ns > 0.0 { ticks_per_ns } else { 1.0 };
        let resolution_ns = multios_host::tsc::min_step(100_000).map_or(1.0, |t| t as f64 / ticks_per_ns);
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
