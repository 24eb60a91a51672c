//! Paired comparisons of run times on a shared machine.
//!
//! A benchmark here alternates the two sides (native, emulated) and compares them run by run: the
//! ratio of a pair cancels the slow drifts of a shared VM (other tenants, frequency) that a
//! comparison of two separately collected samples absorbs as error. Two estimates of the overhead
//! are given:
//! - the **median of the paired ratios** with a distribution-free confidence interval from order
//!   statistics — the number of ratios below the true median is Binomial(n, ½), so
//!   [x₍ₖ₎, x₍ₙ₋ₖ₊₁₎] covers it with probability 1 − 2·P(B ≤ k − 1) (W. J. Conover, *Practical
//!   Nonparametric Statistics*, 3rd ed., Wiley 1999, §3.2, "confidence interval for a quantile");
//! - the **ratio of the fastest runs**: interference only ever adds time, so each side's minimum
//!   is the steadiest estimate of its own cost (J. Chen and J. Revels, "Robust benchmarking in
//!   noisy environments", arXiv:1608.04295, 2016).

use crate::median_sorted;
use serde::Serialize;

/// The paired comparison of `emulated` against `base`, both in the same order of alternation, in
/// percent ([`paired`]) or in the series' unit ([`paired_diff`]).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Paired {
    pub pairs: usize,
    /// Median of the per-pair comparisons (emulatedᵢ / baseᵢ − 1 in percent, or emulatedᵢ − baseᵢ).
    pub median: f64,
    /// Confidence interval of that median and its coverage; `None` with fewer than 6 pairs (even
    /// the widest interval covers less than 95 %).
    pub ci: Option<(f64, f64)>,
    pub ci_coverage: Option<f64>,
    /// The same comparison of the two fastest runs.
    pub fastest: f64,
}

impl Paired {
    /// A comparison made by [`paired`] (percent) as ratios emulatedᵢ / baseᵢ: the median and the
    /// interval's ends, each 1 + percent / 100.
    pub fn ratio(&self) -> (f64, Option<(f64, f64)>) {
        let r = |pct: f64| 1.0 + pct / 100.0;
        (r(self.median), self.ci.map(|(lo, hi)| (r(lo), r(hi))))
    }
}

/// P(B ≤ k) for B ~ Binomial(n, ½).
fn binom_half_cdf(n: usize, k: usize) -> f64 {
    let mut c = 1.0f64; // C(n, 0)
    let mut sum = 0.0;
    for i in 0..=k.min(n) {
        if i > 0 {
            c = c * (n - i + 1) as f64 / i as f64;
        }
        sum += c;
    }
    sum / 2f64.powi(n as i32)
}

/// The 1-based rank k of the narrowest order-statistic interval [x₍ₖ₎, x₍ₙ₋ₖ₊₁₎] that covers the
/// median with probability ≥ `level`, and that coverage; `None` if even [x₍₁₎, x₍ₙ₎] is short.
pub fn median_ci_rank(n: usize, level: f64) -> Option<(usize, f64)> {
    let mut best = None;
    for k in 1..=n / 2 {
        let coverage = 1.0 - 2.0 * binom_half_cdf(n, k - 1);
        if coverage >= level {
            best = Some((k, coverage));
        } else {
            break;
        }
    }
    best
}

/// Compares two equally long series of run times taken in alternation, in percent of `base`;
/// `None` if they are empty or of different lengths.
pub fn paired(base: &[f64], emulated: &[f64]) -> Option<Paired> {
    compare(base, emulated, |b, e| 100.0 * (e / b - 1.0))
}

/// Like [`paired`], as differences in the series' own unit (for costs that do not scale with the
/// run, e.g. a start-up cost).
pub fn paired_diff(base: &[f64], emulated: &[f64]) -> Option<Paired> {
    compare(base, emulated, |b, e| e - b)
}

fn compare(base: &[f64], emulated: &[f64], f: fn(f64, f64) -> f64) -> Option<Paired> {
    if base.is_empty() || base.len() != emulated.len() {
        return None;
    }
    let mut r: Vec<f64> = base.iter().zip(emulated).map(|(b, e)| f(*b, *e)).collect();
    r.sort_by(f64::total_cmp);
    let ci = median_ci_rank(r.len(), 0.95);
    let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
    Some(Paired {
        pairs: r.len(),
        median: median_sorted(&r),
        ci: ci.map(|(k, _)| (r[k - 1], r[r.len() - k])),
        ci_coverage: ci.map(|(_, c)| c),
        fastest: f(min(base), min(emulated)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn median_ci_ranks_match_the_binomial_tables() {
        // Conover (1999), Table A3 / the usual sign-test tables at 95 %.
        assert_eq!(median_ci_rank(5, 0.95), None);
        assert_eq!(median_ci_rank(6, 0.95).map(|x| x.0), Some(1));
        assert_eq!(median_ci_rank(9, 0.95).map(|x| x.0), Some(2));
        assert_eq!(median_ci_rank(15, 0.95).map(|x| x.0), Some(4));
        assert_eq!(median_ci_rank(20, 0.95).map(|x| x.0), Some(6));
        let (_, c) = median_ci_rank(15, 0.95).expect("15 pairs have a 95 % interval");
        assert!((c - 0.9648).abs() < 1e-3, "{c}");
    }

    #[test]
    fn paired_ratios_cancel_a_common_drift() {
        // The machine slows down run by run; the emulated side is always 1 % slower.
        let base: Vec<f64> = (0..9).map(|i| 1.0 + 0.1 * i as f64).collect();
        let emu: Vec<f64> = base.iter().map(|b| b * 1.01).collect();
        let p = paired(&base, &emu).expect("equal lengths");
        assert!((p.median - 1.0).abs() < 1e-9);
        let (m, ci) = p.ratio();
        assert!(
            (m - 1.01).abs() < 1e-12
                && ci.is_some_and(|(lo, hi)| (lo - 1.01).abs() < 1e-12 && (hi - 1.01).abs() < 1e-12)
        );
        let (lo, hi) = p.ci.expect("≥ 6 pairs");
        assert!((lo - 1.0).abs() < 1e-9 && (hi - 1.0).abs() < 1e-9);
        assert!(paired(&base, &emu[1..]).is_none());
        let d = paired_diff(&[1.0, 2.0, 3.0], &[1.5, 2.5, 3.5]).expect("equal lengths");
        assert_eq!((d.median, d.fastest, d.ci), (0.5, 0.5, None));
    }

    proptest! {
        #[test]
        fn the_interval_holds_the_median(v in proptest::collection::vec(0.5f64..2.0, 6..40)) {
            let base = vec![1.0; v.len()];
            let p = paired(&base, &v).expect("equal lengths");
            let (lo, hi) = p.ci.expect("≥ 6 pairs");
            prop_assert!(lo <= p.median && p.median <= hi);
        }
    }
}
