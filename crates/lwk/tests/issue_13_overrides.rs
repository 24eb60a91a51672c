//! Issue #13: function overrides (`lwk run --overrides FILE`). The override runs and the original
//! does not (the forwarded-event trace has no clock_gettime left), its clocks are right (never
//! backwards, the realtime clock within a second of the host's), and a program without the
//! overridden function still runs. Needs /dev/kvm and gcc.

use multios_lwk::trace::{Kind, Trace};
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
use scratch::Scratch;

const RUNNER: &str = env!("CARGO_BIN_EXE_lwk-run");

fn build(dir: &Scratch) -> PathBuf {
    if let Err(e) = multios_lwk::check_kvm() {
        panic!("issue #13 tests need KVM and it is not usable here: {e}");
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/clocks.c");
    let out = dir.path().join("clocks");
    let o = Command::new("gcc")
        .args(["-O1", "-g", "-o"])
        .arg(&out)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("running gcc (apt-get install gcc libc6-dev): {e}"));
    assert!(o.status.success(), "gcc: {}", String::from_utf8_lossy(&o.stderr));
    out
}

/// Runs `prog N` in the LWK with a trace (and overrides when given): (stdout, stderr, trace).
fn run(dir: &Scratch, prog: &Path, n: u32, overrides: Option<&Path>, tag: &str) -> (String, String, Trace) {
    let trace = dir.path().join(format!("{tag}.trace"));
    let mut cmd = Command::new(RUNNER);
    cmd.arg(prog).arg(n.to_string()).env("LWK_TRACE", &trace);
    if let Some(o) = overrides {
        cmd.env("LWK_OVERRIDES", o);
    }
    let o = cmd.output().expect("lwk-run");
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    );
    assert!(o.status.success(), "{tag}: {err}");
    (out, err, Trace::load(&trace).expect("trace"))
}

fn field(out: &str, name: &str) -> i64 {
    let mut w = out.split_whitespace();
    while let Some(k) = w.next() {
        if k == name {
            return w
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{name} in {out}"));
        }
    }
    panic!("no {name} in {out}")
}

fn clock_calls(t: &Trace) -> usize {
    t.events
        .iter()
        .filter(|e| {
            e.kind == Kind::Call && ["clock_gettime", "gettimeofday", "time"].contains(&e.name.as_str())
        })
        .count()
}

#[test]
fn issue_13_clock_override_runs_in_the_lwk_and_the_original_does_not() {
    let dir = Scratch::new("multios-issue-13", "overrides");
    let prog = build(&dir);
    let file = dir.path().join("clocks.yaml");
    std::fs::write(
        &file,
        "overrides:\n  - function: clock_gettime\n    with: tsc\n  - function: gettimeofday\n    with: tsc\n  - function: time\n    with: tsc\n",
    )
    .expect("write the overrides file");
    let n = 2000;
    let (plain, _, t0) = run(&dir, &prog, n, None, "plain");
    let (over, err, t1) = run(&dir, &prog, n, Some(&file), "overridden");
    assert!(!err.contains("no effect"), "every override binds: {err}");
    // Without overrides every call is forwarded; with them only the re-anchoring reads remain
    // (two real reads per 50 ms).
    assert!(
        clock_calls(&t0) > n as usize,
        "plain run forwards its clock reads: {}",
        clock_calls(&t0)
    );
    assert!(
        clock_calls(&t1) < 20,
        "overridden run still forwards {} clock reads",
        clock_calls(&t1)
    );
    for out in [&plain, &over] {
        assert_eq!(field(out, "backwards"), 0, "{out}");
        // The CPU-time clock never goes backwards and counts no more than the time that passed
        // (one thread), give or take an interval's extrapolation (50 ms).
        assert_eq!(field(out, "cpu_backwards"), 0, "{out}");
        assert!(
            field(out, "cpu_ns") <= field(out, "elapsed_ns") + 60_000_000,
            "{out}"
        );
        let host = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock after 1970")
            .as_secs() as i64;
        for f in ["realtime_s", "gettimeofday_s", "time_s"] {
            assert!(
                (field(out, f) - host).abs() <= 2,
                "{f} far from the host's {host}: {out}"
            );
        }
    }
}

#[test]
fn issue_13_a_program_without_the_overridden_function_still_runs() {
    let dir = Scratch::new("multios-issue-13", "no-symbol");
    let file = dir.path().join("o.yaml");
    std::fs::write(&file, "overrides:\n  - function: clock_gettime\n    with: tsc\n").expect("write");
    for (prog, warning) in [
        ("/bin/true", "do not call clock_gettime"),
        ("/bin/busybox", "statically linked"),
    ] {
        let o = Command::new(RUNNER)
            .arg(prog)
            .args(if prog.ends_with("busybox") {
                vec!["true"]
            } else {
                vec![]
            })
            .env("LWK_OVERRIDES", &file)
            .output()
            .expect("lwk-run");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(o.status.success(), "{prog}: {err}");
        assert!(
            err.contains(warning),
            "{prog}: warning '{warning}' expected, got: {err}"
        );
    }
}
