//! The speedup models of `multios-model`, called exactly as `multios model …` calls them.

use crate::args::{workload, Dur, ParamSpec};
use crate::py_err;
use multios_model as model;
use pyo3::prelude::*;

type Calls = Vec<(String, u64, f64)>;

fn json(v: &impl serde::Serialize) -> PyResult<String> {
    serde_json::to_string(v).map_err(py_err)
}

#[allow(clippy::too_many_arguments)]
fn spec(
    gamma: f64,
    fc: Dur,
    policy: String,
    fc_for: Vec<String>,
    g_prime: Vec<String>,
    wait: Dur,
) -> ParamSpec {
    ParamSpec {
        gamma,
        fc,
        policy,
        fc_for,
        g_prime,
        wait,
    }
}

/// S_n = (p + (1−p)/γ)⁻¹ (eq. 3).
#[pyfunction]
fn naive(p: f64, gamma: f64) -> PyResult<f64> {
    model::naive(p, gamma).map_err(py_err)
}

/// The refined model (eq. 4–11); returns the projection's JSON.
#[pyfunction]
#[pyo3(signature = (c, calls, gamma=1.0, fc=Dur::Secs(0.0), policy="all".to_string(), fc_for=vec![], g_prime=vec![], wait=Dur::Secs(0.0)))]
#[allow(clippy::too_many_arguments)]
fn refined(
    c: f64,
    calls: Calls,
    gamma: f64,
    fc: Dur,
    policy: String,
    fc_for: Vec<String>,
    g_prime: Vec<String>,
    wait: Dur,
) -> PyResult<String> {
    let s = spec(gamma, fc, policy, fc_for, g_prime, wait);
    let w = workload(c, calls).map_err(py_err)?;
    let d = s.policy().map_err(py_err)?.delegated(&w);
    json(&model::refined(&w, &d, &s.params().map_err(py_err)?).map_err(py_err)?)
}

/// M/M/c from explicit rates; returns the queue's JSON.
#[pyfunction]
#[pyo3(signature = (lambdas, mu, servers=1))]
fn queue(lambdas: Vec<f64>, mu: f64, servers: u32) -> PyResult<String> {
    json(&model::mmc(&model::QueueParams { lambdas, mu, servers }).map_err(py_err)?)
}

/// `multios model queue --profile`: λ_k and μ from a profile's threads and delegated calls, then
/// S_r with W added; returns {"queue": …, "projection": …}.
#[pyfunction]
#[pyo3(signature = (path, servers=1, mu=None, gamma=1.0, fc=Dur::Secs(0.0), policy="all".to_string(), fc_for=vec![], g_prime=vec![], wait=Dur::Secs(0.0)))]
#[allow(clippy::too_many_arguments)]
fn queue_profile(
    path: std::path::PathBuf,
    servers: u32,
    mu: Option<f64>,
    gamma: f64,
    fc: Dur,
    policy: String,
    fc_for: Vec<String>,
    g_prime: Vec<String>,
    wait: Dur,
) -> PyResult<String> {
    let s = spec(gamma, fc, policy, fc_for, g_prime, wait);
    let p = multios_profile::load(&path).map_err(py_err)?;
    let w = model::Workload::from_profile(&p);
    let d = s.policy().map_err(py_err)?.delegated(&w);
    let threads: Vec<(u64, f64)> = p.threads.iter().map(|t| (t.syscalls, t.lifetime_s)).collect();
    let mut q =
        model::QueueParams::from_workload(&w, &d, &threads, p.wall_time_s, servers).map_err(py_err)?;
    if let Some(mu) = mu {
        q.mu = mu;
    }
    let r = model::mmc(&q).map_err(py_err)?;
    let mut params = s.params().map_err(py_err)?;
    params.wait_per_call = r.wait;
    let pr = model::refined(&w, &d, &params).map_err(py_err)?;
    json(&serde_json::json!({ "queue": r, "projection": pr }))
}

