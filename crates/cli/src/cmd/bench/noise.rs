//! `multios bench noise` (issue #6): throughput of the scale simulation, the per-detour candidate
//! engine against a pass over every rank, timed side by side in one run (wall and CPU time: the
//! machine is shared, CPU time is what the simulation itself cost).

//! The checks, the timing and the table rows are multios_experiment::bench::noise.

use crate::output::{Format, Out, Table};
use multios_experiment::bench::noise::{self, ScaleBench};
use multios_noise::NoiseTrace;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Simulated ranks
    #[arg(long, default_value_t = 1_000_000)]
    ranks: u64,
    /// Steps per simulation
    #[arg(long, default_value_t = 1000)]
    steps: u64,
    /// Noise signature
    #[arg(long, default_value = "10Hz:2.5ms")]
    signature: String,
    /// Work per step
    #[arg(long, default_value = "100us")]
    work: multios_units::Duration,
    /// Also time the binomial-tree allreduce (a pass over every rank per tree level)
    #[arg(long)]
    allreduce: bool,
    /// Instead: FWQ, FTQ and selfish detour on CPU 0 for a fraction of a second each, their quantum,
    /// work unit, iteration and elapsed time against their targets (the timing checks of the issue #6
    /// tests, moved here by issue #16)
    #[arg(long)]
    quanta: bool,
    /// With --quanta: also the static guest programs natively and in the LWK (needs KVM and gcc)
    #[arg(long, requires = "quanta")]
    lwk: bool,
}

/// `--quanta`: the benchmarks' own timing against their targets, on CPU 0.
fn quanta(lwk: bool, out: &Out) -> crate::cmd::Exit {
    let rows = noise::quanta(lwk, &mut crate::progress::Bar::new(out))?;
    if out.format == Format::Json {
        out.json(&rows)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new(["check", "measured", "target", "met"]);
    for c in &rows {
        t.row([
            c.what.clone(),
            c.measured.clone(),
            c.target.clone(),
            if c.ok { "yes" } else { "no" }.to_string(),
        ]);
    }
    t.print(out);
    Ok(ExitCode::SUCCESS)
}

pub fn run(a: Args, out: &Out) -> crate::cmd::Exit {
    if a.quanta {
        return quanta(a.lwk, out);
    }
    let bench = ScaleBench {
        trace: NoiseTrace::signature(&a.signature)?,
        ranks: a.ranks,
        steps: a.steps,
        work_ns: a.work.nanos(),
        allreduce: a.allreduce,
    };
    let rows = noise::scale_engines(&bench, &mut crate::progress::Bar::new(out))?;
    let mut t = Table::new(noise::HEADER);
    for r in noise::table_rows(&bench, &rows) {
        t.row(r);
    }
    t.print(out);
    if out.format == Format::Table {
        let same = noise::engines_agree(&rows);
        outln!(
            "{} noise, {} of work per step; the two barrier engines {}",
            a.signature,
            a.work,
            if same { "agree (same slowdown)" } else { "DISAGREE" }
        );
    }
    Ok(ExitCode::SUCCESS)
}
