//! The calibration by cross-CPU level (issue #12).
//!
//! The round trip between this VM's two vCPUs sits at one of a few levels (≈ 60, ≈ 140, ≈ 540–740
//! ns; `crosslink`) for seconds at a time, and a calibration round (≈ 75 runs) is long enough to
//! span levels. Every calibration run is probed before and after ([`calibrate::round`]); here
//! - the levels seen are found from the probes ([`levels`]),
//! - the calibration is fitted per level ([`per_level`]): the runs that use both CPUs at that
//!   level, the one-CPU runs at every level (the level cannot move them: no crossing, no
//!   co-running sibling), and for a two-CPU measurement never run at that level, its runs at
//!   every level (listed in `pooled`);
//! - or as a line in the round trip ([`at_round_trip`]): each two-CPU measurement as a + b·round
//!   trip over its steady runs, evaluated at the round trip a row saw;
//! - the calibration's two halves are compared within one level ([`halves`]), to see whether the
//!   level explains their difference.

use super::calibrate::{self, Arrangement, Calibration, Round, Run};
use crate::crosslink::SAME_LEVEL_RATIO;
use serde::Serialize;

/// A probe more than this many times the next lower one starts a new level. Inside a level a
/// probe's median repeats within ±15 % and the sorted probes lie close together; the levels are
/// ≥ 1.5× apart.
pub const LEVEL_GAP: f64 = 1.3;

fn median(v: &[f64]) -> f64 {
    multios_stats::median(v).unwrap_or(f64::NAN)
}

/// The levels in `ns` (finite, positive probes): the median of each group of sorted probes with
/// no gap above [`LEVEL_GAP`] inside, ascending.
pub fn levels(ns: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = ns.iter().copied().filter(|x| x.is_finite() && *x > 0.0).collect();
    v.sort_by(f64::total_cmp);
    let mut out = Vec::new();
    let mut start = 0;
    for k in 1..=v.len() {
        if k == v.len() || v[k] > LEVEL_GAP * v[k - 1] {
            out.push(median(&v[start..k]));
            start = k;
        }
    }
    out
}

/// The index of the level nearest `ns` (by ratio), None without levels or a probe.
pub fn nearest(levels: &[f64], ns: f64) -> Option<usize> {
    if !(ns.is_finite() && ns > 0.0) {
        return None;
    }
    levels
        .iter()
        .enumerate()
        .min_by(|a, b| (a.1 / ns).ln().abs().total_cmp(&(b.1 / ns).ln().abs()))
        .map(|(k, _)| k)
}

/// The calibration fitted at one level.
#[derive(Debug, Clone, Serialize)]
pub struct LevelFit {
    /// The level, ns (median of its probes).
    pub level_ns: f64,
    /// Steady two-CPU runs at this level.
    pub runs: usize,
    /// Two-CPU measurements (arrangement, size) with no run at this level, taken from every level.
    pub pooled: Vec<(Arrangement, usize)>,
    pub calibration: Calibration,
}

/// Every (arrangement, size) the calibration runs.
fn measurements() -> impl Iterator<Item = (Arrangement, usize)> {
    Arrangement::ALL
        .into_iter()
        .flat_map(|a| a.sizes().iter().map(move |&s| (a, s)))
}

/// The runs of `rounds`, flattened.
fn all(rounds: &[Round]) -> impl Iterator<Item = &Run> {
    rounds.iter().flatten()
}

/// Which arrangements a per-level fit takes at the level alone: [`Arrangement::uses_both_cpus`]
/// or [`Arrangement::crosses`].
pub type ByLevel = fn(Arrangement) -> bool;

/// The calibration at level `k` of `levels`: the arrangements `by_level` accepts from their runs
/// at that level, the others from every run.
pub fn fit_at(
    rounds: &[Round],
    levels: &[f64],
    k: usize,
    per_run: u64,
    cpus: usize,
    by_level: ByLevel,
) -> LevelFit {
    let at_k = |r: &Run| r.steady_level().and_then(|ns| nearest(levels, ns)) == Some(k);
    let mut runs: Round = all(rounds)
        .filter(|r| !by_level(r.arrangement) || at_k(r))
        .copied()
        .collect();
    let two_cpu = runs.iter().filter(|r| by_level(r.arrangement)).count();
    let mut pooled = Vec::new();
    for (a, s) in measurements().filter(|(a, _)| by_level(*a)) {
        if !runs.iter().any(|r| r.arrangement == a && r.size == s) {
            pooled.push((a, s));
            runs.extend(all(rounds).filter(|r| r.arrangement == a && r.size == s));
        }
    }
    LevelFit {
        level_ns: levels.get(k).copied().unwrap_or(f64::NAN),
        runs: two_cpu,
        pooled,
        calibration: calibrate::fit(&[runs], per_run, cpus),
    }
}

