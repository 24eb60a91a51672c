//! Issue #15 (found by the suite's make-j2 workload): `as`, exec'd by gcc's vfork child in the
//! LWK, got EBADF from an mmap of the libbfd fd it had just opened, in ≈ 3 of 130 `make -j2`
//! runs under load. The forked VMM's new signal pump was opening its signalfd at the lowest free
//! number while the child's guest exec'd: the close-on-exec sweep closed the pump's temporary,
//! `as` reopened that number, and the pump's close took `as`'s file. VMM temporaries in the
//! guest's fd range and the sweeps that close by number now exclude each other
//! (`sys::low_fds`). `MULTIOS_LWK_TEST_FD_RACE_MS` widens the temporary's moment so that the race
//! happens every time: before the fix 9 of 10 children lost their fd. Needs /dev/kvm: FAIL
//! (never skip) without. ≈ 5 s.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use sidebyside::{assert_same, build_c, require_kvm, show};

#[test]
fn issue_15_exec_after_fork_keeps_the_new_programs_fds() {
    require_kvm("issue #15");
    let dir = scratch::Scratch::new("multios-issue15", "execfdrace");
    let prog = build_c(&dir, "execfdrace", &["-O1"]);
    let me = prog.to_string_lossy().into_owned();
    for widen in ["0", "20"] {
        let o = assert_same(&prog, &[&me], &[("MULTIOS_LWK_TEST_FD_RACE_MS", widen)]);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains("fork ok 6/6") && out.contains("spawn ok 6/6"),
            "widened by {widen} ms: {}",
            show(&o)
        );
    }
}
