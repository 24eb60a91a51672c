//! Issue #15 through the CLI, `multios validate --suite FILE`: the paths a suite names stay inside
//! the workload's directory, and a suite that is not UTF-8 says where. A workload's `stdin =
//! "../../../../etc/hostname"` was accepted and read /etc/hostname (an input's `file` was already
//! refused outside the directory), `[workload.check] creates = ["/etc/passwd"]` always passed, and
//! a bad byte was named by its offset alone ("not UTF-8 text (byte 22)").

use std::path::Path;
use std::process::{Command, Output, Stdio};

#[path = "../../../testsupport/scratch.rs"]
mod scratch;

/// `multios validate --suite FILE` with one emulator pair (shm, policy all, 10 µs).
fn validate(cwd: &Path, suite: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_multios"))
        .args([
            "--json",
            "validate",
            "--suite",
            suite,
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
        ])
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run multios validate: {e}"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A workload of `cat` reading `stdin` and checking that it `creates` a file: the two fields set.
fn suite(stdin: &str, creates: &str) -> String {
    format!(
        "[[workload]]\nname = \"cat\"\nargv = [\"sh\", \"-c\", \"cat > copy.txt; cat copy.txt\"]\nstdin = \"{stdin}\"\n\
         [[workload.input]]\nfile = \"in.txt\"\nkind = \"content\"\ntext = \"a\\nb\\nc\\n\"\n\
         [workload.check]\ncreates = [\"{creates}\"]\nstdout_contains = \"a\\nb\\nc\"\n"
    )
}

/// `stdin` and `creates` outside the workload's directory are refused when the suite is loaded,
/// naming the file, the workload, the field and the rule (before, the run read /etc/hostname and
/// the check passed on /etc/passwd).
#[test]
fn issue_15_suite_stdin_and_creates_must_stay_in_the_workload_directory() {
    let d = scratch::Scratch::new("multios-issue15", "suite-paths");
    for (stdin, creates, field) in [
        (
            "../../../../etc/hostname",
            "copy.txt",
            "stdin = \"../../../../etc/hostname\"",
        ),
        ("/etc/hostname", "copy.txt", "stdin = \"/etc/hostname\""),
        ("in.txt", "/etc/passwd", "creates = \"/etc/passwd\""),
        ("in.txt", "../x", "creates = \"../x\""),
        ("in.txt", "", "creates = \"\""),
    ] {
        std::fs::write(d.join("s.toml"), suite(stdin, creates)).expect("write the suite");
        let o = validate(&d, "s.toml");
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{field}: {err}");
        assert!(
            err.contains("s.toml: workload 'cat'")
                && err.contains(field)
                && err.contains("relative path inside the workload's directory"),
            "{field}: {err}"
        );
        assert!(!d.join("out/points.csv").exists(), "{field}: nothing was run");
    }
}

/// The same workload with paths inside its directory runs: `cat` reads the suite's stdin file
/// (what `sh -c 'cat > copy.txt; cat copy.txt' < in.txt` prints natively) and the check finds
/// copy.txt in the run's copy.
#[test]
fn issue_15_suite_stdin_inside_the_workload_directory_is_read() {
    let d = scratch::Scratch::new("multios-issue15", "suite-paths-ok");
    std::fs::write(d.join("in.txt"), "a\nb\nc\n").expect("in.txt");
    let native = Command::new("sh")
        .args(["-c", "cat > copy.txt; cat copy.txt"])
        .current_dir(&*d)
        .stdin(std::fs::File::open(d.join("in.txt")).expect("open in.txt"))
        .output()
        .expect("sh");
    assert_eq!(text(&native.stdout), "a\nb\nc\n");
    std::fs::write(d.join("s.toml"), suite("./in.txt", "copy.txt")).expect("write the suite");
    let o = validate(&d, "s.toml");
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(v["skipped"].as_array().map(Vec::len), Some(0), "{v}");
    let names: Vec<&str> = v["workloads"]
        .as_array()
        .map(|w| w.iter().filter_map(|w| w["name"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(names, ["cat"], "{v}");
}

/// A suite that is not UTF-8 is refused with the line and column of the bad byte, as an editor
/// shows them (the byte offset alone before).
#[test]
fn issue_15_a_suite_that_is_not_utf8_names_the_line_and_column() {
    let d = scratch::Scratch::new("multios-issue15", "suite-utf8");
    std::fs::write(
        d.join("s.toml"),
        b"[[workload]]\nname = \"a\"\nargv = [\"\xc3\xa9t\xff\"]\n",
    )
    .expect("write the suite");
    let o = validate(&d, "s.toml");
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("s.toml: not UTF-8 text at line 3, column 12 (byte 36)"),
        "{err}"
    );
}
