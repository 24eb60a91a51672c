//! Summary statistics of a benchmark's samples.

/// Mean ± standard deviation, and order statistics, in nanoseconds.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Stats {
    pub n: usize,
    pub mean: f64,
    pub sd: f64,
    pub min: f64,
    pub median: f64,
    pub p99: f64,
}

impl Stats {
    pub fn of(samples: &[f64]) -> Stats {
        if samples.is_empty() {
            return Stats::default();
        }
        let n = samples.len();
        let mean = samples.iter().sum::<f64>() / n as f64;
        let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        let mut s = samples.to_vec();
        s.sort_by(f64::total_cmp);
        let at = |q: f64| s[((n as f64 - 1.0) * q).round() as usize];
        Stats {
            n,
            mean,
            sd: var.sqrt(),
            min: s[0],
            median: at(0.5),
            p99: at(0.99),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_statistics_of_a_known_sample() {
        let s = Stats::of(&(1..=100).map(f64::from).collect::<Vec<_>>());
        assert_eq!((s.n, s.min, s.p99), (100, 1.0, 99.0));
        assert!((s.mean - 50.5).abs() < 1e-9);
        assert!(s.median == 50.0 || s.median == 51.0);
        assert_eq!(Stats::of(&[]), Stats::default());
    }
}
