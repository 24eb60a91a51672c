//! `multios report -o report.html --profile P [RESULTS…]` (issue #18): one self-contained, offline
//! HTML page: the profile, its syscall CDF, projections per policy × γ × f_c, and measured against
//! projected from the result files given (`validate`, `emulate --compare`, `demo`, `noise` JSON,
//! `lwk run --profile` profiles).

use crate::output::{Format, Out, Table};
use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct Args {
    #[command(subcommand)]
    sub: Option<Sub>,
    /// The profile the report is about
    #[arg(long, required = true)]
    profile: Option<PathBuf>,
    /// Result files to hold against the projections: `multios validate|emulate --compare|demo|noise … --json`
    /// output, or profiles (e.g. from `lwk run --profile`)
    results: Vec<PathBuf>,
    /// Where to write the page
    #[arg(short, long, default_value = "report.html")]
    output: PathBuf,
    /// Policies to project, comma-separated
    #[arg(long, default_value = "all,mckernel,mos,mktrace,least:0.9,most:0.9")]
    policy: String,
    /// γ values, comma-separated
    #[arg(long, default_value = "1,2,4,8,16")]
    gamma: String,
    /// f_c values, comma-separated durations
    #[arg(long, default_value = "0ns,1us,10us,100us")]
    fc: String,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Extra-P input (text format) from merged per-rank profiles of MPI runs at several rank counts:
    /// time, syscall time and syscall share per rank, one point per run
    Extrap(ExtrapArgs),
}

#[derive(clap::Args, Debug)]
struct ExtrapArgs {
    /// Merged profiles (`multios profile merge`), one per rank count
    #[arg(required = true)]
    profiles: Vec<PathBuf>,
    /// Where to write the Extra-P text file
    #[arg(short, long)]
    output: PathBuf,
}

fn extrap(a: ExtrapArgs, out: &Out) -> super::Exit {
    let runs = a
        .profiles
        .iter()
        .map(|p| Ok((p.display().to_string(), multios_profile::load(p)?)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let text = multios_report::extrap_text(&runs)?;
    std::fs::write(&a.output, &text).with_context(|| format!("cannot write {}", a.output.display()))?;
    match out.format {
        Format::Json => out.json(&serde_json::json!({ "output": a.output, "points": runs.iter().map(|r| r.1.ranks.len()).collect::<Vec<_>>() }))?,
        Format::Csv => outln!("{}", text.trim_end()),
        Format::Table => outln!("{} {} ({} points)", out.bold("wrote"), a.output.display(), runs.len()),
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(a: Args, out: &Out) -> super::Exit {
    if let Some(Sub::Extrap(e)) = a.sub {
        return extrap(e, out);
    }
    let Some(profile_path) = &a.profile else {
        anyhow::bail!("--profile FILE is required (the profile the report is about)");
    };
    // the HTML report's file, named as such (the profile's own check said "cannot write profile")
    multios_host::output::check_writable(&a.output).map_err(|e| {
        anyhow::anyhow!(
            "-o {}: cannot write the HTML report there ({}); {} (checked before the report is made)",
            e.path,
            e.why,
            e.fix
        )
    })?;
    let profile = multios_profile::load(profile_path)?;
    // Shown in the page only: an argument that is not UTF-8 (a path) is shown with U+FFFD for its
    // stray bytes; std::env::args() panicked on it.
    let command = std::iter::once("multios".to_string())
        .chain(
            std::env::args_os()
                .skip(1)
                .map(|a| a.to_string_lossy().into_owned()),
        )
        .collect::<Vec<_>>()
        .join(" ");
    let mut inp = multios_report::Inputs::new(profile, &profile_path.display().to_string(), &command);
    inp.policies = a.policy.split(',').map(|s| s.trim().to_string()).collect();
    inp.fcs = a.fc.split(',').map(|s| s.trim().to_string()).collect();
    inp.gammas = a
        .gamma
        .split(',')
        .map(|g| {
            g.trim()
                .parse::<f64>()
                .with_context(|| format!("--gamma: '{g}' is not a number"))
        })
        .collect::<anyhow::Result<_>>()?;
    for path in &a.results {
        let text = multios_profile::read_bounded(path)?;
        let v: serde_json::Value =
            serde_json::from_str(&text).map_err(|source| multios_report::ReportError::Json {
                path: path.display().to_string(),
                source,
            })?;
        inp.results.push((path.display().to_string(), v));
    }
    let r = multios_report::write(&inp, &a.output)?;
    match out.format {
        Format::Json => out.json(&r)?,
        Format::Csv => {
            let mut t = Table::new(["policy", "gamma", "fc", "fc_s", "S_r", "S_n", "delegated_calls"]);
            for c in &r.projections {
                t.row([
                    c.policy.clone(),
                    c.gamma.to_string(),
                    c.fc.clone(),
                    format!("{:e}", c.fc_s),
                    c.speedup.to_string(),
                    c.naive.to_string(),
                    c.delegated_calls.to_string(),
                ]);
            }
            t.print(out);
        }
        Format::Table => {
            outln!(
                "{} {}: {} projections, {} result file(s); sections: {}",
                out.bold("wrote"),
                a.output.display(),
                r.projections.len(),
                r.measured.len(),
                r.sections
                    .iter()
                    .map(|s| s.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
