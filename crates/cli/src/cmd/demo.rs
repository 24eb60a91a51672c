//! `multios demo`: the main job on the bundled default workload — profile → project → emulate, with
//! a table and plots.
//!
//! The workload is `bzip2 -9` of a generated, deterministic text file. It is profiled live with the
//! profiler (eBPF as root, ptrace otherwise); the refined model projects its speedup for several
//! policies; the emulator then runs it with delegation at the paper's f_c and the measured slowdown is
//! printed next to the projection made from the profile alone. When live profiling or emulation is
//! not possible here (no bzip2, no privileges), the demo says why and falls back to the bundled real
//! profile (`examples/bzip2/`, from `strace -c -w -f`).

//! The steps and their order are multios_experiment::demo::run; this parses the flags and prints
//! each step as it completes.

use crate::output::{Format, Out, Table};
use multios_experiment::demo::{self, Emulation, Projection};
use multios_experiment::Progress;
use multios_profile::Profile;
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
    #[arg(long, default_value = "shm", value_parser = ["shm", "proxy", "migrate"])]
    mechanism: String,
    /// Input size in MiB (32 by default; the tests use 4)
    #[arg(long, default_value_t = 32)]
    mib: usize,
    /// Rounds of paired native/emulated runs in ABBA order; the measured speedup is the median of
    /// the paired ratios, with a 95 % interval from 6 rounds on (the machine may be shared)
    #[arg(long, default_value_t = 6)]
    rounds: usize,
}

pub fn run(a: Args, out: &Out) -> super::Exit {
    let gammas: Vec<f64> = a
        .gamma
        .split(',')
        .map(|g| {
            g.trim()
                .parse::<f64>()
                .map_err(|_| anyhow::anyhow!("--gamma: '{g}' is not a number"))
        })
        .collect::<anyhow::Result<_>>()?;
    let cfg = demo::Config {
        out: a.out,
        profile: a.profile,
        gammas,
        fc: a.fc,
        mechanism: a.mechanism,
        mib: a.mib,
        rounds: a.rounds,
    };
    let mut printer = Printer {
        out,
        dir: &cfg.out,
        fc: &cfg.fc,
        bar: crate::progress::Bar::new(out),
    };
    let o = demo::run(&cfg, &mut printer)?;
    match out.format {
        Format::Json => out.json(&serde_json::json!({
            "profile": o.source, "profile_file": o.profile_file, "projections": o.projection.json,
            "emulation": o.emulation, "plots": o.plots, "report": o.report, "notes": o.notes,
        }))?,
        Format::Table => {
            outln!(
                "{} {} figures, profile.json and projection.csv in {}",
                out.bold("4. plots:"),
                o.plots.len(),
                cfg.out.display()
            );
            outln!("{} {} (offline HTML)", out.bold("5. report:"), o.report.display());
        }
        Format::Csv => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints each step of the demo as it completes (tables only), and writes projection.csv.
struct Printer<'a> {
    out: &'a Out,
    /// The output directory (projection.csv goes there).
    dir: &'a Path,
    fc: &'a str,
    bar: crate::progress::Bar,
}

impl Printer<'_> {
    fn table(&self) -> bool {
        self.out.format == Format::Table
    }
}

impl demo::Steps for Printer<'_> {
    type Error = anyhow::Error;

    fn progress(&mut self) -> &mut dyn Progress {
        &mut self.bar
    }

    fn profiled(&mut self, profile: &Profile, source: &str, notes: &[String]) -> anyhow::Result<()> {
        if self.table() {
            for n in notes {
                outln!("note: {n}");
            }
            outln!("{} {source}", self.out.bold("1. profile:"));
            super::profile::print_profile(profile, self.out, Some(12))?;
            outln!();
        }
        Ok(())
    }

    fn projected(&mut self, p: &Projection) -> anyhow::Result<()> {
        let mut t = Table::new(p.header.clone());
        for r in &p.rows {
            t.row(r.clone());
        }
        std::fs::write(self.dir.join("projection.csv"), t.to_csv())?;
        if self.table() {
            outln!(
                "{}",
                self.out
                    .bold("2. project (naïve S_n and refined S_r; γ = LWK compute gain):")
            );
            t.print(self.out);
            outln!();
        }
        Ok(())
    }

    fn emulated(&mut self, e: &Emulation) -> anyhow::Result<()> {
        if self.table() {
            outln!(
                "{} bzip2 natively and with delegation via '{}' at f_c = {} each way (γ = 1: both on Linux; median of the paired speedups of {} ABBA rounds, 95 % interval)",
                self.out.bold("3. emulate:"),
                e.mechanism.name(),
                self.fc,
                e.rounds
            );
            let mut t = Table::new(demo::EMULATION_HEADER);
            for r in &e.rows {
                t.row(r.clone());
            }
            t.print(self.out);
            for (pol, v) in &e.verdicts {
                outln!("verdict ({pol}): {}", v.text);
            }
            outln!();
        }
        Ok(())
    }

    fn emulation_skipped(&mut self, why: &str) {
        if self.table() {
            outln!("note: emulation skipped: {why}\n");
        }
    }
}
