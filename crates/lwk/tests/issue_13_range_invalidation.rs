//! Issue #13 (with #14's shared mappings): in a single-threaded guest an mprotect that takes access
//! away drops only the range's shadow entries, by a host mprotect to read-only and back; over the
//! host's own mappings (MAP_SHARED anonymous memory, a memfd, a read-only file) it must not touch
//! the host protection and drops every shadow table instead (a private file mapping, read-write in
//! the host and written only by the guest, takes the range path). `tests/c/tighten.c` checks what the
//! guest sees in each case — the fault right after mprotect, the access again after it is given
//! back, the memfd's contents, EACCES for write access to a read-only file's mapping — against
//! native. Needs /dev/kvm and gcc: FAILS (never skips) without them.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

#[path = "common/sidebyside.rs"]
mod sidebyside;
use sidebyside::{build_c, lwk, native, require_kvm, show};

#[test]
fn issue_13_tightening_mprotect_of_private_and_shared_mappings_in_one_thread_like_native() {
    require_kvm("issue #13");
    let dir = Scratch::new("multios-issue-13", "tighten");
    let prog = build_c(dir.path(), "tighten", &["-O1"]);
    let data = |side: &str| dir.path().join(format!("{side}.data")).display().to_string();
    let native = native(&prog, &[&data("native")]);
    assert!(native.status.success(), "native: {}", show(&native));
    let lwk = lwk(&prog, &[&data("lwk")], &[]);
    assert!(lwk.status.success(), "in the LWK: {}", show(&lwk));
    let out = String::from_utf8_lossy(&lwk.stdout);
    assert_eq!(
        out,
        String::from_utf8_lossy(&native.stdout),
        "same output as native"
    );
    for what in [
        "private anonymous",
        "shared anonymous",
        "shared memfd",
        "private file",
    ] {
        assert!(
            out.contains(&format!(
                "{what}: written, after PROT_READ SIGSEGV, after RW written, holds c"
            )),
            "{out}"
        );
    }
    assert!(out.contains("memfd's byte: c"), "{out}");
    assert!(out.contains("private file's byte: f"), "{out}");
    assert!(
        out.contains("after PROT_NONE SIGSEGV, after PROT_READ read (file); RW: -1"),
        "{out}"
    );
}
