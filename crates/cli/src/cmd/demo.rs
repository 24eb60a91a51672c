//! `multios demo`: the main job on the bundled default workload — profile → project → emulate, with
//! a table and plots.
//!
//! The workload is `bzip2 -9` of a generated, deterministic text file. It is profiled live with the
//! profiler (eBPF as root, ptrace otherwise); the refined model projects its speedup for several
//! policies; the emulator then runs it with delegation at the paper's f_c and the measured slowdown is
//! printed next to the projection made from the profile alone. When live profiling or emulation is
//! not possible here (no bzip2, no privileges), the demo says why and falls back to the bundled real
//! profile (`examples/bzip2/`, from `strace -c -w -f`).

use crate::output::{Format, Out, Table};
use multios_model::{self as model, Params, Policy, Workload};
use multios_profile::Profile;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// A real `strace -c -w -f` profile of bzip2 (see examples/bzip2/ for how it was made).
const BUNDLED: &str = include_str!("../../../../examples/bzip2/profile.json");

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Where the input, the profile, the projection table and the plots go
    #[arg(long, default_value = "out/demo")]
    out: PathBuf,
    /// Use this profile instead of profiling the bundled workload (skips the emulation step)
    #[arg(long)]
    profile: Option<PathBuf>,
    /// γ values to project at
    #[arg(long, default_value = "1.04,2")]
    gamma: String,
    /// One-way forwarding cost for the emulation step (the paper's 10 µs)
    #[arg(long, default_value = "10us")]
    fc: String,
    /// Emulation mechanism (shm, proxy, migrate)
    #[arg(long, default_value = "shm")]
    mechanism: String,
    /// Input size in MiB (32 by default; the tests use 4)
    #[arg(long, default_value_t = 32)]
    mib: usize,
    /// Interleaved native/emulated rounds; times are medians over them (the machine may be shared)
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

/// The forwarding costs the paper measured (Table 3: minimum round trip 2·f_c), one-way.
const SYSTEMS: [(&str, f64); 3] = [
    ("McKernel 2f_c=6.28µs", 3.14e-6),
    ("mOS 2f_c=6.46µs", 3.23e-6),
    ("network 2f_c=20µs", 10e-6),
];

/// Policies the emulation step runs: every call delegated, and the paper's "min. frequency" 90 %.
const EMULATED: [&str; 2] = ["all", "least:0.9"];

