//! Issue #14, part B.1: POSIX timers that fire faster than the guest takes their signals, as
//! stress-ng's timer stressor does (100 kHz). `tests/c/fasttimer.c` runs natively and in the LWK
//! and must print the same: a 10 µs SIGEV_SIGNAL timer taken 300 times in sigsuspend, the same
//! timer while the program writes and computes (it must end: the VMM used to run a catcher per
//! expiry and its signal pump never caught up, so the guest hung), a timer whose signal stays
//! blocked through thousands of expiries (one signal pending, the first taken has si_overrun > 0,
//! as Linux keeps one signal per timer), and a 20 ms timer interrupting a loop without system
//! calls. Dynamic and static, ring and exit backends. Needs /dev/kvm and gcc: FAILS (never
//! skips) without. Takes ≈ 10 s.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use scratch::Scratch;
use sidebyside::{assert_same, build_c, require_kvm};

#[test]
fn issue_14_timers_faster_than_their_signals_coalesce_like_native() {
    require_kvm("issue #14");
    let dir = Scratch::new("multios-lwk-issue14", "fasttimer");
    for flags in [&["-O1"][..], &["-O1", "-static"][..]] {
        let prog = build_c(&dir, "fasttimer", flags);
        for env in [&[][..], &[("LWK_BACKEND", "exit")][..]] {
            let out = assert_same(&prog, &[], env);
            let text = String::from_utf8_lossy(&out.stdout);
            for want in [
                "sigsuspend: took 300 signals with value 5",
                "busy: signals taken: yes, value 6",
                "blocked: pending 1, first signal's overrun > 0, value 7",
                "compute loop: 10 signals",
                "done",
            ] {
                assert!(text.contains(want), "{env:?}: no {want:?} in\n{text}");
            }
        }
    }
}
