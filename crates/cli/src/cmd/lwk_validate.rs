//! `multios lwk validate`: the refined model against the real LWK (issue #5's "projection next to
//! the measured time", made systematic). The synthetic benchmark of paper §4.1 (the emulator's
//! `synth.c`: Monte Carlo π phases alternating with a system-call mix, everything timed in-process
//! with rdtsc) runs natively and in the LWK at several call intensities. Every model input is
//! measured apart from the runs it predicts, like the paper's Table 3 microbenchmarks:
//!
//! - γ from the benchmark with no system calls (native compute time / LWK compute time);
//! - per system call, its cost in the LWK t'(s) from the benchmark with no computation (calls
//!   only, the same mix, alternated with the point's own runs because this VM's call costs drift):
//!   a delegated call's 2·f_c(s) = t'(s) − its native per-call time, an LWK-local call's
//!   g'(s) = n(s)·t'(s);
//! - C, n(s), g(s) from the native run at the same intensity.
//!
//! What the points then test is the model's composition: that compute phases and system calls
//! add up (no proxy wake-ups after long compute phases, no cache interference…). The measured
//! speedup T_native / T_LWK is set beside the naïve S_n(p, γ) and the refined S_r;
//! accuracy = 100 − |S_model − S_measured| / S_measured · 100, summarised as 100 − MAPE.

use crate::output::{Format, Out, Table};
use multios_experiment::synth::{self, SynthRun};
use multios_lwk::bench::{self, median, Program};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::ExitCode;

/// The emulator's synthetic benchmark, built statically for the LWK.
const SYNTH: Program = Program {
    name: "synth",
    source: synth::SOURCE,
};

/// Calls per phase at intensity 1. getpid/getppid are left out: synth makes them through the
/// generic `syscall()` function, whose site is not rewritten (it would time the trap path).
const MIX: [(&str, u64); 9] = [
    ("read", 20),
    ("write", 20),
    ("fstat", 10),
    ("uname", 10),
    ("lseek", 20),
    ("openat", 10),
    ("close", 10),
    ("mmap", 10),
    ("munmap", 10),
];

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Call intensities: multiples of the per-phase mix (read 20, write 20, lseek 20, fstat 10,
    /// uname 10, openat+close 10, mmap+munmap 10)
    #[arg(long, value_delimiter = ',', default_value = "0.25,1,4,16")]
    intensity: Vec<f64>,
    /// Monte Carlo samples per phase
    #[arg(long, default_value_t = 20_000)]
    iters: u64,
    /// Phases per run
    #[arg(long, default_value_t = 400)]
    phases: u64,
    /// Alternating native/LWK runs per point (medians are compared)
    #[arg(long, default_value_t = 5)]
    repeat: usize,
}

#[derive(Debug, serde::Serialize)]
struct Point {
    intensity: f64,
    p: f64,
    native_s: f64,
    lwk_s: f64,
    measured: f64,
    naive: f64,
    refined: f64,
    accuracy_naive: f64,
    accuracy_refined: f64,
}

/// Runs synth once, natively pinned to `cpu` or in the LWK, and reads what it measured.
fn run_once(exe: &Path, dir: &Path, k: f64, a: &Args, lwk: bool, cpu: usize) -> anyhow::Result<SynthRun> {
    let mix = dir.join(format!("mix-{k}"));
    let text: String = MIX
        .iter()
        .map(|(n, c)| format!("{n} {}\n", (*c as f64 * k).round() as u64))
        .collect();
    std::fs::write(&mix, text)?;
    let out = dir.join(if lwk { "lwk.out" } else { "native.out" });
    let _ = std::fs::remove_file(&out);
    let args = [
        a.iters.to_string(),
        a.phases.to_string(),
        out.display().to_string(),
        mix.display().to_string(),
    ];
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    if lwk {
        let mut cfg = multios_lwk::Config::new(&exe.display().to_string(), &argv);
        cfg.quiet = true;
        let o = multios_lwk::run(&cfg).map_err(|e| anyhow::anyhow!("synth in the LWK: {e}"))?;
        anyhow::ensure!(o.code() == 0, "synth in the LWK exited with {}", o.code());
    } else {
        bench::run_native(exe, &argv, cpu).map_err(|e| anyhow::anyhow!("synth natively: {e}"))?;
    }
    let text = std::fs::read_to_string(&out)
        .map_err(|e| anyhow::anyhow!("reading {} (synth's output): {e}", out.display()))?;
    Ok(synth::parse(&text))
}

/// The run with the median total time.
fn median_run(mut v: Vec<SynthRun>) -> SynthRun {
    v.sort_by(|x, y| x.total.total_cmp(&y.total));
    v.swap_remove(v.len() / 2)
}

/// 100 − the absolute percentage error of one prediction.
fn accuracy(model: f64, measured: f64) -> anyhow::Result<f64> {
    Ok(multios_model::accuracy(&[(model, measured)])?)
}

