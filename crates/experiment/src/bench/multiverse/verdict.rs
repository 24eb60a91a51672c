//! The verdicts of `bench multiverse` (issue #13), decided from paired intervals, and the runs
//! that stand out.
//!
//! Each of the targets is a limit on a paired estimate: the median of the per-pass
//! comparisons with its distribution-free 95 % interval (`multios_stats::paired`). A target is
//! *met* when the whole interval is on its side of the limit, *not met* when the whole interval is
//! on the other side, and *undecided* when the interval straddles the limit (or there is no
//! interval: fewer than 6 passes). A median alone never decides: single slow runs move it.
//!
//! The targets (issue #13, "What it must show"):
//! * every output identical to native (decided by comparison, no interval);
//! * the LWK within 2 % of native or faster: LWK / native ≤ 1.02;
//! * the overrides at least as fast as without: LWK + overrides / LWK ≤ 1 + the same 2 %
//!   (two equally fast variants give an interval around 1, which no finite number of passes
//!   puts below 1 itself; the issue's own tolerance for the LWK is the margin);
//! * the model's projection of the overhead within 10 % of the measured one:
//!   |projected − measured| ≤ 0.1 × measured, i.e. measured ∈ [projected / 1.1, projected / 0.9],
//!   with the paired interval of the measured overhead (LWK − native per pass).

use serde::Serialize;

/// How a target came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Met,
    NotMet,
    Undecided,
}

impl Decision {
    pub fn word(self) -> &'static str {
        match self {
            Decision::Met => "met",
            Decision::NotMet => "NOT MET",
            Decision::Undecided => "undecided",
        }
    }
}

/// One target on one benchmark.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub benchmark: String,
    /// A short name of the target, for tables.
    pub key: &'static str,
    /// Which target ("identical output", "LWK / native ≤ 1.02", …).
    pub target: String,
    /// The paired median (or the compared value) and its 95 % interval.
    pub value: f64,
    pub interval: Option<(f64, f64)>,
    pub decision: Decision,
    /// Why, in words (what the interval lies against).
    pub note: String,
}

/// The LWK's tolerance against native (and the overrides' against the plain LWK).
pub const WITHIN: f64 = 0.02;
/// The projection's tolerance against the measured overhead.
pub const PROJECTION_WITHIN: f64 = 0.10;
/// A run slower than this times its variant's median is reported as an outlier.
pub const OUTLIER_FACTOR: f64 = 1.25;

/// Whether a paired estimate with interval `ci` is at most `limit`.
pub fn at_most(ci: Option<(f64, f64)>, limit: f64) -> Decision {
    match ci {
        Some((_, hi)) if hi <= limit => Decision::Met,
        Some((lo, _)) if lo > limit => Decision::NotMet,
        _ => Decision::Undecided,
    }
}

/// Whether `projected` is within `tol` (relative) of a measured quantity whose paired interval is
/// `ci`: met when every value of the interval is, not met when none is.
pub fn projection_within(projected: f64, ci: Option<(f64, f64)>, tol: f64) -> Decision {
    let Some((lo, hi)) = ci else {
        return Decision::Undecided;
    };
    if !projected.is_finite() || !lo.is_finite() || !hi.is_finite() {
        return Decision::Undecided;
    }
    // |p − m| ≤ tol·m  ⟺  p/(1+tol) ≤ m ≤ p/(1−tol), for m > 0 (a measured overhead ≤ 0 is
    // never within a relative tolerance of anything but itself).
    let (want_lo, want_hi) = (projected / (1.0 + tol), projected / (1.0 - tol));
    let ok = |m: f64| m > 0.0 && m >= want_lo && m <= want_hi;
    if ok(lo) && ok(hi) {
        Decision::Met
    } else if hi < want_lo || lo > want_hi || hi <= 0.0 {
        Decision::NotMet
    } else {
        Decision::Undecided
    }
}