pub fn run(a: Args, out: &Out) -> super::Exit {
    let table = out.format == Format::Table;
    std::fs::create_dir_all(&a.out).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", a.out.display()))?;
    let mut notes = Vec::new();
    // 1. profile
    let input = a.out.join("input.txt");
    let argv: Vec<String> = ["bzip2", "-9", "-k", "-f"]
        .iter()
        .map(|s| s.to_string())
        .chain([input.display().to_string()])
        .collect();
    let (profile, source, live) = match &a.profile {
        Some(p) => (multios_profile::load(p)?, p.display().to_string(), false),
        None => match profile_live(&input, a.mib, &argv) {
            Ok(p) => (p, format!("live: multios profile -- {}", argv.join(" ")), true),
            Err(e) => {
                notes.push(format!(
                    "live profiling skipped ({}); using the bundled strace profile",
                    crate::error_chain(&e)
                ));
                let p = multios_profile::from_json_str("bundled examples/bzip2/profile.json", BUNDLED)?;
                (
                    p,
                    "bundled bzip2 profile (examples/bzip2, strace -c -w -f)".to_string(),
                    false,
                )
            }
        },
    };
    let profile_path = a.out.join("profile.json");
    multios_profile::save(&profile, &profile_path)?;
    if table {
        for n in &notes {
            println!("note: {n}");
        }
        println!("{} {source}", out.bold("1. profile:"));
        super::profile::print_profile(&profile, out, Some(12))?;
        println!();
    }
    // 2. project
    let w = Workload::from_profile(&profile);
    let gammas: Vec<f64> = a
        .gamma
        .split(',')
        .map(|g| {
            g.trim()
                .parse::<f64>()
                .map_err(|_| anyhow::anyhow!("--gamma: '{g}' is not a number"))
        })
        .collect::<anyhow::Result<_>>()?;
    let t = projection_table(&w, &gammas)?;
    std::fs::write(a.out.join("projection.csv"), t.0.to_csv())?;
    if table {
        println!(
            "{}",
            out.bold("2. project (naïve S_n and refined S_r; γ = LWK compute gain):")
        );
        t.0.print(out);
        println!();
    }
    // 3. emulate
    let emulated = if live {
        match emulate(
            &argv,
            &profile_path,
            &a.fc,
            &a.mechanism,
            a.rounds.max(1),
            &w,
            out,
        ) {
            Ok(rows) => rows,
            Err(e) => {
                let e = crate::error_chain(&e);
                notes.push(format!("emulation skipped: {e}"));
                if table {
                    println!("note: emulation skipped: {e}\n");
                }
                Vec::new()
            }
        }
    } else {
        Vec::new()
    };
    // 4. plots
    let label = profile.program().unwrap_or_default().to_string();
    let inputs = multios_experiment::figures::Inputs {
        workloads: vec![(label, w)],
        gamma: 2.0,
        fc: 10e-6,
        fraction: 0.9,
        seed: 0,
    };
    let mut written = Vec::new();
    use multios_experiment::figures::{write_fig, Fig};
    for f in [Fig::Fig3, Fig::Fig4, Fig::Fig5, Fig::Fig6, Fig::Fig9] {
        written.extend(write_fig(f, &inputs, &a.out)?);
    }
    let _ = std::fs::remove_file(&input);
    let _ = std::fs::remove_file(input.with_extension("txt.bz2"));
    match out.format {
        Format::Json => out.json(&serde_json::json!({
            "profile": source, "profile_file": profile_path, "projections": t.1, "emulation": emulated,
            "plots": written, "notes": notes,
        }))?,
        Format::Table => println!(
            "{} {} figures, profile.json and projection.csv in {}",
            out.bold("4. plots:"),
            written.len(),
            a.out.display()
        ),
        Format::Csv => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes `mib` MiB of deterministic, moderately compressible text and profiles bzip2 on it.
fn profile_live(input: &Path, mib: usize, argv: &[String]) -> anyhow::Result<Profile> {
    which("bzip2").ok_or_else(|| anyhow::anyhow!("bzip2 is not installed (apt-get install bzip2)"))?;
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(input).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", input.display()))?,
    );
    let target = mib * 1024 * 1024;
    let (mut written, mut i) = (0usize, 1u64);
    while written < target {
        let line = format!(
            "{i:08} the quick brown fox {} jumps over {i:x} lazy dogs\n",
            i * 7919 % 100_003
        );
        let take = line.len().min(target - written);
        f.write_all(&line.as_bytes()[..take])?;
        written += take;
        i += 1;
    }
    f.flush()?;
    drop(f);
    let opts = multios_profiler::Options {
        backend: None,
        command: argv.to_vec(),
        attach: None,
        duration: None,
    };
    Ok(multios_profiler::profile(&opts)?)
}

fn which(prog: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(prog))
        .find(|p| p.is_file())
}

/// The projection table: one row per policy and γ, one S_r column per forwarding cost.
fn projection_table(w: &Workload, gammas: &[f64]) -> anyhow::Result<(Table, Vec<serde_json::Value>)> {
    let policies = ["all", "mckernel", "mos", "mktrace", "least:0.9", "most:0.9"];
    let mut header = vec![
        "policy".to_string(),
        "γ".into(),
        "deleg. syscalls".into(),
        "deleg. calls".into(),
        "S_n".into(),
    ];
    header.extend(SYSTEMS.iter().map(|(sys, _)| format!("S_r {sys}")));
    let mut t = Table::new(header);
    let mut json = Vec::new();
    for &g in gammas {
        for pol in policies {
            let d = Policy::parse(pol)?.delegated(w);
            let mut row = Vec::new();
            for (sys, fc) in SYSTEMS {
                let pr = model::refined(w, &d, &Params::new(g, fc))?;
                if row.is_empty() {
                    row = vec![
                        pol.to_string(),
                        format!("{g}"),
                        format!("{}/{}", pr.delegated_syscalls, pr.distinct_syscalls),
                        pr.delegated_calls.to_string(),
                        format!("{:.4}", pr.naive),
                    ];
                }
                row.push(format!("{:.4}", pr.speedup));
                json.push(serde_json::json!({"policy": pol, "system": sys, "fc_s": fc, "projection": pr}));
            }
            t.row(row);
        }
    }
    Ok((t, json))
}

