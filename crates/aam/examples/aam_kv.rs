//! Runs the key-value service both ways under the same load and prints the comparison, then the
//! machine server under the static spread layout and with the Machine Manager's utilization
//! policy. `cargo run -p multios-aam --release --example aam_kv [requests] [connections]
//! [--uniform] [--json]` (the mix is phased unless `--uniform`).

use multios_aam::kv::{compare_layouts, Layout, LoadConfig, Mix};
use multios_aam::manager::Policy;
use std::time::Duration;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let nums: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let mut load = LoadConfig {
        mix: if args.iter().any(|a| a == "--uniform") {
            Mix::Uniform
        } else {
            Mix::PHASED
        },
        ..LoadConfig::default()
    };
    if let Some(&n) = nums.first() {
        load.requests = n;
    }
    if let Some(&c) = nums.get(1) {
        load.connections = c;
    }
    let layouts = [Layout::Spread, Layout::Managed(Policy::Utilization)];
    let r = compare_layouts(&load, Duration::from_micros(50), &layouts)?;
    if args.iter().any(|a| a == "--json") {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(());
    }
    println!(
        "{} connections, {} requests max, {:.0} s max, {} B values, mix {:?}",
        load.connections,
        load.requests,
        load.duration.as_secs_f64(),
        load.value_bytes,
        load.mix
    );
    println!(
        "{:<24} {:>9} {:>12} {:>9} {:>9} {:>9} {:>7} {:>10}",
        "server", "requests", "req/s", "p50 µs", "p99 µs", "p99.9 µs", "errors", "mismatches"
    );
    let rows = [&r.threads, &r.tokio].into_iter().chain(r.layouts.iter().map(|l| &l.report));
    for s in rows {
        println!(
            "{:<24} {:>9} {:>12.0} {:>9.1} {:>9.1} {:>9.1} {:>7} {:>10}",
            s.server, s.requests, s.throughput_rps, s.p50_us, s.p99_us, s.p999_us, s.errors, s.mismatches
        );
    }
    println!(
        "machines/threads: throughput {:.2}×, p99 {:.2}×; machines/tokio: throughput {:.2}×, p99 {:.2}× ({})",
        r.throughput_ratio, r.p99_ratio, r.throughput_vs_tokio, r.p99_vs_tokio, r.storage
    );
    for l in &r.layouts {
        println!(
            "{:<14} vs static-shared: throughput {:.2}×, p99 {:.2}×; moves {:?} (median {:.1} µs)",
            l.stats.layout.label(),
            l.throughput_vs_shared,
            l.p99_vs_shared,
            l.stats.moves,
            l.stats.move_median_ns / 1e3
        );
        for (name, m) in &l.stats.machines {
            println!(
                "    {name:<15} ims {} (woke {}, without core {}), cores +{} -{}, tasks {}",
                m.ims_calls, m.ims_wakeups, m.ims_without_core, m.cores_gained, m.cores_lost, m.tasks_run
            );
        }
    }
    Ok(())
}
