//! Issue #16 (found running programs nobody named): a thread's own CPU clock, its
//! getrusage(RUSAGE_THREAD) and a timer on its CPU clock were the proxy's when the proxy served
//! the call, and another thread's clock (`pthread_getcpuclockid`: the guest's tid in the clock id)
//! was EINVAL. `tests/c/threadclock.c` natively and in the LWK, dynamic and static: same output.
//! Needs /dev/kvm and gcc: FAILS (never skips) without.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use scratch::Scratch;
use sidebyside::{assert_same, build_c, require_kvm, BUILDS};

#[test]
fn issue_16_thread_cpu_clocks_are_the_threads_own() {
    require_kvm("issue #16");
    let dir = Scratch::new("multios-issue16", "threadclock");
    for flags in BUILDS {
        let prog = build_c(dir.path(), "threadclock", flags);
        let out = assert_same(&prog, &[], &[]);
        let s = String::from_utf8_lossy(&out.stdout);
        assert!(s.contains("another thread's clock: ok"), "{s}");
        assert!(s.contains("thread clock: ok"), "{s}");
    }
}
