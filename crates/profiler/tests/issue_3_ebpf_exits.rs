//! Issue #3, eBPF backend: system call exits the probes used to miscount.
//!
//! 1. `-p PID`: a child that had exited but was not reaped yet (a zombie) still had its task
//!    storage, and was counted a second time as a live thread at the end (10 threads for 6).
//! 2. Calls refused by the program's own seccomp filter never reach sys_enter (the filter runs
//!    first); the exit probe dropped their exits, which had no entry stamp: 0 getppid for 1000.
//!
//! Needs root; fails loudly without.

mod common;

use common::*;
use multios_profiler::{Backend, Options};

/// A thread and the main thread making calls every millisecond; the main thread forks a child
/// that makes one call and exits every 100 ms, and never reaps it.
const ZOMBIES_C: &str = r#"
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
static void *t(void *a) {
    (void)a;
    for (;;) {
        syscall(SYS_getppid);
        usleep(1000);
    }
}
int main(void) {
    pthread_t th;
    pthread_create(&th, 0, t, 0);
    for (long n = 1;; n++) {
        syscall(SYS_getpid);
        usleep(1000);
        if (n % 100 == 0 && fork() == 0) {
            syscall(SYS_getppid);
            _exit(0);
        }
    }
}
"#;

#[test]
fn issue_3_attach_counts_unreaped_children_once() {
    let _g = serial();
    require_root();
    let dir = scratch("zombies");
    let bin = compile_c(&dir, "zombies", ZOMBIES_C, &["-pthread"]);
    let mut child = std::process::Command::new(&bin)
        .spawn()
        .expect("start the program");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let opts = Options {
        backend: Some(Backend::Ebpf),
        attach: Some(child.id()),
        duration: Some(std::time::Duration::from_millis(1500)),
        ..Options::default()
    };
    let p = multios_profiler::profile(&opts);
    let _ = child.kill();
    let _ = child.wait();
    let p = p.expect("attach works");
    let mut tids: Vec<u32> = p.threads.iter().map(|t| t.tid).collect();
    tids.sort_unstable();
    let n = tids.len();
    tids.dedup();
    assert_eq!(tids.len(), n, "a thread counted twice: {:?}", p.threads);
    // The main thread, its thread and the children forked during the attach (≈ 15, each with
    // its getppid and exit_group), nothing else.
    let children = p.threads.iter().filter(|t| t.pid != Some(child.id())).count();
    assert!(
        (3..=20).contains(&children),
        "{children} children: {:?}",
        p.threads
    );
    assert_eq!(n, 2 + children, "{:?}", p.threads);
}

/// 1000 getppid calls refused by the program's own filter (errno 42), around a fork.
const REFUSED_C: &str = r#"
#include <stddef.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 42),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog p = {4, f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p))
        return 2;
    for (int i = 0; i < 500; i++)
        if (syscall(SYS_getppid) != -1)
            return 3;
    pid_t c = fork();
    if (c == 0) {
        syscall(SYS_getpid);
        _exit(0);
    }
    waitpid(c, 0, 0);
    for (int i = 0; i < 500; i++)
        syscall(SYS_getppid);
    return 0;
}
"#;

#[test]
fn issue_3_calls_refused_by_the_programs_filter_are_counted() {
    let _g = serial();
    require_root();
    let dir = scratch("refused");
    let bin = compile_c(&dir, "refused", REFUSED_C, &[]);
    let cmd = [s(&bin)];
    let ours = profile(Backend::Ebpf, &cmd);
    assert_eq!(
        ours.exit.as_ref().and_then(|e| e.code),
        Some(0),
        "{:?}",
        ours.exit
    );
    let g = ours
        .syscall("getppid")
        .unwrap_or_else(|| panic!("no getppid: {:?}", counts(&ours)));
    assert_eq!((g.count, g.errors), (1000, 1000), "{g:?}");
    // Nothing else gained a call: neither the fork child's return from fork nor anything else.
    assert_counts_match(&counts(&ours), &strace_counts(&cmd, &dir), &[]);
}
