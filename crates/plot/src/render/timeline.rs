//! Timelines: lanes top to bottom, bars and marks coloured by group, the lane labels left of
//! the lanes and a legend of the groups under the plot.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{right_margin, text, Sizes, FULL};
use crate::axis::Axis;
use crate::colors;
use crate::font::FAMILY;
use crate::timeline::{BarHeight, Timeline};

/// Height of one lane, and of the legend's rows, in pixels.
pub(crate) const LANE: u32 = 44;
const LEGEND_ROW: u32 = 26;
/// Legend entries per row.
const LEGEND_COLS: usize = 4;
/// Fraction of a lane a full bar fills, and a thin one.
const FULL_H: f64 = 0.7;
const THIN_H: f64 = 0.16;

/// Canvas size: a fixed width, a lane height per lane, room for the title, axis and legend.
pub(crate) fn canvas(t: &Timeline) -> (u32, u32) {
    let lanes = t.lanes.len().max(1) as u32;
    let legend = t.groups.len().div_ceil(LEGEND_COLS) as u32;
    (1200, 130 + lanes * LANE + legend * LEGEND_ROW)
}

/// Draws `t` filling `root`. The timeline has been validated.
pub(crate) fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, t: &Timeline) -> Result<(), String> {
    let s: Sizes = FULL;
    let body = root
        .margin(10, 0, 0, 0)
        .titled(&t.title, (FAMILY, s.title))
        .map_err(text)?;
    let legend_h = t.groups.len().div_ceil(LEGEND_COLS) as u32 * LEGEND_ROW + 8;
    let (_, h) = body.dim_in_pixel();
    let (plot, legend) = body.split_vertically(h.saturating_sub(legend_h));
    let (lo, hi) = t.span().unwrap_or((0.0, 1.0));
    let xa = Axis::covering(lo, hi, false);
    let n = t.lanes.len().max(1) as f64;
    let label_style = (FAMILY, s.label).into_font().color(&BLACK);
    let mut widest = 0u32;
    for l in &t.lanes {
        widest = widest.max(root.estimate_text_size(&l.label, &label_style).map_err(text)?.0);
    }
    let mut chart = ChartBuilder::on(&plot)
        .margin(s.margin)
        .margin_right(right_margin(xa.ticks.last().map(|&v| xa.label(v)), s))
        .x_label_area_size(super::x_label_room(s))
        .y_label_area_size(widest + 16)
        .build_cartesian_2d(xa.clone(), Axis::bare(0.0, n))
        .map_err(text)?;
    let x_fmt = |v: &f64| xa.label(*v);
    chart
        .configure_mesh()
        .disable_y_mesh()
        .x_desc(&t.x_label)
        .x_label_formatter(&x_fmt)
        .label_style((FAMILY, s.label))
        .axis_desc_style((FAMILY, s.desc))
        .bold_line_style(RGBColor(215, 215, 215))
        .light_line_style(RGBColor(240, 240, 240))
        .draw()
        .map_err(text)?;
    // Lane i (from the top) spans y = n-i-1 .. n-i.
    let base = |i: usize| n - i as f64 - 1.0;
    for (i, lane) in t.lanes.iter().enumerate() {
        let y = base(i);
        if i % 2 == 1 {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(xa.range.start, y), (xa.range.end, y + 1.0)],
                    RGBColor(246, 246, 246).filled(),
                )))
                .map_err(text)?;
        }
        chart
            .draw_series(lane.bars.iter().map(|b| {
                let half = match b.height {
                    BarHeight::Full => FULL_H,
                    BarHeight::Thin => THIN_H,
                } / 2.0;
                let c = colors::series(b.group);
                Rectangle::new([(b.start, y + 0.5 - half), (b.end, y + 0.5 + half)], c.filled())
            }))
            .map_err(text)?;
        // A bar shorter than a pixel still shows: an outline of its own colour.
        chart
            .draw_series(lane.bars.iter().filter(|b| b.height == BarHeight::Full).map(|b| {
                let c = colors::series(b.group);
                PathElement::new(
                    vec![
                        (b.start, y + 0.5 - FULL_H / 2.0),
                        (b.start, y + 0.5 + FULL_H / 2.0),
                    ],
                    c.stroke_width(1),
                )
            }))
            .map_err(text)?;
        for m in &lane.marks {
            let c = colors::series(m.group);
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(m.at, y + 0.08), (m.at, y + 0.92)],
                    c.stroke_width(2),
                )))
                .map_err(text)?;
            let (px, py) = chart.backend_coord(&(m.at, y + 0.92));
            root.draw(&Polygon::new(
                vec![(px - 5, py - 7), (px + 5, py - 7), (px, py)],
                c.filled(),
            ))
            .map_err(text)?;
        }
        let (px, py) = chart.backend_coord(&(xa.range.start, y + 0.5));
        root.draw(&Text::new(
            lane.label.clone(),
            (px - 8, py),
            label_style.clone().pos(Pos::new(HPos::Right, VPos::Center)),
        ))
        .map_err(text)?;
    }
    draw_legend(&legend, t, s)
}