/// Runs the workload natively and under emulation for each policy of [`EMULATED`], `rounds` times
/// interleaved, and compares the median measured speedup with the refined model's projection from the
/// profile alone (γ = 1: Linux on both sides, so only forwarding changes the time).
fn emulate(
    argv: &[String],
    profile: &Path,
    fc: &str,
    mechanism: &str,
    rounds: usize,
    w: &Workload,
    out: &Out,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let mechanism = match mechanism {
        "shm" => multios_emulate::Mechanism::Shm,
        "proxy" => multios_emulate::Mechanism::Proxy,
        "migrate" => multios_emulate::Mechanism::Migrate,
        m => anyhow::bail!("--mechanism '{m}': use shm, proxy or migrate"),
    };
    let (compute, control) = super::emulate::cpus(None, None)?;
    let cost = super::emulate::cost(fc, &[])?;
    let fc_s = multios_emulate::predict::params_for(&cost, 1.0).fc;
    let wait = multios_emulate::Wait::default();
    let configs = EMULATED
        .iter()
        .map(|pol| {
            let cfg = multios_emulate::Config {
                mechanism,
                delegation: super::emulate::delegation(pol, Some(&profile.to_path_buf()))?,
                cost: cost.clone(),
                compute: compute.clone(),
                control: control.clone(),
                argv: argv.to_vec(),
                allow_below_floor: false,
                rewrite: true,
                wait,
            };
            cfg.check()?;
            Ok(cfg)
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut native = Vec::new();
    let mut emulated = vec![Vec::new(); configs.len()];
    let mut delegated = vec![0u64; configs.len()];
    for _ in 0..rounds {
        native.push(multios_emulate::run_native(argv, &compute, &wait)?.wall_secs);
        for (i, cfg) in configs.iter().enumerate() {
            let r = multios_emulate::run(cfg)?;
            emulated[i].push(r.wall_secs);
            delegated[i] = r.delegated_total;
        }
    }
    let t_native = model::median(&native).unwrap_or(f64::NAN);
    let mut t = Table::new([
        "policy",
        "deleg. calls",
        "native",
        "emulated",
        "measured S",
        "projected S_r",
        "error",
    ]);
    let mut rows = Vec::new();
    for (i, pol) in EMULATED.iter().enumerate() {
        let t_emu = model::median(&emulated[i]).unwrap_or(f64::NAN);
        let measured = t_native / t_emu;
        let projected =
            model::refined(w, &Policy::parse(pol)?.delegated(w), &Params::new(1.0, fc_s))?.speedup;
        let err = 100.0 * (projected - measured).abs() / measured;
        t.row([
            pol.to_string(),
            delegated[i].to_string(),
            multios_units::format_secs(t_native),
            multios_units::format_secs(t_emu),
            format!("{measured:.4}"),
            format!("{projected:.4}"),
            format!("{err:.2}%"),
        ]);
        rows.push(serde_json::json!({
            "policy": pol, "mechanism": mechanism.name(), "fc_s": fc_s, "rounds": rounds,
            "native_s": native, "emulated_s": emulated[i], "measured_speedup": measured,
            "projected_speedup": projected, "delegated_calls": delegated[i],
        }));
    }
    if out.format == Format::Table {
        println!(
            "{} bzip2 natively and with delegation via '{}' at f_c = {fc} each way (γ = 1: both on Linux; medians of {rounds} interleaved rounds)",
            out.bold("3. emulate:"),
            mechanism.name()
        );
        t.print(out);
        println!();
    }
    Ok(rows)
}
