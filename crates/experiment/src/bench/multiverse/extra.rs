//! The parts of `bench multiverse` beyond the Racket table (issue #13): Fig. 12 (the `mmap`
//! prefault override on n-body and spectral-norm, natively and in the LWK), a second runtime
//! (CPython's threads across the LWK's CPUs with `pthread_create` overridden), what `--trace`
//! costs a whole run, and the hot-spot loop end to end (trace → `lwk hotspots` → the override file
//! it writes → fewer forwarded events).

use super::micro::{lwk, run};
use crate::ExperimentError;
use std::ffi::OsString;
use std::path::Path;

/// Fig. 12 for one benchmark: wall times (medians) and paired ratios.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Prefault {
    pub name: String,
    pub native_s: f64,
    pub native_prefault_s: f64,
    pub lwk_s: f64,
    pub lwk_prefault_s: f64,
    /// LWK + prefault / LWK (median of paired ratios, 95 % interval).
    pub lwk_ratio: f64,
    pub lwk_ci: Option<(f64, f64)>,
    /// Shadow faults KVM served, without and with the override (medians).
    pub shadow_faults: f64,
    pub shadow_faults_prefault: f64,
    pub identical_output: bool,
}

/// The second runtime.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Cpython {
    pub python: String,
    pub threads: u32,
    pub rounds: u32,
    pub cpus: String,
    pub native_s: f64,
    pub lwk_s: f64,
    pub lwk_override_s: f64,
    pub override_ratio: f64,
    pub override_ci: Option<(f64, f64)>,
    /// clone calls (threads made through glibc) without and with the override.
    pub clones: u64,
    pub clones_override: u64,
    pub identical_output: bool,
}

/// `--trace` on a whole run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TraceRun {
    pub program: String,
    pub plain_s: f64,
    pub traced_s: f64,
    pub ratio: f64,
    pub ci: Option<(f64, f64)>,
    pub events: u64,
    pub bytes: u64,
}

