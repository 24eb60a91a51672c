//! `multios bench map` (issue #12): the IPC microbenchmark under Linux, round-robin and `map run`,
//! the calibration and the projection; the body is multios_experiment::bench::map.

use crate::output::{Format, Out, Table};
use multios_experiment::bench::map::{self, Config};
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Process counts (even; pairs exchange messages)
    #[arg(long, value_delimiter = ',', default_value = "2,4,8,16,32")]
    procs: Vec<usize>,
    /// Message sizes in bytes
    #[arg(long, value_delimiter = ',', default_value = "1024,4096,16384,65536")]
    sizes: Vec<usize>,
    /// Exchanges per pair and run
    #[arg(long, default_value_t = 2000)]
    rounds: u64,
    /// Runs of each placement (interleaved)
    #[arg(long, default_value_t = 3)]
    repeats: usize,
    /// map run's polling interval
    #[arg(long, default_value = "1ms")]
    poll: multios_units::Duration,
    /// Projection: extra cost per hop beyond the first (an assumption: not measurable on 2 CPUs)
    #[arg(long, default_value_t = 0.5)]
    per_hop: f64,
    /// Scratch directory for the benchmark program and its output
    #[arg(long, default_value = "/tmp/multios-bench-map")]
    workdir: std::path::PathBuf,
}

pub fn run(a: Args, out: &Out) -> crate::cmd::Exit {
    if let Some(p) = a.procs.iter().find(|&&p| p < 2 || p % 2 == 1) {
        anyhow::bail!("--procs: {p} is not an even count of at least 2 (processes exchange in pairs)");
    }
    if a.sizes.contains(&0) || a.sizes.is_empty() {
        anyhow::bail!("--sizes: message sizes must be at least 1 byte");
    }
    if a.rounds == 0 || a.repeats == 0 {
        anyhow::bail!("--rounds and --repeats must be at least 1");
    }
    let cfg = Config {
        procs: a.procs,
        sizes: a.sizes,
        rounds: a.rounds,
        repeats: a.repeats,
        poll: std::time::Duration::from_secs_f64(a.poll.secs().max(0.0)),
        per_hop: a.per_hop,
        workdir: a.workdir,
    };
    let r = map::run(&cfg, &mut crate::progress::Bar::new(out))?;
    if out.format == Format::Json {
        out.json(&r)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new([
        "procs",
        "size",
        "Linux µs",
        "round-robin µs",
        "map µs",
        "map/Linux",
        "rr/Linux",
        "map CPUs",
        "pred rr µs",
        "pred map µs",
    ]);
    for row in &r.rows {
        let cpus: Vec<String> = row.map_cpus.iter().map(|c| c.to_string()).collect();
        t.row([
            row.procs.to_string(),
            row.size.to_string(),
            format!("{:.2}", row.linux_us),
            format!("{:.2}", row.round_robin_us),
            format!("{:.2}", row.map_us),
            format!("{:.3}", row.map_vs_linux),
            format!("{:.3}", row.round_robin_vs_linux),
            cpus.join(" "),
            format!("{:.2}", row.predicted_round_robin_us),
            format!("{:.2}", row.predicted_map_us),
        ]);
    }
    if out.format == Format::Table {
        outln!(
            "IPC microbenchmark (seed 001 §III on pipes): time per exchange, medians of {} interleaved runs of {} exchanges per pair; map run polls every {} µs",
            cfg.repeats, cfg.rounds, r.poll_us
        );
    }
    t.print(out);
    if out.format != Format::Table {
        return Ok(ExitCode::SUCCESS);
    }
    outln!();
    outln!("calibration (one pair alone):");
    for c in &r.calibration {
        outln!(
            "  {} B: one CPU {:.2} µs, two CPUs {:.2} µs per exchange",
            c.size,
            c.same_cpu_us,
            c.two_cpus_us
        );
    }
    outln!(
        "  fitted: {:.1} ns per message + {:.4} ns per byte between CPUs; one CPU costs {:.3}× two (local factor)",
        r.cost.ns_per_event, r.cost.ns_per_byte, r.cost.local_factor
    );
    outln!(
        "  prediction vs measurement on this machine (round-robin and map rows): median error {:.1} %, largest {:.1} %",
        100.0 * r.prediction_error_median,
        100.0 * r.prediction_error_max
    );
    outln!();
    outln!(
        "projection (per-hop factor {} ASSUMED: this machine has only one hop):",
        r.per_hop_assumed
    );
    let mut p = Table::new([
        "topology",
        "procs",
        "strategy",
        "HOP_BYTE / treematch",
        "predicted µs per exchange",
    ]);
    for x in &r.projection {
        p.row([
            x.topology.clone(),
            x.procs.to_string(),
            x.strategy.clone(),
            format!("{:.3}", x.hop_byte_vs_treematch),
            format!("{:.2}", x.predicted_us),
        ]);
    }
    p.print(out);
    Ok(ExitCode::SUCCESS)
}
