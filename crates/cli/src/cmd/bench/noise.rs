//! `multios bench noise` (issue #6): throughput of the scale simulation, the per-detour candidate
//! engine against a pass over every rank, timed side by side in one run (wall and CPU time: the
//! machine is shared, CPU time is what the simulation itself cost).

use crate::output::{Format, Out, Table};
use multios_noise::scale::{self, Collective, Config, Engine};
use multios_noise::{sys, NoiseTrace};
use std::process::ExitCode;
use std::time::Instant;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Simulated ranks
    #[arg(long, default_value_t = 1_000_000)]
    ranks: u64,
    /// Steps per simulation
    #[arg(long, default_value_t = 1000)]
    steps: u64,
    /// Noise signature
    #[arg(long, default_value = "10Hz:2.5ms")]
    signature: String,
    /// Work per step
    #[arg(long, default_value = "100us")]
    work: multios_units::Duration,
    /// Also time the binomial-tree allreduce (a pass over every rank per tree level)
    #[arg(long)]
    allreduce: bool,
    /// Instead: FWQ, FTQ and selfish detour on CPU 0 for a fraction of a second each, their quantum,
    /// work unit, iteration and elapsed time against their targets (the timing checks of the issue #6
    /// tests, moved here by issue #16)
    #[arg(long)]
    quanta: bool,
    /// With --quanta: also the static guest programs natively and in the LWK (needs KVM and gcc)
    #[arg(long, requires = "quanta")]
    lwk: bool,
}

/// One timing check of a measurement against its target.
struct Check {
    what: String,
    measured: String,
    target: String,
    ok: bool,
}

/// The checks of one series: FWQ's fastest quantum within 3× of the target and at least the requested
/// duration measured; FTQ's work unit under 20 µs, 100–2000 units in the fullest slot and the elapsed time
/// within [1, 2)× the duration; selfish's shortest iteration under `max_iter_ns` and the same elapsed time.
fn checks(
    source: &str,
    g: &multios_noise::measure::Series,
    duration_ns: f64,
    max_iter_ns: f64,
) -> Vec<Check> {
    use multios_noise::measure::Kind;
    let within = |x: f64, lo: f64, hi: f64| x >= lo && x < hi;
    let name = match g.kind {
        Kind::Fwq => "FWQ",
        Kind::Ftq => "FTQ",
        Kind::Selfish => "selfish",
    };
    let elapsed = |lo: f64| Check {
        what: format!("{source} {name}: elapsed time"),
        measured: format!("{:.3}× the duration", g.elapsed_ns / duration_ns),
        target: format!("[{lo}, 2)×"),
        ok: within(g.elapsed_ns / duration_ns, lo, 2.0),
    };
    match g.kind {
        Kind::Fwq => {
            let min = g.samples.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
            vec![
                Check {
                    what: format!("{source} FWQ: fastest quantum"),
                    measured: format!(
                        "{:.3}× the target {:.0} µs",
                        min / g.quantum_ns,
                        g.quantum_ns / 1e3
                    ),
                    target: "(1/3, 3)×".into(),
                    ok: within(min / g.quantum_ns, 1.0 / 3.0, 3.0),
                },
                Check {
                    what: format!("{source} FWQ: elapsed time"),
                    measured: format!("{:.3}× the duration", g.elapsed_ns / duration_ns),
                    target: "≥ 1× (it repeats until the duration has passed)".into(),
                    ok: g.elapsed_ns >= duration_ns * 0.999,
                },
            ]
        }
        Kind::Ftq => {
            let max = g.samples.iter().map(|x| x.1).fold(0.0, f64::max);
            vec![
                Check {
                    what: format!("{source} FTQ: work unit"),
                    measured: format!("{:.0} ns", g.unit_ns),
                    target: "< 20 µs".into(),
                    ok: g.unit_ns > 0.0 && g.unit_ns < 20_000.0,
                },
                Check {
                    what: format!("{source} FTQ: units in the fullest slot"),
                    measured: format!("{max:.0}"),
                    target: "[100, 2000) (≈ 500 by design)".into(),
                    ok: within(max, 100.0, 2000.0),
                },
                elapsed(0.995),
            ]
        }
        Kind::Selfish => vec![
            Check {
                what: format!("{source} selfish: shortest loop iteration"),
                measured: format!("{:.1} ns", g.min_iteration_ns),
                target: format!("< {max_iter_ns:.0} ns"),
                ok: g.min_iteration_ns > 0.0 && g.min_iteration_ns < max_iter_ns,
            },
            elapsed(0.995),
        ],
    }
}

