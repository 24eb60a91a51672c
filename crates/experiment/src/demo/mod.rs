//! The demo pipeline (`multios demo`): the main job on the bundled default workload — profile →
//! project → emulate → plots. The workload is `bzip2 -9` of a generated, deterministic text file,
//! profiled live with the profiler (eBPF as root, ptrace otherwise); the refined model projects its
//! speedup for several policies; the emulator then runs it with delegation at the paper's f_c and
//! the measured slowdown is set next to the projection made from the profile alone. Each step is a
//! function here; [`pipeline::run`] runs them in order, telling the CLI of each as it completes, and
//! falls back to [`BUNDLED`] when live profiling is not possible.

mod pipeline;

pub use pipeline::{mechanism, run, Config, Outcome, Steps};

use crate::{ExperimentError, Progress};
use multios_emulate::{CostModel, CpuSet, Delegation, Mechanism};
use multios_model::{self as model, Params, Policy, Workload};
use multios_profile::Profile;
use std::io::Write;
use std::path::{Path, PathBuf};

/// A real `strace -c -w -f` profile of bzip2 (see examples/bzip2/ for how it was made).
pub const BUNDLED: &str = include_str!("../../../../examples/bzip2/profile.json");

/// The forwarding costs the paper measured (Table 3: minimum round trip 2·f_c), one-way.
pub const SYSTEMS: [(&str, f64); 3] = [
    ("McKernel 2f_c=6.28µs", 3.14e-6),
    ("mOS 2f_c=6.46µs", 3.23e-6),
    ("network 2f_c=20µs", 10e-6),
];

/// Policies the emulation step runs: every call delegated, and the paper's "min. frequency" 90 %.
pub const EMULATED: [&str; 2] = ["all", "least:0.9"];

/// The workload's command line on `input`.
pub fn workload_argv(input: &Path) -> Vec<String> {
    ["bzip2", "-9", "-k", "-f"]
        .iter()
        .map(|s| s.to_string())
        .chain([input.display().to_string()])
        .collect()
}

/// Writes `mib` MiB of deterministic, moderately compressible text and profiles bzip2 on it.
pub fn profile_live(input: &Path, mib: usize, argv: &[String]) -> Result<Profile, ExperimentError> {
    which("bzip2")
        .ok_or_else(|| ExperimentError::Run("bzip2 is not installed (apt-get install bzip2)".into()))?;
    let io = || ExperimentError::io(format!("cannot write {}", input.display()));
    let mut f = std::io::BufWriter::new(std::fs::File::create(input).map_err(io())?);
    let target = mib * 1024 * 1024;
    let (mut written, mut i) = (0usize, 1u64);
    while written < target {
        let line = format!(
            "{i:08} the quick brown fox {} jumps over {i:x} lazy dogs\n",
            i * 7919 % 100_003
        );
        let take = line.len().min(target - written);
        f.write_all(&line.as_bytes()[..take]).map_err(io())?;
        written += take;
        i += 1;
    }
    f.flush().map_err(io())?;
    drop(f);
    let opts = multios_profiler::Options {
        backend: None,
        command: argv.iter().map(std::ffi::OsString::from).collect(),
        attach: None,
        duration: None,
        per_process: false,
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

/// The projection: one row per policy and γ, one S_r column per forwarding cost of [`SYSTEMS`].
#[derive(Debug, Clone)]
pub struct Projection {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// One entry per policy, γ and system (the demo's JSON `projections`).
    pub json: Vec<serde_json::Value>,
}

/// Projects `w` under the demo's policies at each of `gammas`.
pub fn projection(w: &Workload, gammas: &[f64]) -> Result<Projection, ExperimentError> {
    let policies = ["all", "mckernel", "mos", "mktrace", "least:0.9", "most:0.9"];
    let mut header = vec![
        "policy".to_string(),
        "γ".into(),
        "deleg. syscalls".into(),
        "deleg. calls".into(),
        "S_n".into(),
    ];
    header.extend(SYSTEMS.iter().map(|(sys, _)| format!("S_r {sys}")));
    let mut rows = Vec::new();
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
            rows.push(row);
        }
    }
    Ok(Projection { header, rows, json })
}

