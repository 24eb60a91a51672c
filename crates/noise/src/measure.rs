//! The three noise benchmarks, each run by one thread pinned to one CPU.
//!
//! - FWQ (fixed work quantum): the same amount of work repeated; the sample is its time (ns).
//! - FTQ (fixed time quantum): back-to-back fixed time slots; the sample is the work units done.
//! - Selfish detour: a tight loop of timestamp reads; a gap longer than `threshold ×` the shortest
//!   iteration is a detour (start, duration).

use crate::clock::Clock;
use crate::{cpus, sys, work};
use serde::Serialize;

/// Which benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Fwq,
    Ftq,
    Selfish,
}

/// An error while measuring.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error("--quantum {quantum_ns:.0} ns is below the timer resolution ({resolution_ns:.1} ns measured here): use a quantum of at least {min_ns:.0} ns")]
    BelowResolution {
        quantum_ns: f64,
        resolution_ns: f64,
        min_ns: f64,
    },
    #[error("--duration must be longer than --quantum ({quantum_ns:.0} ns)")]
    TooShort { quantum_ns: f64 },
    #[error("--duration / --quantum asks for {samples:.0} samples (at most {MAX_SAMPLES} are kept in memory): raise --quantum or shorten --duration")]
    TooMany { samples: f64 },
    #[error(
        "--threshold must be above 1 (a detour is a gap longer than threshold × the shortest iteration)"
    )]
    Threshold,
    #[error(transparent)]
    Cpu(#[from] cpus::CpuError),
    #[error("interrupted (Ctrl-C)")]
    Interrupted,
    #[error("the measuring thread for CPU {0} panicked")]
    Thread(usize),
}

/// The most samples one FWQ or FTQ run keeps (16 bytes each).
pub const MAX_SAMPLES: u64 = 20_000_000;

/// Settings shared by the three benchmarks.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Settings {
    pub kind: Kind,
    /// FWQ: target time of one work quantum on a quiet CPU; FTQ: slot length; selfish: unused.
    pub quantum_ns: f64,
    pub duration_ns: f64,
    /// Selfish detour: a gap above `threshold ×` the shortest iteration is a detour.
    pub threshold: f64,
    /// Work-chain iterations per TSC tick; `None` = calibrate at the start of each run. Set it
    /// (see [`calibrate_on`]) to give every configuration of a comparison the same work quantum.
    pub iters_per_tick: Option<f64>,
}

/// Calibrates the work chain on `cpu` (a pinned helper thread): iterations per tick.
pub fn calibrate_on(cpu: usize) -> Result<f64, MeasureError> {
    let h = std::thread::spawn(move || -> Result<f64, MeasureError> {
        sys::set_affinity(0, &[cpu]).map_err(|source| cpus::CpuError::Pin { cpu, source })?;
        Ok(work::iters_per_tick())
    });
    h.join().unwrap_or(Err(MeasureError::Thread(cpu)))
}

/// The raw result of one benchmark on one CPU.
#[derive(Debug, Clone, Serialize)]
pub struct Series {
    pub kind: Kind,
    pub cpu: usize,
    pub quantum_ns: f64,
    /// FTQ: ns of work per unit counted.
    pub unit_ns: f64,
    /// Selfish: the shortest loop iteration (ns).
    pub min_iteration_ns: f64,
    pub elapsed_ns: f64,
    /// (start ns since the beginning, value): FWQ ns per quantum, FTQ units per slot, selfish gap ns.
    pub samples: Vec<(f64, f64)>,
    /// Detours (start ns, duration ns) derived from the samples (see docs/NOISE.md).
    pub detours: Vec<(f64, f64)>,
    /// The CPU the thread was on at the end (to confirm the pinning).
    pub ran_on: Option<usize>,
    /// What else used the measured CPU meanwhile (from /proc/stat), when known.
    pub usage: Option<crate::cpustat::Usage>,
}

impl Settings {
    /// Checks the settings against the clock.
    pub fn validate(&self, clock: &Clock) -> Result<(), MeasureError> {
        if self.kind != Kind::Selfish && self.quantum_ns < clock.resolution_ns {
            return Err(MeasureError::BelowResolution {
                quantum_ns: self.quantum_ns,
                resolution_ns: clock.resolution_ns,
                min_ns: clock.resolution_ns.ceil(),
            });
        }
        if self.kind != Kind::Selfish && self.duration_ns <= self.quantum_ns {
            return Err(MeasureError::TooShort {
                quantum_ns: self.quantum_ns,
            });
        }
        let samples = self.duration_ns / self.quantum_ns;
        if self.kind != Kind::Selfish && samples > MAX_SAMPLES as f64 {
            return Err(MeasureError::TooMany { samples });
        }
        if self.kind == Kind::Selfish && self.threshold <= 1.0 {
            return Err(MeasureError::Threshold);
        }
        Ok(())
    }
}

