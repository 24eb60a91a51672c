//! The active machine call beside the cache-line round trip, `pairs` pairs back to back (ABBA),
//! as `multios aam bench` measures them for its verdict, and nothing else (≈ 3 s a pair here).
//! `cargo run -p multios-aam --release --example aam_call_pairs [pairs] [iterations]`

use multios_aam::bench::{cache_line, machine_call, BenchConfig};

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let pairs = args.first().copied().unwrap_or(5);
    let mut cfg = BenchConfig::default_here();
    if let Some(&n) = args.get(1) {
        cfg.iterations = n;
        cfg.warmup = (n / 10).max(10);
    }
    println!("pair  call_total_ns  call_direct_ns  cache_line_rt_ns  ratio");
    let mut ratios = Vec::new();
    for i in 0..pairs {
        let (call, line) = if i % 2 == 0 {
            let c = machine_call(&cfg, true)?;
            (c, cache_line(&cfg)?)
        } else {
            let l = cache_line(&cfg)?;
            (machine_call(&cfg, true)?, l)
        };
        let get = |n: &str| {
            call.iter()
                .find(|r| r.name == n)
                .map_or(f64::NAN, |r| r.ns.median)
        };
        let (total, direct) = (get("aam_call_active_total"), get("aam_call_active_direct"));
        let ratio = total / line.ns.median;
        ratios.push(ratio);
        println!(
            "{i:>4}  {total:>13.1}  {direct:>14.1}  {:>16.1}  {ratio:>5.2}",
            line.ns.median
        );
    }
    println!("median ratio {:.2}", median(&mut ratios));
    let (there, back) = breakdown(&cfg)?;
    println!("one call split at the server's timestamp: issue -> server {there:.0} ns, server -> result {back:.0} ns");
    Ok(())
}

/// Where a call's time goes, from the no-op's own timestamp (taken on the server while it runs):
/// issue → server runs it, and server runs it → the client has the result (medians, ns; the TSC
/// is the same clock on both CPUs, in ≈ 10 ns steps).
pub fn breakdown(cfg: &BenchConfig) -> Result<(f64, f64), Box<dyn std::error::Error>> {
    use multios_aam::{block_on, ConnectOptions, MachineBuilder, ServeOptions};
    use multios_host::{tsc, CpuSet};
    use std::time::Duration;
    struct Nop;
    let server = MachineBuilder::new("split-server")
        .cpus(CpuSet([cfg.server_cpu].into()))
        .idle_spin(Duration::MAX)
        .build()?;
    let client = MachineBuilder::new("split-client")
        .cpus(CpuSet([cfg.client_cpu].into()))
        .idle_spin(Duration::MAX)
        .build()?;
    let ep = server
        .serve(Nop, ServeOptions::default())
        .connect(ConnectOptions::default());
    let n = cfg.iterations + cfg.warmup;
    let (mut there, mut back) = block_on(client.spawn("split", async move {
        let (mut there, mut back) = (Vec::with_capacity(n), Vec::with_capacity(n));
        for _ in 0..n {
            let t0 = tsc::now();
            let s = ep.call("nop", |_s| async { tsc::now() }).await.unwrap_or(t0);
            let t2 = tsc::now();
            there.push(s.wrapping_sub(t0) as i64);
            back.push(t2.wrapping_sub(s) as i64);
        }
        (there, back)
    }))?;
    let tpn = tsc::calibration().ticks_per_ns();
    let med = |v: &mut Vec<i64>| {
        v.sort_unstable();
        v[v.len() / 2] as f64 / tpn
    };
    Ok((med(&mut there), med(&mut back)))
}
