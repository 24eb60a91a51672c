//! Checks a figure before anything is drawn, so that every error names its place.

use crate::error::PlotError;
use crate::figure::{Figure, Heatmap};

impl Figure {
    /// Checks that the figure can be drawn. Line charts always can (undrawable points are
    /// skipped, an empty chart is an empty frame); a heat map needs a rectangular grid
    /// with finite, strictly increasing coordinates (positive on a log axis).
    pub fn validate(&self) -> Result<(), PlotError> {
        match self {
            Figure::Line(_) | Figure::Panels(_) => Ok(()),
            Figure::Heatmap(h) => heatmap(h),
            Figure::Timeline(t) => t.validate(),
        }
    }
}

fn non_positive(figure: &str, place: String, axis: &'static str, value: f64) -> PlotError {
    PlotError::NonPositiveOnLog {
        figure: figure.to_string(),
        place,
        axis,
        value,
    }
}

fn heatmap(h: &Heatmap) -> Result<(), PlotError> {
    let grid = |detail: String| PlotError::Grid {
        figure: h.title.clone(),
        detail,
    };
    for (name, v, log) in [("x", &h.x, h.x_log), ("y", &h.y, h.y_log)] {
        if v.is_empty() {
            return Err(grid(format!(
                "{name} is empty; give at least one grid point along {name}"
            )));
        }
        for (i, &val) in v.iter().enumerate() {
            if !val.is_finite() {
                let fix = "grid coordinates must be numbers";
                let place = format!("{name}[{i}]");
                return Err(PlotError::NotFinite {
                    figure: h.title.clone(),
                    place,
                    axis: name,
                    value: val,
                    fix,
                });
            }
            if log && val <= 0.0 {
                return Err(non_positive(&h.title, format!("{name}[{i}]"), name, val));
            }
            if i > 0 && val <= v[i - 1] {
                return Err(grid(format!(
                    "{name}[{i}] = {val} is not greater than {name}[{}] = {}; grid coordinates must be \
                     strictly increasing",
                    i - 1,
                    v[i - 1]
                )));
            }
        }
    }
    if h.z.len() != h.y.len() {
        return Err(grid(format!(
            "z has {} rows but y has {} points; give one row of z per y (z[yi][xi])",
            h.z.len(),
            h.y.len()
        )));
    }
    for (yi, row) in h.z.iter().enumerate() {
        if row.len() != h.x.len() {
            return Err(grid(format!(
                "z[{yi}] has {} values but x has {} points; give one value per x in each row (z[yi][xi])",
                row.len(),
                h.x.len()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::figure::{Figure, Heatmap, LineChart, Panels, Series};

    fn chart(points: Vec<(f64, f64)>, x_log: bool, y_log: bool) -> Figure {
        Figure::Line(LineChart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x_log,
            y_log,
            series: vec![Series::line("s", points)],
        })
    }

    fn grid(x: Vec<f64>, y: Vec<f64>, z: Vec<Vec<f64>>) -> Figure {
        Figure::Heatmap(Heatmap {
            title: "h".into(),
            x,
            y,
            z,
            ..Default::default()
        })
    }

    fn err(f: &Figure) -> String {
        f.validate()
            .map(|()| String::from("ok"))
            .unwrap_or_else(|e| e.to_string())
    }

    #[test]
    fn line_charts_are_always_drawable() {
        let pts = vec![
            (1.0, 2.0),
            (2.0, f64::NAN),
            (f64::INFINITY, 1.0),
            (0.0, 1.0),
            (3.0, -1.0),
            (3.0, 1.0),
        ];
        assert_eq!(err(&chart(pts, true, true)), "ok");
        assert_eq!(err(&chart(vec![], false, false)), "ok");
        assert_eq!(err(&chart(vec![(0.0, -1.0)], true, true)), "ok");
        assert_eq!(
            err(&Figure::Panels(Panels {
                title: "p".into(),
                panels: vec![]
            })),
            "ok"
        );
    }

    #[test]
    fn heat_map_shape_is_checked() {
        assert_eq!(
            err(&grid(vec![1.0, 2.0], vec![1.0], vec![vec![1.0, f64::NAN]])),
            "ok"
        );
        let e = err(&grid(vec![1.0, 2.0], vec![1.0, 2.0], vec![vec![1.0, 2.0]]));
        assert!(e.contains("z has 1 rows but y has 2 points"), "{e}");
        let e = err(&grid(vec![1.0, 2.0], vec![1.0], vec![vec![1.0]]));
        assert!(e.contains("z[0] has 1 values but x has 2 points"), "{e}");
        let e = err(&grid(vec![2.0, 2.0], vec![1.0], vec![vec![1.0, 1.0]]));
        assert!(e.contains("strictly increasing"), "{e}");
        let e = err(&grid(vec![], vec![1.0], vec![vec![]]));
        assert!(e.contains("x is empty"), "{e}");
        assert_eq!(err(&grid(vec![1.0], vec![1.0], vec![vec![f64::NAN]])), "ok");
        let mut h = grid(vec![0.0, 1.0], vec![1.0], vec![vec![1.0, 1.0]]);
        if let Figure::Heatmap(h) = &mut h {
            h.x_log = true;
        }
        assert!(err(&h).contains("x[0]"));
    }
}
