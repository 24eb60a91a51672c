//! Figures of `validate --workload/--suite` in the style of the paper's Fig. 13–15: per target,
//! projected against measured speedup (estimated and fitted parameters, with the diagonal of a
//! perfect projection), and the accuracy of each workload with both parameter sets.

use super::real::{Accuracy, Point, WorkloadResult};
use crate::ExperimentError;
use multios_plot::{Figure, LineChart, Panels, Series, Style};
use std::path::{Path, PathBuf};

/// Writes `validate-real-speedup` and `validate-real-accuracy` into `out`; returns the PNGs.
pub fn write(results: &[WorkloadResult], out: &Path) -> Result<Vec<PathBuf>, ExperimentError> {
    let points: Vec<&Point> = results
        .iter()
        .flat_map(|r| &r.points)
        .filter(|p| p.invalid.is_none() && p.measured.is_finite())
        .collect();
    if points.is_empty() {
        return Ok(Vec::new());
    }
    let mut targets: Vec<&str> = points.iter().map(|p| p.target.as_str()).collect();
    targets.sort();
    targets.dedup();
    let mut panels = Vec::new();
    for t in &targets {
        let sel: Vec<&&Point> = points.iter().filter(|p| p.target == *t).collect();
        let terms: Vec<(f64, f64)> = sel
            .iter()
            .filter_map(|p| Some((p.measured, p.with_terms?)))
            .collect();
        let lo = sel
            .iter()
            .flat_map(|p| [p.measured, p.projected, p.fitted])
            .chain(terms.iter().map(|t| t.1))
            .fold(f64::INFINITY, f64::min);
        let hi = sel
            .iter()
            .flat_map(|p| [p.measured, p.projected, p.fitted])
            .chain(terms.iter().map(|t| t.1))
            .fold(f64::NEG_INFINITY, f64::max);
        panels.push(LineChart {
            title: t.to_string(),
            x_label: "measured speedup".into(),
            y_label: "projected speedup".into(),
            x_log: false,
            y_log: false,
            series: vec![
                Series {
                    label: "estimated parameters".into(),
                    points: sel.iter().map(|p| (p.measured, p.projected)).collect(),
                    style: Style::Points,
                },
                Series {
                    label: "fitted γ".into(),
                    points: sel.iter().map(|p| (p.measured, p.fitted)).collect(),
                    style: Style::Points,
                },
                Series {
                    label: "estimated, with the terms".into(),
                    points: terms,
                    style: Style::Points,
                },
                Series {
                    label: "exact".into(),
                    points: vec![(lo, lo), (hi, hi)],
                    style: Style::Line,
                },
            ],
        });
    }
    let speed = Figure::Panels(Panels {
        title: "Real programs: projected vs measured speedup".into(),
        panels,
    });
    let accs: Vec<&Accuracy> = results.iter().flat_map(|r| &r.accuracy).collect();
    let mut series = Vec::new();
    for t in &targets {
        for (label, f) in [
            ("estimated", (|a: &Accuracy| a.estimated) as fn(&Accuracy) -> f64),
            ("fitted", |a: &Accuracy| a.fitted),
            ("with the terms", |a: &Accuracy| a.with_terms.unwrap_or(f64::NAN)),
        ] {
            series.push(Series {
                label: format!("{t} {label}"),
                points: results
                    .iter()
                    .enumerate()
                    .filter_map(|(i, r)| {
                        accs.iter()
                            .find(|a| a.workload == r.name && a.target == *t)
                            .map(|a| ((i + 1) as f64, f(a)))
                            .filter(|(_, y)| y.is_finite())
                    })
                    .collect(),
                style: Style::Points,
            });
        }
    }
    let acc = Figure::Line(LineChart {
        title: format!(
            "Accuracy per workload (x = 1, 2, …: {})",
            results
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        x_label: "workload".into(),
        y_label: "accuracy (100 − MAPE, %)".into(),
        x_log: false,
        y_log: false,
        series,
    });
    let mut written = Vec::new();
    for (fig, stem) in [(speed, "validate-real-speedup"), (acc, "validate-real-accuracy")] {
        written.push(multios_plot::write(&fig, &out.join(stem))?.png);
    }
    Ok(written)
}
