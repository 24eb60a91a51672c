//! The projection of `bench multiverse` (issue #13): the LWK's overhead over a native run as the
//! sum, over every kind of event that leaves the guest, of how many the run had times what one
//! costs. The counts come from the run (the LWK's `--summary`: calls served locally and
//! delegated, doorbell exits, KVM's shadow faults, invalidations; the native run's page faults);
//! every cost comes from a microbenchmark measured in the same `bench multiverse` invocation
//! (`micro.rs`), never fitted to the runs. Multiverse's template (§V): spectral-norm's forwarded
//! events × 1500 cycles = 112 M cycles, 51 ms, next to the measured overhead.

use serde::Serialize;

/// What one event of each kind costs, ns (each from a microbenchmark, `micro.rs`).
#[derive(Debug, Clone, Default, Serialize)]
pub struct EventCosts {
    /// A native system call (getppid on the host).
    pub native_call_ns: f64,
    /// A call the LWK delegates, through the ring from a rewritten site.
    pub delegated_ns: f64,
    /// A call the LWK serves itself, through the ring from a rewritten site.
    pub local_ns: f64,
    /// A delegated call through the doorbell (an exit to the vCPU's thread) instead of the ring.
    pub doorbell_ns: f64,
    /// A native first touch of a page of fresh anonymous memory (the page fault, per 4 KiB).
    pub native_touch_ns: f64,
    /// The same in the LWK, per 4 KiB (KVM's fault, the host's 2 MiB page, its zeroing).
    pub lwk_touch_ns: f64,
    /// A KVM shadow fault on a 4 KiB guest page whose host page exists.
    pub shadow_fault_ns: f64,
    /// Start-up: an empty dynamically linked program in the LWK minus natively.
    pub startup_ns: f64,
    /// An mprotect that takes access away in the LWK minus natively (a range invalidation).
    pub invalidation_ns: f64,
}

/// How many events of each kind a run had.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Counts {
    pub local_calls: f64,
    pub delegated_calls: f64,
    /// Calls that took the doorbell exit (KVM's `mmio_exits`).
    pub doorbells: f64,
    /// KVM's `pf_fixed`: shadow entries it built on faults.
    pub shadow_faults: f64,
    /// Range invalidations and memslot flushes of tightening mprotects.
    pub invalidations: f64,
    pub flushes: f64,
    /// The native run's page faults (minor + major).
    pub native_faults: f64,
}

impl Counts {
    /// The counts in an `lwk run --summary` JSON (and the native run's faults).
    pub fn from_summary(v: &serde_json::Value, native_faults: f64) -> Counts {
        let num = |p: &[&str]| {
            p.iter()
                .try_fold(v, |v, k| v.get(k))
                .and_then(serde_json::Value::as_f64)
                .unwrap_or(0.0)
        };
        Counts {
            local_calls: num(&["local_calls"]),
            delegated_calls: num(&["delegated_calls"]),
            doorbells: num(&["costs", "kvm", "mmio_exits"]),
            shadow_faults: num(&["costs", "kvm", "pf_fixed"]),
            invalidations: num(&["costs", "invalidations"]),
            flushes: num(&["costs", "flushes"]),
            native_faults,
        }
    }

    /// The element-wise median of `runs`.
    pub fn median(runs: &[Counts]) -> Counts {
        let m = |f: fn(&Counts) -> f64| {
            multios_stats::median(&runs.iter().map(f).collect::<Vec<_>>()).unwrap_or(f64::NAN)
        };
        Counts {
            local_calls: m(|c| c.local_calls),
            delegated_calls: m(|c| c.delegated_calls),
            doorbells: m(|c| c.doorbells),
            shadow_faults: m(|c| c.shadow_faults),
            invalidations: m(|c| c.invalidations),
            flushes: m(|c| c.flushes),
            native_faults: m(|c| c.native_faults),
        }
    }
}

/// One term of the projection.
#[derive(Debug, Clone, Serialize)]
pub struct Term {
    pub event: &'static str,
    pub count: f64,
    /// What one costs more than natively, ns.
    pub each_ns: f64,
    pub total_s: f64,
}

/// The projected overhead and its terms.
#[derive(Debug, Clone, Serialize)]
pub struct Projection {
    pub terms: Vec<Term>,
    pub total_s: f64,
}

/// Projects the overhead of a run with `n` events at costs `c`.
///
/// Terms: start-up (once); every call leaves the guest (the ring's round trip instead of a
/// native call, a delegated one also the host call the native run would make anyway, so the
/// difference); calls that took the doorbell pay the exit instead of the ring; KVM's shadow
/// faults; first touches of memory (the LWK's per-page cost against the native fault, for as
/// many pages as the native run faulted: the same memory, touched once either way); range
/// invalidations. Memslot flushes (multi-threaded guests' mprotect) have no microbenchmark
/// here: a run that had any says so in `flushes`, unprojected.
pub fn project(n: &Counts, c: &EventCosts) -> Projection {
    let terms = vec![
        term("start-up", 1.0, c.startup_ns),
        term("local call", n.local_calls, c.local_ns - c.native_call_ns),
        term(
            "delegated call",
            n.delegated_calls,
            c.delegated_ns - c.native_call_ns,
        ),
        term("doorbell exit", n.doorbells, c.doorbell_ns - c.delegated_ns),
        term("shadow fault", n.shadow_faults, c.shadow_fault_ns),
        term("first touch", n.native_faults, c.lwk_touch_ns - c.native_touch_ns),
        term("invalidation", n.invalidations, c.invalidation_ns),
    ];
    let total_s = terms.iter().map(|t| t.total_s).sum();
    Projection { terms, total_s }
}

fn term(event: &'static str, count: f64, each_ns: f64) -> Term {
    Term {
        event,
        count,
        each_ns,
        total_s: count * each_ns * 1e-9,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_multiply_counts_by_costs_and_add_up() {
        let c = EventCosts {
            native_call_ns: 100.0,
            delegated_ns: 600.0,
            local_ns: 300.0,
            doorbell_ns: 20_600.0,
            native_touch_ns: 2000.0,
            lwk_touch_ns: 1000.0,
            shadow_fault_ns: 3000.0,
            startup_ns: 30e6,
            invalidation_ns: 50_000.0,
        };
        let n = Counts {
            local_calls: 1000.0,
            delegated_calls: 2000.0,
            doorbells: 100.0,
            shadow_faults: 10.0,
            invalidations: 2.0,
            flushes: 0.0,
            native_faults: 1000.0,
        };
        let p = project(&n, &c);
        let want = 30e6 + 1000.0 * 200.0 + 2000.0 * 500.0 + 100.0 * 20_000.0 + 10.0 * 3000.0
            - 1000.0 * 1000.0
            + 2.0 * 50_000.0;
        assert!(
            (p.total_s - want * 1e-9).abs() < 1e-12,
            "{} vs {}",
            p.total_s,
            want * 1e-9
        );
        assert_eq!(p.terms.len(), 7);
        let v = serde_json::json!({"local_calls": 5, "delegated_calls": 7,
            "costs": {"kvm": {"mmio_exits": 3, "pf_fixed": 11}, "invalidations": 1, "flushes": 0}});
        let k = Counts::from_summary(&v, 9.0);
        assert_eq!(
            (k.local_calls, k.delegated_calls, k.doorbells, k.shadow_faults),
            (5.0, 7.0, 3.0, 11.0)
        );
        assert_eq!(Counts::median(&[k, k, n]).delegated_calls, 7.0);
    }
}
