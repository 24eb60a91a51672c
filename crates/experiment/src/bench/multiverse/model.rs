//! The projection of `bench multiverse` (issue #13): the LWK's overhead over a native run as the
//! sum, over every kind of event that leaves the guest, of how many the run had times what one
//! costs. The counts come from the run (the LWK's `--summary`: calls served locally and
//! delegated, doorbell exits, KVM's shadow faults, invalidations; the native run's page faults);
//! every cost comes from a microbenchmark measured in the same `bench multiverse` invocation
//! (`micro.rs`), never fitted to the runs. Multiverse's template (§V): spectral-norm's forwarded
//! events × 1500 cycles = 112 M cycles, 51 ms, next to the measured overhead.
//!
//! Three terms came from looking where the time goes (issue #13), each switchable ([`Terms`]):
//! * `proxy wake-up`: a call made after the proxy parked rings the doorbell and wakes it, and
//!   the calls that follow in the same burst (a runtime's clock read, poll, write) wait for it
//!   to run again. Its count is the doorbells that woke the parked proxy
//!   (`costs.threads.proxy_wakes`), its cost what a burst of calls after a park costs beyond its
//!   calls through the ring and its doorbell exits (`csrc/parkbench.c`).
//! * `busy sibling`: the guest computes slower while the proxy polls on the other CPU (a busy
//!   sibling: shared core resources or power budget of this VM's two vCPUs). Its count is the
//!   proxy's time on its CPU (the LWK's `costs.threads.proxy_run_s`, at most the vCPUs' own), its
//!   cost per second 1 − γ (0 when γ ≥ 1), γ the compute rate beside a spinner over the rate
//!   alone, measured by AAM's beside microbenchmark on the same two CPUs.
//! * `run-queue wait`: a measured time, not a priced event: how much longer the vCPU threads
//!   waited for their CPU than the native program was off its CPU (the scheduler's own count,
//!   `costs.threads.vcpu_wait_s`, against the native wall − user − sys). The LWK occupies two
//!   CPUs where the native program occupies one, so on a machine with other load it is the LWK
//!   that waits; the term says how much of the measured overhead that was.

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
    /// A KVM shadow fault on a 4 KiB guest page whose host page exists, per page touched (its
    /// prefetch fills the neighbours' entries too).
    pub shadow_fault_ns: f64,
    /// One KVM fault whose host pages exist, with the 7 neighbours of its group its prefetch
    /// fills, per fault: one page of each group of 8 touched (`touchbench.c`).
    pub kvm_fault_ns: f64,
    /// Start-up: an empty dynamically linked program in the LWK minus natively.
    pub startup_ns: f64,
    /// An mprotect that takes access away in the LWK minus natively (a range invalidation).
    pub invalidation_ns: f64,
    /// The compute rate beside a spinner on the proxy's CPU over the rate alone (the `busy
    /// sibling` term costs 1 − γ per second the proxy ran).
    pub gamma: f64,
    /// A burst of calls after the proxy parked, beyond its calls and doorbell exits.
    pub wake_ns: f64,
}

/// Which of the terms that are not events the projection includes (the event terms always are).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Terms {
    /// `proxy wake-up`: the doorbells that woke the parked proxy × a burst's extra cost.
    pub wake: bool,
    /// `busy sibling`: the proxy's CPU time × (1 − γ).
    pub sibling: bool,
    /// `run-queue wait`: the vCPUs' extra wait for a CPU, measured.
    pub wait: bool,
}

impl Default for Terms {
    fn default() -> Self {
        Terms {
            wake: true,
            sibling: true,
            wait: true,
        }
    }
}

impl Terms {
    /// The event terms alone.
    pub const EVENTS: Terms = Terms {
        wake: false,
        sibling: false,
        wait: false,
    };

