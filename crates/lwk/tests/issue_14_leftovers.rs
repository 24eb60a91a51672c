//! Issue #14, part B.5: nothing lost. A guest that faults, is killed from outside (SIGKILL or
//! SIGTERM to the guest's process, which is the VMM) or runs out of memory ends with the status
//! Linux gives the program, and leaves behind what the program natively leaves — no more: no
//! process (the run's process group is empty; a child the program forked stays, as natively), no
//! SysV shared-memory segment that was marked for removal (the one that was not stays on both
//! sides), no temporary file. `tests/c/leftovers.c` runs natively and in the LWK, each with its
//! own TMPDIR. Out of memory: natively under RLIMIT_AS = 512 MiB, in the LWK with a 512 MiB window
//! (`LWK_MEM_MIB`): malloc fails on both sides and the program aborts. An abort() on a second
//! thread while the main thread waits to join it ends the run (it used to hang: CPython's
//! test_faulthandler). Needs /dev/kvm and gcc:
//! FAILS (never skips) without. Takes ≈ 5 s.

#[path = "../../../testsupport/scratch.rs"]
mod scratch;
#[path = "common/sidebyside.rs"]
mod sidebyside;

use scratch::Scratch;
use sidebyside::{build_c, require_kvm, DEADLINE, RUNNER};
use std::io::{BufRead, BufReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How one run ended and what it left.
#[derive(Debug, PartialEq, Eq)]
struct End {
    /// Exit code or signal.
    status: (Option<i32>, Option<i32>),
    /// What the program printed after "ready".
    said: Vec<String>,
    /// The segment marked for removal still exists.
    removed_segment_left: bool,
    /// The segment not marked for removal still exists (it should, as natively).
    kept_segment_left: bool,
    /// Files left in the run's TMPDIR.
    files_left: Vec<String>,
    /// Processes left in the run's process group (a forked child natively stays).
    processes_left: usize,
}

/// The processes whose process group is `pgid`.
fn group_members(pgid: i32) -> Vec<i32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid pgrp …: comm may hold spaces, so split after the last ')'.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.get(2).and_then(|g| g.parse::<i32>().ok()) == Some(pgid) && f.first() != Some(&"Z") {
            v.push(pid);
        }
    }
    v
}

/// True when SysV segment `id` exists.
fn segment_exists(id: i32) -> bool {
    // SAFETY: IPC_STAT writes into a shmid_ds we own.
    let mut ds: libc::shmid_ds = unsafe { std::mem::zeroed() };
    // SAFETY: as above; `id` is only looked up.
    unsafe { libc::shmctl(id, libc::IPC_STAT, &mut ds) == 0 }
}

fn remove_segment(id: i32) {
    // SAFETY: IPC_RMID of a segment this test's program made; no memory of ours is involved.
    unsafe { libc::shmctl(id, libc::IPC_RMID, std::ptr::null_mut()) };
}

