//! Issue #3, both backends (twenty-fourth session):
//!
//! 1. A thread other than the main one calls execve: it takes the leader's tid, and the leader,
//!    killed by the exec, had its record overwritten (eBPF: `threads` keyed by tid) or the thread
//!    lost its own (ptrace: the leader's death is never reported, the thread's record stayed open
//!    under its former tid). `threads[]` held 294 of 681 calls and C was 0, p 100 %.
//! 2. `-p PID`: how the process ended was lost (eBPF: no exit at all; ptrace: `partial` false
//!    after a SIGKILL).
//! 3. `-p TID` of a thread said "process TID does not exist".
//!
//! The eBPF tests need root and fail without it.

mod common;

use common::*;
use multios_profile::Profile;
use multios_profiler::{Backend, Options};
use std::time::Duration;

/// Two threads call getppid every millisecond; the main thread makes 300 getpid, computes for
/// about 5 ms, starts a thread that makes 100 getppid and execs /bin/true, and goes on calling
/// getpid every millisecond until the exec kills it.
const THREXEC_C: &str = r#"
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
static void *spin(void *a) {
    for (;;) {
        syscall(SYS_getppid);
        usleep(1000);
    }
    return a;
}
static void *ex(void *a) {
    for (int i = 0; i < 100; i++)
        syscall(SYS_getppid);
    usleep(20000);
    execl("/bin/true", "true", (char *)0);
    return a;
}
int main(void) {
    pthread_t t1, t2, t3;
    pthread_create(&t1, 0, spin, 0);
    pthread_create(&t3, 0, spin, 0);
    for (int i = 0; i < 300; i++)
        syscall(SYS_getpid);
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    volatile unsigned long x = 0;
    do {
        for (int i = 0; i < 100000; i++)
            x += i;
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 5000000L);
    pthread_create(&t2, 0, ex, 0);
    for (;;) {
        syscall(SYS_getpid);
        usleep(1000);
    }
}
"#;

/// Every thread's calls are in `threads[]`, the leader's and the exec'd thread's apart, and C
/// holds the main thread's 5 ms of computing.
fn check_exec_by_thread(p: &Profile, pid_calls_at_least: u64) {
    let calls: u64 = p.threads.iter().map(|t| t.syscalls).sum();
    let time: f64 = p.threads.iter().map(|t| t.syscall_time_s).sum();
    let g = p.syscall_time_s();
    assert_eq!(calls, p.syscall_count(), "threads: {:?}", p.threads);
    assert!(
        (time - g).abs() <= 1e-9 * g.max(1.0),
        "Σ threads' call time {time} vs Σg {g}"
    );
    assert!(
        p.compute_time_s > 2e-3,
        "C = {} s, p = {}",
        p.compute_time_s,
        p.p()
    );
    assert!(p.p() < 1.0);
    assert_eq!(p.exit.as_ref().and_then(|e| e.code), Some(0), "{:?}", p.exit);
    assert!(
        p.collection.coverage.as_ref().is_some_and(|c| c.complete),
        "{:?}",
        p.collection.coverage
    );
    // The leader (its 300 getpid and more) and the thread that exec'd (100 getppid, execve and
    // /bin/true's calls) end with the same tid, both recorded.
    let root = p.threads.iter().map(|t| t.pid).min().flatten().unwrap_or(0);
    let as_leader: Vec<u64> = p
        .threads
        .iter()
        .filter(|t| t.tid == root)
        .map(|t| t.syscalls)
        .collect();
    assert_eq!(as_leader.len(), 2, "{:?}", p.threads);
    assert!(
        as_leader.iter().all(|&n| n >= pid_calls_at_least),
        "{:?}",
        p.threads
    );
    assert_eq!(p.syscall("execve").map(|s| s.count), Some(2), "{p:?}");
}

#[test]
fn issue_3_exec_by_a_thread_keeps_every_thread_ebpf() {
    let _g = serial();
    require_root();
    let dir = scratch("threxec-ebpf");
    let bin = compile_c(&dir, "threxec", THREXEC_C, &["-pthread"]);
    let p = profile(Backend::Ebpf, &[s(&bin)]);
    check_exec_by_thread(&p, 100);
}

