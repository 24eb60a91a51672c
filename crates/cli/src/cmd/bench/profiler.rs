//! `multios bench profiler` (issue #3): tracing overhead of `multios profile` vs `strace -c -f` vs
//! `perf trace -s`, as wall-time (and CPU-time) ratios traced/untraced measured side by side in one run.

use crate::output::{Format, Out, Table};
use multios_profiler::bench::{self, BenchConfig, Row};

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

fn ratio(a: f64, b: f64) -> String {
    if b > 0.0 {
        format!("{:.3}", a / b)
    } else {
        String::new()
    }
}

fn table(rows: &[Row]) -> Table {
    let mut t = Table::new([
        "workload",
        "tool",
        "untraced",
        "traced",
        "ratio",
        "ratio w/o start-up",
        "cpu ratio",
        "added/call",
    ]);
    for r in rows {
        t.row([
            r.workload.clone(),
            r.tool.clone(),
            format!("{:.3} s", r.untraced_s),
            format!("{:.3} s", r.traced_s),
            format!("{:.3}", r.ratio),
            r.startup_s
                .map_or(String::new(), |st| ratio(r.traced_s - st, r.untraced_s)),
            // perf trace's workload escapes RUSAGE_CHILDREN accounting: its CPU time is not comparable.
            if r.tool.starts_with("perf") {
                "n/a".into()
            } else {
                ratio(r.traced_cpu_s, r.untraced_cpu_s)
            },
            r.added_ns_per_call
                .map_or(String::new(), |ns| format!("{ns:.0} ns")),
        ]);
    }
    t
}

fn floor(reps: usize, out: &Out) -> crate::cmd::Exit {
    let rows = bench::floor(reps)?;
    let base = rows.first().map_or(0.0, |r| r.ns_per_call);
    let mut t = Table::new(["probes attached", "ns per null call", "added"]);
    for r in &rows {
        t.row([
            r.what.to_string(),
            format!("{:.1}", r.ns_per_call),
            format!("{:.1}", r.ns_per_call - base),
        ]);
    }
    if out.format == Format::Table {
        println!(
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
    let rows = bench::self_timing(&dir, pairs);
    let _ = std::fs::remove_dir_all(&dir);
    let rows = rows?;
    if out.format == Format::Json {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "syscall": r.syscall,
                    "pairs": r.pairs,
                    "self_timed_ns": r.self_timed_ns,
                    "profiled_ns": r.profiled_ns,
                    "paired_diff_ns": r.paired_diff_ns,
                    "within_50ns": r.paired_diff_ns.abs() <= 50.0,
                    "counts_right": r.counts_right,
                })
            })
            .collect();
        out.json(&v)?;
        return Ok(std::process::ExitCode::SUCCESS);
    }
    let mut t = Table::new([
        "syscall",
        "pairs",
        "self-timed ns",
        "profiled ns",
        "median paired difference",
        "within 50 ns",
        "counts right",
    ]);
    for r in &rows {
        t.row([
            r.syscall.to_string(),
            r.pairs.to_string(),
            format!("{:.1}", r.self_timed_ns),
            format!("{:.1}", r.profiled_ns),
            format!("{:+.1} ns", r.paired_diff_ns),
            if r.paired_diff_ns.abs() <= 50.0 {
                "yes"
            } else {
                "no"
            }
            .into(),
            if r.counts_right { "yes" } else { "no" }.into(),
        ]);
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
    let rows = bench::run(&cfg, &mut |what: &str| {
        if show {
            eprintln!("  running {what}");
        }
    });
    let _ = std::fs::remove_dir_all(&dir);
    let rows = rows?;
    if show {
        println!(
            "{}",
            out.bold(&format!(
                "Profiler overhead: medians of {} interleaved repetitions",
                cfg.reps
            ))
        );
    }
    table(&rows).print(out);
    if !show {
        return Ok(std::process::ExitCode::SUCCESS);
    }
    for tool in ["multios (eBPF)", "multios (inproc)"] {
        let m = |w: &str| rows.iter().find(|r| r.workload.starts_with(w) && r.tool == tool);
        if let Some(a) = m("(a)") {
            println!(
                "{tool} (a): added per call {:.0} ns (target ≤ 250), ratio {:.3} (target ≤ 1.3)",
                a.added_ns_per_call.unwrap_or_default(),
                a.ratio
            );
        }
        if let Some(b) = m("(b)") {
            println!(
                "{tool} (b): ratio {:.3} (target ≤ 1.02), cpu ratio {}",
                b.ratio,
                ratio(b.traced_cpu_s, b.untraced_cpu_s)
            );
        }
    }
    if let Some(st) = rows.iter().find_map(|r| r.startup_s) {
        println!(
            "multios (eBPF) start-up (probe loading and bias calibration, fitted from the two sizes of (a)): \
             {:.1} ms; each backend's added/call is the slope between the two sizes",
            st * 1e3
        );
    }
    println!("commands timed (stdout/stderr discarded):");
    for r in &rows {
        println!("  {}", r.command);
    }
    Ok(std::process::ExitCode::SUCCESS)
}
