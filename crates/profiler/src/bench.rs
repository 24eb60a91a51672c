//! `multios bench profiler`: wall-time ratios traced/untraced for multios, `strace -c -f` and
//! `perf trace -s`, measured side by side in one run (medians over interleaved repetitions).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// One tracer under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Untraced,
    Multios,
    /// `multios profile --backend inproc` (the emulator's preload library, no kernel tracing).
    Inproc,
    Strace,
    Perf,
}

impl Tool {
    pub fn label(self) -> &'static str {
        match self {
            Tool::Untraced => "untraced",
            Tool::Multios => "multios (eBPF)",
            Tool::Inproc => "multios (inproc)",
            Tool::Strace => "strace -c -f",
            Tool::Perf => "perf trace -s",
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// The `multios` executable whose `profile` subcommand is measured.
    pub multios: PathBuf,
    /// System calls of workload (a) for multios: one-byte reads plus writes.
    pub calls: u64,
    /// System calls of workload (a) for strace and perf (each call costs them 25–120 µs here).
    pub reference_calls: u64,
    /// Size of the bzip2 -9 input of workload (b), MB.
    pub bzip2_mb: usize,
    pub reps: usize,
    /// Scratch directory for the generated data and the tracers' outputs.
    pub dir: PathBuf,
    /// Only workload 'a' or 'b'.
    pub only: Option<char>,
}

impl BenchConfig {
    pub fn full(multios: PathBuf, dir: PathBuf) -> Self {
        BenchConfig {
            multios,
            calls: 2_000_000,
            reference_calls: 100_000,
            bzip2_mb: 50,
            reps: 5,
            dir,
            only: None,
        }
    }

    pub fn quick(multios: PathBuf, dir: PathBuf) -> Self {
        BenchConfig {
            multios,
            calls: 200_000,
            reference_calls: 20_000,
            bzip2_mb: 5,
            reps: 3,
            dir,
            only: None,
        }
    }
}

/// One line of the result: a tool on a workload, with the untraced run it is compared to.
#[derive(Debug, Clone)]
pub struct Row {
    pub workload: String,
    pub tool: String,
    pub calls: u64,
    pub untraced_s: f64,
    pub traced_s: f64,
    pub ratio: f64,
    /// Medians of the CPU time (user + system, tracer included) of the runs, seconds: less
    /// sensitive than wall time to other load on a shared machine.
    pub untraced_cpu_s: f64,
    pub traced_cpu_s: f64,
    /// (traced − untraced) / calls, for the syscall-heavy workload; for multios the slope between the
    /// two sizes of workload (a), which leaves out its fixed start-up cost.
    pub added_ns_per_call: Option<f64>,
    /// multios only: fixed start-up cost (loading the probes, calibrating), the intercept of that fit.
    pub startup_s: Option<f64>,
    /// The exact command that was timed.
    pub command: String,
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("cannot run '{cmd}': {source} (is it installed? Debian: {package})")]
    Spawn {
        cmd: String,
        package: String,
        source: std::io::Error,
    },
    #[error("'{cmd}' failed: {status}")]
    Failed {
        cmd: String,
        status: std::process::ExitStatus,
    },
    #[error("cannot write {path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("'{cmd}' printed '{out}', not a number of ns per call")]
    Output { cmd: String, out: String },
    #[error(transparent)]
    Profile(#[from] crate::ProfilerError),
}

/// The median of `v` (multios-stats' rule), 0 when empty.
fn median(v: Vec<f64>) -> f64 {
    multios_stats::median(&v).unwrap_or(0.0)
}

/// The argv that runs `target` under `tool`.
fn wrap(tool: Tool, cfg: &BenchConfig, target: &[String]) -> Vec<String> {
    let out = |name: &str| cfg.dir.join(name).display().to_string();
    let mut v: Vec<String> = match tool {
        Tool::Untraced => vec![],
        Tool::Multios => vec![
            cfg.multios.display().to_string(),
            "profile".into(),
            "-o".into(),
            out("multios.json"),
            "--".into(),
        ],
        Tool::Inproc => vec![
            cfg.multios.display().to_string(),
            "profile".into(),
            "--backend".into(),
            "inproc".into(),
            "-o".into(),
            out("inproc.json"),
            "--".into(),
        ],
        Tool::Strace => vec![
            "strace".into(),
            "-f".into(),
            "-c".into(),
            "-o".into(),
            out("strace.txt"),
            "--".into(),
        ],
        Tool::Perf => vec![
            "perf".into(),
            "trace".into(),
            "-s".into(),
            "-o".into(),
            out("perf.txt"),
            "--".into(),
        ],
    };
    v.extend(target.iter().cloned());
    v
}

fn package_of(program: &str) -> &str {
    match program {
        "perf" => "linux-perf",
        "strace" => "strace",
        "bzip2" => "bzip2",
        "dd" => "coreutils",
        _ => "multios",
    }
}

/// Runs `argv` with all output discarded; returns wall and CPU time (its whole tree) in seconds.
fn time(argv: &[String]) -> Result<(f64, f64), BenchError> {
    let cmd = argv.join(" ");
    let cpu0 = crate::sys::children_cpu_s();
    let t = Instant::now();
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|source| BenchError::Spawn {
            cmd: cmd.clone(),
            package: package_of(&argv[0]).into(),
            source,
        })?;
    let s = t.elapsed().as_secs_f64();
    // perf trace exits without waiting for its workload: as subreaper we inherit and reap it, so
    // its CPU time is counted too.
    crate::sys::reap_exited();
    let cpu = crate::sys::children_cpu_s() - cpu0;
    if !status.success() {
        return Err(BenchError::Failed { cmd, status });
    }
    Ok((s, cpu))
}

