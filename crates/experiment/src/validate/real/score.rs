//! Accuracy per workload and target (issue #15): 100 − MAPE of the estimated projection, of the
//! projection with γ fitted to the workload's own points, of the estimated projection with each
//! correction term alone and with all of them, and of the projection with all of them and γ
//! fitted (the paper's fitted column on top of the corrected model).

use super::{project, Accuracy, Model, Point, WorkloadResult};
use crate::validate::fit;
use crate::ExperimentError;
use multios_model as model;
use std::collections::BTreeMap;

/// The projection columns of the terms, scored over `points`: every term on, each alone, and
/// every term but one.
#[allow(clippy::type_complexity)]
fn terms_accuracy<'p>(
    points: impl Iterator<Item = &'p Point> + Clone,
) -> Result<(Option<f64>, BTreeMap<String, f64>, BTreeMap<String, f64>), ExperimentError> {
    let all: Option<Vec<(f64, f64)>> = points
        .clone()
        .map(|p| p.with_terms.map(|t| (t, p.measured)))
        .collect();
    let all = match all {
        Some(v) if !v.is_empty() => Some(model::accuracy(&v)?),
        _ => None,
    };
    let each = by_name(points.clone(), |p| &p.per_term)?;
    let without = by_name(points, |p| &p.without_term)?;
    Ok((all, each, without))
}

/// The accuracy of each named projection column of `points` (`col`), by name.
fn by_name<'p>(
    points: impl Iterator<Item = &'p Point> + Clone,
    col: impl Fn(&Point) -> &BTreeMap<String, f64>,
) -> Result<BTreeMap<String, f64>, ExperimentError> {
    let mut out = BTreeMap::new();
    let names: Vec<String> = points
        .clone()
        .next()
        .map(|p| col(p).keys().cloned().collect())
        .unwrap_or_default();
    for name in names {
        let v: Option<Vec<(f64, f64)>> = points
            .clone()
            .map(|p| col(p).get(&name).map(|t| (*t, p.measured)))
            .collect();
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            out.insert(name, model::accuracy(&v)?);
        }
    }
    Ok(out)
}

/// The noise ceiling of a set of points: 100 · (1 − the mean of their `ceiling_error`), if every
/// point has one.
fn ceiling<'p>(points: impl Iterator<Item = &'p Point>) -> Option<f64> {
    let e: Option<Vec<f64>> = points.map(|p| p.ceiling_error).collect();
    let e = e.filter(|e| !e.is_empty())?;
    Some(100.0 * (1.0 - e.iter().sum::<f64>() / e.len() as f64))
}

fn valid(p: &Point, target: &str) -> bool {
    p.target == target && p.invalid.is_none() && p.measured.is_finite()
}

/// The corrected model (every term the point carries) with one γ fitted to `t`'s valid points:
/// its accuracy and γ, and each point's projection at that γ; `None` when the points carry no
/// terms (`--terms none`).
fn fit_with_terms(
    m: &Model<'_>,
    t: &str,
    points: &mut [Point],
) -> Result<Option<(f64, f64)>, ExperimentError> {
    let sel: Vec<&Point> = points.iter().filter(|p| valid(p, t)).collect();
    if sel.is_empty() || sel.iter().any(|p| p.with_terms.is_none()) {
        return Ok(None);
    }
    let at = |p: &Point, g: f64| m.with_gamma(t, &p.policy, p.fc_model_s, g, &p.terms);
    let predict = |g: f64| -> Result<Vec<(f64, f64)>, ExperimentError> {
        sel.iter().map(|p| Ok((at(p, g)?, p.measured))).collect()
    };
    let gamma = fit::best_gamma(|g| predict(g).ok().and_then(|v| model::accuracy(&v).ok()));
    let acc = model::accuracy(&predict(gamma)?)?;
    for p in points
        .iter_mut()
        .filter(|p| p.target == t && p.with_terms.is_some())
    {
        p.fitted_with_terms = Some(at(p, gamma)?);
    }
    Ok(Some((acc, gamma)))
}

