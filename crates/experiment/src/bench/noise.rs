//! `multios bench noise` (issue #6): throughput of the scale simulation, the per-detour candidate
//! engine against a pass over every rank, timed side by side in one run (wall and CPU time: the
//! machine is shared, CPU time is what the simulation itself cost); and with `--quanta`, the noise
//! benchmarks' own timing against their targets.

use crate::noise_guests::LwkGuest;
use crate::{ExperimentError, Progress};
use multios_noise::scale::{self, Collective, Config, Engine};
use multios_noise::{sys, NoiseTrace};
use std::time::Instant;

/// One timing check of a measurement against its target.
/// (`--quanta --json` prints these; fields in the JSON's order.)
#[derive(Debug, Clone, serde::Serialize)]
pub struct Check {
    #[serde(rename = "check")]
    pub what: String,
    pub measured: String,
    #[serde(rename = "met")]
    pub ok: bool,
    pub target: String,
}

/// The checks of one series: FWQ's fastest quantum within 3× of the target and at least the requested
/// duration measured; FTQ's work unit under 20 µs, 100–2000 units in the fullest slot and the elapsed time
/// within [1, 2)× the duration; selfish's shortest iteration under `max_iter_ns` and the same elapsed time.
pub fn checks(
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

pub fn quanta(lwk: bool, progress: &mut dyn Progress) -> Result<Vec<Check>, ExperimentError> {
    use multios_noise::clock::Clock;
    use multios_noise::measure::{self, Kind, Settings};
    let clock = Clock::calibrate(20);
    let online = multios_noise::cpus::online().map_err(|e| ExperimentError::Run(e.to_string()))?;
    let settings = |kind, quantum_ns, duration_ns| Settings {
        kind,
        quantum_ns,
        duration_ns,
        threshold: 10.0,
        iters_per_tick: None,
    };
    let mut rows = Vec::new();
    progress.start(if lwk { 6 } else { 3 }, "bench noise --quanta");
    for (kind, q, d) in [
        (Kind::Fwq, 200_000.0, 300e6),
        (Kind::Ftq, 100_000.0, 200e6),
        (Kind::Selfish, 0.0, 200e6),
    ] {
        let s = settings(kind, q, d);
        let series = measure::run_on(&[0], &s, &clock).map_err(|e| ExperimentError::Run(e.to_string()))?;
        for g in series {
            rows.extend(checks("in-process", &g, d, 10_000.0));
        }
        progress.advance(&format!("in-process {kind:?}"));
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
            let guest = LwkGuest::prepare(kind, &[0], &online)?;
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
            progress.advance(&format!("guest {kind:?}"));
        }
    }
    progress.finish();
    Ok(rows)
}

/// The scale simulation to time (the CLI's flags, the signature parsed).
#[derive(Debug, Clone)]
pub struct ScaleBench {
    pub trace: NoiseTrace,
    pub ranks: u64,
    pub steps: u64,
    /// Work per step, ns.
    pub work_ns: f64,
    /// Also time the binomial-tree allreduce.
    pub allreduce: bool,
}

/// One engine's time.
#[derive(Debug, Clone)]
pub struct Row {
    pub name: &'static str,
    pub wall: f64,
    pub cpu: f64,
    pub slowdown: f64,
}

/// Times each engine on the same simulation; one progress step per engine.
pub fn scale_engines(a: &ScaleBench, progress: &mut dyn Progress) -> Result<Vec<Row>, ExperimentError> {
    let base = Config {
        work_ns: a.work_ns,
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
    progress.start(cases.len() as u64, "bench noise: engines");
    let mut rows = Vec::new();
    for (name, cfg) in cases {
        let (t0, c0) = (Instant::now(), sys::thread_cpu_ns());
        let pts = scale::run(&a.trace, &[a.ranks], &cfg, true, false)
            .map_err(|e| ExperimentError::Run(e.to_string()))?;
        let wall = t0.elapsed().as_secs_f64();
        let cpu = sys::thread_cpu_ns().saturating_sub(c0) as f64 * 1e-9;
        let slowdown = pts.first().and_then(|p| p.uncoordinated).unwrap_or(f64::NAN);
        rows.push(Row {
            name,
            wall,
            cpu,
            slowdown,
        });
        progress.advance(name);
    }
    progress.finish();
    Ok(rows)
}

/// The engines table's header.
pub const HEADER: [&str; 8] = [
    "engine",
    "ranks × steps",
    "wall s",
    "cpu s",
    "rank-steps per cpu s",
    "cpu vs every-rank pass",
    "slowdown ×",
    "wall < 60 s",
];

/// The engines table's rows (the second row is the pass over every rank).
pub fn table_rows(a: &ScaleBench, rows: &[Row]) -> Vec<[String; 8]> {
    let rank_steps = a.ranks as f64 * a.steps as f64;
    let direct = rows.get(1).map(|r| r.cpu).unwrap_or(f64::NAN);
    rows.iter()
        .map(|r| {
            [
                r.name.to_string(),
                format!("{} × {}", a.ranks, a.steps),
                format!("{:.3}", r.wall),
                format!("{:.3}", r.cpu),
                format!("{:.3e}", rank_steps / r.cpu),
                format!("{:.1}× faster", direct / r.cpu),
                format!("{:.3}", r.slowdown),
                if r.wall < 60.0 { "yes" } else { "no" }.to_string(),
            ]
        })
        .collect()
}

/// Whether the two barrier engines found the same slowdown.
pub fn engines_agree(rows: &[Row]) -> bool {
    rows.len() >= 2 && (rows[0].slowdown - rows[1].slowdown).abs() < 1e-9 * rows[1].slowdown
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &'static str, cpu: f64, slowdown: f64) -> Row {
        Row {
            name,
            wall: cpu,
            cpu,
            slowdown,
        }
    }

    #[test]
    fn engines_agree_only_on_the_same_slowdown() {
        assert!(engines_agree(&[row("a", 1.0, 1.5), row("b", 4.0, 1.5)]));
        assert!(!engines_agree(&[row("a", 1.0, 1.5), row("b", 4.0, 1.6)]));
        assert!(!engines_agree(&[row("a", 1.0, 1.5)]));
    }

    #[test]
    fn the_table_compares_each_engine_with_the_pass_over_every_rank() {
        let a = ScaleBench {
            trace: NoiseTrace::signature("10Hz:2.5ms").expect("a valid signature"),
            ranks: 10,
            steps: 100,
            work_ns: 1e5,
            allreduce: false,
        };
        let t = table_rows(&a, &[row("a", 1.0, 1.5), row("b", 4.0, 1.5)]);
        assert_eq!(t[0][1], "10 × 100");
        assert_eq!(t[0][5], "4.0× faster");
        assert_eq!(t[1][5], "1.0× faster");
        assert_eq!(t[0][7], "yes");
    }
}
