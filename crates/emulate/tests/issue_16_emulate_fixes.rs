//! Issue #16: what a testing pass over `multios emulate` found, one test per fix.
//!
//! 1. proxy: a signal handler that ran during the f_c spins made a delegated call fail with EINTR
//!    (getppid returned -4), or restart for ever with SA_RESTART.
//! 2. shm: a program's own filter installed with SECCOMP_FILTER_FLAG_NEW_LISTENER (which returns
//!    a descriptor, not 0) did not reach its delegate.
//! 3. shm: perf_event_open(pid 0) measured the delegate thread.
//! 4. migrate: sched_getaffinity and getcpu answered for the control CPU, the move back undid the
//!    program's own sched_setaffinity, and refused moves went unreported.
//! 5. Signals ignored when multios started (nohup, `trap ""`) were no longer ignored in the program.
//! 6. shm: a delegate thread was left behind by every thread that exited.
//! 7. shm: the statistics were lost after the program dropped root or changed its root directory.
//!
//! Every emulated program runs under timeout(1), so a hang fails instead of blocking.

mod common;
use multios_emulate::{CpuSet, Delegation, Exit, Mechanism, Report};
use std::path::Path;

/// Runs `argv` under `timeout -s KILL 120` with mechanism `m`, everything delegated at `fc`.
fn run(m: Mechanism, fc: f64, argv: &[&str]) -> Report {
    let mut a = vec!["timeout", "-s", "KILL", "120"];
    a.extend_from_slice(argv);
    common::run(m, Delegation::all(), fc, &a)
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn delegated(r: &Report, name: &str) -> u64 {
    r.syscalls.get(name).map_or(0, |c| c.delegated)
}

fn is_root() -> bool {
    // SAFETY: geteuid takes no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// `argv[3]` raw getppid calls under a SIGALRM itimer of `argv[4]` µs (argv[2] = "restart":
/// SA_RESTART); writes how many failed, and how many handlers ran, to argv[1].
const EINTR_C: &str = r#"
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>
static volatile long handled;
static void h(int s) { (void)s; handled++; }
int main(int argc, char **argv) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = h;
    sa.sa_flags = !strcmp(argv[2], "restart") ? SA_RESTART : 0;
    sigaction(SIGALRM, &sa, 0);
    int calls = atoi(argv[3]), period = atoi(argv[4]);
    struct itimerval it = {{0, period}, {0, period}};
    setitimer(ITIMER_REAL, &it, 0);
    long fails = 0, first = 0;
    for (int i = 0; i < calls; i++) {
        long r = syscall(SYS_getppid);
        if (r < 0 && !fails++)
            first = errno;
    }
    struct itimerval z = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &z, 0);
    FILE *f = fopen(argv[1], "w");
    fprintf(f, "%ld %ld %ld\n", fails, first, handled);
    fclose(f);
    return 0;
}
"#;

/// Runs EINTR_C under proxy at `fc` with a busy supervisor, delegating everything or
/// (`only_getppid`) getppid alone; returns (failures, first errno, handlers run).
fn eintr_run(
    dir: &Path,
    exe: &str,
    mode: &str,
    (calls, period_us): (u32, u32),
    fc: f64,
    only_getppid: bool,
) -> (u64, u64, u64) {
    let out = dir.join(format!("{mode}-{calls}-{period_us}.txt"));
    let out_s = out.to_str().expect("UTF-8 temp dir");
    let (c, p) = (calls.to_string(), period_us.to_string());
    let d = if only_getppid {
        Delegation::from_fn("getppid", |n| n == "getppid")
    } else {
        Delegation::all()
    };
    let argv = ["timeout", "-s", "KILL", "120", exe, out_s, mode, &c, &p];
    let mut cfg = common::config(Mechanism::Proxy, d, fc, &argv);
    // The supervisor polls: it receives a call within microseconds, so few signals come before.
    cfg.wait.busy_supervisor = true;
    let r = multios_emulate::run(&cfg).unwrap_or_else(|e| panic!("proxy: {e}"));
    assert_eq!(r.exit, Exit::Code(0), "{mode}: {:?}", r.warnings);
    let v: Vec<u64> = read(&out)
        .split_whitespace()
        .map(|w| w.parse().expect("a number"))
        .collect();
    eprintln!(
        "{mode}, {calls} calls, {period_us} µs timer, f_c {fc}: {} failed (errno {}), {} handlers, {} delegated",
        v[0],
        v[1],
        v[2],
        delegated(&r, "getppid")
    );
    // A call interrupted before the supervisor received it is not counted.
    assert!(
        delegated(&r, "getppid") + v[0] >= u64::from(calls),
        "{mode}: {:?}",
        r.syscalls
    );
    (v[0], v[1], v[2])
}

