//! `multios validate`'s figures: speedup vs f_c per γ (the paper's Fig. 11) and the refined
//! model's accuracy with the min/median/mean round trip (Fig. 13).

use super::{Config, Point};
use crate::ExperimentError;
use multios_plot::{Figure, LineChart, Panels, Series, Style};
use std::path::PathBuf;

/// Writes both figures into `cfg.out`; returns the PNGs written.
pub fn write(cfg: &Config, points: &[Point]) -> Result<Vec<PathBuf>, ExperimentError> {
    let mut panels = Vec::new();
    for &g in &cfg.gammas {
        let mut series = Vec::new();
        for (pol, _) in &cfg.policies {
            let sel: Vec<&Point> = points
                .iter()
                .filter(|p| p.gamma == g && &p.policy == pol)
                .collect();
            let pts = |f: fn(&Point) -> f64| sel.iter().map(|p| (p.fc * 1e6, f(p))).collect::<Vec<_>>();
            series.push(Series {
                label: format!("{pol} measured"),
                points: pts(|p| p.measured),
                style: Style::Points,
            });
            series.push(Series {
                label: format!("{pol} refined"),
                points: pts(|p| p.refined_median),
                style: Style::Line,
            });
        }
        panels.push(LineChart {
            title: format!("γ = {g}"),
            x_label: "f_c (µs)".into(),
            y_label: "speedup".into(),
            x_log: true,
            y_log: false,
            series,
        });
    }
    let fig11 = Figure::Panels(Panels {
        title: format!(
            "Synthetic benchmark under {}: measured vs refined",
            cfg.mechanism.name()
        ),
        panels,
    });
    let mut acc_series = Vec::new();
    for (label, f) in [
        ("min f_c", (|p: &Point| p.refined_min) as fn(&Point) -> f64),
        ("median f_c", |p: &Point| p.refined_median),
        ("mean f_c", |p: &Point| p.refined_mean),
    ] {
        let mut pts = Vec::new();
        for fc in &cfg.fcs {
            let pairs: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| p.fc == fc.secs())
                .map(|p| (f(p), p.measured))
                .collect();
            pts.push((fc.secs() * 1e6, multios_model::accuracy(&pairs)?));
        }
        acc_series.push(Series {
            label: label.into(),
            points: pts,
            style: Style::LinePoints,
        });
    }
    let fig13 = Figure::Line(LineChart {
        title: "Refined-model accuracy by the f_c statistic used".into(),
        x_label: "f_c (µs)".into(),
        y_label: "accuracy (100 − MAPE, %)".into(),
        x_log: true,
        y_log: false,
        series: acc_series,
    });
    let mut written = Vec::new();
    for (fig, stem) in [(fig11, "validate-speedup"), (fig13, "validate-accuracy")] {
        let w = multios_plot::write(&fig, &cfg.out.join(stem))?;
        written.push(w.png);
    }
    Ok(written)
}
