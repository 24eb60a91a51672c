//! Runs the key-value service both ways under the same load and prints the comparison.
//! `cargo run -p multios-aam --release --example aam_kv [requests] [connections] [--json]`

use multios_aam::kv::{compare, LoadConfig};
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let nums: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let mut load = LoadConfig::default();
    if let Some(&n) = nums.first() {
        load.requests = n;
    }
    if let Some(&c) = nums.get(1) {
        load.connections = c;
    }
    let r = compare(&load, Duration::from_micros(50))?;
    if args.iter().any(|a| a == "--json") {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    println!(
        "{} connections, {} requests max, {:.0} s max, {} B values",
        load.connections,
        load.requests,
        load.duration.as_secs_f64(),
        load.value_bytes
    );
    println!(
        "{:<9} {:>9} {:>12} {:>9} {:>9} {:>9} {:>7} {:>10}",
        "server", "requests", "req/s", "p50 µs", "p99 µs", "p99.9 µs", "errors", "mismatches"
    );
    for s in [&r.threads, &r.tokio, &r.machines] {
        println!(
            "{:<9} {:>9} {:>12.0} {:>9.1} {:>9.1} {:>9.1} {:>7} {:>10}",
            s.server, s.requests, s.throughput_rps, s.p50_us, s.p99_us, s.p999_us, s.errors, s.mismatches
        );
    }
    println!(
        "machines/threads: throughput {:.2}×, p99 {:.2}×; machines/tokio: throughput {:.2}×, p99 {:.2}× ({})",
        r.throughput_ratio, r.p99_ratio, r.throughput_vs_tokio, r.p99_vs_tokio, r.storage
    );
    Ok(())
}
