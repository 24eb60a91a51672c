//! `multios demo`: the main job on the bundled default workload — profile → project → emulate, with
//! a table and plots.
//!
//! The workload is `bzip2 -9` of a generated, deterministic text file. It is profiled live with the
//! profiler (eBPF as root, ptrace otherwise); the refined model projects its speedup for several
//! policies; the emulator then runs it with delegation at the paper's f_c and the measured slowdown is
//! printed next to the projection made from the profile alone. When live profiling or emulation is
//! not possible here (no bzip2, no privileges), the demo says why and falls back to the bundled real
//! profile (`examples/bzip2/`, from `strace -c -w -f`).

//! The steps are multios_experiment::demo; this runs them in order and prints as it goes.

use crate::output::{Format, Out, Table};
use multios_experiment::demo::{self, EmulationConfig, EMULATED};
use multios_model::Workload;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where the input, the profile, the projection table and the plots go
    #[arg(long, default_value = "out/demo")]
    out: PathBuf,
    /// Use this profile instead of profiling the bundled workload (skips the emulation step)
    #[arg(long)]
    profile: Option<PathBuf>,
    /// γ values to project at
    #[arg(long, default_value = "1.04,2")]
    gamma: String,
    /// One-way forwarding cost for the emulation step (the paper's 10 µs)
    #[arg(long, default_value = "10us")]
    fc: String,
    /// Emulation mechanism (shm, proxy, migrate)
    #[arg(long, default_value = "shm")]
    mechanism: String,
    /// Input size in MiB (32 by default; the tests use 4)
    #[arg(long, default_value_t = 32)]
    mib: usize,
    /// Interleaved native/emulated rounds; times are medians over them (the machine may be shared)
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

pub fn run(a: Args, out: &Out) -> super::Exit {
    let table = out.format == Format::Table;
    std::fs::create_dir_all(&a.out).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", a.out.display()))?;
    let mut notes = Vec::new();
    // 1. profile
    let input = a.out.join("input.txt");
    let argv = demo::workload_argv(&input);
    let (profile, source, live) = match &a.profile {
        Some(p) => (multios_profile::load(p)?, p.display().to_string(), false),
        None => match demo::profile_live(&input, a.mib, &argv) {
            Ok(p) => (p, format!("live: multios profile -- {}", argv.join(" ")), true),
            Err(e) => {
                notes.push(format!(
                    "live profiling skipped ({}); using the bundled strace profile",
                    crate::error_chain(&e.into())
                ));
                let p = multios_profile::from_json_str("bundled examples/bzip2/profile.json", demo::BUNDLED)?;
                (
                    p,
                    "bundled bzip2 profile (examples/bzip2, strace -c -w -f)".to_string(),
                    false,
                )
            }
        },
    };
    let profile_path = a.out.join("profile.json");
    multios_profile::save(&profile, &profile_path)?;
    if table {
        for n in &notes {
            println!("note: {n}");
        }
        println!("{} {source}", out.bold("1. profile:"));
        super::profile::print_profile(&profile, out, Some(12))?;
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
    let proj = demo::projection(&w, &gammas)?;
    let mut t = Table::new(proj.header.clone());
    for r in &proj.rows {
        t.row(r.clone());
    }
    std::fs::write(a.out.join("projection.csv"), t.to_csv())?;
    if table {
        println!(
            "{}",
            out.bold("2. project (naïve S_n and refined S_r; γ = LWK compute gain):")
        );
        t.print(out);
        println!();
    }
    // 3. emulate
    let emulated = if live {
        match emulate(
            &argv,
            &profile_path,
            &a.fc,
            &a.mechanism,
            a.rounds.max(1),
            &w,
            out,
        ) {
            Ok(rows) => rows,
            Err(e) => {
                let e = crate::error_chain(&e);
                notes.push(format!("emulation skipped: {e}"));
                if table {
                    println!("note: emulation skipped: {e}\n");
                }
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    // 4. plots
    let label = profile.program().unwrap_or_default().to_string();
    let written = demo::plots(label, w, &a.out)?;
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(input.with_extension("txt.bz2"));
    match out.format {
        Format::Json => out.json(&serde_json::json!({
            "profile": source, "profile_file": profile_path, "projections": proj.json, "emulation": emulated,
            "plots": written, "notes": notes,
        }))?,
        Format::Table => println!(
            "{} {} figures, profile.json and projection.csv in {}",
            out.bold("4. plots:"),
            written.len(),
            a.out.display()
        ),
        Format::Csv => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// The emulation step: resolves the policies (against the profile just written), the cost and the
/// CPUs, runs [`demo::emulate`] and prints its table.
fn emulate(
    argv: &[String],
    profile: &Path,
    fc: &str,
    mechanism: &str,
    rounds: usize,
    w: &Workload,
    out: &Out,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let mechanism = match mechanism {
        "shm" => multios_emulate::Mechanism::Shm,
        "proxy" => multios_emulate::Mechanism::Proxy,
        "migrate" => multios_emulate::Mechanism::Migrate,
        m => anyhow::bail!("--mechanism '{m}': use shm, proxy or migrate"),
    };
    let (compute, control) = super::emulate::cpus(None, None)?;
    let cost = super::emulate::cost(fc, &[])?;
    let policies = EMULATED
        .iter()
        .map(|pol| {
            let d = super::emulate::delegation(pol, Some(&profile.to_path_buf()))?;
            Ok((pol.to_string(), d))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let cfg = EmulationConfig {
        mechanism,
        cost,
        policies,
        compute,
        control,
        argv: argv.to_vec(),
        rounds,
    };
    let e = demo::emulate(&cfg, w, &mut crate::progress::Bar::new(out))?;
    if out.format == Format::Table {
        println!(
            "{} bzip2 natively and with delegation via '{}' at f_c = {fc} each way (γ = 1: both on Linux; medians of {} interleaved rounds)",
            out.bold("3. emulate:"),
            e.mechanism.name(),
            e.rounds
        );
        let mut t = Table::new(demo::EMULATION_HEADER);
        for r in &e.rows {
            t.row(r.clone());
        }
        t.print(out);
        println!();
    }
    Ok(e.json)
}
