//! `multios bench hrt` (issue #13): split execution's Fig. 2 rows (Multiverse) — synchronous call,
//! asynchronous call, address-space merger — next to the cache-line round trip and a native call
//! measured in the same run. The benchmark is multios_experiment::bench::hrt.

use crate::output::{Format, Out, Table};
use multios_experiment::bench::hrt::{self, Config};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Rounds, alternated ABBA (cache line and synchronous call)
    #[arg(long, default_value_t = 8)]
    rounds: usize,
    /// Timed batches per row and round
    #[arg(long, default_value_t = 40)]
    batches: usize,
    /// Calls per batch of the fast rows
    #[arg(long, default_value_t = 200)]
    batch: usize,
    /// Calls per batch of the slow rows (asynchronous call, thread, merger)
    #[arg(long, default_value_t = 10)]
    slow_batch: usize,
}

pub fn run(args: Args, out: &Out) -> crate::cmd::Exit {
    let cfg = Config {
        rounds: args.rounds,
        batches: args.batches,
        batch: args.batch,
        slow_batch: args.slow_batch,
    };
    let r = hrt::run(&cfg, &mut crate::progress::Bar::new(out))?;
    let mut t = Table::new(hrt::HEADER);
    for row in hrt::rows(&r) {
        t.row(row);
    }
    match out.format {
        Format::Json => out.json(&r)?,
        Format::Csv => out!("{}", t.to_csv()),
        Format::Table => {
            outln!(
                "{}",
                out.bold(&format!(
                    "Split execution (Multiverse Fig. 2), caller on CPU {}, vCPU on CPU {} (medians of batch means; rounds ABBA)",
                    r.caller_cpu, r.vcpu_cpu
                ))
            );
            out!("{}", t.render(out));
            outln!(
                "synchronous call / cache-line round trip, median of per-round ratios: {:.2}× — target ≤ 1 µs median: {}",
                r.sync_over_cacheline,
                if r.sync_target_met { "met" } else { "NOT met" }
            );
            outln!(
                "merger at hrt_init: {:.1} µs ({} memslots of 64 MiB, {:.1} µs of it in KVM_SET_USER_MEMORY_REGION); at the end {} memslots, {:.1} ms in KVM_SET_USER_MEMORY_REGION, {} faults filled, {} EFAULT resyncs, {} calls forwarded",
                r.init_merge_ns as f64 / 1000.0,
                r.memslots_at_init,
                r.init_memslot_ns as f64 / 1000.0,
                r.memslots_end,
                r.memslot_ns_total as f64 / 1e6,
                r.faults_filled,
                r.efaults,
                r.calls_forwarded
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
