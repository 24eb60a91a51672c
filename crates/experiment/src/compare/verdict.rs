//! Whether a paired comparison decides between the projections (issue #15).

use crate::predict::Comparison;

/// An interval wider than this fraction of the measured speedup (10 %) is too wide to decide: a
/// threshold chosen (not measured) so that an interval as wide as the run-to-run spread issue #15
/// reports for one measurement on the reference VM (0.86–1.08) counts as saying nothing.
pub const WIDE: f64 = 0.10;

/// What the measurement says about the projections.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Verdict {
    /// False when the interval is missing or too wide to tell the projections apart.
    pub decided: bool,
    /// The projections ("naive", "refined") inside the interval.
    pub inside: Vec<&'static str>,
    pub text: String,
}

/// The verdict on `c` given the interval `ci` of its measured speedup from `pairs` pairs.
pub fn verdict(c: &Comparison, ci: Option<(f64, f64)>, pairs: usize) -> Verdict {
    let Some((lo, hi)) = ci else {
        return Verdict {
            decided: false,
            inside: Vec::new(),
            text: format!("undecided: {pairs} pair(s) give no 95 % interval (6 or more do: --runs 6)"),
        };
    };
    let inside: Vec<&'static str> = [("naive", c.naive_speedup), ("refined", c.refined_speedup)]
        .into_iter()
        .filter(|(_, s)| (lo..=hi).contains(s))
        .map(|(n, _)| n)
        .collect();
    let width = (hi - lo) / c.measured_speedup;
    let (decided, text) = if inside.len() == 2 {
        (
            false,
            format!(
                "undecided: the interval [{lo:.4}, {hi:.4}] holds both projections (more pairs, --runs, narrow it)"
            ),
        )
    } else if width.is_nan() || width > WIDE {
        (
            false,
            format!(
                "undecided: the interval [{lo:.4}, {hi:.4}] is {:.1} % of the speedup wide, more than {:.0} % \
                 (more pairs, --runs, or a quieter machine narrow it)",
                100.0 * width,
                100.0 * WIDE
            ),
        )
    } else {
        let err = |s: f64| 100.0 * (s - c.measured_speedup).abs() / c.measured_speedup;
        let text = match inside.first() {
            Some(n) => format!("the {n} projection lies in the interval [{lo:.4}, {hi:.4}]"),
            None => format!(
                "neither projection lies in the interval [{lo:.4}, {hi:.4}] (naïve off by {:.1} %, refined by {:.1} %)",
                err(c.naive_speedup),
                err(c.refined_speedup)
            ),
        };
        (true, text)
    };
    Verdict {
        decided,
        inside,
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmp(measured: f64, naive: f64, refined: f64) -> Comparison {
        Comparison {
            native_secs: 1.0,
            emulated_secs: 1.0 / measured,
            measured_speedup: measured,
            naive_speedup: naive,
            refined_speedup: refined,
            refined_secs: 1.0 / refined,
            excess_per_call_secs: None,
        }
    }

    #[test]
    fn issue_15_no_interval_or_a_wide_one_is_undecided() {
        let c = cmp(0.9, 1.0, 0.9);
        assert!(!verdict(&c, None, 5).decided);
        let v = verdict(&c, Some((0.85, 1.01)), 6);
        assert!(!v.decided && v.inside == ["naive", "refined"], "{v:?}");
        let v = verdict(&c, Some((0.8, 0.95)), 6);
        assert!(!v.decided && v.text.contains("wide"), "{v:?}");
    }

    #[test]
    fn issue_15_a_narrow_interval_names_the_projection_inside() {
        let c = cmp(0.9, 1.0, 0.9);
        let v = verdict(&c, Some((0.88, 0.92)), 6);
        assert!(v.decided && v.inside == ["refined"], "{v:?}");
        let v = verdict(&cmp(0.7, 1.0, 0.9), Some((0.69, 0.71)), 6);
        assert!(
            v.decided && v.inside.is_empty() && v.text.contains("neither"),
            "{v:?}"
        );
    }
}
