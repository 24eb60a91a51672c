//! Issue #13: the guest's first touches of fresh memory (docs/BENCHMARKS.md, "The guest's first
//! touches"). Counts only, no timing.
//!
//! * **Populating ahead** (`populate.rs`, `--populate`): the proxy makes the host pages behind
//!   new anonymous memory (mmap, brk growth) between calls, so the guest's first touch finds them
//!   and KVM's fault fills the shadow entries of the neighbours too, instead of one KVM fault
//!   and one host allocation per page. Fresh pages read zero, keep what is written, and read
//!   zero again after munmap and a new mapping — with it, without it, and with a cap smaller
//!   than the mappings — and the counters show the batching: fewer KVM faults and fewer host
//!   allocations on the vCPU's thread.
//! * **Populating at map time** (`atmap.rs`, `--populate-at-map`, on by default): the head of
//!   each new anonymous range (mmap, brk growth) is populated in the call that makes it. The same
//!   checks, and fewer KVM faults and vCPU host faults than with it off.
//! * **Where the pages are** (`residency.rs`): the summary's `costs.areas` names each area of
//!   the guest with its pages that have a host page behind them.
//!
//! Needs /dev/kvm and gcc: FAILS (never skips) without them.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

#[path = "common/sidebyside.rs"]
mod sidebyside;
use sidebyside::{assert_same, build_c, require_kvm};

use std::sync::Mutex;

/// The tests run one after the other: each reads counters another LWK run would disturb.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// MiB mapped (and half of it as brk growth) and calls made between mapping and touching.
const MIB: &str = "16";
const CALLS: &str = "20000";

/// An LWK run of `prog` populating ahead up to `cap` bytes a range and at map time up to
/// `at_map` bytes a range (0: off).
fn run_lwk(prog: &std::path::Path, cap: u64, at_map: u64, resident: bool) -> multios_lwk::Outcome {
    let mut cfg = multios_lwk::Config::new(prog.to_str().expect("utf-8 path"), &[MIB, CALLS]);
    cfg.quiet = true;
    cfg.populate_cap = cap;
    cfg.populate_at_map = at_map;
    // What each test counts is its own setting's: nothing made ahead of the next mappings
    // (`issue_13_populate_next.rs` tests that).
    cfg.populate_next = 0;
    cfg.count_resident = resident;
    let o = multios_lwk::run(&cfg).unwrap_or_else(|e| panic!("LWK run of {}: {e}", prog.display()));
    assert_eq!(o.code(), 0, "{:?}", o.notes);
    o
}

#[test]
fn issue_13_fresh_pages_read_zero_and_keep_what_is_written_populated_ahead_or_not() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    require_kvm("issue #13");
    let dir = Scratch::new("multios-issue-13", "firsttouch");
    for flags in sidebyside::BUILDS {
        let prog = build_c(dir.path(), "firsttouch", flags);
        // Off, on (64 MiB a range: every mapping whole), and a cap of 1 MiB (each range only in
        // part), through the test front end's environment.
        // Populating at map time off, by default (4 MiB a range: each range in part) and of 1 MiB.
        for setting in ["off", "ahead", "1"] {
            for at_map in ["off", "default", "1024"] {
                let mut env = vec![("MULTIOS_LWK_POPULATE", setting)];
                if at_map != "default" {
                    env.push(("MULTIOS_LWK_POPULATE_SYNC", at_map));
                }
                let o = assert_same(&prog, &[MIB, CALLS], &env);
                let out = String::from_utf8_lossy(&o.stdout);
                assert!(out.contains("wrong 0"), "{setting} {at_map}: {out}");
            }
        }
    }
}

