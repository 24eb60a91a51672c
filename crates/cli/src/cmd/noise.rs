//! `multios noise fwq|ftq|selfish|suite|scale` (issue #6): thin front end over multios-noise; the
//! measurement rounds are multios_experiment::noise_measure.

use crate::output::{Format, Out, Table};
use anyhow::Context;
use multios_experiment::noise_measure;
use multios_noise::load::Isolation;
use multios_noise::measure::Kind;
use multios_noise::report::{self, Report};
use multios_noise::scale::{self, Collective, Config, Engine};
use multios_noise::{cpus, figures, sys, NoiseTrace};
use multios_units::Duration;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    sub: Sub,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Fixed work quantum: the time of each repetition of the same work
    Fwq(MeasureArgs),
    /// Fixed time quantum: the work done in each fixed time slot (and its spectrum)
    Ftq(MeasureArgs),
    /// Selfish detour: gaps in a tight timestamp loop above --threshold × the shortest iteration
    Selfish(MeasureArgs),
    /// FWQ side by side: idle, with the load elsewhere and on the same CPU, under each isolation
    Suite(MeasureArgs),
    /// Bulk-synchronous simulation of a noise trace or signature on up to millions of ranks
    Scale(ScaleArgs),
}

#[derive(clap::Args, Debug)]
struct MeasureArgs {
    /// CPUs to measure on, one pinned thread each (e.g. 0, 0,1, 0-3)
    #[arg(long, default_value = "0")]
    cpus: String,
    /// FWQ: work per quantum (time on a quiet CPU); FTQ: slot length
    #[arg(long, default_value = "1ms")]
    quantum: Duration,
    /// How long to measure per configuration
    #[arg(long, default_value = "2s")]
    duration: Duration,
    /// Selfish detour: a gap above THRESHOLD × the shortest loop iteration is a detour
    #[arg(long, default_value_t = 10.0)]
    threshold: f64,
    /// In-situ load started before and killed after the measurement (a shell command)
    #[arg(long = "with", value_name = "CMD")]
    with: Option<String>,
    /// Where the load may run: none (scheduler's choice), affinity (pinned), cpuset (a cgroup)
    #[arg(long, default_value = "none")]
    isolate: Isolation,
    /// The load's CPUs for affinity/cpuset (default: the online CPUs not measured)
    #[arg(long, value_name = "LIST")]
    load_cpus: Option<String>,
    /// Run the comparison suite with this benchmark (the `suite` subcommand does it with FWQ)
    #[arg(long)]
    compare: bool,
    /// Also print each run's log2 histogram of detour durations
    #[arg(long)]
    histogram: bool,
    /// Measure every configuration N times, interleaved, and report medians over the runs
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    repeat: u32,
    /// Time given to the load to start before measuring
    #[arg(long, default_value = "300ms")]
    settle: Duration,
    /// Write samples.csv, report.json, one LogGOPSim trace per run and the figure into DIR
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Run the benchmark as a static program natively and inside the LWK (side by side), CPU by CPU
    #[arg(long, conflicts_with = "mpirun")]
    lwk: bool,
    /// Run the benchmark on N ranks under Open MPI's mpirun (one per core), one row per rank
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    mpirun: Option<u32>,
}

