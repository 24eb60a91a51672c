//! Issue #15 through the CLI, `multios emulate --compare`: every run gets the same stdin (captured
//! once, replayed), its own captured output (compared between runs, the first native run's shown
//! once), a fresh copy of --workdir and --setup/--cleanup around it; a pair whose runs end
//! differently invalidates the comparison. No timing is asserted.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

const EMU: [&str; 6] = ["emulate", "--compare", "--policy", "all", "--fc", "10us"];

/// Runs multios in `cwd` with `args`, feeding it `input` on stdin.
fn run_in(cwd: &Path, args: &[&str], input: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run multios {args:?}: {e}"));
    if let Some(mut i) = child.stdin.take() {
        i.write_all(input).expect("feed stdin");
    }
    child.wait_with_output().expect("multios ends")
}

fn args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    EMU.iter().copied().chain(extra.iter().copied()).collect()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn issue_15_stdin_is_replayed_to_every_run_and_the_output_shown_once() {
    let d = scratch::Scratch::new("multios-issue15", "stdin");
    for mech in ["shm", "proxy"] {
        let o = run_in(
            &d,
            &args(&["--runs", "2", "--mechanism", mech, "--", "wc", "-l"]),
            b"a\nb\nc\n",
        );
        let err = text(&o.stderr);
        assert!(o.status.success(), "{mech}: {err}");
        assert_eq!(text(&o.stdout), "3\n", "{mech}: {err}");
        assert!(err.contains("stdin: 6 bytes captured"), "{mech}: {err}");
        assert!(
            err.contains("every run wrote the same stdout and stderr"),
            "{mech}: {err}"
        );
        assert_eq!(err.matches("  pair ").count(), 2, "{mech}: {err}");
    }
}

#[test]
fn issue_15_an_output_that_differs_between_runs_is_reported() {
    let d = scratch::Scratch::new("multios-issue15", "differs");
    let o = run_in(&d, &args(&["--runs", "2", "--", "date", "+%N"]), b"");
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(text(&o.stdout).lines().count(), 1, "shown once: {err}");
    assert!(
        err.contains("wrote a different stdout from the first native run's, from byte"),
        "{err}"
    );
}

#[test]
fn issue_15_a_run_that_fails_alone_invalidates_the_pair() {
    let d = scratch::Scratch::new("multios-issue15", "invalid");
    let o = run_in(&d, &args(&["--runs", "2", "--", "sh", "-c", "mkdir d"]), b"");
    let err = text(&o.stderr);
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains("the comparison is invalid: pair 1 is invalid"),
        "{err}"
    );
    assert!(err.contains("--workdir or --setup/--cleanup"), "{err}");
}

#[test]
fn issue_15_setup_and_cleanup_run_around_every_run() {
    let d = scratch::Scratch::new("multios-issue15", "setup");
    let o = run_in(
        &d,
        &args(&[
            "--runs",
            "3",
            "--setup",
            "echo s >> setups; rm -rf d",
            "--cleanup",
            "echo c >> cleanups",
            "--",
            "sh",
            "-c",
            "mkdir d",
        ]),
        b"",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let lines = |f: &str| {
        std::fs::read_to_string(d.join(f))
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert_eq!((lines("setups"), lines("cleanups")), (6, 6));
    assert!(
        text(&o.stdout).is_empty(),
        "hooks write to stderr, not the program's stdout"
    );
}

#[test]
fn issue_15_workdir_is_copied_afresh_for_every_run() {
    let d = scratch::Scratch::new("multios-issue15", "workdir");
    let w = d.join("w");
    std::fs::create_dir_all(&w).expect("mkdir");
    std::fs::write(w.join("f"), "hi\n").expect("write");
    let ws = w.display().to_string();
    let o = run_in(
        &d,
        &args(&[
            "--runs",
            "2",
            "--workdir",
            &ws,
            "--",
            "sh",
            "-c",
            "cat f; mkdir d; pwd",
        ]),
        b"",
    );
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(text(&o.stdout).starts_with("hi\n"), "{err}");
    assert!(err.contains("every run wrote the same stdout"), "{err}");
    assert!(!w.join("d").exists(), "the original directory is left alone");
}

#[test]
fn issue_15_json_has_the_pairs_and_the_interval() {
    let d = scratch::Scratch::new("multios-issue15", "json");
    let o = run_in(
        &d,
        &[&["--json"][..], &args(&["--runs", "6", "--", "true"])].concat(),
        b"",
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    let c = &v["compare"];
    assert_eq!(c["pairs"].as_array().map(Vec::len), Some(6), "{c}");
    assert_eq!(c["pairs"][1]["order"], "EN");
    for k in [
        "native_secs",
        "measured_speedup",
        "naive_speedup",
        "refined_speedup",
    ] {
        assert!(c[k].is_number(), "{k}: {c}");
    }
    assert!(
        c["speedup_ci"].is_array() && c["verdict"]["text"].is_string(),
        "{c}"
    );
    assert!(v["delegated_total"].is_number(), "the report's fields stay");
}

#[test]
fn issue_15_the_comparison_flags_need_compare() {
    let d = scratch::Scratch::new("multios-issue15", "flags");
    let o = run_in(
        &d,
        &["emulate", "--policy", "none", "--setup", "true", "--", "true"],
        b"",
    );
    assert!(!o.status.success());
    assert!(text(&o.stderr).contains("add --compare"), "{}", text(&o.stderr));
}
