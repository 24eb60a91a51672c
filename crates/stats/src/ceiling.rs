//! The noise ceiling of an accuracy: how well a *perfect* model could score against paired
//! measurements taken on this machine.
//!
//! An accuracy of 100 − MAPE compares a projection with a measured speedup, the median of n paired
//! ratios. On a noisy machine that median is itself off the true speedup, so even a projection
//! equal to the truth loses points. How much is measured from the runs already made: runs alternate
//! ABBA (base, other | other, base | base, other …), so every second boundary puts two runs of the
//! *same* side next to each other — an A/A pair, as close in time as a real pair. The log-ratios of
//! those A/A pairs sample the run-to-run noise of a paired ratio (for equal noise on both sides,
//! ln(a₁/a₂) and ln(a/b) have the same spread) at no extra cost.
//!
//! The ceiling is then a bootstrap (B. Efron and R. J. Tibshirani, *An Introduction to the
//! Bootstrap*, Chapman & Hall 1993, ch. 6): draw n log-ratios from the pooled A/A sample, made
//! symmetric (the direction of an A/A pair is arbitrary), take their median m — what a measured
//! speedup would read for a true ratio of 1 — and average the error a perfect projection gets,
//! |e^(−m) − 1|. The draws come from a fixed-seed generator, so a rerun prints the same ceiling.

/// The log-ratios ln(x_j / x_(j+1)) of the runs of the same side that came one after the other,
/// for two series given pair by pair in ABBA order: pair i ran `base[i]` first when i is even and
/// `other[i]` first when i is odd. So `other[i]` and `other[i+1]` are adjacent for even i, and
/// `base[i]` and `base[i+1]` for odd i. Non-positive or non-finite times are skipped.
pub fn same_side_log_ratios(base: &[f64], other: &[f64]) -> Vec<f64> {
    let n = base.len().min(other.len());
    let mut out = Vec::new();
    for i in 0..n.saturating_sub(1) {
        let s = if i % 2 == 0 { other } else { base };
        let (a, b) = (s[i], s[i + 1]);
        if a > 0.0 && b > 0.0 && a.is_finite() && b.is_finite() {
            out.push((a / b).ln());
        }
    }
    out
}

/// Draws used by [`ceiling_error`].
pub const DRAWS: usize = 4000;

/// The expected relative error |e^(−m) − 1| of a median of `n` paired ratios whose true value is 1,
/// with the noise resampled from `log_ratios` (A/A pairs, see [`same_side_log_ratios`]); a perfect
/// model scores 100 · (1 − this) against such measurements. `None` with fewer than 2 samples or
/// `n` = 0.
pub fn ceiling_error(log_ratios: &[f64], n: usize) -> Option<f64> {
    let pool: Vec<f64> = log_ratios
        .iter()
        .filter(|x| x.is_finite())
        .flat_map(|&x| [x, -x])
        .collect();
    if pool.len() < 4 || n == 0 {
        return None;
    }
    let mut rng = XorShift(0x9E37_79B9_7F4A_7C15);
    let mut draw = vec![0.0; n];
    let mut sum = 0.0;
    for _ in 0..DRAWS {
        for d in &mut draw {
            *d = pool[rng.below(pool.len())];
        }
        draw.sort_by(f64::total_cmp);
        let m = crate::median_sorted(&draw);
        sum += ((-m).exp() - 1.0).abs();
    }
    Some(sum / DRAWS as f64)
}

/// Marsaglia's xorshift64 (G. Marsaglia, "Xorshift RNGs", *J. Statistical Software* 8(14), 2003):
/// enough for resampling indices, and reproducible.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform in 0..n (n > 0), by the multiply-shift reduction (D. Lemire, "Fast random integer
    /// generation in an interval", ACM TOMACS 29(1), 2019; its small bias is far below the noise
    /// measured here).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_15_same_side_pairs_follow_the_abba_order() {
        // Runs in time order: b0 o0 | o1 b1 | b2 o2 | o3 b3 → adjacent same side: (o0, o1), (b1, b2), (o2, o3).
        let base = [1.0, 2.0, 4.0, 8.0];
        let other = [10.0, 20.0, 40.0, 80.0];
        let r = same_side_log_ratios(&base, &other);
        let want = [(10.0f64 / 20.0).ln(), (2.0f64 / 4.0).ln(), (40.0f64 / 80.0).ln()];
        assert_eq!(r.len(), 3);
        for (a, b) in r.iter().zip(want) {
            assert!((a - b).abs() < 1e-12);
        }
        assert!(same_side_log_ratios(&[1.0], &[1.0]).is_empty());
    }

    #[test]
    fn issue_15_no_noise_means_a_ceiling_of_100_percent() {
        assert_eq!(ceiling_error(&[0.0; 8], 6), Some(0.0));
        assert_eq!(ceiling_error(&[0.1], 6), None);
        assert_eq!(ceiling_error(&[0.1, 0.2], 0), None);
    }

    #[test]
    fn issue_15_the_ceiling_falls_with_the_noise_and_rises_with_the_pairs() {
        let small: Vec<f64> = (0..20).map(|i| 0.01 * f64::from(i % 5) - 0.02).collect();
        let large: Vec<f64> = small.iter().map(|x| x * 10.0).collect();
        let (s6, l6) = (
            ceiling_error(&small, 6).expect("small"),
            ceiling_error(&large, 6).expect("large"),
        );
        assert!(s6 < l6, "{s6} < {l6}");
        let l30 = ceiling_error(&large, 30).expect("30");
        assert!(l30 < l6, "{l30} < {l6}");
        // Reproducible: the generator is seeded.
        assert_eq!(ceiling_error(&large, 6), Some(l6));
    }
}
