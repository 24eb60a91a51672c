//! `multios bench emulate` (issue #4): delivered f_c accuracy, forwarding floors next to the
//! cache-line round trip, and pass-through overhead, all measured side by side in one run.

use crate::output::{Format, Out, Table};
use multios_emulate::{bench, fc, Mechanism};
use multios_units::format_secs;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Alternating native/emulated runs per pass-through workload (medians are compared)
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Skip the pass-through runs (the slow part: bzip2 and dd, natively and under each mechanism)
    #[arg(long)]
    no_passthrough: bool,
    /// Size of the bzip2 input, MiB
    #[arg(long, default_value_t = 8)]
    bzip2_mib: usize,
}

#[derive(serde::Serialize)]
struct Json {
    spin: Vec<bench::SpinCheck>,
    fc: fc::FcReport,
    passthrough: Vec<bench::Overhead>,
}

pub fn run(args: Args, out: &Out) -> crate::cmd::Exit {
    let (compute, control) = crate::cmd::emulate::cpus(None, None)?;
    let mechs: Vec<Mechanism> = Mechanism::ALL.into_iter().filter(|m| m.available()).collect();
    let spin = bench::spin_accuracy(
        &[0.5e-6, 1e-6, 2e-6, 5e-6, 10e-6, 100e-6, 1e-3, 10e-3],
        compute.first(),
    )?;
    let fcr = fc::run(&mechs, 1000, &compute, &control)?;

    let dir = std::env::temp_dir().join(format!("multios-bench-emulate-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let input = dir.join("input");
    let data: Vec<u8> = (0..args.bzip2_mib * (1 << 20))
        .map(|i| ((i as u32).wrapping_mul(2654435761) >> 27) as u8)
        .collect();
    std::fs::write(&input, data)?;
    let bzip2 = vec![
        "bzip2".to_string(),
        "-kf".to_string(),
        input.display().to_string(),
    ];
    let dd = [
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=1",
        "count=1000000",
        "status=none",
    ]
    .map(String::from)
    .to_vec();
    let mut pass = Vec::new();
    for m in mechs.iter().filter(|_| !args.no_passthrough) {
        pass.push(bench::passthrough(
            &format!("bzip2 {} MiB", args.bzip2_mib),
            &bzip2,
            *m,
            &compute,
            &control,
            args.runs,
        )?);
        pass.push(bench::passthrough(
            "dd bs=1 (2 M syscalls)",
            &dd,
            *m,
            &compute,
            &control,
            args.runs,
        )?);
    }
    std::fs::remove_dir_all(&dir).ok();

    if out.format == Format::Json {
        out.json(&Json {
            spin,
            fc: fcr,
            passthrough: pass,
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new(["check", "measured", "target", "met"]);
    for s in &spin {
        t.row([
            format!("delivered f_c at {}", format_secs(s.requested)),
            format!(
                "median {} (error {:.2} %)",
                format_secs(s.delivered.median),
                s.error_pct
            ),
            "within 2 % or 50 ns".into(),
            yes(s.ok),
        ]);
    }
    let cl = fcr.cacheline.median;
    t.row([
        "cache-line round trip (same run)".to_string(),
        format!("median {}", format_secs(cl)),
        "reference".into(),
        String::new(),
    ]);
    for m in &mechs {
        if let (Some(x), Some(n)) = (fcr.get("raw_getppid", m.name()), fcr.get("raw_getppid", "native")) {
            let rt = x.median - n.median;
            let (target, met) = if *m == Mechanism::Shm {
                (
                    "≤ 350 ns and ≤ 3× cache line".to_string(),
                    yes(rt <= 350e-9 && rt <= 3.0 * cl),
                )
            } else {
                ("none (reference)".to_string(), String::new())
            };
            t.row([
                format!(
                    "{} forwarding round trip (getppid, f_c = 0, added to native)",
                    m.name()
                ),
                format!("median {} = {:.1}× cache line", format_secs(rt), rt / cl),
                target,
                met,
            ]);
        }
    }
    for o in &pass {
        let target = if o.workload.starts_with("bzip2") { 0.5 } else { 5.0 };
        t.row([
            format!(
                "pass-through {} ({}, policy none), CPU time",
                o.workload, o.mechanism
            ),
            format!(
                "{:+.2} % fastest runs, {:+.2} % medians ({} vs {}); wall {:+.1} % medians; {} runs",
                o.cpu_overhead_min_pct,
                o.cpu_overhead_pct,
                format_secs(o.emulated_cpu),
                format_secs(o.native_cpu),
                o.wall_overhead_pct,
                o.runs
            ),
            format!("≤ {target} % (fastest runs)"),
            yes(o.cpu_overhead_min_pct <= target),
        ]);
    }
    t.print(out);
    Ok(ExitCode::SUCCESS)
}

fn yes(b: bool) -> String {
    if b { "yes" } else { "no" }.into()
}