#[derive(clap::Args, Debug)]
struct ScaleArgs {
    /// A noise trace (LogGOPSim text: start_ns duration_ns per line)
    #[arg(long, conflicts_with = "signature", required_unless_present = "signature")]
    trace: Option<PathBuf>,
    /// A periodic noise signature FREQ:DURATION[,…], e.g. 10Hz:2.5ms
    #[arg(long)]
    signature: Option<String>,
    /// Computation per step and rank
    #[arg(long)]
    work: Duration,
    /// Rank counts: A..B (1-2-5 series), a comma list, or one number
    #[arg(long, default_value = "1..1000000")]
    ranks: String,
    #[arg(long, default_value_t = 1000)]
    steps: u64,
    /// Only the co-scheduled variant (one phase shared by all ranks)
    #[arg(long, conflicts_with = "uncoordinated")]
    cosched: bool,
    /// Only the uncoordinated variant (a random phase per rank)
    #[arg(long)]
    uncoordinated: bool,
    /// End each step with a binomial-tree allreduce instead of a barrier
    #[arg(long)]
    allreduce: bool,
    /// Allreduce: wire latency per message
    #[arg(long, default_value = "1us")]
    latency: Duration,
    /// Allreduce: CPU time per received message (delayed by the receiver's noise)
    #[arg(long, default_value = "200ns")]
    overhead: Duration,
    /// Barrier: fixed cost per step
    #[arg(long, default_value = "0ns")]
    barrier_cost: Duration,
    /// Seed of the ranks' random phases
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Pass over every rank each step instead of the per-detour candidates (same result, slower)
    #[arg(long)]
    direct: bool,
    /// Write scale.json, scale.csv and the figure (scale.png/.svg) into DIR
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
}

pub fn run(args: Args, out: &Out) -> super::Exit {
    let result = dispatch(args, out);
    // Ctrl-C or SIGTERM: the load and its cgroup are already gone (their guards ran on the way out); exit
    // as a shell expects of a process that a signal ended, 128 + the signal.
    if let Some(sig) = sys::interrupt_signal() {
        eprintln!(
            "multios noise: interrupted by {}; the in-situ load and its cgroup were removed",
            sys::signal_name(sig)
        );
        return Ok(std::process::ExitCode::from((128 + sig).clamp(0, 255) as u8));
    }
    result
}

fn dispatch(args: Args, out: &Out) -> super::Exit {
    match args.sub {
        Sub::Fwq(a) => measure(Kind::Fwq, a, out),
        Sub::Ftq(a) => measure(Kind::Ftq, a, out),
        Sub::Selfish(a) => measure(Kind::Selfish, a, out),
        Sub::Suite(mut a) => {
            a.compare = true;
            measure(Kind::Fwq, a, out)
        }
        Sub::Scale(a) => scale_cmd(a, out),
    }
}

