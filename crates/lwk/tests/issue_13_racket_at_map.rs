//! Issue #13: a real runtime in the LWK with its new memory populated at map time
//! (`atmap.rs`, `--populate-at-map`, on by default). Racket's heap is chunks of 2 MiB + 16 KiB
//! that it touches as soon as it maps them; the LWK now makes their host pages in the mmap
//! call. The programs' output must not change: two of `bench multiverse`'s benchmarks at small
//! sizes, natively and in the LWK with populating at map time on (the default), off, and with a
//! small cap, give the same output; and the run's counters show what it did (pages populated at
//! map time, fewer KVM faults than with it off). Counts only, no timing.
//!
//! Needs /dev/kvm and Debian's `racket` (scripts/deps.sh): FAILS (never skips) without them.

#[path = "common/sidebyside.rs"]
mod sidebyside;
use sidebyside::{assert_same, require_kvm};

use std::path::PathBuf;

fn racket() -> PathBuf {
    let p = PathBuf::from("/usr/bin/racket");
    assert!(
        p.exists(),
        "issue #13 tests need racket (apt-get install racket; scripts/deps.sh)"
    );
    p
}

fn program(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../experiment/racket")
        .join(name);
    assert!(p.exists(), "{}", p.display());
    p.to_string_lossy().into_owned()
}

#[test]
fn issue_13_racket_gives_native_output_with_populating_at_map_time_on_or_off() {
    require_kvm("issue #13");
    let racket = racket();
    for (prog, arg) in [("fannkuch-redux.rkt", "7"), ("n-body.rkt", "1000")] {
        let file = program(prog);
        // The defaults (populating at map time), at map time off or small, and the next
        // mappings populated ahead while the proxy idles (`next.rs`).
        let settings: [&[(&str, &str)]; 4] = [
            &[],
            &[("MULTIOS_LWK_POPULATE_SYNC", "off")],
            &[("MULTIOS_LWK_POPULATE_SYNC", "64")],
            &[("MULTIOS_LWK_POPULATE_NEXT", "on")],
        ];
        for env in settings {
            let o = assert_same(&racket, &[&file, arg], env);
            assert!(!o.stdout.is_empty(), "{prog} {arg} {env:?}: no output");
        }
    }
}

#[test]
fn issue_13_racket_s_heap_chunks_are_populated_when_mapped() {
    require_kvm("issue #13");
    let racket = racket();
    let file = program("fannkuch-redux.rkt");
    let run = |at_map: u64| {
        let mut cfg = multios_lwk::Config::new(racket.to_str().expect("utf-8 path"), &[&file, "3"]);
        cfg.quiet = true;
        cfg.populate_cap = 0;
        cfg.populate_at_map = at_map;
        cfg.populate_next = 0;
        let o = multios_lwk::run(&cfg).unwrap_or_else(|e| panic!("racket in the LWK: {e}"));
        assert_eq!(o.code(), 0, "{:?}", o.notes);
        o
    };
    let off = run(0);
    let on = run(multios_lwk::atmap::DEFAULT_PER_RANGE);
    assert_eq!(off.costs.populate.sync_pages, 0);
    // Racket's boot maps ≈ 70 MB of heap chunks and touches 96 % of them.
    let populated = on.costs.populate.sync_pages;
    assert!(populated >= 8 << 10, "{populated} pages populated at map time");
    let kvm = |o: &multios_lwk::Outcome| o.costs.kvm.get("pf_fixed").copied().unwrap_or(0);
    assert!(
        kvm(&on) * 2 < kvm(&off),
        "KVM faults {} with populating at map time, {} without",
        kvm(&on),
        kvm(&off)
    );
}

#[test]
fn issue_13_racket_s_next_heap_chunks_are_populated_while_the_proxy_idles() {
    require_kvm("issue #13");
    let racket = racket();
    let file = program("fannkuch-redux.rkt");
    let run = |next: u64| {
        let mut cfg = multios_lwk::Config::new(racket.to_str().expect("utf-8 path"), &[&file, "3"]);
        cfg.quiet = true;
        cfg.populate_cap = 0;
        cfg.populate_next = next;
        let o = multios_lwk::run(&cfg).unwrap_or_else(|e| panic!("racket in the LWK: {e}"));
        assert_eq!(o.code(), 0, "{:?}", o.notes);
        o
    };
    let off = run(0);
    let on = run(multios_lwk::next::AHEAD);
    let n = on.costs.populate.next;
    // The heap chunks Racket maps while it loads its boot files: some found their pages made
    // (how many depends on the proxy's CPU; a chunk is 516 pages), and every page made ahead
    // is accounted for once.
    assert!(n.pages > 0 && n.hits > 0, "{n:?}");
    assert_eq!(n.pages, n.hits + n.dropped + n.left, "{n:?}");
    assert!(
        on.costs.populate.sync_pages < off.costs.populate.sync_pages,
        "pages made in the mapping calls: {} with, {} without",
        on.costs.populate.sync_pages,
        off.costs.populate.sync_pages
    );
}
