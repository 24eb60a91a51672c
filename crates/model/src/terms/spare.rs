//! The `overlap` and `cache` terms (issue #15): what a delegated call spares the compute core.
//!
//! A call's time g(s) is the kernel's work plus, for calls that block, waiting. Delegated, the work
//! runs on the delegate's core, and two things the paper's model does not see follow:
//!
//! - **overlap** (ω): part of the call's native time is no longer on the caller's clock — the
//!   delegate's core runs the call with the kernel's code and data warm in its caches, and work the
//!   kernel defers (per-CPU workers, softirqs, freeing) lands on the delegate's CPU, in parallel
//!   with the program, not on the compute core. Measured per class of call (data in, data out,
//!   other) as a fraction of the call's native time; applied to the delegated calls' time:
//!   t_d −= Σ_k ω_k · G_k, where G_k = Σ g(s) over the delegated calls of class k.
//! - **cache** (a γ for delegation): after a local call the compute core refills what the kernel's
//!   footprint evicted from its caches and TLB; after a delegated one it does not (FlexSC's
//!   effect) — but it may lose its caches another way (a mechanism that leaves the CPU to other
//!   work while the call is served). Measured as r, the refill spared per delegated call whatever
//!   it does (the mechanism's own effect, from a null call), and ρ_k, the refill spared per second
//!   of native call time beyond a null call, per class; the spared compute time
//!   S = r · n_D + Σ_k ρ_k · G_k, bounded by what the microbenchmark saw at most
//!   (C·(1 − 1/γ_high) spared, C·(1/γ_low − 1) lost), comes off C: the compute part is
//!   (C − S)/γ, i.e. C/(γ·γ_d) with γ_d = C / (C − S).
//!
//!   **Bounded by what the workload can lose** (`Cache::chase_s`): the microbenchmark's r and ρ
//!   are what the microbenchmark's working set (half the L2 since 2026-11-27: at the L2's own
//!   size the chase measures its own LRU cliff), traversed warm in X seconds (the native pointer
//!   chase after no call), loses or is spared after one call. A program that computes only g =
//!   C / calls between two calls (its profile) re-touches at most what it reaches in g before its
//!   next call, so it cannot lose or be spared the refill of more than that share of the
//!   microbenchmark's working set: S is scaled by φ = min(1, g / X) ([`share_reached`]), before
//!   the measured gains bound it. Both g and X are measured (the profile, the same
//!   microbenchmark), nothing is fitted; with X unknown (0) φ is 1, the unbounded term.
//!
//! Calls that wait by design (wait4, poll, futex, nanosleep, fsync, …) are left out of both: their
//! time is not the kernel's work.

use crate::Projection;

/// What a call's kernel time is mostly made of, as far as the caches are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallClass {
    /// The kernel copies data to the caller (read, recvmsg, getdents64, …).
    DataIn,
    /// The kernel takes data from the caller (write, sendmsg, …).
    DataOut,
    /// The call waits by design; its time is not the kernel's work.
    Wait,
    /// Everything else (open, stat, mmap, getppid, …).
    Other,
}

const DATA_IN: &[&str] = &[
    "read",
    "pread64",
    "readv",
    "preadv",
    "preadv2",
    "recvfrom",
    "recvmsg",
    "recvmmsg",
    "getdents",
    "getdents64",
];
const DATA_OUT: &[&str] = &[
    "write",
    "pwrite64",
    "writev",
    "pwritev",
    "pwritev2",
    "sendto",
    "sendmsg",
    "sendmmsg",
    "sendfile",
    "copy_file_range",
    "splice",
    "tee",
    "vmsplice",
];
const WAIT: &[&str] = &[
    "wait4",
    "waitid",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "epoll_wait",
    "epoll_pwait",
    "epoll_pwait2",
    "futex",
    "futex_waitv",
    "nanosleep",
    "clock_nanosleep",
    "pause",
    "rt_sigsuspend",
    "rt_sigtimedwait",
    "accept",
    "accept4",
    "msgrcv",
    "semop",
    "semtimedop",
    "io_getevents",
    "io_pgetevents",
    "fsync",
    "fdatasync",
    "sync",
    "syncfs",
    "sync_file_range",
    "sched_yield",
    "flock",
];

/// The class of system call `name`.
pub fn class_of(name: &str) -> CallClass {
    if DATA_IN.contains(&name) {
        CallClass::DataIn
    } else if DATA_OUT.contains(&name) {
        CallClass::DataOut
    } else if WAIT.contains(&name) {
        CallClass::Wait
    } else {
        CallClass::Other
    }
}

/// One value per class of call that does work (the waiting class has none).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct ByClass {
    pub data_in: f64,
    pub data_out: f64,
    pub other: f64,
}

impl ByClass {
    /// Σ_k self_k · g_k.
    pub fn dot(&self, g: &ByClass) -> f64 {
        self.data_in * g.data_in + self.data_out * g.data_out + self.other * g.other
    }
}

