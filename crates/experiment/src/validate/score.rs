//! One configuration of `multios validate`: the mechanism's own round trip and the predictions
//! set beside the measured speedup. The model's f_c is the requested f_c plus half the mechanism's
//! own round trip, measured in the same run (min, median or mean: the paper's Fig. 13 sensitivity).

use crate::synth::SynthRun;
use crate::ExperimentError;
use multios_emulate::{CpuSet, Mechanism};
use multios_model::Params;
use std::collections::BTreeSet;

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

pub fn mechanism_round_trip(
    m: Mechanism,
    compute: &CpuSet,
    control: &CpuSet,
) -> Result<RoundTrip, ExperimentError> {
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
    wait: multios_emulate::Wait,
) -> Result<RoundTrip, ExperimentError> {
    mechanism_round_trip_spaced(m, fc, trials, compute, control, wait, 0)
}

/// As [`mechanism_round_trip_at`], each call `gap_ns` after the previous one returned
/// ([`multios_emulate::fc::run_spaced`]); the native time is measured the same way.
pub fn mechanism_round_trip_spaced(
    m: Mechanism,
    fc: f64,
    trials: usize,
    compute: &CpuSet,
    control: &CpuSet,
    wait: multios_emulate::Wait,
    gap_ns: u64,
) -> Result<RoundTrip, ExperimentError> {
    let r = multios_emulate::fc::run_spaced(&[m], trials, compute, control, fc, wait, gap_ns)?;
    let (Some(n), Some(e)) = (r.get("raw_getppid", "native"), r.get("raw_getppid", m.name())) else {
        return Err(ExperimentError::Run(
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
    fn round_trips_combine_min_of_mins_median_of_medians_mean_of_means() {
        let r = |min, median, mean| RoundTrip { min, median, mean };
        let c = RoundTrip::combine(&[r(1.0, 5.0, 6.0), r(2.0, 3.0, 4.0), r(0.5, 9.0, 11.0)]).expect("three");
        assert_eq!((c.min, c.median, c.mean), (0.5, 5.0, 7.0));
        let c = RoundTrip::combine(&[r(1.0, 2.0, 3.0), r(1.0, 4.0, 5.0)]).expect("two");
        assert_eq!(c.median, 3.0);
        assert!(RoundTrip::combine(&[]).is_none());
    }
}