fn measure(kind: Kind, a: MeasureArgs, out: &Out) -> super::Exit {
    let cpus = cpus::parse_list(&a.cpus).context("--cpus")?;
    let online = cpus::online()?;
    cpus::check_online(&cpus, &online).context("--cpus")?;
    sys::catch_interrupt().context("installing the Ctrl-C handler")?;
    let (compare, load) = noise_measure::load_from(
        a.compare,
        a.with.as_deref(),
        a.load_cpus.as_deref(),
        a.isolate,
        &cpus,
        &online,
    )?;
    if !a.threshold.is_finite() {
        anyhow::bail!(
            "--threshold {}: give a finite multiple of the shortest iteration above 1 (e.g. 9)",
            a.threshold
        );
    }
    let cfg = noise_measure::Config {
        kind,
        cpus,
        online,
        quantum_ns: a.quantum.nanos(),
        duration_ns: a.duration.nanos(),
        threshold: a.threshold,
        compare,
        load,
        settle: std::time::Duration::from_secs_f64(a.settle.secs()),
        repeat: a.repeat as usize,
        lwk: a.lwk,
        mpirun: a.mpirun.map(|n| n as usize),
        out: a.out.clone(),
    };
    let m = noise_measure::run(&cfg, &mut crate::progress::Bar::new(out))?;
    let (reports, clock) = (&m.reports, &m.clock);
    match out.format {
        Format::Json => out.json(&m)?,
        _ => {
            let t = if a.repeat > 1 {
                aggregate_table(kind, &m.medians)
            } else {
                measure_table(kind, reports)
            };
            t.print(out);
            if out.format == Format::Table {
                if a.histogram {
                    for r in reports {
                        let h: Vec<String> = r
                            .detour_histogram
                            .iter()
                            .map(|b| format!("[{}, {}): {}", short(b.lo), short(b.hi), b.count))
                            .collect();
                        outln!("{} (CPU {}) detours: {}", r.label, r.cpu, h.join(", "));
                    }
                }
                if kind == Kind::Ftq {
                    for r in reports {
                        let p: Vec<String> = r
                            .peaks
                            .iter()
                            .take(4)
                            .map(|p| format!("{:.1} Hz", p.freq_hz))
                            .collect();
                        outln!("{}: spectrum peaks {}", r.label, p.join(", "));
                    }
                }
                outln!(
                    "timer: {:.3} ticks/ns, resolution {:.1} ns; {}",
                    clock.ticks_per_ns,
                    clock.resolution_ns,
                    noise_measure::definition(kind)
                );
                let mut shown = Vec::new();
                for o in &m.outcomes {
                    if let Some(c) = &o.cpuset_cpus {
                        let line = format!("{}: cpuset effective CPUs {c}", o.case.label);
                        if !shown.contains(&line) {
                            outln!("{line}");
                            shown.push(line);
                        }
                    }
                }
                for f in &m.files {
                    outln!("wrote {f}");
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn measure_table(kind: Kind, reports: &[Report]) -> Table {
    let unit = match kind {
        Kind::Ftq => "units",
        _ => "µs",
    };
    let mut t = Table::new([
        "config".to_string(),
        "cpu".to_string(),
        "samples".to_string(),
        format!("min {unit}"),
        format!("median {unit}"),
        format!("mean {unit}"),
        format!("p99 {unit}"),
        format!("max {unit}"),
        "max/min".to_string(),
        "noise %".to_string(),
        "detours".to_string(),
        "others %".to_string(),
        "steal %".to_string(),
    ]);
    let scale = if kind == Kind::Ftq { 1.0 } else { 1e-3 };
    for r in reports {
        let f = |v: f64| format!("{:.2}", v * scale);
        let (min, med, mean, p99, max, ratio) = match &r.summary {
            Some(s) => (
                f(s.min),
                f(s.median),
                f(s.mean),
                f(s.p99),
                f(s.max),
                format!("{:.2}", s.max_over_min),
            ),
            None => Default::default(),
        };
        t.row([
            r.label.clone(),
            r.cpu.to_string(),
            r.samples.to_string(),
            min,
            med,
            mean,
            p99,
            max,
            ratio,
            format!("{:.3}", r.noise_pct),
            r.detours.to_string(),
            pct(r.usage.map(|u| u.others_pct)),
            pct(r.usage.map(|u| u.steal_pct)),
        ]);
    }
    t
}

fn aggregate_table(kind: Kind, ag: &[report::Aggregate]) -> Table {
    let (unit, scale) = if kind == Kind::Ftq {
        ("units", 1.0)
    } else {
        ("µs", 1e-3)
    };
    let mut t = Table::new([
        "config".to_string(),
        "cpu".to_string(),
        "runs".to_string(),
        format!("median {unit}"),
        format!("p99 {unit}"),
        "noise % (median)".to_string(),
        "noise % (min–max)".to_string(),
        "others %".to_string(),
        "steal %".to_string(),
    ]);
    for g in ag {
        t.row([
            g.label.clone(),
            g.cpu.to_string(),
            g.runs.to_string(),
            format!("{:.2}", g.median * scale),
            format!("{:.2}", g.p99 * scale),
            format!("{:.3}", g.noise_pct_median),
            format!("{:.2}–{:.2}", g.noise_pct_min, g.noise_pct_max),
            pct(g.others_pct),
            pct(g.steal_pct),
        ]);
    }
    t
}

/// A percentage with one decimal, or "-" when not measured (guest programs).
fn pct(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.1}")).unwrap_or_else(|| "-".to_string())
}

/// A duration in ns for humans ("512.0 ns", "16.38 µs").
fn short(ns: f64) -> String {
    multios_units::format_secs(ns * 1e-9)
}

fn scale_cmd(a: ScaleArgs, out: &Out) -> super::Exit {
    let (trace, source) = match (&a.trace, &a.signature) {
        (Some(p), _) => (NoiseTrace::load(p)?, p.display().to_string()),
        (None, Some(s)) => (NoiseTrace::signature(s)?, s.clone()),
        (None, None) => anyhow::bail!("pass --trace FILE or --signature FREQ:DURATION"),
    };
    // what a signature's components add to, when detours that overlap merged into less
    let components = match &a.signature {
        Some(s) if a.trace.is_none() => Some(multios_noise::trace::signature_noise(s)?),
        _ => None,
    }
    .filter(|&c| (c - trace.net_noise()).abs() > 1e-9 * c.max(1e-12));
    let ranks = scale::parse_ranks(&a.ranks)?;
    let collective = if a.allreduce {
        Collective::Allreduce {
            latency_ns: a.latency.nanos(),
            overhead_ns: a.overhead.nanos(),
        }
    } else {
        Collective::Barrier {
            cost_ns: a.barrier_cost.nanos(),
        }
    };
    let cfg = Config {
        work_ns: a.work.nanos(),
        steps: a.steps,
        seed: a.seed,
        collective,
        engine: if a.direct { Engine::Direct } else { Engine::Auto },
    };
    let t0 = std::time::Instant::now();
    let points = scale::run(&trace, &ranks, &cfg, !a.cosched, !a.uncoordinated)?;
    let elapsed = t0.elapsed().as_secs_f64();
    let mut t = Table::new(["ranks", "uncoordinated ×", "co-scheduled ×"]);
    let f = |v: Option<f64>| v.map(|x| format!("{x:.3}")).unwrap_or_default();
    for p in &points {
        t.row([p.ranks.to_string(), f(p.uncoordinated), f(p.cosched)]);
    }
    let mut files = Vec::new();
    if let Some(dir) = &a.out {
        std::fs::create_dir_all(dir).with_context(|| format!("creating --out {}", dir.display()))?;
        let j = dir.join("scale.json");
        std::fs::write(&j, serde_json::to_string_pretty(&points)?)
            .with_context(|| format!("writing {}", j.display()))?;
        let c = dir.join("scale.csv");
        std::fs::write(&c, t.to_csv()).with_context(|| format!("writing {}", c.display()))?;
        let title = format!("{source}, work {} per step", a.work);
        let w = multios_plot::write(&figures::slowdown(&title, &points), &dir.join("scale"))?;
        files = vec![j, c, w.png, w.svg];
    }
    match out.format {
        Format::Json => out.json(&serde_json::json!({
            "source": source,
            "length_ns": trace.length_ns,
            "detours_per_cycle": trace.detours.len(),
            "net_noise_pct": 100.0 * trace.net_noise(),
            "components_noise_pct": components.map(|c| 100.0 * c),
            "config": cfg,
            "points": points,
            "elapsed_s": elapsed,
        }))?,
        Format::Csv => t.print(out),
        Format::Table => {
            outln!(
                "{source}: {} detours per {:.3} ms cycle, net noise {:.3} %{}, work {} per step, {} steps, {}",
                trace.detours.len(),
                trace.length_ns * 1e-6,
                100.0 * trace.net_noise(),
                components.map_or(String::new(), |c| format!(
                    " (the components add to {:.3} %: detours of different components that overlap count once)",
                    100.0 * c
                )),
                a.work,
                a.steps,
                if a.allreduce {
                    "binomial-tree allreduce"
                } else {
                    "barrier"
                }
            );
            t.print(out);
            outln!("simulated in {elapsed:.2} s");
            for f in &files {
                outln!("wrote {}", f.display());
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