pub fn run(a: Args, out: &Out) -> crate::cmd::Exit {
    multios_lwk::check_kvm()?;
    anyhow::ensure!(a.repeat >= 1, "--repeat must be at least 1");
    anyhow::ensure!(
        a.intensity.iter().all(|k| k.is_finite() && *k > 0.0),
        "--intensity: every value must be a positive number (0 is measured anyway, for γ)"
    );
    let dir = std::env::temp_dir().join(format!("multios-lwk-validate-{}", std::process::id()));
    let exe = bench::build(&dir, SYNTH)?;
    // The CPU the LWK's vCPU 0 runs on: the native runs use the same one.
    let (_, lwk_cpus) = multios_lwk::default_partition(&multios_lwk::available_cpus());
    let cpu = lwk_cpus.first().copied().unwrap_or(0);

    // γ from runs without calls.
    let (mut gn, mut gl) = (Vec::new(), Vec::new());
    for _ in 0..a.repeat {
        gn.push(run_once(&exe, &dir, 0.0, &a, false, cpu)?.compute);
        gl.push(run_once(&exe, &dir, 0.0, &a, true, cpu)?.compute);
    }
    let gamma = median(&gn) / median(&gl);
    let calls_only = Args {
        iters: 0,
        ..a.clone()
    };
    let per_call = |runs: &[SynthRun]| -> BTreeMap<String, f64> {
        let mut m: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for r in runs {
            for c in &r.calls {
                m.entry(c.name.clone()).or_default().push(c.g / c.n.max(1) as f64);
            }
        }
        m.into_iter().map(|(k, v)| (k, median(&v))).collect()
    };
    let mut inputs = Vec::new();
    let policy = multios_lwk::Policy::mckernel();

    let mut points = Vec::new();
    for &k in &a.intensity {
        if out.progress {
            eprintln!("measuring: intensity {k} ({} alternating runs each)", a.repeat);
        }
        // The per-call costs come from runs without computation, alternated with the measured
        // runs: this VM's system-call costs drift by tens of per cent within minutes, so inputs
        // measured once up front would carry that drift into the comparison.
        let (mut nat, mut lwk, mut cn, mut cl) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..a.repeat {
            nat.push(run_once(&exe, &dir, k, &a, false, cpu)?);
            lwk.push(run_once(&exe, &dir, k, &a, true, cpu)?);
            cn.push(run_once(&exe, &dir, k, &calls_only, false, cpu)?);
            cl.push(run_once(&exe, &dir, k, &calls_only, true, cpu)?);
        }
        let (nat, lwk) = (median_run(nat), median_run(lwk));
        let (t_native, t_lwk) = (per_call(&cn), per_call(&cl));
        let w = nat.workload();
        let mut params = multios_model::Params::new(gamma, 0.0);
        let mut delegated = BTreeSet::new();
        for c in &w.calls {
            let (Some(&lwk_t), Some(&nat_t)) = (t_lwk.get(&c.name), t_native.get(&c.name)) else {
                continue;
            };
            let local = multios_syscalls::by_name(&c.name).is_some_and(|nr| policy.is_local(nr.into()));
            if local {
                params
                    .g_prime
                    .insert(c.name.clone(), multios_model::GPrime::PerCall(lwk_t));
            } else {
                delegated.insert(c.name.clone());
                params
                    .fc_per_syscall
                    .insert(c.name.clone(), ((lwk_t - nat_t) / 2.0).max(0.0));
            }
        }
        let proj = multios_model::refined(&w, &delegated, &params)?;
        let measured = nat.total / lwk.total;
        let point = Point {
            intensity: k,
            p: proj.p,
            native_s: nat.total,
            lwk_s: lwk.total,
            measured,
            naive: proj.naive,
            refined: proj.speedup,
            accuracy_naive: accuracy(proj.naive, measured)?,
            accuracy_refined: accuracy(proj.speedup, measured)?,
        };
        points.push(point);
        inputs.push(
            serde_json::json!({"intensity": k, "per_call_native_s": t_native, "per_call_lwk_s": t_lwk}),
        );
    }
    let _ = std::fs::remove_dir_all(&dir);

    // 100 − MAPE over the points.
    let over_points = |f: fn(&Point) -> f64| -> anyhow::Result<f64> {
        let pairs: Vec<(f64, f64)> = points.iter().map(|p| (f(p), p.measured)).collect();
        Ok(multios_model::accuracy(&pairs)?)
    };
    let (acc_naive, acc_refined) = (over_points(|p| p.naive)?, over_points(|p| p.refined)?);
    let mut t = Table::new([
        "intensity",
        "p",
        "native_s",
        "lwk_s",
        "measured_S",
        "naive_S",
        "refined_S",
        "acc_naive_%",
        "acc_refined_%",
    ]);
    for p in &points {
        t.row([
            out.num(p.intensity, 2),
            out.num(p.p, 4),
            out.num(p.native_s, 4),
            out.num(p.lwk_s, 4),
            out.num(p.measured, 3),
            out.num(p.naive, 3),
            out.num(p.refined, 3),
            out.num(p.accuracy_naive, 1),
            out.num(p.accuracy_refined, 1),
        ]);
    }
    match out.format {
        Format::Json => out.json(&serde_json::json!({
            "gamma": gamma,
            "inputs": inputs,
            "points": points,
            "accuracy_naive": acc_naive,
            "accuracy_refined": acc_refined,
        }))?,
        Format::Csv => print!("{}", t.to_csv()),
        Format::Table => {
            println!(
                "Model inputs (measured apart): γ = {gamma:.3} (synth without calls); per-call costs natively \
                 and in the LWK from synth without computation, alternated with each point's runs (--json lists them)"
            );
            print!("{}", t.render(out));
            println!(
                "accuracy (100 − MAPE) over {} intensities: refined {acc_refined:.1} %, naïve {acc_naive:.1} %",
                points.len()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