    /// Parses `--terms`: a comma-separated list of `wake`, `sibling`, `wait`, `events` (always
    /// on), `all`, `none`.
    pub fn parse(list: &str) -> Result<Terms, String> {
        let mut t = Terms::EVENTS;
        for w in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
            match w {
                "wake" => t.wake = true,
                "sibling" => t.sibling = true,
                "wait" => t.wait = true,
                "all" => t = Terms::default(),
                "events" | "none" => {}
                other => {
                    return Err(format!(
                    "--terms {list}: unknown term `{other}` (one of events, wake, sibling, wait, all, none)"
                ))
                }
            }
        }
        Ok(t)
    }
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
    /// KVM's 4 KiB shadow leaves at the end of the run (`pages_4k`): those it built on faults
    /// and those its prefetch filled.
    pub shadow_leaves: f64,
    /// Range invalidations and memslot flushes of tightening mprotects.
    pub invalidations: f64,
    pub flushes: f64,
    /// The native run's page faults (minor + major).
    pub native_faults: f64,
    /// Host page faults on the LWK's vCPU threads (those of KVM's faults that made the host
    /// allocate) and on the proxy (`costs.threads`), and the pages the proxy populated ahead of
    /// the guest (`costs.populate.pages`, off the guest's path).
    pub vcpu_faults: f64,
    pub proxy_faults: f64,
    pub populated: f64,
    /// The LWK's thread times (`costs.threads`): the vCPU threads on a CPU and waiting for one,
    /// the proxy on its CPU, polling and parked, seconds.
    pub vcpu_run_s: f64,
    pub vcpu_wait_s: f64,
    pub proxy_run_s: f64,
    /// The proxy runnable but waiting for its CPU: calls made meanwhile spin their budget and
    /// ring the doorbell.
    pub proxy_wait_s: f64,
    pub proxy_poll_s: f64,
    pub proxy_parked_s: f64,
    /// Doorbells that woke the parked proxy.
    pub proxy_wakes: f64,
    /// The native run's time off its CPU: wall − user − sys, seconds.
    pub native_off_cpu_s: f64,
    /// The run as `lwk run` timed it (`wall_s`: from its start to the guest's end, with the
    /// start-up) and its start-up, seconds; the process's wall less `run_wall_s` is the time
    /// outside the run (exec, teardown, exit).
    pub run_wall_s: f64,
    pub startup_s: f64,
}

