//! Heat maps: coloured cells on an x × y grid, a colour bar, and the values written
//! into the cells when they are large enough to hold them.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{right_margin, text, y_label_room, FULL};
use crate::axis::{compact, Axis};
use crate::colors;
use crate::figure::Heatmap;
use crate::font::FAMILY;

/// Width of the colour bar itself, and the gap before it, in pixels.
const BAR: u32 = 28;
const GAP: u32 = 12;
/// Ticks sit at the cell centres when an axis has at most this many cells.
const MAX_CENTRED: usize = 12;
/// Length of the colour bar's tick marks, in pixels.
const TICK: i32 = 5;
/// Values are written into cells when there are at most this many cells.
const MAX_ANNOTATED: usize = 144;

/// Draws `h` filling `root`. The grid has been validated.
pub(crate) fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, h: &Heatmap) -> Result<(), String> {
    let s = FULL;
    let body = root
        .margin(10, 0, 0, 0)
        .titled(&h.title, (FAMILY, s.title))
        .map_err(text)?;
    let x_edges = edges(&h.x, h.x_log);
    let y_edges = edges(&h.y, h.y_log);
    let (x_lo, x_hi) = (x_edges[0], x_edges[x_edges.len() - 1]);
    let (y_lo, y_hi) = (y_edges[0], y_edges[y_edges.len() - 1]);
    let xa = centred(Axis::exact(x_lo, x_hi, h.x_log), &h.x);
    let ya = centred(Axis::exact(y_lo, y_hi, h.y_log), &h.y);
    let (z_lo, z_hi) = z_range(h);
    let za = Axis::exact(z_lo, z_hi, false);
    let x_area = super::x_label_room(s);
    let bar_room = y_label_room(za.ticks.iter().map(|&t| za.label(t)), s);
    let (w, _) = body.dim_in_pixel();
    let (main, bar) = body.split_horizontally(w.saturating_sub(GAP + BAR + bar_room + s.margin));

    let mut chart = ChartBuilder::on(&main)
        .margin(s.margin)
        .margin_right(right_margin(xa.ticks.last().map(|&t| xa.label(t)), s))
        .x_label_area_size(x_area)
        .y_label_area_size(y_label_room(ya.ticks.iter().map(|&t| ya.label(t)), s))
        .build_cartesian_2d(xa.clone(), ya.clone())
        .map_err(text)?;
    let shade = |z: f64| {
        if z.is_finite() {
            colors::scale((z - za.range.start) / (za.range.end - za.range.start))
        } else {
            colors::NO_VALUE
        }
    };
    let cells =
        h.z.iter()
            .enumerate()
            .flat_map(|(yi, row)| row.iter().enumerate().map(move |(xi, &z)| (xi, yi, z)));
    chart
        .draw_series(cells.clone().map(|(xi, yi, z)| {
            let corners = [(x_edges[xi], y_edges[yi]), (x_edges[xi + 1], y_edges[yi + 1])];
            Rectangle::new(corners, shade(z).filled())
        }))
        .map_err(text)?;
    let x_fmt = |v: &f64| xa.label(*v);
    let y_fmt = |v: &f64| ya.label(*v);
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc(&h.x_label)
        .y_desc(&h.y_label)
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style((FAMILY, s.label))
        .axis_desc_style((FAMILY, s.desc))
        .draw()
        .map_err(text)?;

    if h.x.len() * h.y.len() <= MAX_ANNOTATED {
        let px = |x: f64, y: f64| chart.backend_coord(&(x, y));
        let (a, b) = (px(x_edges[0], y_edges[0]), px(x_edges[1], y_edges[1]));
        let (cell_w, cell_h) = ((b.0 - a.0).abs(), (b.1 - a.1).abs());
        let widest = cells
            .clone()
            .map(|(_, _, z)| compact(z).chars().count())
            .max()
            .unwrap_or(1) as i32;
        let size = (cell_h / 3).clamp(9, 16);
        if cell_w >= widest * size * 6 / 10 + 6 && cell_h >= size + 4 {
            let centre = |e: &[f64], i: usize| (e[i] + e[i + 1]) / 2.0;
            chart
                .draw_series(cells.filter(|c| c.2.is_finite()).map(|(xi, yi, z)| {
                    let style = (FAMILY, size)
                        .into_font()
                        .color(&colors::text_on(shade(z)))
                        .pos(Pos::new(HPos::Center, VPos::Center));
                    Text::new(compact(z), (centre(&x_edges, xi), centre(&y_edges, yi)), style)
                }))
                .map_err(text)?;
        }
    }

    colour_bar(&bar, h, &za, x_area, bar_room)
}

