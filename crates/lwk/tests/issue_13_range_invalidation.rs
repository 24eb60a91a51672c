//! Issue #13 (with #14's shared mappings): in a single-threaded guest an mprotect that takes access
//! away drops only the range's shadow entries, by a host mprotect to read-only and back; over the
//! host's own mappings (MAP_SHARED anonymous memory, a memfd, a read-only file) it must not touch
//! the host protection and drops every shadow table instead. `tests/c/tighten.c` checks what the
//! guest sees in each case — the fault right after mprotect, the access again after it is given
//! back, the memfd's contents, EACCES for write access to a read-only file's mapping — against
//! native. Needs /dev/kvm and gcc: FAILS (never skips) without them.

use std::path::Path;
use std::process::Command;

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

const RUNNER: &str = env!("CARGO_BIN_EXE_lwk-run");

#[test]
fn issue_13_tightening_mprotect_of_private_and_shared_mappings_in_one_thread_like_native() {
    if let Err(e) = multios_lwk::check_kvm() {
        panic!("issue #13 tests need KVM and it is not usable here: {e}");
    }
    let dir = Scratch::new("multios-issue-13", "tighten");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/tighten.c");
    let prog = dir.path().join("tighten");
    let o = Command::new("gcc")
        .args(["-O1", "-g", "-o"])
        .arg(&prog)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("running gcc (apt-get install gcc libc6-dev): {e}"));
    assert!(o.status.success(), "gcc: {}", String::from_utf8_lossy(&o.stderr));

    let native = Command::new(&prog)
        .arg(dir.path().join("native.data"))
        .output()
        .expect("native run");
    assert!(native.status.success(), "native: {native:?}");
    let lwk = Command::new(RUNNER)
        .arg(&prog)
        .arg(dir.path().join("lwk.data"))
        .output()
        .expect("lwk-run");
    assert!(
        lwk.status.success(),
        "in the LWK: {}",
        String::from_utf8_lossy(&lwk.stderr)
    );
    let out = String::from_utf8_lossy(&lwk.stdout);
    assert_eq!(
        out,
        String::from_utf8_lossy(&native.stdout),
        "same output as native"
    );
    for what in ["private anonymous", "shared anonymous", "shared memfd"] {
        assert!(
            out.contains(&format!(
                "{what}: written, after PROT_READ SIGSEGV, after RW written, holds c"
            )),
            "{out}"
        );
    }
    assert!(out.contains("memfd's byte: c"), "{out}");
    assert!(
        out.contains("after PROT_NONE SIGSEGV, after PROT_READ read (file); RW: -1"),
        "{out}"
    );
}
