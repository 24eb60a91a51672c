//! Issue #16 through the CLI:
//! - a program's arguments are bytes, not necessarily UTF-8: `emulate`, `emulate --compare`,
//!   `profile` and `validate --workload` pass them to the program unchanged (they refused them
//!   with "invalid UTF-8 was detected in one or more arguments"; `lwk run` already took them);
//! - a suite's `[workload.check] exit` outside 0–255 is refused when the suite is loaded.
//!
//! The emulator, the eBPF profiler (root) and the validation run for real, one pair each.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use std::process::Output;

mod common;
#[path = "../../../testsupport/scratch.rs"]
mod scratch;

use common::multios_in as multios;

fn os(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

fn refs(v: &[OsString]) -> Vec<&OsStr> {
    v.iter().map(OsString::as_os_str).collect()
}

/// A file whose name is not UTF-8 (`bad\xff`), holding `x`, in a fresh scratch directory.
fn bad_name(tag: &str) -> (scratch::Scratch, OsString) {
    let dir = scratch::Scratch::new("multios-issue16", tag);
    let name = OsString::from_vec(b"bad\xff".to_vec());
    std::fs::write(dir.join(&name), "x\n").expect("the file with a non-UTF-8 name");
    (dir, name)
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "multios failed: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn issue_16_emulate_passes_non_utf8_arguments_unchanged() {
    let (dir, name) = bad_name("emulate-args");
    let mut a = os(&["emulate", "--policy", "none", "--", "cat"]);
    a.push(name.clone());
    let o = multios(&dir, &refs(&a));
    assert_eq!(ok(&o), "x\n");
    // --compare: every run (native and emulated) reads the file; the first native run's output shown.
    let mut a = os(&[
        "emulate",
        "--policy",
        "all",
        "--fc",
        "10us",
        "--mechanism",
        "shm",
        "--compare",
        "--runs",
        "1",
        "--",
        "cat",
    ]);
    a.push(name);
    let o = multios(&dir, &refs(&a));
    assert_eq!(ok(&o), "x\n");
}

#[test]
fn issue_16_profile_passes_non_utf8_arguments_unchanged() {
    let (dir, name) = bad_name("profile-args");
    let mut a = os(&["--json", "profile", "-o", "p.json", "--", "cat"]);
    a.push(name);
    let o = multios(&dir, &refs(&a));
    let out = ok(&o);
    assert!(out.starts_with("x\n"), "the program read the file: {out}");
    let p: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("p.json")).expect("the profile")).expect("JSON");
    // Recorded lossily; the program got the bytes.
    assert_eq!(p["command"], serde_json::json!(["cat", "bad\u{fffd}"]), "{p}");
    assert_eq!(p["exit"]["code"], 0, "{p}");
}

#[test]
fn issue_16_validate_workload_passes_non_utf8_arguments_unchanged() {
    let (dir, name) = bad_name("validate-args");
    let log = dir.join("runs.log");
    let script = format!("cat \"$1\" >> {}", log.display());
    let mut a = os(&[
        "--json",
        "validate",
        "--workload",
        "bad",
        "--mechanism",
        "shm",
        "--policy",
        "all",
        "--fc",
        "10us",
        "--runs",
        "1",
        "--out",
        "out",
        "--",
        "sh",
        "-c",
        &script,
        "sh",
    ]);
    a.push(name);
    let o = multios(&dir, &refs(&a));
    let v: serde_json::Value = serde_json::from_str(&ok(&o)).expect("JSON");
    // The profiled run, the native and the emulated run each read the file.
    let runs = std::fs::read_to_string(&log).expect("the runs' log");
    assert_eq!(runs, "x\n".repeat(3), "{v}");
    assert_eq!(
        v["workloads"][0]["argv"]
            .as_array()
            .and_then(|a| a.last())
            .and_then(|s| s.as_str()),
        Some("bad\u{fffd}"),
        "{v}"
    );
    assert!(OsStr::from_bytes(b"bad\xff").to_str().is_none());
}

#[test]
fn issue_16_suite_check_exit_outside_0_to_255_is_refused_at_load_time() {
    let dir = scratch::Scratch::new("multios-issue16", "suite-exit");
    for bad in ["300", "-1", "256"] {
        let suite =
            format!("[[workload]]\nname = \"w\"\nargv = [\"true\"]\n[workload.check]\nexit = {bad}\n");
        std::fs::write(dir.join("s.toml"), suite).expect("the suite");
        let o = multios(
            &dir,
            &refs(&os(&[
                "validate",
                "--suite",
                "s.toml",
                "--mechanism",
                "shm",
                "--policy",
                "all",
                "--fc",
                "10us",
                "--runs",
                "1",
                "--out",
                "out",
            ])),
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{err}");
        for want in ["s.toml", "'w'", &format!("exit = {bad}"), "0–255"] {
            assert!(err.contains(want), "'{want}' missing: {err}");
        }
        // Refused before anything ran: no output directory was made.
        assert!(!dir.join("out").join("points.csv").exists(), "{err}");
    }
}
