//! Bulk-synchronous scale simulation: every rank replays one noise trace from its own random phase,
//! computes `work` per step, and the step ends when the slowest rank is done (a barrier), or when an
//! allreduce over a binomial tree has gone up and down (`Collective::Allreduce`). Co-scheduled noise
//! is the same trace with one phase shared by all ranks.
//!
//! Barrier mode is exact and fast for any rank count: inside a gap between detours the delay of a
//! rank does not decrease with its phase, and inside a detour it does not increase, so the slowest
//! rank of a step is, for some detour, either the last rank in the gap before it or the first rank
//! inside it. With the phases sorted once, a step costs at most 2 binary searches per detour, visited
//! by decreasing bound with an early exit, instead of a pass over all ranks (`Engine::Direct`
//! forces the plain pass).

use crate::replay::Replay;
use crate::trace::NoiseTrace;
use serde::Serialize;

/// An error in the scale options.
#[derive(Debug, thiserror::Error)]
pub enum ScaleError {
    #[error("--ranks '{0}': expected N, A..B (log-spaced 1-2-5 series) or a comma list, with counts ≥ 1")]
    Ranks(String),
    #[error(
        "--ranks '{0}': at most {MAX_RANKS} ranks (the simulation keeps a phase per rank, 8 bytes each)"
    )]
    TooManyRanks(String),
    #[error("--work must be positive")]
    Work,
    #[error("--steps must be at least 1")]
    Steps,
    #[error(transparent)]
    Trace(#[from] crate::trace::TraceError),
}

/// What ends a step.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Collective {
    /// A barrier of fixed cost: all ranks start the next step together.
    Barrier { cost_ns: f64 },
    /// A binomial-tree reduce then broadcast; each message takes `latency_ns` on the wire and
    /// `overhead_ns` of CPU time at the receiver, which the receiver's noise can delay.
    Allreduce { latency_ns: f64, overhead_ns: f64 },
}

/// How the barrier mode finds the slowest rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Engine {
    /// Candidates per detour when cheaper than a pass over all ranks.
    Auto,
    /// A pass over all ranks every step.
    Direct,
}

/// One simulation's settings.
#[derive(Debug, Clone, Serialize)]
pub struct Config {
    pub work_ns: f64,
    pub steps: u64,
    pub seed: u64,
    pub collective: Collective,
    pub engine: Engine,
}

/// Mean step slowdowns at one rank count.
#[derive(Debug, Clone, Serialize)]
pub struct Point {
    pub ranks: u64,
    /// Mean step time / noiseless step time, each rank from its own random phase.
    pub uncoordinated: Option<f64>,
    /// The same with one phase shared by all ranks (co-scheduled noise).
    pub cosched: Option<f64>,
}

/// Parses "1..1000000" (1-2-5 series), "1,10,100" or "1000".
/// The most ranks one simulated point may have (its phases take 8 bytes each: 800 MB). A larger
/// count panicked (capacity overflow) or aborted allocating.
pub const MAX_RANKS: u64 = 100_000_000;

pub fn parse_ranks(s: &str) -> Result<Vec<u64>, ScaleError> {
    let bad = || ScaleError::Ranks(s.to_string());
    let num = |x: &str| {
        let n = x
            .trim()
            .replace('_', "")
            .parse::<u64>()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(bad)?;
        if n > MAX_RANKS {
            return Err(ScaleError::TooManyRanks(s.to_string()));
        }
        Ok(n)
    };
    let mut v = if let Some((a, b)) = s.split_once("..") {
        let (a, b) = (num(a)?, num(b)?);
        if a > b {
            return Err(bad());
        }
        let mut v = Vec::new();
        let mut decade = 1u64;
        'outer: loop {
            for m in [1u64, 2, 5] {
                let n = decade.saturating_mul(m);
                if n > b {
                    break 'outer;
                }
                if n >= a {
                    v.push(n);
                }
            }
            decade = decade.saturating_mul(10);
        }
        v.insert(0, a);
        v.push(b);
        v
    } else {
        s.split(',').map(num).collect::<Result<Vec<_>, _>>()?
    };
    v.sort_unstable();
    v.dedup();
    Ok(v)
}

