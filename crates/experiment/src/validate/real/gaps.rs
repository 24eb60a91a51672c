//! The `wakeup` term priced gap by gap (issue #15).
//!
//! A delegate that idles between calls spins for a while, then yields or sleeps; a call that
//! comes after it went to sleep pays its wake-up. Whether a call meets a sleeping delegate
//! depends on how long before it the previous call returned, not on the workload's mean spacing:
//! bzip2 -9 on 4 MiB makes 1 870 calls over 0.23 s of compute (124 µs apart on average), but
//! 1 474 of them come 4–16 µs after the previous one and five after 16–32 ms of
//! compressing. The eBPF profiler records, per call, the time since the calling thread's previous
//! call returned (`syscalls[].gap_hist_log2_ns`, log2 buckets); the term is then
//!
//!   T_wakeup = Σ_{s delegated} Σ_b h_s[b] · w(gap_b)
//!
//! with w measured by `csrc/gaps.c` at the bucket's gap ([`spacing_of_bucket`]) on the target, for
//! the buckets that hold a share of the delegated calls ([`buckets_to_measure`]); the other
//! buckets take the nearest measured one's price ([`price`]), the prices made non-decreasing in the
//! gap first ([`monotone`]). w is taken relative to the round trip of calls
//! [`PROBE_GAP_NS`] apart, which is also how f_c's own probe is measured: a call that close to the
//! previous one is priced at the probe's round trip (w = 0).
//!
//! Why spaced and not back to back: on this VM the proxy's back-to-back getppid is bimodal (the
//! supervisor has or has not gone to sleep when the next notification comes), p25 ≈ 11 µs and p75
//! ≈ 31 µs over 2·f_c within one run, so a probe's median fell on either mode (10–43 µs in the
//! suite's points) while the programs' calls cost 26–45 µs each. Calls 1–3 µs apart cost ≈ 20 µs
//! over 2·f_c in every run, at f_c 0, 10 and 50 µs (docs/BENCHMARKS.md, "The proxy's round trip,
//! back to back and spaced").
//!
//! The gap is the thread's, since its previous call of any kind: under a policy that serves some
//! calls locally, a delegated call after a local one has been apart from the previous delegated
//! call for longer than its gap says. Where no call has gaps (ptrace, imports, older profiles),
//! the term is measured at the mean spacing as before ([`super::micro::Spacing::of_workload`]).

use super::micro::Spacing;
use multios_profile::Profile;
use std::collections::{BTreeMap, BTreeSet};

/// The spacing of the calls of every round-trip probe behind a point's f_c and behind the
/// `wakeup` term's baseline (ns): the busy wait before each timed call.
pub const PROBE_GAP_NS: u64 = 2_000;

/// The first bucket a wake-up can be met in: gaps of 2^10 ns ≈ 1 µs and more.
pub const FIRST_BUCKET: usize = 10;
/// Gaps from this bucket on (≈ 4.2 ms) are all priced at its spacing: every delegate here has
/// gone to sleep long before.
pub const LAST_BUCKET: usize = 22;
/// A bucket is measured when it holds at least this share of the delegated calls …
pub const MIN_SHARE: f64 = 0.02;
/// … and at most this many buckets are measured per workload and target (the largest shares).
pub const MAX_MEASURED: usize = 6;

/// Each call's gap histogram, by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gaps(BTreeMap<String, Vec<u64>>);

impl Gaps {
    /// The profile's gaps, `None` when no call has them.
    pub fn of_profile(p: &Profile) -> Option<Gaps> {
        if !p.has_gaps() {
            return None;
        }
        Some(Gaps(
            p.syscalls
                .iter()
                .map(|c| (c.name.clone(), c.gap_hist_log2_ns.0.clone()))
                .collect(),
        ))
    }

    /// The histogram of the calls named in `names`, summed.
    pub fn of(&self, names: &BTreeSet<String>) -> Vec<u64> {
        let mut out = Vec::new();
        for (name, h) in &self.0 {
            if !names.contains(name) {
                continue;
            }
            if out.len() < h.len() {
                out.resize(h.len(), 0);
            }
            for (o, c) in out.iter_mut().zip(h) {
                *o += c;
            }
        }
        out
    }
}

