//! `multios lwk validate`: the refined model against the real LWK (issue #5's "projection next to
//! the measured time", made systematic). The synthetic benchmark of paper §4.1 (the emulator's
//! `synth.c`: Monte Carlo π phases alternating with a system-call mix, everything timed in-process
//! with rdtsc) runs natively and in the LWK at several call intensities. Every model input is
//! measured apart from the runs it predicts:
//!
//! - γ from the same benchmark with no system calls (native compute time / LWK compute time);
//! - 2·f_c = the delegated round trip through a rewritten site minus the native round trip
//!   (`lwk fc`'s getppid), so a delegated call costs g(s) + 2·f_c;
//! - g'(s) of an LWK-local call = its native time with the native round trip replaced by the LWK's
//!   local round trip (`lwk fc`'s getpid): the same work, a different way in;
//! - C, n(s), g(s) from the native run at the same intensity.
//!
//! The measured speedup T_native / T_LWK is set beside the naïve S_n(p, γ) and the refined S_r;
//! accuracy = 100 − |S_model − S_measured| / S_measured · 100, summarised as 100 − MAPE.

use crate::output::{Format, Out, Table};
use multios_lwk::bench::{self, median, Program};
use multios_lwk::fc::{self, Mechanism};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::ExitCode;

/// The emulator's synthetic benchmark, built statically for the LWK.
const SYNTH: Program = Program {
    name: "synth",
    source: include_str!("../../../emulate/csrc/synth.c"),
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

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Call intensities: multiples of the per-phase mix (read 20, write 20, lseek 20, fstat 10,
    /// uname 10, openat+close 10, mmap+munmap 10)
    #[arg(long, value_delimiter = ',', default_value = "0.25,1,4,16")]
    intensity: Vec<f64>,
    /// Monte Carlo samples per phase
    #[arg(long, default_value_t = 20_000)]
    iters: u64,
    /// Phases per run
    #[arg(long, default_value_t = 100)]
    phases: u64,
    /// Alternating native/LWK runs per point (medians are compared)
    #[arg(long, default_value_t = 3)]
    repeat: usize,
}

/// One run's in-process measurements, in seconds.
#[derive(Debug, Clone, Default, serde::Serialize)]
struct Synth {
    compute: f64,
    calls: BTreeMap<String, (u64, f64)>,
}

impl Synth {
    fn total(&self) -> f64 {
        self.compute + self.calls.values().map(|c| c.1).sum::<f64>()
    }
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

fn parse(text: &str, hz: f64) -> Synth {
    let mut s = Synth::default();
    for l in text.lines() {
        match l.split_whitespace().collect::<Vec<_>>().as_slice() {
            ["compute", t] => s.compute = t.parse::<f64>().unwrap_or(0.0) / hz,
            ["pi", _] => {}
            [name, n, t] => {
                s.calls.insert(
                    name.to_string(),
                    (n.parse().unwrap_or(0), t.parse::<f64>().unwrap_or(0.0) / hz),
                );
            }
            _ => {}
        }
    }
    s
}

/// Runs synth once, natively pinned to `cpu` or in the LWK, and reads what it measured.
fn run_once(
    exe: &Path,
    dir: &Path,
    k: f64,
    a: &Args,
    lwk: bool,
    cpu: usize,
    hz: f64,
) -> anyhow::Result<Synth> {
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
    Ok(parse(&text, hz))
}

/// The run with the median total time.
fn median_run(mut v: Vec<Synth>) -> Synth {
    v.sort_by(|x, y| x.total().total_cmp(&y.total()));
    v.swap_remove(v.len() / 2)
}

fn accuracy(model: f64, measured: f64) -> f64 {
    100.0 - ((model - measured) / measured).abs() * 100.0
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
    let hz = multios_emulate::tsc::calibration().hz;
    // The CPU the LWK's vCPU 0 runs on: the native runs use the same one.
    let cpu = multios_lwk::Config::new("synth", &[])
        .cpus
        .first()
        .copied()
        .unwrap_or(0);

    // Model inputs, measured apart from the runs they predict.
    let rt = |m| fc::measure(m, 20_000, true).map(|s| s.median_ns * 1e-9);
    let (rt_native, rt_local, rt_deleg) = (
        rt(Mechanism::Native)?,
        rt(Mechanism::RewrittenLocal)?,
        rt(Mechanism::RewrittenDelegated)?,
    );
    let fc = ((rt_deleg - rt_native) / 2.0).max(0.0);
    let (mut gn, mut gl) = (Vec::new(), Vec::new());
    for _ in 0..a.repeat {
        gn.push(run_once(&exe, &dir, 0.0, &a, false, cpu, hz)?.compute);
        gl.push(run_once(&exe, &dir, 0.0, &a, true, cpu, hz)?.compute);
    }
    let gamma = median(&gn) / median(&gl);
    let policy = multios_lwk::Policy::mckernel();

    let mut points = Vec::new();
    for &k in &a.intensity {
        if out.progress {
            eprintln!("measuring: intensity {k} ({} alternating runs each)", a.repeat);
        }
        let (mut nat, mut lwk) = (Vec::new(), Vec::new());
        for _ in 0..a.repeat {
            nat.push(run_once(&exe, &dir, k, &a, false, cpu, hz)?);
            lwk.push(run_once(&exe, &dir, k, &a, true, cpu, hz)?);
        }
        let (nat, lwk) = (median_run(nat), median_run(lwk));
        let w = multios_model::Workload {
            c: nat.compute,
            calls: nat
                .calls
                .iter()
                .map(|(name, &(n, g))| multios_model::Call {
                    name: name.clone(),
                    n,
                    g,
                })
                .collect(),
        };
        let mut params = multios_model::Params::new(gamma, fc);
        let mut delegated = BTreeSet::new();
        for c in &w.calls {
            let local = multios_syscalls::by_name(&c.name).is_some_and(|nr| policy.is_local(nr.into()));
            if local {
                let per_call = (c.g / c.n.max(1) as f64 - rt_native + rt_local).max(0.0);
                params
                    .g_prime
                    .insert(c.name.clone(), multios_model::GPrime::PerCall(per_call));
            } else {
                delegated.insert(c.name.clone());
            }
        }
        let proj = multios_model::refined(&w, &delegated, &params)?;
        let measured = nat.total() / lwk.total();
        let point = Point {
            intensity: k,
            p: proj.p,
            native_s: nat.total(),
            lwk_s: lwk.total(),
            measured,
            naive: proj.naive,
            refined: proj.speedup,
            accuracy_naive: accuracy(proj.naive, measured),
            accuracy_refined: accuracy(proj.speedup, measured),
        };
        points.push(point);
    }
    let _ = std::fs::remove_dir_all(&dir);

    let mean = |f: fn(&Point) -> f64| points.iter().map(f).sum::<f64>() / points.len().max(1) as f64;
    let (acc_naive, acc_refined) = (mean(|p| p.accuracy_naive), mean(|p| p.accuracy_refined));
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
            "fc_s": fc,
            "round_trips_s": {"native": rt_native, "lwk_local": rt_local, "lwk_delegated": rt_deleg},
            "points": points,
            "accuracy_naive": acc_naive,
            "accuracy_refined": acc_refined,
        }))?,
        Format::Csv => print!("{}", t.to_csv()),
        Format::Table => {
            println!(
                "Model inputs (measured apart): γ = {gamma:.3} (synth without calls), f_c = {} (half of \
                 delegated {} − native {}), LWK-local entry {}",
                out.secs(fc),
                out.secs(rt_deleg),
                out.secs(rt_native),
                out.secs(rt_local)
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
