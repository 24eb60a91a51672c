//! A process's new anonymous memory, mapping by mapping (schema 6; issue #15): the lengths of
//! the ranges the LWK populates at map time (`multios lwk run --populate-at-map`, on by
//! default) — mmaps of anonymous, private, writable memory that are not a reservation or a
//! stack (no `MAP_SHARED`, `MAP_NORESERVE`, `MAP_STACK`, `MAP_GROWSDOWN`, `MAP_HUGETLB`), and
//! growths of the break. The LWK populates each such range from its low end up to a per-range
//! cap (4 MiB by default), so Σ min(length, cap) over them is what it populates; the lengths
//! are kept as a log2 histogram with the Σ length of each bucket, which gives that sum exactly
//! for a cap that is a power of two and bounds it from above for any other.

use serde::{Deserialize, Serialize};

/// Buckets of [`AnonMaps`]: bucket k holds lengths in [2^k, 2^(k+1)) bytes (k = 0 also holds 0),
/// the last one everything from 2^47 up.
pub const ANON_BUCKETS: usize = 48;

/// One process's new anonymous ranges (module docs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnonMaps {
    /// How many ranges (successful mmaps and growths of the break).
    pub calls: u64,
    /// Σ their lengths.
    pub bytes: u64,
    /// Ranges per log2 bucket of their length (bucket k: [2^k, 2^(k+1)) bytes).
    pub hist_log2_bytes: Vec<u64>,
    /// Σ length of the ranges in each bucket (as long as `hist_log2_bytes`).
    pub bytes_log2: Vec<u64>,
}

/// The bucket of a length.
pub fn anon_bucket(len: u64) -> usize {
    (63 - (len | 1).leading_zeros() as usize).min(ANON_BUCKETS - 1)
}

impl AnonMaps {
    /// Adds one range of `len` bytes.
    pub fn record(&mut self, len: u64) {
        let b = anon_bucket(len);
        if self.hist_log2_bytes.len() <= b {
            self.hist_log2_bytes.resize(b + 1, 0);
            self.bytes_log2.resize(b + 1, 0);
        }
        self.calls = self.calls.saturating_add(1);
        self.bytes = self.bytes.saturating_add(len);
        self.hist_log2_bytes[b] = self.hist_log2_bytes[b].saturating_add(1);
        self.bytes_log2[b] = self.bytes_log2[b].saturating_add(len);
    }

    /// From per-bucket counts and Σ lengths (a backend's tables); trailing empty buckets dropped.
    pub fn from_buckets(counts: &[u64], bytes: &[u64]) -> AnonMaps {
        let n = counts.len().min(bytes.len()).min(ANON_BUCKETS);
        let used = (0..n).rev().find(|&k| counts[k] > 0).map_or(0, |k| k + 1);
        let hist: Vec<u64> = counts[..used].to_vec();
        let sums: Vec<u64> = bytes[..used].to_vec();
        AnonMaps {
            calls: hist.iter().fold(0u64, |a, &c| a.saturating_add(c)),
            bytes: sums.iter().fold(0u64, |a, &c| a.saturating_add(c)),
            hist_log2_bytes: hist,
            bytes_log2: sums,
        }
    }

    /// Adds another record (of the same process from another CPU).
    pub fn merge(&mut self, o: &AnonMaps) {
        let n = o.hist_log2_bytes.len().max(self.hist_log2_bytes.len());
        self.hist_log2_bytes.resize(n, 0);
        self.bytes_log2.resize(n, 0);
        for (k, (&c, &b)) in o.hist_log2_bytes.iter().zip(&o.bytes_log2).enumerate() {
            self.hist_log2_bytes[k] = self.hist_log2_bytes[k].saturating_add(c);
            self.bytes_log2[k] = self.bytes_log2[k].saturating_add(b);
        }
        self.calls = self.calls.saturating_add(o.calls);
        self.bytes = self.bytes.saturating_add(o.bytes);
    }

