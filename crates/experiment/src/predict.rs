//! Predictions for an emulated run, from the native run time and the delegated counts it measured:
//! with γ = 1 (emulation does not speed computation up) the refined model reduces to
//! t_d = t_nd + Σ_delegated 2·f_c(s)·n(s); the naïve model predicts S_n = 1 whatever f_c is.

use crate::cost::CostModel;
use crate::report::Report;
use multios_model::{Call, Params, Workload};
use std::collections::BTreeSet;

/// Measured and predicted speedups of one emulated run against its native run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Comparison {
    pub native_secs: f64,
    pub emulated_secs: f64,
    /// T_native / T_emulated.
    pub measured_speedup: f64,
    pub naive_speedup: f64,
    pub refined_speedup: f64,
    /// The emulated time the refined model predicts.
    pub refined_secs: f64,
    /// Measured time beyond the prediction per delegated call: the mechanism's own round trip.
    pub excess_per_call_secs: Option<f64>,
}

/// Policy and model policies can be built from a name predicate.
pub fn params_for(cost: &CostModel, gamma: f64) -> Params {
    let mut p = Params::new(gamma, cost.default.mean());
    for (name, d) in &cost.per_syscall {
        p.fc_per_syscall.insert(name.clone(), d.mean());
    }
    p
}

/// Compares `report` (emulated) with a native run that took `native_secs`.
pub fn compare(
    native_secs: f64,
    report: &Report,
    cost: &CostModel,
) -> Result<Comparison, multios_model::ModelError> {
    let calls: Vec<Call> = report
        .syscalls
        .iter()
        .filter(|(_, c)| c.delegated > 0)
        .map(|(name, c)| Call {
            name: name.clone(),
            n: c.delegated,
            g: 0.0,
        })
        .collect();
    let delegated: BTreeSet<String> = calls.iter().map(|c| c.name.clone()).collect();
    let w = Workload {
        c: native_secs,
        calls,
    };
    let proj = multios_model::refined(&w, &delegated, &params_for(cost, 1.0))?;
    let naive = multios_model::naive(w.p(), 1.0)?;
    let n = report.delegated_total;
    Ok(Comparison {
        native_secs,
        emulated_secs: report.wall_secs,
        measured_speedup: native_secs / report.wall_secs,
        naive_speedup: naive,
        refined_speedup: proj.speedup,
        refined_secs: proj.t_d,
        excess_per_call_secs: (n > 0).then(|| (report.wall_secs - proj.t_d) / n as f64),
    })
}
