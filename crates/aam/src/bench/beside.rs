//! γ and the delegate's share, measured apart from the run the model predicts: the compute kernel
//! runs on the compute core alone and then beside a thread spinning on the OS machine's core (as
//! the polling OS machine does), in alternating phases (ABBA), in chunks of ≈ 1 µs.
//!
//! - γ (a speed ratio while running): the kernel's rate beside over its rate alone, each counted
//!   over the time the compute thread ran (a chunk much longer than usual, over [`AWAY_NS`], was
//!   descheduled: its excess is time away). Below 1 when the busy sibling slows the compute core
//!   (SMT siblings, a shared power budget).
//! - the `share` term: a delegated run progresses only while the compute thread *and* the OS
//!   machine run at once (calls come every few µs, a scheduler slice lasts ms). The spinner
//!   bumps a heartbeat; after each chunk the compute thread looks whether it moved, which gives
//!   P(delegate runs | compute runs) without comparing the two vCPUs' clocks. With the compute
//!   thread's running fraction beside, r_b, and alone, r_a (the direct run ran that much), the
//!   delegated run is stretched by r_a / (r_b · P): u = 1 − r_b · P / r_a. On a quiet machine
//!   r_a = r_b = P = 1 and u = 0.

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
}

impl Phase {
    fn add(self, o: Phase) -> Phase {
        Phase {
            steps: self.steps + o.steps,
            secs: self.secs + o.secs,
            away: self.away + o.away,
            chunks: self.chunks + o.chunks,
            co: self.co + o.co,
        }
    }
    fn running_rate(self) -> f64 {
        let run = self.secs - self.away;
        if run > 0.0 {
            self.steps as f64 / run
        } else {
            0.0
        }
    }
}

/// Runs `kernel` in chunks until `phase` elapsed, looking at `heartbeat` after each chunk.
fn compute_phase(kernel: fn(u64, u64) -> u64, chunk: u64, phase: Duration, heartbeat: &AtomicU64) -> Phase {
    let cal = tsc::calibration();
    let away_ticks = cal.ticks(AWAY_NS * 1e-9);
    let start = Instant::now();
    let t0 = tsc::now();
    let (mut p, mut seed) = (Phase::default(), 1u64);
    let mut away = 0u64;
    let mut beat = heartbeat.load(Ordering::Relaxed);
    while start.elapsed() < phase {
        let a = tsc::now();
        seed = kernel(chunk, seed);
        let d = tsc::now().wrapping_sub(a);
        if d > away_ticks {
            away += d;
        } else {
            let now = heartbeat.load(Ordering::Relaxed);
            p.co += u64::from(now != beat);
            p.chunks += 1;
            beat = now;
        }
        p.steps += chunk;
    }
    std::hint::black_box(seed);
    p.secs = cal.secs(tsc::now() - t0);
    p.away = cal.secs(away);
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

/// Alternates `phases` phases alone and `phases` beside the spinner, `phase` each, ABBA.
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
            for i in 0..2 * phases {
                let is_beside = matches!(i % 4, 1 | 2);
                if !is_beside {
                    alone = alone.add(compute_phase(kernel, chunk, phase, &still));
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
                with = with.add(compute_phase(kernel, chunk, phase, &beat));
                stop.store(true, Ordering::Relaxed);
                if let Ok(h) = spinner {
                    if let Ok((secs, away)) = h.join() {
                        spun += secs;
                        spun_away += away;
                    }
                }
            }
            (alone, with, spun, spun_away)
        })?;
    let (alone, with, spun, spun_away) = runner
        .join()
        .map_err(|_| std::io::Error::other("the beside benchmark's thread panicked"))?;
    let frac = |a: f64, t: f64| if t > 0.0 { a / t } else { 0.0 };
    let (rate_alone, rate_beside) = (alone.running_rate(), with.running_rate());
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
        co_run,
        compute_away_alone: away_a,
        compute_away_beside: away_b,
        spinner_away: frac(spun_away, spun),
    })
}
