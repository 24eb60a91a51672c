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
    let mechs = table3::mechanisms(&args.mechanism)?;
    let r = fc::run(&mechs, args.trials, &compute, &control)?;
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
            "Table 3 microbenchmarks, {} trials each, every call delegated at f_c = 0; program on CPU {}, \
             control CPU {} (console = /dev/null)",
            r.trials,
            r.compute_cpu,
            r.control_cpu
        );
    }
    t.print(out);
    Ok(ExitCode::SUCCESS)
}
