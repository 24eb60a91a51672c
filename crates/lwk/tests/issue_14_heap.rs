//! Issue #14: memory calls of several guest threads at once. The proxy and the vCPU threads serve
//! calls at the same time (a stub whose spin budget runs out rings its doorbell and its own
//! thread serves the call), and each of mmap, munmap and mremap released or took a range in the
//! allocator before zeroing or copying guest memory outside its lock: an mremap that moved a
//! block released the old range, another thread's mmap was given it and wrote there, and the
//! mremap's late zeroing wiped that thread's block (glibc: `free(): invalid pointer`, or a wrong
//! checksum). Now every call that changes the address space holds `AddressSpace::map` whole.
//!
//! `tests/c/heapstress.c` (four threads growing blocks with realloc — mremap — while mapping and
//! unmapping others, every block checked whole) runs 24 times, four at once, and must print what
//! it prints natively each time; before the fix every run failed on this machine (40 of 40, alone
//! or four at once), and `tests/c/heap.c` (plain glibc malloc/free) in 2–8 % of runs. `heapstress`
//! runs 4 more times with the exit backend (every call served on the vCPU threads) and `heap.c` 8
//! times. Needs /dev/kvm and gcc: FAILS (never skips) without. Takes ≈ 15 s (load 2–17).

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use scratch::Scratch;
use sidebyside::{build_c, lwk, native, require_kvm, show};
use std::path::Path;

/// Runs `prog` `runs` times in the LWK, `at_once` at a time, and returns the runs whose exit
/// status or stdout differ from the native run's, described.
fn differing_runs(prog: &Path, runs: usize, at_once: usize, env: &[(&str, &str)]) -> Vec<String> {
    let want = native(prog, &[]);
    assert!(want.status.success(), "natively: {}", show(&want));
    let mut bad = Vec::new();
    for round in 0..runs.div_ceil(at_once) {
        let outs: Vec<_> = std::thread::scope(|s| {
            let jobs: Vec<_> = (0..at_once.min(runs - round * at_once))
                .map(|_| s.spawn(|| lwk(prog, &[], env)))
                .collect();
            jobs.into_iter()
                .map(|j| j.join().expect("a run's thread"))
                .collect()
        });
        for o in outs {
            if o.status.code() != want.status.code() || o.stdout != want.stdout {
                bad.push(show(&o));
            }
        }
    }
    bad
}

#[test]
fn issue_14_heap_memory_calls_of_several_threads_at_once_keep_every_block() {
    require_kvm("issue #14");
    let dir = Scratch::new("multios-lwk-issue14", "heap");
    let stress = build_c(&dir, "heapstress", &["-O1"]);
    let heap = build_c(&dir, "heap", &["-O1"]);
    for (prog, runs, env) in [
        (&stress, 24, &[][..]),
        (&stress, 4, &[("LWK_BACKEND", "exit")][..]),
        (&heap, 8, &[][..]),
    ] {
        let bad = differing_runs(prog, runs, 4, env);
        assert!(
            bad.is_empty(),
            "{} {env:?}: {} of {runs} runs differ from the native run; the first:\n{}",
            prog.display(),
            bad.len(),
            bad[0]
        );
    }
}
