//! Odd values on the command line (reported 2026-11-28): each gets an error naming the flag or the
//! file and line at fault, before anything runs — no panic, no abort, no run wasted. Before:
//! `noise scale --ranks 18446744073709551615` panicked (capacity overflow) and larger counts
//! aborted allocating; `aam kv --value-bytes 2^64-1` panicked in five threads, `--connections
//! 100000` aborted; `noise selfish --threshold NaN`, `model fit --gammas 1,-2,0` and a pairs file
//! with NaN gave numbers; `aam bench --runs 0` gave a verdict from no runs; `lwk run` ran a file
//! without execute permission (natively "Permission denied") and checked `--summary` only after
//! the program had run.

use std::process::Command;

#[path = "../../../testsupport/exec_file.rs"]
mod exec_file;

fn multios(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_multios"))
        .env("NO_COLOR", "1")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run multios: {e}"));
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

fn refused(args: &[&str], names: &str) {
    let (code, text) = multios(args);
    assert!(
        code != 0 && code != 101 && code != 134,
        "{args:?}: exit {code}\n{text}"
    );
    assert!(!text.contains("panicked"), "{args:?}: {text}");
    assert!(text.contains(names), "{args:?} must name {names}: {text}");
}

#[test]
fn issue_16_odd_values_are_refused_with_the_flag_named() {
    let huge = "18446744073709551615";
    refused(
        &[
            "noise",
            "scale",
            "--signature",
            "10Hz:1ms",
            "--work",
            "1ms",
            "--ranks",
            huge,
        ],
        "--ranks",
    );
    refused(
        &[
            "noise",
            "scale",
            "--signature",
            "10Hz:1ms",
            "--work",
            "1ms",
            "--ranks",
            "10000000000",
        ],
        "--ranks",
    );
    refused(
        &["aam", "kv", "--value-bytes", huge, "--requests", "10"],
        "--value-bytes",
    );
    refused(
        &["aam", "kv", "--connections", "100000", "--requests", "10"],
        "--connections",
    );
    refused(&["aam", "kv", "--duration", "0s"], "--duration");
    refused(&["aam", "bench", "--runs", "0"], "--runs");
    refused(
        &["aam", "trace", "-o", "/tmp/never.json", "--calls", huge],
        "--calls",
    );
    refused(&["noise", "selfish", "--threshold", "NaN"], "--threshold");
    refused(&["model", "fit", "--gammas", "1,NaN"], "--gammas");
    refused(&["model", "fit", "--gammas", "1,-2,0"], "--gammas");
    let dir = std::env::temp_dir().join(format!("multios-odd-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    let pairs = dir.join("pairs.csv");
    std::fs::write(&pairs, "1.0,1.1\n1.0,nan\n").expect("write pairs");
    refused(
        &["model", "fit", "--pairs", pairs.to_str().unwrap_or_default()],
        "pairs.csv:2",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn issue_16_lwk_run_refuses_what_linux_would_not_run_and_checks_summary_first() {
    if let Err(e) = multios_lwk::check_kvm() {
        panic!("this test needs KVM and it is not usable here: {e}");
    }
    let dir = std::env::temp_dir().join(format!("multios-noexec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch");
    let prog = dir.join("true");
    exec_file::copy(std::path::Path::new("/bin/true"), &prog, 0o644);
    let p = prog.to_str().unwrap_or_default();
    refused(&["lwk", "run", "--", p], "permission denied");
    // On PATH, a non-executable file is skipped for an executable one further on.
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("scratch");
    exec_file::copy(std::path::Path::new("/bin/echo"), &bin.join("true"), 0o755);
    let out = Command::new(env!("CARGO_BIN_EXE_multios"))
        .env("PATH", format!("{}:{}", dir.display(), bin.display()))
        .args(["lwk", "run", "--", "true", "found"])
        .output()
        .expect("run multios");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "found\n", "{out:?}");
    // --summary where nothing can be written: refused before the program runs (it would print).
    let (code, text) = multios(&[
        "lwk",
        "run",
        "--summary",
        "/proc/x/s.json",
        "--",
        "/bin/echo",
        "ran",
    ]);
    assert!(
        code != 0 && !text.contains("ran\n") && text.contains("--summary"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Reported 2026-11-28: `lwk pack --mem-mib 0` (or 3) wrote a file whose every run failed with an
/// error about a flag its user never gave; the packed settings are checked when packing.
#[test]
fn issue_16_lwk_pack_checks_its_settings_when_packing() {
    let out = std::env::temp_dir().join(format!("multios-pack-odd-{}.lwk", std::process::id()));
    let o = out.to_str().unwrap_or_default();
    refused(
        &["lwk", "pack", "/bin/true", "-o", o, "--mem-mib", "0"],
        "--mem-mib",
    );
    refused(
        &["lwk", "pack", "/bin/true", "-o", o, "--mem-mib", "3"],
        "--mem-mib",
    );
    refused(&["lwk", "pack", "/bin/true", "-o", o, "--cpus", "4096"], "--cpus");
    assert!(!out.exists(), "nothing written for refused settings");
}
