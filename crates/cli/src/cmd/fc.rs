//! `multios fc` (issue #4): the paper's Table 3 forwarding microbenchmarks for each mechanism.

use crate::output::{Format, Out, Table};
use multios_emulate::{fc, Mechanism};
use multios_experiment::table3;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Trials per call (the minimum and median are reported)
    #[arg(long, default_value_t = 1000)]
    pub trials: usize,
    /// Mechanisms to measure (default: every one this build implements)
    #[arg(long, value_delimiter = ',')]
    pub mechanism: Vec<Mechanism>,
    /// CPU the benchmark runs on (default: the first available)
    #[arg(long, value_name = "LIST")]
    pub compute_cpus: Option<String>,
    /// CPU serving delegated calls (default: the last available)
    #[arg(long, value_name = "LIST")]
    pub control_cpus: Option<String>,
    /// Busy-wait this long before each timed call, as a program computes between its calls
    /// (e.g. 2us; default 0: back to back). A delegate that sleeps between calls is met asleep
    /// by spaced calls; back to back it may still be awake
    #[arg(long, value_name = "DURATION")]
    pub gap: Option<String>,
}

pub fn run(args: Args, out: &Out) -> super::Exit {
    if args.trials == 0 {
        anyhow::bail!("--trials must be at least 1");
    }
    let (compute, control) =
        multios_experiment::setup::cpu_split(args.compute_cpus.as_deref(), args.control_cpus.as_deref())?;
    if compute.overlaps(&control) {
        eprintln!("warning: control CPUs {control} overlap compute CPUs {compute}");
    }
    let gap_ns = match args.gap.as_deref() {
        None => 0,
        Some(g) => {
            let d = multios_units::Duration::parse(g).map_err(|e| anyhow::anyhow!("--gap '{g}': {e}"))?;
            if d.secs() > 1.0 {
                anyhow::bail!(
                    "--gap '{g}' is over 1 s: each of the 5 × (trials + 100) calls waits that long"
                );
            }
            d.nanos().round() as u64
        }
    };
    let mechs = table3::mechanisms(&args.mechanism)?;
    let r = fc::run_spaced(
        &mechs,
        args.trials,
        &compute,
        &control,
        0.0,
        Default::default(),
        gap_ns,
    )?;
    if out.format == Format::Json {
        out.json(&r)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new(table3::header(&mechs));
    for row in table3::rows(&r, &mechs) {
        t.row(row);
    }
    if out.format == Format::Table {
        outln!(
            "Table 3 microbenchmarks, {} trials each{}, every call delegated at f_c = 0; program on CPU {}, \
             control CPU {} (console = /dev/null)",
            r.trials,
            if gap_ns > 0 {
                format!(" {gap_ns} ns apart")
            } else {
                String::new()
            },
            r.compute_cpu,
            r.control_cpu
        );
    }
    t.print(out);
    Ok(ExitCode::SUCCESS)
}
