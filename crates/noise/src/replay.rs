//! Replaying a cyclic noise trace: how long a piece of work takes when it starts at a given phase.

use crate::trace::NoiseTrace;

/// A trace prepared for fast look-ups.
#[derive(Debug, Clone)]
pub struct Replay {
    pub length: f64,
    inv_length: f64,
    starts: Vec<f64>,
    ends: Vec<f64>,
}

impl Replay {
    pub fn new(trace: &NoiseTrace) -> Self {
        Replay {
            length: trace.length_ns,
            inv_length: if trace.length_ns > 0.0 {
                1.0 / trace.length_ns
            } else {
                0.0
            },
            starts: trace.detours.iter().map(|d| d.0).collect(),
            ends: trace.detours.iter().map(|d| d.0 + d.1).collect(),
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
        loop {
            if j == d {
                j = 0;
                base += self.length;
            }
            let gap = base + self.starts[j] - t;
            if w <= gap {
                return t + w - phase - work;
            }
            w -= gap;
            t = base + self.ends[j];
            j += 1;
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
}
