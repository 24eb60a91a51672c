//! The porting advisor: with a budget of k system calls to implement in the LWK, which k maximise S_r?
//!
//! t_nd does not depend on the choice, so maximising S_r = t_nd / t_d means minimising t_d. t_d is a
//! sum of independent per-call terms (eq. 9): moving call s from delegated to local changes t_d by
//! −Δ(s) with Δ(s) = g(s) + f(s) + W·n(s) − g'(s), and Δ(s) does not depend on what else is moved.
//! The best k-subset is therefore the k calls with the largest positive Δ: for any other subset,
//! exchanging one of its members for a larger-Δ call outside it never increases t_d (an exchange
//! argument; the objective is modular, so greedy is exact). Calls with Δ ≤ 0 are never worth porting.

use crate::error::ModelError;
use crate::refined::{refined, Params, Projection};
use crate::workload::Workload;
use std::collections::BTreeSet;

/// One recommended call.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AdviceItem {
    pub name: String,
    pub n: u64,
    /// Δ(s): seconds saved by implementing it locally.
    pub saving: f64,
    /// S_r after porting this call and all before it.
    pub speedup_after: f64,
}

/// The advisor's answer.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Advice {
    pub before: Projection,
    pub after: Projection,
    pub port: Vec<AdviceItem>,
}

/// Picks up to `budget` delegated calls to port, largest Δ(s) first.
pub fn advise(
    w: &Workload,
    delegated: &BTreeSet<String>,
    params: &Params,
    budget: usize,
) -> Result<Advice, ModelError> {
    let before = refined(w, delegated, params)?;
    let mut gains: Vec<(f64, &str, u64)> = w
        .calls
        .iter()
        .filter(|c| delegated.contains(&c.name))
        .map(|c| {
            let f = 2.0 * params.fc_of(&c.name) * c.n as f64;
            let q = params.wait_per_call * c.n as f64;
            (
                c.g + f + q - params.g_prime_of(&c.name, c.n, c.g),
                c.name.as_str(),
                c.n,
            )
        })
        .filter(|(d, _, _)| *d > 0.0)
        .collect();
    gains.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    let mut remaining = delegated.clone();
    let mut port = Vec::new();
    for (saving, name, n) in gains.into_iter().take(budget) {
        remaining.remove(name);
        let s = refined(w, &remaining, params)?.speedup;
        port.push(AdviceItem {
            name: name.to_string(),
            n,
            saving,
            speedup_after: s,
        });
    }
    let after = refined(w, &remaining, params)?;
    Ok(Advice { before, after, port })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Call;

    #[test]
    fn picks_largest_savings() {
        let c = |name: &str, n, g| Call {
            name: name.into(),
            n,
            g,
        };
        let w = Workload {
            c: 1.0,
            calls: vec![c("read", 1000, 0.01), c("write", 10, 0.01), c("openat", 1, 0.001)],
        };
        let all: BTreeSet<String> = w.calls.iter().map(|c| c.name.clone()).collect();
        let a = advise(&w, &all, &Params::new(2.0, 1e-5), 1).ok();
        assert_eq!(a.as_ref().map(|a| a.port[0].name.as_str()), Some("read"));
        assert!(a.is_some_and(|a| a.after.speedup > a.before.speedup));
    }
}
