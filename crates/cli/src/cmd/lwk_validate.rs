//! `multios lwk validate`: the refined model against the real LWK; the sweep is
//! multios_experiment::lwk_validate.

use crate::output::{Format, Out, Table};
use multios_experiment::lwk_validate::{self, Config};
use std::process::ExitCode;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// Call intensities: multiples of the per-phase mix (read 20, write 20, lseek 20, fstat 10,
    /// uname 10, openat+close 10, mmap+munmap 10)
    #[arg(long, value_delimiter = ',', default_value = "0.25,1,4,16")]
    intensity: Vec<f64>,
    /// Monte Carlo samples per phase
    #[arg(long, default_value_t = 20_000)]
    iters: u64,
    /// Phases per run
    #[arg(long, default_value_t = 400)]
    phases: u64,
    /// Repeats per point, each a measured native/LWK pair beside a calls-only pair (the point's
    /// accuracy is the median of the repeats' errors; 9 because a repeat's LWK calls can cost
    /// 10–30 % more or less than its calls-only partner's, docs/LWK.md "lwk validate")
    #[arg(long, default_value_t = 9)]
    repeat: usize,
}

pub fn run(a: Args, out: &Out) -> crate::cmd::Exit {
    let cfg = Config {
        intensities: a.intensity,
        iters: a.iters,
        phases: a.phases,
        repeat: a.repeat,
    };
    let r = lwk_validate::run(&cfg, &mut crate::progress::Bar::new(out))?;
    let (gamma, acc_naive, acc_refined, points) = (r.gamma, r.accuracy_naive, r.accuracy_refined, &r.points);
    let mut t = Table::new([
        "intensity",
        "p",
        "native_s",
        "lwk_s",
        "measured_S",
        "raw_S",
        "interrupted_%",
        "naive_S",
        "refined_S",
        "acc_naive_%",
        "acc_refined_%",
        "level_ns",
        "retries",
    ]);
    for p in points {
        t.row([
            out.num(p.intensity, 2),
            out.num(p.p, 4),
            out.num(p.native_s, 4),
            out.num(p.lwk_s, 4),
            out.num(p.measured, 3),
            out.num(p.measured_raw, 3),
            format!(
                "{}/{}",
                out.num(p.interrupted_native_pct, 1),
                out.num(p.interrupted_lwk_pct, 1)
            ),
            out.num(p.naive, 3),
            out.num(p.refined, 3),
            out.num(p.accuracy_naive, 1),
            out.num(p.accuracy_refined, 1),
            p.repeats
                .iter()
                .map(|r| format!("{:.0}{}", r.level.level_ns, if r.level.steady { "" } else { "?" }))
                .collect::<Vec<_>>()
                .join("/"),
            p.repeats
                .iter()
                .map(|r| r.level.retries)
                .sum::<usize>()
                .to_string(),
        ]);
    }
    match out.format {
        Format::Json => out.json(&r)?,
        Format::Csv => out!("{}", t.to_csv()),
        Format::Table => {
            outln!(
                "Model inputs (measured apart): γ = {gamma:.3} (synth without calls); per-call costs natively \
                 and in the LWK from synth without computation, run beside each repeat's measured pair (--json lists them)"
            );
            out!("{}", t.render(out));
            outln!(
                "accuracy (100 − MAPE) over {} intensities: refined {acc_refined:.1} %, naïve {acc_naive:.1} % \
                 (refined against raw_S, interrupted phases kept: {:.1} %; the medians of refined_S and \
                 measured_S compared apart: {:.1} %)",
                points.len(),
                r.accuracy_refined_raw,
                r.accuracy_refined_medians
            );
            outln!(
                "level_ns: the cross-CPU round trip (vCPU's CPU ↔ proxy's) each repeat saw, probed between its \
                 runs; a repeat whose probes disagreed by more than 1.5× was run again (retries), '?' where the \
                 retries ran out. refined_S: median of each repeat's projection from its own calls-only runs; \
                 acc_refined_%: 100 − the median of each repeat's error against its own measured pair"
            );
            outln!(
                "measured_S: median of the paired native/LWK ratios (ABBA); a phase part (compute or its calls) \
                 above 1.5 × the run's median part + 50 µs was interrupted (the CPU taken away) and counts as the \
                 median part (interrupted_%: native/LWK); raw_S keeps them"
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
