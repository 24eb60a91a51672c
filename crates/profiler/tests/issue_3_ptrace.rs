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
