//! Replaying a cyclic noise trace: how long a piece of work takes when it starts at a given phase.

use crate::trace::NoiseTrace;

/// A trace prepared for fast look-ups.
#[derive(Debug, Clone)]
pub struct Replay {
    pub length: f64,
    inv_length: f64,
    starts: Vec<f64>,
    ends: Vec<f64>,
    /// The work done in one whole cycle entered from the end of its last detour (the cycle's free
    /// time), and the most work of any prefix of that cycle: work above it passes the whole cycle,
    /// so [`Replay::delay`] skips such cycles at once instead of one detour at a time.
    cycle_work: f64,
    cycle_max_prefix: f64,
}

impl Replay {
    pub fn new(trace: &NoiseTrace) -> Self {
        let starts: Vec<f64> = trace.detours.iter().map(|d| d.0).collect();
        let ends: Vec<f64> = trace.detours.iter().map(|d| d.0 + d.1).collect();
        // The gaps `delay` walks in a cycle entered at the end of the last detour of the one before.
        let (mut cycle_work, mut cycle_max_prefix) = (0.0, f64::NEG_INFINITY);
        if let Some(&last) = ends.last() {
            let mut prev = last - trace.length_ns;
            for (s, e) in starts.iter().zip(&ends) {
                cycle_work += s - prev;
                cycle_max_prefix = f64::max(cycle_max_prefix, cycle_work);
                prev = *e;
            }
        }
        Replay {
            cycle_work,
            cycle_max_prefix,
            length: trace.length_ns,
            inv_length: if trace.length_ns > 0.0 {
                1.0 / trace.length_ns
            } else {
                0.0
            },
            starts,
            ends,
        }
    }

    /// Number of detours per cycle.
    pub fn detours(&self) -> usize {
        self.starts.len()
    }

    /// Detour `j` as [start, end).
    pub fn detour(&self, j: usize) -> (f64, f64) {
        (self.starts[j], self.ends[j])
    }

    /// The extra time (beyond `work`) needed to do `work` ns of computation starting at `phase`
    /// (in [0, length)): the detours it runs into, and the rest of a detour it starts inside.
    #[inline]
    pub fn delay(&self, phase: f64, work: f64) -> f64 {
        let d = self.starts.len();
        if d == 0 {
            return 0.0;
        }
        let mut j = self.ends.partition_point(|&e| e <= phase);
        let mut base = 0.0;
        let mut t = phase;
        if j < d && self.starts[j] <= t {
            t = self.ends[j];
            j += 1;
        }
        let mut w = work;
        // Whether `t` is the end of the last detour (of the cycle at `base`).
        let mut at_last_end = j == d && t == self.ends[d - 1];
        loop {
            if j == d {
                j = 0;
                base += self.length;
                // Whole cycles the work passes through are skipped at once: long work on a
                // high-frequency trace (100 s at 100 MHz) would otherwise take 10¹⁰ steps.
                if at_last_end && self.cycle_work > 0.0 && w > self.cycle_max_prefix {
                    let k = ((w - self.cycle_max_prefix) / self.cycle_work).floor();
                    if k >= 1.0 {
                        base += k * self.length;
                        t += k * self.length;
                        w -= k * self.cycle_work;
                    }
                }
            }
            let gap = base + self.starts[j] - t;
            if w <= gap {
                return t + w - phase - work;
            }
            w -= gap;
            t = base + self.ends[j];
            j += 1;
            at_last_end = j == d;
        }
    }

    /// `x` reduced into [0, length).
    #[inline]
    pub fn wrap(&self, x: f64) -> f64 {
        // a multiply and a truncating conversion instead of fmod or floor (both library calls on
        // baseline x86_64): this is on the allreduce's hot path; the corrections below fix the
        // truncation towards zero for negative x and any rounding at the edges
        let mut r = x - ((x * self.inv_length) as i64) as f64 * self.length;
        if r < 0.0 {
            r += self.length;
        }
        if r >= self.length {
            r -= self.length;
        }
        if (0.0..self.length).contains(&r) {
            r
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rp() -> Replay {
        // 100 ns cycle, detours [10,20) and [50,55)
        Replay::new(&NoiseTrace::new(100.0, vec![(10.0, 10.0), (50.0, 5.0)]))
    }

    #[test]
    fn delays() {
        let r = rp();
        assert_eq!(r.delay(0.0, 5.0), 0.0); // fits before the first detour
        assert_eq!(r.delay(0.0, 10.0), 0.0); // exactly up to it
        assert_eq!(r.delay(0.0, 11.0), 10.0); // runs into it
        assert_eq!(r.delay(12.0, 1.0), 8.0); // starts inside: waits to 20
        assert_eq!(r.delay(12.0, 0.0), 8.0); // even with no work
        assert_eq!(r.delay(0.0, 60.0), 15.0); // both detours
        assert_eq!(r.delay(60.0, 60.0), 10.0); // wraps around into [110,120)
        assert_eq!(r.delay(0.0, 170.0), 30.0); // a whole cycle and more: 3 detours
        assert_eq!(r.wrap(-1.0), 99.0);
        assert_eq!(r.wrap(250.0), 50.0);
    }

    /// The cycle-by-cycle walk `delay` did before whole cycles were skipped.
    fn delay_walk(r: &Replay, phase: f64, work: f64) -> f64 {
        let d = r.starts.len();
        let mut j = r.ends.partition_point(|&e| e <= phase);
        let (mut base, mut t) = (0.0, phase);
        if j < d && r.starts[j] <= t {
            t = r.ends[j];
            j += 1;
        }
        let mut w = work;
        loop {
            if j == d {
                j = 0;
                base += r.length;
            }
            let gap = base + r.starts[j] - t;
            if w <= gap {
                return t + w - phase - work;
            }
            w -= gap;
            t = base + r.ends[j];
            j += 1;
        }
    }

    #[test]
    fn issue_16_skipping_whole_cycles_matches_the_walk() {
        let r = rp();
        for phase in [0.0, 5.0, 12.0, 20.0, 52.0, 55.0, 60.0, 99.0] {
            for work in [0.0, 1.0, 35.0, 85.0, 100.0, 170.0, 1234.5, 10_000.0, 85.0 * 7.0] {
                let (a, b) = (r.delay(phase, work), delay_walk(&r, phase, work));
                assert!((a - b).abs() < 1e-6, "phase {phase} work {work}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn issue_16_long_work_on_a_fast_trace_is_quick() {
        // 100 MHz, 5 ns detours: 100 s of work passes 2·10¹⁰ cycles.
        let r = Replay::new(&NoiseTrace::new(10.0, vec![(0.0, 5.0)]));
        let t = std::time::Instant::now();
        let delay = r.delay(3.0, 100e9);
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        assert!((delay / 100e9 - 1.0).abs() < 1e-6, "{delay}");
    }
}