/// Runs `prog MODE` (natively, or in the LWK) in its own process group with its own TMPDIR;
/// sends `signal` after "ready" (if any) and reports how it ended and what it left.
fn run(prog: &Path, mode: &str, lwk: bool, signal: Option<i32>, dir: &Path) -> End {
    let tmp = dir.join(format!(
        "tmp-{mode}-{}-{}",
        if lwk { "lwk" } else { "native" },
        signal.unwrap_or(0)
    ));
    std::fs::create_dir_all(&tmp).unwrap_or_else(|e| panic!("{}: {e}", tmp.display()));
    let mut cmd = if lwk {
        let mut c = Command::new(RUNNER);
        c.arg(prog).env("LWK_MEM_MIB", "512");
        c
    } else {
        let mut c = Command::new(prog);
        if mode == "oom" {
            // SAFETY: setrlimit in the child before exec touches no memory of the parent.
            unsafe {
                c.pre_exec(|| {
                    let lim = libc::rlimit {
                        rlim_cur: 512 << 20,
                        rlim_max: 512 << 20,
                    };
                    libc::setrlimit(libc::RLIMIT_AS, &lim);
                    Ok(())
                });
            }
        }
        c
    };
    let mut child = cmd
        .arg(mode)
        .env("TMPDIR", &tmp)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", prog.display()));
    let pgid = child.id() as i32;
    let out = child.stdout.take().expect("piped stdout");
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    let t0 = Instant::now();
    let ready = lines
        .recv_timeout(DEADLINE)
        .unwrap_or_else(|e| panic!("{mode} (LWK: {lwk}) never said ready: {e}"));
    let ids: Vec<i32> = ready
        .split_whitespace()
        .skip(1)
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(ready.starts_with("ready") && ids.len() == 2, "{ready:?}");
    if let Some(sig) = signal {
        // The program is in pause() by now (it prints "ready" just before).
        std::thread::sleep(Duration::from_millis(200));
        // SAFETY: kill with a valid pid and signal has no memory effects.
        unsafe { libc::kill(pgid, sig) };
    }
    let status: ExitStatus = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if t0.elapsed() > DEADLINE => {
                // SAFETY: kill of the test's own process group.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
                panic!("{mode} (LWK: {lwk}) did not end");
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => panic!("waiting: {e}"),
        }
    };
    let said: Vec<String> = std::iter::from_fn(|| lines.recv_timeout(Duration::from_secs(2)).ok()).collect();
    // A killed VMM's threads are gone with it; give the kernel a moment to reap what it must.
    std::thread::sleep(Duration::from_millis(100));
    let left = group_members(pgid);
    for p in &left {
        // SAFETY: kill of a process of the test's own process group.
        unsafe { libc::kill(*p, libc::SIGKILL) };
    }
    // Until they are gone, zombies too (a killed VMM's leader is a zombie while its other threads
    // still tear down): what they held goes with them.
    let t1 = Instant::now();
    while left.iter().any(|p| Path::new(&format!("/proc/{p}")).exists())
        && t1.elapsed() < Duration::from_secs(10)
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let end = End {
        status: (status.code(), status.signal()),
        said,
        removed_segment_left: segment_exists(ids[0]),
        kept_segment_left: segment_exists(ids[1]),
        files_left: std::fs::read_dir(&tmp)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        processes_left: left.len(),
    };
    for id in ids {
        remove_segment(id);
    }
    end
}

fn same_as_native(mode: &str, signal: Option<i32>) -> End {
    require_kvm("issue #14");
    let dir = Scratch::new(
        "multios-lwk-issue14",
        &format!("leftovers-{mode}-{}", signal.unwrap_or(0)),
    );
    let prog = build_c(&dir, "leftovers", &["-O1"]);
    let native = run(&prog, mode, false, signal, &dir);
    let lwk = run(&prog, mode, true, signal, &dir);
    assert_eq!(
        native, lwk,
        "{mode} {signal:?}: native (left) and LWK (right) differ"
    );
    // What Linux leaves: the segment not removed, nothing else.
    assert!(!lwk.removed_segment_left && lwk.kept_segment_left, "{lwk:?}");
    assert!(lwk.files_left.is_empty(), "{lwk:?}");
    lwk
}

#[test]
fn issue_14_a_guest_that_faults_leaves_nothing_and_dies_of_sigsegv() {
    let end = same_as_native("fault", None);
    assert_eq!(end.status, (None, Some(libc::SIGSEGV)));
    assert_eq!(end.processes_left, 0);
}

#[test]
fn issue_14_a_guest_killed_from_outside_leaves_nothing_and_dies_of_the_signal() {
    for sig in [libc::SIGKILL, libc::SIGTERM] {
        let end = same_as_native("wait", Some(sig));
        assert_eq!(end.status, (None, Some(sig)));
        assert_eq!(end.processes_left, 0);
    }
}

#[test]
fn issue_14_a_guest_out_of_memory_leaves_nothing_and_aborts_like_native() {
    let end = same_as_native("oom", None);
    assert_eq!(end.status, (None, Some(libc::SIGABRT)));
    assert_eq!(end.said, ["out of memory after more than 64 MiB"]);
    assert_eq!(end.processes_left, 0);
}

#[test]
fn issue_14_an_abort_on_a_second_thread_ends_the_run_like_native() {
    // The main thread waits in pthread_join (a futex wait) when the other thread aborts.
    let end = same_as_native("thread-abort", None);
    assert_eq!(end.status, (None, Some(libc::SIGABRT)));
    assert_eq!(end.processes_left, 0);
}

#[test]
fn issue_14_a_killed_guest_leaves_only_its_forked_child_like_native() {
    let end = same_as_native("child", Some(libc::SIGKILL));
    assert_eq!(end.processes_left, 1, "the orphaned child, natively too");
}
