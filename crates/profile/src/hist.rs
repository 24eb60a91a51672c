//! Log2 histograms of per-call times in nanoseconds.

use serde::{Deserialize, Serialize};

/// Bucket `k` counts calls whose time `t` in ns satisfies `2^k ≤ t < 2^(k+1)`; bucket 0 also holds t < 1 ns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Log2Histogram(pub Vec<u64>);

impl Log2Histogram {
    pub fn bucket_of(ns: u64) -> usize {
        if ns <= 1 {
            0
        } else {
            63 - ns.leading_zeros() as usize
        }
    }

    pub fn record(&mut self, ns: u64) {
        self.add(Self::bucket_of(ns), 1);
    }

    pub fn add(&mut self, bucket: usize, count: u64) {
        if self.0.len() <= bucket {
            self.0.resize(bucket + 1, 0);
        }
        self.0[bucket] = self.0[bucket].saturating_add(count);
    }

    pub fn merge(&mut self, other: &Log2Histogram) {
        for (k, c) in other.0.iter().enumerate() {
            if *c > 0 {
                self.add(k, *c);
            }
        }
    }

    /// The number of calls in the histogram (saturating at `u64::MAX`; see [`Self::checked_total`]).
    pub fn total(&self) -> u64 {
        self.checked_total().unwrap_or(u64::MAX)
    }

    /// The number of calls in the histogram, `None` when the buckets add up past `u64::MAX`.
    pub fn checked_total(&self) -> Option<u64> {
        self.0.iter().try_fold(0u64, |a, &c| a.checked_add(c))
    }

    /// The bucket-wise sum of two histograms, `None` when a bucket would exceed `u64::MAX`.
    pub fn checked_merge(&self, other: &Log2Histogram) -> Option<Log2Histogram> {
        let len = self.0.len().max(other.0.len());
        let at = |h: &Log2Histogram, k: usize| h.0.get(k).copied().unwrap_or(0);
        (0..len)
            .map(|k| at(self, k).checked_add(at(other, k)))
            .collect::<Option<Vec<u64>>>()
            .map(Log2Histogram)
    }

    /// The `q`-quantile (0..=1) estimated as the geometric middle of the bucket that holds it, in ns.
    pub fn quantile_ns(&self, q: f64) -> Option<f64> {
        let total = self.total();
        if total == 0 {
            return None;
        }
        let target = (q.clamp(0.0, 1.0) * total as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (k, c) in self.0.iter().enumerate() {
            seen += c;
            if seen >= target {
                let lo = (1u64 << k) as f64;
                return Some(if k == 0 {
                    1.0
                } else {
                    lo * std::f64::consts::SQRT_2
                });
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets() {
        assert_eq!(Log2Histogram::bucket_of(0), 0);
        assert_eq!(Log2Histogram::bucket_of(1), 0);
        assert_eq!(Log2Histogram::bucket_of(2), 1);
        assert_eq!(Log2Histogram::bucket_of(3), 1);
        assert_eq!(Log2Histogram::bucket_of(1024), 10);
        let mut h = Log2Histogram::default();
        for ns in [100, 120, 5000] {
            h.record(ns);
        }
        assert_eq!(h.total(), 3);
        assert_eq!(h.0[6], 2);
        assert_eq!(h.0[12], 1);
        assert!(h.quantile_ns(0.5).is_some_and(|m| (64.0..128.0).contains(&m)));
    }
}
