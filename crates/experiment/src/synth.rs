//! The synthetic benchmark of paper §4.1 (csrc/synth.c): phases of Monte Carlo π alternate with
//! phases replaying a system-call mix, everything timed in-process with rdtsc. `multios validate`
//! runs it natively and under emulation, `multios lwk validate` natively and in the LWK.

use crate::ExperimentError;
use multios_emulate::{CpuSet, Delegation, Exit, Mechanism};
use multios_host::tsc;
use multios_model::{Call, Workload};
use std::path::Path;

/// The benchmark, built by build.rs for the host.
const SYNTH: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/multios-synth"));

/// Its C source, built statically for the LWK by `multios lwk validate`.
pub const SOURCE: &str = include_str!("../csrc/synth.c");

/// The calls the synthetic benchmark can replay.
pub const REPLAYABLE: [&str; 11] = [
    "read", "write", "fstat", "uname", "lseek", "getppid", "getpid", "openat", "close", "mmap", "munmap",
];

/// Calls per phase.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Mix(pub Vec<(String, u64)>);

impl Mix {
    /// A file-server-like mix: reads and writes dominate, some metadata and memory calls.
    pub fn default_mix() -> Mix {
        let v = [
            ("read", 50),
            ("write", 50),
            ("fstat", 20),
            ("uname", 10),
            ("lseek", 20),
            ("getppid", 50),
            ("getpid", 20),
            ("openat", 10),
            ("close", 10),
            ("mmap", 10),
            ("munmap", 10),
        ];
        Mix(v.iter().map(|(n, c)| (n.to_string(), *c)).collect())
    }

    /// The replayable calls of a profile, scaled to `per_phase` calls per phase in total
    /// (openat/close and mmap/munmap are paired so descriptors and mappings balance).
    pub fn from_profile(p: &multios_profile::Profile, per_phase: u64) -> Option<Mix> {
        let mut counts: Vec<(String, u64)> = p
            .syscalls
            .iter()
            .filter(|s| REPLAYABLE.contains(&s.name.as_str()))
            .map(|s| (s.name.clone(), s.count))
            .collect();
        let total: u64 = counts.iter().map(|c| c.1).sum();
        if total == 0 {
            return None;
        }
        for c in &mut counts {
            c.1 = ((c.1 as f64 * per_phase as f64 / total as f64).round() as u64).clamp(1, 4096);
        }
        let get = |v: &Vec<(String, u64)>, n: &str| v.iter().find(|c| c.0 == n).map(|c| c.1).unwrap_or(0);
        for (a, b) in [("openat", "close"), ("mmap", "munmap")] {
            let k = get(&counts, a).max(get(&counts, b));
            counts.retain(|c| c.0 != a && c.0 != b);
            if k > 0 {
                counts.push((a.into(), k));
                counts.push((b.into(), k));
            }
        }
        Some(Mix(counts))
    }
}

/// What one synthetic run measured in-process.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SynthRun {
    pub compute: f64,
    pub calls: Vec<Call>,
    pub total: f64,
    /// (compute s, calls s) of each phase, in order (the `phase` lines).
    #[serde(skip)]
    pub phases: Vec<(f64, f64)>,
}

impl SynthRun {
    pub fn workload(&self) -> Workload {
        Workload {
            c: self.compute,
            calls: self.calls.clone(),
        }
    }
}

/// Runs the benchmark once: natively when `mech` is `None`.
#[allow(clippy::too_many_arguments)]
pub fn run_synth(
    mech: Option<Mechanism>,
    iters: u64,
    phases: u64,
    mix: &Mix,
    delegation: &Delegation,
    fc: f64,
    compute: &CpuSet,
    control: &CpuSet,
    wait: multios_emulate::Wait,
    dir: &Path,
) -> Result<SynthRun, ExperimentError> {
    let io = ExperimentError::io;
    let bin = multios_emulate::embed::materialize("synth", "", SYNTH, 0o755)?;
    let mixf = dir.join("mix");
    let text: String = mix.0.iter().map(|(n, c)| format!("{n} {c}\n")).collect();
    std::fs::write(&mixf, text).map_err(io(format!("writing {}", mixf.display())))?;
    let out = dir.join("synth.out");
    std::fs::remove_file(&out).ok();
    let argv: Vec<String> = vec![
        bin.display().to_string(),
        iters.to_string(),
        phases.to_string(),
        out.display().to_string(),
        mixf.display().to_string(),
    ];
    let exit = multios_emulate::run_at(mech, delegation, fc, compute, control, argv, wait)?;
    if exit != Exit::Code(0) {
        return Err(ExperimentError::Run(format!(
            "the synthetic benchmark ended with {exit}"
        )));
    }
    let text = std::fs::read_to_string(&out).map_err(io(format!("reading {}", out.display())))?;
    Ok(parse(&text))
}

/// Reads the synthetic benchmark's output (`compute TICKS`, `NAME COUNT TICKS`…), ticks to seconds.
pub fn parse(text: &str) -> SynthRun {
    let cal = tsc::calibration();
    let mut r = SynthRun {
        compute: 0.0,
        calls: Vec::new(),
        total: 0.0,
        phases: Vec::new(),
    };
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        match f.as_slice() {
            ["compute", t] => r.compute = cal.secs(t.parse().unwrap_or(0)),
            ["pi", _] => {}
            ["phase", _, c, k] => r
                .phases
                .push((cal.secs(c.parse().unwrap_or(0)), cal.secs(k.parse().unwrap_or(0)))),
            [name, n, t] => r.calls.push(Call {
                name: name.to_string(),
                n: n.parse().unwrap_or(0),
                g: cal.secs(t.parse().unwrap_or(0)),
            }),
            _ => {}
        }
    }
    r.total = r.compute + r.calls.iter().map(|c| c.g).sum::<f64>();
    r
}

