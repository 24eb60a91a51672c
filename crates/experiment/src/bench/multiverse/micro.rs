//! The microbenchmarks of `bench multiverse` (issue #13): Fig. 11 (mmap/munmap natively and in
//! the LWK, the cycles a forwarded call adds), the per-event costs the projection multiplies
//! (`model.rs`), thread create+join natively, in the LWK and with the `lwk-threads` override,
//! what `--trace` costs per event, and γ: a compute loop on the vCPU's CPU beside a spinner on
//! the proxy's CPU against alone (AAM's beside microbenchmark, `multios_aam::bench::beside`).

use super::model::EventCosts;
use crate::ExperimentError;
use multios_aam::bench::beside::Beside;
use multios_lwk::fc::{self, Mechanism};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The Fig. 11 microbenchmark and the per-event costs.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Micro {
    pub mmap_pairs: u64,
    pub mmap_native_ns: f64,
    pub mmap_lwk_ns: f64,
    pub native_call_ns: f64,
    pub forwarded_call_ns: f64,
    pub tsc_hz: f64,
    /// Cycles a forwarded call adds to a native one.
    pub cycles_added_per_forward: f64,
    /// What the projection multiplies the counts by.
    pub costs: EventCosts,
    /// pthread_create + pthread_join of a function that returns at once, per pair: natively, in
    /// the LWK, in the LWK with the lwk-threads override.
    pub thread_pair_native_ns: f64,
    pub thread_pair_lwk_ns: f64,
    pub thread_pair_override_ns: f64,
    /// `lwk run --trace`: what one traced event adds to a delegated call (fcntl), ns.
    pub trace_event_ns: f64,
    pub trace_plain_call_ns: f64,
    /// The beside microbenchmark on the LWK's CPUs (compute on the vCPU's, spinner on the
    /// proxy's): its γ is `costs.gamma`.
    pub beside: Beside,
    /// A burst of `parked_burst` getppid calls after the proxy parked (`csrc/parkbench.c`, median
    /// per burst): natively, in the LWK, and the doorbell exits per burst there.
    pub parked_burst: u64,
    pub parked_burst_native_ns: f64,
    pub parked_burst_lwk_ns: f64,
    pub parked_doorbells_per_burst: f64,
    /// The CPUs it ran on: the vCPU's and the proxy's (the LWK's default partition).
    pub vcpu_cpu: usize,
    pub proxy_cpu: usize,
}

/// The LWK's default CPUs on this machine: (the vCPU's, the proxy's).
pub fn lwk_cpus() -> (usize, usize) {
    let (proxy, part) = multios_lwk::default_partition(&multios_lwk::available_cpus());
    let proxy = proxy.unwrap_or(0);
    (part.first().copied().unwrap_or(proxy), proxy)
}

/// γ on the LWK's CPUs: `phases` phases alone and beside a spinner, ABBA.
pub fn gamma(phases: usize) -> Result<(Beside, usize, usize), ExperimentError> {
    let (vcpu, proxy) = lwk_cpus();
    let b = multios_aam::bench::beside::beside(
        vcpu,
        proxy,
        multios_aam::bench::beside::xorshift,
        500,
        phases,
        std::time::Duration::from_millis(25),
    )
    .map_err(io("the beside microbenchmark (γ)".into()))?;
    Ok((b, vcpu, proxy))
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> ExperimentError {
    move |e| ExperimentError::Run(format!("{what}: {e}"))
}

/// Builds `source` as `name` in `dir` with gcc (dynamically linked, with pthreads).
pub fn build(dir: &Path, name: &str, source: &str) -> Result<PathBuf, ExperimentError> {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).map_err(io(format!("writing {}", src.display())))?;
    let exe = dir.join(name);
    let o = Command::new("gcc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .map_err(io("running gcc (apt-get install gcc libc6-dev)".into()))?;
    if !o.status.success() {
        return Err(ExperimentError::Run(format!(
            "gcc {}: {}",
            src.display(),
            String::from_utf8_lossy(&o.stderr)
        )));
    }
    Ok(exe)
}

/// Runs `argv` (stdout captured, stderr dropped), returning its wall time and stdout.
pub fn run(argv: &[OsString]) -> Result<(f64, String), ExperimentError> {
    let what = format!("{argv:?}");
    let (prog, rest) = argv
        .split_first()
        .ok_or_else(|| ExperimentError::Run("empty command".into()))?;
    let t0 = Instant::now();
    let o = Command::new(prog)
        .args(rest)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .map_err(io(what.clone()))?;
    let wall = t0.elapsed().as_secs_f64();
    if !o.status.success() {
        return Err(ExperimentError::Run(format!("{what} failed: {:?}", o.status)));
    }
    Ok((wall, String::from_utf8_lossy(&o.stdout).into_owned()))
}

/// The number after `key` in `out`.
pub fn field(out: &str, key: &str) -> Option<f64> {
    out.split_whitespace()
        .skip_while(|w| *w != key)
        .nth(1)
        .and_then(|v| v.parse().ok())
}

/// `multios lwk run EXTRA… -- ARGV…`.
pub fn lwk(multios: &Path, extra: &[OsString], argv: &[OsString]) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec![multios.into(), "lwk".into(), "run".into()];
    v.extend_from_slice(extra);
    v.push("--".into());
    v.extend_from_slice(argv);
    v
}