/// Fits γ per target (on the paper's model, and with `--terms` on the corrected one), fills each
/// point's fitted projections, returns the accuracies.
pub fn score(
    m: &Model<'_>,
    name: &str,
    points: &mut [Point],
    notes: &mut Vec<String>,
) -> Result<Vec<Accuracy>, ExperimentError> {
    let mw = m.workload;
    let mut targets: Vec<String> = points.iter().map(|p| p.target.clone()).collect();
    targets.dedup();
    let mut out = Vec::new();
    for t in targets {
        let sel: Vec<(String, f64, f64)> = points
            .iter()
            .filter(|p| valid(p, &t))
            .map(|p| (p.policy.clone(), p.fc_model_s, p.measured))
            .collect();
        let skipped = points.iter().filter(|p| p.target == t && !valid(p, &t)).count();
        if skipped > 0 {
            notes.push(format!(
                "{t}: {skipped} invalid point(s) left out of the accuracy"
            ));
        }
        if sel.is_empty() {
            continue;
        }
        let predict = |g: f64| -> Result<Vec<(f64, f64)>, ExperimentError> {
            sel.iter()
                .map(|(pol, fc, m)| Ok((project(mw, &t, pol, g, *fc)?.0, *m)))
                .collect()
        };
        let estimated = model::accuracy(&predict(1.0)?)?;
        // The run-to-run noise of this workload on this target: the A/A pairs of all its valid points.
        let aa: Vec<f64> = points
            .iter()
            .filter(|p| valid(p, &t))
            .flat_map(|p| p.aa_log_ratios.iter().copied())
            .collect();
        for p in points.iter_mut().filter(|p| valid(p, &t)) {
            p.ceiling_error = multios_stats::ceiling_error(&aa, p.pairs);
        }
        let noise_ceiling = ceiling(points.iter().filter(|p| valid(p, &t)));
        let (with_terms, per_term, without_term) = terms_accuracy(points.iter().filter(|p| valid(p, &t)))?;
        let gamma = fit::best_gamma(|g| predict(g).ok().and_then(|v| model::accuracy(&v).ok()));
        let fitted = model::accuracy(&predict(gamma)?)?;
        for p in points.iter_mut().filter(|p| p.target == t) {
            p.fitted = project(mw, &p.target, &p.policy, gamma, p.fc_model_s)?.0;
        }
        let fwt = fit_with_terms(m, &t, points)?;
        out.push(Accuracy {
            workload: name.to_string(),
            target: t,
            points: sel.len(),
            estimated,
            fitted,
            fitted_gamma: gamma,
            with_terms,
            fitted_with_terms: fwt.map(|f| f.0),
            fitted_with_terms_gamma: fwt.map(|f| f.1),
            noise_ceiling,
            per_term,
            without_term,
        });
    }
    Ok(out)
}