    /// Σ min(length, `cap`) over the ranges, bytes: exact when `cap` is a power of two (every
    /// bucket then lies wholly below or above it), else an upper bound (the bucket holding `cap`
    /// counts min(its Σ, its ranges × cap)). A cap of 0 gives 0.
    pub fn populated_bytes(&self, cap: u64) -> f64 {
        if cap == 0 {
            return 0.0;
        }
        self.hist_log2_bytes
            .iter()
            .zip(&self.bytes_log2)
            .enumerate()
            .map(|(k, (&n, &sum))| {
                let lo = if k == 0 { 0 } else { 1u64 << k };
                let hi = if k + 1 >= ANON_BUCKETS {
                    u64::MAX
                } else {
                    1u64 << (k + 1)
                };
                let (n, sum, cap_f) = (n as f64, sum as f64, cap as f64);
                if hi <= cap {
                    sum
                } else if lo >= cap {
                    n * cap_f
                } else {
                    sum.min(n * cap_f)
                }
            })
            .fold(0.0, |a, b| a + b)
    }

    /// What is wrong with it, if anything: the two tables of unequal length, longer than
    /// [`ANON_BUCKETS`], or not adding up to `calls` and `bytes`.
    pub fn inconsistency(&self) -> Option<String> {
        if self.hist_log2_bytes.len() != self.bytes_log2.len() {
            return Some(format!(
                "hist_log2_bytes has {} buckets and bytes_log2 {}: they must be as long",
                self.hist_log2_bytes.len(),
                self.bytes_log2.len()
            ));
        }
        if self.hist_log2_bytes.len() > ANON_BUCKETS {
            return Some(format!(
                "{} buckets, at most {ANON_BUCKETS}",
                self.hist_log2_bytes.len()
            ));
        }
        let calls = self
            .hist_log2_bytes
            .iter()
            .try_fold(0u64, |a, &c| a.checked_add(c));
        if calls != Some(self.calls) {
            return Some(format!(
                "hist_log2_bytes adds up to {calls:?}, not calls = {}",
                self.calls
            ));
        }
        let bytes = self.bytes_log2.iter().try_fold(0u64, |a, &c| a.checked_add(c));
        if bytes != Some(self.bytes) {
            return Some(format!(
                "bytes_log2 adds up to {bytes:?}, not bytes = {}",
                self.bytes
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_15_populated_bytes_is_the_sum_of_each_range_up_to_the_cap() {
        let mut a = AnonMaps::default();
        for len in [64 << 10, 64 << 10, 132 << 10, 2 << 20, 6 << 20, 100 << 20] {
            a.record(len);
        }
        assert_eq!(a.calls, 6);
        assert_eq!(a.inconsistency(), None);
        let cap = 4u64 << 20;
        let want = (64 + 64 + 132) * 1024 + (2 << 20) + 2 * cap;
        assert_eq!(a.populated_bytes(cap), want as f64);
        assert_eq!(a.populated_bytes(0), 0.0);
        // A cap above every range: all of them.
        assert_eq!(a.populated_bytes(1 << 40), a.bytes as f64);
        // A cap inside a bucket: bounded from above, never below the exact sum.
        let exact = (64 + 64) * 1024 + 4 * (100 << 10);
        let bound = a.populated_bytes(100 << 10);
        assert!(bound >= exact as f64 && bound <= a.bytes as f64, "{bound}");
        // The tables' round trip and merge.
        let b = AnonMaps::from_buckets(&a.hist_log2_bytes, &a.bytes_log2);
        assert_eq!(b, a);
        let mut c = b.clone();
        c.merge(&a);
        assert_eq!((c.calls, c.bytes), (12, 2 * a.bytes));
        assert_eq!(c.populated_bytes(cap), 2.0 * want as f64);
        assert_eq!(anon_bucket(0), 0);
        assert_eq!(anon_bucket(4096), 12);
        assert_eq!(anon_bucket(u64::MAX), ANON_BUCKETS - 1);
    }

    #[test]
    fn issue_15_inconsistent_anon_maps_are_named() {
        let mut a = AnonMaps::default();
        a.record(4096);
        a.calls = 2;
        assert!(a.inconsistency().expect("calls").contains("calls = 2"));
        let mut b = AnonMaps::default();
        b.record(4096);
        b.bytes_log2.push(0);
        assert!(b.inconsistency().expect("lengths").contains("as long"));
    }
}