impl Counts {
    /// The counts in an `lwk run --summary` JSON (and the native run's faults and time off its
    /// CPU).
    pub fn from_summary(v: &serde_json::Value, native_faults: f64, native_off_cpu_s: f64) -> Counts {
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
            shadow_leaves: num(&["costs", "kvm", "pages_4k"]),
            invalidations: num(&["costs", "invalidations"]),
            flushes: num(&["costs", "flushes"]),
            native_faults,
            vcpu_faults: num(&["costs", "threads", "vcpu_faults"]),
            proxy_faults: num(&["costs", "threads", "proxy_faults"]),
            populated: num(&["costs", "populate", "pages"]),
            vcpu_run_s: num(&["costs", "threads", "vcpu_run_s"]),
            vcpu_wait_s: num(&["costs", "threads", "vcpu_wait_s"]),
            proxy_run_s: num(&["costs", "threads", "proxy_run_s"]),
            proxy_wait_s: num(&["costs", "threads", "proxy_wait_s"]),
            proxy_poll_s: num(&["costs", "threads", "proxy_poll_s"]),
            proxy_parked_s: num(&["costs", "threads", "proxy_parked_s"]),
            proxy_wakes: num(&["costs", "threads", "proxy_wakes"]),
            native_off_cpu_s,
            run_wall_s: num(&["wall_s"]),
            startup_s: num(&["startup_s"]),
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
            shadow_leaves: m(|c| c.shadow_leaves),
            invalidations: m(|c| c.invalidations),
            flushes: m(|c| c.flushes),
            native_faults: m(|c| c.native_faults),
            vcpu_faults: m(|c| c.vcpu_faults),
            proxy_faults: m(|c| c.proxy_faults),
            populated: m(|c| c.populated),
            vcpu_run_s: m(|c| c.vcpu_run_s),
            vcpu_wait_s: m(|c| c.vcpu_wait_s),
            proxy_run_s: m(|c| c.proxy_run_s),
            proxy_wait_s: m(|c| c.proxy_wait_s),
            proxy_poll_s: m(|c| c.proxy_poll_s),
            proxy_parked_s: m(|c| c.proxy_parked_s),
            proxy_wakes: m(|c| c.proxy_wakes),
            native_off_cpu_s: m(|c| c.native_off_cpu_s),
            run_wall_s: m(|c| c.run_wall_s),
            startup_s: m(|c| c.startup_s),
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
    /// Whether the projection's total includes it ([`Terms`]; event terms always).
    pub included: bool,
}

/// The projected overhead and its terms.
#[derive(Debug, Clone, Serialize)]
pub struct Projection {
    pub terms: Vec<Term>,
    pub total_s: f64,
}

/// Multiverse's model (§V), the template: the forwarded events × what one adds over a native
/// call (the paper: × 1500 cycles, 112 M cycles / 51 ms for spectral-norm), and beside it, as its
/// own named term, the fixed cost every LWK run pays whatever it forwards — start-up and exit,
/// measured in the same passes as the benchmark (`lwk run -- /bin/true` against `/bin/true`,
/// paired, with the same `lwk run` flags as the benchmark's LWK runs). The paper's Racket ran for
/// seconds on a boot-once HRT; here every run starts and tears down a VM, so the measured overhead
/// holds that constant and the paper's term alone cannot match it.
#[derive(Debug, Clone, Serialize)]
pub struct PaperModel {
    /// Calls the LWK forwarded to Linux (the run's delegated calls, median of the passes).
    pub forwarded: f64,
    /// What one forwarded call adds over a native call, ns (the Fig. 11 microbenchmark).
    pub each_ns: f64,
    /// The same in cycles at the TSC's rate (Multiverse: ≈ 1500).
    pub each_cycles: f64,
    /// The paper's term: forwarded × each.
    pub forwarding_s: f64,
    /// The fixed per-run cost: the paired median of `lwk run -- /bin/true` − `/bin/true` and its
    /// 95 % interval.
    pub fixed_s: f64,
    pub fixed_ci: Option<(f64, f64)>,
    /// forwarding + fixed.
    pub total_s: f64,
}

/// The paper's model for `forwarded` events at `each_ns`, with the fixed per-run cost `fixed_s`.
pub fn paper(
    forwarded: f64,
    each_ns: f64,
    tsc_hz: f64,
    fixed_s: f64,
    fixed_ci: Option<(f64, f64)>,
) -> PaperModel {
    let forwarding_s = forwarded * each_ns * 1e-9;
    PaperModel {
        forwarded,
        each_ns,
        each_cycles: each_ns * 1e-9 * tsc_hz,
        forwarding_s,
        fixed_s,
        fixed_ci,
        total_s: forwarding_s + fixed_s,
    }
}

/// Projects the overhead of a run with `n` events at costs `c`.
///
/// Terms: the fixed per-run cost (once: `startup_ns`, which `bench multiverse` sets to the
/// benchmark's image's fixed cost, [`image_fixed`], or where that is missing to the paired
/// `lwk run -- /bin/true` − `/bin/true`); every call leaves the guest (the ring's round trip
/// instead of a native call, a delegated one also the host call the native run would make anyway, so the
/// difference); calls that took the doorbell pay the exit instead of the ring; the page faults
/// (below); range invalidations.
///
/// Page faults, each count from the run (issue #13), each price from `touchbench.c` in the same
/// invocation:
/// * every KVM fault (`pf_fixed`) pays the exit and the walk: what a fresh page's first touch
///   costs in the LWK beyond the native program's fault (the host's allocation is in both);
/// * every shadow entry KVM's prefetch filled (the 4 KiB leaves beyond the faults) pays its
///   share of a fault whose 7 neighbours were filled, beyond the exit;
/// * the host faults on the guest's path — on the vCPU threads (inside KVM's faults) and on the
///   proxy (in delegated calls while the guest waits; the pages it populated ahead, off the
///   guest's path, left out) — beyond the native program's own faults pay a native fault each
///   (fewer than natively when the proxy made them ahead: a negative term).
///
/// Before, the first touch was priced as the native run's faults × (an LWK first touch − a
/// native one) beside the shadow faults: a KVM fault counted twice, and pages the guest never
/// faulted (a neighbour filled by KVM's prefetch, a buffer a delegated read filled) priced as
/// faults. Memslot flushes (multi-threaded guests' mprotect) have no microbenchmark
/// here: a run that had any says so in `flushes`, unprojected. Then the two terms that are not
/// events (the module comment), counted in seconds, each included as `which` says.
pub fn project(n: &Counts, c: &EventCosts, which: Terms) -> Projection {
    // A KVM fault's exit and walk: a fresh first touch in the LWK less the native fault.
    let exit_ns = (c.lwk_touch_ns - c.native_touch_ns).max(0.0);
    let mut terms = vec![
        term("fixed per run (start-up, exit)", 1.0, c.startup_ns),
        term("local call", n.local_calls, c.local_ns - c.native_call_ns),
        term(
            "delegated call",
            n.delegated_calls,
            c.delegated_ns - c.native_call_ns,
        ),
        term("doorbell exit", n.doorbells, c.doorbell_ns - c.delegated_ns),
        term("KVM fault (exit, walk)", n.shadow_faults, exit_ns),
        term(
            "KVM prefetched entry",
            (n.shadow_leaves - n.shadow_faults).max(0.0),
            ((c.kvm_fault_ns - exit_ns) / 7.0).max(0.0),
        ),
        term(
            "host fault beyond native's",
            n.vcpu_faults + (n.proxy_faults - n.populated).max(0.0) - n.native_faults,
            c.native_touch_ns,
        ),
        term("invalidation", n.invalidations, c.invalidation_ns),
    ];
    let mut wake = term("proxy wake-up", n.proxy_wakes, c.wake_ns);
    wake.included = which.wake;
    let beside = n.proxy_run_s.min(n.vcpu_run_s).max(0.0);
    // A γ above 1 (the compute ran faster beside the spinner) is noise of a loaded machine: a busy
    // sibling does not speed a CPU up, so the term is never negative.
    let mut sibling = term("busy sibling (s)", beside, (1.0 - c.gamma).max(0.0) * 1e9);
    sibling.included = which.sibling;
    let waited = (n.vcpu_wait_s - n.native_off_cpu_s).max(0.0);
    let mut wait = term("run-queue wait (s, measured)", waited, 1e9);
    wait.included = which.wait;
    terms.extend([wake, sibling, wait]);
    let total_s = terms.iter().filter(|t| t.included).map(|t| t.total_s).sum();
    Projection { terms, total_s }
}

/// The fixed cost of the benchmark's own image (issue #13): what a run of the same program at a
/// trivial size (`racket PROG.rkt 1`: the same executable, boot files and libraries, next to no
/// work) costs in the LWK beyond natively, less what its own events are priced at. The rest is
/// what no event term prices: loading and rewriting the image, making and tearing down a VM of
/// that size, the process's exit with its memory — `/bin/true`'s fixed cost measured 10–15 ms
/// where a Racket run's start-up and exit took 35–45 ms more (docs/BENCHMARKS.md). It is measured
/// in the same passes as the benchmark (paired, adjacent), never fitted to the benchmark's own
/// runs; the benchmark's projection then adds its own events to it, so the boot's events, which
/// both runs have, are counted once.
#[derive(Debug, Clone, Serialize)]
pub struct ImageFixed {
    /// The trivial size's argument, and its median walls natively and in the LWK, seconds.
    pub arg: u32,
    pub native_s: f64,
    pub lwk_s: f64,
    /// Its LWK − native wall, paired (median and 95 % interval), seconds.
    pub overhead_s: f64,
    pub overhead_ci: Option<(f64, f64)>,
    /// Its own events, priced as the benchmark's are (the same terms, without a fixed cost).
    pub events_s: f64,
    /// overhead − events: the image's fixed cost, the projection's first term.
    pub fixed_s: f64,
    /// The trivial run's counts (medians of its LWK runs).
    pub counts: Counts,
}

/// The image's fixed cost from the trivial run's paired overhead and its counts, at costs `c`
/// with the terms `which` (`c.startup_ns` is not used: this replaces it).
pub fn image_fixed(
    arg: u32,
    overhead_s: f64,
    overhead_ci: Option<(f64, f64)>,
    counts: Counts,
    c: &EventCosts,
    which: Terms,
) -> ImageFixed {
    let no_fixed = EventCosts {
        startup_ns: 0.0,
        ..c.clone()
    };
    let events_s = project(&counts, &no_fixed, which).total_s;
    ImageFixed {
        arg,
        native_s: f64::NAN,
        lwk_s: f64::NAN,
        overhead_s,
        overhead_ci,
        events_s,
        fixed_s: overhead_s - events_s,
        counts,
    }
}

fn term(event: &'static str, count: f64, each_ns: f64) -> Term {
    Term {
        event,
        count,
        each_ns,
        total_s: count * each_ns * 1e-9,
        included: true,
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
            lwk_touch_ns: 5000.0,
            shadow_fault_ns: 400.0,
            kvm_fault_ns: 3700.0,
            startup_ns: 30e6,
            invalidation_ns: 50_000.0,
            gamma: 0.9,
            wake_ns: 40_000.0,
        };
        let n = Counts {
            local_calls: 1000.0,
            delegated_calls: 2000.0,
            doorbells: 100.0,
            shadow_faults: 10.0,
            shadow_leaves: 50.0,
            invalidations: 2.0,
            flushes: 0.0,
            native_faults: 1000.0,
            vcpu_faults: 800.0,
            proxy_faults: 300.0,
            populated: 100.0,
            ..Counts::default()
        };
        let p = project(&n, &c, Terms::default());
        // Page faults: 10 KVM faults × (5 − 2) µs, 40 prefetched entries × (3.7 − 3) / 7 µs, and
        // 800 host faults on the vCPU + the proxy's 300 less the 100 it populated ahead, less the
        // native program's 1000, × 2 µs.
        let faults = 10.0 * 3000.0 + 40.0 * 100.0 + (800.0 + 200.0 - 1000.0) * 2000.0;
        let want = 30e6 + 1000.0 * 200.0 + 2000.0 * 500.0 + 100.0 * 20_000.0 + faults + 2.0 * 50_000.0;
        assert!(
            (p.total_s - want * 1e-9).abs() < 1e-12,
            "{} vs {}",
            p.total_s,
            want * 1e-9
        );
        assert_eq!(p.terms.len(), 11);
        let v = serde_json::json!({"local_calls": 5, "delegated_calls": 7,
            "costs": {"kvm": {"mmio_exits": 3, "pf_fixed": 11, "pages_4k": 20}, "invalidations": 1, "flushes": 0,
                      "threads": {"vcpu_faults": 12, "proxy_faults": 13}, "populate": {"pages": 6}}});
        let k = Counts::from_summary(&v, 9.0, 0.0);
        assert_eq!(
            (k.local_calls, k.delegated_calls, k.doorbells, k.shadow_faults),
            (5.0, 7.0, 3.0, 11.0)
        );
        assert_eq!((k.vcpu_faults, k.proxy_faults, k.populated), (12.0, 13.0, 6.0));
        assert_eq!(k.shadow_leaves, 20.0);
        assert_eq!(Counts::median(&[k, k, n]).delegated_calls, 7.0);
    }

