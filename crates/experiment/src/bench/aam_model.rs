//! `multios model aam` (issue #11): should this workload's system calls go to the OS machine?
//!
//! The refined model (eq. 4–11) with every profiled call delegated, f_c = the one-way cost of a
//! machine call (given, or measured now with `multios-aam`'s no-op machine call between the first
//! and the last usable CPU, both polling: half its median issue-to-result time (the mechanism;
//! a loaded machine's descheduled spells are the model's `share` term), as
//! `multios aam bench --validate` takes it) and γ as given. The projection itself is
//! `multios_aam::bench::project`; this module only picks f_c and states the verdict.

use multios_aam::bench::{self, BenchConfig, BenchError};
use multios_model::{ModelError, Projection, Workload};
use serde::Serialize;

/// Why the question could not be answered.
#[derive(Debug, thiserror::Error)]
pub enum AamModelError {
    #[error("model aam: --call-cost {0} s is not a finite non-negative duration; give e.g. 250ns")]
    CallCost(f64),
    #[error(
        "model aam: --gamma {0} must be a finite number > 0 (1 = the compute core runs as fast as before)"
    )]
    Gamma(f64),
    #[error("model aam: --iterations must be at least 1 to measure the machine call")]
    Iterations,
    #[error("model aam: measuring the machine call: {0}")]
    Measure(#[from] BenchError),
    #[error("model aam: the no-op machine call benchmark returned no 'aam_call_active_total'")]
    NoSample,
    #[error("model aam: {0}")]
    Model(#[from] ModelError),
}

/// Where f_c comes from.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CallCost {
    /// One-way cost of a machine call in seconds, as given by the user.
    Given(f64),
    /// Measure it now: this many no-op machine calls (both machines polling).
    Measure { iterations: usize },
}

/// The machine call measured for f_c.
#[derive(Debug, Clone, Serialize)]
pub struct MeasuredCall {
    pub iterations: usize,
    pub client_cpu: usize,
    pub server_cpu: usize,
    /// Issue to result, ns.
    pub median_ns: f64,
    pub mean_ns: f64,
}

/// The answer.
#[derive(Debug, Clone, Serialize)]
pub struct OsMachineAnswer {
    /// f_c used, seconds (one way; a delegated call pays it twice).
    pub fc_s: f64,
    /// "given" or "measured".
    pub fc_source: &'static str,
    pub measured: Option<MeasuredCall>,
    pub gamma: f64,
    /// Projected speedup S_r of sending every call to the OS machine.
    pub speedup: f64,
    /// S_r > 1.
    pub pays: bool,
    /// "pays" or "does not pay".
    pub verdict: &'static str,
    /// The f_c at which S_r = 1 (it pays below), seconds; None if no call is delegated or it
    /// does not pay even at f_c = 0.
    pub break_even_fc_s: Option<f64>,
    pub projection: Projection,
}

/// Measures the one-way cost of a no-op machine call on the first and last usable CPU.
pub fn measure_call(iterations: usize) -> Result<MeasuredCall, AamModelError> {
    if iterations == 0 {
        return Err(AamModelError::Iterations);
    }
    let cfg = BenchConfig {
        iterations,
        warmup: (iterations / 10).max(10),
        ..BenchConfig::default_here()
    };
    let r = bench::machine_call(&cfg, true)?;
    let total = r
        .iter()
        .find(|x| x.name == "aam_call_active_total")
        .ok_or(AamModelError::NoSample)?;
    Ok(MeasuredCall {
        iterations,
        client_cpu: cfg.client_cpu,
        server_cpu: cfg.server_cpu,
        median_ns: total.ns.median,
        mean_ns: total.ns.mean,
    })
}

/// The refined model's answer for `w` with every call sent to the OS machine.
pub fn answer(w: &Workload, cost: CallCost, gamma: f64) -> Result<OsMachineAnswer, AamModelError> {
    if !(gamma.is_finite() && gamma > 0.0) {
        return Err(AamModelError::Gamma(gamma));
    }
    let (fc_s, fc_source, measured) = match cost {
        CallCost::Given(s) if s.is_finite() && s >= 0.0 => (s, "given", None),
        CallCost::Given(s) => return Err(AamModelError::CallCost(s)),
        CallCost::Measure { iterations } => {
            let m = measure_call(iterations)?;
            (m.median_ns * 1e-9 / 2.0, "measured", Some(m))
        }
    };
    answer_with(w, fc_s, fc_source, measured, gamma)
}

