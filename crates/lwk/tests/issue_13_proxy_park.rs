//! Issue #13: while the proxy thread is parked (no calls for ~1 ms) it sets every stub's spin
//! budget to 1, so that a call rings the doorbell at once instead of spinning for a proxy that is
//! not polling; the doorbell's waker gives the budget back. This checks that calls made in that
//! state are all served with the right results — from two threads, round after round of
//! sleep-then-burst, and from a forked child (whose proxy is started again with the budget) —
//! and that the output is the native one. Needs /dev/kvm and gcc: FAILS (never skips) without.

use std::path::Path;
use std::process::Command;

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

const RUNNER: &str = env!("CARGO_BIN_EXE_lwk-run");

#[test]
fn issue_13_calls_made_after_the_proxy_parks_are_served_in_threads_and_a_forked_child() {
    if let Err(e) = multios_lwk::check_kvm() {
        panic!("issue #13 tests need KVM and it is not usable here: {e}");
    }
    let dir = Scratch::new("multios-issue-13", "parked");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/parked.c");
    let prog = dir.path().join("parked");
    let o = Command::new("gcc")
        .args(["-O1", "-g", "-pthread", "-o"])
        .arg(&prog)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("running gcc (apt-get install gcc libc6-dev): {e}"));
    assert!(o.status.success(), "gcc: {}", String::from_utf8_lossy(&o.stderr));

    let native = Command::new(&prog).output().expect("native run");
    assert!(native.status.success(), "native: {native:?}");
    let lwk = Command::new(RUNNER).arg(&prog).output().expect("lwk-run");
    assert!(
        lwk.status.success(),
        "in the LWK: {}",
        String::from_utf8_lossy(&lwk.stderr)
    );
    let out = String::from_utf8_lossy(&lwk.stdout);
    assert_eq!(
        out,
        String::from_utf8_lossy(&native.stdout),
        "same output as native"
    );
    assert!(out.contains("wrong results 0 and 0"), "{out}");
    assert!(out.contains("child: wrong results 0"), "{out}");
}
