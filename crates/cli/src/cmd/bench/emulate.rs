//! `multios bench emulate` (issue #4): delivered f_c accuracy, forwarding floors next to the
//! cache-line round trip, and pass-through overhead, all measured side by side in one run.

use crate::output::{Format, Out, Table};
use multios_emulate::{bench, fc, Mechanism};
use multios_units::format_secs;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Native/emulated pairs of runs per pass-through workload, alternated ABBA and compared pair
    /// by pair (at least 6 for a 95 % confidence interval of the median ratio)
    #[arg(long, default_value_t = 9)]
    runs: usize,
    /// Also run shm and migrate under the lazy interception (Syscall User Dispatch left on) in
    /// each round: the before/after of the eager rewriting
    #[arg(long)]
    lazy: bool,
    /// Skip the pass-through runs (the slow part: bzip2 and dd, natively and under each mechanism)
    #[arg(long)]
    no_passthrough: bool,
    /// Pairs of short runs (bzip2 on a 64 KiB input) that measure each mechanism's fixed
    /// start-up cost on its own (0: skip)
    #[arg(long, default_value_t = 31)]
    startup_runs: usize,
    /// Size of the bzip2 input, MiB
    #[arg(long, default_value_t = 8)]
    bzip2_mib: usize,
    /// Native/emulated pairs of the pipeline `cat | gzip | sha256sum` (policy all, f_c 0) per
    /// mechanism (0: skip)
    #[arg(long, default_value_t = 5)]
    pipeline_runs: usize,
}

#[derive(serde::Serialize)]
struct Json {
    spin: Vec<bench::SpinCheck>,
    delivery: Vec<Delivery>,
    fc: fc::FcReport,
    passthrough: Vec<bench::Overhead>,
    startup: Vec<bench::FixedCost>,
    pipeline: Vec<bench::Overhead>,
}

