//! `multios bench reserve` (issue #14): FWQ and the compute-bound γ in the LWK without and with
//! `lwk run --reserve`, side by side; the benchmark is multios_experiment::bench::reserve.

use crate::output::{Format, Out, Table};
use multios_experiment::bench::reserve::{self, Config};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Rounds: FWQ unreserved and reserved (ABBA), the compute program natively, in the LWK and
    /// reserved (rotated); at least 6 for a 95 % interval
    #[arg(long, default_value_t = 6)]
    rounds: usize,
    /// FWQ's work quantum, µs
    #[arg(long, default_value_t = 100.0)]
    fwq_quantum_us: f64,
    /// Length of one FWQ run, s
    #[arg(long, default_value_t = 2.0)]
    fwq_seconds: f64,
    /// Iterations of the compute-bound program
    #[arg(long, default_value_t = 200_000_000)]
    compute_iters: u64,
    /// The LWK's CPU (default: the last available)
    #[arg(long)]
    cpu: Option<usize>,
    /// The proxy's CPU (default: the first other available)
    #[arg(long)]
    proxy_cpu: Option<usize>,
}

fn ci(c: Option<(f64, f64)>) -> String {
    c.map_or_else(|| "-".into(), |(lo, hi)| format!("[{lo:.3}, {hi:.3}]"))
}

pub fn run(a: Args, out: &Out) -> crate::cmd::Exit {
    let cfg = Config {
        rounds: a.rounds,
        fwq_quantum_us: a.fwq_quantum_us,
        fwq_seconds: a.fwq_seconds,
        compute_iters: a.compute_iters,
        cpu: a.cpu,
        proxy_cpu: a.proxy_cpu,
        multios: std::env::current_exe()?,
    };
    let r = reserve::run(&cfg, &mut crate::progress::Bar::new(out))?;
    let mut fwq = Table::new(reserve::FWQ_HEADER);
    for row in &r.fwq_rows {
        fwq.row([
            row.measure.clone(),
            out.num(row.unreserved, 4),
            out.num(row.reserved, 4),
            out.num(row.ratio, 3),
            ci(row.ci95),
        ]);
    }
    let med = |f: fn(&reserve::ComputeRound) -> f64| {
        multios_lwk::bench::median(&r.compute.iter().map(f).collect::<Vec<_>>())
    };
    let mut gamma = Table::new([
        "native_s",
        "lwk_s",
        "γ",
        "interval",
        "native_reserved_s",
        "lwk_reserved_s",
        "γ_reserved",
        "interval",
    ]);
    gamma.row([
        out.num(med(|c| c.native_s), 4),
        out.num(med(|c| c.lwk_s), 4),
        out.num(r.gamma_unreserved.median, 4),
        ci(r.gamma_unreserved.ci95),
        out.num(med(|c| c.native_reserved_s), 4),
        out.num(med(|c| c.reserved_s), 4),
        out.num(r.gamma_reserved.median, 4),
        ci(r.gamma_reserved.ci95),
    ]);
    match out.format {
        Format::Json => out.json(&r)?,
        Format::Csv => out!("{}{}", fwq.to_csv(), gamma.to_csv()),
        Format::Table => {
            outln!(
                "{}",
                out.bold(&format!("LWK on CPU {}, proxy on CPU {}", r.cpu, r.proxy_cpu))
            );
            outln!("{}", r.reservation);
            outln!(
                "{}",
                out.bold(&format!(
                    "FWQ in the LWK, {} µs quanta, {} s per run (medians of {} runs a side; ratio: median of the paired ratios)",
                    r.fwq_quantum_us, r.fwq_seconds, cfg.rounds
                ))
            );
            out!("{}", fwq.render(out));
            outln!();
            outln!(
                "{}",
                out.bold("compute-bound loop (medians); γ = native / LWK pair by pair (95 % interval); reserved: both on the reserved CPU")
            );
            out!("{}", gamma.render(out));
        }
    }
    Ok(ExitCode::SUCCESS)
}