/// A deterministic, moderately compressible text file of `mb` MB.
fn make_data(path: &Path, mb: usize) -> Result<(), BenchError> {
    let len = mb * 1_000_000;
    let words: [&[u8]; 8] = [
        b"alpha ",
        b"beta ",
        b"gamma ",
        b"delta ",
        b"syscall ",
        b"kernel ",
        b"lwk ",
        b"\n",
    ];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut s = Vec::with_capacity(len + 16);
    while s.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.extend_from_slice(words[(x % 8) as usize]);
        if x.is_multiple_of(5) {
            s.extend_from_slice(format!("{} ", x % 100_000).as_bytes());
        }
    }
    std::fs::write(path, s).map_err(|source| BenchError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// One workload compared across `tools`, each repetition running every tool once (interleaved).
fn case(
    cfg: &BenchConfig,
    name: &str,
    target: &[String],
    calls: u64,
    tools: &[Tool],
    per_call: bool,
    progress: &mut dyn FnMut(&str),
) -> Result<Vec<Row>, BenchError> {
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); tools.len() + 1];
    let mut cpus: Vec<Vec<f64>> = vec![Vec::new(); tools.len() + 1];
    let all: Vec<Tool> = std::iter::once(Tool::Untraced)
        .chain(tools.iter().copied())
        .collect();
    for rep in 0..cfg.reps {
        for (i, tool) in all.iter().enumerate() {
            progress(&format!(
                "{name}: {} (rep {}/{})",
                tool.label(),
                rep + 1,
                cfg.reps
            ));
            let (wall, cpu) = time(&wrap(*tool, cfg, target))?;
            times[i].push(wall);
            cpus[i].push(cpu);
        }
    }
    let untraced = median(times[0].clone());
    let untraced_cpu = median(cpus[0].clone());
    Ok(tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let traced = median(times[i + 1].clone());
            Row {
                workload: name.to_string(),
                tool: tool.label().to_string(),
                calls,
                untraced_s: untraced,
                traced_s: traced,
                ratio: if untraced > 0.0 { traced / untraced } else { 0.0 },
                untraced_cpu_s: untraced_cpu,
                traced_cpu_s: median(cpus[i + 1].clone()),
                added_ns_per_call: per_call.then(|| (traced - untraced) / calls as f64 * 1e9),
                startup_s: None,
                command: wrap(*tool, cfg, target).join(" "),
            }
        })
        .collect())
}

fn dd(calls: u64) -> Vec<String> {
    ["dd", "if=/dev/zero", "of=/dev/null", "bs=1"]
        .iter()
        .map(|s| s.to_string())
        .chain(std::iter::once(format!("count={}", calls / 2)))
        .collect()
}

/// For a multios backend, replaces the per-call cost of workload (a) by the slope between its two
/// sizes and records the intercept as the start-up cost.
fn fit_multios_slope(rows: &mut [Row], tool: Tool, n_big: u64, n_small: u64) {
    let added = |r: &Row| r.traced_s - r.untraced_s;
    let pick = |rows: &[Row], n: u64| rows.iter().position(|r| r.calls == n && r.tool == tool.label());
    let (Some(big), Some(small)) = (pick(rows, n_big), pick(rows, n_small)) else {
        return;
    };
    if n_big <= n_small {
        return;
    }
    let slope = (added(&rows[big]) - added(&rows[small])) / (n_big - n_small) as f64;
    let startup = added(&rows[small]) - slope * n_small as f64;
    for i in [big, small] {
        rows[i].added_ns_per_call = Some(slope * 1e9);
        rows[i].startup_s = Some(startup.max(0.0));
    }
}

