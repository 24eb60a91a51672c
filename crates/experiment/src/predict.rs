//! Predictions for an emulated run, from the native run time and the delegated counts it measured:
//! with γ = 1 (emulation does not speed computation up) the refined model reduces to
//! t_d = t_nd + Σ_delegated 2·f_c(s)·n(s); the naïve model predicts S_n = 1 whatever f_c is.

use multios_emulate::{CostModel, Report};
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

/// The model's parameters for an emulated run: γ and the mean of each f_c distribution.
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

#[cfg(test)]
mod tests {
    use super::*;
    use multios_emulate::{Counts, Dist, Exit};

    fn report(wall_secs: f64, delegated: &[(&str, u64)]) -> Report {
        Report {
            command: vec!["prog".into()],
            mechanism: "shm".into(),
            policy: "all".into(),
            fc: "10us".into(),
            compute_cpus: "0".into(),
            control_cpus: "1".into(),
            wall_secs,
            cpu_secs: wall_secs,
            exit: Exit::Code(0),
            delegated_total: delegated.iter().map(|(_, n)| n).sum(),
            local_total: Some(0),
            syscalls: delegated
                .iter()
                .map(|&(name, n)| {
                    (
                        name.to_string(),
                        Counts {
                            delegated: n,
                            local: Some(0),
                            local_secs: None,
                        },
                    )
                })
                .collect(),
            delivered_fc: None,
            forced_local: Vec::new(),
            interception: None,
            rewrite_cache: None,
            red_zone_sites: None,
            warnings: Vec::new(),
            interrupted: None,
            partial: false,
        }
    }

    #[test]
    fn issue_17_params_take_the_mean_of_each_distribution() {
        let mut cost = CostModel::constant(10e-6);
        cost.per_syscall
            .insert("write".into(), Dist::Exponential { mean: 50e-6 });
        let p = params_for(&cost, 2.0);
        assert_eq!(p.gamma, 2.0);
        assert_eq!(p.fc, 10e-6);
        assert_eq!(p.fc_per_syscall.get("write"), Some(&50e-6));
    }

    #[test]
    fn issue_17_refined_adds_two_fc_per_delegated_call() {
        // 1 000 delegated calls at 10 µs each way: the refined model adds 20 ms to a 1 s run.
        let r = report(1.05, &[("getpid", 1000)]);
        let c = compare(1.0, &r, &CostModel::constant(10e-6)).expect("compare");
        assert!((c.refined_secs - 1.02).abs() < 1e-9, "{}", c.refined_secs);
        assert!((c.refined_speedup - 1.0 / 1.02).abs() < 1e-9);
        assert_eq!(c.naive_speedup, 1.0);
        assert!((c.measured_speedup - 1.0 / 1.05).abs() < 1e-12);
        let excess = c.excess_per_call_secs.expect("delegated calls");
        assert!((excess - 0.03 / 1000.0).abs() < 1e-12, "{excess}");
    }

    #[test]
    fn issue_17_no_delegated_call_has_no_excess() {
        let r = report(1.0, &[]);
        let c = compare(1.0, &r, &CostModel::constant(10e-6)).expect("compare");
        assert_eq!(c.excess_per_call_secs, None);
        assert!((c.refined_secs - 1.0).abs() < 1e-12);
    }
}
