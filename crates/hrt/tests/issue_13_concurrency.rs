//! Split execution's concurrency and identity regressions (issue #13, found 2026-11-28): several
//! threads' first hrt_call at once all succeed (each used to start the same vCPU id, EEXIST);
//! hrt_call made by a function in the guest runs it directly and hrt_invoke_func there is
//! HRT_ENESTED (both used to wait forever for a vCPU the caller held); getuid/geteuid/getppid in
//! the guest follow the program's setresuid, the function's own, and the parent's death (they
//! were cached at hrt_init). Needs /dev/kvm and gcc (the credential checks need root).

mod common;
use common::lib_dir;
use std::path::PathBuf;
use std::process::Command;

/// Builds tests/c/issue_13_concurrency.c once per test binary.
fn program() -> PathBuf {
    static EXE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    common::program_once(&EXE, "issue_13_concurrency", &[])
}

/// Runs one part; kills it (by its pid) after `limit`. Returns stdout after checking every line.
fn run(part: &str, limit: std::time::Duration, min_oks: usize) -> String {
    multios_lwk::check_kvm().expect("split execution needs /dev/kvm");
    let mut child = Command::new(program())
        .arg(part)
        .env("LD_LIBRARY_PATH", lib_dir())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("running the program");
    let t0 = std::time::Instant::now();
    while child.try_wait().expect("waiting").is_none() {
        if t0.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "{part} ran longer than {limit:?} (a deadlock):\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && !stdout.contains("not ok"),
        "{part} failed ({:?}):\n{stdout}\n{stderr}",
        out.status
    );
    let oks = stdout.lines().filter(|l| l.starts_with("ok - ")).count();
    assert!(oks >= min_oks, "every check of {part} ran:\n{stdout}");
    assert!(!stderr.contains("File exists"), "{stderr}");
    stdout
}

#[test]
fn issue_13_concurrency_first_calls_at_once_start_distinct_vcpus() {
    run("race", std::time::Duration::from_secs(120), 5);
}

#[test]
fn issue_13_concurrency_nested_calls_run_directly_and_nested_invocations_are_refused() {
    run("nested", std::time::Duration::from_secs(60), 5);
}

#[test]
fn issue_13_concurrency_guest_ids_follow_setresuid_and_a_dead_parent() {
    run("ids", std::time::Duration::from_secs(60), 3);
}