    #[test]
    fn issue_13_the_image_fixed_cost_is_the_trivial_runs_overhead_less_its_own_events() {
        let c = EventCosts {
            native_call_ns: 100.0,
            delegated_ns: 1100.0,
            native_touch_ns: 2000.0,
            lwk_touch_ns: 5000.0,
            startup_ns: 12e6,
            gamma: 1.0,
            ..EventCosts::default()
        };
        let tiny = Counts {
            delegated_calls: 1000.0,
            shadow_faults: 5000.0,
            shadow_leaves: 5000.0,
            ..Counts::default()
        };
        // The trivial run: 60 ms slower in the LWK; its events 1 ms of calls + 15 ms of faults.
        let f = image_fixed(1, 0.060, Some((0.055, 0.070)), tiny, &c, Terms::default());
        assert!((f.events_s - 0.016).abs() < 1e-9, "{}", f.events_s);
        assert!((f.fixed_s - 0.044).abs() < 1e-9, "{}", f.fixed_s);
        // `true`'s start-up (c.startup_ns) is not part of it: the image's replaces it.
        let again = image_fixed(
            1,
            0.060,
            None,
            tiny,
            &EventCosts {
                startup_ns: 99e6,
                ..c.clone()
            },
            Terms::default(),
        );
        assert_eq!(again.fixed_s, f.fixed_s);
        // A benchmark with twice the trivial run's events projects the fixed cost + its events:
        // the boot's events are in both runs and counted once.
        let bench = Counts {
            delegated_calls: 2000.0,
            shadow_faults: 10_000.0,
            shadow_leaves: 10_000.0,
            ..Counts::default()
        };
        let p = project(
            &bench,
            &EventCosts {
                startup_ns: f.fixed_s * 1e9,
                ..c
            },
            Terms::default(),
        );
        assert!((p.total_s - (0.044 + 0.032)).abs() < 1e-9, "{}", p.total_s);
    }