/// The `cache` term's measured values.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct Cache {
    /// r: compute seconds spared per delegated call, whatever the call (negative: lost).
    pub per_call_s: f64,
    /// ρ_k: compute time spared per second of native call time beyond a null call, per class.
    pub rho: ByClass,
    /// The largest compute gain the microbenchmark saw (≥ 1): S ≤ C·(1 − 1/gain_high).
    pub gain_high: f64,
    /// The smallest (≤ 1; below 1 the delegation cost compute time): S ≥ −C·(1/gain_low − 1).
    pub gain_low: f64,
    /// X: seconds the microbenchmark's working set takes to traverse warm (its native pointer
    /// chase after no call). The term is scaled by φ = min(1, (C / calls) / X) per workload
    /// ([`share_reached`]); 0 (or not a positive time): φ = 1, unbounded.
    pub chase_s: f64,
}

/// φ: the share of the microbenchmark's working set a program that computes `c` seconds over
/// `calls` calls reaches between two of them, min(1, (c / calls) / chase_s); 1 when `chase_s` is
/// not a positive time or the program makes no call (nothing to bound by).
pub fn share_reached(c: f64, calls: u64, chase_s: f64) -> f64 {
    if !(chase_s.is_finite() && chase_s > 0.0) || calls == 0 || !c.is_finite() {
        return 1.0;
    }
    (c.max(0.0) / calls as f64 / chase_s).min(1.0)
}

/// G_k: Σ g(s) over the delegated calls of each working class.
pub fn delegated_time(p: &Projection) -> ByClass {
    let mut g = ByClass::default();
    for b in p.breakdown.iter().filter(|b| b.delegated) {
        match class_of(&b.name) {
            CallClass::DataIn => g.data_in += b.g,
            CallClass::DataOut => g.data_out += b.g,
            CallClass::Other => g.other += b.g,
            CallClass::Wait => {}
        }
    }
    g
}

/// The `overlap` term: seconds of the delegated calls' time off the caller's clock, Σ_k ω_k·G_k,
/// each ω clamped to [−1, 1].
pub fn overlap_s(p: &Projection, omega: &ByClass) -> f64 {
    let c = |v: f64| v.clamp(-1.0, 1.0);
    ByClass {
        data_in: c(omega.data_in),
        data_out: c(omega.data_out),
        other: c(omega.other),
    }
    .dot(&delegated_time(p))
}

/// The `cache` term: compute seconds spared (negative: lost), φ·(r·n_D + Σ_k ρ_k·G_k) within the
/// measured gains (φ: [`share_reached`] of the projection's C over its calls).
pub fn cache_saving_s(p: &Projection, cache: &Cache) -> f64 {
    let phi = share_reached(p.c, p.total_calls, cache.chase_s);
    let s = phi * (cache.per_call_s * p.delegated_calls as f64 + cache.rho.dot(&delegated_time(p)));
    let hi = p.c * (1.0 - 1.0 / cache.gain_high.max(1.0));
    let lo = -p.c * (1.0 / cache.gain_low.clamp(1e-3, 1.0) - 1.0);
    s.clamp(lo, hi)
}

