//! Order statistics: the median and quantiles of a series, under one rule.

/// The value at quantile `q` (clamped to 0..=1) of a **sorted** slice, by linear interpolation
/// between the two nearest order statistics (Hyndman–Fan type 7); NaN when empty.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// The median of a **sorted** slice: the middle value, or the mean of the two middle values of an
/// even count ([`quantile`] at ½); NaN when empty.
pub fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The median of the finite values of `values` (in any order): the middle value, or the mean of the
/// two middle values of an even count; `None` when there is no finite value.
pub fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(median_sorted(&v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_rule_for_even_odd_empty_and_non_finite() {
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[f64::NAN, f64::INFINITY]), None);
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[f64::NAN, 5.0, 1.0]), Some(3.0));
        assert!(median_sorted(&[]).is_nan());
        assert!(quantile(&[], 0.5).is_nan());
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0, 5.0], 0.25), 2.0);
        assert_eq!(quantile(&[0.0, 10.0], 0.99), 9.9);
        assert_eq!(quantile(&[7.0], 0.99), 7.0);
    }

    proptest! {
        #[test]
        fn the_median_is_the_quantile_at_one_half(mut v in proptest::collection::vec(-1e6f64..1e6, 1..50)) {
            let m = median(&v).expect("finite, non-empty");
            v.sort_by(f64::total_cmp);
            prop_assert_eq!(m, median_sorted(&v));
            prop_assert!((m - quantile(&v, 0.5)).abs() <= 1e-9 * m.abs().max(1.0));
        }

        #[test]
        fn the_median_splits_the_series(v in proptest::collection::vec(-1e6f64..1e6, 1..50)) {
            let m = median(&v).expect("finite, non-empty");
            let below = v.iter().filter(|x| **x < m).count();
            let above = v.iter().filter(|x| **x > m).count();
            prop_assert!(below <= v.len() / 2 && above <= v.len() / 2);
        }

        #[test]
        fn quantiles_are_monotone_and_bounded(mut v in proptest::collection::vec(-1e6f64..1e6, 1..50),
                                              a in 0.0f64..1.0, b in 0.0f64..1.0) {
            v.sort_by(f64::total_cmp);
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let (ql, qh) = (quantile(&v, lo), quantile(&v, hi));
            prop_assert!(ql <= qh);
            prop_assert!(v[0] <= ql && qh <= v[v.len() - 1]);
        }

        #[test]
        fn the_median_ignores_order(v in proptest::collection::vec(-1e6f64..1e6, 1..50)) {
            let mut r = v.clone();
            r.reverse();
            prop_assert_eq!(median(&v), median(&r));
        }
    }
}
