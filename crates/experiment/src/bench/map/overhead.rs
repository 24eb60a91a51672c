//! What `map run` itself costs a short program, apart from any placement: the same program under
//! Linux and under `map run` in ABBA pairs, (a) with a placement that pins nothing (every thread
//! named, every one free: `map run` then only spawns and waits) and (b) with every thread pinned to
//! the first CPU, against the program started on that CPU alone (the affinity inherited from the
//! benchmark's thread, as `taskset -c CPU` would give it without the extra exec). The difference of
//! (b) is `map run`'s mechanism: the event socket, its start, the watcher's wake-ups and
//! sched_setaffinity calls, and its end. Each side is timed from outside the call (spawn to reap;
//! for `map run` also its set-up and its report).

use super::{median, Context, MapBenchError};
use multios_host::cpus::CpuSet;
use multios_map::run::{self as maprun, Rule};
use multios_stats::Paired;
use serde::Serialize;
use std::time::Instant;

/// One program in one mode.
#[derive(Debug, Clone, Serialize)]
pub struct OverheadRow {
    pub program: String,
    pub command: String,
    /// "nothing pinned" or "all on CPU N".
    pub mode: String,
    pub linux_s: f64,
    pub map_s: f64,
    /// map / Linux per pair: median, 95 % interval, fastest / fastest.
    pub map_vs_linux: Paired,
    /// map − Linux per pair, seconds (a start-up cost does not scale with the run).
    pub map_minus_linux: Paired,
    /// Whether map run watched the program (false: nothing to place).
    pub watched: bool,
    /// Medians over the map runs: the runner's CPU time (µs) and the process events it received
    /// (the whole machine's).
    pub runner_cpu_us: f64,
    pub received: f64,
}

/// The short programs: `true`, the producer/consumer of the programs section, a short pipeline.
/// Each with the command names of its threads (for the rules).
fn programs(ctx: &Context) -> Vec<(&'static str, Vec<String>, Vec<&'static str>)> {
    let sh = |s: &str| vec!["/bin/sh".to_string(), "-c".to_string(), s.to_string()];
    vec![
        ("true", vec!["true".to_string()], vec!["true"]),
        (
            "prodcons",
            vec![ctx.prodcons.display().to_string(), "300000".into(), "100".into()],
            vec!["multios-prodcon", "multios-prodcon"],
        ),
        (
            "short pipeline",
            sh("head -c 16000000 /dev/zero | gzip -1 | sha256sum > /dev/null"),
            vec!["sh", "head", "gzip", "sha256sum"],
        ),
    ]
}

fn rules(comms: &[&str], cpus: &[u32]) -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::new();
    for c in comms {
        let ordinal = out.iter().filter(|r| r.comm == *c).count();
        out.push(Rule {
            comm: c.to_string(),
            ordinal,
            cpus: cpus.to_vec(),
        });
    }
    out
}

/// The program under `map run` with `rules`: seconds (the whole call) and its report.
fn placed(ctx: &Context, cmd: &[String], rules: &[Rule]) -> Result<(f64, maprun::RunReport), MapBenchError> {
    let t0 = Instant::now();
    let rep = maprun::run_with(cmd, rules, ctx.sweep, true)?;
    let s = t0.elapsed().as_secs_f64();
    if rep.exit_code != Some(0) {
        return Err(MapBenchError::Program(format!(
            "`{}` under map run: exit {:?}",
            cmd.join(" "),
            rep.exit_code
        )));
    }
    Ok((s, rep))
}

/// Every program in both modes, `pairs` ABBA pairs each.
pub fn rows(
    ctx: &Context,
    pairs: usize,
    progress: &mut dyn crate::progress::Progress,
) -> Result<Vec<OverheadRow>, MapBenchError> {
    let all: Vec<u32> = ctx.cpus.clone();
    let first = ctx.cpus[0];
    let one: CpuSet = [first as usize].into_iter().collect();
    let progs = programs(ctx);
    progress.start(
        (progs.len() * 2) as u64,
        "map run's own cost: short programs, ABBA pairs",
    );
    let mut out = Vec::new();
    for (name, cmd, comms) in progs {
        for pinned in [false, true] {
            let (rules, on, mode) = if pinned {
                (rules(&comms, &[first]), Some(&one), format!("all on CPU {first}"))
            } else {
                (rules(&comms, &all), None, "nothing pinned".to_string())
            };
            let (mut l, mut m, mut cpu, mut recv) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let mut watched = false;
            let mut map_once = |m: &mut Vec<f64>| -> Result<(), MapBenchError> {
                let (s, rep) = placed(ctx, &cmd, &rules)?;
                m.push(s);
                cpu.push(rep.runner_cpu_us);
                recv.push(rep.received as f64);
                watched |= rep.watched;
                Ok(())
            };
            for k in 0..pairs {
                if k % 2 == 0 {
                    l.push(super::programs::timed_on(&cmd, on)?);
                    map_once(&mut m)?;
                } else {
                    map_once(&mut m)?;
                    l.push(super::programs::timed_on(&cmd, on)?);
                }
            }
            let no = || MapBenchError::Program("no pairs".into());
            let row = OverheadRow {
                program: name.to_string(),
                command: cmd.join(" "),
                mode,
                linux_s: median(&l),
                map_s: median(&m),
                map_vs_linux: multios_stats::paired(&l, &m).ok_or_else(no)?,
                map_minus_linux: multios_stats::paired_diff(&l, &m).ok_or_else(no)?,
                watched,
                runner_cpu_us: median(&cpu),
                received: median(&recv),
            };
            progress.advance(&format!(
                "{name}, {}: Linux {:.4} s, map run {:.4} s (medians of {pairs} pairs)",
                row.mode, row.linux_s, row.map_s
            ));
            out.push(row);
        }
    }
    progress.finish();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_12_rules_name_each_thread_in_order() {
        let r = rules(&["a", "b", "a"], &[0]);
        let seen: Vec<(String, usize)> = r.iter().map(|r| (r.comm.clone(), r.ordinal)).collect();
        assert_eq!(seen, [("a".into(), 0), ("b".into(), 0), ("a".into(), 1)]);
    }
}