#[test]
fn issue_16_proxy_delegated_calls_are_not_interrupted_by_a_handler() {
    let dir = common::tmpdir("issue16-eintr");
    let exe = common::cc(&dir, "eintr", EINTR_C);
    let exe = exe.to_str().expect("UTF-8 temp dir");
    // SA_RESTART with a timer (1.5 ms) shorter than the round trip (2 × 1 ms): every call used
    // to be interrupted during its f_c spins and restarted with new ones, for ever. (getppid
    // alone is delegated: a delegated rt_sigreturn costing more than the timer's period would
    // keep the program in its handler, natively as well.)
    let (fails, _, handled) = eintr_run(&dir, exe, "restart", (20, 1500), 1e-3, true);
    assert_eq!(fails, 0);
    assert!(handled >= 10, "{handled} handlers ran");
    // Without SA_RESTART: once the supervisor has received the call, a handler no longer
    // interrupts it (before, almost every handler that ran during a call made it fail with
    // EINTR). A signal that comes before the supervisor received the call still interrupts it
    // (the kernel's rule for SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV): with a polling supervisor
    // that window is short.
    let (fails, first, handled) = eintr_run(&dir, exe, "plain", (100, 1500), 1e-3, true);
    assert!(
        fails * 4 < 100,
        "{fails} of 100 calls failed (first errno {first}), {handled} handlers ran"
    );
    // The issue's numbers (2000 calls, a 1 ms timer, f_c 20 µs): reported, not asserted (the
    // window before the supervisor's receipt depends on how fast it gets to the call). getppid
    // alone: an interrupted delegated rt_sigreturn crashes the program (see the report).
    let (fails, first, handled) = eintr_run(&dir, exe, "plain", (2000, 1000), 20e-6, true);
    eprintln!("2000 getppid at f_c 20 µs, 1 ms timer: {fails} failed (errno {first}), {handled} handlers");
}

/// The program answers its own getppid with 4242 through its own listener (from a thread of its).
const NOTIF_C: &str = r#"
#define _GNU_SOURCE
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
static int lfd;
static void *sup(void *a) {
    (void)a;
    for (;;) {
        struct seccomp_notif req;
        struct seccomp_notif_resp resp;
        memset(&req, 0, sizeof req);
        if (ioctl(lfd, SECCOMP_IOCTL_NOTIF_RECV, &req))
            return 0;
        memset(&resp, 0, sizeof resp);
        resp.id = req.id;
        resp.val = 4242;
        ioctl(lfd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    }
}
int main(int argc, char **argv) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    struct sock_fprog p = {4, f};
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    lfd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &p);
    if (lfd < 0)
        return 2;
    pthread_t t;
    pthread_create(&t, 0, sup, 0);
    long v = syscall(SYS_getppid);
    FILE *o = fopen(argv[1], "w");
    fprintf(o, "getppid %ld\n", v);
    fclose(o);
    return 0;
}
"#;

