//! The floating-point control state across split calls (issue #13, found 2026-11-28): a function
//! ran with the vCPU's own MXCSR and x87 control word instead of the caller's (round-to-nearest
//! under a caller's FE_DOWNWARD, no flush-to-zero under its FTZ), the flags it raised and the
//! rounding mode it set never reached the caller, and a mode it set stayed on the vCPU for the next
//! caller's function. `tests/c/issue_13_fp.c` runs the same checks with plain calls (native) and
//! with hrt_call/hrt_invoke_func (split), and the two outputs must be the same line for line.
//! Needs /dev/kvm and gcc.

mod common;
use common::lib_dir;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Builds tests/c/issue_13_fp.c once per test binary.
fn program() -> PathBuf {
    static EXE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    common::program_once(&EXE, "issue_13_fp", &["-lm"])
}

/// Runs `part` natively or split; kills it (by its pid) after a minute. Returns its stdout.
fn run(how: &str, part: &str) -> String {
    let mut child = Command::new(program())
        .args([how, part])
        .env("LD_LIBRARY_PATH", lib_dir())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running the program");
    let t0 = Instant::now();
    while child.try_wait().expect("waiting").is_none() {
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{how} {part} failed ({:?}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The split run prints what the native run prints, line for line.
fn same_as_native(part: &str, lines: usize) {
    multios_lwk::check_kvm().expect("split execution needs /dev/kvm");
    let native = run("native", part);
    assert_eq!(
        native.lines().count(),
        lines,
        "every check of {part} ran natively:\n{native}"
    );
    let split = run("split", part);
    for (n, s) in native.lines().zip(split.lines()) {
        assert_eq!(
            s, n,
            "split (left) differs from a plain call (right)\nnative:\n{native}\nsplit:\n{split}"
        );
    }
    assert_eq!(
        split.lines().count(),
        lines,
        "every check of {part} ran split:\n{split}"
    );
}

#[test]
fn issue_13_split_calls_carry_the_callers_floating_point_state() {
    // Each rounding mode, FTZ+DAZ, x87 single precision and the caller's flags, seen inside; the
    // flags raised and the mode set inside, seen by the caller after; an invocation as a thread.
    same_as_native("carry", 18);
}

#[test]
fn issue_13_split_calls_leave_no_floating_point_state_on_the_vcpu() {
    // main's function sets FE_UPWARD and FTZ and raises flags (main has them after, as natively);
    // main resets; another thread's function on the same (only) vCPU then runs in nearest, no FTZ,
    // no flags.
    same_as_native("leak", 4);
}
