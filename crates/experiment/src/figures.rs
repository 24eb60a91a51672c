//! The paper's figures drawn from profiles' workloads with the models (`multios plot`, and the
//! demo's plots), each as PNG, SVG and the CSV of its data.

use crate::ExperimentError;
use multios_model::{self as model, sweep, Order, Params, Policy, Workload};
use multios_plot::{Figure, Heatmap, LineChart, Panels, Series};
use std::path::{Path, PathBuf};

/// A figure of the paper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fig {
    Fig2,
    Fig3,
    Fig4,
    Fig5,
    Fig6,
    Fig7,
    Fig8,
    Fig9,
}

impl Fig {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Fig::Fig2 => "fig2",
            Fig::Fig3 => "fig3",
            Fig::Fig4 => "fig4",
            Fig::Fig5 => "fig5",
            Fig::Fig6 => "fig6",
            Fig::Fig7 => "fig7",
            Fig::Fig8 => "fig8",
            Fig::Fig9 => "fig9",
        }
    }

    /// What it shows.
    pub fn help(self) -> &'static str {
        match self {
            Fig::Fig2 => "S_n over p × γ (paper Fig. 2)",
            Fig::Fig3 => "S_n vs γ for each workload, or the paper's Table 1 without profiles (Fig. 3)",
            Fig::Fig4 => "S_r vs γ under least/most/random selection of the forwarded fraction (Fig. 4)",
            Fig::Fig5 => "S_r over γ × f_c (Fig. 5)",
            Fig::Fig6 => "CDF of per-syscall invocation counts (Fig. 6)",
            Fig::Fig7 => "S_r over f_c × fraction forwarded (Fig. 7)",
            Fig::Fig8 => "S_r over γ × fraction forwarded (Fig. 8)",
            Fig::Fig9 => "S_r vs f_c under the three selection orders (Fig. 9)",
        }
    }

    /// Every figure, in order.
    pub const ALL: [Fig; 8] = [
        Fig::Fig2,
        Fig::Fig3,
        Fig::Fig4,
        Fig::Fig5,
        Fig::Fig6,
        Fig::Fig7,
        Fig::Fig8,
        Fig::Fig9,
    ];
}

/// What the figures are drawn from: labelled workloads.
pub struct Inputs {
    pub workloads: Vec<(String, Workload)>,
    pub gamma: f64,
    pub fc: f64,
    pub fraction: f64,
    pub seed: u64,
}

fn need(inputs: &Inputs, fig: &str) -> Result<(), ExperimentError> {
    if inputs.workloads.is_empty() {
        return Err(ExperimentError::Config(format!(
            "{fig} needs at least one --profile FILE"
        )));
    }
    Ok(())
}

