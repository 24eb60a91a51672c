//! What an exchange (a message one way, a one-byte answer back) takes on this machine, measured at a
//! few message sizes by `multios bench map` and interpolated between them: the cost of a message is
//! far from a straight line in its size (flat up to a few KiB, then the copies and the caches).

use serde::{Deserialize, Serialize};

/// Sizes measured (the calibration's message sizes).
pub const POINTS: usize = 5;
/// Pairs on one CPU in the calibration's crowded arrangements ([`Curves::crowd`]).
pub const CROWD: [usize; 2] = [3, 6];
/// Pairs split over the two CPUs in the calibration's many-pair arrangements ([`Curves::spread`]).
pub const SPREAD: [usize; 2] = [6, 12];
/// Pairs left to Linux (nothing pinned) in the calibration's arrangements ([`Curves::linux`]).
pub const LINUX: [usize; 4] = [1, 2, 6, 12];
/// Pairs pinned on *each* of two CPUs, each pair's two ends on one CPU, in the calibration's
/// packed arrangements ([`Curves::packed`]): the placement `map run` applies to many pairs.
pub const PACKED: [usize; 2] = [2, 6];

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
    /// [`CROWD`] pairs on one CPU (the other idle): wall time per exchange of all of them (each
    /// CPU's run queue holds more processes, their buffers and stacks share its caches). None:
    /// not measured (an older calibration); a pair on one CPU then costs `together` however many
    /// share the CPU.
    #[serde(default)]
    pub crowd: Option<[[f64; POINTS]; 2]>,
    /// [`SPREAD`] pairs, each split over the two CPUs: wall time per exchange of all of them.
    /// None: not measured; the split pairs follow the power law of [`Curves::split_k`].
    #[serde(default)]
    pub spread: Option<[[f64; POINTS]; 2]>,
    /// [`LINUX`] pairs started with nothing pinned, Linux placing them over `linux_cpus` CPUs:
    /// wall time per exchange of all of them. Linux wakes a pair's partner on an idle CPU when
    /// there is one (a lone pair is split, every hand-off waking the other CPU) and on the
    /// waker's CPU when every CPU is busy (many pairs stay together), and its balancing spreads
    /// them unevenly or moves them: this is what its placement of pairs costs here. None: not
    /// measured.
    #[serde(default)]
    pub linux: Option<[[f64; POINTS]; 4]>,
    /// The CPUs the [`Curves::linux`] arrangements could use (the curve describes a machine of
    /// this many CPUs only).
    #[serde(default)]
    pub linux_cpus: usize,
    /// [`PACKED`] pairs pinned on each of two CPUs (each pair's ends together, the pairs
    /// alternating between the CPUs): wall time per exchange of all of them. The placement of many
    /// pairs measured as it runs, both CPUs busy with crowded run queues; without it the model
    /// multiplies the one-CPU crowding (the other CPU idle) by the one-pair-per-CPU slowdown
    /// (`parallel_ipc`), which the quiet 2-CPU runs of 2026-11-26 found 7–14 % short at two pairs
    /// per CPU. None: not measured (an older calibration).
    #[serde(default)]
    pub packed: Option<[[f64; POINTS]; 2]>,
    /// CPU time per exchange (both ends together) of one pair split over two otherwise idle CPUs:
    /// what a hand-off across CPUs costs on the ends' own clocks when the other CPU must wake (more
    /// than `busy`). Prices the hand-offs a recording saw cross CPUs ([`Curves::recorded`]). None:
    /// not measured (an older calibration).
    #[serde(default)]
    pub alone_cpu: Option<[f64; POINTS]>,
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