#[test]
fn issue_16_shm_follows_a_filter_installed_with_a_listener() {
    let dir = common::tmpdir("issue16-notif");
    let exe = common::cc(&dir, "notif", NOTIF_C);
    let out = dir.join("out.txt");
    let r = run(
        Mechanism::Shm,
        0.0,
        &[exe.to_str().expect("UTF-8"), out.to_str().expect("UTF-8")],
    );
    assert_eq!(r.exit, Exit::Code(0), "{:?}", r.warnings);
    assert_eq!(read(&out), "getppid 4242\n");
    assert_eq!(delegated(&r, "getppid"), 1, "{:?}", r.syscalls);
}

/// A task-clock counter on the calling thread (pid 0) while it spins 200 ms of its own CPU time
/// (getrusage RUSAGE_THREAD, local under shm); writes the count (ns).
const PERF_C: &str = r#"
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
static double cpu(void) {
    struct rusage u;
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_utime.tv_sec + u.ru_utime.tv_usec * 1e-6;
}
int main(int argc, char **argv) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.disabled = 1;
    a.exclude_kernel = 1;
    int fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    FILE *o = fopen(argv[1], "w");
    if (fd < 0) {
        fprintf(o, "unavailable\n");
        return 0;
    }
    ioctl(fd, PERF_EVENT_IOC_RESET, 0);
    ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    volatile uint64_t x = 0;
    for (double t0 = cpu(); cpu() - t0 < 0.2;)
        for (int i = 0; i < 100000; i++)
            x++;
    ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
    uint64_t v = 0;
    if (read(fd, &v, sizeof v) != sizeof v)
        return 3;
    fprintf(o, "%llu\n", (unsigned long long)v);
    return 0;
}
"#;

#[test]
fn issue_16_shm_perf_event_open_on_itself_counts_the_program_thread() {
    let dir = common::tmpdir("issue16-perf");
    let exe = common::cc(&dir, "perf", PERF_C);
    let native = dir.join("native.txt");
    let st = std::process::Command::new(&exe)
        .arg(&native)
        .status()
        .expect("running the perf program");
    assert!(st.success());
    if read(&native).trim() == "unavailable" {
        eprintln!("perf_event_open is not available here (natively): nothing to compare");
        return;
    }
    let out = dir.join("shm.txt");
    let r = run(
        Mechanism::Shm,
        0.0,
        &[exe.to_str().expect("UTF-8"), out.to_str().expect("UTF-8")],
    );
    assert_eq!(r.exit, Exit::Code(0), "{:?}", r.warnings);
    assert!(delegated(&r, "perf_event_open") >= 1, "{:?}", r.syscalls);
    let ns: u64 = read(&out).trim().parse().expect("a count");
    assert!(ns >= 100_000_000, "task clock {ns} ns for a 200 ms spin");
}

/// Pins itself to the CPU in argv[2], makes delegated calls, writes its mask and CPU to argv[1].
const AFFINITY_C: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int cpu = atoi(argv[2]);
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    if (sched_setaffinity(0, sizeof s, &s))
        return 2;
    for (int i = 0; i < 20; i++) {
        syscall(SYS_getppid);
        int fd = open("/dev/null", O_WRONLY);
        write(fd, "x", 1);
        close(fd);
    }
    CPU_ZERO(&s);
    sched_getaffinity(0, sizeof s, &s);
    FILE *o = fopen(argv[1], "w");
    fprintf(o, "mask");
    for (int i = 0; i < CPU_SETSIZE; i++)
        if (CPU_ISSET(i, &s))
            fprintf(o, " %d", i);
    unsigned c = 999;
    syscall(SYS_getcpu, &c, 0, 0);
    fprintf(o, "; cpu %u\n", c);
    fclose(o);
    return 0;
}
"#;

/// A seccomp filter of the program's refuses sched_setaffinity (EPERM), then 10 getppid calls.
const REFUSE_C: &str = r#"
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_sched_setaffinity, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    struct sock_fprog p = {4, f};
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &p))
        return 2;
    for (int i = 0; i < 10; i++)
        syscall(SYS_getppid);
    return 0;
}
"#;

