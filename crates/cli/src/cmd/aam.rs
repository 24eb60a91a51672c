//! `multios aam` (issue #11): the Asynchronous Abstract Machines runtime's benchmarks against
//! the goals, its key-value service against the ordinary version, and its timeline.
//! The bodies are multios_experiment::bench::aam.

use crate::output::{Format, Out, Table};
use anyhow::Context;
use multios_experiment::bench::aam::{self, KvComparison, LoadConfig, LoadReport, Mix};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    which: Which,
}

#[derive(clap::Subcommand, Debug)]
enum Which {
    /// Table 1 microbenchmarks (local task, machine call active and idle, core move) with their
    /// same-run references, judged against the goals
    Bench(BenchArgs),
    /// The key-value service built from machines against a Tokio server and a thread-per-connection
    /// server, under the same bounded loopback load (each over its own SQLite file, WAL)
    Kv(KvArgs),
    /// Record a small machine-call workload (or, with --kv, the key-value service under the Machine
    /// Manager's utilization policy) and write its Chrome trace JSON (Perfetto) and, beside it, the
    /// timeline as PNG and SVG (with the CSV of what is drawn)
    Trace(TraceArgs),
}

/// The key-value load's request mix.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum MixArg {
    /// Phases of 100 requests per connection: small values, then 16 KiB hardly compressible ones
    Phased,
    /// Every value --value-bytes of compressible text
    Uniform,
}

impl MixArg {
    fn mix(self) -> Mix {
        match self {
            MixArg::Phased => Mix::PHASED,
            MixArg::Uniform => Mix::Uniform,
        }
    }
}

#[derive(clap::Args, Debug)]
struct BenchArgs {
    /// Samples per benchmark
    #[arg(long, default_value_t = 10_000)]
    iterations: usize,
    /// Pairs of (active machine call, cache-line round trip) measured back to back; the verdict
    /// takes the median of the per-pair ratios
    #[arg(long, default_value_t = 5, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1000))]
    runs: usize,
    /// Requests per server for the key-value comparison (4 connections, 256-byte values)
    #[arg(long, default_value_t = 10_000)]
    kv_requests: usize,
    /// Skip the key-value comparison
    #[arg(long)]
    no_kv: bool,
    /// The key-value load's request mix
    #[arg(long, value_enum, default_value = "phased")]
    mix: MixArg,
    /// Skip the model check (compute + pread loop, direct and through the OS machine, against the
    /// refined model's projection)
    #[arg(long)]
    no_validate: bool,
    /// Accepted for compatibility: the model check runs by default
    #[arg(long, hide = true)]
    validate: bool,
}

#[derive(clap::Args, Debug)]
struct KvArgs {
    /// At most this many requests in all (per server)
    #[arg(long, default_value_t = 20_000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    requests: usize,
    /// Concurrent connections (a thread each in the load generator)
    #[arg(long, default_value_t = 4, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=256))]
    connections: usize,
    /// Stop issuing requests after this long (per server)
    #[arg(long, default_value = "10s")]
    duration: multios_units::Duration,
    /// Bytes per value (the small values of the phased mix)
    #[arg(long, default_value_t = 256, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=(64 << 20)))]
    value_bytes: usize,
    /// The request mix
    #[arg(long, value_enum, default_value = "phased")]
    mix: MixArg,
}

#[derive(clap::Args, Debug)]
struct TraceArgs {
    /// Where to write the Chrome trace JSON; the timeline goes to FILE.png, FILE.svg and FILE.csv
    #[arg(short = 'o', long = "output", value_name = "FILE.json")]
    output: PathBuf,
    /// Machine calls to record
    #[arg(long, default_value_t = 200, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=10_000_000))]
    calls: usize,
    /// Trace the key-value service (network, storage and compression machines under the Machine
    /// Manager's utilization policy, phased load) instead
    #[arg(long)]
    kv: bool,
    /// With --kv: requests of the load
    #[arg(long, default_value_t = 300)]
    requests: usize,
    /// With --kv: connections of the load
    #[arg(long, default_value_t = 4, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=256))]
    connections: usize,
}

pub fn run(a: Args, out: &Out) -> crate::cmd::Exit {
    match a.which {
        Which::Bench(b) => bench(b, out),
        Which::Kv(k) => kv(k, out),
        Which::Trace(t) => trace(t, out),
    }
}

