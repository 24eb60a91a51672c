//! `multios bench noise` (issue #6): throughput of the scale simulation, the per-detour candidate
//! engine against a pass over every rank, timed side by side in one run.

use crate::output::{Format, Out, Table};
use multios_noise::scale::{self, Collective, Config, Engine};
use multios_noise::NoiseTrace;
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
    name: String,
    secs: f64,
    slowdown: f64,
    rank_steps: f64,
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
        ("barrier, per-detour candidates".to_string(), base.clone()),
        (
            "barrier, pass over every rank".to_string(),
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
            "allreduce tree, every rank".to_string(),
            Config {
                collective: c,
                ..base.clone()
            },
        ));
    }
    let mut rows = Vec::new();
    for (name, cfg) in cases {
        let t0 = Instant::now();
        let pts = scale::run(&trace, &[a.ranks], &cfg, true, false)?;
        let secs = t0.elapsed().as_secs_f64();
        let slowdown = pts.first().and_then(|p| p.uncoordinated).unwrap_or(f64::NAN);
        rows.push(Row {
            name,
            secs,
            slowdown,
            rank_steps: a.ranks as f64 * a.steps as f64,
        });
    }
    let direct = rows.get(1).map(|r| r.secs).unwrap_or(f64::NAN);
    let mut t = Table::new([
        "engine",
        "ranks × steps",
        "seconds",
        "rank-steps/s",
        "vs every-rank pass",
        "slowdown ×",
        "< 60 s",
    ]);
    for r in &rows {
        t.row([
            r.name.clone(),
            format!("{} × {}", a.ranks, a.steps),
            format!("{:.3}", r.secs),
            format!("{:.3e}", r.rank_steps / r.secs),
            format!("{:.1}×", direct / r.secs),
            format!("{:.3}", r.slowdown),
            if r.secs < 60.0 { "yes" } else { "no" }.to_string(),
        ]);
    }
    match out.format {
        Format::Json => t.print(out),
        _ => {
            t.print(out);
            if out.format == Format::Table {
                let same =
                    rows.len() >= 2 && (rows[0].slowdown - rows[1].slowdown).abs() < 1e-9 * rows[1].slowdown;
                println!(
                    "{} noise, {} of work per step; both barrier engines {} (same slowdown)",
                    a.signature,
                    a.work,
                    if same { "agree" } else { "DISAGREE" }
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