/// `--quanta`: the benchmarks' own timing against their targets, on CPU 0.
fn quanta(lwk: bool, out: &Out) -> crate::cmd::Exit {
    use multios_noise::clock::Clock;
    use multios_noise::measure::{self, Kind, Settings};
    let clock = Clock::calibrate(20);
    let online = multios_noise::cpus::online()?;
    let settings = |kind, quantum_ns, duration_ns| Settings {
        kind,
        quantum_ns,
        duration_ns,
        threshold: 10.0,
        iters_per_tick: None,
    };
    let mut rows = Vec::new();
    for (kind, q, d) in [
        (Kind::Fwq, 200_000.0, 300e6),
        (Kind::Ftq, 100_000.0, 200e6),
        (Kind::Selfish, 0.0, 200e6),
    ] {
        let s = settings(kind, q, d);
        for g in measure::run_on(&[0], &s, &clock)? {
            rows.extend(checks("in-process", &g, d, 10_000.0));
        }
    }
    if lwk {
        let idle = multios_noise::session::Case {
            label: "idle".into(),
            load: None,
        };
        for (kind, q, d) in [
            (Kind::Fwq, 200_000.0, 100e6),
            (Kind::Ftq, 1e6, 200e6),
            (Kind::Selfish, 0.0, 200e6),
        ] {
            let s = settings(kind, q, d);
            let guest = multios_experiment::noise_guests::LwkGuest::prepare(kind, &[0], &online)?;
            for o in guest.run(&idle, &s, &clock, None)? {
                let source = if o.case.label.ends_with("LWK") {
                    "guest in the LWK"
                } else {
                    "guest on Linux"
                };
                for g in &o.series {
                    rows.extend(checks(source, g, d, 1000.0));
                }
            }
        }
    }
    if out.format == Format::Json {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|c| serde_json::json!({"check": c.what, "measured": c.measured, "target": c.target, "met": c.ok}))
            .collect();
        out.json(&v)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = Table::new(["check", "measured", "target", "met"]);
    for c in &rows {
        t.row([
            c.what.clone(),
            c.measured.clone(),
            c.target.clone(),
            if c.ok { "yes" } else { "no" }.to_string(),
        ]);
    }
    t.print(out);
    Ok(ExitCode::SUCCESS)
}

struct Row {
    name: &'static str,
    wall: f64,
    cpu: f64,
    slowdown: f64,
}

pub fn run(a: Args, out: &Out) -> crate::cmd::Exit {
    if a.quanta {
        return quanta(a.lwk, out);
    }
    let trace = NoiseTrace::signature(&a.signature)?;
    let base = Config {
        work_ns: a.work.nanos(),
        steps: a.steps,
        seed: 1,
        collective: Collective::Barrier { cost_ns: 0.0 },
        engine: Engine::Auto,
    };
    let mut cases = vec![
        ("barrier, per-detour candidates", base.clone()),
        (
            "barrier, pass over every rank",
            Config {
                engine: Engine::Direct,
                ..base.clone()
            },
        ),
    ];
    if a.allreduce {
        let c = Collective::Allreduce {
            latency_ns: 1000.0,
            overhead_ns: 200.0,
        };
        cases.push((
            "allreduce tree, every rank",
            Config {
                collective: c,
                ..base.clone()
            },
        ));
    }
    let mut rows = Vec::new();
    for (name, cfg) in cases {
        let (t0, c0) = (Instant::now(), sys::thread_cpu_ns());
        let pts = scale::run(&trace, &[a.ranks], &cfg, true, false)?;
        let wall = t0.elapsed().as_secs_f64();
        let cpu = sys::thread_cpu_ns().saturating_sub(c0) as f64 * 1e-9;
        let slowdown = pts.first().and_then(|p| p.uncoordinated).unwrap_or(f64::NAN);
        rows.push(Row {
            name,
            wall,
            cpu,
            slowdown,
        });
    }
    let rank_steps = a.ranks as f64 * a.steps as f64;
    let direct = rows.get(1).map(|r| r.cpu).unwrap_or(f64::NAN);
    let mut t = Table::new([
        "engine",
        "ranks × steps",
        "wall s",
        "cpu s",
        "rank-steps per cpu s",
        "cpu vs every-rank pass",
        "slowdown ×",
        "wall < 60 s",
    ]);
    for r in &rows {
        t.row([
            r.name.to_string(),
            format!("{} × {}", a.ranks, a.steps),
            format!("{:.3}", r.wall),
            format!("{:.3}", r.cpu),
            format!("{:.3e}", rank_steps / r.cpu),
            format!("{:.1}× faster", direct / r.cpu),
            format!("{:.3}", r.slowdown),
            if r.wall < 60.0 { "yes" } else { "no" }.to_string(),
        ]);
    }
    t.print(out);
    if out.format == Format::Table {
        let same = rows.len() >= 2 && (rows[0].slowdown - rows[1].slowdown).abs() < 1e-9 * rows[1].slowdown;
        println!(
            "{} noise, {} of work per step; the two barrier engines {}",
            a.signature,
            a.work,
            if same { "agree (same slowdown)" } else { "DISAGREE" }
        );
    }
    Ok(ExitCode::SUCCESS)
}