/// The identical-output target.
pub fn identical(benchmark: &str, same: bool) -> Verdict {
    Verdict {
        benchmark: benchmark.to_string(),
        key: "identical output",
        target: "every output identical to native".into(),
        value: if same { 1.0 } else { 0.0 },
        interval: None,
        decision: if same { Decision::Met } else { Decision::NotMet },
        note: if same {
            "every run's stdout equals the first native run's".into()
        } else {
            "a run's stdout differs from native's".into()
        },
    }
}

/// A ratio target `value [ci] ≤ limit`.
pub fn ratio_at_most(
    benchmark: &str,
    key: &'static str,
    target: &str,
    value: f64,
    ci: Option<(f64, f64)>,
    limit: f64,
) -> Verdict {
    let decision = at_most(ci, limit);
    let note = match (decision, ci) {
        (_, None) => "no 95 % interval (fewer than 6 passes)".to_string(),
        (Decision::Met, Some((_, hi))) => format!("the interval ends at {hi:.3} ≤ {limit:.2}"),
        (Decision::NotMet, Some((lo, _))) => format!("the interval starts at {lo:.3} > {limit:.2}"),
        (Decision::Undecided, Some((lo, hi))) => {
            format!("the interval [{lo:.3}, {hi:.3}] straddles {limit:.2}")
        }
    };
    Verdict {
        benchmark: benchmark.to_string(),
        key,
        target: target.to_string(),
        value,
        interval: ci,
        decision,
        note,
    }
}

/// The projection target: `projected` against the measured overhead `measured [ci]`.
pub fn projection(
    benchmark: &str,
    key: &'static str,
    target: &str,
    projected: f64,
    measured: f64,
    ci: Option<(f64, f64)>,
) -> Verdict {
    let decision = projection_within(projected, ci, PROJECTION_WITHIN);
    let (lo, hi) = (
        projected / (1.0 + PROJECTION_WITHIN),
        projected / (1.0 - PROJECTION_WITHIN),
    );
    let note = match ci {
        None => "no 95 % interval of the measured overhead (fewer than 6 passes)".to_string(),
        Some((a, b)) => format!(
            "projected {:.1} ms; within 10 % needs the measured overhead in [{:.1}, {:.1}] ms, its interval is [{:.1}, {:.1}] ms",
            projected * 1e3,
            lo * 1e3,
            hi * 1e3,
            a * 1e3,
            b * 1e3
        ),
    };
    Verdict {
        benchmark: benchmark.to_string(),
        key,
        target: target.to_string(),
        value: measured,
        interval: ci,
        decision,
        note,
    }
}

/// A run that took more than [`OUTLIER_FACTOR`] × its variant's median.
#[derive(Debug, Clone, Serialize)]
pub struct Outlier {
    pub variant: String,
    /// The measured pass it was in (0-based; warm-up runs are not passes).
    pub pass: usize,
    pub wall_s: f64,
    /// Its wall over the variant's median wall.
    pub over_median: f64,
}

/// The passes whose wall in `walls` exceeds `factor` × the median of `walls`, with that ratio.
pub fn slow_runs(walls: &[f64], factor: f64) -> Vec<(usize, f64)> {
    let Some(m) = multios_stats::median(walls) else {
        return Vec::new();
    };
    if m <= 0.0 {
        return Vec::new();
    }
    walls
        .iter()
        .enumerate()
        .filter(|(_, w)| **w > factor * m)
        .map(|(i, w)| (i, w / m))
        .collect()
}

