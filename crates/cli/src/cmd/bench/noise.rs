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
}

struct Row {
    name: &'static str,
    wall: f64,
    cpu: f64,
    slowdown: f64,
}

pub fn run(a: Args, out: &Out) -> crate::cmd::Exit {
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
