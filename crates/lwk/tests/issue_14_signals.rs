//! Issue #14, part B.1: real-time signals queue with their siginfo. `tests/c/rtsignals.c` runs
//! natively and in the LWK and must print the same: several instances of two real-time signals and
//! two of a standard one sent with sigqueue while blocked (each real-time instance delivered in
//! order with its si_value, the standard one once; handlers stacked as Linux stacks them), the
//! instances taken one by one with sigwaitinfo, a periodic POSIX timer (SIGEV_SIGNAL, SI_TIMER and
//! its value), a timer that signals one thread (SIGEV_THREAD_ID) waiting in sigwaitinfo, a
//! SIGEV_THREAD timer (glibc's helper thread and signal 32), instances queued by another process,
//! and a blocking read interrupted with EINTR — or restarted under SA_RESTART — both when the
//! LWK's proxy serves it (a single-threaded guest, a timer's signal) and when the reading
//! thread's own vCPU thread does (a second thread, pthread_sigqueue). Dynamic and static, ring and
//! exit backends, rewritten and trapping syscall sites. Needs /dev/kvm and gcc: FAILS (never
//! skips) without. Takes ≈ 15 s.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use scratch::Scratch;
use sidebyside::{assert_same, build_c, require_kvm, BUILDS, VARIANTS};

#[test]
fn issue_14_real_time_signals_queue_with_their_values_like_native() {
    require_kvm("issue #14");
    let dir = Scratch::new("multios-lwk-issue14", "rtsignals");
    for flags in BUILDS {
        let prog = build_c(&dir, "rtsignals", flags);
        for env in VARIANTS {
            let out = assert_same(&prog, &[], env);
            let text = String::from_utf8_lossy(&out.stdout);
            for want in [
                "delivered: RTMIN+3/SI_QUEUE=30 RTMIN+1/SI_QUEUE=1 RTMIN+1/SI_QUEUE=2 RTMIN+1/SI_QUEUE=3 \
                 RTMIN+1/SI_QUEUE=4 RTMIN+1/SI_USER 10/SI_QUEUE=100",
                "thread timer: RTMIN+7 SI_TIMER=77",
                "  reader: EINTR",
                "  read: EINTR",
                "SIGEV_THREAD timer: function called with 88",
                "done",
            ] {
                assert!(text.contains(want), "{env:?}: no {want:?} in\n{text}");
            }
        }
    }
}
