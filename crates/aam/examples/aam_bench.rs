//! Prints the AAM microbenchmarks and their same-run references (medians first).
//! `cargo run -p multios-aam --release --example aam_bench [iterations] [--json]`

use multios_aam::bench::{run_all, BenchConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut cfg = BenchConfig::default_here();
    if let Some(n) = args.iter().find_map(|a| a.parse::<usize>().ok()) {
        cfg.iterations = n;
    }
    let report = run_all(&cfg)?;
    if args.iter().any(|a| a == "--json") {
        println!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(());
    }
    println!(
        "client CPU {}, server CPU {}, {} samples, no-op task {} bytes",
        cfg.client_cpu, cfg.server_cpu, cfg.iterations, report.noop_task_bytes
    );
    println!(
        "{:<34} {:>9} {:>9} {:>9} {:>9}",
        "operation", "median", "mean", "sd", "p99"
    );
    for r in &report.results {
        let s = &r.ns;
        println!(
            "{:<34} {:>9.0} {:>9.0} {:>9.0} {:>9.0}",
            r.name, s.median, s.mean, s.sd, s.p99
        );
    }
    Ok(())
}
