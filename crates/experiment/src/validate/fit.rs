//! The paper's "fitted" column (§5.3): the one γ per workload and target that makes the refined
//! model agree best with that workload's own measurements. It is what the model can reach at best
//! with one free parameter, set beside the accuracy with parameters estimated apart from the runs.

/// The γ range searched: a quarter to four times Linux's compute speed.
pub const GAMMA_RANGE: (f64, f64) = (0.25, 4.0);

/// The γ in [`GAMMA_RANGE`] that maximises `accuracy(γ)` (golden-section search on ln γ, 60
/// steps; accuracy is unimodal in γ for a single workload's points). `accuracy` returns `None`
/// where the model cannot be evaluated; such γ count as worst.
pub fn best_gamma(accuracy: impl Fn(f64) -> Option<f64>) -> f64 {
    let f = |x: f64| accuracy(x.exp()).unwrap_or(f64::NEG_INFINITY);
    let (mut a, mut b) = (GAMMA_RANGE.0.ln(), GAMMA_RANGE.1.ln());
    let r = (5f64.sqrt() - 1.0) / 2.0;
    let mut c = b - r * (b - a);
    let mut d = a + r * (b - a);
    let (mut fc, mut fd) = (f(c), f(d));
    for _ in 0..60 {
        if fc >= fd {
            b = d;
            d = c;
            fd = fc;
            c = b - r * (b - a);
            fc = f(c);
        } else {
            a = c;
            c = d;
            fc = fd;
            d = a + r * (b - a);
            fd = f(d);
        }
    }
    ((a + b) / 2.0).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_15_the_fit_finds_the_peak_of_a_unimodal_accuracy() {
        let g = best_gamma(|g| Some(100.0 - (g - 1.3).abs()));
        assert!((g - 1.3).abs() < 1e-6, "{g}");
        // At the edge of the range when the peak lies beyond it.
        let g = best_gamma(Some);
        assert!((g - GAMMA_RANGE.1).abs() < 1e-6, "{g}");
    }
}
