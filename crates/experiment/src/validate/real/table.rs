//! The tables of `multios validate --workload/--suite` (issue #15): one row per point, one row per
//! workload and target with the accuracy of every column — estimated, fitted, each `--terms`
//! correction alone ("+NAME %"), all of them, and all of them with γ fitted — and the terms'
//! measurements.

use super::{Accuracy, Measurement, WorkloadResult};
use multios_model::Term;

fn opt(v: Option<f64>, prec: usize) -> String {
    v.map_or_else(|| "—".into(), |v| format!("{v:.prec$}"))
}

/// The per-point header: the projection with each of `terms` alone, then with all of them.
pub fn point_header(terms: &[Term]) -> Vec<String> {
    let mut h: Vec<String> = [
        "workload",
        "target",
        "policy",
        "f_c",
        "model f_c",
        "measured",
        "95 % interval",
        "estimated",
        "fitted",
        "cross-CPU ns",
        "repeats",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if !terms.is_empty() {
        h.extend(terms.iter().map(|t| format!("+{}", t.name())));
        h.push("with terms".into());
        h.push("fitted with terms".into());
    }
    h
}

pub fn point_rows(results: &[WorkloadResult], terms: &[Term]) -> Vec<Vec<String>> {
    results
        .iter()
        .flat_map(|r| &r.points)
        .map(|p| {
            let mut row = vec![
                p.workload.clone(),
                p.target.clone(),
                p.policy.clone(),
                multios_units::format_secs(p.fc_s),
                multios_units::format_secs(p.fc_model_s),
                match &p.invalid {
                    Some(_) => format!("{:.4} (invalid)", p.measured),
                    None => format!("{:.4}", p.measured),
                },
                p.measured_ci
                    .map_or_else(|| "—".into(), |(lo, hi)| format!("[{lo:.4}, {hi:.4}]")),
                format!("{:.4}", p.projected),
                format!("{:.4}", p.fitted),
                // The level the kept pairs saw; "*" when some kept pair's probes disagreed.
                p.level_ns.map_or_else(
                    || "—".into(),
                    |l| format!("{l:.0}{}", if p.level_unsteady > 0 { "*" } else { "" }),
                ),
                p.level_repeats.to_string(),
            ];
            if !terms.is_empty() {
                row.extend(terms.iter().map(|t| opt(p.per_term.get(t.name()).copied(), 4)));
                row.push(opt(p.with_terms, 4));
                row.push(opt(p.fitted_with_terms, 4));
            }
            row
        })
        .collect()
}

/// The accuracy header: estimated, fitted, then each term alone, all of them, and all of them with
/// γ fitted (and that γ).
pub fn accuracy_header(terms: &[Term]) -> Vec<String> {
    let mut h: Vec<String> = [
        "workload",
        "target",
        "points",
        "estimated %",
        "fitted %",
        "fitted γ",
        "noise ceiling %",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    if !terms.is_empty() {
        h.extend(terms.iter().map(|t| format!("+{} %", t.name())));
        h.push("with terms %".into());
        h.push("fitted with terms %".into());
        h.push("fitted γ with terms".into());
    }
    h
}

pub fn accuracy_rows(acc: &[Accuracy], terms: &[Term]) -> Vec<Vec<String>> {
    acc.iter()
        .map(|a| {
            let mut row = vec![
                a.workload.clone(),
                a.target.clone(),
                a.points.to_string(),
                format!("{:.2}", a.estimated),
                format!("{:.2}", a.fitted),
                if a.fitted_gamma.is_finite() {
                    format!("{:.4}", a.fitted_gamma)
                } else {
                    "—".into()
                },
                opt(a.noise_ceiling, 2),
            ];
            if !terms.is_empty() {
                row.extend(terms.iter().map(|t| opt(a.per_term.get(t.name()).copied(), 2)));
                row.push(opt(a.with_terms, 2));
                row.push(opt(a.fitted_with_terms, 2));
                row.push(opt(a.fitted_with_terms_gamma, 4));
            }
            row
        })
        .collect()
}

/// The terms' measurements: target, term, value, how.
pub const MEASUREMENT_HEADER: [&str; 4] = ["target", "term", "value", "microbenchmark"];

pub fn measurement_rows(m: &[Measurement]) -> Vec<[String; 4]> {
    m.iter()
        .map(|m| [m.target.clone(), m.term.clone(), m.value.clone(), m.how.clone()])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn issue_15_the_tables_have_a_column_per_term() {
        let terms = [Term::Startup, Term::Cache];
        assert_eq!(point_header(&[]).len(), 11);
        let h = accuracy_header(&terms);
        assert_eq!(
            &h[7..],
            [
                "+startup %",
                "+cache %",
                "with terms %",
                "fitted with terms %",
                "fitted γ with terms"
            ]
        );
        let a = Accuracy {
            workload: "w".into(),
            target: "lwk".into(),
            points: 2,
            estimated: 90.0,
            fitted: 99.0,
            fitted_gamma: 1.01,
            with_terms: Some(97.5),
            fitted_with_terms: Some(99.1),
            fitted_with_terms_gamma: Some(0.93),
            noise_ceiling: Some(96.0),
            per_term: BTreeMap::from([("startup".to_string(), 96.0)]),
            without_term: BTreeMap::new(),
        };
        let rows = accuracy_rows(&[a], &terms);
        assert_eq!(rows[0].len(), h.len());
        assert_eq!(&rows[0][6..], ["96.00", "96.00", "—", "97.50", "99.10", "0.9300"]);
    }
}