/// Runs the benchmark on every CPU of `cpus` at the same time (one pinned thread each).
pub fn run_on(cpus: &[usize], s: &Settings, clock: &Clock) -> Result<Vec<Series>, MeasureError> {
    s.validate(clock)?;
    let online = cpus::online()?;
    cpus::check_online(cpus, &online)?;
    let results: Vec<Result<Series, MeasureError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = cpus
            .iter()
            .map(|&cpu| (cpu, scope.spawn(move || run_one(cpu, s, clock))))
            .collect();
        handles
            .into_iter()
            .map(|(cpu, h)| h.join().unwrap_or(Err(MeasureError::Thread(cpu))))
            .collect()
    });
    results.into_iter().collect()
}

/// Runs the benchmark on the calling thread after pinning it to `cpu`.
pub fn run_one(cpu: usize, s: &Settings, clock: &Clock) -> Result<Series, MeasureError> {
    sys::set_affinity(0, &[cpu]).map_err(|source| cpus::CpuError::Pin { cpu, source })?;
    let before = crate::cpustat::snapshot(cpu);
    let mut out = match s.kind {
        Kind::Fwq => fwq(s, clock),
        Kind::Ftq => ftq(s, clock),
        Kind::Selfish => selfish(s, clock),
    }?;
    out.cpu = cpu;
    out.ran_on = sys::current_cpu();
    let after = crate::cpustat::snapshot(cpu);
    out.usage = before.zip(after).and_then(|(b, a)| crate::cpustat::usage(&b, &a));
    Ok(out)
}

fn empty(kind: Kind, quantum_ns: f64) -> Series {
    Series {
        kind,
        cpu: 0,
        quantum_ns,
        unit_ns: 0.0,
        min_iteration_ns: 0.0,
        elapsed_ns: 0.0,
        samples: Vec::new(),
        detours: Vec::new(),
        ran_on: None,
        usage: None,
    }
}

/// An excess over the minimum counts as a detour above this (see docs/NOISE.md).
fn detour_floor(min_ns: f64, clock: &Clock) -> f64 {
    (0.01 * min_ns).max(10.0 * clock.resolution_ns)
}

fn fwq(s: &Settings, clock: &Clock) -> Result<Series, MeasureError> {
    let ipt = s.iters_per_tick.unwrap_or_else(work::iters_per_tick);
    let iters = ((s.quantum_ns * clock.ticks_per_ns * ipt).round() as u64).max(1);
    let end_ticks = clock.to_ticks(s.duration_ns);
    let mut raw: Vec<(u64, u64)> =
        Vec::with_capacity((s.duration_ns / s.quantum_ns).min(MAX_SAMPLES as f64) as usize + 16);
    let begin = sys::ticks();
    loop {
        let t0 = sys::ticks();
        work::spin(iters);
        let t1 = sys::ticks();
        raw.push((t0.wrapping_sub(begin), t1.wrapping_sub(t0)));
        if t1.wrapping_sub(begin) >= end_ticks {
            break;
        }
        if sys::interrupted() {
            return Err(MeasureError::Interrupted);
        }
    }
    let mut out = empty(Kind::Fwq, s.quantum_ns);
    out.elapsed_ns = clock.to_ns(sys::ticks().wrapping_sub(begin));
    out.samples = raw
        .iter()
        .map(|&(t, d)| (clock.to_ns(t), clock.to_ns(d)))
        .collect();
    let min = out.samples.iter().map(|x| x.1).fold(f64::INFINITY, f64::min);
    let floor = detour_floor(min, clock);
    out.detours = out
        .samples
        .iter()
        .filter(|x| x.1 - min > floor)
        .map(|&(t, d)| (t + min, d - min))
        .collect();
    Ok(out)
}