/// The `gaps.c` spacing that stands for bucket `b` (gaps in [2^b, 2^(b+1)) ns): the bucket's
/// geometric middle, 2^b·√2 ns, to the nearest 100 ns, with as many calls as fit in the budget;
/// `None` below [`FIRST_BUCKET`]; buckets past [`LAST_BUCKET`] share its spacing.
pub fn spacing_of_bucket(b: usize) -> Option<Spacing> {
    if b < FIRST_BUCKET {
        return None;
    }
    let b = b.min(LAST_BUCKET);
    let mid = (1u64 << b) as f64 * std::f64::consts::SQRT_2;
    let gap_ns = ((mid / 100.0).round() as u64 * 100).max(100);
    Some(Spacing {
        calls: (super::micro::GAPS_BUDGET_NS / gap_ns)
            .clamp(super::micro::GAPS_MIN_CALLS, super::micro::GAPS_CALLS),
        gap_ns,
    })
}

/// The buckets of `h` worth a measurement: from [`FIRST_BUCKET`] on (those past [`LAST_BUCKET`]
/// counted as it), holding at least [`MIN_SHARE`] of the calls, the [`MAX_MEASURED`] largest, in
/// bucket order. When no bucket reaches the share but some calls are ≥ 1 µs apart, the largest
/// such bucket alone.
pub fn buckets_to_measure(h: &[u64]) -> Vec<usize> {
    let total: u64 = h.iter().sum();
    let folded = fold(h);
    if total == 0 || folded.is_empty() {
        return Vec::new();
    }
    let mut by_share: Vec<(usize, u64)> = folded.into_iter().collect();
    by_share.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut out: Vec<usize> = by_share
        .iter()
        .filter(|(_, c)| *c as f64 >= MIN_SHARE * total as f64)
        .take(MAX_MEASURED)
        .map(|(b, _)| *b)
        .collect();
    if out.is_empty() {
        out.push(by_share[0].0);
    }
    out.sort_unstable();
    out
}

/// `h` from [`FIRST_BUCKET`] on with the buckets past [`LAST_BUCKET`] added to it; empty buckets
/// left out.
fn fold(h: &[u64]) -> BTreeMap<usize, u64> {
    let mut out = BTreeMap::new();
    for (b, &c) in h.iter().enumerate().skip(FIRST_BUCKET) {
        if c > 0 {
            *out.entry(b.min(LAST_BUCKET)).or_insert(0) += c;
        }
    }
    out
}

/// The measured prices made non-decreasing in the gap (pool adjacent violators, equal weights):
/// a delegate left alone longer is never less asleep — it spins, then yields or sleeps, and its
/// CPU halts — so a price that falls from one bucket to a longer one is the measurement's noise
/// (one quiet proxy run: 10.9, 4.7, 16.0, 4.0 µs at 46, 93, 185 and 371 µs apart). Each run of
/// violators takes their mean.
pub fn monotone(prices: &BTreeMap<usize, f64>) -> BTreeMap<usize, f64> {
    // Blocks of (sum, count, buckets) merged while a block's mean exceeds the next one's.
    let mut blocks: Vec<(f64, usize, Vec<usize>)> = Vec::new();
    for (&b, &p) in prices {
        blocks.push((p, 1, vec![b]));
        while blocks.len() >= 2 {
            let n = blocks.len();
            let (s1, c1) = (blocks[n - 2].0, blocks[n - 2].1);
            let (s2, c2) = (blocks[n - 1].0, blocks[n - 1].1);
            if s1 / c1 as f64 <= s2 / c2 as f64 {
                break;
            }
            let last = blocks.pop().unwrap_or_default();
            if let Some(prev) = blocks.last_mut() {
                prev.0 += last.0;
                prev.1 += last.1;
                prev.2.extend(last.2);
            }
        }
    }
    let mut out = BTreeMap::new();
    for (sum, count, buckets) in blocks {
        for b in buckets {
            out.insert(b, sum / count as f64);
        }
    }
    out
}

