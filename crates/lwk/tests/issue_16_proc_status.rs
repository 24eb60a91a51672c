//! Issue #16 (twenty-third session): the guest's own `/proc/self/status` and `/proc/self/stat`
//! were the VMM's — a single-threaded program read `Threads: 4`, the VMM's SigBlk/SigCgt, a VmSize
//! of 4.3 GB and FDSize 32768; `stat`'s num_threads and signal fields the same. They are now the
//! VMM's text with the guest's fields (`syscall/procstatus.rs`). `tests/c/procstatus.c` natively
//! and in the LWK, dynamic and static: thread counts, pending/blocked/ignored/caught sets through
//! `self`, the pid and `thread-self`, `stat`'s fields, VmSize equal to the maps' sum; same output.
//! Needs /dev/kvm and gcc: FAILS (never skips) without.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use scratch::Scratch;
use sidebyside::{assert_same, build_c, require_kvm, BUILDS};

#[test]
fn issue_16_proc_self_status_and_stat_describe_the_guest() {
    require_kvm("issue #16");
    let dir = Scratch::new("multios-issue16", "procstatus");
    for flags in BUILDS {
        let prog = build_c(dir.path(), "procstatus", flags);
        let out = assert_same(&prog, &[], &[]);
        let s = String::from_utf8_lossy(&out.stdout);
        assert!(s.contains("threads Threads:\t3"), "{s}");
        assert!(s.contains("malloc sizes ok"), "{s}");
    }
}
