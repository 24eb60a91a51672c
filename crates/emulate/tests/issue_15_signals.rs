//! Issue #15 (safe comparisons: a run that exits differently from native invalidates its pair):
//! signals that a delegated call raises on the program itself, under every mechanism, with every
//! call delegated, as natively.
//!
//! - SIGPIPE: a write to a pipe without readers. Made by shm's delegate thread, the kernel sent it
//!   to that thread (which blocks every signal) and the program saw only EPIPE; under proxy the
//!   program inherited multios's ignored SIGPIPE. `yes | head -1` exited 1 instead of dying.
//! - A signal sent to itself (raise, kill of its own pid): Linux delivers it before the call
//!   returns; under shm it waited for the kick's IPI, so the program's next sigprocmask could
//!   block it first and its next raise merge with it.

mod common;
use multios_emulate::{Delegation, Exit, Mechanism};
use std::path::{Path, PathBuf};
use std::process::Command;

const PROG: &str = r#"
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
static volatile sig_atomic_t pipes, usr1;
static void on_pipe(int s) { (void)s; pipes++; }
static void on_usr1(int s) { (void)s; usr1++; }
static int broken_write(void) {
    int p[2];
    if (pipe(p)) return -1;
    close(p[0]);
    int r = write(p[1], "x", 1) < 0 ? errno : 0;
    close(p[1]);
    return r;
}
int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "die") == 0) {
        broken_write();
        return 3; /* not reached: SIGPIPE's default action ends the process */
    }
    signal(SIGPIPE, on_pipe);
    if (broken_write() != EPIPE || pipes != 1) return 4;
    signal(SIGPIPE, SIG_IGN);
    if (broken_write() != EPIPE || pipes != 1) return 5;
    signal(SIGUSR1, on_usr1);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    for (int i = 0; i < 50; i++) {
        raise(SIGUSR1);          /* delivered before raise returns */
        kill(getpid(), SIGUSR1); /* and before kill returns */
        sigprocmask(SIG_BLOCK, &set, NULL);
        raise(SIGUSR1);          /* pending until unblocked */
        sigprocmask(SIG_UNBLOCK, &set, NULL);
    }
    printf("pipes %d usr1 %d\n", (int)pipes, (int)usr1);
    return usr1 == 150 ? 0 : 6;
}
"#;

fn build(dir: &Path) -> PathBuf {
    let c = dir.join("selfsig.c");
    std::fs::write(&c, PROG).unwrap_or_else(|e| panic!("writing {}: {e}", c.display()));
    let out = dir.join("selfsig");
    let st = Command::new("cc")
        .args(["-O2", "-o"])
        .arg(&out)
        .arg(&c)
        .status()
        .unwrap_or_else(|e| panic!("running cc (apt-get install gcc): {e}"));
    assert!(st.success(), "compiling {}", c.display());
    out
}

#[test]
fn issue_15_signals_a_delegated_call_raises_reach_the_program_as_natively() {
    let dir = common::tmpdir("selfsig");
    let prog = build(&dir);
    let p = prog.to_str().unwrap_or_default();
    let native = Command::new(&prog).status().expect("runs natively");
    assert_eq!(native.code(), Some(0), "natively");
    for m in [Mechanism::Shm, Mechanism::Proxy, Mechanism::Migrate] {
        let r = common::run(m, Delegation::all(), 0.0, &[p]);
        assert_eq!(
            r.exit,
            Exit::Code(0),
            "{}: caught, ignored, raised: {:?}",
            m.name(),
            r.warnings
        );
        let r = common::run(m, Delegation::all(), 0.0, &[p, "die"]);
        assert_eq!(
            r.exit,
            Exit::Signal(libc::SIGPIPE),
            "{}: a write without readers, SIGPIPE at its default: {:?}",
            m.name(),
            r.warnings
        );
    }
}
