//! Property tests of the models (issue #2, "What it must show").

use multios_model::{self as model, Call, Params, Policy, QueueParams, Workload};
use proptest::prelude::*;
use std::collections::BTreeSet;

const NAMES: [&str; 8] = [
    "read", "write", "openat", "close", "mmap", "futex", "getpid", "ioctl",
];

fn workload() -> impl Strategy<Value = Workload> {
    (
        1e-3f64..100.0,
        proptest::collection::vec((0u64..1_000_000, 0.0f64..10.0), 1..NAMES.len()),
    )
        .prop_map(|(c, calls)| Workload {
            c,
            calls: calls
                .into_iter()
                .enumerate()
                .map(|(i, (n, g))| Call {
                    name: NAMES[i].to_string(),
                    n,
                    g: if n == 0 { 0.0 } else { g },
                })
                .collect(),
        })
}

fn all(w: &Workload) -> BTreeSet<String> {
    w.calls.iter().map(|c| c.name.clone()).collect()
}

proptest! {
    #[test]
    fn issue_2_naive_bounded_by_inverse_p_and_gamma(p in 0.0f64..=1.0, gamma in 1.0f64..1000.0) {
        let s = model::naive(p, gamma).unwrap_or(f64::NAN);
        prop_assert!(s <= gamma * (1.0 + 1e-12));
        if p > 0.0 {
            prop_assert!(s <= (1.0 / p) * (1.0 + 1e-12));
        }
        prop_assert!(s >= 1.0 - 1e-12);
    }

    #[test]
    fn issue_2_naive_monotone_in_gamma(p in 0.0f64..=1.0, g1 in 0.01f64..100.0, dg in 0.0f64..100.0) {
        let a = model::naive(p, g1).unwrap_or(f64::NAN);
        let b = model::naive(p, g1 + dg).unwrap_or(f64::NAN);
        prop_assert!(b >= a * (1.0 - 1e-12));
    }

    #[test]
    fn issue_2_refined_equals_naive_without_forwarding_cost(w in workload(), gamma in 0.1f64..50.0) {
        let pr = model::refined(&w, &all(&w), &Params::new(gamma, 0.0)).ok();
        let n = model::naive(w.p(), gamma).unwrap_or(f64::NAN);
        prop_assert!(pr.is_some());
        let s = pr.map(|p| p.speedup).unwrap_or(f64::NAN);
        prop_assert!((s - n).abs() <= 1e-9 * n.max(1.0), "S_r {} vs S_n {}", s, n);
    }

    #[test]
    fn issue_2_refined_non_increasing_in_fc(w in workload(), gamma in 0.1f64..50.0, fc in 0.0f64..1e-3, dfc in 0.0f64..1e-3) {
        let d = all(&w);
        let a = model::refined(&w, &d, &Params::new(gamma, fc)).map(|p| p.speedup).unwrap_or(f64::NAN);
        let b = model::refined(&w, &d, &Params::new(gamma, fc + dfc)).map(|p| p.speedup).unwrap_or(f64::NAN);
        prop_assert!(b <= a * (1.0 + 1e-12));
    }

    #[test]
    fn issue_2_refined_non_increasing_in_forwarded_set(w in workload(), gamma in 0.1f64..50.0, fc in 0.0f64..1e-3, mask in any::<u8>(), extra in any::<u8>()) {
        let small: BTreeSet<String> = w.calls.iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, c)| c.name.clone()).collect();
        let mut big = small.clone();
        big.extend(w.calls.iter().enumerate().filter(|(i, _)| extra & (1 << i) != 0).map(|(_, c)| c.name.clone()));
        let p = Params::new(gamma, fc);
        let a = model::refined(&w, &small, &p).map(|p| p.speedup).unwrap_or(f64::NAN);
        let b = model::refined(&w, &big, &p).map(|p| p.speedup).unwrap_or(f64::NAN);
        prop_assert!(b <= a * (1.0 + 1e-12));
    }

    #[test]
    fn issue_2_fit_inverts_predict(w in workload(), gamma in 0.1f64..50.0, fc in 0.0f64..1e-4, frac in 0.0f64..=1.0) {
        let pol = Policy::fraction(model::Order::LeastFrequent, frac).ok();
        prop_assume!(pol.is_some());
        let d = pol.map(|p| p.delegated(&w)).unwrap_or_default();
        let params = Params::new(gamma, fc);
        let s = model::refined(&w, &d, &params).map(|p| p.speedup).unwrap_or(f64::NAN);
        let back = model::fit_gamma_refined(&w, &d, &params, s);
        // Where C is a vanishing share of t_d, γ is ill-conditioned; require a visible compute share.
        let share = (w.c / gamma) / model::refined(&w, &d, &params).map(|p| p.t_d).unwrap_or(1.0);
        prop_assume!(share > 1e-6);
        let g = back.unwrap_or(f64::NAN);
        prop_assert!((g - gamma).abs() <= 1e-6 * gamma / share.min(1.0), "fit {} vs {}", g, gamma);
    }

    #[test]
    fn issue_2_mm1_equals_mmc_with_one_server(lambdas in proptest::collection::vec(0.0f64..1000.0, 1..8), mu_extra in 1.0f64..1e5) {
        let lambda: f64 = lambdas.iter().sum();
        let mu = lambda + mu_extra;
        let r = model::mmc(&QueueParams { lambdas, mu, servers: 1 }).ok();
        let w = r.map(|r| r.wait).unwrap_or(f64::NAN);
        let closed = 1.0 / (mu - lambda) - 1.0 / mu; // eq. 13
        prop_assert!((w - closed).abs() <= 1e-9 * closed.max(1e-12), "{} vs {}", w, closed);
    }

    #[test]
    fn issue_2_more_delegates_never_wait_longer(lambda in 1.0f64..1000.0, mu_extra in 1.0f64..1000.0, c in 1u32..16) {
        let mu = lambda + mu_extra;
        let w = |c| model::mmc(&QueueParams { lambdas: vec![lambda], mu, servers: c }).map(|r| r.wait).unwrap_or(f64::NAN);
        prop_assert!(w(c + 1) <= w(c) * (1.0 + 1e-12));
    }
}

