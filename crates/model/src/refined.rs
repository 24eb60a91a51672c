//! The refined model (eq. 4–11).
//!
//! ```text
//! t_nd = C + Σ g(s)                                              (4)
//! f(s) = 2 · f_c(s) · n(s)                                       (5)
//! t_d  = C/γ + Σ b(s)·(g(s) + f(s) + W·n(s)) + (1 − b(s))·g'(s)  (7–9, with §6's queueing delay W)
//! S_r  = t_nd / t_d                                              (10, 11)
//! ```
//! Beyond the paper: f_c may differ per system call (e.g. a call that ships a large buffer over a
//! network), g' may be given per system call (a per-call time or a factor of g), and W (the mean
//! queueing delay of a delegated call, from [`crate::mmc`]) is added to each delegated invocation.

use crate::error::{check_gamma, check_time, ModelError};
use crate::workload::Workload;
use std::collections::{BTreeMap, BTreeSet};

/// g'(s): the time of the LWK's own implementation of s.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub enum GPrime {
    /// Seconds per call; g'(s) = value · n(s).
    PerCall(f64),
    /// g'(s) = factor · g(s).
    Factor(f64),
}

/// Parameters of the refined model.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Params {
    pub gamma: f64,
    /// f_c: one-way forwarding cost, seconds.
    pub fc: f64,
    /// Per-syscall one-way forwarding costs overriding `fc`.
    pub fc_per_syscall: BTreeMap<String, f64>,
    /// Per-syscall g'; calls not listed have g' = g (the paper's assumption).
    pub g_prime: BTreeMap<String, GPrime>,
    /// W: mean queueing delay added to every delegated invocation, seconds (§6).
    pub wait_per_call: f64,
}

impl Params {
    pub fn new(gamma: f64, fc: f64) -> Self {
        Params {
            gamma,
            fc,
            fc_per_syscall: BTreeMap::new(),
            g_prime: BTreeMap::new(),
            wait_per_call: 0.0,
        }
    }

    /// f_c for `name`.
    pub fn fc_of(&self, name: &str) -> f64 {
        self.fc_per_syscall.get(name).copied().unwrap_or(self.fc)
    }

    /// g'(s) given n(s) and g(s).
    pub fn g_prime_of(&self, name: &str, n: u64, g: f64) -> f64 {
        match self.g_prime.get(name) {
            None => g,
            Some(GPrime::PerCall(t)) => t * n as f64,
            Some(GPrime::Factor(k)) => k * g,
        }
    }

    fn validate(&self) -> Result<(), ModelError> {
        check_gamma(self.gamma)?;
        check_time("f_c", self.fc)?;
        check_time("W", self.wait_per_call)?;
        for (name, v) in &self.fc_per_syscall {
            check_time(&format!("f_c({name})"), *v)?;
        }
        for (name, v) in &self.g_prime {
            let x = match v {
                GPrime::PerCall(t) | GPrime::Factor(t) => *t,
            };
            check_time(&format!("g'({name})"), x)?;
        }
        Ok(())
    }
}

/// One system call's share of the projection.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Breakdown {
    pub name: String,
    pub n: u64,
    pub g: f64,
    pub delegated: bool,
    /// f(s) = 2·f_c·n(s) when delegated, else 0.
    pub f: f64,
    /// Time this call contributes to t_d.
    pub t_d: f64,
}

/// The refined model's projection.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Projection {
    pub gamma: f64,
    pub fc: f64,
    pub c: f64,
    pub sum_g: f64,
    pub p: f64,
    pub t_nd: f64,
    pub t_d: f64,
    pub t_local: f64,
    pub t_remote: f64,
    /// Σ f(s) over delegated calls.
    pub forwarding: f64,
    /// Σ W·n(s) over delegated calls.
    pub queueing: f64,
    pub speedup: f64,
    /// The naïve model's S_n for the same p and γ, for comparison.
    pub naive: f64,
    pub delegated_calls: u64,
    pub total_calls: u64,
    pub delegated_syscalls: usize,
    pub distinct_syscalls: usize,
    pub breakdown: Vec<Breakdown>,
}

