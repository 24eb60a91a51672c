//! Issue #15: the SCHED_IDLE spinners that keep CPUs from halting during delegated calls. proxy
//! keeps one on each compute CPU, migrate one on each compute and control CPU, shm none;
//! `--no-idle-spin` removes them. Each must enter the kernel as it spins: on Linux 6.18 a woken
//! task only preempts a SCHED_IDLE task spinning in user mode at the next tick, and a spinner of
//! pure `pause`s made every proxy call cost ≈ 1.3 ms (`crates/emulate/scripts/spinwake.c`). So a
//! spinner's system time must grow. Needs root (the emulator's mechanisms) and at least 2 CPUs.

use std::process::{Command, Stdio};

const SCHED_IDLE: u32 = 5;

/// (policy, utime, stime) of every thread of the `multios emulate` process, read by the program it
/// runs (its parent) after 300 ms of sleep, every call delegated.
fn parent_threads(mechanism: &str, extra: &[&str]) -> Vec<(u32, u64, u64)> {
    let mut args = vec![
        "emulate",
        "--mechanism",
        mechanism,
        "--policy",
        "all",
        "--fc",
        "0us",
        "--allow-below-floor",
    ];
    args.extend_from_slice(extra);
    args.extend(["--", "sh", "-c", "sleep 0.3; cat /proc/$PPID/task/*/stat"]);
    let o = Command::new(env!("CARGO_BIN_EXE_multios"))
        .args(&args)
        .stdin(Stdio::null())
        .output()
        .expect("run multios emulate");
    assert!(
        o.status.success(),
        "multios emulate --mechanism {mechanism} {extra:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8_lossy(&o.stdout);
    let threads: Vec<(u32, u64, u64)> = text
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l[l.rfind(')')? + 1..].split_whitespace().collect();
            Some((
                f.get(38)?.parse().ok()?,
                f.get(11)?.parse().ok()?,
                f.get(12)?.parse().ok()?,
            ))
        })
        .collect();
    assert!(!threads.is_empty(), "no thread of multios read: {text}");
    threads
}

fn spinners(t: &[(u32, u64, u64)]) -> Vec<(u32, u64, u64)> {
    t.iter().copied().filter(|&(p, _, _)| p == SCHED_IDLE).collect()
}

#[test]
fn issue_15_proxy_and_migrate_keep_kernel_entering_idle_spinners() {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(
        cpus >= 2,
        "this test needs 2 CPUs (compute and control), found {cpus}"
    );
    for (mechanism, want) in [("proxy", 1), ("migrate", 2)] {
        let s = spinners(&parent_threads(mechanism, &[]));
        assert!(
            s.len() >= want,
            "{mechanism}: SCHED_IDLE spinners {s:?}, want at least {want}"
        );
        // 300 ms of a getppid loop puts several ticks in system time; a `pause` loop none.
        assert!(
            s.iter().all(|&(_, _, stime)| stime > 0),
            "{mechanism}: a spinner never entered the kernel: {s:?}"
        );
        let none = spinners(&parent_threads(mechanism, &["--no-idle-spin"]));
        assert!(none.is_empty(), "{mechanism} --no-idle-spin: {none:?}");
    }
    let shm = spinners(&parent_threads("shm", &[]));
    assert!(shm.is_empty(), "shm keeps no spinner: {shm:?}");
}