proptest! {
    #[test]
    fn issue_16_counts_past_u64_are_refused_not_wrapped(a in (u64::MAX / 2 + 1)..=u64::MAX, b in (u64::MAX / 2 + 1)..=u64::MAX, fc in 0.0f64..1e-3, mask in 0u8..4) {
        let w = Workload {
            c: 1.0,
            calls: vec![
                Call { name: "read".into(), n: a, g: 1.0 },
                Call { name: "write".into(), n: b, g: 1.0 },
            ],
        };
        let d: BTreeSet<String> = ["read", "write"].iter().enumerate().filter(|(i, _)| mask & (1 << i) != 0).map(|(_, n)| n.to_string()).collect();
        let r = model::refined(&w, &d, &Params::new(2.0, fc));
        prop_assert!(matches!(r, Err(model::ModelError::CountOverflow { .. })), "{:?}", r.map(|p| p.total_calls));
        let q = QueueParams::from_workload(&w, &all(&w), &[], 1.0, 1);
        prop_assert!(matches!(q, Err(model::ModelError::CountOverflow { .. })), "{:?}", q.map(|q| q.lambdas));
    }

    #[test]
    fn issue_16_zero_workload_is_refused(n in proptest::collection::vec(0u64..1000, 0..NAMES.len()), gamma in 0.1f64..50.0, fc in 0.0f64..1e-3) {
        let w = Workload {
            c: 0.0,
            calls: n.iter().enumerate().map(|(i, &n)| Call { name: NAMES[i].into(), n, g: 0.0 }).collect(),
        };
        let r = model::refined(&w, &all(&w), &Params::new(gamma, fc));
        prop_assert!(matches!(r, Err(model::ModelError::EmptyWorkload)), "{:?}", r.map(|p| p.speedup));
        let msg = model::ModelError::EmptyWorkload.to_string();
        prop_assert!(msg.contains("--compute"));
    }

    #[test]
    fn issue_16_accepted_workloads_give_a_finite_speedup(w in workload(), gamma in 0.1f64..50.0, fc in 0.0f64..1e-3) {
        let s = model::refined(&w, &all(&w), &Params::new(gamma, fc)).map(|p| p.speedup);
        prop_assert!(s.as_ref().is_ok_and(|s| s.is_finite() && *s > 0.0), "{:?}", s);
    }
}