/// The calibration at each of `levels`.
pub fn per_level(
    rounds: &[Round],
    levels: &[f64],
    per_run: u64,
    cpus: usize,
    by_level: ByLevel,
) -> Vec<LevelFit> {
    (0..levels.len())
        .map(|k| fit_at(rounds, levels, k, per_run, cpus, by_level))
        .collect()
}

/// A least-squares line y = a + b·x.
fn line(p: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = p.len() as f64;
    let mx = p.iter().map(|q| q.0).sum::<f64>() / n;
    let my = p.iter().map(|q| q.1).sum::<f64>() / n;
    let sxx: f64 = p.iter().map(|q| (q.0 - mx).powi(2)).sum();
    let sxy: f64 = p.iter().map(|q| (q.0 - mx) * (q.1 - my)).sum();
    (sxx > 0.0).then(|| (my - sxy / sxx * mx, sxy / sxx))
}

/// The calibration at round trip `ns` with each two-CPU measurement a line in the round trip:
/// wall and CPU per exchange = a + b·round trip over its steady runs, evaluated at `ns` (never
/// below half the smallest run's); a measurement whose runs saw one level only (less than
/// [`SAME_LEVEL_RATIO`] between their lowest and highest probe) keeps its runs' median.
pub fn at_round_trip(rounds: &[Round], ns: f64, per_run: u64, cpus: usize) -> Calibration {
    let mut runs: Round = all(rounds)
        .filter(|r| !r.arrangement.uses_both_cpus())
        .copied()
        .collect();
    for (a, s) in measurements().filter(|(a, _)| a.uses_both_cpus()) {
        let mine: Vec<&Run> = all(rounds)
            .filter(|r| r.arrangement == a && r.size == s)
            .collect();
        let probed: Vec<(f64, f64, f64)> = mine
            .iter()
            .filter_map(|r| Some((r.steady_level()?, r.wall_us, r.cpu_us)))
            .collect();
        let lo = probed.iter().map(|p| p.0).fold(f64::INFINITY, f64::min);
        let hi = probed.iter().map(|p| p.0).fold(0.0, f64::max);
        if !(ns.is_finite() && hi >= SAME_LEVEL_RATIO * lo) {
            runs.extend(mine.into_iter().copied());
            continue;
        }
        let at = |pick: fn(&(f64, f64, f64)) -> f64| -> f64 {
            let pts: Vec<(f64, f64)> = probed.iter().map(|p| (p.0, pick(p))).collect();
            let floor = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min) / 2.0;
            line(&pts).map_or(f64::NAN, |(a, b)| (a + b * ns).max(floor))
        };
        runs.push(Run::from((a, s, at(|p| p.1), at(|p| p.2))));
    }
    calibrate::fit(&[runs], per_run, cpus)
}

/// The calibration's first and second halves compared, overall and within one level.
#[derive(Debug, Clone, Serialize)]
pub struct Halves {
    /// [`calibrate::drift`]: every pinned arrangement.
    pub all: f64,
    /// The one-CPU arrangements alone (the level cannot move them) …
    pub one_cpu: f64,
    /// … and the two-CPU ones.
    pub two_cpu: f64,
    /// The two-CPU arrangements, each half's runs at one level against the other's at the same
    /// level: the median over (arrangement, size, level) present in both halves of |m₁ − m₂| /
    /// mean. Near `one_cpu` and well under `two_cpu`: the level explains the halves' difference.
    pub two_cpu_same_level: f64,
    pub compared_same_level: usize,
    /// Each level, ns, with the share of each half's steady two-CPU runs at it (first, second).
    pub mix: Vec<(f64, f64, f64)>,
    /// Each arrangement's own difference (median over its sizes; those with nothing pinned too).
    pub by_arrangement: Vec<(Arrangement, f64)>,
    /// Other tasks' CPU time and the steal, mean shares of the two CPUs over each half's runs
    /// (first, second).
    pub others_share: (f64, f64),
    pub steal_share: (f64, f64),
}