/// Ticks at the cell centres when there are few cells and their labels are short;
/// otherwise the axis's own round ticks.
fn centred(axis: Axis, centres: &[f64]) -> Axis {
    let longest = centres
        .iter()
        .map(|&v| compact(v).chars().count())
        .max()
        .unwrap_or(0);
    if centres.len() <= MAX_CENTRED && longest <= 8 {
        axis.ticks_at(centres)
    } else {
        axis
    }
}

/// The colour bar: the scale from low to high z, with ticks, labels and the z label on
/// its right (drawn here so that the gaps and the label's reading direction match the
/// y axis of the heat map).
fn colour_bar<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    h: &Heatmap,
    za: &Axis,
    x_area: u32,
    label_room: u32,
) -> Result<(), String> {
    let s = FULL;
    let chart = ChartBuilder::on(area)
        .margin(s.margin)
        .margin_left(GAP)
        .x_label_area_size(x_area)
        .right_y_label_area_size(label_room)
        .build_cartesian_2d(Axis::bare(0.0, 1.0), za.clone())
        .map_err(text)?;
    let steps = 200;
    let (lo, hi) = (za.range.start, za.range.end);
    let strip = chart.plotting_area();
    for i in 0..steps {
        let f = |k: usize| lo + (hi - lo) * k as f64 / steps as f64;
        let c = colors::scale((i as f64 + 0.5) / steps as f64);
        strip
            .draw(&Rectangle::new([(0.0, f(i)), (1.0, f(i + 1))], c.filled()))
            .map_err(text)?;
    }

    // From here on, pixel coordinates relative to `area`.
    let (bx, by) = area.get_base_pixel();
    let at = |z: f64| {
        let (x, y) = chart.backend_coord(&(1.0, z));
        (x - bx, y - by)
    };
    let (right, top) = at(hi);
    let (_, bottom) = at(lo);
    let label = (FAMILY, s.label).into_font().color(&BLACK);
    let mut widest = 0;
    for &t in &za.ticks {
        let (x, y) = at(t);
        area.draw(&PathElement::new(vec![(x, y), (x + TICK, y)], BLACK))
            .map_err(text)?;
        let style = label.pos(Pos::new(HPos::Left, VPos::Center));
        let text_ = za.label(t);
        widest = widest.max(area.estimate_text_size(&text_, &style).map_err(text)?.0 as i32);
        area.draw(&Text::new(text_, (x + 2 * TICK, y), style))
            .map_err(text)?;
    }
    let desc = (FAMILY, s.desc)
        .into_font()
        .transform(FontTransform::Rotate270)
        .color(&BLACK)
        .pos(Pos::new(HPos::Center, VPos::Top));
    let desc_x = right + 2 * TICK + widest + 8;
    area.draw(&Text::new(h.z_label.clone(), (desc_x, (top + bottom) / 2), desc))
        .map_err(text)?;
    if h.z.iter().flatten().any(|z| !z.is_finite()) {
        let note = (FAMILY, s.label - 2)
            .into_font()
            .color(&BLACK)
            .pos(Pos::new(HPos::Left, VPos::Top));
        area.draw(&Text::new(
            "grey: no value",
            (GAP as i32, bottom + 2 * TICK),
            note,
        ))
        .map_err(text)?;
    }
    Ok(())
}

/// Cell boundaries in plot space: midway between neighbouring centres, and half a
/// cell beyond the first and last (one unit wide in plot space for a single point).
fn edges(centres: &[f64], log: bool) -> Vec<f64> {
    let c: Vec<f64> = centres.iter().map(|&v| if log { v.log10() } else { v }).collect();
    if c.len() == 1 {
        let half = if log || c[0] == 0.0 { 0.5 } else { c[0].abs() * 0.5 };
        return vec![c[0] - half, c[0] + half];
    }
    let mut e = Vec::with_capacity(c.len() + 1);
    e.push(c[0] - (c[1] - c[0]) / 2.0);
    e.extend(c.windows(2).map(|w| (w[0] + w[1]) / 2.0));
    let n = c.len();
    e.push(c[n - 1] + (c[n - 1] - c[n - 2]) / 2.0);
    e
}

/// Lowest and highest finite z; 0..1 when no z is finite.
fn z_range(h: &Heatmap) -> (f64, f64) {
    let (lo, hi) =
        h.z.iter()
            .flatten()
            .filter(|z| z.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &z| {
                (lo.min(z), hi.max(z))
            });
    if lo <= hi {
        (lo, hi)
    } else {
        (0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::edges;

    #[test]
    fn edges_lie_between_centres() {
        assert_eq!(edges(&[1.0, 2.0, 4.0], false), [0.5, 1.5, 3.0, 5.0]);
        assert_eq!(edges(&[1.0, 10.0, 100.0], true), [-0.5, 0.5, 1.5, 2.5]);
        assert_eq!(edges(&[4.0], false), [2.0, 6.0]);
        assert_eq!(edges(&[0.0], false), [-0.5, 0.5]);
    }
}