#[test]
fn issue_16_migrate_keeps_the_programs_own_affinity() {
    // What Python sees of its CPUs: the same under migrate as under shm (the compute CPUs).
    let dir = common::tmpdir("issue16-affinity");
    let py = "import os; print(sorted(os.sched_getaffinity(0)))";
    let cmd = format!("python3 -c '{py}'");
    let i = multios_emulate::Interception::Eager;
    let shm = common::emulated(&dir, "py", &cmd, Mechanism::Shm, i);
    let migrate = common::emulated(&dir, "py", &cmd, Mechanism::Migrate, i);
    assert_eq!(migrate, shm);

    // A program that pins itself to one of the compute CPUs keeps that mask after delegated calls
    // (every allowed CPU computes here, the last one also controls, so the move back is visible).
    let avail = CpuSet::allowed();
    let first = *avail.0.iter().next().expect("a CPU");
    let last = *avail.0.iter().next_back().expect("a CPU");
    let exe = common::cc(&dir, "aff", AFFINITY_C);
    let out = dir.join("aff.txt");
    let mut cfg = common::config(
        Mechanism::Migrate,
        Delegation::all(),
        0.0,
        &[
            exe.to_str().expect("UTF-8"),
            out.to_str().expect("UTF-8"),
            &first.to_string(),
        ],
    );
    cfg.compute = avail.clone();
    cfg.control = CpuSet([last].into());
    let r = multios_emulate::run(&cfg).unwrap_or_else(|e| panic!("migrate: {e}"));
    assert_eq!(r.exit, Exit::Code(0), "{:?}", r.warnings);
    assert!(delegated(&r, "getppid") >= 20, "{:?}", r.syscalls);
    assert_eq!(read(&out), format!("mask {first}; cpu {first}\n"));
    assert!(
        !r.warnings.iter().any(|w| w.contains("could not move")),
        "{:?}",
        r.warnings
    );

    // Moves the program's own filter refuses are reported.
    let exe = common::cc(&dir, "refuse", REFUSE_C);
    let r = run(Mechanism::Migrate, 0.0, &[exe.to_str().expect("UTF-8")]);
    assert_eq!(r.exit, Exit::Code(0), "{:?}", r.warnings);
    assert!(
        r.warnings.iter().any(|w| w
            .contains("delegated calls could not move to the control CPUs (sched_setaffinity refused")
            && w.ends_with("they ran on the compute CPU")),
        "{:?}",
        r.warnings
    );
}

const IGN_CHILD: &str = "MULTIOS_ISSUE16_IGNORED_CHILD";

