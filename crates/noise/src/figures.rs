//! Figures: samples over time, one panel per configuration (in the style of McKernel's FWQ figure),
//! and the scale simulation's slowdown against rank count.

use crate::measure::{Kind, Series};
use crate::scale::Point;
use multios_plot::{Figure, LineChart, Panels, Series as Curve, Style};

/// At most this many points per panel: above it, each time bin keeps its lowest and highest sample
/// (the spikes stay visible).
const MAX_POINTS: usize = 20_000;

fn thin(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    if points.len() <= MAX_POINTS {
        return points.to_vec();
    }
    let bins = MAX_POINTS / 2;
    let per = points.len().div_ceil(bins);
    let mut out = Vec::with_capacity(2 * bins);
    for chunk in points.chunks(per) {
        let lo = chunk.iter().min_by(|a, b| a.1.total_cmp(&b.1));
        let hi = chunk.iter().max_by(|a, b| a.1.total_cmp(&b.1));
        if let (Some(&lo), Some(&hi)) = (lo, hi) {
            out.push(lo);
            out.push(hi);
        }
    }
    out
}

fn y_label(kind: Kind) -> &'static str {
    match kind {
        Kind::Fwq => "time per work quantum (µs)",
        Kind::Ftq => "work units per time slot",
        Kind::Selfish => "detour (µs)",
    }
}

/// One panel per (configuration, CPU): samples against time (s).
pub fn samples_over_time(title: &str, runs: &[(String, Series)]) -> Figure {
    let panels = runs
        .iter()
        .map(|(label, s)| {
            let scale = if s.kind == Kind::Ftq { 1.0 } else { 1e-3 };
            let pts: Vec<(f64, f64)> = s.samples.iter().map(|&(t, v)| (t * 1e-9, v * scale)).collect();
            LineChart {
                title: format!("{label} (CPU {})", s.cpu),
                x_label: "time (s)".to_string(),
                y_label: y_label(s.kind).to_string(),
                x_log: false,
                y_log: false,
                series: vec![Curve {
                    label: label.clone(),
                    points: thin(&pts),
                    style: Style::Points,
                }],
            }
        })
        .collect();
    Figure::Panels(Panels {
        title: title.to_string(),
        panels,
    })
}

/// Mean step slowdown against rank count (log-log), uncoordinated and co-scheduled.
pub fn slowdown(title: &str, points: &[Point]) -> Figure {
    let pick = |f: fn(&Point) -> Option<f64>| -> Vec<(f64, f64)> {
        points
            .iter()
            .filter_map(|p| f(p).map(|y| (p.ranks as f64, y)))
            .collect()
    };
    let mut series = Vec::new();
    for (label, pts) in [
        ("uncoordinated", pick(|p| p.uncoordinated)),
        ("co-scheduled", pick(|p| p.cosched)),
    ] {
        if !pts.is_empty() {
            series.push(Curve {
                label: label.to_string(),
                points: pts,
                style: Style::LinePoints,
            });
        }
    }
    Figure::Line(LineChart {
        title: title.to_string(),
        x_label: "ranks".to_string(),
        y_label: "mean step slowdown (×)".to_string(),
        x_log: true,
        y_log: true,
        series,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_keeps_the_extremes() {
        let pts: Vec<(f64, f64)> = (0..100_000)
            .map(|i| (i as f64, if i == 77_777 { 1e6 } else { 1.0 }))
            .collect();
        let t = thin(&pts);
        assert!(t.len() <= MAX_POINTS);
        assert!(t.iter().any(|p| p.1 == 1e6));
    }
}
