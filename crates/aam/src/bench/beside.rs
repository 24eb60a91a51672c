//! γ and the delegate's availability, measured apart from the run the model predicts: the compute
//! kernel runs on the compute core alone and then beside a thread spinning on the OS machine's
//! core (as the polling OS machine does), in alternating phases (ABBA), in chunks of the
//! workload's compute between two calls.
//!
//! - γ (a speed ratio while running): the kernel's rate beside over its rate alone, each counted
//!   over the time the compute thread ran (a chunk much longer than usual, over [`AWAY_NS`], was
//!   descheduled: its excess is time away). Below 1 when the busy sibling slows the compute core
//!   (SMT siblings, a shared power budget).
//! - the stall per call (the `wakeup` term's value for a polling delegate): after each chunk
//!   beside, the compute thread does what a call does first — it waits until the spinner shows it
//!   runs (its heartbeat moves). Most waits are a cache-line transfer, which f_c already holds;
//!   the mean wait less the median wait is the time a call waits, on average, because the
//!   delegate's CPU was running something else (another task, the host's work on that vCPU, an
//!   interrupt). Measured at the workload's own call spacing, it weighs a long absence (which
//!   stalls the caller until the delegate is back) and a short one (which a call meets only if it
//!   falls inside it) as the run meets them.
//! - the `share` term (a diagnostic here): P(the spinner's heartbeat moved during a chunk | the
//!   compute thread ran it) and the compute thread's running fractions beside, r_b, and alone,
//!   r_a, give u = 1 − r_b · P / r_a, the fraction of time a delegated run would stand still if
//!   every chunk without the delegate were lost whole. That holds for scheduler slices of ms
//!   (a loaded machine); on a quiet one the delegate's absences are µs long and u overstates the
//!   loss, which the stall measures instead.

use multios_host::{cpus::pin_current_thread, tsc, CpuSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A gap longer than this in a spinning thread's TSC reads is time it did not run.
pub const AWAY_NS: f64 = 5_000.0;

/// What the beside microbenchmark measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Beside {
    /// Phases of each kind (alone, beside).
    pub phases: usize,
    pub phase_ms: f64,
    /// Compute steps per second, alone and beside.
    pub rate_alone: f64,
    pub rate_beside: f64,
    /// rate_beside / rate_alone over running time.
    pub gamma: f64,
    /// The `share` term's u = 1 − r_b · P / r_a (see the module comment).
    pub share: f64,
    /// Waits for the spinner after each chunk beside, ns: mean and median; their difference is
    /// the stall per call (the `wakeup` term's value).
    pub wait_mean_ns: f64,
    pub wait_median_ns: f64,
    pub stall_ns: f64,
    /// Compute steps per chunk (the workload's steps between two calls).
    pub chunk_steps: u64,
    /// P(the spinner ran during a chunk | the compute thread ran it).
    pub co_run: f64,
    /// Fraction of the compute thread's time it was descheduled, alone and beside.
    pub compute_away_alone: f64,
    pub compute_away_beside: f64,
    /// Fraction of the spinner's time it was descheduled.
    pub spinner_away: f64,
}

/// One phase's counts.
#[derive(Default, Clone, Copy)]
struct Phase {
    steps: u64,
    secs: f64,
    away: f64,
    chunks: u64,
    co: u64,
    wait: f64,
}

impl Phase {
    fn add(self, o: Phase) -> Phase {
        Phase {
            steps: self.steps + o.steps,
            secs: self.secs + o.secs,
            away: self.away + o.away,
            chunks: self.chunks + o.chunks,
            co: self.co + o.co,
            wait: self.wait + o.wait,
        }
    }
    fn running_rate(self) -> f64 {
        let run = self.secs - self.away - self.wait;
        if run > 0.0 {
            self.steps as f64 / run
        } else {
            0.0
        }
    }
}

/// Longest wait for the spinner's heartbeat before the probe gives up on it (a spinner that died).
const WAIT_LIMIT_NS: f64 = 1e9;

