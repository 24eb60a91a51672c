//! Issue #16 (the twenty-second session's discovery): the process CPU clock (CLOCK_PROCESS_CPUTIME_ID and the
//! own-pid clocks of `clock_getcpuclockid`), getrusage(RUSAGE_SELF) and times() measured the whole
//! VMM — the proxy polling after each call, the signal pump —: a single busy thread making calls
//! read 1.7–2.2 times its thread clock, and a 40 ms sleep added 4 ms. `tests/c/proccpu.c`
//! natively and in the LWK, dynamic and static: one thread, two threads, a sleep, a forked child,
//! an exec; same output (its "ok" lines). Needs /dev/kvm and gcc: FAILS (never skips) without.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use scratch::Scratch;
use sidebyside::{assert_same, build_c, require_kvm, BUILDS};

#[test]
fn issue_16_the_process_cpu_clock_is_the_guests_own() {
    require_kvm("issue #16");
    let dir = Scratch::new("multios-issue16", "proccpu");
    for flags in BUILDS {
        let prog = build_c(dir.path(), "proccpu", flags);
        let out = assert_same(&prog, &[], &[]);
        let s = String::from_utf8_lossy(&out.stdout);
        assert!(s.contains("process clock / thread clock: ok"), "{s}");
        assert!(s.contains("exec keeps the process clock: ok"), "{s}");
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
    }
}
