//! `multios validate`: the synthetic benchmark of paper §4.1 under emulation. Phases of Monte Carlo π
//! alternate with phases replaying a system-call mix; γ is emulated by shrinking the computation by
//! γ. Each configuration (γ, policy, f_c) is measured and compared with the naïve and refined
//! predictions made from the native run's own profile (C, n(s), g(s), timed in-process).
//! The model's f_c is the requested f_c plus half the mechanism's own round trip, measured in the
//! same run (min, median or mean: the paper's Fig. 13 sensitivity).

use crate::{tsc, CpuSet, Delegation, EmulateError, Exit, Mechanism};
use multios_model::{Call, Params, Workload};
use std::collections::BTreeSet;
use std::path::Path;

const SYNTH: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/multios-synth"));

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
    wait: crate::Wait,
    dir: &Path,
) -> Result<SynthRun, EmulateError> {
    let io = |what: String| move |cause| EmulateError::Io { what, cause };
    let bin = crate::embed::materialize("synth", "", SYNTH, 0o755)?;
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
    let exit = crate::launch::run_at(mech, delegation, fc, compute, control, argv, wait)?;
    if exit != Exit::Code(0) {
        return Err(EmulateError::Supervisor(format!(
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
    };
    for l in text.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        match f.as_slice() {
            ["compute", t] => r.compute = cal.secs(t.parse().unwrap_or(0)),
            ["pi", _] => {}
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

/// One configuration of the sweep.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Point {
    pub gamma: f64,
    pub policy: String,
    pub fc: f64,
    pub measured: f64,
    pub naive: f64,
    /// Refined predictions with the model's f_c = f_c + ½·(min, median, mean) mechanism round trip.
    pub refined_min: f64,
    pub refined_median: f64,
    pub refined_mean: f64,
    /// 100 − |refined_median − measured| / measured · 100.
    pub accuracy: f64,
    /// What the point was computed from: the native and emulated runs' total and compute times
    /// (seconds) and the mechanism's round trip measured next to them.
    pub native_s: f64,
    pub native_compute_s: f64,
    pub emulated_s: f64,
    pub emulated_compute_s: f64,
    pub round_trip: RoundTrip,
}

/// The mechanism's own round trip (seconds), measured with the Table 3 raw getppid at f_c = 0.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct RoundTrip {
    pub min: f64,
    pub median: f64,
    pub mean: f64,
}

impl RoundTrip {
    /// Combines measurements taken at different moments (each next to one run): the smallest
    /// minimum, the median of the medians and the mean of the means (equal trial counts, so the
    /// mean of the means is the mean of all trials). `None` when there are none.
    pub fn combine(v: &[RoundTrip]) -> Option<RoundTrip> {
        if v.is_empty() {
            return None;
        }
        let mut medians: Vec<f64> = v.iter().map(|r| r.median).collect();
        medians.sort_by(f64::total_cmp);
        Some(RoundTrip {
            min: v.iter().map(|r| r.min).fold(f64::INFINITY, f64::min),
            median: multios_stats::median_sorted(&medians),
            mean: v.iter().map(|r| r.mean).sum::<f64>() / v.len() as f64,
        })
    }
}

/// The run with the median total time (the upper middle one of an even count); `runs` must not be
/// empty.
pub fn median_of(mut runs: Vec<SynthRun>) -> SynthRun {
    runs.sort_by(|a, b| a.total.total_cmp(&b.total));
    runs.swap_remove(runs.len() / 2)
}

pub fn mechanism_round_trip(
    m: Mechanism,
    compute: &CpuSet,
    control: &CpuSet,
) -> Result<RoundTrip, EmulateError> {
    mechanism_round_trip_at(m, 0.0, 1000, compute, control, Default::default())
}

/// The mechanism's own round trip when every call also pays `fc` each way: the Table 3 getppid
/// time minus the native time minus 2·f_c. On a VM it grows with f_c (the waiting side sleeps longer).
pub fn mechanism_round_trip_at(
    m: Mechanism,
    fc: f64,
    trials: usize,
    compute: &CpuSet,
    control: &CpuSet,
    wait: crate::Wait,
) -> Result<RoundTrip, EmulateError> {
    let r = crate::fc::run_at(&[m], trials, compute, control, fc, wait)?;
    let (Some(n), Some(e)) = (r.get("raw_getppid", "native"), r.get("raw_getppid", m.name())) else {
        return Err(EmulateError::Supervisor(
            "the fc benchmark returned no getppid numbers".into(),
        ));
    };
    let base = n.median + 2.0 * fc;
    Ok(RoundTrip {
        min: (e.min - base).max(0.0),
        median: (e.median - base).max(0.0),
        mean: (e.mean - base).max(0.0),
    })
}

/// Predicts and scores one measured configuration against the native run.
pub fn score(
    native: &SynthRun,
    emulated: &SynthRun,
    gamma: f64,
    policy: &str,
    delegated: &BTreeSet<String>,
    fc: f64,
    rt: RoundTrip,
) -> Result<Point, multios_model::ModelError> {
    let w = native.workload();
    let pred = |extra: f64| -> Result<f64, multios_model::ModelError> {
        Ok(multios_model::refined(&w, delegated, &Params::new(gamma, fc + extra / 2.0))?.speedup)
    };
    let measured = native.total / emulated.total;
    let refined_median = pred(rt.median)?;
    Ok(Point {
        gamma,
        policy: policy.to_string(),
        fc,
        measured,
        naive: multios_model::naive(w.p(), gamma)?,
        refined_min: pred(rt.min)?,
        refined_median,
        refined_mean: pred(rt.mean)?,
        accuracy: 100.0 - 100.0 * (refined_median - measured).abs() / measured,
        native_s: native.total,
        native_compute_s: native.compute,
        emulated_s: emulated.total,
        emulated_compute_s: emulated.compute,
        round_trip: rt,
    })
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
    fn round_trips_combine_min_of_mins_median_of_medians_mean_of_means() {
        let r = |min, median, mean| RoundTrip { min, median, mean };
        let c = RoundTrip::combine(&[r(1.0, 5.0, 6.0), r(2.0, 3.0, 4.0), r(0.5, 9.0, 11.0)]).expect("three");
        assert_eq!((c.min, c.median, c.mean), (0.5, 5.0, 7.0));
        let c = RoundTrip::combine(&[r(1.0, 2.0, 3.0), r(1.0, 4.0, 5.0)]).expect("two");
        assert_eq!(c.median, 3.0);
        assert!(RoundTrip::combine(&[]).is_none());
    }

    #[test]
    fn default_mix_only_uses_replayable_calls() {
        assert!(Mix::default_mix()
            .0
            .iter()
            .all(|(n, _)| REPLAYABLE.contains(&n.as_str())));
    }
}
