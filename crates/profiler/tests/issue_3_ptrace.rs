//! Issue #3, ptrace backend (the unprivileged fallback): counts equal `strace -c -f`, accuracy low.

mod common;

use common::*;
use multios_profiler::Backend;

#[test]
fn issue_3_ptrace_counts_match_strace() {
    let _g = serial();
    let dir = scratch("ptrace");
    let data = data_file(&dir, 500_000);
    let out = dir.join("data.txt.bz2");
    for cmd in [
        vec!["bzip2", "-k", "-f", s(&data)],
        vec![
            "busybox",
            "sh",
            "-c",
            "busybox echo one > /dev/null; busybox true; busybox wc -l /etc/passwd",
        ],
        vec!["sh", "-c", "exit 4"],
    ] {
        let _ = std::fs::remove_file(&out);
        let ours = profile(Backend::Ptrace, &cmd);
        let _ = std::fs::remove_file(&out);
        let st = strace_counts(&cmd, &dir);
        assert_counts_match(&counts(&ours), &st, &[]);
        assert_eq!(ours.collection.accuracy, "low");
        assert_eq!(ours.collection.tool, "multios-ptrace");
        assert!(ours.collection.bias_ns_subtracted.is_some_and(|b| b > 0.0));
        assert!(ours.syscall("exit_group").is_some_and(|s| s.count >= 1));
    }
}

#[test]
fn issue_3_ptrace_follows_threads_and_signals() {
    let _g = serial();
    let dir = scratch("ptrace-threads");
    let src = r#"
#include <pthread.h>
#include <unistd.h>
#include <sys/syscall.h>
static void *work(void *a) { for (int i = 0; i < 300; i++) syscall(SYS_getppid); return a; }
int main(void) {
    pthread_t t[3];
    for (int i = 0; i < 3; i++) pthread_create(&t[i], 0, work, 0);
    for (int i = 0; i < 3; i++) pthread_join(t[i], 0);
    return 0;
}
"#;
    let bin = compile_c(&dir, "pthreads", src, &["-pthread"]);
    let p = profile(Backend::Ptrace, &[s(&bin)]);
    assert_eq!(p.syscall("getppid").map(|s| s.count), Some(900));
    assert!(
        p.threads.iter().filter(|t| t.syscalls >= 300).count() == 3,
        "{:?}",
        p.threads
    );
    let p = profile(Backend::Ptrace, &["sh", "-c", "kill -TERM $$"]);
    assert!(p.collection.partial);
    assert_eq!(p.exit.as_ref().and_then(|e| e.signal), Some(libc::SIGTERM));
}

#[test]
fn issue_3_ptrace_attach_and_detach() {
    let _g = serial();
    let mut child = std::process::Command::new("busybox")
        .args([
            "sh",
            "-c",
            "while true; do busybox true; busybox usleep 1000; done",
        ])
        .spawn()
        .expect("start busybox");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let opts = multios_profiler::Options {
        backend: Some(Backend::Ptrace),
        attach: Some(child.id()),
        duration: Some(std::time::Duration::from_millis(700)),
        ..Default::default()
    };
    let p = multios_profiler::profile(&opts);
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    let still_running = child.try_wait().ok().flatten().is_none();
    let _ = child.kill();
    let _ = child.wait();
    let p = p.expect("ptrace attach works");
    assert!(still_running, "the target must survive the detach");
    assert!(status.contains("TracerPid:\t0"), "detached at the end:\n{status}");
    assert!(p.collection.partial && p.exit.is_none());
    assert_eq!(p.collection.accuracy, "low");
    assert!(
        p.syscall("execve").is_some_and(|s| s.count >= 10),
        "{:?}",
        counts(&p)
    );
    assert!(
        p.wall_time_s > 0.0 && p.wall_time_s.is_finite(),
        "{}",
        p.wall_time_s
    );
}