/// Projects S_r for workload `w` when the calls in `delegated` go to Linux.
pub fn refined(
    w: &Workload,
    delegated: &BTreeSet<String>,
    params: &Params,
) -> Result<Projection, ModelError> {
    params.validate()?;
    check_time("C", w.c)?;
    let mut t_local = 0.0;
    let mut t_remote = 0.0;
    let mut forwarding = 0.0;
    let mut queueing = 0.0;
    let mut delegated_calls = 0;
    let mut breakdown = Vec::with_capacity(w.calls.len());
    for call in &w.calls {
        check_time(&format!("g({})", call.name), call.g)?;
        let b = delegated.contains(&call.name);
        let (f, t) = if b {
            let f = 2.0 * params.fc_of(&call.name) * call.n as f64;
            let q = params.wait_per_call * call.n as f64;
            forwarding += f;
            queueing += q;
            delegated_calls =
                u64::checked_add(delegated_calls, call.n).ok_or_else(|| ModelError::CountOverflow {
                    what: "Σ n(s) over the delegated calls".into(),
                })?;
            let t = call.g + f + q;
            t_remote += t;
            (f, t)
        } else {
            let t = params.g_prime_of(&call.name, call.n, call.g);
            t_local += t;
            (0.0, t)
        };
        breakdown.push(Breakdown {
            name: call.name.clone(),
            n: call.n,
            g: call.g,
            delegated: b,
            f,
            t_d: t,
        });
    }
    let total_calls = w.total_calls()?;
    let t_nd = w.t_nd();
    check_time("t_nd = C + Σg", t_nd)?;
    if t_nd <= 0.0 {
        return Err(ModelError::EmptyWorkload);
    }
    let t_d = w.c / params.gamma + t_remote + t_local;
    check_time("t_d", t_d)?;
    if t_d <= 0.0 {
        // S_r would be inf: the time the workload takes went away with a g' of 0 (`--g-prime read=0ns`).
        let zeroed: Vec<String> = breakdown
            .iter()
            .filter(|b| !b.delegated && b.g > 0.0 && b.t_d <= 0.0)
            .map(|b| format!("g'({})", b.name))
            .collect();
        return Err(ModelError::NoProjectedTime {
            what: if zeroed.is_empty() {
                "C/γ and every call's time".into()
            } else {
                zeroed.join(", ")
            },
        });
    }
    let speedup = t_nd / t_d;
    let p = w.p();
    Ok(Projection {
        gamma: params.gamma,
        fc: params.fc,
        c: w.c,
        sum_g: w.sum_g(),
        p,
        t_nd,
        t_d,
        t_local,
        t_remote,
        forwarding,
        queueing,
        speedup,
        naive: crate::naive(p, params.gamma)?,
        delegated_calls,
        total_calls,
        delegated_syscalls: breakdown.iter().filter(|b| b.delegated).count(),
        distinct_syscalls: breakdown.len(),
        breakdown,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Call;

    /// Seed 002 (Multiverse), §6: ≈1500 cycles of forwarding per event × 75 252 forwarded events for
    /// spectral-norm ≈ 112 M cycles ≈ 51 ms at 2.2 GHz.
    #[test]
    fn multiverse_spectral_norm_overhead() {
        let w = Workload {
            c: 23.8,
            calls: vec![Call {
                name: "mmap".into(),
                n: 75_252,
                g: 0.0,
            }],
        };
        let fc = 750.0 / 2.2e9; // 1500 cycles round trip = 2·f_c
        let all: BTreeSet<String> = ["mmap".to_string()].into();
        let pr = refined(&w, &all, &Params::new(1.0, fc)).ok();
        let overhead = pr.map(|p| p.t_d - p.t_nd).unwrap_or(0.0);
        assert!((overhead - 0.051_3).abs() < 0.000_1, "overhead {overhead}");
        assert!((overhead * 2.2e9 / 1e6 - 112.9).abs() < 0.1);
    }

    #[test]
    fn g_prime_and_per_syscall_fc() {
        let w = Workload {
            c: 1.0,
            calls: vec![
                Call {
                    name: "read".into(),
                    n: 10,
                    g: 1e-3,
                },
                Call {
                    name: "getpid".into(),
                    n: 100,
                    g: 1e-4,
                },
            ],
        };
        let mut p = Params::new(2.0, 1e-6);
        p.fc_per_syscall.insert("read".into(), 1e-5);
        p.g_prime.insert("getpid".into(), GPrime::PerCall(1e-8));
        let d: BTreeSet<String> = ["read".to_string()].into();
        let pr = refined(&w, &d, &p).ok();
        let t_d = pr.map(|p| p.t_d).unwrap_or(0.0);
        let want = 0.5 + (1e-3 + 2.0 * 1e-5 * 10.0) + 1e-8 * 100.0;
        assert!((t_d - want).abs() < 1e-12, "{t_d} vs {want}");
    }

    #[test]
    fn rejects_bad_params() {
        let w = Workload::default();
        let d = BTreeSet::new();
        assert!(matches!(
            refined(&w, &d, &Params::new(0.0, 0.0)),
            Err(ModelError::Gamma(_))
        ));
        assert!(matches!(
            refined(&w, &d, &Params::new(1.0, -1.0)),
            Err(ModelError::Time { .. })
        ));
    }
}
