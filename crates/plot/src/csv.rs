//! The CSV written beside each figure: the exact numbers that were drawn.
//!
//! Layouts (one header line, then one row per value; the axis labels are in the images):
//! - line chart: `series,x,y`
//! - panels: `panel,series,x,y` (`panel` is the panel's title)
//! - heat map: `x,y,z`, row by row of the grid (y outer, x inner)
//! - timeline: `lane,kind,group,start,end`, lane by lane, bars (`kind` = `bar` or `thin`)
//!   then marks (`kind` = `mark`, `end` empty)
//!
//! A value that is not finite (a gap, or a cell with no value) is an empty field.
//! Numbers are written so that they read back to the same `f64`.

use std::fmt::Write as _;

use crate::figure::{Figure, Heatmap, LineChart, Panels};
use crate::timeline::{BarHeight, Timeline};

/// The CSV text of a figure's data.
pub fn to_csv(fig: &Figure) -> String {
    match fig {
        Figure::Line(c) => line(c),
        Figure::Heatmap(h) => heatmap(h),
        Figure::Panels(p) => panels(p),
        Figure::Timeline(t) => timeline(t),
    }
}

fn timeline(t: &Timeline) -> String {
    let mut out = row(&["lane", "kind", "group", "start", "end"]);
    let group = |g: usize| t.groups.get(g).cloned().unwrap_or_default();
    for l in &t.lanes {
        for b in &l.bars {
            let kind = match b.height {
                BarHeight::Full => "bar",
                BarHeight::Thin => "thin",
            };
            out.push_str(&row(&[
                &l.label,
                kind,
                &group(b.group),
                &num(b.start),
                &num(b.end),
            ]));
        }
        for m in &l.marks {
            out.push_str(&row(&[&l.label, "mark", &group(m.group), &num(m.at), ""]));
        }
    }
    out
}

fn line(c: &LineChart) -> String {
    let mut out = row(&["series", "x", "y"]);
    for s in &c.series {
        for &(x, y) in &s.points {
            out.push_str(&row(&[&s.label, &num(x), &num(y)]));
        }
    }
    out
}

fn panels(p: &Panels) -> String {
    let mut out = row(&["panel", "series", "x", "y"]);
    for c in &p.panels {
        for s in &c.series {
            for &(px, py) in &s.points {
                out.push_str(&row(&[&c.title, &s.label, &num(px), &num(py)]));
            }
        }
    }
    out
}

fn heatmap(h: &Heatmap) -> String {
    let mut out = row(&["x", "y", "z"]);
    for (y, zs) in h.y.iter().zip(&h.z) {
        for (x, z) in h.x.iter().zip(zs) {
            out.push_str(&row(&[&num(*x), &num(*y), &num(*z)]));
        }
    }
    out
}

/// A number that reads back exactly; exponent form when the plain form would be long.
fn num(v: f64) -> String {
    if !v.is_finite() {
        String::new()
    } else if v != 0.0 && !(1e-5..1e16).contains(&v.abs()) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// One CSV line; fields with separators, quotes, line breaks or edge spaces are quoted.
fn row(fields: &[&str]) -> String {
    let mut out = String::new();
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let needs = f.contains([',', '"', '\n', '\r']) || f.starts_with(' ') || f.ends_with(' ');
        if needs {
            let _ = write!(out, "\"{}\"", f.replace('"', "\"\""));
        } else {
            out.push_str(f);
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figure::Series;

    #[test]
    fn line_chart_rows_and_gaps() {
        let c = LineChart {
            x_label: "γ".into(),
            y_label: "speedup".into(),
            series: vec![Series::line("p=0.5", vec![(1.0, 1.0), (2.0, f64::NAN)])],
            ..Default::default()
        };
        assert_eq!(to_csv(&Figure::Line(c)), "series,x,y\np=0.5,1,1\np=0.5,2,\n");
    }

    #[test]
    fn awkward_labels_are_quoted() {
        assert_eq!(
            row(&["a,b", "say \"hi\"", " pad", "ok"]),
            "\"a,b\",\"say \"\"hi\"\"\",\" pad\",ok\n"
        );
    }

    #[test]
    fn numbers_read_back_exactly() {
        for v in [
            0.1,
            1e-7,
            2.5e-300,
            1e20,
            -3.25,
            0.0,
            123456789.0,
            f64::MIN_POSITIVE,
            1.0 / 3.0,
        ] {
            let s = num(v);
            assert_eq!(s.parse::<f64>().ok(), Some(v), "{v} -> {s}");
            assert!(s.len() < 26, "{s}");
        }
        assert_eq!(num(1e-7), "1e-7");
        assert_eq!(num(f64::INFINITY), "");
    }

    #[test]
    fn heat_map_rows_are_y_major() {
        let h = Heatmap {
            x_label: "γ".into(),
            y_label: "f_c (s)".into(),
            z_label: "S".into(),
            x: vec![1.0, 2.0],
            y: vec![1e-6, 1e-5],
            z: vec![vec![1.0, 1.5], vec![0.5, f64::NAN]],
            ..Default::default()
        };
        let want = "x,y,z\n1,1e-6,1\n2,1e-6,1.5\n1,0.00001,0.5\n2,0.00001,\n";
        assert_eq!(to_csv(&Figure::Heatmap(h)), want);
    }

    #[test]
    fn panels_are_named_by_title() {
        let c = |t: &str, y: &str| LineChart {
            title: t.into(),
            x_label: "γ".into(),
            y_label: y.into(),
            series: vec![Series::line("s", vec![(1.0, 2.0)])],
            ..Default::default()
        };
        let p = Panels {
            title: "all".into(),
            panels: vec![c("a", "S"), c("b", "S")],
        };
        assert_eq!(to_csv(&Figure::Panels(p)), "panel,series,x,y\na,s,1,2\nb,s,1,2\n");
    }
}
