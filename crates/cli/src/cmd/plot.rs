//! `multios plot …`: the paper's figures from profiles, each as PNG, SVG and the CSV of its data.

//! The figures are drawn by multios_experiment::figures.

use crate::output::{Format, Out};
use multios_experiment::figures::{self, Inputs};
use multios_model::Workload;
use multios_units::Duration;
use std::path::PathBuf;
use std::process::ExitCode;

/// A figure on the command line: one of the library's, or every figure (`all`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fig(Option<figures::Fig>);

impl Fig {
    /// The library's figure; `None` for every figure.
    fn figure(self) -> Option<figures::Fig> {
        self.0
    }
}

impl clap::ValueEnum for Fig {
    fn value_variants<'a>() -> &'a [Self] {
        use figures::Fig as F;
        const ALL: [Fig; 9] = [
            Fig(Some(F::Fig2)),
            Fig(Some(F::Fig3)),
            Fig(Some(F::Fig4)),
            Fig(Some(F::Fig5)),
            Fig(Some(F::Fig6)),
            Fig(Some(F::Fig7)),
            Fig(Some(F::Fig8)),
            Fig(Some(F::Fig9)),
            Fig(None),
        ];
        &ALL
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(match self.0 {
            Some(f) => clap::builder::PossibleValue::new(f.name()).help(f.help()),
            None => clap::builder::PossibleValue::new("all").help("Every figure above"),
        })
    }
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Which figure
    #[arg(value_enum)]
    fig: Fig,
    /// Profiles to plot (repeatable); each is one curve or one surface
    #[arg(long)]
    profile: Vec<PathBuf>,
    /// Output directory
    #[arg(long, default_value = "out/plots")]
    out: PathBuf,
    /// γ where a figure fixes it (paper: 2)
    #[arg(long, default_value_t = 2.0)]
    gamma: f64,
    /// f_c where a figure fixes it (paper: 10us)
    #[arg(long, default_value = "10us")]
    fc: Duration,
    /// Fraction of distinct syscalls forwarded where a figure fixes it (paper: 0.9)
    #[arg(long, default_value_t = 0.9)]
    fraction: f64,
    /// Random-order seed (Fig. 4c, 9)
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

pub fn run(a: Args, out: &Out) -> super::Exit {
    let mut workloads = Vec::new();
    for path in &a.profile {
        let p = multios_profile::load(path)?;
        let label = p
            .program()
            .map(str::to_string)
            .unwrap_or_else(|| path.display().to_string());
        workloads.push((label, Workload::from_profile(&p)));
    }
    if !(0.0..=1.0).contains(&a.fraction) {
        anyhow::bail!(
            "--fraction {} is outside [0, 1] (e.g. 0.9 forwards 90% of distinct syscalls)",
            a.fraction
        );
    }
    let inputs = Inputs {
        workloads,
        gamma: a.gamma,
        fc: a.fc.secs(),
        fraction: a.fraction,
        seed: a.seed,
    };
    let figs = match a.fig.figure() {
        None => figures::Fig::ALL.to_vec(),
        Some(f) => vec![f],
    };
    let mut written = Vec::new();
    for f in figs {
        written.extend(figures::write_fig(f, &inputs, &a.out)?);
    }
    report(&written, out)?;
    Ok(ExitCode::SUCCESS)
}

pub fn report(written: &[multios_plot::Written], out: &Out) -> anyhow::Result<()> {
    match out.format {
        Format::Json => out.json(
            &written
                .iter()
                .map(|w| serde_json::json!({"png": w.png, "svg": w.svg, "csv": w.csv}))
                .collect::<Vec<_>>(),
        ),
        _ => {
            for w in written {
                eprintln!("wrote {} (+ .svg, .csv)", w.png.display());
            }
            Ok(())
        }
    }
}
