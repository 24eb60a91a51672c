//! Issue #15 through the CLI, `multios validate --workload NAME [--workdir DIR] -- CMD`: every run
//! of a workload — the profiled one, the native, emulated and LWK ones — runs in the same kind of
//! directory (the caller's without `--workdir`, a fresh copy of DIR per run with it), and a
//! workload whose profiled run fails is not validated, loudly, with a non-zero exit. Needs root
//! (the eBPF profiler), the emulator and /dev/kvm, and runs them for real; one pair per target.

use std::path::Path;
use std::process::{Command, Output};

mod common;
#[path = "../../../testsupport/scratch.rs"]
mod scratch;

use common::multios_in as multios;

fn json(o: &Output) -> serde_json::Value {
    assert!(
        o.status.success(),
        "multios failed: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&o.stdout)))
}

/// One emulator pair (shm, policy all, 10 µs) and, with `lwk`, one LWK pair.
fn validate_args<'a>(name: &'a str, lwk: bool, extra: &[&'a str], cmd: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "--json",
        "validate",
        "--workload",
        name,
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
    ];
    if lwk {
        v.push("--lwk");
    }
    v.extend_from_slice(extra);
    v.push("--");
    v.extend_from_slice(cmd);
    v
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(str::to_string)
        .collect()
}

/// Before this, the profiled run (and the LWK pair's runs) ran in an empty scratch directory
/// while the emulator's pair ran in the caller's: `cat localfile` failed in the profile, which
/// was projected from, and `-- ./prog` (a relative path) was "not in any directory of $PATH".
#[test]
fn issue_15_validate_workload_runs_every_run_in_the_callers_directory() {
    let dir = scratch::Scratch::new("multios-issue15", "workload-cwd");
    let (cwd_log, out_log) = (dir.join("cwd.log"), dir.join("out.log"));
    std::fs::write(dir.join("localfile"), "hi\n").expect("localfile");
    let script = format!(
        "#!/bin/sh\npwd >> {}\ncat localfile >> {} 2>&1\necho $? >> {}\n",
        cwd_log.display(),
        out_log.display(),
        out_log.display()
    );
    std::fs::write(dir.join("prog.sh"), script).expect("prog.sh");
    let chmod = Command::new("chmod")
        .args(["+x", "prog.sh"])
        .current_dir(&*dir)
        .status();
    assert!(chmod.is_ok_and(|s| s.success()));
    let o = multios(&dir, &validate_args("catlocal", true, &[], &["./prog.sh"]));
    let v = json(&o);
    // One profiled run, a native and an emulated run, a native and an LWK run: all in the caller's
    // directory, all of them reading its file.
    let cwds = lines(&cwd_log);
    assert_eq!(cwds.len(), 5, "{cwds:?}\n{v}");
    let here = std::fs::canonicalize(&*dir).expect("canonical");
    for c in &cwds {
        assert_eq!(
            std::fs::canonicalize(c).ok().as_deref(),
            Some(here.as_path()),
            "{cwds:?}"
        );
    }
    assert_eq!(lines(&out_log), ["hi", "0"].repeat(5), "{v}");
    let points = v["workloads"][0]["points"].as_array().expect("points");
    assert_eq!(points.len(), 2, "{v}");
    assert!(points.iter().all(|p| p["invalid"].is_null()), "{v}");
    // Nothing of the runs' own was left in the caller's directory, and it is still there.
    assert!(dir.join("localfile").is_file());
}

/// With `--workdir DIR`, every run (the profiled one too) gets a fresh copy of DIR: it sees DIR's
/// files and nothing an earlier run left, and DIR itself is never written.
#[test]
fn issue_15_validate_workload_with_workdir_runs_every_run_in_a_fresh_copy() {
    let dir = scratch::Scratch::new("multios-issue15", "workload-workdir");
    let src = dir.join("src");
    std::fs::create_dir(&src).expect("src");
    std::fs::write(src.join("localfile"), "hi\n").expect("localfile");
    let log = dir.join("runs.log");
    let script = format!(
        "echo \"$(pwd) $(cat localfile) $(test -e marker && echo dirty || echo clean)\" >> {}; touch marker",
        log.display()
    );
    let o = multios(
        &dir,
        &validate_args("copy", false, &["--workdir", "src"], &["sh", "-c", &script]),
    );
    let v = json(&o);
    let runs = lines(&log);
    // One profiled run, a native and an emulated run.
    assert_eq!(runs.len(), 3, "{runs:?}\n{v}");
    for r in &runs {
        let f: Vec<&str> = r.split(' ').collect();
        assert_eq!(f.len(), 3, "{r}");
        assert_ne!(Path::new(f[0]), src.as_path(), "{runs:?}");
        assert_ne!(Path::new(f[0]), dir.path(), "{runs:?}");
        assert_eq!(&f[1..], ["hi", "clean"], "{runs:?}");
    }
    assert!(!src.join("marker").exists() && !dir.join("marker").exists());
    let o = multios(
        &dir,
        &validate_args("copy", false, &["--workdir", "nonexistent"], &["true"]),
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--workdir nonexistent") && err.contains("not a directory"),
        "{err}"
    );
}

/// `-- cat /nonexistent_file` was "validated" (exit 0, 94.96 %, no note, its stderr swallowed):
/// the profiled run that failed is now named with its exit status and its stderr, and the command
/// fails since no workload could be validated.
#[test]
fn issue_15_validate_workload_whose_profiled_run_fails_is_not_validated() {
    let dir = scratch::Scratch::new("multios-issue15", "workload-fails");
    let o = multios(
        &dir,
        &validate_args("nofile", false, &[], &["cat", "/nonexistent_file"]),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{err}");
    for want in [
        "'nofile'",
        "profiled run 1 of 1",
        "exit code 1",
        "expected exit code 0",
        "/nonexistent_file: No such file or directory",
    ] {
        assert!(err.contains(want), "'{want}' missing: {err}");
    }
    assert!(!String::from_utf8_lossy(&o.stdout).contains("\"accuracy\""));
}