#[test]
fn issue_16_signals_ignored_at_start_stay_ignored_in_the_program() {
    if std::env::var_os(IGN_CHILD).is_some() {
        // Started by the test below with SIGINT, SIGHUP and SIGPIPE ignored: the program's
        // SigIgn line goes to this process's stdout, which the parent reads.
        for m in [Mechanism::Shm, Mechanism::Proxy] {
            let r = common::run(
                m,
                Delegation::all(),
                0.0,
                &["grep", "SigIgn", "/proc/self/status"],
            );
            assert_eq!(r.exit, Exit::Code(0), "{}: {:?}", m.name(), r.warnings);
        }
        return;
    }
    let script = r#"trap "" INT HUP PIPE; exec "$@""#;
    let native = std::process::Command::new("bash")
        .args(["-c", script, "bash", "grep", "SigIgn", "/proc/self/status"])
        .output()
        .expect("bash");
    let native = String::from_utf8_lossy(&native.stdout).trim().to_string();
    assert!(native.starts_with("SigIgn:"), "{native}");
    let me = std::env::current_exe().expect("the test binary");
    let o = std::process::Command::new("bash")
        .args(["-c", script, "bash"])
        .arg(me)
        .args([
            "--exact",
            "issue_16_signals_ignored_at_start_stay_ignored_in_the_program",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(IGN_CHILD, "1")
        .output()
        .expect("running the test binary again");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Signals 1 to 31 (the standard ones): glibc's posix_spawn, which std's Command uses, gives
    // its child its own internal signals 32 and 33 ignored when the parent has handlers for them,
    // so those bits depend on how this test binary was started, not on multios.
    let standard = |l: &str| {
        u64::from_str_radix(l.trim_start_matches("SigIgn:").trim(), 16).expect("a hex mask") & 0x7fff_ffff
    };
    let want = standard(&native);
    assert_eq!(want & 0x1003, 0x1003, "{native}");
    let got: Vec<u64> = text
        .lines()
        .filter_map(|l| l.find("SigIgn:").map(|i| standard(&l[i..])))
        .collect();
    assert_eq!(got, [want; 2], "shm, then proxy: {text}");
}

/// Creates and joins 200 threads one after another; writes how many /proc/self/task lists.
const CHURN_C: &str = r#"
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static void *w(void *a) {
    int fd = open("/dev/null", O_WRONLY);
    write(fd, "x", 1);
    close(fd);
    return a;
}
int main(int argc, char **argv) {
    for (int i = 0; i < 200; i++) {
        pthread_t t;
        if (pthread_create(&t, 0, w, 0))
            return 2;
        pthread_join(t, 0);
    }
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    FILE *o = fopen(argv[1], "w");
    fprintf(o, "%d\n", n);
    fclose(o);
    return 0;
}
"#;

#[test]
fn issue_16_shm_delegates_end_with_their_threads() {
    let dir = common::tmpdir("issue16-churn");
    let exe = common::cc(&dir, "churn", CHURN_C);
    let out = dir.join("out.txt");
    for i in [
        multios_emulate::Interception::Eager,
        multios_emulate::Interception::Lazy,
    ] {
        let cfg = common::config(
            Mechanism::Shm,
            Delegation::all(),
            0.0,
            &[exe.to_str().expect("UTF-8"), out.to_str().expect("UTF-8")],
        );
        let r = multios_emulate::run_with(&cfg, i).unwrap_or_else(|e| panic!("{}: {e}", i.name()));
        assert_eq!(r.exit, Exit::Code(0), "{}: {:?}", i.name(), r.warnings);
        let n: u32 = read(&out).trim().parse().expect("a count");
        assert!(n <= 3, "{}: {n} threads left after 200 joined ones", i.name());
        assert!(delegated(&r, "write") >= 200, "{}: {:?}", i.name(), r.syscalls);
        assert!(
            !r.warnings.iter().any(|w| w.contains("ran locally, uncharged")),
            "{}: {:?}",
            i.name(),
            r.warnings
        );
    }
}

/// Drops to uid 65534 (argv[1] = "setuid") or changes its root to argv[2] ("chroot"), then 100
/// getppid calls; also notes the first descriptor it opens (3 natively).
const DROP_C: &str = r#"
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int fd = open("/dev/null", O_RDONLY);
    if (fd != 3)
        return 10 + fd;
    close(fd);
    if (!strcmp(argv[1], "setuid")) {
        if (setgroups(0, 0) || setgid(65534) || setuid(65534))
            return 2;
    } else if (chroot(argv[2]) || chdir("/")) {
        return 3;
    }
    for (int i = 0; i < 100; i++)
        syscall(SYS_getppid);
    return 0;
}
"#;

#[test]
fn issue_16_shm_statistics_survive_setuid_and_chroot() {
    assert!(
        is_root(),
        "this test needs root (setuid and chroot): run the tests as root, as CI does"
    );
    let dir = common::tmpdir("issue16-drop");
    let exe = common::cc(&dir, "drop", DROP_C);
    let root = dir.join("root");
    std::fs::create_dir_all(&root).expect("the new root");
    for how in ["setuid", "chroot"] {
        let r = run(
            Mechanism::Shm,
            0.0,
            &[exe.to_str().expect("UTF-8"), how, root.to_str().expect("UTF-8")],
        );
        assert_eq!(r.exit, Exit::Code(0), "{how}: {:?}", r.warnings);
        assert!(
            delegated(&r, "getppid") >= 100,
            "{how}: {:?} {:?}",
            r.syscalls.get("getppid"),
            r.warnings
        );
    }
}