pub fn run(args: Args, out: &Out) -> crate::cmd::Exit {
    let (compute, control) = crate::cmd::emulate::cpus(None, None)?;
    let mechs: Vec<Mechanism> = Mechanism::ALL.into_iter().filter(|m| m.available()).collect();
    let spin = bench::spin_accuracy(
        &[0.5e-6, 1e-6, 2e-6, 5e-6, 10e-6, 100e-6, 1e-3, 10e-3],
        compute.first().unwrap_or(0),
    )?;
    let fcr = fc::run(&mechs, 1000, &compute, &control)?;
    let delivery = delivery_checks(&mechs, &compute, &control)?;

    let dir = std::env::temp_dir().join(format!("multios-bench-emulate-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let input = dir.join("input");
    let data: Vec<u8> = (0..args.bzip2_mib * (1 << 20))
        .map(|i| ((i as u32).wrapping_mul(2654435761) >> 27) as u8)
        .collect();
    std::fs::write(&input, &data)?;
    let small = dir.join("small");
    std::fs::write(&small, &data[..data.len().min(64 << 10)])?;
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
    let bzip2_small = vec![
        "bzip2".to_string(),
        "-kf".to_string(),
        small.display().to_string(),
    ];
    let bzip2_name = format!("bzip2 {} MiB", args.bzip2_mib);
    let mut startup = Vec::new();
    let mut pass = Vec::new();
    for m in mechs.iter().filter(|_| !args.no_passthrough) {
        pass.push(bench::passthrough(
            &bzip2_name,
            &bzip2,
            *m,
            &compute,
            &control,
            args.runs,
            args.lazy,
        )?);
        if args.startup_runs > 0 {
            startup.push(bench::fixed_cost(
                "bzip2 64 KiB",
                &bzip2_small,
                *m,
                &compute,
                &control,
                args.startup_runs,
            )?);
        }
        pass.push(bench::passthrough(
            "dd bs=1 (2 M syscalls)",
            &dd,
            *m,
            &compute,
            &control,
            args.runs,
            args.lazy,
        )?);
    }
    // A pipeline of three processes on the input above, every call delegated at f_c = 0.
    let pipe_name = format!("cat | gzip | sha256sum, {} MiB", args.bzip2_mib);
    let pipe_argv = vec![
        "sh".to_string(),
        "-c".to_string(),
        // (its output to a file: stdout carries the bench's own report)
        format!(
            "cat {} | gzip -1 | sha256sum > {}",
            input.display(),
            dir.join("sum").display()
        ),
    ];
    let mut pipeline = Vec::new();
    for m in mechs.iter().filter(|_| args.pipeline_runs > 0) {
        pipeline.push(bench::pipeline(
            &pipe_name,
            &pipe_argv,
            *m,
            &compute,
            &control,
            args.pipeline_runs,
        )?);
    }
    std::fs::remove_dir_all(&dir).ok();

    if out.format == Format::Json {
        out.json(&Json {
            spin,
            delivery,
            fc: fcr,
            passthrough: pass,
            startup,
            pipeline,
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
    for d in &delivery {
        t.row([
            d.check.clone(),
            d.measured.clone(),
            d.target.to_string(),
            yes(d.ok),
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
        let mut rows = vec![(o.mechanism.clone(), &o.cpu, &o.wall, o.emulated_cpu, true)];
        if let Some(l) = &o.lazy {
            rows.push((
                format!("{}, lazy", o.mechanism),
                &l.cpu,
                &l.wall,
                l.emulated_cpu,
                false,
            ));
        }
        for (mech, cpu, wall, emulated_cpu, judged) in rows {
            let ci = match cpu.ci {
                Some((lo, hi)) => format!(
                    " [{lo:+.2}, {hi:+.2}] {:.0} % CI",
                    100.0 * cpu.ci_coverage.unwrap_or(0.0)
                ),
                None => String::new(),
            };
            t.row([
                format!("pass-through {} ({mech}, policy none), CPU time", o.workload),
                format!(
                    "{:+.2} % median of {} paired ratios{ci}; {:+.2} % fastest runs ({} vs {} medians); wall {:+.1} %",
                    cpu.median,
                    cpu.pairs,
                    cpu.fastest,
                    format_secs(emulated_cpu),
                    format_secs(o.native_cpu),
                    wall.median,
                ),
                format!("≤ {target} % (95 % CI)"),
                match (judged, cpu.ci) {
                    (false, _) => String::new(),
                    (true, Some((_, hi))) if hi <= target => "yes".into(),
                    (true, Some((lo, _))) if lo > target => "no".into(),
                    // The interval holds the target: these runs cannot decide (for bzip2 the
                    // row "from its parts" below does).
                    (true, Some(_)) => "CI holds the target".into(),
                    (true, None) => yes(cpu.median <= target && cpu.fastest <= target),
                },
            ]);
        }
    }
    // The long bzip2 run's overhead from its parts: the fixed start-up cost measured on short runs
    // plus its extra calls at the per-call cost measured on dd, both resolved far better than the
    // long runs' ±2–4 % spread allows.
    let calls_of = |w: &str| pass.iter().filter(|o| o.workload == w).find_map(|o| o.calls);
    let dd_calls = calls_of("dd bs=1 (2 M syscalls)");
    for f in &startup {
        let find = |w: &str| {
            pass.iter()
                .find(|o| o.mechanism == f.mechanism && o.workload == w)
        };
        let (Some(long), Some(dd)) = (find(&bzip2_name), find("dd bs=1 (2 M syscalls)")) else {
            continue;
        };
        let (Some(n_dd), Some(n_long), Some(n_short)) = (
            dd_calls,
            calls_of(&bzip2_name),
            startup.iter().find_map(|s| s.calls),
        ) else {
            continue;
        };
        let extra = n_long.saturating_sub(n_short) as f64;
        let per_call = |x: f64| x.max(0.0) / n_dd as f64;
        let hi = |p: &multios_stats::Paired| p.ci.map_or(p.median, |c| c.1);
        let share = |x: f64| 100.0 * x / long.native_cpu;
        let est = f.cpu.median + extra * per_call(dd.cpu_diff.median);
        let upper = hi(&f.cpu) + extra * per_call(hi(&dd.cpu_diff));
        t.row([
            format!(
                "pass-through {} from its parts ({}, policy none), CPU time",
                long.workload, f.mechanism
            ),
            format!(
                "start-up {} (median of {} pairs of {} runs, native {}) + {:.0} more calls × {:.1} ns (dd) = {:+.3} % of {} (upper CI ends: {:+.3} %)",
                signed_secs(f.cpu.median),
                f.cpu.pairs,
                f.workload,
                format_secs(f.native_cpu),
                extra,
                1e9 * per_call(dd.cpu_diff.median),
                share(est),
                format_secs(long.native_cpu),
                share(upper),
            ),
            "≤ 0.5 % (upper CI ends)".into(),
            yes(share(upper) <= 0.5),
        ]);
    }
    for o in &pipeline {
        t.row([
            format!(
                "pipeline {} ({}, policy all, f_c 0), wall time",
                o.workload, o.mechanism
            ),
            format!(
                "{:.2}× median of {} paired ratios ({} vs {} medians); CPU {:.2}×",
                o.wall.ratio().0,
                o.wall.pairs,
                format_secs(o.emulated_wall),
                format_secs(o.native_wall),
                o.cpu.ratio().0,
            ),
            if o.mechanism == "shm" {
                "≤ 1.5×".into()
            } else {
                "none (reference)".into()
            },
            if o.mechanism == "shm" {
                yes(o.wall.ratio().0 <= 1.5)
            } else {
                String::new()
            },
        ]);
    }
    t.print(out);
    Ok(ExitCode::SUCCESS)
}

/// One check of the cost a mechanism delivers on real delegated calls (these were timing assertions of
/// crates/emulate/tests until issue #16).
#[derive(serde::Serialize)]
struct Delivery {
    check: String,
    measured: String,
    target: &'static str,
    ok: bool,
}

/// The delivered cost through each mechanism: a constant f_c (30 µs; the policy mckernel on `sh`), an
/// exponential one (mean 20 µs, `dd` of 2000 bytes under shm, every call delegated) and a per-call
/// override (read = 40 µs, f_c = 0 otherwise).
fn delivery_checks(
    mechs: &[Mechanism],
    compute: &multios_emulate::CpuSet,
    control: &multios_emulate::CpuSet,
) -> anyhow::Result<Vec<Delivery>> {
    use multios_emulate::{CostModel, Delegation, Dist};
    let config =
        |m: Mechanism, delegation: Delegation, cost: CostModel, argv: &[&str]| multios_emulate::Config {
            mechanism: m,
            delegation,
            cost,
            compute: compute.clone(),
            control: control.clone(),
            argv: argv.iter().map(|s| s.to_string()).collect(),
            allow_below_floor: true,
            wait: Default::default(),
            rewrite: true,
        };
    let delivered = |cfg: &multios_emulate::Config| -> anyhow::Result<multios_emulate::Summary> {
        let r = multios_emulate::run(cfg)?;
        r.delivered_fc
            .ok_or_else(|| anyhow::anyhow!("{}: no delivered costs", cfg.mechanism.name()))
    };
    let mckernel = multios_syscalls::NamedSet::parse("mckernel")?;
    let close = |d: &multios_emulate::Summary, fc: f64| d.min >= fc && d.median <= fc * 1.02 + 50e-9;
    let mut rows = Vec::new();
    let fc = 30e-6;
    for &m in mechs {
        let d = delivered(&config(
            m,
            Delegation::from_fn("mckernel", |n| mckernel.is_delegated(n)),
            CostModel::constant(fc),
            &["sh", "-c", "echo x > /dev/null"],
        ))?;
        rows.push(Delivery {
            check: format!(
                "{} delivers a constant f_c of 30 µs (sh, policy mckernel)",
                m.name()
            ),
            measured: format!(
                "min {}, median {} ({} spins)",
                format_secs(d.min),
                format_secs(d.median),
                d.n
            ),
            target: "min ≥ f_c, median ≤ f_c + 2 % + 50 ns",
            ok: close(&d, fc),
        });
    }
    let dd = [
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=1",
        "count=2000",
        "status=none",
    ];
    let mut exp = config(Mechanism::Shm, Delegation::all(), CostModel::constant(0.0), &dd);
    exp.cost.default = Dist::Exponential { mean: 20e-6 };
    let d = delivered(&exp)?;
    let want_median = 20e-6 * std::f64::consts::LN_2;
    rows.push(Delivery {
        check: "shm delivers an exponential f_c of mean 20 µs (dd, every call)".into(),
        measured: format!(
            "mean {} (×{:.3}), median {} (×{:.3} of 20 µs · ln 2), {} spins",
            format_secs(d.mean),
            d.mean / 20e-6,
            format_secs(d.median),
            d.median / want_median,
            d.n
        ),
        target: "mean and median within 1.5 µs",
        ok: (d.mean - 20e-6).abs() < 1.5e-6 && (d.median - want_median).abs() < 1.5e-6,
    });
    let mut per = config(Mechanism::Shm, Delegation::all(), CostModel::constant(0.0), &dd);
    per.cost.add_override("read=40us")?;
    let d = delivered(&per)?;
    rows.push(Delivery {
        check: "shm delivers a per-call f_c, read = 40 µs (dd, f_c = 0 otherwise)".into(),
        measured: format!(
            "min {}, median {} ({} spins)",
            format_secs(d.min),
            format_secs(d.median),
            d.n
        ),
        target: "min ≥ 40 µs, median ≤ 40 µs + 2 % + 50 ns",
        ok: close(&d, 40e-6),
    });
    Ok(rows)
}

fn signed_secs(x: f64) -> String {
    if x < 0.0 {
        format!("−{}", format_secs(-x))
    } else {
        format!("+{}", format_secs(x))
    }
}

fn yes(b: bool) -> String {
    if b { "yes" } else { "no" }.into()
}