/// A small seeded generator (SplitMix64): reproducible phases without a dependency.
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    pub fn new(seed: u64) -> Self {
        SplitMix(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// `n` random phases in [0, length), sorted.
pub fn phases(n: u64, length: f64, seed: u64) -> Vec<f64> {
    let mut rng = SplitMix::new(seed);
    let mut v: Vec<f64> = (0..n).map(|_| rng.next_f64() * length).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// Runs the simulation at every rank count; `uncoord`/`cosched` select the variants.
pub fn run(
    trace: &NoiseTrace,
    ranks: &[u64],
    cfg: &Config,
    uncoord: bool,
    cosched: bool,
) -> Result<Vec<Point>, ScaleError> {
    if cfg.work_ns <= 0.0 || !cfg.work_ns.is_finite() {
        return Err(ScaleError::Work);
    }
    if cfg.steps == 0 {
        return Err(ScaleError::Steps);
    }
    trace.check()?;
    let replay = Replay::new(trace);
    let shared = phases(1, trace.length_ns, cfg.seed)[0];
    let mut out = Vec::with_capacity(ranks.len());
    for &n in ranks {
        let u = uncoord.then(|| simulate(&replay, &phases(n, trace.length_ns, cfg.seed), cfg));
        let c = cosched.then(|| simulate(&replay, &vec![shared; n as usize], cfg));
        out.push(Point {
            ranks: n,
            uncoordinated: u,
            cosched: c,
        });
    }
    Ok(out)
}

/// Mean step slowdown of ranks with these (sorted) phases.
pub fn simulate(replay: &Replay, phases: &[f64], cfg: &Config) -> f64 {
    match cfg.collective {
        Collective::Barrier { cost_ns } => barrier(replay, phases, cfg, cost_ns),
        Collective::Allreduce {
            latency_ns,
            overhead_ns,
        } => allreduce(replay, phases, cfg, latency_ns, overhead_ns),
    }
}

fn barrier(replay: &Replay, phases: &[f64], cfg: &Config, cost: f64) -> f64 {
    let w = cfg.work_ns;
    let n = phases.len();
    let d = replay.detours();
    // candidates visit few detours (largest bound first, early exit); a pass is only cheaper for
    // a handful of ranks, or when the trace has far more detours than there are ranks
    let use_candidates = cfg.engine == Engine::Auto && n >= 64 && d < 16 * n;
    let order = if use_candidates {
        by_bound(replay, w)
    } else {
        Vec::new()
    };
    let mut t = 0.0f64;
    for _ in 0..cfg.steps {
        let tau = replay.wrap(t);
        let worst = if use_candidates {
            worst_by_candidates(replay, &order, phases, tau, w)
        } else {
            let mut m = 0.0f64;
            for &o in phases {
                let mut p = o + tau;
                if p >= replay.length {
                    p -= replay.length;
                }
                m = m.max(replay.delay(p, w));
            }
            m
        };
        t += w + worst + cost;
    }
    t / (cfg.steps as f64 * (w + cost))
}

/// The detours with an upper bound of the delay any rank near them can get, largest first: the
/// delay is largest at the detour's start (a rank there waits for all of it and then works).
fn by_bound(replay: &Replay, w: f64) -> Vec<(f64, usize)> {
    let mut v: Vec<(f64, usize)> = (0..replay.detours())
        .map(|j| (replay.delay(replay.detour(j).0, w), j))
        .collect();
    v.sort_by(|a, b| b.0.total_cmp(&a.0));
    v
}

/// The largest delay over all ranks, from the two candidate ranks of each detour, visiting the
/// detours by decreasing bound and stopping when no remaining one can beat the worst found.
fn worst_by_candidates(replay: &Replay, order: &[(f64, usize)], sorted: &[f64], tau: f64, w: f64) -> f64 {
    let len = replay.length;
    let d = replay.detours();
    let mut worst = 0.0f64;
    let eval = |o: f64| {
        let mut p = o + tau;
        if p >= len {
            p -= len;
        }
        replay.delay(p, w)
    };
    for &(bound, j) in order {
        if bound <= worst {
            break;
        }
        let (s, e) = replay.detour(j);
        let prev_end = if j == 0 {
            replay.detour(d - 1).1 - len
        } else {
            replay.detour(j - 1).1
        };
        // the gap [prev_end, s): its last rank in cyclic order
        if s > prev_end {
            if let Some((_, last)) = first_last(sorted, prev_end - tau, s - prev_end, len) {
                worst = worst.max(eval(last));
            }
        }
        // the detour [s, e): its first rank
        if let Some((first, _)) = first_last(sorted, s - tau, e - s, len) {
            worst = worst.max(eval(first));
        }
    }
    worst
}

/// The first and last phases, in cyclic order, inside [a, a+span) modulo `len`.
fn first_last(sorted: &[f64], a: f64, span: f64, len: f64) -> Option<(f64, f64)> {
    let lo = a.rem_euclid(len);
    let hi = lo + span;
    let i0 = sorted.partition_point(|&x| x < lo);
    if hi <= len {
        let i1 = sorted.partition_point(|&x| x < hi);
        return (i1 > i0).then(|| (sorted[i0], sorted[i1 - 1]));
    }
    let i2 = sorted.partition_point(|&x| x < hi - len);
    let first = if i0 < sorted.len() {
        Some(sorted[i0])
    } else {
        (i2 > 0).then(|| sorted[0])
    };
    let last = if i2 > 0 {
        Some(sorted[i2 - 1])
    } else {
        (i0 < sorted.len()).then(|| sorted[sorted.len() - 1])
    };
    first.zip(last)
}

fn allreduce(replay: &Replay, phases: &[f64], cfg: &Config, lat: f64, ovh: f64) -> f64 {
    let quiet = Replay::new(&NoiseTrace::new(replay.length, Vec::new()));
    let noiseless = allreduce_end(&quiet, phases, cfg, lat, ovh);
    allreduce_end(replay, phases, cfg, lat, ovh) / noiseless
}

/// The time at which the last rank finishes `cfg.steps` steps of work + allreduce.
fn allreduce_end(replay: &Replay, phases: &[f64], cfg: &Config, lat: f64, ovh: f64) -> f64 {
    let n = phases.len();
    let w = cfg.work_ns;
    let mut t = vec![0.0f64; n];
    let at = |i: usize, time: f64, work: f64| time + work + replay.delay(replay.wrap(time + phases[i]), work);
    let levels = (usize::BITS - (n.max(1) - 1).leading_zeros()) as usize;
    for _ in 0..cfg.steps {
        for (i, ti) in t.iter_mut().enumerate() {
            *ti = at(i, *ti, w);
        }
        for l in 0..levels {
            let stride = 1usize << l;
            let mut j = 0;
            while j + stride < n {
                let i = j + stride;
                let start = t[j].max(t[i] + lat);
                t[j] = at(j, start, ovh);
                j += 2 * stride;
            }
        }
        for l in (0..levels).rev() {
            let stride = 1usize << l;
            let mut j = 0;
            while j + stride < n {
                let i = j + stride;
                let start = t[i].max(t[j] + lat);
                t[i] = at(i, start, ovh);
                j += 2 * stride;
            }
        }
    }
    t.iter().copied().fold(0.0f64, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(steps: u64, engine: Engine) -> Config {
        Config {
            work_ns: 100_000.0,
            steps,
            seed: 7,
            collective: Collective::Barrier { cost_ns: 0.0 },
            engine,
        }
    }

    #[test]
    fn rank_lists() {
        assert_eq!(
            parse_ranks("1..1000").ok(),
            Some(vec![1, 2, 5, 10, 20, 50, 100, 200, 500, 1000])
        );
        assert_eq!(parse_ranks("3..30").ok(), Some(vec![3, 5, 10, 20, 30]));
        assert_eq!(parse_ranks("10,1").ok(), Some(vec![1, 10]));
        assert_eq!(parse_ranks("1_000").ok(), Some(vec![1000]));
        for bad in ["0", "5..2", "x", "1..", ""] {
            assert!(parse_ranks(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn candidates_agree_with_a_pass_over_all_ranks() {
        let traces = [
            NoiseTrace::signature("10Hz:2.5ms").expect("valid"),
            NoiseTrace::signature("1kHz:25us,100Hz:1ms").expect("valid"),
            NoiseTrace::new(
                1e6,
                vec![
                    (0.0, 50_000.0),
                    (120_000.0, 10.0),
                    (130_000.0, 90_000.0),
                    (900_000.0, 100_000.0),
                ],
            ),
        ];
        for tr in &traces {
            let r = Replay::new(tr);
            for n in [1u64, 3, 50, 2000] {
                let ph = phases(n, tr.length_ns, n);
                for work in [100_000.0, 7_000.0] {
                    let mut c = cfg(200, Engine::Direct);
                    c.work_ns = work;
                    let direct = barrier(&r, &ph, &c, 0.0);
                    let mut t = 0.0;
                    for _ in 0..50 {
                        let tau = r.wrap(t);
                        let a = worst_by_candidates(&r, &by_bound(&r, work), &ph, tau, work);
                        let b = ph
                            .iter()
                            .map(|o| r.delay(r.wrap(o + tau), work))
                            .fold(0.0, f64::max);
                        assert!((a - b).abs() < 1e-6, "n={n} tau={tau}: {a} vs {b}");
                        t += 12_345.678 + a;
                    }
                    assert!(direct >= 1.0);
                    let auto = barrier(
                        &r,
                        &ph,
                        &Config {
                            engine: Engine::Auto,
                            ..c.clone()
                        },
                        0.0,
                    );
                    assert!(
                        (auto - direct).abs() <= 1e-9 * direct,
                        "n={n} work={work}: {auto} vs {direct}"
                    );
                }
            }
        }
    }

    #[test]
    fn issue_6_ferreira_shape() {
        // 2.5 % net noise as 10 Hz × 2.5 ms, 100 µs of work per step
        let tr = NoiseTrace::signature("10Hz:2.5ms").expect("valid");
        let pts = run(
            &tr,
            &[1, 10, 100, 1000, 10_000],
            &cfg(1000, Engine::Auto),
            true,
            true,
        )
        .expect("runs");
        let u: Vec<f64> = pts.iter().map(|p| p.uncoordinated.unwrap_or(f64::NAN)).collect();
        let c: Vec<f64> = pts.iter().map(|p| p.cosched.unwrap_or(f64::NAN)).collect();
        assert!(u[0] < 1.1, "one rank: {u:?}");
        assert!(u[4] > 15.0 && u[4] < 30.0, "order of 20× at 10⁴ ranks: {u:?}");
        for w in u.windows(2) {
            assert!(w[1] >= w[0] * 0.98, "non-decreasing in ranks: {u:?}");
        }
        for x in &c {
            assert_eq!(*x, c[0], "co-scheduled independent of rank count: {c:?}");
        }
        assert!(c[0] < 1.1, "{c:?}");
    }

    #[test]
    fn allreduce_runs_and_noiseless_is_one() {
        let quiet = NoiseTrace::new(1e6, vec![]);
        let c = Config {
            work_ns: 1000.0,
            steps: 10,
            seed: 1,
            collective: Collective::Allreduce {
                latency_ns: 100.0,
                overhead_ns: 10.0,
            },
            engine: Engine::Auto,
        };
        let pts = run(&quiet, &[1, 7, 64], &c, true, true).expect("runs");
        for p in pts {
            assert!((p.uncoordinated.unwrap_or(0.0) - 1.0).abs() < 1e-9, "{p:?}");
        }
        let tr = NoiseTrace::signature("10Hz:2.5ms").expect("valid");
        let pts = run(
            &tr,
            &[1, 1000],
            &Config {
                work_ns: 100_000.0,
                steps: 200,
                ..c
            },
            true,
            false,
        )
        .expect("runs");
        assert!(pts[1].uncoordinated > pts[0].uncoordinated, "{pts:?}");
    }

    #[test]
    fn property_cosched_flat_and_uncoordinated_non_decreasing() {
        for sig in ["10Hz:2.5ms", "100Hz:250us", "1kHz:25us", "10Hz:2.5ms,1kHz:10us"] {
            let tr = NoiseTrace::signature(sig).expect("valid");
            for (work, seed) in [(100_000.0, 1), (1_000_000.0, 2), (30_000.0, 3)] {
                let c = Config {
                    work_ns: work,
                    seed,
                    ..cfg(1000, Engine::Auto)
                };
                let pts = run(&tr, &[1, 10, 100, 1000, 4000], &c, true, true).expect("runs");
                let co: Vec<f64> = pts.iter().filter_map(|p| p.cosched).collect();
                assert!(
                    co.iter().all(|x| *x == co[0]),
                    "{sig} {work}: co-scheduled {co:?}"
                );
                let un: Vec<f64> = pts.iter().filter_map(|p| p.uncoordinated).collect();
                assert_eq!(un[0], co[0], "{sig}: one rank is one rank");
                for w in un.windows(2) {
                    assert!(w[1] >= w[0] * 0.97, "{sig} {work}: uncoordinated {un:?}");
                }
            }
        }
    }
}
