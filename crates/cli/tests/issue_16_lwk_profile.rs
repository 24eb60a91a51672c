//! Issue #16, item 9 (LWK part) and item 11: `multios lwk run --profile FILE` writes the partial
//! profile when SIGINT or SIGTERM ends the run (exit 130 / 143, like `multios profile`), leaving
//! nothing else behind; and it checks that FILE can be written before the program starts. Needs
//! /dev/kvm. Every run has a deadline, so a regression fails instead of hanging.

use std::io::{BufRead, BufReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../../../testsupport/signals.rs"]
mod signals;

const MULTIOS: &str = env!("CARGO_BIN_EXE_multios");
const DEADLINE: Duration = Duration::from_secs(60);
const SIGINT: i32 = 2;
const SIGTERM: i32 = 15;

/// kill(1) with `args` (this crate does not link libc); true when it succeeded.
fn kill(args: &[&str]) -> bool {
    Command::new("kill")
        .args(args)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A temporary directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let d = std::env::temp_dir().join(format!("multios-issue16-cli-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("creating {}: {e}", d.display()));
        TempDir(d)
    }

    fn entries(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .map(|d| {
                d.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn require_kvm() {
    assert!(
        std::path::Path::new("/dev/kvm").exists(),
        "/dev/kvm is missing: the LWK tests need KVM"
    );
}

/// Runs `multios lwk run --profile <dir>/p.json -- sh -c 'echo ready; exec sleep 30'`, sends
/// `sig` once the guest printed "ready", and returns the exit code and the profile's text.
fn interrupted_run(dir: &TempDir, sig: i32) -> (std::process::ExitStatus, String) {
    let profile = dir.0.join("p.json");
    let mut child = Command::new(MULTIOS)
        .args(["lwk", "run", "--profile"])
        .arg(&profile)
        .args(["--", "/bin/sh", "-c", "echo ready; exec sleep 30"])
        .stdout(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {MULTIOS}: {e}"));
    let pid = child.id() as i32;
    let out = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    let group = format!("-{pid}");
    let kill_all = || {
        kill(&["-KILL", "--", &group]);
    };
    match rx.recv_timeout(DEADLINE) {
        Ok(l) if l == "ready" => {}
        other => {
            kill_all();
            let _ = child.wait();
            panic!("the guest did not print ready: {other:?}");
        }
    }
    assert!(
        kill(&[&format!("-{sig}"), &pid.to_string()]),
        "sending signal {sig}"
    );
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait().expect("waiting for multios") {
            Some(s) => break s,
            None if t0.elapsed() > DEADLINE => {
                kill_all();
                let _ = child.wait();
                panic!("multios lwk run still running {DEADLINE:?} after signal {sig} (killed)");
            }
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    // Nothing of the run is left: the VMM's process group is empty.
    let left = kill(&["-0", "--", &group]);
    if left {
        kill_all();
    }
    assert!(!left, "processes of the run are still alive after it ended");
    let text = std::fs::read_to_string(&profile).unwrap_or_else(|e| {
        panic!(
            "no profile written at {} after signal {sig}: {e}",
            profile.display()
        )
    });
    (status, text)
}

#[test]
fn issue_16_lwk_run_writes_a_partial_profile_on_sigterm_and_sigint() {
    signals::interrupts_not_ignored();
    require_kvm();
    for sig in [SIGTERM, SIGINT] {
        let dir = TempDir::new(&format!("sig{sig}"));
        let (status, text) = interrupted_run(&dir, sig);
        // Issue #14: the status Linux gives a program a signal ends (a shell's 128 + signal).
        assert_eq!(
            (status.code(), status.signal()),
            (None, Some(sig)),
            "exit status after signal {sig}"
        );
        let p: serde_json::Value = serde_json::from_str(&text).expect("the profile is JSON");
        assert_eq!(p["collection"]["partial"], serde_json::json!(true), "{text}");
        assert_eq!(p["exit"]["signal"], serde_json::json!(sig), "{text}");
        assert!(
            p["syscalls"].as_array().is_some_and(|s| !s.is_empty()),
            "the calls made before the signal are in the profile: {text}"
        );
        assert_eq!(
            dir.entries(),
            ["p.json"],
            "only the profile is left in the directory"
        );
    }
}

#[test]
fn issue_16_lwk_run_checks_the_profile_path_before_the_run() {
    require_kvm();
    let dir = TempDir::new("unwritable");
    let marker = dir.0.join("ran");
    let bad = dir.0.join("missing-dir").join("p.json");
    let out = Command::new(MULTIOS)
        .args(["lwk", "run", "--profile"])
        .arg(&bad)
        .args(["--", "/bin/sh", "-c"])
        .arg(format!("echo ran > {}", marker.display()))
        .output()
        .unwrap_or_else(|e| panic!("running {MULTIOS}: {e}"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "an unwritable profile path must fail: {err}"
    );
    assert!(
        err.contains(&bad.display().to_string()),
        "the error names the path: {err}"
    );
    assert!(
        !marker.exists(),
        "the program must not run when the profile cannot be written"
    );
    // A directory is refused too, and an existing file is left as it was when the run is refused.
    let out = Command::new(MULTIOS)
        .args(["lwk", "run", "--profile"])
        .arg(&dir.0)
        .args(["--", "/bin/true"])
        .output()
        .unwrap_or_else(|e| panic!("running {MULTIOS}: {e}"));
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is a directory"));
    assert_eq!(
        dir.entries(),
        Vec::<String>::new(),
        "nothing created by the check"
    );
}

/// Session d2 (issue #16): `--profile`, `--summary` and `--results` named relative to the working
/// directory were written relative to the guest's last one (its chdir is the VMM process's).
#[test]
fn issue_16_lwk_run_writes_relative_outputs_where_it_started() {
    require_kvm();
    let dir = TempDir::new("relative");
    let elsewhere = TempDir::new("elsewhere");
    let out = Command::new(MULTIOS)
        .current_dir(&dir.0)
        .args([
            "--json",
            "--results",
            "r.json",
            "lwk",
            "run",
            "--profile",
            "p.json",
        ])
        .args(["--summary", "s.json", "--", "/bin/sh", "-c"])
        .arg(format!("cd {} && exec true", elsewhere.0.display()))
        .output()
        .unwrap_or_else(|e| panic!("running {MULTIOS}: {e}"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(dir.entries(), ["p.json", "r.json", "s.json"]);
    assert_eq!(
        elsewhere.entries(),
        Vec::<String>::new(),
        "written in the guest's cwd"
    );
}
