//! Parameter sweeps behind the paper's figures. They return plain numbers; the CLI turns them into
//! plots and CSV.

use crate::error::ModelError;
use crate::policy::{Order, Policy};
use crate::refined::{refined, Params};
use crate::workload::Workload;

/// `n` points evenly spaced from `lo` to `hi` inclusive.
pub fn lin_space(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    match n {
        0 => vec![],
        1 => vec![lo],
        _ => (0..n)
            .map(|i| lo + (hi - lo) * i as f64 / (n - 1) as f64)
            .collect(),
    }
}

/// `n` points evenly spaced in log10 from `lo` to `hi` inclusive (both > 0).
pub fn log_space(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    lin_space(lo.log10(), hi.log10(), n)
        .into_iter()
        .map(|e| 10f64.powf(e))
        .collect()
}

/// S_r for `policy` as a function of one parameter; `set` writes x into a copy of `base`.
pub fn curve(
    w: &Workload,
    policy: &Policy,
    base: &Params,
    xs: &[f64],
    set: impl Fn(&mut Params, f64),
) -> Result<Vec<(f64, f64)>, ModelError> {
    let d = policy.delegated(w);
    xs.iter()
        .map(|&x| {
            let mut p = base.clone();
            set(&mut p, x);
            refined(w, &d, &p).map(|r| (x, r.speedup))
        })
        .collect()
}

/// S_r over a grid: `z[yi][xi]` for x in `xs`, y in `ys`. `policy_of(y)` lets y choose the policy
/// (e.g. the fraction forwarded); `set(params, x, y)` writes the parameters.
pub fn grid(
    w: &Workload,
    base: &Params,
    xs: &[f64],
    ys: &[f64],
    policy_of: impl Fn(f64) -> Result<Policy, ModelError>,
    set: impl Fn(&mut Params, f64, f64),
) -> Result<Vec<Vec<f64>>, ModelError> {
    ys.iter()
        .map(|&y| {
            let d = policy_of(y)?.delegated(w);
            xs.iter()
                .map(|&x| {
                    let mut p = base.clone();
                    set(&mut p, x, y);
                    refined(w, &d, &p).map(|r| r.speedup)
                })
                .collect()
        })
        .collect()
}

/// The least-frequent fraction policy (the paper's default "min. frequency" selection).
pub fn least(fraction: f64) -> Result<Policy, ModelError> {
    Policy::fraction(Order::LeastFrequent, fraction)
}

/// The syscall CDF of Fig. 6: for each distinct invocation count x, the fraction of the distinct
/// system calls invoked at most x times.
pub fn syscall_cdf(w: &Workload) -> Vec<(f64, f64)> {
    let mut counts: Vec<u64> = w.calls.iter().map(|c| c.n).filter(|n| *n > 0).collect();
    counts.sort_unstable();
    let total = counts.len() as f64;
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (i, n) in counts.iter().enumerate() {
        let y = (i + 1) as f64 / total;
        match out.last_mut() {
            Some(last) if last.0 == *n as f64 => last.1 = y,
            _ => out.push((*n as f64, y)),
        }
    }
    out
}

/// The parameter `multios model sweep` varies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    /// γ, the LWK's compute gain.
    Gamma,
    /// f_c, seconds one way.
    Fc,
    /// The share of distinct calls forwarded, least frequent first (overrides the policy).
    Fraction,
}

/// One point of a [`sweep`]: the parameter's value, the refined and the naïve speedup.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub x: f64,
    pub refined: f64,
    pub naive: f64,
}

/// `steps` values from `lo` to `hi`: log-spaced for f_c from a positive start, else evenly spaced.
pub fn values(over: Over, lo: f64, hi: f64, steps: usize) -> Vec<f64> {
    match over {
        Over::Fc if lo > 0.0 => log_space(lo, hi, steps),
        _ => lin_space(lo, hi, steps),
    }
}

/// S_r and S_n of `w` under `policy` and `base` with one parameter varied over [`values`].
pub fn sweep(
    w: &Workload,
    policy: &Policy,
    base: &Params,
    over: Over,
    (lo, hi): (f64, f64),
    steps: usize,
) -> Result<Vec<Point>, ModelError> {
    let p = w.p();
    values(over, lo, hi, steps)
        .into_iter()
        .map(|x| {
            let mut params = base.clone();
            let policy = match over {
                Over::Gamma => {
                    params.gamma = x;
                    policy.clone()
                }
                Over::Fc => {
                    params.fc = x;
                    policy.clone()
                }
                Over::Fraction => least(x)?,
            };
            Ok(Point {
                x,
                refined: refined(w, &policy.delegated(w), &params)?.speedup,
                naive: crate::naive::naive(p, params.gamma)?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Call;

    #[test]
    fn spaces() {
        assert_eq!(lin_space(1.0, 3.0, 3), vec![1.0, 2.0, 3.0]);
        let l = log_space(1e-9, 1e-3, 7);
        assert!((l[3] - 1e-6).abs() < 1e-18);
    }

    #[test]
    fn cdf_steps() {
        let c = |name: &str, n| Call {
            name: name.into(),
            n,
            g: 0.0,
        };
        let w = Workload {
            c: 0.0,
            calls: vec![c("a", 1), c("b", 1), c("c", 10), c("d", 100)],
        };
        assert_eq!(syscall_cdf(&w), vec![(1.0, 0.5), (10.0, 0.75), (100.0, 1.0)]);
    }

    fn workload() -> Workload {
        Workload {
            c: 1.0,
            calls: vec![
                crate::Call {
                    name: "read".into(),
                    n: 1000,
                    g: 0.01,
                },
                crate::Call {
                    name: "write".into(),
                    n: 10,
                    g: 0.001,
                },
            ],
        }
    }

    #[test]
    fn issue_17_fc_sweeps_are_log_spaced_from_a_positive_start() {
        assert_eq!(values(Over::Fc, 1e-6, 1e-4, 3).len(), 3);
        let v = values(Over::Fc, 1e-6, 1e-4, 3);
        assert!((v[1] - 1e-5).abs() < 1e-15, "{v:?}");
        assert_eq!(values(Over::Fc, 0.0, 1e-4, 3), vec![0.0, 5e-5, 1e-4]);
        assert_eq!(values(Over::Gamma, 1.0, 3.0, 3), vec![1.0, 2.0, 3.0]);
    }

    #[test]
    fn issue_17_a_gamma_sweep_matches_the_models_point_by_point() {
        let w = workload();
        let base = Params::new(1.0, 10e-6);
        let pts = sweep(&w, &Policy::All, &base, Over::Gamma, (1.0, 4.0), 4).expect("sweep");
        assert_eq!(pts.len(), 4);
        for pt in &pts {
            let mut p = base.clone();
            p.gamma = pt.x;
            let want = refined(&w, &Policy::All.delegated(&w), &p)
                .expect("refined")
                .speedup;
            assert_eq!(pt.refined, want);
            assert_eq!(pt.naive, crate::naive(w.p(), pt.x).expect("naive"));
        }
    }

    #[test]
    fn issue_17_a_fraction_sweep_overrides_the_policy_and_checks_the_range() {
        let w = workload();
        let base = Params::new(2.0, 10e-6);
        let pts = sweep(&w, &Policy::All, &base, Over::Fraction, (0.0, 1.0), 2).expect("sweep");
        // Nothing forwarded: S_r is the naïve speedup.
        assert!((pts[0].refined - pts[0].naive).abs() < 1e-12);
        assert!(sweep(&w, &Policy::All, &base, Over::Fraction, (0.0, 2.0), 2).is_err());
    }
}
