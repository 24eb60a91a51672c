//! What an exchange (a message one way, a one-byte answer back) takes on this machine, measured at a
//! few message sizes by `multios bench map` and interpolated between them: the cost of a message is
//! far from a straight line in its size (flat up to a few KiB, then the copies and the caches).

use serde::{Deserialize, Serialize};

/// Sizes measured (the calibration's message sizes).
pub const POINTS: usize = 5;

/// Wall ns per exchange at `bytes` per exchange (the message and its answer), in four arrangements.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Curves {
    /// Bytes per exchange, ascending.
    pub bytes: [f64; POINTS],
    /// One pair on one CPU, the other CPU idle.
    pub together: [f64; POINTS],
    /// One pair split over two otherwise idle CPUs (every hand-off wakes an idle CPU).
    pub alone: [f64; POINTS],
    /// Two pairs, each split over the same two CPUs: wall time per exchange of either pair.
    pub split: [f64; POINTS],
    /// CPU time per exchange of the split pairs (both ends together): what one exchange between
    /// CPUs costs when nothing waits.
    pub busy: [f64; POINTS],
}

/// Piecewise-linear through (xs, ys); flat below the first point, the last segment's slope (never
/// negative) beyond the last; never below 0.
pub fn interpolate(xs: &[f64; POINTS], ys: &[f64; POINTS], x: f64) -> f64 {
    if !x.is_finite() || x <= xs[0] {
        return ys[0].max(0.0);
    }
    for k in 1..POINTS {
        if x <= xs[k] {
            let span = xs[k] - xs[k - 1];
            let f = if span > 0.0 { (x - xs[k - 1]) / span } else { 1.0 };
            return (ys[k - 1] + f * (ys[k] - ys[k - 1])).max(0.0);
        }
    }
    let (a, b) = (POINTS - 2, POINTS - 1);
    let span = xs[b] - xs[a];
    let slope = if span > 0.0 {
        ((ys[b] - ys[a]) / span).max(0.0)
    } else {
        0.0
    };
    (ys[b] + slope * (x - xs[b])).max(0.0)
}

/// The closest non-decreasing sequence to `ys` (least squares, pool-adjacent-violators): a longer
/// message never costs less, so a dip between two sizes is noise.
pub fn non_decreasing(ys: [f64; POINTS]) -> [f64; POINTS] {
    // blocks of (sum, count), merged while a block's mean falls below its predecessor's
    let mut blocks: Vec<(f64, usize)> = Vec::with_capacity(POINTS);
    for &y in &ys {
        blocks.push((y, 1));
        while blocks.len() > 1 {
            let (s1, n1) = blocks[blocks.len() - 1];
            let (s0, n0) = blocks[blocks.len() - 2];
            if s0 / n0 as f64 <= s1 / n1 as f64 {
                break;
            }
            blocks.pop();
            let last = blocks.len() - 1;
            blocks[last] = (s0 + s1, n0 + n1);
        }
    }
    let mut out = [0.0; POINTS];
    let mut k = 0;
    for (s, n) in blocks {
        for _ in 0..n {
            out[k] = s / n as f64;
            k += 1;
        }
    }
    out
}

impl Curves {
    /// The same curves made non-decreasing in the size ([`non_decreasing`]).
    pub fn monotone(self) -> Curves {
        Curves {
            bytes: self.bytes,
            together: non_decreasing(self.together),
            alone: non_decreasing(self.alone),
            split: non_decreasing(self.split),
            busy: non_decreasing(self.busy),
        }
    }

    pub fn together(&self, bytes: f64) -> f64 {
        interpolate(&self.bytes, &self.together, bytes)
    }

    pub fn alone(&self, bytes: f64) -> f64 {
        interpolate(&self.bytes, &self.alone, bytes)
    }

    pub fn busy(&self, bytes: f64) -> f64 {
        interpolate(&self.bytes, &self.busy, bytes)
    }

    pub fn split(&self, bytes: f64) -> f64 {
        interpolate(&self.bytes, &self.split, bytes)
    }