fn answer_with(
    w: &Workload,
    fc_s: f64,
    fc_source: &'static str,
    measured: Option<MeasuredCall>,
    gamma: f64,
) -> Result<OsMachineAnswer, AamModelError> {
    let projection = bench::project(w, fc_s, gamma)?;
    let pays = projection.speedup > 1.0;
    // t_d is linear in f_c with slope 2·n (all calls delegated): S_r = 1 where t_d = t_nd.
    let at_zero = bench::project(w, 0.0, gamma)?;
    let n = projection.delegated_calls as f64;
    let break_even_fc_s =
        (n > 0.0 && at_zero.t_d < at_zero.t_nd).then(|| (at_zero.t_nd - at_zero.t_d) / (2.0 * n));
    Ok(OsMachineAnswer {
        fc_s,
        fc_source,
        measured,
        gamma,
        speedup: projection.speedup,
        pays,
        verdict: if pays { "pays" } else { "does not pay" },
        break_even_fc_s,
        projection,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use multios_model::Call;

    fn w() -> Workload {
        Workload {
            c: 1.0,
            calls: vec![Call {
                name: "read".into(),
                n: 1_000_000,
                g: 1.0,
            }],
        }
    }

    fn given(fc: f64, gamma: f64) -> OsMachineAnswer {
        answer(&w(), CallCost::Given(fc), gamma).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn issue_11_free_calls_and_a_faster_core_pay() {
        // γ = 2, f_c = 0: t_nd = 2 s, t_d = 1/2 + 1 = 1.5 s.
        let a = given(0.0, 2.0);
        assert!((a.speedup - 2.0 / 1.5).abs() < 1e-12, "{}", a.speedup);
        assert!(a.pays);
        assert_eq!(a.verdict, "pays");
        assert_eq!(a.fc_source, "given");
        assert_eq!(a.projection.delegated_calls, 1_000_000);
        // Break-even: 0.5 s of slack over 2·10⁶ one-way costs.
        let be = a.break_even_fc_s.unwrap_or(f64::NAN);
        assert!((be - 0.25e-6).abs() < 1e-15, "{be}");
        // At the break-even cost S_r = 1; above it, it does not pay.
        assert!((given(be, 2.0).speedup - 1.0).abs() < 1e-9);
        let worse = given(1e-6, 2.0);
        assert!(!worse.pays);
        assert_eq!(worse.verdict, "does not pay");
    }

    #[test]
    fn issue_11_same_core_never_pays_with_a_call_cost() {
        let a = given(200e-9, 1.0);
        // t_d = 1 + 1 + 2·10⁶·200 ns = 2.4 s against 2 s.
        assert!((a.speedup - 2.0 / 2.4).abs() < 1e-12);
        assert!(!a.pays);
        assert_eq!(a.break_even_fc_s, None);
        // It is exactly what multios-aam's projection gives.
        let p = bench::project(&w(), 200e-9, 1.0).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.projection.t_d, p.t_d);
    }

    #[test]
    fn issue_11_bad_inputs_are_errors() {
        assert!(matches!(
            answer(&w(), CallCost::Given(-1.0), 1.0),
            Err(AamModelError::CallCost(_))
        ));
        assert!(matches!(
            answer(&w(), CallCost::Given(f64::NAN), 1.0),
            Err(AamModelError::CallCost(_))
        ));
        assert!(matches!(
            answer(&w(), CallCost::Given(0.0), 0.0),
            Err(AamModelError::Gamma(_))
        ));
        assert!(matches!(
            answer(&w(), CallCost::Measure { iterations: 0 }, 1.0),
            Err(AamModelError::Iterations)
        ));
    }

    #[test]
    fn issue_11_measured_call_cost_is_half_the_median() {
        let a = answer(&w(), CallCost::Measure { iterations: 200 }, 1.0).unwrap_or_else(|e| panic!("{e}"));
        let m = a.measured.clone().unwrap_or_else(|| panic!("no measurement"));
        assert_eq!(a.fc_source, "measured");
        assert_eq!(m.iterations, 200);
        assert!(m.mean_ns > 0.0 && m.median_ns > 0.0);
        assert_eq!(a.fc_s, m.median_ns * 1e-9 / 2.0);
    }
}
