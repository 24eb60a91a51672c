//! Issue #15 (a real-user sweep): vfork and posix_spawn's clone(CLONE_VM | CLONE_VFORK) are
//! served as a fork, and the parent went on at once with its own copy of memory. So glibc's
//! posix_spawn, which reads a failed exec's errno from memory the child wrote, returned 0 for a
//! program that does not exist (and a child exiting 127) where Linux returns ENOENT. The parent
//! now waits for the child's exec or exit and gets back what the child wrote above its stack
//! pointer (`vfork.rs`). Needs /dev/kvm and gcc: FAIL (never skip) without. ≈ 3 s.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use sidebyside::{assert_same, build_c, require_kvm, show};

#[test]
fn issue_15_posix_spawn_of_a_missing_program_fails_and_vfork_waits_like_native() {
    require_kvm("issue #15");
    let dir = scratch::Scratch::new("multios-issue15", "vforkwait");
    let prog = build_c(&dir, "vforkwait", &["-O1"]);
    let o = assert_same(&prog, &[], &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    for want in [
        "vfork child wrote 42, exit 3",
        "main posix_spawn of a missing file: No such file or directory",
        "main posix_spawnp of a missing program: No such file or directory",
        "thread posix_spawn of a missing file: No such file or directory",
        "thread posix_spawnp true: ok, exit 0",
    ] {
        assert!(out.contains(want), "{want:?} in {}", show(&o));
    }
}
