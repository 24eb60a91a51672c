//! The `touch` term's microbenchmark (issue #15): what a first touch of a 4 KiB page costs the LWK
//! more than natively — `csrc/touchbench.c` (shared with `bench multiverse`, which prices its
//! first touches with it), first writes to [`TOUCH_MIB`] MiB of fresh anonymous memory, natively
//! on the compute CPUs and in `multios lwk run --policy all`, [`TOUCH_ROUNDS`] rounds in
//! alternating order, medians. The pages a workload touches come from its own native runs
//! (`super::lwk_pairs_counted`), never from the LWK's.

use super::Config;
use crate::ExperimentError;
use std::path::Path;
use std::process::{Command, Stdio};

/// The `touch` microbenchmark's source (`csrc/touchbench.c`, shared with `bench multiverse`), the
/// memory it touches and its rounds.
pub const TOUCH_SOURCE: &str = include_str!("../../../csrc/touchbench.c");
pub const TOUCH_MIB: u64 = 32;
pub const TOUCH_ROUNDS: usize = 3;

/// touchbench.c natively and in the LWK ([`TOUCH_ROUNDS`] rounds, alternating): the median
/// first-touch cost per 4 KiB page on each side, ns.
pub fn touch_lwk(cfg: &Config, exe: &Path, scratch: &Path) -> Result<(f64, f64), ExperimentError> {
    let argv = vec![exe.display().to_string(), TOUCH_MIB.to_string()];
    let (native, lwk) = alternate(cfg, &argv, scratch, "touch", TOUCH_ROUNDS, |text| {
        parse_touch(text).ok_or("first_touch_ns")
    })?;
    let med = |v: &[f64]| crate::stats::median(v).unwrap_or(f64::NAN);
    Ok((med(&native), med(&lwk)))
}

/// A microbenchmark `argv` natively on the compute CPUs and in `multios lwk run --policy all
/// --populate-at-map off --populate-next off`, `rounds` runs a side in alternating order (native first in even rounds), each in a fresh
/// directory under `scratch`: what `parse` reads from each run's output, per side. A run that
/// fails or prints nothing `parse` takes is an error naming `label` and what was missing.
pub fn alternate<T>(
    cfg: &Config,
    argv: &[String],
    scratch: &Path,
    label: &str,
    rounds: usize,
    parse: impl Fn(&str) -> Result<T, &'static str>,
) -> Result<(Vec<T>, Vec<T>), ExperimentError> {
    let (mut native, mut lwk) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let order = if round % 2 == 0 {
            [false, true]
        } else {
            [true, false]
        };
        for in_lwk in order {
            let dir = scratch.join(format!("{label}-{round}-{in_lwk}"));
            std::fs::create_dir_all(&dir)
                .map_err(ExperimentError::io(format!("creating {}", dir.display())))?;
            let mut cmd = if in_lwk {
                let mut c = Command::new(&cfg.exe);
                // The `touch` and `memcalls` prices are a first touch's and a call's own cost:
                // with the LWK populating new memory in the mapping call (its default since the
                // seventh session), the mmap would carry the touches' work and the touches none,
                // priced per byte of any length while the LWK populates only a range's first
                // 4 MiB. How the model should charge the populated pages is open (VALIDATE.md).
                // Nor does the proxy make the next mappings' pages ahead (`--populate-next`, off
                // by default, kept off here should the default change): the mmap would find
                // them made.
                c.args([
                    "lwk",
                    "run",
                    "--policy",
                    "all",
                    "--populate-at-map",
                    "off",
                    "--populate-next",
                    "off",
                    "--",
                ])
                .args(argv);
                c
            } else {
                let mut c = Command::new("taskset");
                c.arg("-c").arg(cfg.compute.to_string()).args(argv);
                c
            };
            let o = cmd
                .current_dir(&dir)
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .output()
                .map_err(ExperimentError::io(format!("running the {label} microbenchmark")))?;
            std::fs::remove_dir_all(&dir).ok();
            let text = String::from_utf8_lossy(&o.stdout);
            let side = if in_lwk { "lwk" } else { "native" };
            let v = match parse(&text) {
                Ok(v) if o.status.success() => v,
                Ok(_) => {
                    return Err(ExperimentError::Run(format!(
                        "the {label} microbenchmark ({side}) failed ({}): {}",
                        o.status,
                        text.trim()
                    )))
                }
                Err(what) => {
                    return Err(ExperimentError::Run(format!(
                        "the {label} microbenchmark ({side}) printed no {what}: {}",
                        text.trim()
                    )))
                }
            };
            if in_lwk { &mut lwk } else { &mut native }.push(v);
        }
    }
    Ok((native, lwk))
}

/// touchbench.c's `first_touch_ns N …` line: N.
pub fn parse_touch(text: &str) -> Option<f64> {
    let mut w = text.split_whitespace();
    w.by_ref().find(|t| *t == "first_touch_ns")?;
    w.next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue_15_touchbench_lines_parse() {
        assert_eq!(
            parse_touch("first_touch_ns 873 shadow_fault_ns 2100 warm_ns 3 pages 8192\n"),
            Some(873.0)
        );
        assert_eq!(parse_touch("nothing"), None);
    }
}
