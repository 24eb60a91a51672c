//! Writes one figure of each kind, shaped like the paper's, to a directory, and prints how
//! long each `write` (PNG + SVG + CSV) took:
//! `cargo run --release -p multios-plot --example gallery -- out/gallery`.
//! The numbers are the naive model S = 1 / (p + (1 − p)/γ) and a toy forwarding cost,
//! computed here only to have something realistic to draw.

use std::path::PathBuf;
use std::time::Instant;

use multios_plot::{write, Figure, Heatmap, LineChart, Panels, Series, Style};

fn naive(p: f64, gamma: f64) -> f64 {
    1.0 / (p + (1.0 - p) / gamma)
}

/// Speedup when every call also pays `2 · fc` seconds: t_d = C/γ + g + 2·fc·n.
fn forwarded(gamma: f64, fc: f64) -> f64 {
    let (c, g, n) = (1.0, 0.05, 2e4);
    (c + g) / (c / gamma + g + 2.0 * fc * n)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "out/gallery".into()));
    let gammas: Vec<f64> = (0..=40).map(|i| 10f64.powf(f64::from(i) / 20.0)).collect();

    let line = LineChart {
        title: "Naive speedup against γ".into(),
        x_label: "γ (LWK compute speedup)".into(),
        y_label: "speedup S_n".into(),
        x_log: true,
        y_log: false,
        series: [0.01, 0.05, 0.1, 0.3]
            .iter()
            .map(|&p| {
                Series::line(
                    format!("p = {p}"),
                    gammas.iter().map(|&g| (g, naive(p, g))).collect(),
                )
            })
            .chain(std::iter::once(Series {
                label: "measured".into(),
                points: vec![(2.0, 1.8), (10.0, 6.1), (50.0, 9.0)],
                style: Style::Points,
            }))
            .collect(),
    };
    let fcs: Vec<f64> = (0..=30).map(|i| 10f64.powf(-8.0 + f64::from(i) / 6.0)).collect();
    let fc = LineChart {
        title: "Speedup against forwarding cost".into(),
        x_label: "f_c (s)".into(),
        y_label: "speedup S_r".into(),
        x_log: true,
        y_log: true,
        series: [2.0, 10.0, 100.0]
            .iter()
            .map(|&g| Series {
                label: format!("γ = {g}"),
                points: fcs.iter().map(|&f| (f, forwarded(g, f))).collect(),
                style: Style::LinePoints,
            })
            .collect(),
    };
    let hx: Vec<f64> = (0..=12).map(|i| 10f64.powf(f64::from(i) / 6.0)).collect();
    let hy: Vec<f64> = (0..=10).map(|i| 10f64.powf(-8.0 + f64::from(i) / 2.5)).collect();
    let heat = Heatmap {
        title: "Speedup over γ × f_c".into(),
        x_label: "γ".into(),
        y_label: "f_c (s)".into(),
        z_label: "speedup S_r".into(),
        z: hy
            .iter()
            .map(|&f| {
                hx.iter()
                    .map(|&g| {
                        if f > 1e-5 && g > 50.0 {
                            f64::NAN
                        } else {
                            forwarded(g, f)
                        }
                    })
                    .collect()
            })
            .collect(),
        x: hx,
        y: hy,
        x_log: true,
        y_log: true,
    };
    let small = Heatmap {
        title: "Fraction forwarded × γ".into(),
        x_label: "fraction of syscalls forwarded".into(),
        y_label: "γ".into(),
        z_label: "speedup".into(),
        x: vec![0.0, 0.25, 0.5, 0.75, 1.0],
        y: vec![2.0, 5.0, 10.0, 20.0],
        z: [2.0, 5.0, 10.0, 20.0]
            .iter()
            .map(|&g| (0..5).map(|k| naive(0.05 + 0.05 * f64::from(k), g)).collect())
            .collect(),
        x_log: false,
        y_log: true,
    };
    let big = {
        let n = 100;
        let x: Vec<f64> = (0..n)
            .map(|i| 10f64.powf(2.0 * f64::from(i) / f64::from(n - 1)))
            .collect();
        let y: Vec<f64> = (0..n)
            .map(|i| 10f64.powf(-8.0 + 4.0 * f64::from(i) / f64::from(n - 1)))
            .collect();
        let z = y
            .iter()
            .map(|&f| x.iter().map(|&g| forwarded(g, f)).collect())
            .collect();
        Heatmap {
            title: "Speedup over γ × f_c, 100 × 100 grid".into(),
            x_label: "γ".into(),
            y_label: "f_c (s)".into(),
            z_label: "speedup S_r".into(),
            x,
            y,
            z,
            x_log: true,
            y_log: true,
        }
    };
    let panels = Panels {
        title: "Projected speedup per benchmark".into(),
        panels: ["bzip2", "gzip", "spectral-norm", "nbody", "fannkuch"]
            .iter()
            .zip([0.02, 0.2, 0.001, 0.05, 0.5])
            .map(|(name, p)| LineChart {
                title: (*name).into(),
                x_label: "γ".into(),
                y_label: "speedup".into(),
                x_log: true,
                y_log: false,
                series: vec![
                    Series::line("naive", gammas.iter().map(|&g| (g, naive(p, g))).collect()),
                    Series::line(
                        "refined",
                        gammas.iter().map(|&g| (g, 0.9 * naive(p, g))).collect(),
                    ),
                ],
            })
            .collect(),
    };
    for (name, fig) in [
        ("line", Figure::Line(line)),
        ("fc", Figure::Line(fc)),
        ("heatmap", Figure::Heatmap(heat)),
        ("heatmap-small", Figure::Heatmap(small)),
        ("heatmap-100x100", Figure::Heatmap(big)),
        ("panels", Figure::Panels(panels)),
    ] {
        let start = Instant::now();
        let w = write(&fig, &dir.join(name))?;
        let ms = start.elapsed().as_secs_f64() * 1e3;
        println!(
            "{ms:8.1} ms  {}  {}  {}",
            w.png.display(),
            w.svg.display(),
            w.csv.display()
        );
    }
    Ok(())
}
