//! `multios bench lwk` (issue #5): the delegation round trip, static hello world end to end, and γ
//! (native time / LWK time) on a compute-bound and a TLB-bound program, all side by side in one
//! run, with the refined model's projection of each LWK run printed next to the measured time.

use crate::output::{Format, Out, Table};
use multios_lwk::bench::{self, median, Sample};
use multios_lwk::fc::{self, Mechanism};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Native/LWK pairs of runs per program, alternated ABBA (medians and per-pair ratios are
    /// compared; at least 6 for a 95 % interval of γ)
    #[arg(long, default_value_t = 7)]
    runs: usize,
    /// System calls timed per round-trip mechanism
    #[arg(long, default_value_t = 20_000)]
    calls: u32,
    /// Array size of the TLB-bound program, MiB
    #[arg(long, default_value_t = 1024)]
    tlb_mib: u64,
    /// Dependent random accesses of the TLB-bound program
    #[arg(long, default_value_t = 10_000_000)]
    tlb_steps: u64,
    /// Iterations of the compute-bound program
    #[arg(long, default_value_t = 200_000_000)]
    compute_iters: u64,
}

#[derive(serde::Serialize)]
struct Row {
    name: String,
    native: Vec<Sample>,
    lwk: Vec<Sample>,
}

pub fn run(args: Args, out: &Out) -> crate::cmd::Exit {
    multios_lwk::check_kvm()?;
    anyhow::ensure!(args.runs >= 1, "--runs must be at least 1");
    let dir = std::env::temp_dir().join(format!("multios-bench-lwk-{}", std::process::id()));
    let hello = bench::build(&dir, bench::HELLO)?;
    let compute = bench::build(&dir, bench::COMPUTE)?;
    let tlb = bench::build(&dir, bench::TLB)?;
    let me = std::env::current_exe()?;
    let profile = dir.join("lwk-profile.json");
    let lwk_prefix: Vec<OsString> = vec![
        me.into(),
        "lwk".into(),
        "run".into(),
        "--profile".into(),
        profile.clone().into(),
        "--".into(),
    ];

    // 1. Round trips (the bench process is pinned like the LWK's vCPU thread: CPU 1).
    let mut fct = Table::new(["mechanism", "calls", "min_ns", "median_ns", "p99_ns"]);
    let mut ring_delegated_ns = f64::NAN;
    let mut fc_json = Vec::new();
    for m in Mechanism::ALL {
        let n = if m == Mechanism::ExitDelegated {
            args.calls.min(2000)
        } else {
            args.calls
        };
        let s = fc::measure(m, n, true)?;
        if m == Mechanism::RingDelegated {
            ring_delegated_ns = s.median_ns;
        }
        fct.row([
            m.name().to_string(),
            s.calls.to_string(),
            format!("{:.0}", s.min_ns),
            format!("{:.0}", s.median_ns),
            format!("{:.0}", s.p99_ns),
        ]);
        fc_json.push(serde_json::json!({"mechanism": m.name(), "summary": s}));
    }

    // 2. Programs, native and LWK alternately.
    let compute_args = [args.compute_iters.to_string()];
    let tlb_args = [args.tlb_mib.to_string(), args.tlb_steps.to_string()];
    let programs: [(&str, &std::path::Path, Vec<&str>); 3] = [
        ("static hello world", &hello, vec![]),
        (
            "compute-bound",
            &compute,
            compute_args.iter().map(String::as_str).collect(),
        ),
        (
            "TLB-bound random walk",
            &tlb,
            tlb_args.iter().map(String::as_str).collect(),
        ),
    ];
    let mut rows = Vec::new();
    let mut profiles = Vec::new();
    for (name, exe, a) in &programs {
        let reps = if *name == "static hello world" {
            args.runs * 4
        } else {
            args.runs
        };
        let mut row = Row {
            name: name.to_string(),
            native: Vec::new(),
            lwk: Vec::new(),
        };
        for i in 0..reps {
            // Natively on CPU 1, where `multios lwk run` puts its vCPU (the proxy is on CPU 0);
            // ABBA order, so neither side always runs right after the other.
            if i % 2 == 0 {
                row.native.push(bench::run_native(exe, a, 1)?);
            }
            row.lwk.push(bench::run(&lwk_prefix, exe, a)?);
            if i % 2 == 1 {
                row.native.push(bench::run_native(exe, a, 1)?);
            }
        }
        profiles.push(multios_profile::load(&profile)?);
        rows.push(row);
    }

    let med =
        |v: &[Sample], f: fn(&Sample) -> Option<f64>| median(&v.iter().filter_map(f).collect::<Vec<_>>());
    let gamma_of = |r: &Row| med(&r.native, |s| s.kernel_s) / med(&r.lwk, |s| s.kernel_s);
    let gamma_compute = gamma_of(&rows[1]);
    // γ pair by pair: the median of nativeᵢ / LWKᵢ with its 95 % order-statistic interval
    // (multios_stats), which a drift of the shared machine does not bias.
    let loops = |v: &[Sample]| {
        v.iter()
            .map(|s| s.kernel_s.unwrap_or(f64::NAN))
            .collect::<Vec<_>>()
    };
    let paired_gamma: Vec<_> = rows
        .iter()
        .map(|r| {
            multios_stats::paired(&loops(&r.lwk), &loops(&r.native))
                .filter(|p| p.median.is_finite())
                .map(|p| p.ratio())
        })
        .collect();
    let mut pt = Table::new([
        "program",
        "runs",
        "native_loop_s",
        "lwk_loop_s",
        "gamma",
        "gamma_paired",
        "native_wall_s",
        "lwk_wall_s",
        "projected_gamma_compute_s",
        "projected_own_gamma_s",
    ]);
    for ((r, p), pg) in rows.iter().zip(&profiles).zip(&paired_gamma) {
        let native_wall = med(&r.native, |s| Some(s.wall_s));
        let lwk_wall = med(&r.lwk, |s| Some(s.wall_s));
        let fc = ring_delegated_ns * 0.5e-9;
        let projected = project(p, native_wall, gamma_compute, fc);
        let g = gamma_of(r);
        let projected_own = project(p, native_wall, if g.is_finite() { g } else { gamma_compute }, fc);
        pt.row([
            r.name.clone(),
            r.native.len().to_string(),
            fmt(med(&r.native, |s| s.kernel_s), 4),
            fmt(med(&r.lwk, |s| s.kernel_s), 4),
            fmt(g, 3),
            match pg {
                Some((m, Some((lo, hi)))) => format!("{m:.3} [{lo:.3}, {hi:.3}]"),
                Some((m, None)) => format!("{m:.3}"),
                None => "-".into(),
            },
            fmt(native_wall, 4),
            fmt(lwk_wall, 4),
            projected.map_or("-".into(), |t| fmt(t, 4)),
            projected_own.map_or("-".into(), |t| fmt(t, 4)),
        ]);
    }
    match out.format {
        Format::Json => out.json(&serde_json::json!({
            "round_trips": fc_json,
            "programs": rows,
            "gamma_compute": gamma_compute,
            "gamma_paired": rows.iter().zip(&paired_gamma).map(|(r, g)| serde_json::json!({
                "program": r.name,
                "median": g.map(|g| g.0),
                "ci95": g.and_then(|g| g.1),
            })).collect::<Vec<_>>(),
        }))?,
        Format::Csv => print!("{}{}", fct.to_csv(), pt.to_csv()),
        Format::Table => {
            println!(
                "{}",
                out.bold("Round trip of one system call from guest ring 3 (McKernel offload: 6.28 µs)")
            );
            print!("{}", fct.render(out));
            println!();
            println!(
                "{}",
                out.bold(
                    "Programs, native vs LWK, runs alternated ABBA (medians; gamma = native loop / LWK loop; gamma_paired = median of the per-pair ratios [95 % interval])"
                )
            );
            print!("{}", pt.render(out));
            println!(
                "projection: refined model (eq. 4-11) from the LWK run's profile, C = native wall - Σg, \
                 f_c = half the delegated ring round trip, γ = {gamma_compute:.3} (compute-bound row) or \
                 the program's own γ; the model has no VM start-up term (dominant for hello world)"
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(ExitCode::SUCCESS)
}

fn fmt(v: f64, digits: usize) -> String {
    if v.is_finite() {
        format!("{v:.digits$}")
    } else {
        "-".into()
    }
}

/// The refined model's projected LWK time for a program whose native run took `native_wall`.
fn project(p: &multios_profile::Profile, native_wall: f64, gamma: f64, fc: f64) -> Option<f64> {
    if !(gamma.is_finite() && gamma > 0.0 && fc.is_finite()) {
        return None;
    }
    let mut w = multios_model::Workload::from_profile(p);
    w.c = (native_wall - w.sum_g()).max(0.0);
    let delegated: BTreeSet<String> = p
        .syscalls
        .iter()
        .filter(|s| s.placement.as_ref().is_some_and(|pl| pl.delegated_count > 0))
        .map(|s| s.name.clone())
        .collect();
    multios_model::refined(&w, &delegated, &multios_model::Params::new(gamma, fc))
        .ok()
        .map(|r| r.t_d)
}
