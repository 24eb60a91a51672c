//! Line charts: one per figure, or one per panel.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{right_margin, text, y_label_room, Sizes};
use crate::axis::Axis;
use crate::colors;
use crate::figure::{LineChart, Style};
use crate::font::FAMILY;

/// Radius of point markers, in pixels.
const MARKER: u32 = 3;
/// Length of the line sample in the legend, in pixels.
const SAMPLE: i32 = 24;

fn drawable(c: &LineChart, p: (f64, f64)) -> bool {
    c.is_drawable(p)
}

/// Draws `c` filling `area`; with no drawable point it is an empty frame over 0..1
/// (1..10 on a log axis).
pub(crate) fn draw<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    c: &LineChart,
    s: Sizes,
) -> Result<(), String> {
    let points = || {
        c.series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .filter(|&p| drawable(c, p))
    };
    let span = |f: fn((f64, f64)) -> f64| {
        points()
            .map(f)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            })
    };
    let empty = |log: bool| if log { (1.0, 10.0) } else { (0.0, 1.0) };
    let (x0, x1) = if points().next().is_some() {
        span(|p| p.0)
    } else {
        empty(c.x_log)
    };
    let (y0, y1) = if points().next().is_some() {
        span(|p| p.1)
    } else {
        empty(c.y_log)
    };
    let xa = Axis::covering(x0, x1, c.x_log);
    let ya = Axis::covering(y0, y1, c.y_log);

    let y_room = y_label_room(ya.ticks.iter().map(|&t| ya.label(t)), s);
    let mut chart = ChartBuilder::on(area)
        .caption(&c.title, (FAMILY, s.title))
        .margin(s.margin)
        .margin_right(right_margin(xa.ticks.last().map(|&t| xa.label(t)), s))
        .x_label_area_size(super::x_label_room(s))
        .y_label_area_size(y_room)
        .build_cartesian_2d(xa.clone(), ya.clone())
        .map_err(text)?;
    let x_fmt = |v: &f64| xa.label(*v);
    let y_fmt = |v: &f64| ya.label(*v);
    chart
        .configure_mesh()
        .x_desc(&c.x_label)
        .y_desc(&c.y_label)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style((FAMILY, s.label))
        .axis_desc_style((FAMILY, s.desc))
        .bold_line_style(RGBColor(205, 205, 205))
        .light_line_style(RGBColor(238, 238, 238))
        .draw()
        .map_err(text)?;

    let mut legend = Vec::new();
    for (i, series) in c.series.iter().enumerate() {
        let color = colors::series(i);
        let line = matches!(series.style, Style::Line | Style::LinePoints);
        let marks = matches!(series.style, Style::Points | Style::LinePoints);
        let runs = runs(c, &series.points, &xa, &ya);
        for run in &runs {
            if line {
                let path = PathElement::new(run.clone(), color.stroke_width(2));
                chart.draw_series(std::iter::once(path)).map_err(text)?;
            }
            if marks {
                let dots = run.iter().map(|&p| Circle::new(p, MARKER, color.filled()));
                chart.draw_series(dots).map_err(text)?;
            }
        }
        if !series.label.is_empty() && !runs.is_empty() {
            legend.push(Entry {
                label: &series.label,
                color,
                line,
                marks,
            });
        }
    }
    let corner = legend_corner(c, &xa, &ya);
    draw_legend(&chart.plotting_area().strip_coord_spec(), &legend, corner, s)
}

/// Runs of consecutive drawable points in plot space; an undrawable point ends a run.
fn runs(c: &LineChart, points: &[(f64, f64)], xa: &Axis, ya: &Axis) -> Vec<Vec<(f64, f64)>> {
    let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for &p in points {
        if drawable(c, p) {
            if let Some(run) = runs.last_mut() {
                run.push((xa.to_plot(p.0), ya.to_plot(p.1)));
            }
        } else if runs.last().is_some_and(|r| !r.is_empty()) {
            runs.push(Vec::new());
        }
    }
    runs.retain(|r| !r.is_empty());
    runs
}

/// One line of the legend.
struct Entry<'a> {
    label: &'a str,
    color: RGBColor,
    line: bool,
    marks: bool,
}

/// Which corner of the plotting area holds the legend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Corner {
    UpperRight,
    UpperLeft,
    LowerRight,
    LowerLeft,
}