fn stem(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

fn slug(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

fn gammas() -> Vec<f64> {
    sweep::lin_space(1.0, 10.0, 19)
}

/// Draws one figure (some figures draw one file per workload).
pub fn write_fig(fig: Fig, inp: &Inputs, dir: &Path) -> Result<Vec<multios_plot::Written>, ExperimentError> {
    let base = Params::new(inp.gamma, inp.fc);
    let us = |s: f64| s * 1e6;
    let mut out = Vec::new();
    match fig {
        Fig::Fig2 => {
            let ps = sweep::log_space(1e-4, 1.0, 41);
            let gs = sweep::lin_space(1.0, 10.0, 37);
            let z = ps
                .iter()
                .map(|&p| gs.iter().map(|&g| model::naive(p, g)).collect())
                .collect::<Result<_, _>>()?;
            out.push(multios_plot::write(
                &Figure::Heatmap(Heatmap {
                    title: "Naïve model: speedup S_n over p and γ (Fig. 2)".into(),
                    x_label: "γ (gain of the LWK)".into(),
                    y_label: "p (share of time in system calls)".into(),
                    z_label: "S_n".into(),
                    x: gs,
                    y: ps,
                    z,
                    x_log: false,
                    y_log: true,
                }),
                &stem(dir, "fig2-naive-p-gamma"),
            )?);
        }
        Fig::Fig3 => {
            let rows: Vec<(String, f64)> = if inp.workloads.is_empty() {
                model::paper::TABLE1
                    .iter()
                    .map(|(n, _, p)| (format!("{n} (p={:.3}%)", p * 100.0), *p))
                    .collect()
            } else {
                inp.workloads
                    .iter()
                    .map(|(n, w)| (format!("{n} (p={:.3}%)", w.p() * 100.0), w.p()))
                    .collect()
            };
            let series = rows
                .iter()
                .map(|(n, p)| {
                    let pts = gammas()
                        .into_iter()
                        .map(|g| model::naive(*p, g).map(|s| (g, s)))
                        .collect::<Result<_, _>>()?;
                    Ok(Series::line(n, pts))
                })
                .collect::<Result<Vec<_>, ExperimentError>>()?;
            out.push(multios_plot::write(
                &Figure::Line(LineChart {
                    title: "Naïve projection vs γ (Fig. 3)".into(),
                    x_label: "γ".into(),
                    y_label: "speedup S_n".into(),
                    x_log: false,
                    y_log: false,
                    series,
                }),
                &stem(dir, "fig3-naive-vs-gamma"),
            )?);
        }
        Fig::Fig4 => {
            need(inp, "fig4")?;
            let panels = order_panels(inp, &base, &gammas(), "γ", false, |p, x| p.gamma = x)?;
            out.push(multios_plot::write(
                &Figure::Panels(Panels {
                    title: format!(
                        "Refined model vs γ, {:.0}% of syscalls forwarded, f_c = {:.3} µs (Fig. 4)",
                        inp.fraction * 100.0,
                        us(inp.fc)
                    ),
                    panels,
                }),
                &stem(dir, "fig4-policies-vs-gamma"),
            )?);
        }
        Fig::Fig5 | Fig::Fig7 | Fig::Fig8 => {
            need(inp, "fig5/7/8")?;
            let fcs = sweep::log_space(1e-9, 10.0, 41);
            let fracs = sweep::lin_space(0.0, 1.0, 21);
            for (n, w) in &inp.workloads {
                let (title, x_label, y_label, x, y, z, x_log, name) = match fig {
                    Fig::Fig5 => {
                        let fixed = sweep::least(inp.fraction)?;
                        let z = sweep::grid(
                            w,
                            &base,
                            &fcs,
                            &gammas(),
                            |_| Ok(fixed.clone()),
                            |p, x, y| {
                                p.fc = x;
                                p.gamma = y;
                            },
                        )?;
                        (
                            format!(
                                "{n}: S_r over f_c × γ, {:.0}% least-frequent forwarded (Fig. 5)",
                                inp.fraction * 100.0
                            ),
                            "f_c (s)",
                            "γ",
                            fcs.iter().map(|v| v.to_owned()).collect::<Vec<_>>(),
                            gammas(),
                            z,
                            true,
                            "fig5-gamma-fc",
                        )
                    }
                    Fig::Fig7 => {
                        let z = sweep::grid(w, &base, &fcs, &fracs, sweep::least, |p, x, _| p.fc = x)?;
                        (
                            format!(
                                "{n}: S_r over f_c × fraction forwarded, γ = {} (Fig. 7)",
                                inp.gamma
                            ),
                            "f_c (s)",
                            "fraction of distinct syscalls forwarded (least frequent first)",
                            fcs.clone(),
                            fracs.clone(),
                            z,
                            true,
                            "fig7-fc-fraction",
                        )
                    }
                    _ => {
                        let z =
                            sweep::grid(w, &base, &gammas(), &fracs, sweep::least, |p, x, _| p.gamma = x)?;
                        (
                            format!(
                                "{n}: S_r over γ × fraction forwarded, f_c = {:.3} µs (Fig. 8)",
                                us(inp.fc)
                            ),
                            "γ",
                            "fraction of distinct syscalls forwarded (least frequent first)",
                            gammas(),
                            fracs.clone(),
                            z,
                            false,
                            "fig8-gamma-fraction",
                        )
                    }
                };
                out.push(multios_plot::write(
                    &Figure::Heatmap(Heatmap {
                        title,
                        x_label: x_label.into(),
                        y_label: y_label.into(),
                        z_label: "S_r".into(),
                        x,
                        y,
                        z,
                        x_log,
                        y_log: false,
                    }),
                    &stem(dir, &format!("{name}-{}", slug(n))),
                )?);
            }
        }
        Fig::Fig6 => {
            need(inp, "fig6")?;
            let series = inp
                .workloads
                .iter()
                .map(|(n, w)| Series::line(n, sweep::syscall_cdf(w)))
                .collect();
            out.push(multios_plot::write(
                &Figure::Line(LineChart {
                    title: "System-call profile: CDF of invocation counts (Fig. 6)".into(),
                    x_label: "invocations n(s)".into(),
                    y_label: "fraction of distinct syscalls invoked ≤ n times".into(),
                    x_log: true,
                    y_log: false,
                    series,
                }),
                &stem(dir, "fig6-syscall-cdf"),
            )?);
        }
        Fig::Fig9 => {
            need(inp, "fig9")?;
            let fcs = sweep::log_space(1e-9, 10.0, 61);
            let panels = order_panels(inp, &base, &fcs, "f_c (s)", true, |p, x| p.fc = x)?;
            out.push(multios_plot::write(
                &Figure::Panels(Panels {
                    title: format!(
                        "Refined model vs f_c, γ = {}, {:.0}% forwarded (Fig. 9)",
                        inp.gamma,
                        inp.fraction * 100.0
                    ),
                    panels,
                }),
                &stem(dir, "fig9-policies-vs-fc"),
            )?);
        }
    }
    Ok(out)
}

/// One panel per selection order of the forwarded fraction (the paper's Fig. 4 and 9: least frequent,
/// most frequent, random), each with a curve of S_r over `xs` per workload.
fn order_panels(
    inp: &Inputs,
    base: &Params,
    xs: &[f64],
    x_label: &str,
    x_log: bool,
    set: impl Fn(&mut Params, f64) + Copy,
) -> Result<Vec<LineChart>, ExperimentError> {
    let orders = [
        ("(a) least frequent", Order::LeastFrequent),
        ("(b) most frequent", Order::MostFrequent),
        ("(c) random", Order::Random(inp.seed)),
    ];
    orders
        .into_iter()
        .map(|(title, order)| {
            let pol = Policy::fraction(order, inp.fraction)?;
            let series = inp
                .workloads
                .iter()
                .map(|(n, w)| Ok(Series::line(n, sweep::curve(w, &pol, base, xs, set)?)))
                .collect::<Result<Vec<_>, ExperimentError>>()?;
            Ok(LineChart {
                title: title.into(),
                x_label: x_label.into(),
                y_label: "S_r".into(),
                x_log,
                y_log: false,
                series,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs() -> Inputs {
        Inputs {
            workloads: Vec::new(),
            gamma: 2.0,
            fc: 10e-6,
            fraction: 0.9,
            seed: 0,
        }
    }

    #[test]
    fn figures_of_workloads_need_a_profile() {
        let dir = std::env::temp_dir().join(format!("multios-figures-{}", std::process::id()));
        for (f, name) in [(Fig::Fig4, "fig4"), (Fig::Fig6, "fig6"), (Fig::Fig9, "fig9")] {
            let e = write_fig(f, &inputs(), &dir)
                .expect_err("no workload")
                .to_string();
            assert!(e.starts_with(name) && e.contains("--profile"), "{e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn slugs_keep_only_letters_and_digits() {
        assert_eq!(slug("bzip2 -9/x"), "bzip2__9_x");
    }
}
