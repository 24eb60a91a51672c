//! multios-plot: the figures of multios — line charts, heat maps, panels of line
//! charts and timelines (Gantt charts) — each written as PNG, SVG and the CSV of the numbers drawn.
//!
//! ```no_run
//! use multios_plot::{write, Figure, LineChart, Series};
//! let naive = |p: f64, g: f64| 1.0 / (p + (1.0 - p) / g);
//! let chart = LineChart {
//!     title: "Naive speedup".into(),
//!     x_label: "γ".into(),
//!     y_label: "speedup".into(),
//!     x_log: true,
//!     y_log: false,
//!     series: [0.1, 0.5]
//!         .iter()
//!         .map(|&p| Series::line(format!("p = {p}"), (1..=100).map(|g| (g as f64, naive(p, g as f64))).collect()))
//!         .collect(),
//! };
//! let written = write(&Figure::Line(chart), "out/naive".as_ref())?;
//! println!("{}", written.png.display()); // out/naive.png, and out/naive.svg, out/naive.csv
//! # Ok::<(), multios_plot::PlotError>(())
//! ```
//!
//! Text needs a TrueType font from the machine (see [`FONT_ENV`]); the CSV layouts are
//! described in [`csv`].

mod axis;
pub mod colors;
pub mod csv;
mod error;
mod figure;
mod font;
mod render;
mod timeline;
mod validate;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use plotters::prelude::{BitMapBackend, IntoDrawingArea, SVGBackend};
use render::TextFallback;
use serde::Serialize;

pub use crate::csv::to_csv;
pub use crate::error::PlotError;
pub use crate::figure::{Figure, Heatmap, LineChart, Panels, Series, Style};
pub use crate::font::FONT_ENV;

/// Registers the machine's TrueType font for plotters' "sans-serif" family (once per process), for
/// drawings made outside this crate's figures (e.g. `multios map show`'s pictures).
pub fn ensure_font() -> Result<PathBuf, PlotError> {
    font::ensure()
}
pub use crate::timeline::{Bar, BarHeight, Lane, Mark, Timeline};

/// The three files one figure was written to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Written {
    /// Raster image.
    pub png: PathBuf,
    /// Vector image.
    pub svg: PathBuf,
    /// The numbers drawn.
    pub csv: PathBuf,
}

impl Written {
    /// The paths [`write`] uses for `stem`: the stem with `.png`, `.svg` and `.csv`
    /// appended (an existing dot in the stem is kept: `fig.v2` → `fig.v2.png`).
    pub fn for_stem(stem: &Path) -> Self {
        let with = |ext: &str| {
            let mut s = OsString::from(stem.as_os_str());
            s.push(".");
            s.push(ext);
            PathBuf::from(s)
        };
        Self {
            png: with("png"),
            svg: with("svg"),
            csv: with("csv"),
        }
    }
}

/// Writes `fig` to `stem.csv`, `stem.svg` and `stem.png`, in that order, creating the
/// stem's directory if needed. The figure is validated first, so nothing is written for
/// unusable data. Without a font (see [`FONT_ENV`]) the CSV and the SVG (whose text the
/// viewer draws) are still written, and the error names the package that provides one.
pub fn write(fig: &Figure, stem: &Path) -> Result<Written, PlotError> {
    fig.validate()?;
    let out = Written::for_stem(stem);
    if let Some(dir) = stem.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|source| PlotError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
    }
    std::fs::write(&out.csv, to_csv(fig)).map_err(|source| PlotError::Io {
        path: out.csv.clone(),
        source,
    })?;
    let font = font::ensure();
    let size = render::canvas(fig);
    // The SVG is drawn into a string and written with one call: plotters' SVG backend writes its
    // file when dropped, through a BufWriter it never flushes, so a failed write (a full disk)
    // was lost and the figure reported written.
    let mut svg = String::new();
    {
        let root = TextFallback(SVGBackend::with_string(&mut svg, size)).into_drawing_area();
        render::draw(&root, fig).map_err(|message| render_error(&out.svg, message))?;
        root.present()
            .map_err(|e| render_error(&out.svg, e.to_string()))?;
    }
    std::fs::write(&out.svg, svg).map_err(|source| PlotError::Io {
        path: out.svg.clone(),
        source,
    })?;
    font?;
    {
        // presented here, not on drop (which ignores a failed write)
        let root = BitMapBackend::new(&out.png, size).into_drawing_area();
        render::draw(&root, fig).map_err(|message| render_error(&out.png, message))?;
        root.present()
            .map_err(|e| render_error(&out.png, e.to_string()))?;
    }
    Ok(out)
}

/// The SVG text of `fig`, without writing any file (works without a font).
pub fn to_svg(fig: &Figure) -> Result<String, PlotError> {
    fig.validate()?;
    // Without a font, text sizes are estimated; the SVG is still complete.
    let _ = font::ensure();
    let mut svg = String::new();
    {
        let root = TextFallback(SVGBackend::with_string(&mut svg, render::canvas(fig))).into_drawing_area();
        render::draw(&root, fig).map_err(|message| render_error(Path::new("<svg>"), message))?;
    }
    Ok(svg)
}