/// The emulation step, resolved: each policy of [`EMULATED`] with its delegation.
#[derive(Debug, Clone)]
pub struct EmulationConfig {
    pub mechanism: Mechanism,
    pub cost: CostModel,
    pub policies: Vec<(String, Delegation)>,
    pub compute: CpuSet,
    pub control: CpuSet,
    pub argv: Vec<String>,
    /// Rounds of paired runs in ABBA order (at least 1; 6 or more give a 95 % interval).
    pub rounds: usize,
}

/// What the emulation step measured.
#[derive(Debug, Clone)]
pub struct Emulation {
    pub mechanism: Mechanism,
    /// The one-way f_c the model uses (the cost model's mean).
    pub fc_s: f64,
    pub rounds: usize,
    /// policy, deleg. calls, native, emulated, measured S, 95 % interval, projected S_r, error.
    pub rows: Vec<[String; 8]>,
    /// One verdict per policy (the paired measurement against the projections), in row order.
    pub verdicts: Vec<(String, crate::compare::Verdict)>,
    /// The demo's JSON `emulation`.
    pub json: Vec<serde_json::Value>,
}

/// The emulation table's header.
pub const EMULATION_HEADER: [&str; 8] = [
    "policy",
    "deleg. calls",
    "native",
    "emulated",
    "measured S",
    "95 % interval",
    "projected S_r",
    "error",
];

/// The order of one round's runs: the native run (`None`) and each policy's emulated run
/// (`Some(i)`), ABBA — even rounds start natively, odd rounds end natively in reverse — so that
/// every policy's pairs alternate which side runs first, as `emulate --compare`'s do.
pub fn round_order(round: usize, policies: usize) -> Vec<Option<usize>> {
    let mut v: Vec<Option<usize>> = std::iter::once(None).chain((0..policies).map(Some)).collect();
    if round % 2 == 1 {
        v.reverse();
    }
    v
}

/// Runs the workload natively and under emulation for each policy, `rounds` times in ABBA order
/// ([`round_order`]; one native run per round is each policy's partner), and compares the median
/// of the paired speedups T_native / T_emulated, with its interval from `multios-stats`, with the
/// refined model's projection from the profile alone (γ = 1: Linux on both sides, so only
/// forwarding changes the time). One progress step per round.
pub fn emulate(
    cfg: &EmulationConfig,
    w: &Workload,
    progress: &mut dyn Progress,
) -> Result<Emulation, ExperimentError> {
    let rounds = cfg.rounds.max(1);
    let fc_s = crate::predict::params_for(&cfg.cost, 1.0).fc;
    let wait = multios_emulate::Wait::default();
    let configs = cfg
        .policies
        .iter()
        .map(|(_, delegation)| {
            let c = multios_emulate::Config {
                mechanism: cfg.mechanism,
                delegation: delegation.clone(),
                cost: cfg.cost.clone(),
                compute: cfg.compute.clone(),
                control: cfg.control.clone(),
                argv: cfg.argv.iter().map(std::ffi::OsString::from).collect(),
                allow_below_floor: false,
                rewrite: true,
                wait,
            };
            c.check()?;
            Ok(c)
        })
        .collect::<Result<Vec<_>, ExperimentError>>()?;
    let mut native = Vec::new();
    let mut emulated = vec![Vec::new(); configs.len()];
    let mut delegated = vec![0u64; configs.len()];
    progress.start(rounds as u64, "demo: emulation rounds (ABBA)");
    for round in 0..rounds {
        for run in round_order(round, configs.len()) {
            match run {
                None => native.push(multios_emulate::run_native(&cfg.argv, &cfg.compute, &wait)?.wall_secs),
                Some(i) => {
                    let r = multios_emulate::run(&configs[i])?;
                    emulated[i].push(r.wall_secs);
                    delegated[i] = r.delegated_total;
                }
            }
        }
        progress.advance(&format!("round {} of {rounds}", round + 1));
    }
    progress.finish();
    let t_native = model::median(&native).unwrap_or(f64::NAN);
    let mut rows = Vec::new();
    let mut verdicts = Vec::new();
    let mut json = Vec::new();
    for (i, (pol, _)) in cfg.policies.iter().enumerate() {
        let t_emu = model::median(&emulated[i]).unwrap_or(f64::NAN);
        // paired() compares its second series with its first: the emulated times are the base,
        // so its ratios are the pairs' speedups T_native / T_emulated.
        let p = crate::stats::paired(&emulated[i], &native);
        let (measured, ci) = p.as_ref().map_or((t_native / t_emu, None), |p| p.ratio());
        // What the mechanism runs: the policy less the calls it always keeps local.
        let d = crate::validate::real::delegated(w, &format!("emulate:{}", cfg.mechanism.name()), pol)?;
        let pr = model::refined(w, &d, &Params::new(1.0, fc_s))?;
        let projected = pr.speedup;
        let err = 100.0 * (projected - measured).abs() / measured;
        let c = crate::predict::Comparison {
            native_secs: t_native,
            emulated_secs: t_emu,
            measured_speedup: measured,
            naive_speedup: pr.naive,
            refined_speedup: projected,
            refined_secs: pr.t_d,
            excess_per_call_secs: None,
        };
        let mut v = crate::compare::verdict(&c, ci, rounds);
        // The verdict names `emulate --compare`'s flag; the demo's is --rounds.
        v.text = v.text.replace("--runs", "--rounds");
        rows.push([
            pol.to_string(),
            delegated[i].to_string(),
            multios_units::format_secs(t_native),
            multios_units::format_secs(t_emu),
            format!("{measured:.4}"),
            ci.map_or_else(|| "—".to_string(), |(lo, hi)| format!("[{lo:.4}, {hi:.4}]")),
            format!("{projected:.4}"),
            format!("{err:.2}%"),
        ]);
        json.push(serde_json::json!({
            "policy": pol, "mechanism": cfg.mechanism.name(), "fc_s": fc_s, "rounds": rounds,
            "order": "ABBA", "native_s": native, "emulated_s": emulated[i], "measured_speedup": measured,
            "speedup_ci": ci, "ci_coverage": p.as_ref().and_then(|p| p.ci_coverage),
            "verdict": v, "projected_speedup": projected, "delegated_calls": delegated[i],
        }));
        verdicts.push((pol.to_string(), v));
    }
    Ok(Emulation {
        mechanism: cfg.mechanism,
        fc_s,
        rounds,
        rows,
        verdicts,
        json,
    })
}