/// [`Halves`] of `first` against `second`, the levels `levels`.
pub fn halves(first: &[Round], second: &[Round], levels: &[f64]) -> Halves {
    let level_of = |r: &Run| r.steady_level().and_then(|ns| nearest(levels, ns));
    let at = |half: &[Round], a: Arrangement, s: usize, k: usize| -> Vec<f64> {
        all(half)
            .filter(|r| r.arrangement == a && r.size == s && level_of(r) == Some(k))
            .map(|r| r.wall_us)
            .collect()
    };
    let mut d = Vec::new();
    for (a, s) in measurements().filter(|(a, _)| a.uses_both_cpus() && !a.is_linux()) {
        for k in 0..levels.len() {
            let (x, y) = (at(first, a, s, k), at(second, a, s, k));
            if x.is_empty() || y.is_empty() {
                continue;
            }
            let (mx, my) = (median(&x), median(&y));
            if mx + my > 0.0 {
                d.push((mx - my).abs() / ((mx + my) / 2.0));
            }
        }
    }
    let share = |half: &[Round], k: usize| -> f64 {
        let two: Vec<&Run> = all(half)
            .filter(|r| r.arrangement.uses_both_cpus() && r.steady_level().is_some())
            .collect();
        two.iter().filter(|r| level_of(r) == Some(k)).count() as f64 / (two.len().max(1) as f64)
    };
    let (sa, sb) = (calibrate::samples(first), calibrate::samples(second));
    let by_arrangement = Arrangement::ALL
        .into_iter()
        .map(|a| {
            let d: Vec<f64> = sa
                .iter()
                .filter(|x| x.arrangement == a)
                .filter_map(|x| {
                    let y = sb.iter().find(|y| y.arrangement == a && y.size == x.size)?;
                    let mean = (x.wall_us + y.wall_us) / 2.0;
                    (mean > 0.0).then(|| (x.wall_us - y.wall_us).abs() / mean)
                })
                .collect();
            (a, median(&d))
        })
        .collect();
    let mean = |half: &[Round], f: fn(&Run) -> Option<f64>| -> f64 {
        let v: Vec<f64> = all(half).filter_map(f).collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    Halves {
        by_arrangement,
        others_share: (mean(first, |r| r.others_share), mean(second, |r| r.others_share)),
        steal_share: (mean(first, |r| r.steal_share), mean(second, |r| r.steal_share)),
        all: calibrate::drift(first, second),
        one_cpu: calibrate::drift_of(first, second, |a| !a.uses_both_cpus()),
        two_cpu: calibrate::drift_of(first, second, Arrangement::uses_both_cpus),
        two_cpu_same_level: median(&d),
        compared_same_level: d.len(),
        mix: levels
            .iter()
            .enumerate()
            .map(|(k, &ns)| (ns, share(first, k), share(second, k)))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::map::calibrate::SIZES;

    /// One round at round trip `rt` ns: every two-CPU run costs 10 µs + rt/10 µs per exchange
    /// (CPU half of it), every one-CPU run 5 µs whatever the level; `steady` marks the runs.
    fn scripted(rt: f64, steady: bool) -> Round {
        let mut r = Vec::new();
        for (a, s) in measurements() {
            let wall = if a.uses_both_cpus() { 10.0 + rt / 10.0 } else { 5.0 };
            let mut run = Run::from((a, s, wall, wall / 2.0));
            run.level_ns = Some(rt);
            run.steady = steady;
            r.push(run);
        }
        r
    }

    fn split_wall_at_2k(c: &Calibration) -> f64 {
        c.samples
            .iter()
            .find(|s| s.arrangement == Arrangement::Split && s.size == SIZES[1])
            .map(|s| s.wall_us)
            .expect("split at 2 KiB")
    }

    #[test]
    fn issue_12_levels_are_found_from_the_probes() {
        let l = levels(&[62.0, 58.0, 140.0, 131.0, 150.0, 600.0, 560.0, 740.0, f64::NAN]);
        assert_eq!(l.len(), 3, "{l:?}");
        assert!((l[0] - 60.0).abs() < 1e-9 && (l[1] - 140.0).abs() < 1e-9, "{l:?}");
        assert!((l[2] - 600.0).abs() < 1e-9, "{l:?}");
        assert_eq!(nearest(&l, 380.0), Some(2));
        assert_eq!(nearest(&l, 100.0), Some(1));
        assert_eq!(nearest(&l, f64::NAN), None);
        assert_eq!(nearest(&[], 100.0), None);
    }

    #[test]
    fn issue_12_the_per_level_fit_takes_each_level_s_own_runs() {
        // two rounds at 140 ns, one at 600 ns, one whose probes disagreed (its level unknown)
        let rounds = [
            scripted(140.0, true),
            scripted(140.0, true),
            scripted(600.0, true),
            scripted(300.0, false),
        ];
        let l = levels(
            &rounds
                .iter()
                .flatten()
                .filter_map(Run::steady_level)
                .collect::<Vec<_>>(),
        );
        assert_eq!(l, [140.0, 600.0]);
        let fits = per_level(&rounds, &l, 2000, 2, Arrangement::uses_both_cpus);
        // at each level the two-CPU costs are that level's, never a mixture …
        assert!((split_wall_at_2k(&fits[0].calibration) - 24.0).abs() < 1e-9);
        assert!((split_wall_at_2k(&fits[1].calibration) - 70.0).abs() < 1e-9);
        assert!(fits.iter().all(|f| f.pooled.is_empty()));
        let two_cpu = measurements().filter(|m| m.0.uses_both_cpus()).count();
        assert_eq!((fits[0].runs, fits[1].runs), (2 * two_cpu, two_cpu));
        // … the one-CPU costs every level's
        let same = |f: &LevelFit| f.calibration.cost.local_ns_per_event;
        assert!((same(&fits[0]) - same(&fits[1])).abs() < 1e-9);
        // the pooled fit mixes them (median of 24, 24, 70, 40)
        let pooled = calibrate::fit(&rounds, 2000, 2);
        assert!((split_wall_at_2k(&pooled) - 32.0).abs() < 1e-9);
        // crossing arrangements only: split at its level, a pair on each CPU from every level
        let crossing = per_level(&rounds, &l, 2000, 2, Arrangement::crosses);
        assert!((split_wall_at_2k(&crossing[0].calibration) - 24.0).abs() < 1e-9);
        let par = |c: &Calibration| c.parallel_ipc;
        assert!((par(&crossing[0].calibration) - par(&crossing[1].calibration)).abs() < 1e-9);
        assert!((par(&fits[0].calibration) - par(&fits[1].calibration)).abs() > 0.1);
        // as a line in the round trip: exact at the levels and between them
        for rt in [140.0, 380.0, 600.0] {
            let c = at_round_trip(&rounds, rt, 2000, 2);
            assert!((split_wall_at_2k(&c) - (10.0 + rt / 10.0)).abs() < 1e-6, "{rt}");
        }
    }

    #[test]
    fn issue_12_a_measurement_missing_at_a_level_is_taken_from_every_level_and_listed() {
        let mut low = scripted(140.0, true);
        low.retain(|r| r.arrangement != Arrangement::Alone);
        let rounds = [low, scripted(600.0, true)];
        let fits = per_level(&rounds, &[140.0, 600.0], 2000, 2, Arrangement::uses_both_cpus);
        assert_eq!(fits[0].pooled.len(), Arrangement::Alone.sizes().len());
        assert!(fits[0].pooled.iter().all(|p| p.0 == Arrangement::Alone));
        assert!(fits[0].calibration.curves.is_some(), "the curves stay complete");
        assert!(fits[1].pooled.is_empty());
    }

    #[test]
    fn issue_12_halves_at_different_levels_agree_within_one_level() {
        // first half mostly at 140 ns, second mostly at 600: the two-CPU runs drift, the one-CPU
        // runs and the runs compared level by level do not
        let first = [
            scripted(140.0, true),
            scripted(140.0, true),
            scripted(600.0, true),
        ];
        let second = [
            scripted(600.0, true),
            scripted(600.0, true),
            scripted(140.0, true),
        ];
        let h = halves(&first, &second, &[140.0, 600.0]);
        assert!(h.two_cpu > 0.5, "{h:?}");
        assert_eq!(h.one_cpu, 0.0);
        assert_eq!(h.two_cpu_same_level, 0.0);
        assert!(h.compared_same_level > 0);
        assert!((h.mix[0].1 - 2.0 / 3.0).abs() < 1e-9 && (h.mix[0].2 - 1.0 / 3.0).abs() < 1e-9);
    }
}
