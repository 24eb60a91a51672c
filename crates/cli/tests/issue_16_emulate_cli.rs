//! Issue #16 through the CLI, `multios emulate` and `multios profile --backend inproc`:
//! - item 9: SIGINT/SIGTERM to multios are forwarded to the program, which is waited for; the
//!   partial report / profile is written, the run directory removed, and multios exits 130/143
//!   with no orphaned program; a SIGKILLed multios takes its program with it and its run
//!   directory is removed by the next run;
//! - item 11: an output path that cannot be written is refused before the program runs;
//! - item 13: --fc is optional with --policy none, a negative --fc is refused with a clear
//!   message, a directory given as the program is named as such.
//!
//! Every wait is bounded (a hang fails the test instead of blocking).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "../../../testsupport/signals.rs"]
mod signals;

fn multios() -> Command {
    Command::new(env!("CARGO_BIN_EXE_multios"))
}

/// The test's scratch directory (the shared guard of testsupport/scratch.rs).
fn scratch_dir(tag: &str) -> scratch::Scratch {
    scratch::Scratch::new("multios-issue16", tag)
}

fn run(args: &[&str]) -> Output {
    multios()
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("run multios {args:?}: {e}"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Waits up to `secs` for `cond`.
fn wait_for(secs: u64, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    cond()
}

/// The exit of `child`, killing it (and failing) after `secs`.
fn wait_bounded(child: &mut Child, secs: u64) -> std::process::ExitStatus {
    let mut status = None;
    wait_for(secs, || {
        status = child.try_wait().ok().flatten();
        status.is_some()
    });
    match status {
        Some(s) => s,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("multios did not end within {secs} s");
        }
    }
}

fn alive(pid: u32) -> bool {
    // A zombie is dead for this purpose (its parent has not reaped it yet).
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

fn kill(pid: u32, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "kill {sig} {pid}");
}

fn run_dirs_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("multios-emulate-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default()
}

/// A program that writes its pid to `pidfile` and sleeps: `sh` execs `sleep`, so the pid is the
/// program's to the end.
fn sleeper(pidfile: &Path) -> Vec<String> {
    vec![
        "sh".into(),
        "-c".into(),
        format!("echo $$ > {}; exec sleep 30", pidfile.display()),
    ]
}

fn read_pid(pidfile: &Path) -> u32 {
    let mut pid = None;
    let ok = wait_for(20, || {
        pid = std::fs::read_to_string(pidfile)
            .ok()
            .and_then(|s| s.trim().parse::<u32>().ok());
        pid.is_some()
    });
    assert!(ok, "the program never wrote {}", pidfile.display());
    pid.unwrap_or_default()
}

/// Starts `multios ARGS -- sleeper`, signals it once the program runs, and checks the outcome.
fn interrupt(args: &[&str], sig: &str, code: i32, dir: &Path) -> Output {
    let pidfile = dir.join(format!("pid-{sig}"));
    let _ = std::fs::remove_file(&pidfile);
    let mut child = multios()
        .args(args)
        .arg("--")
        .args(sleeper(&pidfile))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn multios {args:?}: {e}"));
    let mpid = child.id();
    let target = read_pid(&pidfile);
    kill(mpid, sig);
    let status = wait_bounded(&mut child, 30);
    let out = child.wait_with_output().unwrap_or_else(|e| panic!("output: {e}"));
    assert_eq!(
        status.code(),
        Some(code),
        "multios {args:?} after {sig}: {status:?}, stderr {}",
        stderr(&out)
    );
    assert!(
        wait_for(5, || !alive(target)),
        "multios {args:?} after {sig}: the program (pid {target}) is still running"
    );
    assert!(
        run_dirs_of(mpid).is_empty(),
        "multios {args:?} after {sig}: left {:?}",
        run_dirs_of(mpid)
    );
    out
}

#[test]
fn issue_16_emulate_forwards_sigint_and_sigterm_and_writes_a_partial_report() {
    signals::interrupts_not_ignored();
    let dir = scratch_dir("emulate-signal");
    for mech in ["shm", "proxy", "migrate"] {
        for (sig, code, signo) in [("-INT", 130, 2), ("-TERM", 143, 15)] {
            let report = dir.join(format!("report-{mech}{sig}.json"));
            let r = report.to_str().expect("UTF-8 temp dir");
            interrupt(
                &[
                    "emulate",
                    "--policy",
                    "all",
                    "--fc",
                    "20us",
                    "--mechanism",
                    mech,
                    "--json",
                    "--report",
                    r,
                ],
                sig,
                code,
                dir.path(),
            );
            let text = std::fs::read_to_string(&report)
                .unwrap_or_else(|e| panic!("{mech} {sig}: no report {}: {e}", report.display()));
            let v: serde_json::Value = serde_json::from_str(&text).expect("JSON report");
            assert_eq!(v["partial"], true, "{mech} {sig}: {v}");
            assert_eq!(v["interrupted"], signo, "{mech} {sig}: {v}");
            assert_eq!(v["exit"]["signal"], signo, "{mech} {sig}: {v}");
        }
    }
}

#[test]
fn issue_16_profile_inproc_forwards_sigint_and_writes_a_partial_profile() {
    signals::interrupts_not_ignored();
    let dir = scratch_dir("inproc-signal");
    let prof = dir.join("prof.json");
    let p = prof.to_str().expect("UTF-8 temp dir");
    interrupt(
        &["profile", "--backend", "inproc", "-o", p],
        "-INT",
        130,
        dir.path(),
    );
    let text = std::fs::read_to_string(&prof).unwrap_or_else(|e| panic!("no profile {p}: {e}"));
    let v: serde_json::Value = serde_json::from_str(&text).expect("JSON profile");
    assert_eq!(v["collection"]["partial"], true, "{v}");
    assert_eq!(v["exit"]["signal"], 2, "{v}");
}

#[test]
fn issue_16_sigkilled_emulate_takes_its_program_along_and_its_run_dir_is_swept() {
    let dir = scratch_dir("emulate-sigkill");
    let pidfile = dir.join("pid");
    let mut child = multios()
        .args([
            "emulate",
            "--policy",
            "all",
            "--fc",
            "20us",
            "--mechanism",
            "shm",
            "--",
        ])
        .args(sleeper(&pidfile))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn multios: {e}"));
    let mpid = child.id();
    let target = read_pid(&pidfile);
    kill(mpid, "-KILL");
    wait_bounded(&mut child, 30);
    assert!(
        wait_for(10, || !alive(target)),
        "the program (pid {target}) outlived the SIGKILLed multios"
    );
    assert!(
        !run_dirs_of(mpid).is_empty(),
        "a SIGKILLed multios cannot clean up"
    );
    let o = run(&["emulate", "--policy", "none", "--mechanism", "shm", "--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        run_dirs_of(mpid).is_empty(),
        "the next run did not remove {:?}",
        run_dirs_of(mpid)
    );
}

#[test]
fn issue_16_unwritable_outputs_are_refused_before_the_program_runs() {
    let dir = scratch_dir("unwritable");
    let marker = dir.join("ran");
    let touch = format!("touch {}", marker.display());
    let missing = dir.join("no-such-dir").join("r.json");
    let m = missing.to_str().expect("UTF-8 temp dir");
    let o = run(&[
        "emulate", "--policy", "none", "--report", m, "--", "sh", "-c", &touch,
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(m) && stderr(&o).contains("does not exist"),
        "{}",
        stderr(&o)
    );
    let d = dir.to_str().expect("UTF-8 temp dir");
    let o = run(&[
        "emulate", "--policy", "none", "--report", d, "--", "sh", "-c", &touch,
    ]);
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
    let o = run(&[
        "profile",
        "--backend",
        "inproc",
        "-o",
        m,
        "--",
        "sh",
        "-c",
        &touch,
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(m) && stderr(&o).contains("does not exist"),
        "{}",
        stderr(&o)
    );
    assert!(
        !marker.exists(),
        "the program ran although its output could not be written"
    );
}

#[test]
fn issue_16_fc_is_optional_with_policy_none_and_never_negative() {
    let o = run(&["emulate", "--policy", "none", "--", "true"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = run(&["emulate", "--policy", "all", "--", "true"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--fc"), "{}", stderr(&o));
    for fc in ["-1us", "exp:-1us"] {
        let o = run(&["emulate", "--policy", "all", "--fc", fc, "--", "true"]);
        assert!(!o.status.success());
        assert!(
            stderr(&o).contains("negative") && !stderr(&o).contains("unexpected argument"),
            "{fc}: {}",
            stderr(&o)
        );
    }
    let o = run(&[
        "emulate",
        "--policy",
        "all",
        "--fc",
        "1us",
        "--fc-syscall",
        "write=-2us",
        "--",
        "true",
    ]);
    assert!(stderr(&o).contains("negative"), "{}", stderr(&o));
}

#[test]
fn issue_16_a_directory_is_not_a_program() {
    let o = run(&["emulate", "--policy", "none", "--", "/tmp"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("'/tmp' is a directory") && !stderr(&o).contains("PATH"),
        "{}",
        stderr(&o)
    );
}