/// Draws the legend box in `corner` of the plotting area (pixel coordinates). Text
/// sizes come from the backend, so this also works when only an estimate is known.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[Entry<'_>],
    corner: Corner,
    s: Sizes,
) -> Result<(), String> {
    if entries.is_empty() {
        return Ok(());
    }
    let style = (FAMILY, s.label)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    let row = s.label as i32 + 8;
    let pad = 8;
    let mut widest = 0;
    for e in entries {
        widest = widest.max(area.estimate_text_size(e.label, &style).map_err(text)?.0 as i32);
    }
    let (w, h) = (
        pad * 3 + SAMPLE + widest,
        pad * 2 + row * entries.len() as i32 - 8,
    );
    let (aw, ah) = area.dim_in_pixel();
    let (aw, ah) = (aw as i32, ah as i32);
    let inset = 10;
    let x = if matches!(corner, Corner::UpperLeft | Corner::LowerLeft) {
        inset
    } else {
        aw - w - inset
    };
    let y = if matches!(corner, Corner::UpperLeft | Corner::UpperRight) {
        inset
    } else {
        ah - h - inset
    };
    area.draw(&Rectangle::new([(x, y), (x + w, y + h)], WHITE.mix(0.9).filled()))
        .map_err(text)?;
    area.draw(&Rectangle::new([(x, y), (x + w, y + h)], BLACK.mix(0.4)))
        .map_err(text)?;
    for (i, e) in entries.iter().enumerate() {
        let cy = y + pad + row * i as i32 + (row - 8) / 2;
        let sx = x + pad;
        if e.line {
            area.draw(&PathElement::new(
                vec![(sx, cy), (sx + SAMPLE, cy)],
                e.color.stroke_width(2),
            ))
            .map_err(text)?;
        }
        if e.marks {
            area.draw(&Circle::new((sx + SAMPLE / 2, cy), MARKER, e.color.filled()))
                .map_err(text)?;
        }
        area.draw(&Text::new(
            e.label.to_string(),
            (sx + SAMPLE + pad, cy),
            style.clone(),
        ))
        .map_err(text)?;
    }
    Ok(())
}

/// The corner of the plot whose quarter holds the fewest points, so the legend covers
/// as little data as possible (upper right on a tie).
fn legend_corner(c: &LineChart, xa: &Axis, ya: &Axis) -> Corner {
    let frac = |v: f64, a: &Axis| (v - a.range.start) / (a.range.end - a.range.start);
    let corners = [
        Corner::UpperRight,
        Corner::UpperLeft,
        Corner::LowerRight,
        Corner::LowerLeft,
    ];
    let mut count = [0usize; 4];
    for &(x, y) in c
        .series
        .iter()
        .flat_map(|s| &s.points)
        .filter(|&&p| drawable(c, p))
    {
        let (fx, fy) = (frac(xa.to_plot(x), xa), frac(ya.to_plot(y), ya));
        let (right, left, top, bottom) = (fx > 0.55, fx < 0.45, fy > 0.6, fy < 0.4);
        for (i, hit) in [right && top, left && top, right && bottom, left && bottom]
            .into_iter()
            .enumerate()
        {
            count[i] += usize::from(hit);
        }
    }
    let best = (0..4).min_by_key(|&i| (count[i], i)).unwrap_or(0);
    corners[best]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figure::Series;

    fn corner(points: Vec<(f64, f64)>) -> Corner {
        let c = LineChart {
            series: vec![Series::line("s", points)],
            ..Default::default()
        };
        let (xa, ya) = (Axis::exact(0.0, 10.0, false), Axis::exact(0.0, 10.0, false));
        legend_corner(&c, &xa, &ya)
    }

    #[test]
    fn legend_avoids_the_data() {
        // A rising curve fills lower left and upper right.
        let rising: Vec<(f64, f64)> = (0..=10).map(|i| (f64::from(i), f64::from(i))).collect();
        assert_eq!(corner(rising), Corner::UpperLeft);
        // A saturating speedup curve fills the top: the legend goes low.
        let sat: Vec<(f64, f64)> = (0..=10)
            .map(|i| (f64::from(i), 10.0 - 10.0 / f64::from(i + 1)))
            .collect();
        assert_eq!(corner(sat), Corner::LowerRight);
        assert_eq!(corner(vec![]), Corner::UpperRight);
    }

    #[test]
    fn undrawable_points_break_the_line() {
        let c = LineChart {
            x_log: true,
            ..Default::default()
        };
        let pts = [
            (1.0, 1.0),
            (10.0, 2.0),
            (0.0, 3.0),
            (100.0, f64::NAN),
            (1000.0, 4.0),
            (-1.0, 1.0),
        ];
        let (xa, ya) = (Axis::covering(1.0, 1000.0, true), Axis::covering(1.0, 4.0, false));
        assert_eq!(
            runs(&c, &pts, &xa, &ya),
            vec![vec![(0.0, 1.0), (1.0, 2.0)], vec![(3.0, 4.0)]]
        );
        assert!(runs(&c, &[(0.0, 1.0)], &xa, &ya).is_empty());
    }
}