/// Turns a drawing failure into an error naming the file; a failure to create or write
/// the file itself surfaces here too, because the backends write when presenting.
fn render_error(path: &Path, message: String) -> PlotError {
    PlotError::Render {
        path: path.to_path_buf(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart() -> Figure {
        LineChart::new("Naive speedup", "γ", "speedup")
            .log_x()
            .series(Series::line(
                "p = 0.1",
                vec![(1.0, 1.0), (10.0, 5.26), (100.0, 9.17)],
            ))
            .series(Series::line_points(
                "measured",
                vec![(2.0, 1.7), (20.0, f64::NAN), (50.0, 8.0)],
            ))
            .into()
    }

    /// Issue 2: "each plot is written as PNG and SVG with a CSV of its data".
    #[test]
    fn issue_2_each_plot_is_written_as_png_svg_and_csv() {
        let stem = std::env::temp_dir().join(format!("multios-plot-unit-{}/fig", std::process::id()));
        let w = write(&chart(), &stem).unwrap_or_else(|e| panic!("{e}"));
        let png = std::fs::read(&w.png).unwrap_or_else(|e| panic!("{}: {e}", w.png.display()));
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        // IHDR: width and height are the canvas size.
        assert_eq!(&png[16..24], &[0, 0, 3, 0xc0, 0, 0, 2, 0x58]);
        let svg = std::fs::read_to_string(&w.svg).unwrap_or_else(|e| panic!("{}: {e}", w.svg.display()));
        assert_eq!(svg, to_svg(&chart()).unwrap_or_else(|e| panic!("{e}")));
        let csv = std::fs::read_to_string(&w.csv).unwrap_or_else(|e| panic!("{}: {e}", w.csv.display()));
        assert_eq!(csv.lines().count(), 7);
        assert!(csv.contains("measured,20,\n"));
        if let Some(dir) = stem.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    /// The SVG is well-formed XML carrying the title, the axis labels, the legend and
    /// one polyline per run of points (the NaN splits "measured" in two).
    #[test]
    fn svg_is_well_formed_and_carries_the_text() {
        let svg = to_svg(&chart()).unwrap_or_else(|e| panic!("{e}"));
        let doc = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("SVG is not XML: {e}"));
        let texts: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .map(str::trim)
            .collect();
        for want in ["Naive speedup", "γ", "speedup", "p = 0.1", "measured", "10"] {
            assert!(texts.contains(&want), "no text {want:?} in {texts:?}");
        }
        let blue = "#0072B2";
        let lines = doc
            .descendants()
            .filter(|n| n.has_tag_name("polyline") || n.has_tag_name("polygon") || n.has_tag_name("path"))
            .filter(|n| n.attributes().any(|a| a.value().eq_ignore_ascii_case(blue)))
            .count();
        assert!(lines >= 1, "no element stroked in the first series colour {blue}");
    }

    #[test]
    fn stems_keep_their_dots() {
        let w = Written::for_stem(Path::new("out/fig.v2"));
        assert_eq!(w.png, Path::new("out/fig.v2.png"));
        assert_eq!(w.svg, Path::new("out/fig.v2.svg"));
        assert_eq!(w.csv, Path::new("out/fig.v2.csv"));
    }

    /// Degenerate figures are drawn, never refused and never a panic.
    #[test]
    fn degenerate_figures_are_drawn() {
        let h = |x: Vec<f64>, y: Vec<f64>, z: Vec<Vec<f64>>, log: bool| {
            Figure::Heatmap(Heatmap {
                title: "h".into(),
                x,
                y,
                z,
                x_log: log,
                y_log: log,
                ..Default::default()
            })
        };
        let figs = [
            LineChart::new("empty", "x", "y").into(),
            LineChart::new("empty log", "x", "y")
                .log_x()
                .log_y()
                .series(Series::line("s", vec![]))
                .into(),
            LineChart::new("constant", "x", "y")
                .series(Series::points("c", vec![(5.0, 5.0)]))
                .into(),
            LineChart::new("nothing on log", "x", "y")
                .log_y()
                .series(Series::line("s", vec![(1.0, 0.0)]))
                .into(),
            LineChart::new("huge", "x", "y")
                .series(Series::line("s", vec![(-1e300, 1e-300), (1e300, 2.0)]))
                .into(),
            LineChart::new("max", "x", "y")
                .series(Series::line(
                    "s",
                    vec![(f64::MIN, f64::MIN), (f64::MAX, f64::MAX)],
                ))
                .into(),
            Figure::Panels(Panels {
                title: "no panels".into(),
                panels: vec![],
            }),
            h(vec![1.0], vec![1.0], vec![vec![3.0]], true),
            h(vec![1.0, 2.0], vec![1.0, 2.0], vec![vec![f64::NAN; 2]; 2], false),
            h(
                vec![0.0, 1.0],
                vec![-1.0, 0.0],
                vec![vec![-5.0, 5.0], vec![0.0, f64::INFINITY]],
                false,
            ),
        ];
        let dir = std::env::temp_dir().join(format!("multios-plot-degenerate-{}", std::process::id()));
        for (i, fig) in figs.iter().enumerate() {
            let stem = dir.join(format!("fig{i}"));
            let w = write(fig, &stem).unwrap_or_else(|e| panic!("figure {i} ({}): {e}", fig.title()));
            assert!(
                w.png.is_file() && w.svg.is_file() && w.csv.is_file(),
                "figure {i}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
