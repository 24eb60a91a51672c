//! `multios bench emulate` (issue #4): delivered f_c accuracy, forwarding floors next to the
//! cache-line round trip, and pass-through overhead, all measured side by side in one run.

//! The checks and their verdicts are multios_experiment::bench::emulate.

use crate::output::{Format, Out, Table};
use multios_experiment::bench::emulate::{self, Config};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Native/emulated pairs of runs per pass-through workload, alternated ABBA and compared pair
    /// by pair (at least 6 for a 95 % confidence interval of the median ratio)
    #[arg(long, default_value_t = 9)]
    runs: usize,
    /// Also run shm and migrate under the lazy interception (Syscall User Dispatch left on) in
    /// each round: the before/after of the eager rewriting
    #[arg(long)]
    lazy: bool,
    /// Skip the pass-through runs (the slow part: bzip2 and dd, natively and under each mechanism)
    #[arg(long)]
    no_passthrough: bool,
    /// Pairs of short runs (bzip2 on a 64 KiB input) that measure each mechanism's fixed
    /// start-up cost on its own (0: skip)
    #[arg(long, default_value_t = 31)]
    startup_runs: usize,
    /// Size of the bzip2 input, MiB
    #[arg(long, default_value_t = 8)]
    bzip2_mib: usize,
    /// Native/emulated pairs of the pipeline `cat | gzip | sha256sum` (policy all, f_c 0) per
    /// mechanism (0: skip)
    #[arg(long, default_value_t = 5)]
    pipeline_runs: usize,
}

pub fn run(args: Args, out: &Out) -> crate::cmd::Exit {
    let (compute, control) = crate::cmd::emulate::cpus(None, None)?;
    let cfg = Config {
        runs: args.runs,
        lazy: args.lazy,
        passthrough: !args.no_passthrough,
        startup_runs: args.startup_runs,
        bzip2_mib: args.bzip2_mib,
        pipeline_runs: args.pipeline_runs,
        compute,
        control,
    };
    let r = emulate::run(&cfg, &mut crate::progress::Bar::new(out))?;
    if out.format == Format::Json {
        out.json(&r)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new(["check", "measured", "target", "met"]);
    for row in emulate::rows(&r) {
        t.row(row);
    }
    t.print(out);
    Ok(ExitCode::SUCCESS)
}
