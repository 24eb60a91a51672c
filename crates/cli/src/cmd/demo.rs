//! `multios demo`: the main job on the bundled default workload — profile → project → emulate,
//! with a table and plots.

use crate::output::{Format, Out, Table};
use multios_model::{self as model, Params, Policy, Workload};
use std::path::PathBuf;
use std::process::ExitCode;

/// A real `strace -c -w -f` profile of bzip2 (see examples/bzip2/ for how it was made).
const BUNDLED: &str = include_str!("../../../../examples/bzip2/profile.json");

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where plots and the projection table go
    #[arg(long, default_value = "out/demo")]
    out: PathBuf,
    /// Use this profile instead of the bundled bzip2 profile
    #[arg(long)]
    profile: Option<PathBuf>,
    /// γ values to project at
    #[arg(long, default_value = "1.04,2")]
    gamma: String,
}

/// The forwarding costs the paper measured (Table 3: minimum round trip 2·f_c), one-way.
const SYSTEMS: [(&str, f64); 3] = [
    ("McKernel 2f_c=6.28µs", 3.14e-6),
    ("mOS 2f_c=6.46µs", 3.23e-6),
    ("network 2f_c=20µs", 10e-6),
];

pub fn run(a: Args, out: &Out) -> super::Exit {
    // 1. profile
    let (profile, source) = match &a.profile {
        Some(p) => (multios_profile::load(p)?, p.display().to_string()),
        None => (
            multios_profile::from_json_str("bundled examples/bzip2/profile.json", BUNDLED)?,
            "bundled bzip2 profile (examples/bzip2)".to_string(),
        ),
    };
    if out.format == Format::Table {
        println!("{} {source}", out.bold("1. profile:"));
        super::model::print_profile_summary(&profile, out)?;
        println!();
    }
    // 2. project
    let w = Workload::from_profile(&profile);
    let gammas: Vec<f64> = a
        .gamma
        .split(',')
        .map(|g| {
            g.trim()
                .parse::<f64>()
                .map_err(|_| anyhow::anyhow!("--gamma: '{g}' is not a number"))
        })
        .collect::<anyhow::Result<_>>()?;
    let policies = ["all", "mckernel", "mos", "mktrace", "least:0.9", "most:0.9"];
    let mut header = vec![
        "policy".to_string(),
        "γ".into(),
        "deleg. syscalls".into(),
        "deleg. calls".into(),
        "S_n".into(),
    ];
    header.extend(SYSTEMS.iter().map(|(sys, _)| format!("S_r {sys}")));
    let mut t = Table::new(header);
    let mut rows_json = Vec::new();
    for &g in &gammas {
        for pol in policies {
            let policy = Policy::parse(pol)?;
            let d = policy.delegated(&w);
            let mut row = Vec::new();
            for (sys, fc) in SYSTEMS {
                let pr = model::refined(&w, &d, &Params::new(g, fc))?;
                if row.is_empty() {
                    row = vec![
                        pol.to_string(),
                        format!("{g}"),
                        format!("{}/{}", pr.delegated_syscalls, pr.distinct_syscalls),
                        pr.delegated_calls.to_string(),
                        format!("{:.4}", pr.naive),
                    ];
                }
                row.push(format!("{:.4}", pr.speedup));
                rows_json
                    .push(serde_json::json!({"policy": pol, "system": sys, "fc_s": fc, "projection": pr}));
            }
            t.row(row);
        }
    }
    std::fs::create_dir_all(&a.out).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", a.out.display()))?;
    std::fs::write(a.out.join("projection.csv"), t.to_csv())?;
    if out.format == Format::Table {
        println!("{}", out.bold("2. project (naïve S_n and refined S_r):"));
    }
    if out.format != Format::Json {
        t.print(out);
    }
    // 3. plots
    let label = profile
        .command
        .first()
        .map(|c| c.rsplit('/').next().unwrap_or(c).to_string())
        .unwrap_or_default();
    let inputs = super::plot::Inputs {
        workloads: vec![(label, w)],
        gamma: 2.0,
        fc: 10e-6,
        fraction: 0.9,
        seed: 0,
    };
    let mut written = Vec::new();
    for f in [
        super::plot::Fig::Fig3,
        super::plot::Fig::Fig4,
        super::plot::Fig::Fig5,
        super::plot::Fig::Fig6,
        super::plot::Fig::Fig9,
    ] {
        written.extend(super::plot::write_fig(f, &inputs, &a.out)?);
    }
    if out.format == Format::Json {
        out.json(&serde_json::json!({"profile": source, "projections": rows_json, "plots": written}))?;
    } else if out.format == Format::Table {
        println!(
            "\n{} {} figures and projection.csv in {}",
            out.bold("3. plots:"),
            written.len(),
            a.out.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