fn ftq(s: &Settings, clock: &Clock) -> Result<Series, MeasureError> {
    let ipt = s.iters_per_tick.unwrap_or_else(work::iters_per_tick);
    // about 500 units per slot, at least 32 iterations each
    let unit_iters = ((s.quantum_ns * clock.ticks_per_ns * ipt / 500.0).round() as u64).max(32);
    let unit_ns = unit_iters as f64 / ipt / clock.ticks_per_ns;
    let slot = clock.to_ticks(s.quantum_ns).max(1);
    let slots = (s.duration_ns / s.quantum_ns).floor().max(1.0) as u64;
    let mut counts: Vec<u32> = Vec::with_capacity(slots.min(MAX_SAMPLES) as usize);
    let begin = sys::ticks();
    let mut slot_end = begin;
    for _ in 0..slots {
        slot_end = slot_end.wrapping_add(slot);
        let mut c = 0u32;
        while sys::ticks() < slot_end {
            work::spin(unit_iters);
            c += 1;
        }
        counts.push(c);
        if sys::interrupted() {
            return Err(MeasureError::Interrupted);
        }
    }
    let mut out = empty(Kind::Ftq, s.quantum_ns);
    out.unit_ns = unit_ns;
    out.elapsed_ns = clock.to_ns(sys::ticks().wrapping_sub(begin));
    out.samples = counts
        .iter()
        .enumerate()
        .map(|(i, &c)| (i as f64 * s.quantum_ns, c as f64))
        .collect();
    let max = counts.iter().copied().max().unwrap_or(0) as f64;
    let floor = detour_floor(s.quantum_ns, clock);
    if max > 0.0 {
        out.detours = out
            .samples
            .iter()
            .map(|&(t, c)| (t, (max - c) / max * s.quantum_ns))
            .filter(|d| d.1 > floor)
            .collect();
    }
    Ok(out)
}

fn selfish(s: &Settings, clock: &Clock) -> Result<Series, MeasureError> {
    // the shortest iteration of the loop, from a warm-up of the same loop
    let mut min_step = u64::MAX;
    let mut prev = sys::ticks();
    for _ in 0..200_000 {
        let now = sys::ticks();
        min_step = min_step.min(now.wrapping_sub(prev).max(1));
        prev = now;
    }
    let thr = (min_step as f64 * s.threshold).ceil() as u64;
    let end_ticks = clock.to_ticks(s.duration_ns);
    let mut raw: Vec<(u64, u64)> = Vec::with_capacity(1 << 16);
    let begin = sys::ticks();
    let mut prev = begin;
    let mut i = 0u32;
    loop {
        let now = sys::ticks();
        let gap = now.wrapping_sub(prev);
        if gap > thr && raw.len() < 10_000_000 {
            raw.push((prev.wrapping_sub(begin), gap));
        }
        prev = now;
        i = i.wrapping_add(1);
        if i & 0xfff == 0 {
            if now.wrapping_sub(begin) >= end_ticks {
                break;
            }
            if sys::interrupted() {
                return Err(MeasureError::Interrupted);
            }
        }
    }
    let mut out = empty(Kind::Selfish, 0.0);
    out.min_iteration_ns = clock.to_ns(min_step);
    out.elapsed_ns = clock.to_ns(prev.wrapping_sub(begin));
    out.samples = raw
        .iter()
        .map(|&(t, g)| (clock.to_ns(t), clock.to_ns(g)))
        .collect();
    out.detours = out
        .samples
        .iter()
        .map(|&(t, g)| (t, g - out.min_iteration_ns))
        .collect();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked_against_the_clock() {
        let clock = Clock {
            ticks_per_ns: 2.0,
            resolution_ns: 10.0,
        };
        let s = |kind, quantum_ns, duration_ns, threshold| Settings {
            kind,
            quantum_ns,
            duration_ns,
            threshold,
            iters_per_tick: None,
        };
        assert!(s(Kind::Fwq, 1e6, 2e9, 10.0).validate(&clock).is_ok());
        let e = s(Kind::Fwq, 5.0, 2e9, 10.0)
            .validate(&clock)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("below the timer resolution (10.0 ns"), "{e}");
        assert!(matches!(
            s(Kind::Ftq, 20.0, 2e9, 10.0).validate(&clock),
            Err(MeasureError::TooMany { .. })
        ));
        assert!(matches!(
            s(Kind::Fwq, 1e6, 1e6, 10.0).validate(&clock),
            Err(MeasureError::TooShort { .. })
        ));
        assert!(matches!(
            s(Kind::Selfish, 0.0, 1e9, 1.0).validate(&clock),
            Err(MeasureError::Threshold)
        ));
        assert!(s(Kind::Selfish, 0.0, 1e9, 4.0).validate(&clock).is_ok());
    }
}
