//! `multios bench hpcc` (issue #5): HPC Challenge natively and in the LWK, runs alternated ABBA,
//! γ per kernel (LWK rate / native rate) pair by pair with a 95 % order-statistic interval.

//! The benchmark is multios_experiment::bench::hpcc.

use crate::output::{Format, Out, Table};
use multios_experiment::bench::hpcc::{self, Config};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Native/LWK pairs of runs (at least 6 for a 95 % interval)
    #[arg(long, default_value_t = 7)]
    runs: usize,
    /// HPL's matrix order N (the other kernels size themselves from it; RandomAccess's table is
    /// about N²·4 bytes)
    #[arg(long, default_value_t = 2000)]
    n: u32,
    /// HPL's block size
    #[arg(long, default_value_t = 80)]
    nb: u32,
    /// The MPI launcher (Open MPI's, which Debian's hpcc is linked with)
    #[arg(long, default_value = "mpirun.openmpi")]
    mpirun: String,
}

pub fn run(args: Args, out: &Out) -> crate::cmd::Exit {
    let cfg = Config {
        runs: args.runs,
        n: args.n,
        nb: args.nb,
        mpirun: args.mpirun.clone(),
        multios: std::env::current_exe()?,
    };
    let rows = hpcc::run(&cfg, &mut crate::progress::Bar::new(out))?;
    if out.format == Format::Json {
        out.json(&rows)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new(hpcc::HEADER);
    for row in hpcc::table_rows(&rows) {
        t.row(row);
    }
    t.print(out);
    if out.format == Format::Table {
        outln!(
            "hpcc -n 1 under {} (OPENBLAS_NUM_THREADS=1), HPL N = {}, NB = {}; γ is the median of the per-pair ratios",
            args.mpirun, args.n, args.nb
        );
    }
    Ok(ExitCode::SUCCESS)
}
