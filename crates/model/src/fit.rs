//! Fitting γ to a measured speedup, aggregating, and accuracy (paper §5.3).

use crate::error::ModelError;
use crate::refined::Params;
use crate::workload::Workload;
use std::collections::BTreeSet;

/// Solves the naïve model for γ: S = 1/(p + (1 − p)/γ)  ⇒  γ = (1 − p) / (1/S − p).
pub fn fit_gamma_naive(p: f64, measured: f64) -> Result<f64, ModelError> {
    if !(0.0..=1.0).contains(&p) {
        return Err(ModelError::P(p));
    }
    positive("measured speedup", measured)?;
    let denom = 1.0 / measured - p;
    if denom <= 0.0 {
        return Err(ModelError::Unreachable {
            measured,
            why: format!("the naïve model is bounded by 1/p = {:.4}", 1.0 / p),
        });
    }
    Ok((1.0 - p) / denom)
}

/// Solves the refined model (eq. 11) for γ in closed form. With R = t_remote + t_local (independent of
/// γ): S = t_nd / (C/γ + R)  ⇒  γ = C / (t_nd/S − R).
pub fn fit_gamma_refined(
    w: &Workload,
    delegated: &BTreeSet<String>,
    params: &Params,
    measured: f64,
) -> Result<f64, ModelError> {
    positive("measured speedup", measured)?;
    positive("C (compute time)", w.c)?;
    // Any γ gives the same R; evaluate at γ = 1.
    let mut at_one = params.clone();
    at_one.gamma = 1.0;
    let pr = crate::refined(w, delegated, &at_one)?;
    let r = pr.t_remote + pr.t_local;
    let denom = pr.t_nd / measured - r;
    if denom <= 0.0 {
        return Err(ModelError::Unreachable {
            measured,
            why: format!(
                "even γ → ∞ gives S_r = t_nd/(t_remote + t_local) = {:.6}",
                if r > 0.0 { pr.t_nd / r } else { f64::INFINITY }
            ),
        });
    }
    Ok(w.c / denom)
}

fn positive(what: &str, v: f64) -> Result<(), ModelError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(ModelError::Positive {
            what: what.into(),
            value: v,
        })
    }
}

/// The median of the finite values (mean of the two middle values for an even count); `None` when
/// empty — multios-stats' one rule.
pub use multios_stats::median;

/// Accuracy = 100 − MAPE, with MAPE = (100/n) Σ |predicted − measured| / |measured| (the paper's
/// definition in §5.3).
pub fn accuracy(pairs: &[(f64, f64)]) -> Result<f64, ModelError> {
    if pairs.is_empty() {
        return Err(ModelError::NoPairs);
    }
    let n = pairs.len() as f64;
    let mut sum = 0.0;
    for (k, &(pred, meas)) in pairs.iter().enumerate() {
        positive("measured value", meas.abs())?;
        // each pair's share of the mean, in %: finite, or the accuracy printed was -inf %
        sum += pair_error(&format!("pair {}", k + 1), pred, meas)? / n;
    }
    if !sum.is_finite() {
        return Err(ModelError::PairsApart {
            at: "the pairs".into(),
            predicted: f64::NAN,
            measured: f64::NAN,
        });
    }
    Ok(100.0 - sum)
}

/// 100·|predicted − measured| / |measured|, refused when not finite (`1e308,1e-300`).
fn pair_error(at: &str, predicted: f64, measured: f64) -> Result<f64, ModelError> {
    let e = 100.0 * ((predicted - measured) / measured).abs();
    if e.is_finite() {
        Ok(e)
    } else {
        Err(ModelError::PairsApart {
            at: at.into(),
            predicted,
            measured,
        })
    }
}

