//! A thread's own restrictions and clocks under delegation (reported 2026-11-28). A seccomp
//! filter and a Landlock domain bind the thread that installs them (and threads it makes later);
//! an shm delegate made before was bound by neither, so a program's own filter did not apply to
//! its delegated calls (getppid answered where the filter said errno 42) and files Landlock
//! forbade were opened. The delegate is now made again after such a call, inheriting them. And
//! CLOCK_THREAD_CPUTIME_ID made by the delegate was the delegate's clock (a program timing itself
//! read 0 s): the delegate reads the served thread's clock instead. Each program prints the same
//! lines natively and under every mechanism that runs it, both interceptions.

mod common;
use common::{cc, emulated, native};
use multios_emulate::{Interception, Mechanism};

const SECCOMP: &str = r#"
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_getppid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 42),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_uname, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 13),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog p = {sizeof f / sizeof f[0], f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p))
        return 1;
    errno = 0;
    long r = syscall(__NR_getppid);
    printf("getppid %s errno %d\n", r > 0 ? "answered" : "refused", errno);
    errno = 0;
    r = syscall(__NR_uname, 0);
    printf("uname %ld errno %d\n", r, errno);
    return 0;
}
"#;

const LANDLOCK: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
static void try(const char *p) {
    int fd = open(p, O_RDONLY);
    printf("open %s: %s\n", p, fd >= 0 ? "ok" : strerror(errno));
    if (fd >= 0)
        close(fd);
}
int main(int argc, char **argv) {
    (void)argv;
    struct landlock_ruleset_attr ra = {.handled_access_fs = LANDLOCK_ACCESS_FS_READ_FILE};
    int rs = syscall(__NR_landlock_create_ruleset, &ra, sizeof ra, 0);
    if (rs < 0) {
        printf("landlock unavailable: %s\n", strerror(errno));
        return 0;
    }
    struct landlock_path_beneath_attr pb = {.allowed_access = LANDLOCK_ACCESS_FS_READ_FILE};
    pb.parent_fd = open("/usr", O_PATH | O_CLOEXEC);
    if (syscall(__NR_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0))
        return 1;
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (syscall(__NR_landlock_restrict_self, rs, 0))
        return 1;
    try("/etc/hostname");
    try("/usr/bin/env");
    if (argc > 1) {
        /* A credential call renews the delegate: the new one must keep the domain. */
        if (setresuid(0, 0, 0))
            return 2;
        try("/etc/hostname");
    }
    return 0;
}
"#;

const THREAD_CLOCK: &str = r#"
#include <stdio.h>
#include <time.h>
int main(void) {
    volatile double x = 0;
    for (long i = 0; i < 30000000; i++)
        x += i * 0.5;
    struct timespec t, p;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p);
    double td = t.tv_sec + t.tv_nsec / 1e9, pd = p.tv_sec + p.tv_nsec / 1e9;
    printf("the thread's CPU time is %s\n", td > 0.5 * pd && td > 0.01 ? "its own" : "WRONG");
    return 0;
}
"#;

fn same_as_native(tag: &str, src: &str, args: &[&str], expect: &str) {
    let dir = common::tmpdir(tag);
    let prog = cc(&dir, tag, src);
    let cmd = std::iter::once(prog.display().to_string())
        .chain(args.iter().map(|a| a.to_string()))
        .collect::<Vec<_>>()
        .join(" ");
    let want = native(&cmd);
    assert!(want.contains(expect), "{tag} natively: {want}");
    for m in [Mechanism::Shm, Mechanism::Migrate] {
        for i in [Interception::Eager, Interception::Lazy] {
            let got = emulated(&dir, tag, &cmd, m, i);
            assert_eq!(got, want, "{tag} under {} ({})", m.name(), i.name());
        }
    }
}

#[test]
fn a_programs_own_seccomp_filter_covers_its_delegated_calls() {
    same_as_native("seccomp", SECCOMP, &[], "getppid refused errno 42");
}

#[test]
fn a_programs_landlock_domain_covers_its_delegated_calls_and_survives_a_credential_call() {
    same_as_native("landlock", LANDLOCK, &["renew"], "open /usr/bin/env: ok");
}

#[test]
fn the_thread_cpu_clock_is_the_programs_thread_not_its_delegate() {
    same_as_native("threadclock", THREAD_CLOCK, &[], "its own");
}
