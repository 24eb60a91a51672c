//! Issue #14, part B.3: vCPU ids are not used up. Each guest thread is a vCPU and KVM cannot
//! destroy one, so the LWK gives the vCPU of a thread that exited to the next new thread; a
//! program may create thousands of threads over its life (the limit was 128). A C program creates
//! and joins 2000 threads one after the other, churns a pool of 8 for 100 rounds and starts 500
//! detached threads; CPython starts and joins 1000 threads and runs a thread pool. Each must print
//! what it prints natively. Needs /dev/kvm, gcc and python3: FAILS (never skips) without.
//! Takes ≈ 10 s.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use scratch::Scratch;
use sidebyside::{assert_same, build_c, require_kvm};
use std::path::Path;

#[test]
fn issue_14_thousands_of_threads_over_a_life_run_like_native() {
    require_kvm("issue #14");
    let dir = Scratch::new("multios-lwk-issue14", "threads");
    for flags in [&["-O1"][..], &["-O1", "-static"][..]] {
        let prog = build_c(&dir, "threadchurn", flags);
        let out = assert_same(&prog, &[], &[]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("sequential: 2000 threads"), "{text}");
        assert!(text.contains("done"), "{text}");
    }
    // The exit backend serves every call on the vCPU threads: the reused vCPUs' doorbells too.
    let prog = dir.join("threadchurn-O1");
    assert_same(&prog, &["500", "20"], &[("LWK_BACKEND", "exit")]);
}

#[test]
fn issue_14_python_starts_a_thousand_threads_like_native() {
    require_kvm("issue #14");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/threadchurn.py");
    let script = script.to_str().expect("a UTF-8 path");
    let out = assert_same(Path::new("/usr/bin/python3"), &[script], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("sequential 499500 distinct native ids 300"),
        "{text}"
    );
}

/// A thread cloned from a vCPU with a high id (100 threads running at once, each cloning one)
/// starts with the flags Linux gives it: no AC, DF or TF. A clone made through a rewritten site
/// gave the child the stub's address as its flags (AC for vCPU ids 64–127): the child died of
/// an alignment check (#AC, SIGBUS), as stress-ng's pthread stressor did in half its runs.
#[test]
fn issue_14_threads_cloned_from_high_vcpus_start_with_clean_flags_like_native() {
    require_kvm("issue #14");
    let dir = Scratch::new("multios-lwk-issue14", "threadflags");
    for flags in [&["-O1"][..], &["-O1", "-static"][..]] {
        let prog = build_c(&dir, "threadflags", flags);
        let out = assert_same(&prog, &[], &[]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("100 threads, each cloned one; threads with AC, DF or TF set: 0"),
            "{text}"
        );
    }
}