/// Runs `kernel` in chunks until `phase` elapsed, looking at `heartbeat` after each chunk; with
/// `waits`, then waits until the heartbeat moves and records the wait (ticks).
fn compute_phase(
    kernel: fn(u64, u64) -> u64,
    chunk: u64,
    phase: Duration,
    heartbeat: &AtomicU64,
    mut waits: Option<&mut Vec<u64>>,
) -> Phase {
    let cal = tsc::calibration();
    let away_ticks = cal.ticks(AWAY_NS * 1e-9);
    let limit = cal.ticks(WAIT_LIMIT_NS * 1e-9);
    let start = Instant::now();
    let t0 = tsc::now();
    let (mut p, mut seed) = (Phase::default(), 1u64);
    let (mut away, mut waited) = (0u64, 0u64);
    let mut beat = heartbeat.load(Ordering::Relaxed);
    while start.elapsed() < phase {
        let a = tsc::now();
        seed = kernel(chunk, seed);
        let d = tsc::now().wrapping_sub(a);
        let now = heartbeat.load(Ordering::Relaxed);
        if d > away_ticks {
            away += d;
        } else {
            p.co += u64::from(now != beat);
            p.chunks += 1;
        }
        beat = now;
        p.steps += chunk;
        if let Some(w) = waits.as_deref_mut() {
            let w0 = tsc::now();
            let mut w1 = w0;
            while heartbeat.load(Ordering::Relaxed) == beat && w1.wrapping_sub(w0) < limit {
                std::hint::spin_loop();
                w1 = tsc::now();
            }
            w1 = tsc::now();
            beat = heartbeat.load(Ordering::Relaxed);
            w.push(w1.wrapping_sub(w0));
            waited += w1.wrapping_sub(w0);
        }
    }
    std::hint::black_box(seed);
    p.secs = cal.secs(tsc::now() - t0);
    p.away = cal.secs(away);
    p.wait = cal.secs(waited);
    p
}

