//! Issue #15: the address-space calls that make the host flush TLBs are served on the calling
//! vCPU's own thread with the proxy parked (`aside.rs`, `syscall/onvcpu.rs`): on this VM a flush
//! waits ≈ 1–3 ms for a CPU that is busy, and the proxy spins on one. Counts and outputs only, no
//! timing.
//!
//! `tests/c/flushcalls.c` takes access away with mprotect, drops pages, maps a file over
//! anonymous data, mremaps, unmaps and maps again, shrinks and grows the break and forks, checking
//! every result: its output must be native's with the calls handed to the vCPU (the default),
//! with `MULTIOS_LWK_ASIDE=off` and `=resume`, and with the proxy parked at every fault
//! (`MULTIOS_LWK_FAULT_PARK=1`, `faultwatch.rs`), in every backend and build; and the counters
//! must say where the calls went.
//!
//! Needs /dev/kvm and gcc: FAILS (never skips) without them.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

#[path = "common/sidebyside.rs"]
mod sidebyside;
use sidebyside::{assert_same, build_c, require_kvm};

const ROUNDS: &str = "12";

#[test]
fn issue_15_flushing_calls_give_native_results_on_the_vcpu_and_on_the_proxy() {
    require_kvm("issue #15");
    let dir = Scratch::new("multios-issue-15", "flushcalls");
    for flags in sidebyside::BUILDS {
        let prog = build_c(dir.path(), "flushcalls", flags);
        for variant in sidebyside::VARIANTS {
            let extra: [&[(&str, &str)]; 4] = [
                &[],
                &[("MULTIOS_LWK_ASIDE", "off")],
                &[("MULTIOS_LWK_ASIDE", "resume")],
                &[("MULTIOS_LWK_FAULT_PARK", "1")],
            ];
            for more in extra {
                let mut env = variant.to_vec();
                env.extend_from_slice(more);
                let o = assert_same(&prog, &[ROUNDS], &env);
                let out = String::from_utf8_lossy(&o.stdout);
                assert!(out.contains("wrong 0"), "{flags:?} {env:?}: {out}");
            }
        }
    }
}

#[test]
fn issue_15_flushing_calls_are_served_on_the_vcpu_with_the_proxy_parked() {
    require_kvm("issue #15");
    let dir = Scratch::new("multios-issue-15", "flushcounts");
    let prog = build_c(dir.path(), "flushcalls", &["-O1", "-static"]);
    let mut cfg = multios_lwk::Config::new(prog.to_str().expect("utf-8 path"), &[ROUNDS]);
    cfg.quiet = true;
    let o = multios_lwk::run(&cfg).unwrap_or_else(|e| panic!("LWK run of {}: {e}", prog.display()));
    assert_eq!(o.code(), 0, "{:?}", o.notes);
    let rounds: u64 = ROUNDS.parse().expect("a number");
    let on_vcpu = |name: &str| o.costs.doorbell_calls.get(name).copied().unwrap_or(0);
    // Each round's tightening mprotect goes to the vCPU (the loosening one back does too when
    // the proxy happens to be parked then).
    assert!(on_vcpu("mprotect") >= rounds, "{:?}", o.costs.doorbell_calls);
    // Every munmap, mremap and dropping madvise of the rounds, and the brk shrinks.
    assert!(on_vcpu("munmap") >= 3 * rounds, "{:?}", o.costs.doorbell_calls);
    assert!(
        on_vcpu("mremap") >= rounds && on_vcpu("madvise") >= rounds,
        "{:?}",
        o.costs.doorbell_calls
    );
    assert!(on_vcpu("brk") >= rounds, "{:?}", o.costs.doorbell_calls);
    // Each was made with the proxy asked to park.
    assert!(o.costs.aside >= 6 * rounds, "{} asked", o.costs.aside);
}