fn bench(a: BenchArgs, out: &Out) -> crate::cmd::Exit {
    let o = aam::BenchOptions {
        iterations: a.iterations,
        runs: a.runs,
        kv: (!a.no_kv).then(|| LoadConfig {
            requests: a.kv_requests,
            mix: a.mix.mix(),
            ..LoadConfig::default()
        }),
        validate: !a.no_validate || a.validate,
    };
    let r = aam::run_bench(&o)?;
    if out.format == Format::Json {
        out.json(&r)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new(["operation", "median ns", "mean ns", "sd ns", "p99 ns"]);
    for b in &r.report.results {
        t.row([
            b.name.clone(),
            format!("{:.0}", b.ns.median),
            format!("{:.0}", b.ns.mean),
            format!("{:.0}", b.ns.sd),
            format!("{:.0}", b.ns.p99),
        ]);
    }
    t.print(out);
    if out.format == Format::Table {
        outln!();
    }
    let mut p = Table::new([
        "run",
        "active call total ns",
        "direct ns",
        "cache-line RT ns",
        "call / RT",
    ]);
    for (i, x) in r.active_runs.iter().enumerate() {
        p.row([
            (i + 1).to_string(),
            format!("{:.0}", x.call_total_median_ns),
            format!("{:.0}", x.call_direct_median_ns),
            format!("{:.0}", x.cache_line_median_ns),
            format!("{:.2}", x.ratio),
        ]);
    }
    p.print(out);
    if let Some(k) = &r.kv {
        if out.format == Format::Table {
            outln!();
        }
        kv_table(k).print(out);
        if out.format == Format::Table {
            outln!();
        }
        layouts_table(k).print(out);
    }
    if let (Some(v), Format::Table) = (&r.validation, out.format) {
        outln!();
        outln!(
            "model check: C {:.1} ms, pread n {} g {:.1} ms; f_c {:.0} ns (pread-shaped call median {:.0} ns / 2); beside ({} steps a chunk): γ {:.3}, wait for the OS machine's CPU mean {:.0} / median {:.0} ns ⇒ stall {:.0} ns per call; co-run {:.3}, u {:.3}",
            v.workload.c * 1e3,
            v.workload.calls.first().map_or(0, |c| c.n),
            v.workload.calls.first().map_or(0.0, |c| c.g) * 1e3,
            v.fc_s * 1e9,
            v.call_median_ns,
            v.beside.chunk_steps,
            v.beside.gamma,
            v.beside.wait_mean_ns,
            v.beside.wait_median_ns,
            v.beside.stall_ns,
            v.beside.co_run,
            v.beside.share
        );
        outln!(
            "  direct {:.1} ms; OS machine {:.1} ms measured; projected γ=1 {:.1} ms ({:+.1} %), γ {:.1} ms ({:+.1} %), γ+stall {:.1} ms ({:+.1} %) [γ+share {:.1} ms ({:+.1} %)]",
            v.measured_direct_s * 1e3,
            v.measured_os_machine_s * 1e3,
            v.projected_plain_s * 1e3,
            v.error_plain_pct,
            v.projected_gamma_s * 1e3,
            v.error_gamma_pct,
            v.projected_os_machine_s * 1e3,
            v.error_pct,
            v.projected_share_s * 1e3,
            v.error_share_pct
        );
    }
    let mut v = Table::new(["goal", "measured", "target", "verdict"]);
    for g in &r.verdicts {
        v.row([
            g.goal.clone(),
            g.measured.clone(),
            g.target.clone(),
            g.verdict.to_string(),
        ]);
    }
    if out.format == Format::Table {
        outln!();
    }
    v.print(out);
    Ok(ExitCode::SUCCESS)
}

/// The machine server's layouts against the static shared one, with the manager's moves.
fn layouts_table(k: &KvComparison) -> Table {
    let mut t = Table::new([
        "layout",
        "req/s",
        "p99 µs",
        "req/s vs shared",
        "p99 vs shared",
        "core moves",
        "IMS grants",
        "idle hand-overs",
        "policy moves",
        "move median µs",
    ]);
    for l in &k.layouts {
        let m = &l.stats.moves;
        t.row([
            l.stats.layout.label().to_string(),
            format!("{:.0}", l.report.throughput_rps),
            format!("{:.1}", l.report.p99_us),
            format!("{:.2}", l.throughput_vs_shared),
            format!("{:.2}", l.p99_vs_shared),
            m.total().to_string(),
            m.ims.to_string(),
            m.idle.to_string(),
            m.policy.to_string(),
            format!("{:.1}", l.stats.move_median_ns / 1e3),
        ]);
    }
    t
}

/// The servers' rows: threads, Tokio, then the machine server under each layout.
fn kv_table(k: &KvComparison) -> Table {
    let mut t = Table::new([
        "server",
        "requests",
        "req/s",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
        "errors",
        "mismatches",
    ]);
    for s in [&k.threads, &k.tokio]
        .into_iter()
        .chain(k.layouts.iter().map(|l| &l.report))
    {
        t.row(kv_row(s));
    }
    t
}

fn kv_row(r: &LoadReport) -> [String; 8] {
    [
        r.server.clone(),
        r.requests.to_string(),
        format!("{:.0}", r.throughput_rps),
        format!("{:.1}", r.p50_us),
        format!("{:.1}", r.p99_us),
        format!("{:.1}", r.p999_us),
        r.errors.to_string(),
        r.mismatches.to_string(),
    ]
}

fn kv(a: KvArgs, out: &Out) -> crate::cmd::Exit {
    if a.duration.nanos() <= 0.0 {
        anyhow::bail!("--duration {}: give a positive time (e.g. 10s)", a.duration);
    }
    let load = LoadConfig {
        requests: a.requests,
        connections: a.connections,
        duration: std::time::Duration::from_nanos(a.duration.nanos() as u64),
        value_bytes: a.value_bytes,
        mix: a.mix.mix(),
        ..LoadConfig::default()
    };
    let r = aam::run_kv(&load)?;
    if out.format == Format::Json {
        out.json(&r)?;
    } else {
        kv_table(&r).print(out);
        if out.format == Format::Table {
            outln!();
        }
        layouts_table(&r).print(out);
        if out.format == Format::Table {
            outln!(
                "machines / threads: throughput {:.2}×, p99 {:.2}×; machines / tokio: throughput {:.2}×, p99 {:.2}×",
                r.throughput_ratio,
                r.p99_ratio,
                r.throughput_vs_tokio,
                r.p99_vs_tokio
            );
            outln!(
                "storage: {}; tokio: {} workers; machines: OS machine on CPU {} ({} workers); static-shared: network/storage/compression on CPU {}; static-spread: network on CPU {}, storage/compression on CPU {}; utilization: a Machine Manager gives CPUs {} and {} to one of the three at a time; mix {:?}",
                r.storage,
                r.tokio_workers,
                r.placement.os_cpu,
                r.placement.os_workers,
                r.placement.machine_cpu,
                r.placement.os_cpu,
                r.placement.machine_cpu,
                r.placement.os_cpu,
                r.placement.machine_cpu,
                r.load.mix
            );
        }
    }
    let wrong = [&r.tokio, &r.threads]
        .into_iter()
        .chain(r.layouts.iter().map(|l| &l.report))
        .map(|x| x.errors + x.mismatches)
        .sum::<usize>();
    Ok(if wrong == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn trace(a: TraceArgs, out: &Out) -> crate::cmd::Exit {
    let r = if a.kv {
        aam::run_kv_trace(a.requests, a.connections)?
    } else {
        aam::run_trace(a.calls)?
    };
    std::fs::write(&a.output, &r.chrome_json)
        .with_context(|| format!("writing the trace to {}", a.output.display()))?;
    let stem = a.output.with_extension("");
    let pic = r
        .write_timeline(&stem)
        .with_context(|| format!("drawing the timeline beside {}", a.output.display()))?;
    if out.format == Format::Json {
        out.json(&serde_json::json!({
            "output": a.output,
            "workload": r.workload,
            "calls": r.calls,
            "moves": r.moves,
            "machines": r.machines,
            "bytes": r.chrome_json.len(),
            "timeline": pic,
        }))?;
    } else {
        outln!(
            "{}: {} on {} (Chrome trace JSON: open in Perfetto or chrome://tracing)",
            a.output.display(),
            r.workload,
            r.machines.join(", ")
        );
        outln!(
            "core moves: {} (IMS grants {}, idle hand-overs {}, policy {}, explicit {})",
            r.moves.total(),
            r.moves.ims,
            r.moves.idle,
            r.moves.policy,
            r.moves.explicit
        );
        outln!(
            "timeline: {} and {} (data: {})",
            pic.png.display(),
            pic.svg.display(),
            pic.csv.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