#[test]
fn issue_3_exec_by_a_thread_keeps_every_thread_ptrace() {
    let _g = serial();
    let dir = scratch("threxec-ptrace");
    let bin = compile_c(&dir, "threxec", THREXEC_C, &["-pthread"]);
    let p = profile(Backend::Ptrace, &[s(&bin)]);
    check_exec_by_thread(&p, 100);
}

/// A thread calling getppid every 10 ms; the main thread calls getpid every 10 ms for argv[1] ms
/// and returns 5.
const TICKER_C: &str = r#"
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
static void *f(void *a) {
    for (;;) {
        syscall(SYS_getppid);
        usleep(10000);
    }
    return a;
}
int main(int argc, char **argv) {
    int ms = argc > 1 ? atoi(argv[1]) : 1000;
    pthread_t t;
    pthread_create(&t, 0, f, 0);
    for (int i = 0; i < ms / 10; i++) {
        syscall(SYS_getpid);
        usleep(10000);
    }
    return 5;
}
"#;

/// Attaches with `backend` to the ticker running `ms`, killed with SIGKILL after `kill_after`.
fn attach_ticker(backend: Backend, bin: &str, ms: u32, kill_after: Option<Duration>) -> Profile {
    let mut child = std::process::Command::new(bin)
        .arg(ms.to_string())
        .spawn()
        .expect("start the ticker");
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(200));
    let killer = kill_after.map(|d| {
        std::thread::spawn(move || {
            std::thread::sleep(d);
            // SAFETY: kill(2) with a pid we started and have not reaped (it stays a zombie until
            // the wait below or the tracer's).
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        })
    });
    let opts = Options {
        backend: Some(backend),
        attach: Some(pid),
        duration: Some(Duration::from_secs(20)),
        ..Options::default()
    };
    let p = multios_profiler::profile(&opts);
    if let Some(k) = killer {
        let _ = k.join();
    }
    let _ = child.kill();
    let _ = child.wait(); // the ptrace tracer, in this process too, may have reaped it
    p.unwrap_or_else(|e| panic!("attach ({backend:?}): {e}"))
}

fn check_attach_exits(backend: Backend) {
    let dir = scratch(&format!("ticker-{backend:?}"));
    let bin = compile_c(&dir, "ticker", TICKER_C, &["-pthread"]);
    let p = attach_ticker(backend, s(&bin), 700, None);
    let exit = p.exit.as_ref().map(|e| (e.code, e.signal));
    assert_eq!(exit, Some((Some(5), None)), "{backend:?}: {:?}", p.exit);
    assert!(
        !p.collection.partial,
        "{backend:?}: exited by itself, seen to the end"
    );
    let p = attach_ticker(backend, s(&bin), 10_000, Some(Duration::from_millis(500)));
    let exit = p.exit.as_ref().map(|e| (e.code, e.signal));
    assert_eq!(
        exit,
        Some((None, Some(libc::SIGKILL))),
        "{backend:?}: {:?}",
        p.exit
    );
    assert!(p.collection.partial, "{backend:?}: killed by a signal");
}

#[test]
fn issue_3_attach_records_how_the_process_ended_ebpf() {
    let _g = serial();
    require_root();
    check_attach_exits(Backend::Ebpf);
}

#[test]
fn issue_3_attach_records_how_the_process_ended_ptrace() {
    let _g = serial();
    check_attach_exits(Backend::Ptrace);
}

#[test]
fn issue_3_attach_to_a_thread_names_its_process() {
    let _g = serial();
    let dir = scratch("ticker-tid");
    let bin = compile_c(&dir, "ticker", TICKER_C, &["-pthread"]);
    let mut child = std::process::Command::new(&bin)
        .arg("3000")
        .spawn()
        .expect("start the ticker");
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(100));
    let tid = std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("the ticker's threads")
        .filter_map(|d| d.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .find(|&t| t != pid)
        .expect("the ticker's second thread");
    for backend in [Backend::Ebpf, Backend::Ptrace] {
        let opts = Options {
            backend: Some(backend),
            attach: Some(tid),
            duration: Some(Duration::from_millis(100)),
            ..Options::default()
        };
        let err = multios_profiler::profile(&opts)
            .map(|_| ())
            .map_err(|e| e.to_string());
        let want = format!("{tid} is a thread of process {pid}");
        assert!(
            err.as_ref()
                .is_err_and(|e| e.contains(&want) && e.contains(&format!("-p {pid}"))),
            "{backend:?}: {err:?}"
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}