/// Through (ks, ys) piecewise linear in log k and log y (a power law between two counts); the
/// first value below the first count, the last segment's power law beyond the last. Values ≤ 0
/// are taken as the smallest positive one.
pub fn power_interpolate(ks: &[f64], ys: &[f64], k: f64) -> f64 {
    let n = ks.len().min(ys.len());
    if n == 0 {
        return 0.0;
    }
    let floor = ys[..n]
        .iter()
        .copied()
        .filter(|&y| y > 0.0)
        .fold(f64::INFINITY, f64::min);
    if !floor.is_finite() {
        return 0.0;
    }
    let y = |i: usize| ys[i].max(floor).ln();
    let x = |i: usize| ks[i].max(1e-9).ln();
    if n == 1 || !k.is_finite() || k <= ks[0] {
        return y(0).exp();
    }
    let seg = (1..n).find(|&i| k <= ks[i]).unwrap_or(n - 1);
    let (x0, x1) = (x(seg - 1), x(seg));
    let f = if x1 > x0 { (k.ln() - x0) / (x1 - x0) } else { 1.0 };
    (y(seg - 1) + f * (y(seg) - y(seg - 1))).exp()
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
            crowd: self.crowd.map(|c| c.map(non_decreasing)),
            spread: self.spread.map(|c| c.map(non_decreasing)),
            linux: self.linux.map(|c| c.map(non_decreasing)),
            linux_cpus: self.linux_cpus,
            packed: self.packed.map(|c| c.map(non_decreasing)),
            alone_cpu: self.alone_cpu.map(non_decreasing),
        }
    }

    /// CPU ns per exchange (both ends) a pair took in a recorded run in which the share `crossed`
    /// of its hand-offs went across CPUs: those at the cross-CPU price — a lone pair's over idle
    /// CPUs (`alone_cpu`, when measured) for `k` < 1.5 pairs, else between busy CPUs (`busy`) —
    /// the rest at the one-CPU price (`together`, whose wall time is CPU time: nothing waits).
    pub fn recorded(&self, bytes: f64, crossed: f64, k: f64) -> f64 {
        let f = crossed.clamp(0.0, 1.0);
        let across = match &self.alone_cpu {
            Some(c) if k < 1.5 => interpolate(&self.bytes, c, bytes),
            _ => self.busy(bytes),
        };
        (1.0 - f) * self.together(bytes) + f * across
    }

    /// Wall ns per exchange of a lone pair that Linux's placement split for the share `crossed` of
    /// its hand-offs, as in a recorded run: those at the lone split pair's time (`alone`), the rest
    /// at the one-CPU time.
    pub fn recorded_wall(&self, bytes: f64, crossed: f64) -> f64 {
        let f = crossed.clamp(0.0, 1.0);
        (1.0 - f) * self.together(bytes) + f * self.alone(bytes)
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

    /// Wall ns per exchange of `m` ≥ 1 pairs on one CPU (each pair's exchanges at this time): the
    /// one-pair time, and with [`Curves::crowd`] the power law in m through the times measured
    /// with 1, 3 and 6 pairs (an extrapolation beyond 6). On a quiet machine more pairs cost more;
    /// beside other SCHED_IDLE load more processes also get a larger share of the CPU, and the
    /// measurement says which wins, so the time is not held at or above the one-pair time.
    pub fn together_k(&self, bytes: f64, m: f64) -> f64 {
        let one = self.together(bytes);
        match &self.crowd {
            Some(c) if m > 1.0 => {
                let ks = [1.0, CROWD[0] as f64, CROWD[1] as f64];
                let ys = [
                    one,
                    interpolate(&self.bytes, &c[0], bytes),
                    interpolate(&self.bytes, &c[1], bytes),
                ];
                power_interpolate(&ks, &ys, m)
            }
            _ => one,
        }
    }

    /// Wall ns per exchange on one CPU's timeline of `m` ≥ 1 pairs pinned on that CPU while the
    /// other CPU runs pairs too: the power law in m through one pair per CPU (the one-CPU time ×
    /// `parallel`, the measured slowdown of a pair on each CPU) and the [`PACKED`] arrangements
    /// (each CPU carries half of their exchanges: twice their wall per exchange of all), the last
    /// segment's law beyond. None when not measured.
    pub fn packed_k(&self, bytes: f64, m: f64, parallel: f64) -> Option<f64> {
        let c = self.packed.as_ref()?;
        let ks = [1.0, PACKED[0] as f64, PACKED[1] as f64];
        let ys = [
            self.together(bytes) * parallel,
            2.0 * interpolate(&self.bytes, &c[0], bytes),
            2.0 * interpolate(&self.bytes, &c[1], bytes),
        ];
        Some(power_interpolate(&ks, &ys, m.max(1.0)))
    }

    /// Wall ns per exchange of all of `k` ≥ 1 pairs left to Linux on `cpus` CPUs: the power law in
    /// k through the times measured with [`LINUX`] pairs (an extrapolation beyond the last). None
    /// when not measured, or measured on another number of CPUs.
    pub fn linux_k(&self, bytes: f64, k: f64, cpus: usize) -> Option<f64> {
        let c = self.linux.as_ref()?;
        if cpus != self.linux_cpus {
            return None;
        }
        let ks = LINUX.map(|k| k as f64);
        let ys = c.map(|curve| interpolate(&self.bytes, &curve, bytes));
        Some(power_interpolate(&ks, &ys, k.max(1.0)))
    }

    /// Wall ns per exchange of one of `k` ≥ 1 pairs split over the same two CPUs, at `bytes` per
    /// exchange. With [`Curves::spread`]: the power law in k through the times measured with 1, 2,
    /// 6 and 12 pairs (an extrapolation beyond 12). Without: the waiting for idle CPUs shrinks as more pairs keep the CPUs busy, down to the
    /// CPU cost shared by the two CPUs. F + (A − F)·k^(log2 h), with A the lone pair's time, F =
    /// busy / 2 and h = (S − F)/(A − F) from the two-pair time S: exact at k = 1 and 2, a power law
    /// beyond (an extrapolation: the microbenchmarks measure one and two pairs).
    pub fn split_k(&self, bytes: f64, k: usize) -> f64 {
        if let Some(sp) = &self.spread {
            let ks = [1.0, 2.0, SPREAD[0] as f64, SPREAD[1] as f64];
            let ys = [
                self.alone(bytes),
                self.split(bytes),
                interpolate(&self.bytes, &sp[0], bytes),
                interpolate(&self.bytes, &sp[1], bytes),
            ];
            return power_interpolate(&ks, &ys, k.max(1) as f64);
        }
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
            crowd: None,
            spread: None,
            linux: None,
            linux_cpus: 0,
            packed: None,
            alone_cpu: None,
        }
    }

    fn crowded() -> Curves {
        let mut c = curves();
        c.crowd = Some([
            [8000.0, 8200.0, 9000.0, 16000.0, 45000.0],
            [9000.0, 9300.0, 10000.0, 18000.0, 50000.0],
        ]);
        c.spread = Some([
            [9000.0, 9500.0, 11000.0, 20000.0, 50000.0],
            [11000.0, 11500.0, 13000.0, 24000.0, 60000.0],
        ]);
        c
    }

    #[test]
    fn issue_12_crowded_and_spread_pairs_are_what_was_measured() {
        let c = crowded();
        let (cr, sp) = (c.crowd.expect("crowd"), c.spread.expect("spread"));
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b;
        for (i, &b) in c.bytes.iter().enumerate() {
            assert!(close(c.together_k(b, 1.0), c.together[i]));
            assert!(close(c.together_k(b, CROWD[0] as f64), cr[0][i]));
            assert!(close(c.together_k(b, CROWD[1] as f64), cr[1][i]));
            assert!(close(c.split_k(b, 1), c.alone[i]));
            assert!(close(c.split_k(b, 2), c.split[i]));
            assert!(close(c.split_k(b, SPREAD[0]), sp[0][i]));
            assert!(close(c.split_k(b, SPREAD[1]), sp[1][i]));
        }
        // between 3 and 6 pairs: a power law (the geometric mean at √18 pairs)
        let mid = c.together_k(257.0, 4.0);
        assert!(mid > 8000.0 && mid < 9000.0, "{mid}");
        assert!(
            (power_interpolate(&[3.0, 6.0], &[8000.0, 9000.0], 18f64.sqrt()) - (72e6f64).sqrt()).abs() < 1e-6
        );
        // beyond 6: the 3 → 6 power law continued
        let eight = c.together_k(257.0, 8.0);
        let want = 9000.0 * (8.0f64 / 6.0).powf((9000.0f64 / 8000.0).ln() / 2f64.ln());
        assert!((eight - want).abs() < 1e-6 * want, "{eight} {want}");
    }

    #[test]
    fn issue_12_packed_pairs_are_what_was_measured() {
        let mut c = crowded();
        assert_eq!(c.packed_k(257.0, 2.0, 1.1), None, "not measured");
        let (two, six) = ([4500.0; POINTS], [5500.0; POINTS]);
        c.packed = Some([two, six]);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b;
        for &b in &c.bytes {
            // one pair per CPU: the one-CPU time slowed by the parallel factor
            assert!(close(
                c.packed_k(b, 1.0, 1.1).expect("packed"),
                1.1 * c.together(b)
            ));
            // 2 and 6 pairs per CPU: each CPU carries half the exchanges
            assert!(close(c.packed_k(b, 2.0, 1.1).expect("packed"), 9000.0));
            assert!(close(c.packed_k(b, 6.0, 1.1).expect("packed"), 11000.0));
        }
        // 8 per CPU: the 2 → 6 power law continued
        let eight = c.packed_k(257.0, 8.0, 1.1).expect("packed");
        let want = 11000.0 * (8.0f64 / 6.0).powf((11000.0f64 / 9000.0).ln() / 3f64.ln());
        assert!(close(eight, want), "{eight} {want}");
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
        fn issue_12_crowding_never_makes_an_exchange_cheaper(b in 1.0f64..300_000.0, m in 1usize..64) {
            let c = crowded();
            let now = c.together_k(b, m as f64);
            prop_assert!(now.is_finite() && now >= c.together(b) - 1e-9, "measured rising: stays above");
            prop_assert!(c.together_k(b, m as f64 + 0.5) >= now - 1e-9);
            let s = c.split_k(b, m);
            prop_assert!(s.is_finite() && s > 0.0);
        }

        #[test]
        fn power_interpolation_passes_its_points_and_stays_positive(
            ys in proptest::collection::vec(1.0f64..1e6, 4),
            k in 0.5f64..100.0,
        ) {
            let ks = [1.0, 2.0, 6.0, 12.0];
            for (i, &x) in ks.iter().enumerate() {
                prop_assert!((power_interpolate(&ks, &ys, x) - ys[i]).abs() <= 1e-9 * ys[i]);
            }
            let y = power_interpolate(&ks, &ys, k);
            prop_assert!(y.is_finite() && y > 0.0);
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
