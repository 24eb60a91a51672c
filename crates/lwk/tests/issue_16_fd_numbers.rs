//! Issue #16 (found as a CI flake of `issue_16_closefrom_proc_self_fd_and_1021_files_like_native`
//! on a loaded machine: the LWK's opendir got fd 4 where native got 3): a guest's new descriptor
//! takes the lowest free number of the VMM's fd table, and a VMM helper thread (the signal pump,
//! a new vCPU, the proxy reading its schedstat) briefly holds a temporary descriptor there. The
//! calls that create a guest descriptor without waiting on another party now run under the same
//! lock as those temporaries (`sys::low_fds`). `MULTIOS_LWK_TEST_FD_RACE_MS` holds the signal
//! pump's start-up temporary for that long, so that the race happens every time. Needs /dev/kvm:
//! FAIL (never skip) without.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use sidebyside::{assert_same, build_c, require_kvm, show};

#[test]
fn issue_16_new_guest_fds_are_the_lowest_free_while_a_helper_holds_a_temporary() {
    require_kvm("issue #16");
    let dir = scratch::Scratch::new("multios-issue16", "fdnums");
    for flags in [&["-O1"][..], &["-O1", "-static"][..]] {
        let prog = build_c(&dir, "fdnums", flags);
        for widen in ["0", "300"] {
            // Natively the numbers are the lowest free ones of what the test inherited.
            let o = assert_same(&prog, &[], &[("MULTIOS_LWK_TEST_FD_RACE_MS", widen)]);
            assert!(
                String::from_utf8_lossy(&o.stdout).starts_with("pipe "),
                "{flags:?}, helper's temporary held {widen} ms: {}",
                show(&o)
            );
        }
    }
}

#[test]
fn issue_16_a_closed_number_never_shows_a_vmm_temporary() {
    require_kvm("issue #16");
    let dir = scratch::Scratch::new("multios-issue16", "fdpeek");
    let prog = build_c(&dir, "fdpeek", &["-O1", "-pthread"]);
    for widen in ["0", "300"] {
        let o = assert_same(&prog, &[], &[("MULTIOS_LWK_TEST_FD_RACE_MS", widen)]);
        assert!(
            String::from_utf8_lossy(&o.stdout).starts_with("open answers 0 (asked)"),
            "helper's temporary held {widen} ms: {}",
            show(&o)
        );
    }
}
