//! Drawing a [`Figure`] on any backend of the drawing library (PNG and SVG use the
//! same code). Errors are returned as text; the caller adds the file name.

mod fallback;
mod heatmap;
mod line;
mod timeline;

pub(crate) use fallback::TextFallback;

use std::fmt::Display;

use plotters::coord::Shift;
use plotters::prelude::{DrawingArea, DrawingBackend, WHITE};

use crate::figure::Figure;
use crate::font::FAMILY;

/// Font sizes and spacing for one chart, in pixels.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sizes {
    pub title: u32,
    pub desc: u32,
    pub label: u32,
    pub margin: u32,
}

/// Sizes for a figure that has the whole canvas.
pub(crate) const FULL: Sizes = Sizes {
    title: 24,
    desc: 17,
    label: 14,
    margin: 16,
};
/// Sizes for one of several panels.
const PANEL: Sizes = Sizes {
    title: 17,
    desc: 14,
    label: 12,
    margin: 10,
};

/// Pixel size of the canvas for a figure.
pub(crate) fn canvas(fig: &Figure) -> (u32, u32) {
    match fig {
        Figure::Line(_) => (960, 600),
        Figure::Heatmap(_) => (1000, 660),
        Figure::Panels(p) => {
            let (rows, cols) = grid(p.panels.len());
            (cols as u32 * 520, rows as u32 * 400 + 50)
        }
        Figure::Timeline(t) => timeline::canvas(t),
    }
}

/// Rows and columns for `n` panels: one row up to three, then as square as possible.
fn grid(n: usize) -> (usize, usize) {
    let n = n.max(1);
    let cols = if n <= 3 {
        n
    } else {
        (n as f64).sqrt().ceil() as usize
    };
    (n.div_ceil(cols), cols)
}

/// Draws the figure on `root`, which must have the size [`canvas`] gives.
pub(crate) fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, fig: &Figure) -> Result<(), String> {
    root.fill(&WHITE).map_err(text)?;
    match fig {
        Figure::Line(c) => line::draw(root, c, FULL),
        Figure::Heatmap(h) => heatmap::draw(root, h),
        Figure::Panels(p) => {
            let body = root
                .margin(10, 0, 0, 0)
                .titled(&p.title, (FAMILY, 26))
                .map_err(text)?;
            let (rows, cols) = grid(p.panels.len());
            let cells = body.split_evenly((rows, cols));
            // With no panels only the title is drawn.
            p.panels
                .iter()
                .zip(&cells)
                .try_for_each(|(c, area)| line::draw(area, c, PANEL))
        }
        Figure::Timeline(t) => timeline::draw(root, t),
    }?;
    root.present().map_err(text)
}

/// The text of a drawing-library error.
pub(crate) fn text(e: impl Display) -> String {
    e.to_string()
}

/// Height in pixels for the x tick labels and the axis description under them.
pub(crate) fn x_label_room(s: Sizes) -> u32 {
    s.label + s.desc + 20
}

/// Right margin in pixels that leaves room for half of the last x tick label, which is
/// centred on the right edge of the plot.
pub(crate) fn right_margin(last_label: Option<String>, s: Sizes) -> u32 {
    let chars = last_label.map(|l| l.chars().count()).unwrap_or(0) as f64;
    s.margin.max((chars * f64::from(s.label) * 0.62 / 2.0) as u32 + 6)
}

/// Width in pixels for the y tick labels and the axis description beside them.
pub(crate) fn y_label_room(labels: impl Iterator<Item = String>, s: Sizes) -> u32 {
    let chars = labels.map(|l| l.chars().count()).max().unwrap_or(1) as f64;
    (chars * f64::from(s.label) * 0.62 + f64::from(s.desc) * 1.8 + 12.0) as u32
}

#[cfg(test)]
mod tests {
    use super::grid;

    #[test]
    fn panel_grid_is_one_row_then_square() {
        assert_eq!(grid(1), (1, 1));
        assert_eq!(grid(3), (1, 3));
        assert_eq!(grid(4), (2, 2));
        assert_eq!(grid(5), (2, 3));
        assert_eq!(grid(10), (3, 4));
        assert_eq!(grid(0), (1, 1));
    }
}
