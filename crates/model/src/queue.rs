//! The queueing extension (§6, eq. 12–13), generalised from one delegate (M/M/1) to c (M/M/c).
//!
//! n delegator threads send delegation requests as independent Poisson streams λ_k; by the merging
//! property they form one Poisson stream λ = Σ λ_k (eq. 12). Each of c delegates serves requests in
//! exponentially distributed times with rate μ. The mean wait before service (eq. 13 for c = 1) is
//!
//! ```text
//! W = C(c, a) / (c·μ − λ),  a = λ/μ,   and for c = 1: W = ρ/(μ − λ) = 1/(μ − λ) − 1/μ
//! ```
//! where C(c, a) is the Erlang C probability that a request has to wait. It is computed through
//! the Erlang B recursion B(0) = 1, B(k) = a·B(k−1) / (k + a·B(k−1)) and C = c·B / (c − a·(1 − B)),
//! which avoids the factorials of the textbook form (Kleinrock, *Queueing Systems* Vol. 1, §3.5;
//! Gross & Harris, *Fundamentals of Queueing Theory*, §2.3). A queue with λ ≥ c·μ has no steady
//! state and is reported as [`ModelError::Unstable`], not as a number.

use crate::error::ModelError;
use crate::workload::Workload;
use std::collections::BTreeSet;

/// Inputs of an M/M/c delegation queue.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct QueueParams {
    /// λ_k: delegation requests per second from each delegator thread.
    pub lambdas: Vec<f64>,
    /// μ: requests one delegate serves per second.
    pub mu: f64,
    /// c: number of delegates.
    pub servers: u32,
}

/// The steady state of the queue.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct QueueResult {
    pub lambda: f64,
    pub mu: f64,
    pub servers: u32,
    /// ρ = λ / (c·μ), the delegates' utilisation.
    pub rho: f64,
    /// C(c, a): probability that a request waits.
    pub p_wait: f64,
    /// W: mean wait before service, seconds.
    pub wait: f64,
    /// W + 1/μ: mean time from request to reply, excluding forwarding.
    pub response: f64,
}

/// Erlang C: the probability that an arrival waits in an M/M/c queue with offered load a = λ/μ < c.
pub fn erlang_c(servers: u32, a: f64) -> f64 {
    let c = f64::from(servers);
    let mut b = 1.0;
    for k in 1..=servers {
        b = a * b / (f64::from(k) + a * b);
        // Once the Erlang B term underflows it stays 0: the rest of 4 294 967 295 servers would
        // take minutes to add nothing.
        if b == 0.0 {
            break;
        }
    }
    c * b / (c - a * (1.0 - b))
}

/// Solves the M/M/c queue.
pub fn mmc(q: &QueueParams) -> Result<QueueResult, ModelError> {
    if q.servers == 0 {
        return Err(ModelError::Servers);
    }
    if !(q.mu.is_finite() && q.mu > 0.0) {
        return Err(ModelError::Positive {
            what: "μ (service rate)".into(),
            value: q.mu,
        });
    }
    for (k, l) in q.lambdas.iter().enumerate() {
        if !(l.is_finite() && *l >= 0.0) {
            return Err(ModelError::Time {
                what: format!("λ_{k}"),
                value: *l,
            });
        }
    }
    // fold, not sum: an empty f64 sum is −0.0, printed "λ = -0.000000e0"
    let lambda = q.lambdas.iter().fold(0.0, |a, b| a + b);
    let capacity = f64::from(q.servers) * q.mu;
    if lambda >= capacity {
        return Err(ModelError::Unstable { lambda, capacity });
    }
    let a = lambda / q.mu;
    let p_wait = if lambda == 0.0 {
        0.0
    } else {
        erlang_c(q.servers, a)
    };
    let wait = p_wait / (capacity - lambda);
    Ok(QueueResult {
        lambda,
        mu: q.mu,
        servers: q.servers,
        rho: lambda / capacity,
        p_wait,
        wait,
        response: wait + 1.0 / q.mu,
    })
}

impl QueueParams {
    /// Derives λ_k and μ from a profile: each thread's rate of system calls scaled by the share of
    /// calls that are delegated (`threads` gives (calls, lifetime) per thread; an empty slice means one
    /// thread over `wall`), and μ = Σn/Σg over the delegated calls (the delegate executes the call).
    pub fn from_workload(
        w: &Workload,
        delegated: &BTreeSet<String>,
        threads: &[(u64, f64)],
        wall: f64,
        servers: u32,
    ) -> Result<QueueParams, ModelError> {
        let (dn, dg) = w
            .calls
            .iter()
            .filter(|c| delegated.contains(&c.name))
            .try_fold((0u64, 0.0), |(n, g), c| Some((n.checked_add(c.n)?, g + c.g)))
            .ok_or_else(|| ModelError::CountOverflow {
                what: "Σ n(s) over the delegated calls".into(),
            })?;
        let total = w.total_calls()?;
        if dn == 0 || dg <= 0.0 {
            return Err(ModelError::Positive {
                what: "time of delegated calls (μ = Σn/Σg)".into(),
                value: dg,
            });
        }
        let share = dn as f64 / total as f64;
        let lambdas = if threads.is_empty() {
            if wall <= 0.0 {
                return Err(ModelError::Positive {
                    what: "wall time".into(),
                    value: wall,
                });
            }
            vec![dn as f64 / wall]
        } else {
            threads
                .iter()
                .filter(|t| t.1 > 0.0)
                .map(|(n, life)| *n as f64 * share / life)
                .collect()
        };
        Ok(QueueParams {
            lambdas,
            mu: dn as f64 / dg,
            servers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mm1_closed_form() {
        let r = mmc(&QueueParams {
            lambdas: vec![300.0, 200.0],
            mu: 1000.0,
            servers: 1,
        })
        .ok();
        let w = r.map(|r| r.wait).unwrap_or(f64::NAN);
        assert!((w - (1.0 / (1000.0 - 500.0) - 1.0 / 1000.0)).abs() < 1e-15);
    }

    #[test]
    fn erlang_c_known_value() {
        // Textbook example: c = 2, a = 1 → C = 1/3.
        assert!((erlang_c(2, 1.0) - 1.0 / 3.0).abs() < 1e-12);
        // c = 3, a = 2 → C = 4/9.
        assert!((erlang_c(3, 2.0) - 4.0 / 9.0).abs() < 1e-12);
    }

    #[test]
    fn unstable_is_an_error() {
        let r = mmc(&QueueParams {
            lambdas: vec![2000.0],
            mu: 1000.0,
            servers: 2,
        });
        assert!(matches!(r, Err(ModelError::Unstable { .. })));
        let r = mmc(&QueueParams {
            lambdas: vec![1999.0],
            mu: 1000.0,
            servers: 2,
        });
        assert!(r.is_ok());
    }

    #[test]
    fn issue_16_the_most_servers_end_quickly_and_no_rate_is_plus_zero() {
        let t = std::time::Instant::now();
        let r = mmc(&QueueParams {
            lambdas: vec![1.0],
            mu: 10.0,
            servers: u32::MAX,
        })
        .expect("stable");
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
        assert_eq!(r.p_wait, 0.0);
        let r = mmc(&QueueParams {
            lambdas: Vec::new(),
            mu: 10.0,
            servers: 1,
        })
        .expect("stable");
        assert!(r.lambda.is_sign_positive() && r.rho.is_sign_positive(), "{r:?}");
        assert_eq!(format!("{:e}", r.lambda), "0e0");
    }
}