/// The groups in rows of [`LEGEND_COLS`]: a colour swatch and the name.
fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    t: &Timeline,
    s: Sizes,
) -> Result<(), String> {
    let (w, _) = area.dim_in_pixel();
    let col_w = (w as i32 - 2 * s.margin as i32) / LEGEND_COLS as i32;
    let style = (FAMILY, s.label)
        .into_font()
        .color(&BLACK)
        .pos(Pos::new(HPos::Left, VPos::Center));
    for (g, name) in t.groups.iter().enumerate() {
        let (r, c) = (g / LEGEND_COLS, g % LEGEND_COLS);
        let x = s.margin as i32 + 40 + c as i32 * col_w;
        let y = r as i32 * LEGEND_ROW as i32 + LEGEND_ROW as i32 / 2;
        area.draw(&Rectangle::new(
            [(x, y - 7), (x + 22, y + 7)],
            colors::series(g).filled(),
        ))
        .map_err(text)?;
        area.draw(&Text::new(name.clone(), (x + 30, y), style.clone()))
            .map_err(text)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::timeline::{Bar, BarHeight, Lane, Mark, Timeline};
    use crate::{to_csv, to_svg, write, Figure};

    fn small() -> Figure {
        let bar = |start: f64, end: f64, group: usize, height: BarHeight| Bar {
            start,
            end,
            group,
            height,
        };
        Figure::Timeline(Timeline {
            title: "AAM timeline".into(),
            x_label: "time (µs)".into(),
            groups: vec![
                "machine client".into(),
                "machine server".into(),
                "IMS wake-up".into(),
            ],
            lanes: vec![
                Lane {
                    label: "client · cpu 0".into(),
                    bars: vec![
                        bar(0.0, 3.0, 0, BarHeight::Full),
                        bar(9.0, 10.0, 0, BarHeight::Full),
                    ],
                    marks: vec![],
                },
                Lane {
                    label: "server · cpu 1".into(),
                    bars: vec![
                        bar(1.0, 4.0, 1, BarHeight::Thin),
                        bar(5.0, 8.0, 1, BarHeight::Full),
                    ],
                    marks: vec![Mark { at: 4.5, group: 2 }],
                },
            ],
        })
    }

    /// Issue 11: a small timeline is drawn as PNG, SVG and CSV: lane labels, group names and
    /// bars in their group's colour.
    #[test]
    fn issue_11_a_small_timeline_is_drawn() {
        let fig = small();
        let svg = to_svg(&fig).unwrap_or_else(|e| panic!("{e}"));
        let doc = roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("SVG is not XML: {e}"));
        let texts: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .map(str::trim)
            .collect();
        for want in [
            "AAM timeline",
            "time (µs)",
            "client · cpu 0",
            "server · cpu 1",
            "machine client",
            "machine server",
            "IMS wake-up",
        ] {
            assert!(texts.contains(&want), "no text {want:?} in {texts:?}");
        }
        let filled = |colour: &str| {
            doc.descendants()
                .filter(|n| n.has_tag_name("rect"))
                .filter(|n| n.attributes().any(|a| a.value().eq_ignore_ascii_case(colour)))
                .count()
        };
        // Two bars and a legend swatch each for the first two groups (blue, vermillion).
        assert!(filled("#0072B2") >= 3, "{svg}");
        assert!(filled("#D55E00") >= 3, "{svg}");

        let stem = std::env::temp_dir().join(format!("multios-plot-timeline-{}/t", std::process::id()));
        let w = write(&fig, &stem).unwrap_or_else(|e| panic!("{e}"));
        let png = std::fs::read(&w.png).unwrap_or_else(|e| panic!("{}: {e}", w.png.display()));
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        let csv = std::fs::read_to_string(&w.csv).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(csv, to_csv(&fig));
        assert_eq!(
            csv,
            "lane,kind,group,start,end\n\
             client · cpu 0,bar,machine client,0,3\n\
             client · cpu 0,bar,machine client,9,10\n\
             server · cpu 1,thin,machine server,1,4\n\
             server · cpu 1,bar,machine server,5,8\n\
             server · cpu 1,mark,IMS wake-up,4.5,\n"
        );
        if let Some(dir) = stem.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }

    /// An empty timeline is an empty frame, not an error.
    #[test]
    fn an_empty_timeline_is_drawn() {
        let fig = Figure::Timeline(Timeline::default());
        assert!(to_svg(&fig).is_ok());
    }
}