/// The hot-spot loop on one runtime.
#[derive(Debug, Clone, serde::Serialize)]
pub struct HotspotLoop {
    pub program: String,
    /// The top rows: (event, count, caller, via).
    pub top: Vec<(String, u64, String, Option<String>)>,
    /// The functions of the override file `lwk hotspots --write-overrides` writes.
    pub overrides: Vec<String>,
    /// Events that left the guest (all calls) and delegated calls, without and with the file.
    pub events: u64,
    pub events_with: u64,
    pub delegated: u64,
    pub delegated_with: u64,
    pub identical_output: bool,
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> ExperimentError {
    move |e| ExperimentError::Run(format!("{what}: {e}"))
}

/// Runs every command of `cmds` once (a warm-up: discarded but for its output, which is compared
/// like the others), then `n` passes in alternating order; each command's walls and stdouts.
type Runs = (Vec<Vec<f64>>, Vec<Vec<String>>);
fn rounds(cmds: &[Vec<OsString>], n: usize) -> Result<Runs, ExperimentError> {
    let mut walls = vec![Vec::new(); cmds.len()];
    let mut outs: Vec<Vec<String>> = vec![Vec::new(); cmds.len()];
    for (i, c) in cmds.iter().enumerate() {
        let (_, out) = run(c)?;
        outs[i].push(out);
    }
    for r in 0..n {
        let order: Vec<usize> = if r % 2 == 0 {
            (0..cmds.len()).collect()
        } else {
            (0..cmds.len()).rev().collect()
        };
        for i in order {
            let (w, out) = run(&cmds[i])?;
            walls[i].push(w);
            outs[i].push(out);
        }
    }
    Ok((walls, outs))
}

fn median(v: &[f64]) -> f64 {
    multios_stats::median(v).unwrap_or(f64::NAN)
}

fn paired(base: &[f64], other: &[f64]) -> (f64, Option<(f64, f64)>) {
    multios_stats::paired(base, other)
        .map(|p| p.ratio())
        .unwrap_or((f64::NAN, None))
}

fn summary(path: &Path) -> Result<serde_json::Value, ExperimentError> {
    let text = std::fs::read_to_string(path).map_err(io(format!("reading {}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| ExperimentError::Run(format!("{}: {e}", path.display())))
}

fn num(v: &serde_json::Value, p: &[&str]) -> f64 {
    p.iter()
        .try_fold(v, |v, k| v.get(k))
        .and_then(serde_json::Value::as_f64)
        .unwrap_or(0.0)
}

/// Fig. 12 on `argv` (a Racket benchmark): native, native with the prefault object preloaded,
/// LWK, LWK with the `mmap: prefault` override.
pub fn prefault(
    multios: &Path,
    dir: &Path,
    name: &str,
    argv: &[OsString],
    n: usize,
) -> Result<Prefault, ExperimentError> {
    let file = dir.join("prefault.yaml");
    std::fs::write(&file, multios_lwk::overrides::Overrides::file_text(&["mmap"]))
        .map_err(io(format!("writing {}", file.display())))?;
    let env = multios_lwk::overrides::Overrides::load(&file)
        .and_then(|o| o.environment(&[]))
        .map_err(|e| ExperimentError::Run(e.to_string()))?;
    let mut native_pre: Vec<OsString> = vec!["env".into()];
    native_pre.extend(env);
    native_pre.extend_from_slice(argv);
    let (s0, s1) = (dir.join("pf0.json"), dir.join("pf1.json"));
    let cmds = [
        argv.to_vec(),
        native_pre,
        lwk(multios, &["--summary".into(), s0.clone().into()], argv),
        lwk(
            multios,
            &[
                "--summary".into(),
                s1.clone().into(),
                "--overrides".into(),
                file.into(),
            ],
            argv,
        ),
    ];
    let (walls, outs) = rounds(&cmds, n)?;
    let identical = outs.iter().flatten().all(|o| *o == outs[0][0]);
    let (lwk_ratio, lwk_ci) = paired(&walls[2], &walls[3]);
    Ok(Prefault {
        name: name.to_string(),
        native_s: median(&walls[0]),
        native_prefault_s: median(&walls[1]),
        lwk_s: median(&walls[2]),
        lwk_prefault_s: median(&walls[3]),
        lwk_ratio,
        lwk_ci,
        shadow_faults: num(&summary(&s0)?, &["costs", "kvm", "pf_fixed"]),
        shadow_faults_prefault: num(&summary(&s1)?, &["costs", "kvm", "pf_fixed"]),
        identical_output: identical,
    })
}

/// CPython's threaded workload (tests/py/threads.py of the lwk crate) natively, in the LWK and
/// with `pthread_create` overridden, on every CPU the LWK may use.
pub fn cpython(
    multios: &Path,
    dir: &Path,
    python: &Path,
    quick: bool,
    n: usize,
) -> Result<Cpython, ExperimentError> {
    let script = dir.join("threads.py");
    std::fs::write(&script, include_str!("../../../../lwk/tests/py/threads.py"))
        .map_err(io(format!("writing {}", script.display())))?;
    let (threads, rounds_n) = (4u32, if quick { 5u32 } else { 25 });
    let argv: Vec<OsString> = vec![
        python.into(),
        script.into(),
        threads.to_string().into(),
        rounds_n.to_string().into(),
    ];
    let cpus = multios_host::cpus::format_list(&multios_lwk::available_cpus());
    let file = dir.join("threads.yaml");
    std::fs::write(
        &file,
        multios_lwk::overrides::Overrides::file_text(&["pthread_create"]),
    )
    .map_err(io(format!("writing {}", file.display())))?;
    let (s0, s1) = (dir.join("py0.json"), dir.join("py1.json"));
    let base: Vec<OsString> = vec!["--cpus".into(), cpus.clone().into()];
    let with_summary = |s: &Path, extra: &[OsString]| {
        let mut v = base.clone();
        v.extend(["--summary".into(), s.into()]);
        v.extend_from_slice(extra);
        v
    };
    let cmds = [
        argv.clone(),
        lwk(multios, &with_summary(&s0, &[]), &argv),
        lwk(
            multios,
            &with_summary(&s1, &["--overrides".into(), file.into()]),
            &argv,
        ),
    ];
    let (walls, outs) = rounds(&cmds, n)?;
    let identical = outs.iter().flatten().all(|o| *o == outs[0][0]);
    let (override_ratio, override_ci) = paired(&walls[1], &walls[2]);
    let clones = |s: &Path| -> Result<u64, ExperimentError> {
        let v = summary(s)?;
        Ok((num(&v, &["calls", "clone3"]) + num(&v, &["calls", "clone"])) as u64)
    };
    Ok(Cpython {
        python: python.display().to_string(),
        threads,
        rounds: rounds_n,
        cpus,
        native_s: median(&walls[0]),
        lwk_s: median(&walls[1]),
        lwk_override_s: median(&walls[2]),
        override_ratio,
        override_ci,
        clones: clones(&s0)?,
        clones_override: clones(&s1)?,
        identical_output: identical,
    })
}

/// `--trace` on a whole run of `argv`: paired walls, events and bytes written.
pub fn trace_run(
    multios: &Path,
    dir: &Path,
    name: &str,
    argv: &[OsString],
    n: usize,
) -> Result<TraceRun, ExperimentError> {
    let file = dir.join("run.trace");
    let cmds = [
        lwk(multios, &[], argv),
        lwk(multios, &["--trace".into(), file.clone().into()], argv),
    ];
    let (walls, _) = rounds(&cmds, n)?;
    let (ratio, ci) = paired(&walls[0], &walls[1]);
    let trace = multios_lwk::trace::Trace::load(&file).map_err(|e| ExperimentError::Run(e.to_string()))?;
    let bytes = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
    Ok(TraceRun {
        program: name.to_string(),
        plain_s: median(&walls[0]),
        traced_s: median(&walls[1]),
        ratio,
        ci,
        events: trace.events.len() as u64,
        bytes,
    })
}

/// The hot-spot loop on `argv`: traced run, ranking, the override file, a run with it.
pub fn hotspot_loop(
    multios: &Path,
    dir: &Path,
    name: &str,
    argv: &[OsString],
) -> Result<HotspotLoop, ExperimentError> {
    let (trace, s0, s1) = (
        dir.join(format!("{name}.trace")),
        dir.join(format!("{name}-0.json")),
        dir.join(format!("{name}-1.json")),
    );
    let (_, out0) = run(&lwk(
        multios,
        &[
            "--trace".into(),
            trace.clone().into(),
            "--summary".into(),
            s0.clone().into(),
        ],
        argv,
    ))?;
    let t = multios_lwk::trace::Trace::load(&trace).map_err(|e| ExperimentError::Run(e.to_string()))?;
    let h = multios_lwk::trace::hotspots(&t, 20);
    let names = multios_lwk::trace::overrides_for(&h);
    let file = dir.join(format!("{name}-hotspots.yaml"));
    std::fs::write(&file, multios_lwk::overrides::Overrides::file_text(&names))
        .map_err(io(format!("writing {}", file.display())))?;
    let (_, out1) = run(&lwk(
        multios,
        &[
            "--overrides".into(),
            file.into(),
            "--summary".into(),
            s1.clone().into(),
        ],
        argv,
    ))?;
    let (v0, v1) = (summary(&s0)?, summary(&s1)?);
    Ok(HotspotLoop {
        program: name.to_string(),
        top: h
            .rows
            .iter()
            .take(5)
            .map(|r| {
                let kind = match r.kind {
                    multios_lwk::trace::Kind::Local => "local ",
                    multios_lwk::trace::Kind::Fault => "fault ",
                    multios_lwk::trace::Kind::Call => "",
                };
                (
                    format!("{kind}{}", r.name),
                    r.count,
                    r.caller.clone(),
                    r.via.clone(),
                )
            })
            .collect(),
        overrides: names.iter().map(|s| s.to_string()).collect(),
        events: num(&v0, &["syscalls"]) as u64,
        events_with: num(&v1, &["syscalls"]) as u64,
        delegated: num(&v0, &["delegated_calls"]) as u64,
        delegated_with: num(&v1, &["delegated_calls"]) as u64,
        identical_output: out0 == out1,
    })
}