/// Runs the whole benchmark; `progress` hears what is running.
pub fn run(cfg: &BenchConfig, progress: &mut dyn FnMut(&str)) -> Result<Vec<Row>, BenchError> {
    std::fs::create_dir_all(&cfg.dir).map_err(|source| BenchError::Write {
        path: cfg.dir.clone(),
        source,
    })?;
    let mut rows = Vec::new();
    if cfg.only != Some('b') {
        run_a(cfg, &mut rows, progress)?;
    }
    if cfg.only != Some('a') {
        run_b(cfg, &mut rows, progress)?;
    }
    Ok(rows)
}

fn run_a(cfg: &BenchConfig, rows: &mut Vec<Row>, progress: &mut dyn FnMut(&str)) -> Result<(), BenchError> {
    let a = format!("(a) dd bs=1, {} calls", cfg.calls);
    rows.extend(case(
        cfg,
        &a,
        &dd(cfg.calls),
        cfg.calls,
        &[Tool::Multios, Tool::Inproc],
        true,
        progress,
    )?);
    let a_ref = format!("(a) dd bs=1, {} calls", cfg.reference_calls);
    rows.extend(case(
        cfg,
        &a_ref,
        &dd(cfg.reference_calls),
        cfg.reference_calls,
        &[Tool::Multios, Tool::Inproc, Tool::Strace, Tool::Perf],
        true,
        progress,
    )?);
    fit_multios_slope(rows, Tool::Multios, cfg.calls, cfg.reference_calls);
    fit_multios_slope(rows, Tool::Inproc, cfg.calls, cfg.reference_calls);
    Ok(())
}

fn run_b(cfg: &BenchConfig, rows: &mut Vec<Row>, progress: &mut dyn FnMut(&str)) -> Result<(), BenchError> {
    let data = cfg.dir.join("bench-data.txt");
    progress(&format!("generating {} MB of data", cfg.bzip2_mb));
    make_data(&data, cfg.bzip2_mb)?;
    let b = format!("(b) bzip2 -9, {} MB", cfg.bzip2_mb);
    let target = vec![
        "bzip2".to_string(),
        "-9".into(),
        "-c".into(),
        data.display().to_string(),
    ];
    let r = case(
        cfg,
        &b,
        &target,
        0,
        &[Tool::Multios, Tool::Inproc, Tool::Strace, Tool::Perf],
        false,
        progress,
    );
    let _ = std::fs::remove_file(&data);
    rows.extend(r?);
    Ok(())
}

/// One variant of the cost-floor measurement: the null system call's round trip with some probes.
#[derive(Debug, Clone)]
pub struct FloorRow {
    pub what: &'static str,
    /// Median over repetitions of the median 100-call batch mean, ns per call.
    pub ns_per_call: f64,
}

/// Times the null system call (median of 201 batch means of 100 calls, median over `reps`) with no
/// probes, with the cost-floor variants of the programs, and with the profiler's own probes for an
/// untraced and a traced thread: what each piece of the probes adds per system call.
pub fn floor(reps: usize) -> Result<Vec<FloorRow>, crate::ProfilerError> {
    use crate::calibrate::untraced_null_ns as null_ns;
    const WHAT: [&str; 7] = [
        "no probes",
        "empty programs on sys_enter/sys_exit",
        "empty program on sys_exit only",
        "programs that read the clock (bpf_ktime_get_ns)",
        "programs that look up task storage (a miss)",
        "multios probes, untraced thread",
        "multios probes, traced thread",
    ];
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); WHAT.len()];
    for _ in 0..reps.max(1) {
        samples[0].push(null_ns());
        for (row, v) in [(1, 0), (2, 3), (3, 1), (4, 2)] {
            let _probes = crate::ebpf::attach_floor(v)?;
            samples[row].push(null_ns());
        }
        let probe = crate::ebpf::Probe::load()?;
        samples[5].push(null_ns());
        let (tid, tgid) = (crate::sys::gettid(), std::process::id());
        probe.seed(tid, tgid, false)?;
        samples[6].push(null_ns());
        probe.unseed(tid, tgid)?;
    }
    Ok(WHAT
        .iter()
        .zip(samples)
        .map(|(what, v)| FloorRow {
            what,
            ns_per_call: median(v),
        })
        .collect())
}