/// Accuracy over every workload per target: 100 − MAPE over all their valid points (every column),
/// with `workload` "(all)".
pub fn overall(results: &[WorkloadResult]) -> Result<Vec<Accuracy>, ExperimentError> {
    let mut targets: Vec<String> = results
        .iter()
        .flat_map(|r| r.points.iter().map(|p| p.target.clone()))
        .collect();
    targets.sort();
    targets.dedup();
    let mut out = Vec::new();
    for t in targets {
        let pts: Vec<&Point> = results
            .iter()
            .flat_map(|r| &r.points)
            .filter(|p| valid(p, &t))
            .collect();
        if pts.is_empty() {
            continue;
        }
        let est: Vec<(f64, f64)> = pts.iter().map(|p| (p.projected, p.measured)).collect();
        let fit: Vec<(f64, f64)> = pts.iter().map(|p| (p.fitted, p.measured)).collect();
        let (with_terms, per_term, without_term) = terms_accuracy(pts.iter().copied())?;
        let fwt: Option<Vec<(f64, f64)>> = pts
            .iter()
            .map(|p| p.fitted_with_terms.map(|f| (f, p.measured)))
            .collect();
        let fitted_with_terms = match fwt {
            Some(v) => Some(model::accuracy(&v)?),
            None => None,
        };
        out.push(Accuracy {
            workload: "(all)".into(),
            target: t,
            points: pts.len(),
            estimated: model::accuracy(&est)?,
            fitted: model::accuracy(&fit)?,
            fitted_gamma: f64::NAN,
            with_terms,
            fitted_with_terms,
            fitted_with_terms_gamma: None,
            noise_ceiling: ceiling(pts.iter().copied()),
            per_term,
            without_term,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use multios_model::Call;

    pub(crate) fn point(target: &str, policy: &str, fc: f64, measured: f64) -> Point {
        Point {
            workload: "w".into(),
            target: target.into(),
            policy: policy.into(),
            fc_s: fc,
            fc_model_s: fc,
            delegated_calls: 0,
            measured,
            measured_ci: None,
            native_s: 1.0,
            target_s: 1.0 / measured,
            projected: f64::NAN,
            fitted: f64::NAN,
            with_terms: None,
            per_term: BTreeMap::new(),
            without_term: BTreeMap::new(),
            fitted_with_terms: None,
            terms: model::Terms::none(),
            gamma_delegation: None,
            procs_serial: None,
            invalid: None,
            pairs: 6,
            aa_log_ratios: Vec::new(),
            ceiling_error: None,
            level_guard: true,
            level_ns: None,
            fc_level_ns: None,
            level_repeats: 0,
            level_unsteady: 0,
            levels: Default::default(),
        }
    }

    fn of(w: &model::Workload) -> Model<'_> {
        Model {
            workload: w,
            tree: None,
            cpus: 1,
        }
    }

    /// `workload()`'s result with `points` and their accuracies.
    fn result(points: Vec<Point>, accuracy: Vec<Accuracy>) -> WorkloadResult {
        WorkloadResult {
            name: "w".into(),
            argv: vec!["w".into()],
            c_s: 1.0,
            p: 0.01,
            calls: 10_000,
            processes: 1,
            wall_s: 1.01,
            points,
            accuracy,
            notes: Vec::new(),
        }
    }

    fn workload() -> model::Workload {
        model::Workload {
            c: 1.0,
            calls: vec![Call {
                name: "write".into(),
                n: 10_000,
                g: 0.01,
            }],
        }
    }

    #[test]
    fn issue_15_a_measurement_the_model_makes_exactly_scores_100_and_invalid_points_are_left_out() {
        let w = workload();
        // What the refined model projects at γ = 1 with f_c = 10 µs: t_nd = 1.01, t_d = 1.01 + 0.2.
        let exact = project(&w, "emulate:shm", "all", 1.0, 10e-6).expect("projects").0;
        assert!((exact - 1.01 / 1.21).abs() < 1e-12, "{exact}");
        let mut pts = vec![
            point("emulate:shm", "all", 10e-6, exact),
            point("emulate:shm", "all", 10e-6, 0.1),
        ];
        pts[1].invalid = Some("pair 1 is invalid".into());
        let mut notes = Vec::new();
        let acc = score(&of(&w), "w", &mut pts, &mut notes).expect("scores");
        assert_eq!(acc.len(), 1);
        assert!((acc[0].estimated - 100.0).abs() < 1e-9, "{acc:?}");
        assert!((acc[0].fitted - 100.0).abs() < 1e-6, "{acc:?}");
        assert_eq!(acc[0].points, 1);
        assert!(notes[0].contains("1 invalid"), "{notes:?}");
    }

    #[test]
    fn issue_15_the_fitted_column_is_at_least_the_estimated_one() {
        let w = workload();
        let mut pts = vec![
            point("lwk", "all", 10e-6, 0.7),
            point("lwk", "mckernel", 10e-6, 0.9),
            point("lwk", "all", 50e-6, 0.4),
        ];
        for p in &mut pts {
            p.projected = project(&w, &p.target, &p.policy, 1.0, p.fc_model_s)
                .expect("projects")
                .0;
        }
        let acc = score(&of(&w), "w", &mut pts, &mut Vec::new()).expect("scores");
        assert!(acc[0].fitted >= acc[0].estimated - 1e-9, "{acc:?}");
        assert!(pts.iter().all(|p| p.fitted.is_finite()));
        let r = result(pts, acc.clone());
        let all = overall(&[r]).expect("overall");
        assert_eq!((all[0].workload.as_str(), all[0].points), ("(all)", 3));
        assert!((all[0].estimated - acc[0].estimated).abs() < 1e-9);
    }

    #[test]
    fn issue_15_each_term_has_its_own_accuracy_column() {
        let w = workload();
        let mut pts = vec![
            point("emulate:shm", "all", 10e-6, 0.8),
            point("emulate:shm", "all", 50e-6, 0.5),
        ];
        for p in &mut pts {
            p.with_terms = Some(p.measured);
            p.per_term.insert("startup".into(), p.measured * 1.1);
            p.per_term.insert("cache".into(), p.measured);
        }
        let acc = score(&of(&w), "w", &mut pts, &mut Vec::new()).expect("scores");
        assert_eq!(acc[0].with_terms, Some(100.0));
        assert!((acc[0].per_term["startup"] - 90.0).abs() < 1e-9, "{acc:?}");
        assert!((acc[0].per_term["cache"] - 100.0).abs() < 1e-9, "{acc:?}");
    }

    #[test]
    fn issue_15_the_noise_ceiling_comes_from_the_points_a_a_pairs() {
        let w = workload();
        let mut pts = vec![
            point("lwk", "all", 10e-6, 0.8),
            point("lwk", "mckernel", 10e-6, 0.9),
        ];
        let acc = score(&of(&w), "w", &mut pts, &mut Vec::new()).expect("scores");
        assert_eq!(acc[0].noise_ceiling, None, "no A/A pairs, no ceiling");
        // Same-side runs 0–10 % apart: a perfect model loses a few points against 6-pair medians.
        for p in &mut pts {
            p.aa_log_ratios = vec![0.0, 0.05, -0.02, 0.1, 0.03];
        }
        let acc = score(&of(&w), "w", &mut pts, &mut Vec::new()).expect("scores");
        let c = acc[0].noise_ceiling.expect("a ceiling");
        assert!(c > 90.0 && c < 100.0, "{c}");
        assert!(pts.iter().all(|p| p.ceiling_error.is_some()));
    }

    /// The corrected model with γ fitted: a measurement the corrected model makes exactly at
    /// γ = 1.3 is found (γ, 100 %), each point gets its fitted projection, and the paper's own
    /// fitted column is the same with the terms on as off.
    #[test]
    fn issue_15_fitted_with_terms_fits_gamma_on_the_corrected_model_and_keeps_the_papers_column() {
        let w = workload();
        let m = of(&w);
        let terms = model::Terms {
            startup_s: Some(0.05),
            wakeup_s: Some(20e-6),
            anchor_native_s: Some(0.9),
            ..model::Terms::none()
        };
        let mut pts: Vec<Point> = [("all", 10e-6), ("mckernel", 50e-6), ("all", 50e-6)]
            .iter()
            .map(|&(pol, fc)| {
                let measured = m.with_gamma("lwk", pol, fc, 1.3, &terms).expect("projects");
                let mut p = point("lwk", pol, fc, measured);
                p.projected = project(&w, "lwk", pol, 1.0, fc).expect("projects").0;
                p.terms = terms.clone();
                p.with_terms = Some(m.with("lwk", pol, fc, &terms).expect("projects"));
                p
            })
            .collect();
        let mut bare = pts.clone();
        for p in &mut bare {
            p.with_terms = None;
            p.terms = model::Terms::none();
        }
        let acc = score(&m, "w", &mut pts, &mut Vec::new()).expect("scores");
        let f = acc[0].fitted_with_terms.expect("a fitted column with the terms");
        let g = acc[0].fitted_with_terms_gamma.expect("its γ");
        assert!((f - 100.0).abs() < 1e-6 && (g - 1.3).abs() < 1e-4, "{acc:?}");
        assert!(f >= acc[0].with_terms.expect("with terms") - 1e-9, "{acc:?}");
        assert!(pts.iter().all(|p| p.fitted_with_terms.is_some()));
        let off = score(&m, "w", &mut bare, &mut Vec::new()).expect("scores");
        assert_eq!(off[0].fitted_with_terms, None);
        assert_eq!(off[0].fitted.to_bits(), acc[0].fitted.to_bits());
        assert_eq!(off[0].fitted_gamma.to_bits(), acc[0].fitted_gamma.to_bits());
        let r = result(pts, acc);
        let all = overall(&[r]).expect("overall");
        assert!((all[0].fitted_with_terms.expect("overall") - 100.0).abs() < 1e-6);
    }
}