/// A compute kernel for [`beside`]: `steps` rounds of xorshift, in registers only (AAM's
/// validation and `bench multiverse`'s γ use it).
pub fn xorshift(steps: u64, seed: u64) -> u64 {
    let mut x = seed | 1;
    for _ in 0..steps {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    std::hint::black_box(x)
}

/// Spins on the current CPU until `stop`, bumping `heartbeat`; returns (seconds, seconds away).
fn spin(stop: &AtomicBool, heartbeat: &AtomicU64) -> (f64, f64) {
    let cal = tsc::calibration();
    let away_ticks = cal.ticks(AWAY_NS * 1e-9);
    let t0 = tsc::now();
    let (mut last, mut away) = (t0, 0u64);
    while !stop.load(Ordering::Relaxed) {
        let now = tsc::now();
        let d = now.wrapping_sub(last);
        if d > away_ticks {
            away += d;
        }
        last = now;
        heartbeat.store(now, Ordering::Relaxed);
        std::hint::spin_loop();
    }
    (cal.secs(last - t0), cal.secs(away))
}

/// Alternates `phases` phases alone and `phases` beside the spinner, `phase` each, ABBA; `chunk`
/// is the workload's compute steps between two calls.
pub fn beside(
    compute_cpu: usize,
    delegate_cpu: usize,
    kernel: fn(u64, u64) -> u64,
    chunk: u64,
    phases: usize,
    phase: Duration,
) -> std::io::Result<Beside> {
    let runner = std::thread::Builder::new()
        .name("aam:beside".into())
        .spawn(move || {
            let _ = pin_current_thread(&CpuSet([compute_cpu].into()));
            let (mut alone, mut with) = (Phase::default(), Phase::default());
            let (mut spun, mut spun_away) = (0f64, 0f64);
            let still = AtomicU64::new(0);
            let mut waits = Vec::with_capacity(1 << 16);
            for i in 0..2 * phases {
                let is_beside = matches!(i % 4, 1 | 2);
                if !is_beside {
                    alone = alone.add(compute_phase(kernel, chunk, phase, &still, None));
                    continue;
                }
                let stop = Arc::new(AtomicBool::new(false));
                let beat = Arc::new(AtomicU64::new(0));
                let (st, bt) = (stop.clone(), beat.clone());
                let spinner = std::thread::Builder::new()
                    .name("aam:spinner".into())
                    .spawn(move || {
                        let _ = pin_current_thread(&CpuSet([delegate_cpu].into()));
                        spin(&st, &bt)
                    });
                // The phase starts once the spinner runs on its CPU (its start is no stall).
                let started = Instant::now();
                while beat.load(Ordering::Relaxed) == 0 && started.elapsed() < Duration::from_secs(1) {
                    std::hint::spin_loop();
                }
                with = with.add(compute_phase(kernel, chunk, phase, &beat, Some(&mut waits)));
                stop.store(true, Ordering::Relaxed);
                if let Ok(h) = spinner {
                    if let Ok((secs, away)) = h.join() {
                        spun += secs;
                        spun_away += away;
                    }
                }
            }
            (alone, with, spun, spun_away, waits)
        })?;
    let (alone, with, spun, spun_away, mut waits) = runner
        .join()
        .map_err(|_| std::io::Error::other("the beside benchmark's thread panicked"))?;
    let frac = |a: f64, t: f64| if t > 0.0 { a / t } else { 0.0 };
    let (rate_alone, rate_beside) = (alone.running_rate(), with.running_rate());
    let tpn = tsc::calibration().ticks_per_ns();
    waits.sort_unstable();
    let wait_median_ns = waits.get(waits.len() / 2).map_or(0.0, |&t| t as f64 / tpn);
    let wait_mean_ns = if waits.is_empty() {
        0.0
    } else {
        waits.iter().map(|&t| t as f64).sum::<f64>() / waits.len() as f64 / tpn
    };
    let co_run = if with.chunks > 0 {
        with.co as f64 / with.chunks as f64
    } else {
        1.0
    };
    let (away_a, away_b) = (frac(alone.away, alone.secs), frac(with.away, with.secs));
    let share = if away_a < 1.0 {
        (1.0 - (1.0 - away_b) * co_run / (1.0 - away_a)).max(0.0)
    } else {
        0.0
    };
    Ok(Beside {
        phases,
        phase_ms: phase.as_secs_f64() * 1e3,
        rate_alone,
        rate_beside,
        gamma: if rate_alone > 0.0 {
            rate_beside / rate_alone
        } else {
            1.0
        },
        share,
        wait_mean_ns,
        wait_median_ns,
        stall_ns: (wait_mean_ns - wait_median_ns).max(0.0),
        chunk_steps: chunk,
        co_run,
        compute_away_alone: away_a,
        compute_away_beside: away_b,
        spinner_away: frac(spun_away, spun),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe waits once per compute chunk beside the spinner, and the stall (mean less median
    /// wait) is a non-negative time; γ is a finite positive ratio.
    #[test]
    fn issue_11_beside_probes_the_spinner_after_every_chunk() -> std::io::Result<()> {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(
            cpus >= 2,
            "this test needs two CPUs (a compute core and the OS machine's), found {cpus}"
        );
        let b = beside(1, 0, xorshift, 2_000, 2, Duration::from_millis(5))?;
        assert_eq!(b.chunk_steps, 2_000);
        assert!(b.wait_median_ns > 0.0, "no wait recorded: {b:?}");
        assert!(b.stall_ns >= 0.0 && b.stall_ns <= b.wait_mean_ns, "{b:?}");
        assert!(b.gamma.is_finite() && b.gamma > 0.0, "{b:?}");
        assert!((0.0..=1.0).contains(&b.co_run), "{b:?}");
        Ok(())
    }
}