/// A program that times its own null system calls (getppid, or getpid with the argument `pid`): the
/// median of 2001 batch means of 100 calls, in ns, after 1000 warm-up calls.
pub const SELF_TIMED_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
    long nr = argc > 1 && argv[1][0] == 'p' && argv[1][1] == 'i' ? SYS_getpid : SYS_getppid;
    for (long i = 0; i < 1000; i++) syscall(nr);
    enum { B = 2001, N = 100 };
    static double m[B];
    for (int b = 0; b < B; b++) {
        double t0 = now();
        for (long i = 0; i < N; i++) syscall(nr);
        m[b] = (now() - t0) / N;
    }
    qsort(m, B, sizeof m[0], cmp);
    printf("%.1f\n", m[B / 2]);
    return 0;
}
"#;

/// The calls [`SELF_TIMED_C`] makes of its null system call.
pub const SELF_TIMED_CALLS: u64 = 1000 + 2001 * 100;

/// The eBPF profiler's per-call time of a null system call against the program's own timing of it.
#[derive(Debug, Clone)]
pub struct AccuracyRow {
    pub syscall: &'static str,
    pub pairs: usize,
    /// Medians over the pairs, ns per call.
    pub self_timed_ns: f64,
    pub profiled_ns: f64,
    /// Median of the paired differences profiled − self-timed (each traced run against the untraced run
    /// beside it: the cost of a system call on a shared VM jumps between levels from run to run).
    pub paired_diff_ns: f64,
    /// Whether every profile counted exactly [`SELF_TIMED_CALLS`] calls.
    pub counts_right: bool,
}

/// Builds [`SELF_TIMED_C`] in `dir` and runs it `pairs` times untraced and under the eBPF profiler, in
/// ABBA order, for getppid and getpid (was the test `issue_3_getppid_within_50ns_of_self_timing`).
pub fn self_timing(dir: &Path, pairs: usize) -> Result<Vec<AccuracyRow>, BenchError> {
    std::fs::create_dir_all(dir).map_err(|source| BenchError::Write {
        path: dir.to_path_buf(),
        source,
    })?;
    let src = dir.join("selftimed.c");
    std::fs::write(&src, SELF_TIMED_C).map_err(|source| BenchError::Write {
        path: src.clone(),
        source,
    })?;
    let bin = dir.join("selftimed");
    let cc = format!("gcc -O2 -o {} {}", bin.display(), src.display());
    let st = Command::new("gcc")
        .args(["-O2", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .map_err(|source| BenchError::Spawn {
            cmd: cc.clone(),
            package: "gcc".into(),
            source,
        })?;
    if !st.success() {
        return Err(BenchError::Failed { cmd: cc, status: st });
    }
    let b = bin.display().to_string();
    let direct = |which: &str| -> Result<f64, BenchError> {
        let cmd = format!("{b} {which}");
        let out = Command::new(&bin)
            .arg(which)
            .output()
            .map_err(|source| BenchError::Spawn {
                cmd: cmd.clone(),
                package: "gcc".into(),
                source,
            })?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        text.parse().map_err(|_| BenchError::Output { cmd, out: text })
    };
    let traced = |which: &str, name: &str| -> Result<(f64, bool), BenchError> {
        let p = crate::profile(&crate::Options {
            backend: Some(crate::Backend::Ebpf),
            command: vec![b.clone().into(), which.into()],
            ..crate::Options::default()
        })?;
        let st = p.syscall(name);
        Ok((
            st.map_or(f64::NAN, |s| s.mean_s() * 1e9),
            st.is_some_and(|s| s.count == SELF_TIMED_CALLS),
        ))
    };
    let mut rows = Vec::new();
    for (which, name) in [("ppid", "getppid"), ("pid", "getpid")] {
        let (mut d, mut t, mut diff, mut counts_right) = (Vec::new(), Vec::new(), Vec::new(), true);
        for i in 0..pairs.max(1) {
            let (x, (y, ok)) = if i % 2 == 0 {
                let x = direct(which)?;
                (x, traced(which, name)?)
            } else {
                let y = traced(which, name)?;
                (direct(which)?, y)
            };
            counts_right &= ok;
            d.push(x);
            t.push(y);
            diff.push(y - x);
        }
        rows.push(AccuracyRow {
            syscall: name,
            pairs: pairs.max(1),
            self_timed_ns: median(d),
            profiled_ns: median(t),
            paired_diff_ns: median(diff),
            counts_right,
        });
    }
    Ok(rows)
}