/// How many measured passes a benchmark gets: `runs` when given, else enough whole passes of
/// `pass_s` (one run of every variant, timed by the warm-up) to fill `budget_s`, at least
/// `min` (12: a 95 % interval that leaves out the two most extreme pairs on each side) and at most
/// `max`.
pub fn passes(runs: Option<usize>, budget_s: f64, pass_s: f64, min: usize, max: usize) -> usize {
    match runs {
        Some(n) => n,
        None if pass_s > 0.0 && budget_s.is_finite() => {
            ((budget_s / pass_s).ceil() as usize).clamp(min, max.max(min))
        }
        None => min,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_decides_only_when_it_is_on_one_side() {
        assert_eq!(at_most(Some((0.97, 1.015)), 1.02), Decision::Met);
        assert_eq!(at_most(Some((1.021, 1.2)), 1.02), Decision::NotMet);
        // The median could be anything: the interval straddles the limit.
        assert_eq!(at_most(Some((0.98, 1.05)), 1.02), Decision::Undecided);
        assert_eq!(at_most(None, 1.02), Decision::Undecided);
        // The limit itself counts as within.
        assert_eq!(at_most(Some((1.0, 1.02)), 1.02), Decision::Met);
        let v = ratio_at_most(
            "fasta",
            "lwk",
            "LWK / native ≤ 1.02",
            1.01,
            Some((0.99, 1.3)),
            1.02,
        );
        assert_eq!(v.decision, Decision::Undecided);
        assert!(v.note.contains("straddles"), "{}", v.note);
        let v = ratio_at_most("fasta", "x", "x", 1.01, None, 1.02);
        assert_eq!(v.decision, Decision::Undecided);
        assert!(v.note.contains("fewer than 6"), "{}", v.note);
    }

    #[test]
    fn the_projection_is_within_ten_percent_only_if_the_whole_interval_is() {
        // Projected 100 ms: the measured overhead must be in [90.9, 111.1] ms.
        assert_eq!(projection_within(0.100, Some((0.095, 0.105)), 0.1), Decision::Met);
        assert_eq!(
            projection_within(0.100, Some((0.120, 0.200)), 0.1),
            Decision::NotMet
        );
        assert_eq!(
            projection_within(0.100, Some((0.050, 0.080)), 0.1),
            Decision::NotMet
        );
        assert_eq!(
            projection_within(0.100, Some((0.095, 0.150)), 0.1),
            Decision::Undecided
        );
        assert_eq!(projection_within(0.100, None, 0.1), Decision::Undecided);
        // A measured overhead at or below zero is never within a relative tolerance of 100 ms.
        assert_eq!(
            projection_within(0.100, Some((-0.02, 0.0)), 0.1),
            Decision::NotMet
        );
        assert_eq!(
            projection_within(f64::NAN, Some((0.1, 0.1)), 0.1),
            Decision::Undecided
        );
        let v = projection("n-body", "paper", "paper + fixed", 0.1, 0.1, Some((0.099, 0.101)));
        assert_eq!(v.decision, Decision::Met);
        assert!(v.note.contains("[90.9, 111.1] ms"), "{}", v.note);
    }

    #[test]
    fn slow_runs_are_flagged_against_their_variants_median() {
        let walls = [0.57, 0.58, 0.845, 0.56, 0.57, 0.72, 0.59];
        let slow = slow_runs(&walls, OUTLIER_FACTOR);
        // Median 0.58: 0.845 is 1.46×, 0.72 is 1.24× (not flagged).
        assert_eq!(slow.len(), 1);
        assert_eq!(slow[0].0, 2);
        assert!((slow[0].1 - 0.845 / 0.58).abs() < 1e-12);
        assert!(slow_runs(&[], OUTLIER_FACTOR).is_empty());
        assert!(slow_runs(&[0.5, 0.5, 0.5], OUTLIER_FACTOR).is_empty());
    }

    #[test]
    fn the_number_of_passes_fills_the_budget_within_bounds() {
        assert_eq!(passes(Some(1), 24.0, 3.0, 12, 40), 1);
        assert_eq!(passes(None, 24.0, 1.5, 12, 40), 16);
        assert_eq!(passes(None, 24.0, 4.0, 12, 40), 12);
        assert_eq!(passes(None, 24.0, 0.1, 12, 40), 40);
        assert_eq!(passes(None, 24.0, 0.0, 12, 40), 12);
        assert_eq!(identical("x", false).decision, Decision::NotMet);
    }
}
