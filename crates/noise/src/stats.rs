//! Statistics of a series of samples: order statistics, the noise fraction and a log2 histogram.

use serde::Serialize;

/// Order statistics and the noise fraction of a series (all in the series' unit, e.g. ns).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub min: f64,
    pub median: f64,
    pub mean: f64,
    pub p99: f64,
    pub max: f64,
    /// max / min (1 = perfectly flat).
    pub max_over_min: f64,
    /// Σ(t − t_min) / Σt × 100: the share of the time lost to noise, in percent.
    pub noise_pct: f64,
}

/// The value at quantile `q` (0..=1) of a sorted slice, by linear interpolation (multios-stats).
pub use multios_stats::quantile;

impl Summary {
    /// Summarises `xs` (times per fixed work quantum: larger = noisier). `None` when empty.
    pub fn of(xs: &[f64]) -> Option<Summary> {
        if xs.is_empty() {
            return None;
        }
        let mut s = xs.to_vec();
        s.sort_by(f64::total_cmp);
        let min = s[0];
        let max = s[s.len() - 1];
        let sum: f64 = s.iter().fold(0.0, |a, b| a + b);
        let excess: f64 = s.iter().map(|t| t - min).fold(0.0, |a, b| a + b);
        Some(Summary {
            n: s.len(),
            min,
            median: multios_stats::median_sorted(&s),
            mean: sum / s.len() as f64,
            p99: quantile(&s, 0.99),
            max,
            max_over_min: if min > 0.0 { max / min } else { f64::INFINITY },
            noise_pct: if sum > 0.0 { 100.0 * excess / sum } else { 0.0 },
        })
    }
}

/// The noise fraction of an FTQ series (work done per fixed slot: smaller = noisier):
/// Σ(c_max − c) / (n · c_max) × 100.
pub fn ftq_noise_pct(counts: &[f64]) -> f64 {
    let max = counts.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if counts.is_empty() || max <= 0.0 {
        return 0.0;
    }
    let lost: f64 = counts.iter().map(|c| max - c).fold(0.0, |a, b| a + b);
    100.0 * lost / (max * counts.len() as f64)
}

/// One bucket of a log2 histogram: values in [lo, 2·lo).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Bucket {
    pub lo: f64,
    pub hi: f64,
    pub count: u64,
    /// Sum of the values in the bucket (e.g. total detour time).
    pub total: f64,
}

/// A log2 histogram of positive values (e.g. detour durations in ns): bucket k holds [2^k, 2^(k+1)).
pub fn log2_histogram(values: impl IntoIterator<Item = f64>) -> Vec<Bucket> {
    let mut buckets: Vec<Bucket> = Vec::new();
    for v in values {
        if !(v.is_finite() && v >= 1.0) {
            continue;
        }
        let k = v.log2().floor() as i32;
        let lo = 2f64.powi(k);
        match buckets.iter_mut().find(|b| b.lo == lo) {
            Some(b) => {
                b.count += 1;
                b.total += v;
            }
            None => buckets.push(Bucket {
                lo,
                hi: 2.0 * lo,
                count: 1,
                total: v,
            }),
        }
    }
    buckets.sort_by(|a, b| a.lo.total_cmp(&b.lo));
    buckets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_a_known_series() {
        let xs = [10.0, 10.0, 10.0, 10.0, 20.0];
        let s = Summary::of(&xs).expect("non-empty");
        assert_eq!(s.n, 5);
        assert_eq!(s.min, 10.0);
        assert_eq!(s.median, 10.0);
        assert!((s.mean - 12.0).abs() < 1e-12);
        assert_eq!(s.max, 20.0);
        assert!((s.max_over_min - 2.0).abs() < 1e-12);
        // Σ(t − min) = 10, Σt = 60
        assert!((s.noise_pct - 100.0 * 10.0 / 60.0).abs() < 1e-9);
        assert!((s.p99 - (10.0 + 0.96 * 10.0)).abs() < 1e-9);
        assert!(Summary::of(&[]).is_none());
    }

    #[test]
    fn flat_series_has_no_noise() {
        let s = Summary::of(&[5.0; 100]).expect("non-empty");
        assert_eq!(s.noise_pct, 0.0);
        assert_eq!(s.max_over_min, 1.0);
        assert_eq!(ftq_noise_pct(&[7.0; 10]), 0.0);
        assert!((ftq_noise_pct(&[10.0, 5.0]) - 25.0).abs() < 1e-12);
    }

    #[test]
    fn log2_buckets() {
        let h = log2_histogram([1.0, 1.5, 2.0, 3.9, 1000.0, 0.5, f64::NAN]);
        let counts: Vec<(f64, u64)> = h.iter().map(|b| (b.lo, b.count)).collect();
        assert_eq!(counts, vec![(1.0, 2), (2.0, 2), (512.0, 1)]);
        assert!((h[1].total - 5.9).abs() < 1e-12);
    }
}
