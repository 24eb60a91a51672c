//! Issue #15: `--no-realtime` on a shared machine. The emulator's delegate threads normally run
//! SCHED_FIFO 50; with `--no-realtime` they keep the program's scheduling class — under
//! `chrt --idle 0` that is SCHED_IDLE (before, the preload lifted them to SCHED_OTHER). Needs root
//! (chrt, SCHED_FIFO) and runs the emulator for real.

use std::process::{Command, Stdio};

/// The scheduling policy (field 41 of /proc/PID/task/TID/stat) of every thread of the shell that
/// `multios emulate` runs under `chrt --idle 0`, delegating every call.
fn thread_policies(no_realtime: bool) -> Vec<u32> {
    let mut args: Vec<&str> = vec!["--idle", "0", env!("CARGO_BIN_EXE_multios"), "emulate"];
    args.extend([
        "--mechanism",
        "shm",
        "--policy",
        "all",
        "--fc",
        "0us",
        "--allow-below-floor",
    ]);
    if no_realtime {
        args.push("--no-realtime");
    }
    // The shell's own calls are delegated (its delegate thread exists by then); cat reads the
    // shell's threads.
    args.extend(["--", "sh", "-c", "cat /proc/$$/task/*/stat"]);
    let o = Command::new("chrt")
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .expect("run chrt multios emulate");
    assert!(
        o.status.success(),
        "multios emulate failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8_lossy(&o.stdout);
    let policies: Vec<u32> = text
        .lines()
        .filter_map(|l| {
            let rest = &l[l.rfind(')')? + 1..];
            rest.split_whitespace().nth(38)?.parse().ok()
        })
        .collect();
    assert!(policies.len() >= 2, "the shell and its delegate: {text}");
    policies
}

#[test]
fn issue_15_no_realtime_keeps_the_delegates_in_the_callers_idle_class() {
    const SCHED_FIFO: u32 = 1;
    const SCHED_IDLE: u32 = 5;
    let kept = thread_policies(true);
    assert!(kept.iter().all(|&p| p == SCHED_IDLE), "{kept:?}");
    let default = thread_policies(false);
    assert!(
        default.contains(&SCHED_FIFO),
        "the default delegate is SCHED_FIFO: {default:?}"
    );
}
