//! `multios bench lwk` (issue #5): the delegation round trip, static hello world end to end, and γ
//! (native time / LWK time) on a compute-bound and a TLB-bound program, all side by side in one
//! run, with the refined model's projection of each LWK run printed next to the measured time.

//! The benchmark is multios_experiment::bench::lwk.

use crate::output::{Format, Out, Table};
use multios_experiment::bench::lwk::{self, Config};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Native/LWK pairs of runs per program, alternated ABBA (medians and per-pair ratios are
    /// compared; at least 6 for a 95 % interval of γ)
    #[arg(long, default_value_t = 7)]
    runs: usize,
    /// System calls timed per round-trip mechanism
    #[arg(long, default_value_t = 20_000)]
    calls: u32,
    /// Array size of the TLB-bound program, MiB
    #[arg(long, default_value_t = 1024)]
    tlb_mib: u64,
    /// Dependent random accesses of the TLB-bound program
    #[arg(long, default_value_t = 10_000_000)]
    tlb_steps: u64,
    /// Iterations of the compute-bound program
    #[arg(long, default_value_t = 200_000_000)]
    compute_iters: u64,
}

pub fn run(args: Args, out: &Out) -> crate::cmd::Exit {
    let cfg = Config {
        runs: args.runs,
        calls: args.calls,
        tlb_mib: args.tlb_mib,
        tlb_steps: args.tlb_steps,
        compute_iters: args.compute_iters,
        multios: std::env::current_exe()?,
    };
    let r = lwk::run(&cfg, &mut crate::progress::Bar::new(out))?;
    let mut fct = Table::new(lwk::ROUND_TRIP_HEADER);
    for row in lwk::round_trip_rows(&r) {
        fct.row(row);
    }
    let mut pt = Table::new(lwk::PROGRAM_HEADER);
    for row in lwk::program_rows(&r) {
        pt.row(row);
    }
    match out.format {
        Format::Json => out.json(&r)?,
        Format::Csv => out!("{}{}", fct.to_csv(), pt.to_csv()),
        Format::Table => {
            outln!(
                "{}",
                out.bold("Round trip of one system call from guest ring 3 (McKernel offload: 6.28 µs)")
            );
            out!("{}", fct.render(out));
            outln!();
            outln!(
                "{}",
                out.bold(
                    "Programs, native vs LWK, runs alternated ABBA (medians; gamma = native loop / LWK loop; gamma_paired = median of the per-pair ratios [95 % interval])"
                )
            );
            out!("{}", pt.render(out));
            outln!(
                "projection: refined model (eq. 4-11) from the LWK run's profile, C = native wall - Σg, \
                 f_c = half the delegated ring round trip, γ = {:.3} (compute-bound row) or \
                 the program's own γ; the model has no VM start-up term (dominant for hello world)",
                r.gamma_compute
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