/// A phase part (compute, or its calls) counts as interrupted when it exceeds the run's median
/// part by this factor plus [`INTERRUPT_SLACK_S`]: the CPU was taken from the benchmark (another
/// process, the host) for longer than the phase's own work varies.
pub const INTERRUPT_FACTOR: f64 = 1.5;
/// See [`INTERRUPT_FACTOR`]: 50 µs, above timer interrupts and short wake-ups, below a time slice.
pub const INTERRUPT_SLACK_S: f64 = 50e-6;

impl SynthRun {
    /// The run with each interrupted phase part (see [`INTERRUPT_FACTOR`]) replaced by the run's
    /// median part, and how many parts were replaced; the call times are scaled by the calls'
    /// share. A run without `phase` lines is returned as it is.
    pub fn without_interruptions(&self) -> (SynthRun, usize) {
        if self.phases.is_empty() {
            return (self.clone(), 0);
        }
        let clean = |part: &dyn Fn(&(f64, f64)) -> f64| -> (f64, f64, usize) {
            let v: Vec<f64> = self.phases.iter().map(part).collect();
            let med = multios_stats::median(&v).unwrap_or(0.0);
            let cap = med * INTERRUPT_FACTOR + INTERRUPT_SLACK_S;
            let n = v.iter().filter(|x| **x > cap).count();
            let kept: f64 = v.iter().map(|x| if *x > cap { med } else { *x }).sum();
            (v.iter().sum(), kept, n)
        };
        let (c_raw, c, nc) = clean(&|p| p.0);
        let (k_raw, k, nk) = clean(&|p| p.1);
        let scale = if k_raw > 0.0 { k / k_raw } else { 1.0 };
        let mut r = self.clone();
        // the phase lines hold the same ticks as the totals; keep any rounding difference out
        r.compute = self.compute * if c_raw > 0.0 { c / c_raw } else { 1.0 };
        for call in &mut r.calls {
            call.g *= scale;
        }
        r.total = r.compute + r.calls.iter().map(|c| c.g).sum::<f64>();
        (r, nc + nk)
    }
}

/// The run with the median total time (of an even count the upper middle one: a run cannot be
/// averaged); `None` when there are none.
pub fn median_of(mut runs: Vec<SynthRun>) -> Option<SynthRun> {
    if runs.is_empty() {
        return None;
    }
    runs.sort_by(|a, b| a.total.total_cmp(&b.total));
    Some(runs.swap_remove(runs.len() / 2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_benchmark_output() {
        let r = parse("compute 1000\nread 10 100\nwrite 5 50\npi 3.14\n");
        assert_eq!(r.calls.len(), 2);
        assert!(r.total > r.compute);
    }

    #[test]
    fn default_mix_only_uses_replayable_calls() {
        assert!(Mix::default_mix()
            .0
            .iter()
            .all(|(n, _)| REPLAYABLE.contains(&n.as_str())));
    }

    fn run(total: f64) -> SynthRun {
        SynthRun {
            compute: total,
            calls: Vec::new(),
            total,
            phases: Vec::new(),
        }
    }

    #[test]
    fn issue_15_an_interrupted_phase_is_replaced_by_the_median_phase() {
        let mut r = parse("compute 0\nread 30 0\n");
        r.compute = 3.0e-3 + 5.0e-3;
        r.calls[0].g = 3.0e-3;
        r.phases = vec![(1e-3, 1e-3), (1e-3, 1e-3), (1e-3, 1e-3), (5e-3, 1e-3)];
        r.phases.truncate(3);
        r.phases.push((5e-3, 0.0));
        r.calls[0].g = 3.0e-3;
        r.total = r.compute + r.calls[0].g;
        let (f, n) = r.without_interruptions();
        // the fourth phase's compute (5 ms against a 1 ms median) is replaced; its calls (0) are not
        assert_eq!(n, 1);
        assert!((f.compute - 4e-3).abs() < 1e-12, "{}", f.compute);
        assert!((f.calls[0].g - 3e-3).abs() < 1e-12);
        assert!((f.total - 7e-3).abs() < 1e-12);
        let plain = run(1.0);
        assert_eq!(plain.without_interruptions().0.total, 1.0);
    }

    #[test]
    fn the_median_run_is_the_middle_one_or_the_upper_middle_one() {
        assert!(median_of(Vec::new()).is_none());
        let m = |v: &[f64]| median_of(v.iter().map(|t| run(*t)).collect()).map(|r| r.total);
        assert_eq!(m(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(m(&[4.0, 1.0, 3.0, 2.0]), Some(3.0));
    }

    #[test]
    fn a_profile_mix_pairs_opens_with_closes_and_keeps_only_replayable_calls() {
        let mut p = multios_profile::Profile::new(vec!["x".into()], "test", "high");
        for (name, count) in [("openat", 10), ("close", 30), ("read", 60), ("futex", 1000)] {
            p.syscalls.push(multios_profile::SyscallStats {
                name: name.into(),
                count,
                ..Default::default()
            });
        }
        let mix = Mix::from_profile(&p, 100).expect("replayable calls");
        let get = |n: &str| mix.0.iter().find(|c| c.0 == n).map(|c| c.1);
        assert_eq!(get("futex"), None);
        assert_eq!(get("openat"), get("close"));
        assert_eq!(get("read"), Some(60));
    }
}