/// The γ for delegation the `cache` term amounts to for `p`: C / (C − S) (1 when C = 0).
pub fn gamma_delegation(p: &Projection, cache: &Cache) -> f64 {
    let s = cache_saving_s(p, cache);
    if p.c > 0.0 && p.c > s {
        p.c / (p.c - s)
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{refined, Call, Params, Workload};
    use std::collections::BTreeSet;

    fn projection() -> Projection {
        let w = Workload {
            c: 1.0,
            calls: vec![
                Call {
                    name: "read".into(),
                    n: 1000,
                    g: 0.2,
                },
                Call {
                    name: "write".into(),
                    n: 1000,
                    g: 0.1,
                },
                Call {
                    name: "wait4".into(),
                    n: 10,
                    g: 0.5,
                },
                Call {
                    name: "openat".into(),
                    n: 100,
                    g: 0.05,
                },
            ],
        };
        let d: BTreeSet<String> = ["read", "write", "wait4"].iter().map(|s| s.to_string()).collect();
        refined(&w, &d, &Params::new(1.0, 1e-6)).expect("projects")
    }

    #[test]
    fn issue_15_classes_and_delegated_time_leave_waits_and_local_calls_out() {
        assert_eq!(class_of("pread64"), CallClass::DataIn);
        assert_eq!(class_of("writev"), CallClass::DataOut);
        assert_eq!(class_of("wait4"), CallClass::Wait);
        assert_eq!(class_of("openat"), CallClass::Other);
        let g = delegated_time(&projection());
        // openat is local, wait4 waits: neither counts.
        assert_eq!(
            g,
            ByClass {
                data_in: 0.2,
                data_out: 0.1,
                other: 0.0
            }
        );
    }

    #[test]
    fn issue_15_overlap_is_omega_times_the_delegated_time_per_class() {
        let p = projection();
        let s = overlap_s(
            &p,
            &ByClass {
                data_in: 0.5,
                data_out: 0.2,
                other: 0.9,
            },
        );
        assert!((s - (0.5 * 0.2 + 0.2 * 0.1)).abs() < 1e-15, "{s}");
        // ω beyond ±1 is clamped: a delegated call cannot take less than no time.
        let s = overlap_s(
            &p,
            &ByClass {
                data_in: 7.0,
                data_out: -3.0,
                other: 0.0,
            },
        );
        assert!((s - (0.2 - 0.1)).abs() < 1e-15, "{s}");
    }

    #[test]
    fn issue_15_cache_saving_is_rho_times_g_within_the_measured_gains() {
        let p = projection();
        let c = Cache {
            per_call_s: 0.0,
            rho: ByClass {
                data_in: 1.0,
                data_out: 0.5,
                other: 0.0,
            },
            gain_high: 2.0,
            gain_low: 0.5,
            chase_s: 0.0,
        };
        // 1.0·0.2 + 0.5·0.1 = 0.25 s spared of C = 1 s: γ_d = 1/0.75.
        assert!((cache_saving_s(&p, &c) - 0.25).abs() < 1e-15);
        assert!((gamma_delegation(&p, &c) - 1.0 / 0.75).abs() < 1e-12);
        // r per delegated call (2010 of them: read, write, wait4) comes on top.
        let r = Cache {
            per_call_s: 10e-6,
            ..c
        };
        assert!((cache_saving_s(&p, &r) - (0.25 + 2010.0 * 10e-6)).abs() < 1e-12);
        // Bounded by C·(1 − 1/gain_high) = 0.1 s …
        let tight = Cache {
            gain_high: 1.0 / 0.9,
            ..c
        };
        assert!((cache_saving_s(&p, &tight) - 0.1).abs() < 1e-12);
        // … and a loss by C·(1/gain_low − 1) = 0.25 s.
        let loss = Cache {
            rho: ByClass {
                data_in: -10.0,
                ..c.rho
            },
            ..c
        };
        assert!(
            (cache_saving_s(
                &p,
                &Cache {
                    gain_low: 0.8,
                    ..loss
                }
            ) + 0.25)
                .abs()
                < 1e-12
        );
    }

    #[test]
    fn issue_15_cache_is_bounded_by_the_share_of_the_working_set_reached_between_calls() {
        let p = projection();
        // C = 1 s over 2 110 calls: 474 µs of compute between two calls.
        let c = Cache {
            per_call_s: -30e-6,
            rho: ByClass::default(),
            gain_high: 2.0,
            gain_low: 0.5,
            chase_s: 0.0,
        };
        let unbounded = cache_saving_s(&p, &c);
        assert!((unbounded + 2010.0 * 30e-6).abs() < 1e-12, "{unbounded}");
        // A working set traversed in 60 µs is reached whole between two calls: φ = 1.
        let whole = Cache { chase_s: 60e-6, ..c };
        assert_eq!(cache_saving_s(&p, &whole).to_bits(), unbounded.to_bits());
        // One traversed in 1 ms only 47.4 % of it: the loss scales down.
        let part = Cache { chase_s: 1e-3, ..c };
        let phi = 1.0 / 2110.0 / 1e-3;
        assert!((share_reached(1.0, 2110, 1e-3) - phi).abs() < 1e-15);
        assert!((cache_saving_s(&p, &part) - phi * unbounded).abs() < 1e-12);
        // No calls, or no X: nothing to bound by.
        assert_eq!(share_reached(1.0, 0, 1e-3), 1.0);
        assert_eq!(share_reached(1.0, 10, f64::NAN), 1.0);
        assert_eq!(share_reached(1.0, 10, -1.0), 1.0);
    }

    proptest::proptest! {
        /// The bounded term never exceeds the unbounded one in size, keeps its sign, and is the
        /// unbounded one when X is 0; with r = ρ = 0 it spares nothing whatever X.
        #[test]
        fn issue_15_the_bounded_cache_term_is_at_most_the_unbounded_one(
            r in -1e-4f64..1e-4,
            rho in -20.0f64..20.0,
            chase in 0.0f64..1e-2,
            gain_high in 1.0f64..2.0,
            gain_low in 0.3f64..1.0,
        ) {
            let p = projection();
            let unb = Cache { per_call_s: r, rho: ByClass { data_in: rho, data_out: -rho, other: 0.0 }, gain_high, gain_low, chase_s: 0.0 };
            let b = Cache { chase_s: chase, ..unb };
            let (su, sb) = (cache_saving_s(&p, &unb), cache_saving_s(&p, &b));
            proptest::prop_assert!(sb.abs() <= su.abs() + 1e-15, "{sb} {su}");
            proptest::prop_assert!(sb * su >= 0.0);
            let zero = Cache { per_call_s: 0.0, rho: ByClass::default(), ..b };
            proptest::prop_assert_eq!(cache_saving_s(&p, &zero), 0.0);
        }
    }
}
