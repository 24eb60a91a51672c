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
}
