//! `multios bench profiler` (issue #3): tracing overhead of `multios profile` vs `strace -c -f` vs
//! `perf trace -s`, as wall-time (and CPU-time) ratios traced/untraced measured side by side in one run.

//! The tables, targets and verdicts are multios_experiment::bench::profiler.

use crate::output::{Format, Out, Table};
use multios_experiment::bench::profiler as bench;
use multios_profiler::bench::BenchConfig;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Smaller sizes and 3 repetitions (for CI): 200 k calls, 20 k for strace/perf, 5 MB for bzip2
    #[arg(long)]
    quick: bool,
    /// Repetitions per tool (medians are reported)
    #[arg(long)]
    reps: Option<usize>,
    /// System calls of the syscall-heavy workload (a) [default: 2000000]
    #[arg(long)]
    calls: Option<u64>,
    /// Size of the bzip2 -9 input of workload (b), MB [default: 50]
    #[arg(long)]
    mb: Option<usize>,
    /// Instead: time the null system call with the probes' pieces attached one by one (where the
    /// per-call cost goes)
    #[arg(long)]
    floor: bool,
    /// Instead: the eBPF backend's time per null call (getppid, getpid) against the program's own
    /// timing of it, in PAIRS paired runs (target: median paired difference within 50 ns)
    #[arg(long, value_name = "PAIRS", num_args = 0..=1, default_missing_value = "15")]
    accuracy: Option<usize>,
    /// Run only workload a (syscall-heavy) or b (compute-heavy)
    #[arg(long, value_parser = ["a", "b"])]
    only: Option<String>,
}

fn floor(reps: usize, out: &Out) -> crate::cmd::Exit {
    let rows = bench::floor(reps)?;
    let mut t = Table::new(["probes attached", "ns per null call", "added"]);
    for r in bench::floor_rows(&rows) {
        t.row(r);
    }
    if out.format == Format::Table {
        outln!(
            "{}",
            out.bold(&format!(
                "Cost floor of the probes: null system call, median of {reps} repetitions"
            ))
        );
    }
    t.print(out);
    Ok(std::process::ExitCode::SUCCESS)
}

/// `--accuracy`: per-call times against self-timing (issue #16 moved this check out of the tests).
fn accuracy(pairs: usize, out: &Out) -> crate::cmd::Exit {
    let dir = std::env::temp_dir().join(format!("multios-bench-accuracy-{}", std::process::id()));
    let rows = bench::accuracy(&dir, pairs)?;
    if out.format == Format::Json {
        out.json(&rows)?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let mut t = Table::new(bench::ACCURACY_HEADER);
    for r in bench::accuracy_rows(&rows) {
        t.row(r);
    }
    t.print(out);
    Ok(std::process::ExitCode::SUCCESS)
}

pub fn run(args: Args, out: &Out) -> crate::cmd::Exit {
    if args.floor {
        return floor(args.reps.unwrap_or(5), out);
    }
    if let Some(pairs) = args.accuracy {
        return accuracy(pairs, out);
    }
    let exe =
        std::env::current_exe().map_err(|e| anyhow::anyhow!("cannot find the multios executable: {e}"))?;
    let dir = std::env::temp_dir().join(format!("multios-bench-profiler-{}", std::process::id()));
    let mut cfg = if args.quick {
        BenchConfig::quick(exe, dir.clone())
    } else {
        BenchConfig::full(exe, dir.clone())
    };
    if let Some(r) = args.reps {
        cfg.reps = r.max(1);
    }
    if let Some(c) = args.calls {
        cfg.calls = c.max(2);
    }
    if let Some(m) = args.mb {
        cfg.bzip2_mb = m.max(1);
    }
    cfg.only = args.only.as_deref().and_then(|o| o.chars().next());
    let show = out.format == Format::Table;
    let rows = bench::run(&cfg, &mut crate::progress::Bar::new(out))?;
    if show {
        outln!(
            "{}",
            out.bold(&format!(
                "Profiler overhead: medians of {} interleaved repetitions",
                cfg.reps
            ))
        );
    }
    let mut t = Table::new(bench::HEADER);
    for r in bench::table_rows(&rows) {
        t.row(r);
    }
    t.print(out);
    if !show {
        return Ok(std::process::ExitCode::SUCCESS);
    }
    for line in bench::target_lines(&rows) {
        outln!("{line}");
    }
    outln!("commands timed (stdout/stderr discarded):");
    for r in &rows {
        outln!("  {}", r.command);
    }
    Ok(std::process::ExitCode::SUCCESS)
}