    #[test]
    fn the_papers_model_adds_the_fixed_cost_as_its_own_term() {
        // Multiverse's spectral-norm: 1500 cycles at 2.2 GHz ≈ 682 ns per event.
        let p = paper(75_000.0, 682.0, 2.2e9, 0.030, Some((0.028, 0.033)));
        assert!((p.forwarding_s - 0.05115).abs() < 1e-9, "{}", p.forwarding_s);
        assert!((p.each_cycles - 1500.4).abs() < 0.1, "{}", p.each_cycles);
        assert!((p.total_s - (0.05115 + 0.030)).abs() < 1e-9);
        assert_eq!(p.fixed_ci, Some((0.028, 0.033)));
    }

    #[test]
    fn the_sibling_and_wait_terms_count_seconds_and_switch() {
        let c = EventCosts {
            gamma: 0.9,
            wake_ns: 50_000.0,
            ..EventCosts::default()
        };
        let v = serde_json::json!({"costs": {"threads": {"vcpu_run_s": 1.0, "vcpu_wait_s": 0.3,
            "proxy_run_s": 2.0, "proxy_poll_s": 2.5, "proxy_parked_s": 0.1, "proxy_wakes": 4}}});
        let n = Counts::from_summary(&v, 0.0, 0.1);
        let all = project(&n, &c, Terms::default());
        let by = |p: &Projection, e: &str| {
            p.terms
                .iter()
                .find(|t| t.event.starts_with(e))
                .cloned()
                .expect("the term")
        };
        // The proxy's 2 s count only while a vCPU ran (1 s), at 1 − γ = 0.1 s per s.
        assert!((by(&all, "busy sibling").total_s - 0.1).abs() < 1e-9);
        // The vCPU waited 0.3 s, the native program was off its CPU 0.1 s.
        assert!((by(&all, "run-queue wait").total_s - 0.2).abs() < 1e-9);
        // 4 wakes × 50 µs.
        assert!((by(&all, "proxy wake-up").total_s - 2e-4).abs() < 1e-12);
        assert!((all.total_s - 0.3002).abs() < 1e-9);
        let none = project(&n, &c, Terms::parse("events").expect("parses"));
        assert!(none.total_s.abs() < 1e-9 && none.terms.len() == all.terms.len());
        assert!(!by(&none, "busy sibling").included && !by(&none, "run-queue wait").included);
        assert!(!by(&none, "proxy wake-up").included);
        let sib = project(&n, &c, Terms::parse("events,sibling").expect("parses"));
        assert!((sib.total_s - 0.1).abs() < 1e-9);
        assert!(Terms::parse("events,tlb").expect_err("refused").contains("tlb"));
        // Native waited longer than the LWK: no negative wait.
        let calm = Counts::from_summary(&v, 0.0, 1.0);
        assert_eq!(
            by(&project(&calm, &c, Terms::default()), "run-queue wait").total_s,
            0.0
        );
    }
}
