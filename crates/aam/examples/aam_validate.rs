//! Runs the syscall-heavy workload with direct system calls and through the OS machine and
//! prints measured against the refined model's projection (γ = 1; measured γ; γ and the stall per call).
//! `cargo run -p multios-aam --release --example aam_validate [calls] [compute steps] [--json]`

use multios_aam::bench::{validate, BenchConfig, ValidateConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut cfg = ValidateConfig::default();
    let nums: Vec<u64> = args.iter().filter_map(|a| a.parse().ok()).collect();
    if let Some(&n) = nums.first() {
        cfg.calls = n as usize;
    }
    if let Some(&k) = nums.get(1) {
        cfg.compute_steps = k;
    }
    let v = validate(&BenchConfig::default_here(), &cfg)?;
    if args.iter().any(|a| a == "--json") {
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(());
    }
    let w = &v.workload;
    println!(
        "C {:.3} ms, pread n {} g {:.3} ms; pread-shaped call median {:.0} ns, mean {:.0} ns ⇒ f_c {:.0} ns",
        w.c * 1e3,
        w.calls.first().map_or(0, |c| c.n),
        w.calls.first().map_or(0.0, |c| c.g) * 1e3,
        v.call_median_ns,
        v.call_mean_ns,
        v.fc_s * 1e9
    );
    println!(
        "beside: γ {:.3}, stall {:.0} ns per call, share u {:.3} (compute away {:.3} alone, {:.3} beside)",
        v.beside.gamma,
        v.beside.stall_ns,
        v.beside.share,
        v.beside.compute_away_alone,
        v.beside.compute_away_beside
    );
    println!(
        "direct {:.3} ms; OS machine measured {:.3} ms; projected: γ=1 {:.3} ms ({:+.1} %), γ {:.3} ms ({:+.1} %), γ+stall {:.3} ms ({:+.1} %, within 5 %: {}); offload pays: {}",
        v.measured_direct_s * 1e3,
        v.measured_os_machine_s * 1e3,
        v.projected_plain_s * 1e3,
        v.error_plain_pct,
        v.projected_gamma_s * 1e3,
        v.error_gamma_pct,
        v.projected_os_machine_s * 1e3,
        v.error_pct,
        v.within_5pct,
        v.offload_pays,
    );
    println!(
        "inside the run (diagnostics): γ {:.3}, implied f_c {:.0} ns",
        v.run_gamma,
        v.implied_fc_s * 1e9
    );
    Ok(())
}