    /// Wall ns per exchange of one of `k` ≥ 1 pairs split over the same two CPUs, at `bytes` per
    /// exchange: the waiting for idle CPUs shrinks as more pairs keep the CPUs busy, down to the
    /// CPU cost shared by the two CPUs. F + (A − F)·k^(log2 h), with A the lone pair's time, F =
    /// busy / 2 and h = (S − F)/(A − F) from the two-pair time S: exact at k = 1 and 2, a power law
    /// beyond (an extrapolation: the microbenchmarks measure one and two pairs).
    pub fn split_k(&self, bytes: f64, k: usize) -> f64 {
        let a = self.alone(bytes);
        let f = self.busy(bytes) / 2.0;
        if a <= f {
            return a.max(f);
        }
        let h = ((self.split(bytes) - f) / (a - f)).clamp(1e-3, 1.0);
        f + (a - f) * (k.max(1) as f64).powf(h.log2())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn curves() -> Curves {
        Curves {
            bytes: [257.0, 2049.0, 8193.0, 32769.0, 131073.0],
            together: [7000.0, 7100.0, 8000.0, 14000.0, 40000.0],
            alone: [80000.0, 82000.0, 90000.0, 110000.0, 160000.0],
            split: [25000.0, 26000.0, 30000.0, 40000.0, 70000.0],
            busy: [23000.0, 24000.0, 28000.0, 56000.0, 120000.0],
        }
    }

    #[test]
    fn interpolates_between_and_extends_beyond_the_points() {
        let c = curves();
        assert_eq!(c.together(100.0), 7000.0);
        assert_eq!(c.together(2049.0), 7100.0);
        assert!((c.together((2049.0 + 8193.0) / 2.0) - 7550.0).abs() < 1e-9);
        // beyond the last point: the last segment's slope
        let slope = (40000.0 - 14000.0) / (131073.0 - 32769.0);
        assert!((c.together(231073.0) - (40000.0 + slope * 100000.0)).abs() < 1e-6);
    }

    #[test]
    fn one_and_two_split_pairs_are_what_was_measured() {
        let c = curves();
        for &b in &c.bytes {
            assert!((c.split_k(b, 1) - c.alone(b)).abs() < 1e-6 * c.alone(b));
            assert!((c.split_k(b, 2) - c.split(b)).abs() < 1e-6 * c.split(b));
        }
    }

    #[test]
    fn a_dip_is_pooled_with_its_neighbour() {
        assert_eq!(
            non_decreasing([15.0, 11.0, 13.0, 20.0, 70.0]),
            [13.0, 13.0, 13.0, 20.0, 70.0]
        );
        let up = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(non_decreasing(up), up);
    }

    proptest! {
        #[test]
        fn pooling_is_non_decreasing_and_keeps_the_sum(ys in proptest::array::uniform5(0.0f64..1e6)) {
            let out = non_decreasing(ys);
            for k in 1..POINTS {
                prop_assert!(out[k] >= out[k - 1] - 1e-6);
            }
            let (a, b): (f64, f64) = (ys.iter().sum(), out.iter().sum());
            prop_assert!((a - b).abs() <= 1e-9 * a.max(1.0));
        }

        #[test]
        fn interpolation_stays_within_its_neighbours(x in 0.0f64..400_000.0) {
            let c = curves();
            let y = c.together(x);
            prop_assert!(y >= 0.0);
            let k = c.bytes.iter().position(|&b| b >= x);
            if let Some(k) = k {
                let (lo, hi) = if k == 0 {
                    (c.together[0], c.together[0])
                } else {
                    (c.together[k - 1].min(c.together[k]), c.together[k - 1].max(c.together[k]))
                };
                prop_assert!(y >= lo - 1e-9 && y <= hi + 1e-9);
            }
        }

        #[test]
        fn more_split_pairs_never_take_longer_per_exchange(b in 1.0f64..300_000.0, k in 1usize..64) {
            let c = curves();
            let now = c.split_k(b, k);
            let next = c.split_k(b, k + 1);
            prop_assert!(next <= now + 1e-9);
            prop_assert!(next >= c.busy(b) / 2.0 - 1e-9);
        }
    }
}
