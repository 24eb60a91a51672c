//! Issue #13: while the proxy thread is parked (no calls for ~1 ms) it sets every stub's spin
//! budget to 1, so that a call rings the doorbell at once instead of spinning for a proxy that is
//! not polling; the doorbell's waker gives the budget back. This checks that calls made in that
//! state are all served with the right results — from two threads, round after round of
//! sleep-then-burst, and from a forked child (whose proxy is started again with the budget) —
//! and that the output is the native one. Needs /dev/kvm and gcc: FAILS (never skips) without.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

#[path = "common/sidebyside.rs"]
mod sidebyside;
use sidebyside::{assert_same, build_c, require_kvm, show};

#[test]
fn issue_13_calls_made_after_the_proxy_parks_are_served_in_threads_and_a_forked_child() {
    require_kvm("issue #13");
    let dir = Scratch::new("multios-issue-13", "parked");
    let prog = build_c(dir.path(), "parked", &["-O1", "-pthread"]);
    let lwk = assert_same(&prog, &[], &[]);
    assert!(lwk.status.success(), "in the LWK: {}", show(&lwk));
    let out = String::from_utf8_lossy(&lwk.stdout);
    assert!(out.contains("wrong results 0 and 0"), "{out}");
    assert!(out.contains("child: wrong results 0"), "{out}");
}