/// Reads (predicted, measured) pairs from CSV text with columns name,predicted,measured (the
/// last two columns are taken; a header naming "predicted" and blank lines are skipped). Errors
/// name `source` and the line.
pub fn parse_pairs(source: &str, text: &str) -> Result<Vec<(f64, f64)>, ModelError> {
    let mut pairs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        if i == 0 && cols.iter().any(|c| c.eq_ignore_ascii_case("predicted")) || line.trim().is_empty() {
            continue;
        }
        let at = format!("{source}:{}", i + 1);
        let (Some(p), Some(m)) = (cols.get(cols.len().wrapping_sub(2)), cols.last()) else {
            return Err(ModelError::PairsLine { at });
        };
        let number = |column: &'static str, text: &str| {
            let v = text.parse::<f64>().map_err(|source| ModelError::PairsNumber {
                at: at.clone(),
                column,
                text: text.to_string(),
                source,
            })?;
            // NaN gave an accuracy of NaN %, a negative measured speedup an accuracy below 0.
            if !v.is_finite() || v <= 0.0 {
                return Err(ModelError::PairsValue {
                    at: at.clone(),
                    column,
                    value: v,
                });
            }
            Ok(v)
        };
        let (p, m) = (number("predicted", p)?, number("measured", m)?);
        pair_error(&at, p, m)?;
        pairs.push((p, m));
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naive_fit_inverts() {
        let s = crate::naive(0.2, 3.0).unwrap_or(0.0);
        assert!((fit_gamma_naive(0.2, s).unwrap_or(0.0) - 3.0).abs() < 1e-12);
        assert!(matches!(
            fit_gamma_naive(0.5, 2.5),
            Err(ModelError::Unreachable { .. })
        ));
    }

    #[test]
    fn accuracy_and_median() {
        assert_eq!(accuracy(&[(1.0, 1.0), (1.1, 1.0)]).ok(), Some(95.0));
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert!(matches!(accuracy(&[]), Err(ModelError::NoPairs)));
    }

    #[test]
    fn issue_17_pairs_skip_the_header_and_blank_lines() {
        let text = "name,predicted,measured\nbt,1.5,1.4\n\nsp, 2 , 2.2\n";
        assert_eq!(
            parse_pairs("p.csv", text).expect("pairs"),
            vec![(1.5, 1.4), (2.0, 2.2)]
        );
    }

    #[test]
    fn issue_17_pair_errors_name_the_file_line_and_column() {
        let e = parse_pairs("p.csv", "bt,1.5,1.4\nsp,x,2\n").expect_err("not a number");
        assert_eq!(e.to_string(), "p.csv:2: predicted 'x' is not a number");
        assert!(std::error::Error::source(&e).is_some());
        let e = parse_pairs("p.csv", "only\n").expect_err("one column");
        assert_eq!(e.to_string(), "p.csv:1: expected name,predicted,measured");
    }

    /// Reported 2026-11-28: NaN and negative speedups in a pairs file gave an accuracy of NaN %
    /// or below 0 instead of an error naming the line.
    #[test]
    fn pairs_must_be_positive_finite_speedups() {
        for bad in ["1.0,nan", "nan,1.0", "1.0,-3", "0,1.0", "inf,1"] {
            let e = parse_pairs("p.csv", bad).expect_err(bad).to_string();
            assert!(e.contains("p.csv:1") && e.contains("not a speedup"), "{bad}: {e}");
        }
        assert_eq!(parse_pairs("p.csv", "x,1.5,1.4").ok(), Some(vec![(1.5, 1.4)]));
    }

    #[test]
    fn issue_16_pairs_too_far_apart_are_refused_naming_the_line() {
        let e = parse_pairs(
            "p.csv",
            "a,1,1
b,1e308,1e-300
",
        )
        .expect_err("inf %")
        .to_string();
        assert!(e.contains("p.csv:2") && e.contains("too far apart"), "{e}");
        let e = accuracy(&[(1.0, 1.0), (1e308, 1e-10)])
            .expect_err("inf %")
            .to_string();
        assert!(e.contains("pair 2"), "{e}");
        let a = accuracy(&[(1e300, 1.0), (1e300, 1.0)]).expect("finite");
        assert!(a.is_finite(), "{a}");
    }
}