/// `multios model sweep`: a list of (x, S_r, S_n).
#[pyfunction]
#[pyo3(signature = (c, calls, over, lo, hi, steps=10, gamma=1.0, fc=Dur::Secs(0.0), policy="all".to_string(), fc_for=vec![], g_prime=vec![], wait=Dur::Secs(0.0)))]
#[allow(clippy::too_many_arguments)]
fn sweep(
    c: f64,
    calls: Calls,
    over: &str,
    lo: Dur,
    hi: Dur,
    steps: usize,
    gamma: f64,
    fc: Dur,
    policy: String,
    fc_for: Vec<String>,
    g_prime: Vec<String>,
    wait: Dur,
) -> PyResult<Vec<(f64, f64, f64)>> {
    let s = spec(gamma, fc, policy, fc_for, g_prime, wait);
    let w = workload(c, calls).map_err(py_err)?;
    let over = match over {
        "gamma" => model::sweep::Over::Gamma,
        "fc" => model::sweep::Over::Fc,
        "fraction" => model::sweep::Over::Fraction,
        other => {
            return Err(py_err(format!(
                "over: '{other}' is not one of gamma, fc, fraction"
            )))
        }
    };
    let (lo, hi) = (lo.secs("lo").map_err(py_err)?, hi.secs("hi").map_err(py_err)?);
    let pts = model::sweep::sweep(
        &w,
        &s.policy().map_err(py_err)?,
        &s.params().map_err(py_err)?,
        over,
        (lo, hi),
        steps,
    )
    .map_err(py_err)?;
    Ok(pts.into_iter().map(|p| (p.x, p.refined, p.naive)).collect())
}

/// `multios model fit --measured`: γ solving the refined model for a measured speedup.
#[pyfunction]
#[pyo3(signature = (c, calls, measured, gamma=1.0, fc=Dur::Secs(0.0), policy="all".to_string(), fc_for=vec![], g_prime=vec![], wait=Dur::Secs(0.0)))]
#[allow(clippy::too_many_arguments)]
fn fit_gamma_refined(
    c: f64,
    calls: Calls,
    measured: f64,
    gamma: f64,
    fc: Dur,
    policy: String,
    fc_for: Vec<String>,
    g_prime: Vec<String>,
    wait: Dur,
) -> PyResult<f64> {
    let s = spec(gamma, fc, policy, fc_for, g_prime, wait);
    let w = workload(c, calls).map_err(py_err)?;
    let d = s.policy().map_err(py_err)?.delegated(&w);
    model::fit_gamma_refined(&w, &d, &s.params().map_err(py_err)?, measured).map_err(py_err)
}

/// γ solving the naïve model for a measured speedup.
#[pyfunction]
fn fit_gamma_naive(p: f64, measured: f64) -> PyResult<f64> {
    model::fit_gamma_naive(p, measured).map_err(py_err)
}

/// 100 − MAPE over (predicted, measured) pairs.
#[pyfunction]
fn accuracy(pairs: Vec<(f64, f64)>) -> PyResult<f64> {
    model::accuracy(&pairs).map_err(py_err)
}

/// The median of the finite values (multios-stats' rule), None when there is none.
#[pyfunction]
fn median(values: Vec<f64>) -> Option<f64> {
    model::median(&values)
}

/// `multios model advise`: which `budget` calls to port; returns the advice's JSON.
#[pyfunction]
#[pyo3(signature = (c, calls, budget, gamma=1.0, fc=Dur::Secs(0.0), policy="all".to_string(), fc_for=vec![], g_prime=vec![], wait=Dur::Secs(0.0)))]
#[allow(clippy::too_many_arguments)]
fn advise(
    c: f64,
    calls: Calls,
    budget: usize,
    gamma: f64,
    fc: Dur,
    policy: String,
    fc_for: Vec<String>,
    g_prime: Vec<String>,
    wait: Dur,
) -> PyResult<String> {
    let s = spec(gamma, fc, policy, fc_for, g_prime, wait);
    let w = workload(c, calls).map_err(py_err)?;
    let d = s.policy().map_err(py_err)?.delegated(&w);
    json(&model::advise(&w, &d, &s.params().map_err(py_err)?, budget).map_err(py_err)?)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(naive, m)?)?;
    m.add_function(wrap_pyfunction!(refined, m)?)?;
    m.add_function(wrap_pyfunction!(queue, m)?)?;
    m.add_function(wrap_pyfunction!(queue_profile, m)?)?;
    m.add_function(wrap_pyfunction!(sweep, m)?)?;
    m.add_function(wrap_pyfunction!(fit_gamma_refined, m)?)?;
    m.add_function(wrap_pyfunction!(fit_gamma_naive, m)?)?;
    m.add_function(wrap_pyfunction!(accuracy, m)?)?;
    m.add_function(wrap_pyfunction!(median, m)?)?;
    m.add_function(wrap_pyfunction!(advise, m)?)?;
    Ok(())
}