#[test]
fn issue_13_populating_ahead_batches_the_first_touches() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    require_kvm("issue #13");
    let dir = Scratch::new("multios-issue-13", "batching");
    let prog = build_c(dir.path(), "firsttouch", &["-O1"]);
    let off = run_lwk(&prog, 0, 0, false);
    let on = run_lwk(&prog, multios_lwk::populate::DEFAULT_CAP, 0, false);
    let (p_off, p_on) = (off.costs.populate, on.costs.populate);
    assert_eq!((p_off.pages, p_off.queued_bytes), (0, 0), "off: {p_off:?}");
    // Two mappings of 16 MiB and 8 MiB of break: 10 240 pages queued (and what the C library's
    // own malloc takes with brk: its first 132 KiB); the proxy populates them between the
    // 20 000 calls that follow each (a batch between two calls at least).
    let pages: u64 = (16 + 16 + 8) << 8;
    let slack = 1 << 20;
    assert!(
        p_on.queued_bytes >= pages << 12 && p_on.queued_bytes <= (pages << 12) + slack,
        "on: {p_on:?}"
    );
    assert!(
        p_on.pages >= pages / 2 && p_on.pages <= pages + (slack >> 12),
        "on: {} of {pages} pages populated: {p_on:?}",
        p_on.pages
    );
    assert!(p_on.batches > 0 && p_on.batches <= p_on.pages, "{p_on:?}");
    // The batching: with the host pages there, KVM's fault fills 8 shadow entries at a time, and
    // the host pages are made on the proxy, not in the vCPU's faults.
    let kvm = |o: &multios_lwk::Outcome| o.costs.kvm.get("pf_fixed").copied().unwrap_or(0);
    let (f_off, f_on) = (kvm(&off), kvm(&on));
    assert!(
        f_off >= pages && f_on * 4 < f_off * 3,
        "KVM faults {f_off} without, {f_on} with populating ahead ({pages} pages touched)"
    );
    let (v_off, v_on) = (off.costs.threads.vcpu_faults, on.costs.threads.vcpu_faults);
    assert!(
        v_off >= pages && v_on * 2 < v_off,
        "host faults on the vCPU: {v_off} without, {v_on} with populating ahead"
    );
    // The pages of the batches: those the guest touched first the host did not make again.
    assert!(
        on.costs.threads.proxy_faults * 2 >= p_on.pages,
        "the proxy's host faults {} for the {} pages it populated",
        on.costs.threads.proxy_faults,
        p_on.pages
    );
}

#[test]
fn issue_13_populating_at_map_time_batches_the_first_touches() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    require_kvm("issue #13");
    let dir = Scratch::new("multios-issue-13", "atmap");
    let prog = build_c(dir.path(), "firsttouch", &["-O1"]);
    let off = run_lwk(&prog, 0, 0, false);
    // 16 MiB a range: the two mappings and the break's growth whole.
    let on = run_lwk(&prog, 0, 16 << 20, false);
    let pages: u64 = (16 + 16 + 8) << 8;
    let (p_off, p_on) = (off.costs.populate, on.costs.populate);
    assert_eq!(p_off.sync_pages, 0, "off: {p_off:?}");
    // What the C library's malloc takes with brk (its first 132 KiB) is populated too.
    assert!(
        p_on.sync_pages >= pages && p_on.sync_pages <= pages + 256,
        "{} pages populated at map time for {pages}: {p_on:?}",
        p_on.sync_pages
    );
    assert_eq!((p_on.pages, p_on.queued_bytes), (0, 0), "nothing ahead: {p_on:?}");
    let kvm = |o: &multios_lwk::Outcome| o.costs.kvm.get("pf_fixed").copied().unwrap_or(0);
    let (f_off, f_on) = (kvm(&off), kvm(&on));
    assert!(
        f_off >= pages && f_on * 2 < f_off,
        "KVM faults {f_off} without, {f_on} with populating at map time ({pages} pages touched)"
    );
    // The host pages are made in the mmap or brk call, by whichever thread serves it (the proxy,
    // or the vCPU's own after a doorbell), not one by one in KVM's faults: the host faults over
    // the run stay those of the pages touched (the counters are the process's: each run's own
    // are those after its start-up).
    let run_faults = |o: &multios_lwk::Outcome| o.costs.host_faults - o.costs.host_faults_startup;
    let (h_off, h_on) = (run_faults(&off), run_faults(&on));
    assert!(
        h_on <= h_off + h_off / 4,
        "host faults {h_off} without, {h_on} with populating at map time"
    );
}

#[test]
fn issue_13_the_summary_names_the_areas_the_guest_touched() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    require_kvm("issue #13");
    let dir = Scratch::new("multios-issue-13", "areas");
    let prog = build_c(dir.path(), "firsttouch", &["-O1"]);
    let o = run_lwk(&prog, 0, 0, true);
    let areas = &o.costs.areas;
    assert!(!areas.is_empty(), "no areas in the summary");
    // The second 16 MiB mapping is still mapped at the end, every page of it touched.
    let anon = areas
        .iter()
        .filter(|a| a.name.is_empty() && a.perms.starts_with("rw"))
        .map(|a| a.resident)
        .max()
        .unwrap_or(0);
    assert!(
        anon >= 16 << 8,
        "{anon} resident pages in the largest anonymous area: {areas:?}"
    );
    let heap = areas.iter().find(|a| a.name == "[heap]").expect("a [heap] area");
    assert!(heap.resident >= 8 << 8, "{heap:?}");
    assert!(
        areas.iter().any(|a| a.name.ends_with("firsttouch-O1")),
        "{areas:?}"
    );
    let kinds = multios_lwk::residency::by_kind(areas);
    assert!(kinds.iter().any(|k| k.0 == "file" && k.2 > 0), "{kinds:?}");
    // Not asked for: not counted.
    assert!(run_lwk(&prog, 0, 0, false).costs.areas.is_empty());
}
