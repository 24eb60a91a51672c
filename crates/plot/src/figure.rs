//! The figures multios draws: what a caller fills in before [`crate::write`].
//!
//! Values are given in data units; an axis marked `*_log` is drawn in base 10. In a line
//! series a point that cannot be drawn — a NaN or infinite coordinate, or a value ≤ 0 on
//! a log axis — is skipped: the line breaks there, and the CSV still lists the point
//! (a non-finite value as an empty field). That is how a caller shows, e.g., an unstable
//! queue. In a heat map a non-finite `z` is a cell with no value (drawn grey, empty in
//! the CSV); the grid coordinates themselves must be finite, strictly increasing and,
//! on a log axis, positive. A chart with nothing drawable is still drawn, as an empty
//! frame, so that one empty figure does not stop a command that writes many.

use serde::{Deserialize, Serialize};

/// How the points of one series are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Style {
    /// A polyline through the points, in the order given.
    #[default]
    Line,
    /// One marker per point, no line.
    Points,
    /// A polyline with a marker on each point.
    LinePoints,
}

/// One labelled set of `(x, y)` points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Legend text (also the `series` column of the CSV).
    pub label: String,
    /// Points in data units, drawn in this order.
    pub points: Vec<(f64, f64)>,
    /// How to draw them.
    #[serde(default)]
    pub style: Style,
}

impl Series {
    /// A series drawn as a line.
    pub fn line(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            label: label.into(),
            points,
            style: Style::Line,
        }
    }

    /// A series drawn as markers only.
    pub fn points(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            label: label.into(),
            points,
            style: Style::Points,
        }
    }

    /// A series drawn as a line with a marker on each point.
    pub fn line_points(label: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Self {
            label: label.into(),
            points,
            style: Style::LinePoints,
        }
    }
}

/// Curves of `y` against `x`, e.g. speedup against γ.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LineChart {
    /// Caption above the plot.
    pub title: String,
    /// Text under the x axis (also the x column name of the CSV).
    pub x_label: String,
    /// Text beside the y axis (also the y column name of the CSV).
    pub y_label: String,
    /// Draw x on a base-10 logarithmic axis.
    #[serde(default)]
    pub x_log: bool,
    /// Draw y on a base-10 logarithmic axis.
    #[serde(default)]
    pub y_log: bool,
    /// The curves.
    pub series: Vec<Series>,
}

impl LineChart {
    /// An empty chart with linear axes; add curves with [`LineChart::series`].
    pub fn new(title: impl Into<String>, x_label: impl Into<String>, y_label: impl Into<String>) -> Self {
        Self {
            title: title.into(),
            x_label: x_label.into(),
            y_label: y_label.into(),
            ..Self::default()
        }
    }

    /// Adds a curve.
    #[must_use]
    pub fn series(mut self, s: Series) -> Self {
        self.series.push(s);
        self
    }

    /// Draws x on a base-10 logarithmic axis.
    #[must_use]
    pub fn log_x(mut self) -> Self {
        self.x_log = true;
        self
    }

    /// Draws y on a base-10 logarithmic axis.
    #[must_use]
    pub fn log_y(mut self) -> Self {
        self.y_log = true;
        self
    }

    /// Whether a point can be drawn on this chart's axes: finite, and positive on a log
    /// axis. Other points are skipped when drawing (the line breaks there) but are kept
    /// in the CSV.
    pub fn is_drawable(&self, (x, y): (f64, f64)) -> bool {
        x.is_finite() && y.is_finite() && (!self.x_log || x > 0.0) && (!self.y_log || y > 0.0)
    }
}

/// A value `z` on a grid of `x` × `y`, e.g. speedup over γ × f_c.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Heatmap {
    /// Caption above the plot.
    pub title: String,
    /// Text under the x axis.
    pub x_label: String,
    /// Text beside the y axis.
    pub y_label: String,
    /// Text beside the colour bar.
    pub z_label: String,
    /// Grid points along x (cell centres), strictly increasing.
    pub x: Vec<f64>,
    /// Grid points along y (cell centres), strictly increasing.
    pub y: Vec<f64>,
    /// `z[yi][xi]`: one row per `y`, each with one value per `x`.
    pub z: Vec<Vec<f64>>,
    /// Draw x on a base-10 logarithmic axis.
    #[serde(default)]
    pub x_log: bool,
    /// Draw y on a base-10 logarithmic axis.
    #[serde(default)]
    pub y_log: bool,
}

/// Several line charts side by side under one title, e.g. one per benchmark.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Panels {
    /// Caption above all panels.
    pub title: String,
    /// The panels, laid out row by row.
    pub panels: Vec<LineChart>,
}

/// Anything [`crate::write`] can draw.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Figure {
    /// Curves.
    Line(LineChart),
    /// A grid of values.
    Heatmap(Heatmap),
    /// Several line charts.
    Panels(Panels),
    /// Lanes of bars and marks over time (a Gantt chart).
    Timeline(crate::timeline::Timeline),
}

impl Figure {
    /// The figure's caption.
    pub fn title(&self) -> &str {
        match self {
            Figure::Line(c) => &c.title,
            Figure::Heatmap(h) => &h.title,
            Figure::Panels(p) => &p.title,
            Figure::Timeline(t) => &t.title,
        }
    }
}

impl From<LineChart> for Figure {
    fn from(c: LineChart) -> Self {
        Figure::Line(c)
    }
}

impl From<Heatmap> for Figure {
    fn from(h: Heatmap) -> Self {
        Figure::Heatmap(h)
    }
}

impl From<Panels> for Figure {
    fn from(p: Panels) -> Self {
        Figure::Panels(p)
    }
}

impl From<crate::timeline::Timeline> for Figure {
    fn from(t: crate::timeline::Timeline) -> Self {
        Figure::Timeline(t)
    }
}
