//! A handler of the program that runs while a delegated call blocks (reported 2026-11-28). Under
//! `shm` the call went on in the delegate: a SIGALRM handler without SA_RESTART left a read of an
//! empty pipe blocked for ever (a Python program's alarm or Ctrl-C never got through), and a
//! nanosleep slept its whole time. The delegate's call is now interrupted as Linux interrupts the
//! program's: EINTR unless the handler has SA_RESTART (read restarts, returning the data that came
//! later), always for nanosleep (with the time left). The output must equal the native run's under
//! every mechanism that runs the program, both interceptions.

mod common;
use multios_emulate::{Delegation, Exit, Interception, Mechanism};
use std::path::Path;
use std::process::Command;

const INTR: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static volatile int got;
static void on_alarm(int s) { (void)s; got++; }
static void arm(int restart, int siginfo) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sa.sa_flags = (restart ? SA_RESTART : 0) | (siginfo ? SA_SIGINFO : 0);
    sigaction(SIGALRM, &sa, 0);
    struct itimerval it = {{0, 0}, {0, 200000}};
    setitimer(ITIMER_REAL, &it, 0);
}
int main(void) {
    for (int restart = 0; restart < 2; restart++) {
        int p[2];
        if (pipe(p))
            return 2;
        pid_t c = fork();
        if (c == 0) {
            usleep(600000);
            if (write(p[1], "late", 4) != 4)
                _exit(1);
            _exit(0);
        }
        got = 0;
        arm(restart, restart);
        char b[8] = {0};
        ssize_t n = read(p[0], b, sizeof b - 1);
        printf("read, SA_RESTART %d: %s (handler ran %d)\n", restart, n < 0 ? strerror(errno) : b, got);
        arm(restart, 0);
        struct timespec ts = {2, 0}, rem = {0, 0};
        int r = nanosleep(&ts, &rem);
        printf("nanosleep, SA_RESTART %d: %s, about %ld s left\n", restart, r ? strerror(errno) : "slept",
               (long)(rem.tv_sec + (rem.tv_nsec > 500000000)));
        fflush(stdout);
        close(p[0]);
        close(p[1]);
        while (wait(0) > 0) {
        }
    }
    return 0;
}
"#;

#[test]
fn a_handler_interrupts_a_blocking_delegated_call_as_natively() {
    let dir = common::tmpdir("interrupt");
    let src = dir.join("intr.c");
    std::fs::write(&src, INTR).unwrap_or_else(|e| panic!("{e}"));
    let prog = dir.join("intr");
    let st = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&prog)
        .arg(&src)
        .status()
        .unwrap_or_else(|e| panic!("running cc: {e}"));
    assert!(st.success());
    let native = Command::new(&prog).output().expect("run natively");
    let want = String::from_utf8_lossy(&native.stdout).into_owned();
    assert!(
        want.contains("read, SA_RESTART 0: Interrupted system call")
            && want.contains("read, SA_RESTART 1: late"),
        "{want}"
    );
    for m in [Mechanism::Shm, Mechanism::Migrate] {
        for i in [Interception::Eager, Interception::Lazy] {
            let got = emulated(&dir, &prog, m, i);
            assert_eq!(got, want, "under {} ({})", m.name(), i.name());
        }
    }
}

fn emulated(dir: &Path, prog: &Path, m: Mechanism, i: Interception) -> String {
    let out = dir.join(format!("out-{}-{}.txt", m.name(), i.name()));
    let sh = format!("{} > {}", prog.display(), out.display());
    let cfg = common::config(m, Delegation::all(), 0.0, &["sh", "-c", &sh]);
    let r = multios_emulate::run_with(&cfg, i).unwrap_or_else(|e| panic!("under {}: {e}", m.name()));
    assert_eq!(
        r.exit,
        Exit::Code(0),
        "under {} ({}): {:?}",
        m.name(),
        i.name(),
        r.warnings
    );
    std::fs::read_to_string(&out).unwrap_or_else(|e| panic!("{}: {e}", out.display()))
}