/// T_wakeup in seconds: each bucket's calls at the price `w` gives the nearest measured bucket
/// (a tie goes to the longer gap); calls under 1 µs apart cost nothing. `None` when some calls
/// need a price and `w` has none.
pub fn price(h: &[u64], w: &BTreeMap<usize, f64>) -> Option<f64> {
    let mut total = 0.0;
    for (b, c) in fold(h) {
        let (_, &wb) = w
            .iter()
            .min_by_key(|(m, _)| (m.abs_diff(b), std::cmp::Reverse(**m)))?;
        total += c as f64 * wb;
    }
    Some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Calls under 1 µs apart cost nothing; the rest take their own bucket's price or the nearest.
    #[test]
    fn issue_15_wakeup_is_priced_gap_by_gap() {
        let mut h = vec![0u64; 26];
        h[8] = 1000; // 256–512 ns: back to back
        h[13] = 800; // 8–16 µs
        h[24] = 5; // 16–32 ms: folded into bucket 22
        let w = BTreeMap::from([(13, 1e-6), (22, 30e-6)]);
        let t = price(&h, &w).expect("priced");
        assert!((t - (800.0 * 1e-6 + 5.0 * 30e-6)).abs() < 1e-12, "{t}");
        // A bucket between two measured ones takes the nearer; a tie the longer gap.
        let mut h2 = vec![0u64; 20];
        h2[15] = 10; // 2 from 13, 7 from 22
        h2[17] = 1;
        let w2 = BTreeMap::from([(13, 1e-6), (21, 9e-6)]);
        let t2 = price(&h2, &w2).expect("priced");
        assert!((t2 - (10.0 * 1e-6 + 9e-6)).abs() < 1e-12, "{t2}");
        assert_eq!(price(&h, &BTreeMap::new()), None);
        assert_eq!(price(&[5, 6, 7], &BTreeMap::new()), Some(0.0));
    }

    /// bzip2's shape: the two busy buckets are measured, the five long gaps too only when they
    /// reach the share; a workload whose calls all come back to back measures nothing.
    #[test]
    fn issue_15_the_busy_buckets_are_measured() {
        let mut h = vec![0u64; 26];
        h[7] = 181;
        h[12] = 642;
        h[13] = 832;
        h[14] = 9;
        h[24] = 5;
        assert_eq!(buckets_to_measure(&h), vec![12, 13]);
        h[24] = 100;
        assert_eq!(buckets_to_measure(&h), vec![12, 13, 22]);
        assert!(buckets_to_measure(&[0, 0, 900, 100]).is_empty());
        let mut few = vec![0u64; 30];
        few[5] = 10_000;
        few[20] = 3;
        assert_eq!(buckets_to_measure(&few), vec![20]);
    }

    /// Prices that fall with a longer gap are pooled; rising ones stay as measured.
    #[test]
    fn issue_15_wakeup_prices_never_fall_with_a_longer_gap() {
        let m = monotone(&BTreeMap::from([
            (13, 3.7),
            (14, 5.0),
            (15, 10.9),
            (16, 4.7),
            (17, 16.0),
            (18, 4.0),
        ]));
        let v: Vec<f64> = m.values().copied().collect();
        let want = [3.7, 5.0, 7.8, 7.8, 10.0, 10.0];
        for (a, b) in v.iter().zip(want) {
            assert!((a - b).abs() < 1e-9, "{v:?}");
        }
        let up = BTreeMap::from([(10, 0.0), (12, 1.0), (20, 9.0)]);
        assert_eq!(monotone(&up), up);
        assert!(monotone(&BTreeMap::new()).is_empty());
        // A fall at the start is pooled with everything it exceeds.
        let m = monotone(&BTreeMap::from([(10, 9.0), (11, 1.0), (12, 2.0)]));
        assert!(m.values().all(|p| (p - 4.0).abs() < 1e-9), "{m:?}");
    }

    #[test]
    fn issue_15_a_bucket_is_measured_at_its_middle() {
        assert_eq!(spacing_of_bucket(9), None);
        let s = spacing_of_bucket(13).expect("13");
        assert_eq!(s.gap_ns, 11_600);
        assert_eq!(s.calls, super::super::micro::GAPS_CALLS);
        let far = spacing_of_bucket(30).expect("30");
        assert_eq!(far, spacing_of_bucket(LAST_BUCKET).expect("22"));
        assert_eq!(far.calls, super::super::micro::GAPS_MIN_CALLS);
    }
}
