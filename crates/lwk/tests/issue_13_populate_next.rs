//! Issue #13: the free memory the next anonymous mappings will get, populated by the proxy
//! while it idles (`next.rs`, `--populate-next`). Counts only, no timing.
//!
//! `tests/c/nextmaps.c` maps in Racket's rhythm (a chunk of 2 MiB + 16 KiB, then 24 KiB),
//! checks every byte of each new mapping reads zero, fills it, unmaps and maps again every third
//! pair (new mappings land where old data was), and computes between pairs without calls. Its
//! output must be native's — no stale byte, every pattern kept — with populating the next
//! mappings off (the default), on, with a small budget and a large one, with and without
//! populating at map time; and the counters must move: pages made ahead, mappings that found them (hits),
//! fewer pages made in the mapping calls, and every page made accounted for once.
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

const PAIRS: &str = "16";
const COMPUTE: &str = "3000000";

#[test]
fn issue_13_fresh_mappings_read_zero_with_the_next_mappings_populated_ahead() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    require_kvm("issue #13");
    let dir = Scratch::new("multios-issue-13", "nextmaps");
    for flags in sidebyside::BUILDS {
        let prog = build_c(dir.path(), "nextmaps", flags);
        for next in ["default", "on", "64", "16384"] {
            for at_map in ["default", "off"] {
                let mut env = Vec::new();
                if next != "default" {
                    env.push(("MULTIOS_LWK_POPULATE_NEXT", next));
                }
                if at_map != "default" {
                    env.push(("MULTIOS_LWK_POPULATE_SYNC", at_map));
                }
                let o = assert_same(&prog, &[PAIRS, COMPUTE], &env);
                let out = String::from_utf8_lossy(&o.stdout);
                assert!(out.contains("wrong 0"), "next {next}, at map {at_map}: {out}");
            }
        }
    }
}

/// An LWK run of nextmaps keeping `next` bytes of the next mappings populated (0: off).
fn run_lwk(prog: &std::path::Path, next: u64) -> multios_lwk::Outcome {
    let mut cfg = multios_lwk::Config::new(prog.to_str().expect("utf-8 path"), &[PAIRS, COMPUTE]);
    cfg.quiet = true;
    cfg.populate_cap = 0;
    cfg.populate_next = next;
    let o = multios_lwk::run(&cfg).unwrap_or_else(|e| panic!("LWK run of {}: {e}", prog.display()));
    assert_eq!(o.code(), 0, "{:?}", o.notes);
    o
}

#[test]
fn issue_13_the_proxy_populates_where_the_next_mappings_land() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    require_kvm("issue #13");
    let dir = Scratch::new("multios-issue-13", "nextcounts");
    let prog = build_c(dir.path(), "nextmaps", &["-O1"]);
    let off = run_lwk(&prog, 0);
    let on = run_lwk(&prog, multios_lwk::next::AHEAD);
    let (p_off, p_on) = (off.costs.populate, on.costs.populate);
    assert_eq!(
        p_off.next,
        multios_lwk::next::NextCounts::default(),
        "off: {p_off:?}"
    );
    let n = p_on.next;
    assert_eq!(n.ahead_bytes, multios_lwk::next::AHEAD);
    // 16 pairs and 5 pairs mapped again: 21 chunks of 516 pages and their bookkeeping. The
    // proxy has milliseconds of the guest's computing after each pair: most chunks find their
    // pages made (one is enough here: the counts, not the timing, are the test).
    let chunk_pages = ((2 << 20) + (16 << 10)) >> 12;
    assert!(n.pages >= chunk_pages && n.hits >= chunk_pages / 2, "{n:?}");
    assert!(n.forecasts > 0 && n.batches > 0 && !n.gave_up, "{n:?}");
    // Every page made ahead is accounted for once: got by a mapping, given back, or left.
    assert_eq!(n.pages, n.hits + n.dropped + n.left, "{n:?}");
    // What is left at the end is bounded by what is kept ahead.
    assert!(
        n.left * 4096 <= multios_lwk::next::KEEP * n.ahead_bytes + (1 << 20),
        "{n:?}"
    );
    // The mapping calls made only what the proxy had not.
    assert!(
        p_on.sync_pages + n.hits <= p_off.sync_pages + 64 && p_on.sync_pages < p_off.sync_pages,
        "pages made in the calls: {} with, {} without ({} hits)",
        p_on.sync_pages,
        p_off.sync_pages,
        n.hits
    );
}
