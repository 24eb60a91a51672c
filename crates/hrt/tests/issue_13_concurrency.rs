//! Split execution's concurrency and identity regressions (issue #13, found 2026-11-28): several
//! threads' first hrt_call at once all succeed (each used to start the same vCPU id, EEXIST);
//! hrt_call made by a function in the guest runs it directly and hrt_invoke_func there is
//! HRT_ENESTED (both used to wait forever for a vCPU the caller held); getuid/geteuid/getppid in
//! the guest follow the program's setresuid, the function's own, and the parent's death (they
//! were cached at hrt_init). Needs /dev/kvm and gcc (the credential checks need root).

use std::path::PathBuf;
use std::process::Command;

/// The directory holding libmultios_hrt.so for this build (the test binary's `deps/` or its parent).
fn lib_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().expect("deps dir").to_path_buf();
    for d in [deps.clone(), deps.parent().expect("target dir").to_path_buf()] {
        if d.join("libmultios_hrt.so").exists() {
            return d;
        }
    }
    panic!(
        "libmultios_hrt.so not found next to {}: build the crate (cargo build -p multios-hrt)",
        exe.display()
    );
}

/// Builds tests/c/issue_13_concurrency.c once per test binary.
fn program() -> PathBuf {
    static EXE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    EXE.get_or_init(|| {
        let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("hrt-concurrency-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        let out = dir.join("concurrency");
        let lib = lib_dir();
        let o = Command::new("gcc")
            .args(["-O2", "-g", "-Wall", "-I"])
            .arg(manifest.join("include"))
            .arg(manifest.join("tests/c/issue_13_concurrency.c"))
            .arg("-L")
            .arg(&lib)
            .args(["-lmultios_hrt", "-lpthread"])
            .arg(format!("-Wl,-rpath,{}", lib.display()))
            .arg("-o")
            .arg(&out)
            .output()
            .unwrap_or_else(|e| panic!("running gcc (apt-get install gcc libc6-dev): {e}"));
        assert!(o.status.success(), "gcc: {}", String::from_utf8_lossy(&o.stderr));
        out
    })
    .clone()
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