/// Runs each command of `cmds` `rounds` times, rotating the order (ABBA), and returns the median
/// of `measure(wall, stdout)` per command.
pub fn alternate(
    cmds: &[Vec<OsString>],
    rounds: usize,
    measure: impl Fn(f64, &str) -> Option<f64>,
) -> Result<Vec<f64>, ExperimentError> {
    let mut got: Vec<Vec<f64>> = vec![Vec::new(); cmds.len()];
    for r in 0..rounds {
        let order: Vec<usize> = if r % 2 == 0 {
            (0..cmds.len()).collect()
        } else {
            (0..cmds.len()).rev().collect()
        };
        for i in order {
            let (wall, out) = run(&cmds[i])?;
            let v = measure(wall, &out).ok_or_else(|| {
                ExperimentError::Run(format!("{:?} printed no measurement: {out}", cmds[i]))
            })?;
            got[i].push(v);
        }
    }
    Ok(got
        .iter()
        .map(|v| multios_stats::median(v).unwrap_or(f64::NAN))
        .collect())
}

/// Measures everything above; `quick` shrinks the loops.
pub fn measure(multios: &Path, dir: &Path, quick: bool) -> Result<Micro, ExperimentError> {
    let os = |s: &str| OsString::from(s);
    let p = |e: &Path| OsString::from(e);
    let rounds = if quick { 1 } else { 5 };
    let none: [OsString; 0] = [];

    // Fig. 11: mmap + touch + munmap of 4 KiB, natively and in the LWK.
    let mmap = build(dir, "mmapbench", include_str!("../../../csrc/mmapbench.c"))?;
    let pairs: u64 = if quick { 2_000 } else { 50_000 };
    let argv = vec![p(&mmap), os(&pairs.to_string())];
    let kernel = |_: f64, out: &str| field(out, "kernel_ns");
    let m = alternate(&[argv.clone(), lwk(multios, &none, &argv)], rounds.max(3), kernel)?;
    let (mmap_native_ns, mmap_lwk_ns) = (m[0] / pairs as f64, m[1] / pairs as f64);

    // System-call round trips from inside the guest (`lwk fc`'s loop).
    let calls = if quick { 5_000 } else { 50_000 };
    let fc = |mech: Mechanism| {
        fc::measure(mech, calls, true)
            .map(|s| s.median_ns)
            .map_err(|e| ExperimentError::Run(format!("{}: {e}", mech.name())))
    };
    let native_call_ns = fc(Mechanism::Native)?;
    let delegated_ns = fc(Mechanism::RewrittenDelegated)?;
    let local_ns = fc(Mechanism::RewrittenLocal)?;
    let doorbell_ns = fc(Mechanism::ExitDelegated)?;

    // Page faults: first touches natively and in the LWK, and a KVM shadow fault alone.
    let touch = build(dir, "touchbench", include_str!("../../../csrc/touchbench.c"))?;
    let argv = vec![p(&touch), os(if quick { "16" } else { "64" })];
    let first = alternate(
        &[argv.clone(), lwk(multios, &none, &argv)],
        rounds.max(3),
        |_, o| field(o, "first_touch_ns"),
    )?;
    // In the same LWK runs: a KVM fault per page touched (with its prefetch) and per fault.
    let (mut shadow, mut kvm_fault) = (Vec::new(), Vec::new());
    for _ in 0..rounds.max(3) {
        let cmd = lwk(multios, &none, &argv);
        let (_, o) = run(&cmd)?;
        let got = |k: &str| {
            field(&o, k).ok_or_else(|| ExperimentError::Run(format!("{cmd:?} printed no {k}: {o}")))
        };
        shadow.push(got("shadow_fault_ns")?);
        kvm_fault.push(got("kvm_fault_ns")?);
    }
    let med = |v: &[f64]| multios_stats::median(v).unwrap_or(f64::NAN);

    // Start-up: an empty dynamically linked program.
    let empty = build(dir, "empty", "int main(void) { return 0; }\n")?;
    let argv = vec![p(&empty)];
    let start = alternate(
        &[argv.clone(), lwk(multios, &none, &argv)],
        rounds.max(3) + 2,
        |w, _| Some(w),
    )?;

    // A tightening mprotect: a range invalidation in a single-threaded guest.
    let mprot = multios_lwk::bench::build(dir, multios_lwk::bench::MPROTECT)?;
    let argv = vec![p(&mprot), os(if quick { "200" } else { "2000" })];
    let inv = alternate(
        &[argv.clone(), lwk(multios, &none, &argv)],
        rounds.max(3),
        |_, o| field(o, "tighten_median_ns"),
    )?;

    // Threads: create + join, natively, in the LWK, with the lwk-threads override (100 pairs:
    // the LWK without it has 128 vCPU ids for the whole run).
    let tb = build(dir, "threadbench", include_str!("../../../csrc/threadbench.c"))?;
    let threads_file = dir.join("threads.yaml");
    std::fs::write(
        &threads_file,
        multios_lwk::overrides::Overrides::file_text(&["pthread_create"]),
    )
    .map_err(io(format!("writing {}", threads_file.display())))?;
    let argv = vec![p(&tb), os("100")];
    let with = [os("--overrides"), p(&threads_file)];
    let th = alternate(
        &[
            argv.clone(),
            lwk(multios, &none, &argv),
            lwk(multios, &with, &argv),
        ],
        rounds.max(3),
        |_, o| field(o, "per_pair_ns"),
    )?;

    // --trace: per event, on a loop of delegated calls.
    let cl = build(dir, "callloop", include_str!("../../../csrc/callloop.c"))?;
    let n: u64 = if quick { 10_000 } else { 200_000 };
    let argv = vec![p(&cl), os(&n.to_string())];
    let trace = [os("--trace"), p(&dir.join("callloop.trace"))];
    let tr = alternate(
        &[lwk(multios, &none, &argv), lwk(multios, &trace, &argv)],
        rounds.max(3),
        kernel,
    )?;

    // γ: the guest's compute beside the polling proxy (`model.rs`, the busy-sibling term).
    let (beside, vcpu_cpu, proxy_cpu) = gamma(if quick { 2 } else { 8 })?;

    // A burst of calls after the proxy parked (`model.rs`, the proxy wake-up term): 3 ms of
    // compute without calls (the proxy parks after 1 ms), then 8 calls, timed with the TSC.
    let tsc_hz = multios_host::tsc::calibration().hz;
    let pb = build(dir, "parkbench", include_str!("../../../csrc/parkbench.c"))?;
    let (prounds, burst): (u64, u64) = if quick { (30, 8) } else { (200, 8) };
    let argv = vec![
        p(&pb),
        os(&prounds.to_string()),
        os(&burst.to_string()),
        os(&format!("{:.6}", tsc_hz * 1e-9)),
        os("3000"),
    ];
    let pb_summary = dir.join("parkbench.json");
    let with_summary = [os("--summary"), p(&pb_summary)];
    let bursts = alternate(
        &[argv.clone(), lwk(multios, &with_summary, &argv)],
        rounds.max(3),
        |_, o| field(o, "burst_cycles"),
    )?;
    let bells = std::fs::read_to_string(&pb_summary)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["costs"]["kvm"]["mmio_exits"].as_f64())
        .ok_or_else(|| ExperimentError::Run(format!("{}: no doorbell count", pb_summary.display())))?;
    let ns = |cycles: f64| cycles / tsc_hz * 1e9;
    let (burst_native, burst_lwk) = (ns(bursts[0]), ns(bursts[1]));
    let bells_per_burst = bells / prounds as f64;
    // What a burst costs beyond its calls through the ring and its doorbell exits.
    let wake_ns = burst_lwk
        - burst_native
        - burst as f64 * (delegated_ns - native_call_ns)
        - bells_per_burst * (doorbell_ns - delegated_ns);

    Ok(Micro {
        mmap_pairs: pairs,
        mmap_native_ns,
        mmap_lwk_ns,
        native_call_ns,
        forwarded_call_ns: delegated_ns,
        tsc_hz,
        cycles_added_per_forward: (delegated_ns - native_call_ns) * 1e-9 * tsc_hz,
        costs: EventCosts {
            native_call_ns,
            delegated_ns,
            local_ns,
            doorbell_ns,
            native_touch_ns: first[0],
            lwk_touch_ns: first[1],
            shadow_fault_ns: med(&shadow),
            kvm_fault_ns: med(&kvm_fault),
            startup_ns: (start[1] - start[0]) * 1e9,
            invalidation_ns: inv[1] - inv[0],
            gamma: beside.gamma,
            wake_ns,
        },
        thread_pair_native_ns: th[0],
        thread_pair_lwk_ns: th[1],
        thread_pair_override_ns: th[2],
        trace_event_ns: (tr[1] - tr[0]) / n as f64,
        trace_plain_call_ns: tr[0] / n as f64,
        beside,
        parked_burst: burst,
        parked_burst_native_ns: burst_native,
        parked_burst_lwk_ns: burst_lwk,
        parked_doorbells_per_burst: bells_per_burst,
        vcpu_cpu,
        proxy_cpu,
    })
}
