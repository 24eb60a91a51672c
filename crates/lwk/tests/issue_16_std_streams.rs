//! Issue #16: a standard stream closed when the LWK starts is closed in the guest (it was Rust's
//! /dev/null placeholder: `prog >&-` wrote successfully where natively it gets EBADF), and the
//! VMM's own messages never land in a file the guest opened on fd 2 (they did: a guest that
//! closed its stderr and opened a log found "multios lwk: ioctl request … has no known layout" in
//! it). Needs /dev/kvm and gcc.

use std::path::{Path, PathBuf};
use std::process::Command;

const RUNNER: &str = env!("CARGO_BIN_EXE_lwk-run");

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

fn require_kvm() {
    if let Err(e) = multios_lwk::check_kvm() {
        panic!("issue #16 tests need KVM and it is not usable here: {e}");
    }
}

fn build(dir: &Scratch) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/stdstreams.c");
    let out = dir.path().join("stdstreams");
    let o = Command::new("gcc")
        .args(["-O1", "-o"])
        .arg(&out)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("running gcc (apt-get install gcc libc6-dev): {e}"));
    assert!(o.status.success(), "gcc: {}", String::from_utf8_lossy(&o.stderr));
    out
}

/// Runs `prefix prog REPORT LOG` through `sh -c` with `redirect` applied; returns (report, log,
/// the run's stderr, its exit code).
fn run(dir: &Scratch, tag: &str, prefix: &str, prog: &Path, redirect: &str) -> (String, String, String, i32) {
    let report = dir.path().join(format!("{tag}.report"));
    let log = dir.path().join(format!("{tag}.log"));
    let script = format!(
        "exec {prefix} '{}' '{}' '{}' {redirect}",
        prog.display(),
        report.display(),
        log.display()
    );
    let o = Command::new("sh").args(["-c", &script]).output().expect("sh");
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_else(|e| format!("<{}: {e}>", p.display()));
    (
        read(&report),
        read(&log),
        String::from_utf8_lossy(&o.stderr).into_owned(),
        o.status.code().unwrap_or(-1),
    )
}

#[test]
fn issue_16_closed_standard_streams_stay_closed_in_the_guest() {
    require_kvm();
    let dir = Scratch::new("multios-issue16", "stdstreams");
    let prog = build(&dir);
    for (i, redirect) in ["", "<&-", ">&-", "2>&-", "<&- >&-"].iter().enumerate() {
        let native = run(&dir, &format!("n{i}"), "", &prog, redirect);
        let lwk = run(&dir, &format!("l{i}"), RUNNER, &prog, redirect);
        assert_eq!(native.3, 0, "native `{redirect}`: {native:?}");
        assert_eq!(lwk.3, 0, "LWK `{redirect}`: {lwk:?}");
        assert_eq!(lwk.0, native.0, "the streams the guest finds with `{redirect}`");
    }
}

#[test]
fn issue_16_vmm_messages_never_land_in_the_guests_files() {
    require_kvm();
    let dir = Scratch::new("multios-issue16", "vmmdiag");
    let prog = build(&dir);
    let native = run(&dir, "n", "", &prog, "");
    assert_eq!(native.1, "mine\n");
    assert!(native.0.ends_with("log on fd 2\n"), "{native:?}");
    let lwk = run(&dir, "l", RUNNER, &prog, "");
    assert_eq!(lwk.3, 0, "{lwk:?}");
    assert_eq!(lwk.0, native.0, "the guest's report");
    assert_eq!(lwk.1, "mine\n", "the guest's log holds only what it wrote");
    assert!(
        lwk.2.contains("has no known layout"),
        "the VMM's note goes to its own stderr: {:?}",
        lwk.2
    );
}