/// The demo's figures (the paper's Fig. 3, 4, 5, 6 and 9) of the workload `label`, into `dir`.
pub fn plots(label: String, w: Workload, dir: &Path) -> Result<Vec<multios_plot::Written>, ExperimentError> {
    use crate::figures::{write_fig, Fig, Inputs};
    let inputs = Inputs {
        workloads: vec![(label, w)],
        gamma: 2.0,
        fc: 10e-6,
        fraction: 0.9,
        seed: 0,
    };
    let mut written = Vec::new();
    for f in [Fig::Fig3, Fig::Fig4, Fig::Fig5, Fig::Fig6, Fig::Fig9] {
        written.extend(write_fig(f, &inputs, dir)?);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundled() -> Workload {
        let p = multios_profile::from_json_str("bundled", BUNDLED).expect("the bundled profile loads");
        Workload::from_profile(&p)
    }

    #[test]
    fn the_projection_has_a_row_per_policy_and_gamma_and_a_column_per_system() {
        let p = projection(&bundled(), &[1.04, 2.0]).expect("projects");
        assert_eq!(p.header.len(), 5 + SYSTEMS.len());
        assert_eq!(p.rows.len(), 12);
        assert!(p.rows.iter().all(|r| r.len() == p.header.len()));
        assert_eq!(p.json.len(), 12 * SYSTEMS.len());
        assert_eq!((p.rows[0][0].as_str(), p.rows[0][1].as_str()), ("all", "1.04"));
    }

    #[test]
    fn issue_15_rounds_alternate_which_side_runs_first() {
        assert_eq!(round_order(0, 2), [None, Some(0), Some(1)]);
        assert_eq!(round_order(1, 2), [Some(1), Some(0), None]);
        assert_eq!(round_order(2, 1), [None, Some(0)]);
    }

    #[test]
    fn the_workload_compresses_its_input() {
        let argv = workload_argv(Path::new("/tmp/in.txt"));
        assert_eq!(argv, ["bzip2", "-9", "-k", "-f", "/tmp/in.txt"]);
    }
}
