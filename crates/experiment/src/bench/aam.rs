//! `multios aam …` (issue #11): the AAM microbenchmarks judged against the goals as ratios
//! measured in the same run, the key-value service both ways under one load, the model's
//! projection of the OS-machine variant against the measured time, and a Chrome trace of a small
//! machine-call workload.

use multios_aam::bench::{self, BenchConfig, BenchError, BenchReport, ValidateConfig, Validation};
use multios_aam::kv::{self, KvError};
pub use multios_aam::kv::{KvComparison, Layout, LayoutRun, LoadConfig, LoadReport, Mix};
use multios_aam::manager::move_core;
pub use multios_aam::manager::Policy;
use multios_aam::{ConnectOptions, MachineBuilder, MachineError, MachineHandle, ServeOptions};
use multios_host::CpuSet;
use serde::Serialize;
use std::time::Duration;

/// Why an AAM experiment could not run.
#[derive(Debug, thiserror::Error)]
pub enum AamError {
    #[error(transparent)]
    Bench(#[from] BenchError),
    #[error(transparent)]
    Kv(#[from] KvError),
    #[error(transparent)]
    Machine(#[from] MachineError),
    #[error("aam {what}: {why}")]
    Run { what: &'static str, why: String },
    #[error("--{flag} must be at least 1")]
    Zero { flag: &'static str },
}

/// One goal of the issue against its same-run measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub goal: String,
    pub measured: String,
    pub target: String,
    /// "met" or "not met".
    pub verdict: &'static str,
}

fn verdict(goal: &str, measured: String, target: &str, ok: bool) -> Verdict {
    Verdict {
        goal: goal.into(),
        measured,
        target: target.into(),
        verdict: if ok { "met" } else { "not met" },
    }
}

/// A measurement the issue asks to show without a target ("report").
fn report(goal: &str, measured: String) -> Verdict {
    Verdict {
        goal: goal.into(),
        measured,
        target: "report".into(),
        verdict: "report",
    }
}

/// One pair of the active machine call and the cache-line round trip, measured back to back.
#[derive(Debug, Clone, Serialize)]
pub struct ActiveRun {
    pub call_total_median_ns: f64,
    pub call_direct_median_ns: f64,
    pub cache_line_median_ns: f64,
    /// call_total / cache_line.
    pub ratio: f64,
}

/// What `multios aam bench` measures besides the microbenchmarks.
#[derive(Debug, Clone, Copy)]
pub struct BenchOptions {
    pub iterations: usize,
    /// Pairs of (active call, cache-line round trip) measured back to back, alternating.
    pub runs: usize,
    /// The key-value service's load (`None`: skip it).
    pub kv: Option<LoadConfig>,
    /// Run the model check (compute + pread loop both ways).
    pub validate: bool,
}

/// `multios aam bench`: the report, the active-call runs, the key-value comparison, the model
/// check and the verdicts, all from one run.
#[derive(Debug, Clone, Serialize)]
pub struct AamBench {
    pub report: BenchReport,
    pub active_runs: Vec<ActiveRun>,
    pub kv: Option<KvComparison>,
    pub verdicts: Vec<Verdict>,
    pub validation: Option<Validation>,
}

fn median(r: &BenchReport, name: &'static str) -> Result<f64, AamError> {
    r.get(name).map(|x| x.ns.median).ok_or(AamError::Run {
        what: "bench",
        why: format!("the report has no '{name}'"),
    })
}

fn median_of(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The goals, each from medians of the same run; the active call's ratio is the median
/// of the per-pair ratios of `runs` (each pair measured back to back).
pub fn verdicts(r: &BenchReport, runs: &[ActiveRun]) -> Result<Vec<Verdict>, AamError> {
    let local = median(r, "aam_local_task_total")?;
    let tokio = median(r, "tokio_current_thread_spawn_await")?;
    let idle = median(r, "aam_call_idle_total")?;
    let futex = median(r, "futex_wake_reply_round_trip")?;
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::INFINITY };
    let (call, direct, line, rt) = if runs.is_empty() {
        let call = median(r, "aam_call_active_total")?;
        let line = median(r, "cache_line_round_trip")?;
        (
            call,
            median(r, "aam_call_active_direct")?,
            line,
            ratio(call, line),
        )
    } else {
        (
            median_of(runs.iter().map(|x| x.call_total_median_ns).collect()),
            median_of(runs.iter().map(|x| x.call_direct_median_ns).collect()),
            median_of(runs.iter().map(|x| x.cache_line_median_ns).collect()),
            median_of(runs.iter().map(|x| x.ratio).collect()),
        )
    };
    let per_run = runs
        .iter()
        .map(|x| format!("{:.2}", x.ratio))
        .collect::<Vec<_>>()
        .join(", ");
    Ok(vec![
        verdict(
            "local task total",
            format!("{local:.0} ns"),
            "≤ 250 ns",
            local <= 250.0,
        ),
        verdict(
            "local task total / Tokio current-thread spawn+await",
            format!("{:.2}× ({local:.0} / {tokio:.0} ns)", ratio(local, tokio)),
            "≤ 1×",
            local <= tokio,
        ),
        verdict(
            "machine call, both active, total (median of the runs)",
            format!("{call:.0} ns"),
            "≤ 600 ns",
            call <= 600.0,
        ),
        verdict(
            "machine call active / cache-line round trip (median of per-run ratios)",
            format!("{rt:.2}× ({call:.0} / {line:.0} ns; runs: {per_run})"),
            "≤ 3×",
            rt <= 3.0,
        ),
        verdict(
            "machine call, both active, direct",
            format!("{direct:.0} ns"),
            "≤ 100 ns",
            direct <= 100.0,
        ),
        verdict(
            "machine call idle (IMS through the Machine Manager) / futex wake-and-reply (a wake-up of a halted vCPU ≈ 25 µs here)",
            format!("{:.2}× ({idle:.0} / {futex:.0} ns)", ratio(idle, futex)),
            "≤ 1.3×",
            idle <= 1.3 * futex,
        ),
    ])
}

/// The Machine Manager's activation rows, as same-run ratios (reported; no target in the issue).
pub fn activation_verdicts(r: &BenchReport) -> Vec<Verdict> {
    let m = |n: &str| r.get(n).map(|x| x.ns.median);
    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::INFINITY };
    let mut v = Vec::new();
    if let (Some(coreless), Some(idle), Some(futex)) = (
        m("aam_call_coreless_total"),
        m("aam_call_idle_total"),
        m("futex_wake_reply_round_trip"),
    ) {
        v.push(report(
            "machine call to a machine without a core (the manager grants the CPU in the sender's IMS) / futex wake-and-reply; / idle call",
            format!(
                "{:.2}× / {:.2}× ({coreless:.0} / {futex:.0} / {idle:.0} ns)",
                ratio(coreless, futex),
                ratio(coreless, idle)
            ),
        ));
    }
    if let (Some(on), Some(off)) = (
        m("aam_call_behind_busy_worker"),
        m("aam_call_behind_busy_worker_no_sibling_wake"),
    ) {
        v.push(report(
            "short call to a two-worker machine whose awake worker is blocked 2 ms: sibling wake-up on / off",
            format!("{:.3}× ({on:.0} / {off:.0} ns)", ratio(on, off)),
        ));
    }
    if let Some(mv) = m("aam_core_move") {
        v.push(report(
            "core move (decision until the receiving worker runs)",
            format!("{mv:.0} ns"),
        ));
    }
    v
}

/// The key-value rows: the three servers, then the machine server's layouts against the static
/// shared one (throughput and p99 ratios, the manager's moves by cause).
pub fn kv_verdicts(k: &KvComparison) -> Vec<Verdict> {
    let correct = |r: &LoadReport| r.errors + r.mismatches == 0;
    let all_correct = [&k.threads, &k.tokio]
        .into_iter()
        .chain(k.layouts.iter().map(|l| &l.report))
        .all(correct);
    let mut v = vec![Verdict {
        goal: "key-value service: machines / threads, machines / Tokio (report, no target)".into(),
        measured: format!(
            "throughput {:.2}× / {:.2}×, p99 {:.2}× / {:.2}× ({:.0} vs {:.0} vs {:.0} req/s; p99 {:.0} vs {:.0} vs {:.0} µs)",
            k.throughput_ratio,
            k.throughput_vs_tokio,
            k.p99_ratio,
            k.p99_vs_tokio,
            k.machines.throughput_rps,
            k.threads.throughput_rps,
            k.tokio.throughput_rps,
            k.machines.p99_us,
            k.threads.p99_us,
            k.tokio.p99_us
        ),
        target: "report both".into(),
        verdict: if all_correct { "met" } else { "not met" },
    }];
    for l in k.layouts.iter().skip(1) {
        let m = &l.stats.moves;
        v.push(report(
            &format!("key-value machines, {} / static-shared placement", l.stats.layout.label()),
            format!(
                "throughput {:.2}×, p99 {:.2}× ({:.0} vs {:.0} req/s; p99 {:.0} vs {:.0} µs); core moves {} (IMS grants {}, idle hand-overs {}, policy {})",
                l.throughput_vs_shared,
                l.p99_vs_shared,
                l.report.throughput_rps,
                k.machines.throughput_rps,
                l.report.p99_us,
                k.machines.p99_us,
                m.total(),
                m.ims,
                m.idle,
                m.policy
            ),
        ));
    }
    v
}

/// The active call and the cache-line round trip, `runs` pairs back to back.
fn active_runs(cfg: &BenchConfig, runs: usize) -> Result<Vec<ActiveRun>, AamError> {
    let mut out = Vec::with_capacity(runs);
    for i in 0..runs {
        // Alternate which goes first (ABBA), so a drift of the machine does not favour one.
        let (call, line) = if i % 2 == 0 {
            let c = bench::machine_call(cfg, true)?;
            (c, bench::cache_line(cfg)?)
        } else {
            let l = bench::cache_line(cfg)?;
            (bench::machine_call(cfg, true)?, l)
        };
        let get = |n: &str| {
            call.iter()
                .find(|r| r.name == n)
                .map(|r| r.ns.median)
                .unwrap_or(f64::NAN)
        };
        let (total, direct) = (get("aam_call_active_total"), get("aam_call_active_direct"));
        out.push(ActiveRun {
            call_total_median_ns: total,
            call_direct_median_ns: direct,
            cache_line_median_ns: line.ns.median,
            ratio: total / line.ns.median,
        });
    }
    Ok(out)
}

/// Runs everything the issue asks `multios aam bench` to show, in one run: the microbenchmarks
/// with their references, `runs` pairs of the active call beside the cache-line round trip, the
/// key-value service three ways, and the model check.
pub fn run_bench(o: &BenchOptions) -> Result<AamBench, AamError> {
    if o.iterations == 0 {
        return Err(AamError::Zero { flag: "iterations" });
    }
    let cfg = BenchConfig {
        iterations: o.iterations,
        warmup: (o.iterations / 10).max(10),
        ..BenchConfig::default_here()
    };
    let mut report = bench::run_all(&cfg)?;
    let shaped = bench::shaped_call(&cfg, o.iterations, cfg.warmup, 64)?;
    report.results.push(bench::BenchResult {
        name: "aam_call_active_pread64_shaped_total".into(),
        what: "machine call with pread's arguments and a 64-byte Vec result (no system call), both polling: issue to result".into(),
        ns: bench::Stats::of(&shaped),
    });
    let runs = active_runs(&cfg, o.runs)?;
    let mut verdicts = verdicts(&report, &runs)?;
    verdicts.extend(activation_verdicts(&report));
    let kv = match &o.kv {
        Some(load) => {
            let k = run_kv(load)?;
            verdicts.extend(kv_verdicts(&k));
            Some(k)
        }
        None => None,
    };
    let validation = if o.validate {
        let v = bench::validate(&cfg, &ValidateConfig::default())?;
        verdicts.push(verdict(
            "model: OS-machine variant projected (refined, measured γ, stall per call) vs measured",
            format!(
                "{:+.1} % ({:.3} ms projected, {:.3} ms measured; γ=1: {:+.1} %, γ {:.3}: {:+.1} %, stall {:.0} ns/call)",
                v.error_pct,
                v.projected_os_machine_s * 1e3,
                v.measured_os_machine_s * 1e3,
                v.error_plain_pct,
                v.beside.gamma,
                v.error_gamma_pct,
                v.beside.stall_ns
            ),
            "within 5 %",
            v.within_5pct,
        ));
        Some(v)
    } else {
        None
    };
    Ok(AamBench {
        report,
        active_runs: runs,
        kv,
        verdicts,
        validation,
    })
}

/// The machine server's layouts `multios aam kv` and `aam bench` run after the static shared
/// one: the static spread placement and the Machine Manager's utilization policy.
pub const KV_LAYOUTS: [Layout; 2] = [Layout::Spread, Layout::Managed(Policy::Utilization)];

/// `multios aam kv`: the three servers under the same bounded load, the machine server under
/// each of its layouts.
pub fn run_kv(load: &LoadConfig) -> Result<KvComparison, AamError> {
    if load.connections == 0 {
        return Err(AamError::Zero { flag: "connections" });
    }
    if load.requests == 0 {
        return Err(AamError::Zero { flag: "requests" });
    }
    Ok(kv::compare_layouts(load, Duration::from_micros(50), &KV_LAYOUTS)?)
}

multios_aam::interface! {
    /// The traced workload's server.
    pub trait Echo as EchoClient {
        fn echo(&self, n: u64) -> u64;
    }
}

struct Doubler;

impl Echo for Doubler {
    async fn echo(&self, n: u64) -> u64 {
        n * 2
    }
}

/// What `multios aam trace` recorded.
#[derive(Debug, Clone, Serialize)]
pub struct TraceRun {
    /// The traced workload, in words.
    pub workload: String,
    pub calls: usize,
    pub machines: Vec<String>,
    /// Core moves the Machine Manager made during the run, by cause.
    pub moves: multios_aam::manager::MoveCounts,
    /// Chrome trace JSON (Perfetto / chrome://tracing).
    #[serde(skip)]
    pub chrome_json: String,
    /// The same events on one time axis, one row per worker (for the picture).
    #[serde(skip)]
    pub rows: Vec<multios_aam::trace::Row>,
}

impl TraceRun {
    /// Draws the timeline (the paper's `sview`) to `stem.png`, `stem.svg` and `stem.csv`.
    pub fn write_timeline(
        &self,
        stem: &std::path::Path,
    ) -> Result<multios_plot::Written, multios_plot::PlotError> {
        let title = format!("AAM timeline: {}", self.workload);
        let fig = super::aam_timeline::figure(&title, &self.machines, &self.rows);
        multios_plot::write(&fig.into(), stem)
    }
}

/// Two machines on the first and last usable CPU, a client task issuing `calls` machine calls
/// (half with both machines polling, half after a pause that lets the server sleep, so IMS shows
/// up), then (with two CPUs) the server's CPU moved to the client for a few tasks and back, each
/// machine keeping its workers' last events; returns the Chrome trace and the rows.
pub fn run_trace(calls: usize) -> Result<TraceRun, AamError> {
    if calls == 0 {
        return Err(AamError::Zero { flag: "calls" });
    }
    let cpus = CpuSet::allowed().to_vec();
    let (first, last) = (
        cpus.first().copied().unwrap_or(0),
        cpus.last().copied().unwrap_or(0),
    );
    let ring = (calls * 4).max(64);
    // Both machines have a worker on both CPUs (one dormant each), so the server's CPU can be
    // moved to the client and back at the end, and the picture shows core moves.
    let both = CpuSet([first, last].into());
    let server = MachineBuilder::new("trace-server")
        .cpus(both.clone())
        .active_cpus(CpuSet([last].into()))
        .idle_spin(Duration::from_micros(20))
        .trace(ring)
        .build()?;
    let client = MachineBuilder::new("trace-client")
        .cpus(both)
        .active_cpus(CpuSet([first].into()))
        .idle_spin(Duration::from_micros(20))
        .trace(ring)
        .build()?;
    let c = EchoClient::new(
        server
            .serve(Doubler, ServeOptions::default())
            .connect(ConnectOptions::default()),
    );
    let done = multios_aam::block_on(client.spawn("trace-driver", async move {
        let mut ok = 0usize;
        for i in 0..calls {
            if i >= calls / 2 {
                std::thread::sleep(Duration::from_micros(100));
            }
            ok += usize::from(c.echo(i as u64).await == Ok(2 * i as u64));
        }
        ok
    }))
    .map_err(|e| AamError::Run {
        what: "trace",
        why: e.to_string(),
    })?;
    if done != calls {
        return Err(AamError::Run {
            what: "trace",
            why: format!("{} of {calls} calls returned a wrong result", calls - done),
        });
    }
    if first != last {
        move_and_back(last, &server.handle(), &client.handle())?;
    }
    // A worker records a task's event after the poll returns, so the driver's last poll may be
    // recorded after its result arrived here: stopping joins the workers, and their rings are
    // complete afterwards.
    client.stop();
    server.stop();
    let handles = [&client.handle(), &server.handle()];
    let chrome_json = multios_aam::trace::chrome_trace(&handles);
    let rows = multios_aam::trace::rows(&handles);
    Ok(TraceRun {
        workload: format!("{calls} machine calls, {} → {}", client.name(), server.name()),
        calls,
        machines: vec![client.name().to_string(), server.name().to_string()],
        moves: multios_aam::manager::MoveCounts {
            explicit: if first != last { 2 } else { 0 },
            ..Default::default()
        },
        chrome_json,
        rows,
    })
}

/// The key-value service with the Machine Manager's utilization policy under the phased load
/// (`requests` requests on `connections` connections): the network, storage and compression
/// machines' timelines, with the cores moving between them.
pub fn run_kv_trace(requests: usize, connections: usize) -> Result<TraceRun, AamError> {
    if requests == 0 {
        return Err(AamError::Zero { flag: "requests" });
    }
    if connections == 0 {
        return Err(AamError::Zero { flag: "connections" });
    }
    let server = kv::MachineServer::start_with(&kv::MachineSetup {
        connections,
        idle_spin: Duration::from_micros(50),
        layout: Layout::Managed(Policy::Utilization),
        trace: (requests * 8).max(256),
    })?;
    let load = LoadConfig {
        requests,
        connections,
        duration: Duration::from_secs(60),
        mix: Mix::PHASED,
        ..LoadConfig::default()
    };
    let r = kv::loadgen::run("machines-utilization", kv::KvServer::addr(&server), &load)?;
    if r.errors + r.mismatches > 0 {
        return Err(AamError::Run {
            what: "trace --kv",
            why: format!(
                "{} errors and {} wrong values in {} requests",
                r.errors, r.mismatches, r.requests
            ),
        });
    }
    let stats = server.run_stats();
    let machines = server.machines();
    let handles: Vec<&MachineHandle> = machines.iter().collect();
    let chrome_json = multios_aam::trace::chrome_trace(&handles);
    let rows = multios_aam::trace::rows(&handles);
    Ok(TraceRun {
        workload: format!(
            "key-value service, {} requests (phased mix), utilization policy: {} core moves",
            r.requests,
            stats.moves.total()
        ),
        calls: r.requests,
        machines: machines.iter().map(|m| m.name().to_string()).collect(),
        moves: stats.moves,
        chrome_json,
        rows,
    })
}

/// Moves `cpu` from `from` to `to`, runs a few tasks on `to` while it holds both CPUs, and moves
/// the CPU back once `from`'s worker has left it.
fn move_and_back(cpu: usize, from: &MachineHandle, to: &MachineHandle) -> Result<(), AamError> {
    let failed = |why: String| AamError::Run { what: "trace", why };
    let gone = |m: &MachineHandle| {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while m.serving_cpus().contains(&cpu) {
            if std::time::Instant::now() > deadline {
                return Err(failed(format!(
                    "machine {}'s worker did not leave CPU {cpu} in 10 s",
                    m.name()
                )));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        Ok(())
    };
    move_core(cpu, from, to).map_err(|e| failed(e.to_string()))?;
    gone(from)?;
    let tasks: Vec<_> = (0..8u64)
        .map(|i| to.spawn("on-moved-core", async move { i }))
        .collect();
    for t in tasks {
        multios_aam::block_on(t).map_err(|e| failed(e.to_string()))?;
    }
    move_core(cpu, to, from).map_err(|e| failed(e.to_string()))?;
    gone(to)
}
