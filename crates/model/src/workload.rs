//! The model's view of a run: compute time C and, per system call, n(s) and g(s).

use multios_profile::Profile;

/// One system call's invocation count n(s) and total time g(s).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Call {
    pub name: String,
    pub n: u64,
    /// g(s), seconds.
    pub g: f64,
}

/// C and the calls: everything eq. 4–11 need from a profile.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize)]
pub struct Workload {
    /// C, seconds.
    pub c: f64,
    pub calls: Vec<Call>,
}

impl Workload {
    pub fn from_profile(p: &Profile) -> Self {
        Workload {
            c: p.compute_time_s,
            calls: p
                .syscalls
                .iter()
                .map(|s| Call {
                    name: s.name.clone(),
                    n: s.count,
                    g: s.total_s,
                })
                .collect(),
        }
    }

    /// Σ g(s).
    pub fn sum_g(&self) -> f64 {
        // fold, not sum: an empty f64 sum is −0.0 (Rust ≥ 1.82), printed as "-0"
        self.calls.iter().map(|c| c.g).fold(0.0, |a, b| a + b)
    }

    /// t_nd = C + Σ g(s) (eq. 4).
    pub fn t_nd(&self) -> f64 {
        self.c + self.sum_g()
    }

    /// p = Σg / t_nd.
    pub fn p(&self) -> f64 {
        let t = self.t_nd();
        if t > 0.0 {
            self.sum_g() / t
        } else {
            0.0
        }
    }

    /// Σ n(s); an error when the counts add up past `u64::MAX`.
    pub fn total_calls(&self) -> Result<u64, crate::ModelError> {
        self.calls
            .iter()
            .try_fold(0u64, |a, c| a.checked_add(c.n))
            .ok_or_else(|| crate::ModelError::CountOverflow {
                what: "Σ n(s) over all system calls".into(),
            })
    }
}
